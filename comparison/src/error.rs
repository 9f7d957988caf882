//! Why a comparison run stopped.

use std::path::PathBuf;

/// Everything that can stop a run. A contender whose own signature does not verify stops
/// the run too: its numbers would be meaningless.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A DGSP operation refused (never expected on the fixtures the run builds).
    #[error("dgsp-core: {0}")]
    Dgsp(#[from] dgsp_core::Error),
    /// A PLM or revoked-list operation failed (in-memory stores: never expected).
    #[error("store: {0}")]
    Store(#[from] dgsp_core::StoreError),
    /// A contender's library refused an operation.
    #[error("{scheme}: {reason}")]
    Library {
        /// the contender
        scheme: String,
        /// what the library said
        reason: String,
    },
    /// A contender's signature on the benchmark message did not verify.
    #[error("{0}: its own signature does not verify")]
    SelfCheck(String),
    /// Reading or writing a file.
    #[error("{}: {source}", path.display())]
    Io {
        /// the file
        path: PathBuf,
        /// the OS error
        source: std::io::Error,
    },
    /// A generated block's markers are missing from the document.
    #[error("{}: no `<!-- BEGIN generated:{name} -->` ... `<!-- END generated:{name} -->` block", path.display())]
    MissingBlock {
        /// the document
        path: PathBuf,
        /// the block's name
        name: String,
    },
    /// Drawing a plot.
    #[error("plot {}: {reason}", path.display())]
    Plot {
        /// the SVG file
        path: PathBuf,
        /// what plotters said
        reason: String,
    },
    /// Building or running the signer-only probe.
    #[error("signer probe: {0}")]
    Probe(String),
    /// The full run needs optimised code.
    #[error("the full run must be an optimised build (`cargo bench -p dgsp-comparison --bench compare`); this one is unoptimised (use --smoke, or --allow-debug to measure it anyway)")]
    NotRelease,
    /// A bad command-line value.
    #[error("{0}")]
    Usage(String),
    /// Encoding the JSON results.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
}

impl CompareError {
    /// A library error, with the contender's name.
    pub fn library(scheme: impl Into<String>, reason: impl ToString) -> Self {
        CompareError::Library {
            scheme: scheme.into(),
            reason: reason.to_string(),
        }
    }

    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| CompareError::Io { path, source }
    }
}
