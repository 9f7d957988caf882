//! The command's errors: each says what went wrong and, where there is one, what to do.

use std::path::{Path, PathBuf};

use crate::client::ClientError;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// the file
        path: PathBuf,
        /// the cause
        #[source]
        source: std::io::Error,
    },
    /// An input file or argument is not what the command expects.
    #[error("{what}: {reason}")]
    Input {
        /// the file or argument
        what: String,
        /// what is wrong
        reason: String,
    },
    /// A required setting is missing.
    #[error("{0}")]
    Config(String),
    /// Talking to the registry or a gateway failed (boxed: it is the largest variant).
    #[error(transparent)]
    Client(Box<ClientError>),
    /// The wallet refused.
    #[error(transparent)]
    Wallet(#[from] crate::wallet::WalletError),
    /// A cryptographic check failed.
    #[error("{0}")]
    Crypto(#[from] dgsp_core::Error),
    /// A secret file (token, passphrase, wallet, config holding a token) was refused: a
    /// symbolic link, not a regular file, or accessible to other users.
    #[error(transparent)]
    Secret(#[from] dgsp_secrets::file::SecretFileError),
}

impl From<ClientError> for Error {
    fn from(e: ClientError) -> Error {
        Error::Client(Box::new(e))
    }
}

impl Error {
    /// A bad input file.
    pub fn input(path: &Path, reason: impl Into<String>) -> Error {
        Error::Input {
            what: path.display().to_string(),
            reason: reason.into(),
        }
    }

    /// A bad argument.
    pub fn arg(name: &str, reason: impl Into<String>) -> Error {
        Error::Input {
            what: name.to_owned(),
            reason: reason.into(),
        }
    }

    /// A short stable name for scripts (`--json` errors carry it as `kind`).
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Io { .. } => "io",
            Error::Input { .. } => "input",
            Error::Config(_) => "config",
            Error::Client(c) => c.kind(),
            Error::Wallet(w) => w.kind(),
            Error::Crypto(_) => "crypto",
            Error::Secret(e) => e.kind(),
        }
    }
}

/// Exit codes (documented in `--help` of each command and in docs/cli.md).
pub mod exit {
    /// success; for verify and judge: the signature is valid / the opening is right
    pub const OK: i32 = 0;
    /// an error: nothing could be decided
    pub const ERROR: i32 = 1;
    /// bad command line (clap)
    pub const USAGE: i32 = 2;
    /// a negative verdict: invalid or revoked signature, wrong opening, failed proof,
    /// audit violations
    pub const REJECTED: i32 = 3;
}
