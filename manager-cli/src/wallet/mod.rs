//! The member's wallet (being written).

/// Why the wallet refused.
#[derive(Debug, thiserror::Error)]
pub enum WalletError {
    /// placeholder
    #[error("{0}")]
    Other(String),
}

impl WalletError {
    /// Short stable name.
    pub fn kind(&self) -> &'static str {
        "wallet"
    }
}
