//! The optional config file: defaults for the registry and gateway URLs, tokens and the
//! wallet path. Command-line flags and env variables win over it. A config file holding a
//! token must be a private regular file (mode 0600, not a symbolic link).

use std::path::{Path, PathBuf};

use dgsp_secrets::file as secret_file;
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
    /// admin token (the file must then be private: mode 0600, not a symbolic link)
    pub admin_token: Option<String>,
    /// auditor token (same rule)
    pub auditor_token: Option<String>,
    /// wallet file
    pub wallet: Option<PathBuf>,
}

impl Config {
    /// Loads `explicit`, else the default path if it exists, else empty settings.
    ///
    /// A config file that holds a token is a secret file: it is read through
    /// [`secret_file`] and refused if it is a symbolic link, not a regular file, or
    /// accessible to other users. One without a token may be any readable file.
    pub fn load(explicit: Option<&Path>) -> Result<Config, Error> {
        let path = match explicit {
            Some(p) => p.to_owned(),
            None => match default_path() {
                Some(p) if p.exists() => p,
                _ => return Ok(Config::default()),
            },
        };
        match secret_file::read(&path) {
            Ok(bytes) => parse(&path, &bytes),
            Err(refused) if refused.is_refusal() => {
                let bytes = std::fs::read(&path).map_err(|source| Error::Io {
                    path: path.clone(),
                    source,
                })?;
                let config = parse(&path, &bytes)?;
                if config.admin_token.is_some() || config.auditor_token.is_some() {
                    return Err(refused.into());
                }
                Ok(config)
            }
            Err(e) => Err(e.into()),
        }
    }
}

fn parse(path: &Path, bytes: &[u8]) -> Result<Config, Error> {
    let text =
        std::str::from_utf8(bytes).map_err(|_| Error::input(path, "config: not UTF-8 text"))?;
    toml::from_str(text).map_err(|e| Error::input(path, format!("config: {e}")))
}

/// `$XDG_CONFIG_HOME/dgsp-manager/config.toml` (or `~/.config/...`).
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("dgsp-manager").join("config.toml"))
}
