//! The one error type of the tile store.

use std::path::PathBuf;

/// A boxed cause from a backend library (kept out of the public API so that its version can
/// change without breaking callers).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What can go wrong in a tile store operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The key (or list prefix) is not one the store accepts (see [`crate::validate_key`]).
    #[error("invalid tile store key {key:?}: {reason}")]
    InvalidKey { key: String, reason: &'static str },

    /// `put_new`: the key exists with different bytes. Immutable objects never change.
    #[error("tile store key {key:?} already exists with different content")]
    Conflict { key: String },

    /// `put_if`: the precondition (absent, or the given version) does not hold.
    #[error(
        "tile store key {key:?}: precondition failed (it was changed or created concurrently)"
    )]
    PreconditionFailed { key: String },

    /// The store cannot be opened as configured.
    #[error("tile store configuration: {0}")]
    Config(String),

    /// A local file system operation failed.
    #[error("local tile store: {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The local store met a symbolic link below its root: refused, it could lead out of it.
    #[error(
        "local tile store: {path} is a symbolic link (refused: links could lead out of the store)"
    )]
    Symlink { path: PathBuf },

    /// The local store met something other than a regular file or directory where a key or
    /// its parent directory should be.
    #[error("local tile store: {path} is not a {expected}")]
    NotRegular {
        path: PathBuf,
        expected: &'static str,
    },

    /// An S3 request failed (after the bounded retries, for those that are retried).
    #[error("S3 tile store: {op} {key:?}: {source}")]
    S3 {
        op: &'static str,
        key: String,
        #[source]
        source: BoxError,
    },

    /// The S3 server answered something the store cannot use (for example no ETag).
    #[error("S3 tile store: {op} {key:?}: unusable answer: {detail}")]
    Protocol {
        op: &'static str,
        key: String,
        detail: String,
    },

    /// `list` found more keys than it returns at once.
    #[error("tile store: list {prefix:?} has more than {limit} keys")]
    ListTooLarge { prefix: String, limit: usize },

    /// A bounded read ([`crate::TileStore::get_bounded`]) met an object larger than its cap;
    /// nothing beyond the cap was read.
    #[error("tile store key {key:?}: larger than the {max} bytes it may hold")]
    TooLarge { key: String, max: usize },

    /// A blocking task of the local store panicked or was cancelled.
    #[error("local tile store: worker task failed: {0}")]
    Task(String),
}

impl Error {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// The result type of the tile store.
pub type Result<T, E = Error> = std::result::Result<T, E>;
