//! Why a check could not be made at all (as opposed to a check that ran and failed, which
//! is a negative report).

/// An input that could not be read, or a trust root that does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The trust root is not a group public key (or not the fingerprint's).
    #[error("trust root: {0}")]
    TrustRoot(String),
    /// An input is not what it should be (not a signature encoding, not a gateway answer,
    /// not a signed snapshot, ...). `what` names the input.
    #[error("{what}: {detail}")]
    Malformed {
        /// which input
        what: &'static str,
        /// what is wrong
        detail: String,
    },
    /// The signature does not verify under the group key (or belongs to another group).
    #[error("signature: {0}")]
    Signature(String),
    /// A signed checkpoint, snapshot or log-key statement does not verify under the group
    /// key.
    #[error("{what}: {detail}")]
    BadSignedObject {
        /// `checkpoint`, `snapshot` or `log-key statement`
        what: &'static str,
        /// why
        detail: String,
    },
}

impl Error {
    pub(crate) fn malformed(what: &'static str, detail: impl std::fmt::Display) -> Self {
        Error::Malformed {
            what,
            detail: detail.to_string(),
        }
    }
}
