//! The optional config file: defaults for the registry and gateway URLs, tokens and the
//! wallet path. Command-line flags and env variables win over it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::Error;

/// Settings read from the config file (TOML). Every field is optional.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// registry base URL
    pub registry: Option<String>,
    /// gateway base URL
    pub gateway: Option<String>,
    /// admin token (the file must then be private: mode 0600)
    pub admin_token: Option<String>,
    /// auditor token (same rule)
    pub auditor_token: Option<String>,
    /// wallet file
    pub wallet: Option<PathBuf>,
}

impl Config {
    /// Loads `explicit`, else the default path if it exists, else empty settings.
    pub fn load(explicit: Option<&Path>) -> Result<Config, Error> {
        let path = match explicit {
            Some(p) => p.to_owned(),
            None => match default_path() {
                Some(p) if p.exists() => p,
                _ => return Ok(Config::default()),
            },
        };
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        let config: Config =
            toml::from_str(&text).map_err(|e| Error::input(&path, format!("config: {e}")))?;
        if config.admin_token.is_some() || config.auditor_token.is_some() {
            let mode = std::fs::metadata(&path)
                .map_err(|source| Error::Io {
                    path: path.clone(),
                    source,
                })?
                .permissions()
                .mode();
            if mode & 0o077 != 0 {
                return Err(Error::input(
                    &path,
                    format!(
                        "holds a token but other users can read it (mode {:o}); run: chmod 600 {}",
                        mode & 0o777,
                        path.display()
                    ),
                ));
            }
        }
        Ok(config)
    }
}

/// `$XDG_CONFIG_HOME/dgsp-manager/config.toml` (or `~/.config/...`).
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("dgsp-manager").join("config.toml"))
}
