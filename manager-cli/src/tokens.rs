//! Where a bearer token comes from, first found wins: the `--token` flag (accepted with a
//! warning: other users can read a command line in the process list, and shell history
//! keeps it), its environment variable, the `--token-file` secret file (a private regular
//! file, not a symbolic link: [`secret_file`]), then the config file.

use std::path::Path;

use dgsp_secrets::file as secret_file;

use crate::error::Error;
use crate::output::Output;

/// One token's possible sources.
#[derive(Clone, Copy, Debug)]
pub struct Sources<'a> {
    /// the command-line flag's name (`--token`) and value
    pub flag: (&'static str, Option<&'a str>),
    /// the environment variable holding the token itself
    pub env: &'static str,
    /// the token file (`--token-file` or its variable)
    pub file: Option<&'a Path>,
    /// the config file's value
    pub config: Option<&'a str>,
}

impl Sources<'_> {
    /// The token, or `None` when no source holds one. A file is read through
    /// [`secret_file::read_token`] (surrounding whitespace removed; refused if it is a
    /// link, not a regular file or readable by other users).
    pub fn resolve(&self, out: Output) -> Result<Option<String>, Error> {
        let (flag, value) = self.flag;
        if let Some(t) = value {
            out.warn(
                "token_on_command_line",
                format!(
                    "{flag} puts the token on the command line, where other users can read it (ps, /proc) and shell history keeps it; use {} or {flag}-file instead",
                    self.env
                ),
            );
            return Ok(Some(t.to_owned()));
        }
        if let Some(t) = std::env::var_os(self.env).filter(|v| !v.is_empty()) {
            return t
                .into_string()
                .map(Some)
                .map_err(|_| Error::Config(format!("${} is not valid UTF-8", self.env)));
        }
        if let Some(f) = self.file {
            return Ok(Some(secret_file::read_token(f)?.as_str().to_owned()));
        }
        Ok(self.config.map(str::to_owned))
    }
}
