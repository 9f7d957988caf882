//! Why the wallet refused: each message says what to do next.

use std::path::PathBuf;

/// Why the wallet refused.
#[derive(Debug, thiserror::Error)]
pub enum WalletError {
    /// There is no wallet file.
    #[error("{path}: no wallet here; create one with `dgsp-manager member keygen --join FILE` (or pass --wallet)")]
    NotFound {
        /// the wallet file
        path: PathBuf,
    },
    /// Something already exists where a new wallet would go.
    #[error("{path}: {what} already exists here")]
    Exists {
        /// the file
        path: PathBuf,
        /// what it is
        what: &'static str,
    },
    /// The passphrase does not open the wallet (or the file was modified).
    #[error("{path}: cannot decrypt the wallet: wrong passphrase or tampered file")]
    WrongPassphrase {
        /// the wallet file
        path: PathBuf,
    },
    /// A new passphrase is too short.
    #[error("the wallet passphrase must be at least 12 characters")]
    WeakPassphrase,
    /// The two prompts differ.
    #[error("the two passphrases differ; nothing was written")]
    PassphraseMismatch,
    /// No passphrase could be obtained.
    #[error("no wallet passphrase: {0}")]
    NoPassphrase(String),
    /// The wallet file is not a wallet, or not a consistent one.
    #[error("{path}: not a usable DGSP wallet: {reason}")]
    Malformed {
        /// the wallet file
        path: PathBuf,
        /// what is wrong
        reason: String,
    },
    /// No certified unused slot is left.
    #[error("no unused certificate left in the wallet ({used} used{})", exhausted_help(*.pending))]
    Exhausted {
        /// certificates used
        used: usize,
        /// requested but not imported
        pending: usize,
    },
    /// The use journal is missing.
    #[error("{path}: the wallet's use journal is missing; signing could reuse a certificate, so the wallet refuses. Put the journal back beside the wallet (always keep the wallet and its .used file together)")]
    JournalMissing {
        /// the journal file
        path: PathBuf,
    },
    /// The use journal is damaged or belongs to another wallet.
    #[error("{path}: the wallet's use journal is damaged: {reason}")]
    JournalCorrupt {
        /// the journal file
        path: PathBuf,
        /// what is wrong
        reason: String,
    },
    /// The use journal has fewer records than the wallet saw before.
    #[error("{path}: the use journal has {found} records but the wallet has seen {expected}: it was replaced by an older copy; signing could reuse a certificate, so the wallet refuses")]
    JournalRolledBack {
        /// the journal file
        path: PathBuf,
        /// records found
        found: u64,
        /// records the wallet saw at its last rewrite
        expected: u64,
    },
    /// A file is for another member.
    #[error("{what} is for member {found}, but this wallet is member {expected}'s")]
    WrongMember {
        /// which file
        what: String,
        /// the wallet's member id
        expected: u64,
        /// the file's member id
        found: u64,
    },
    /// The join file's fingerprint does not match its group key.
    #[error("{what}: the group key's fingerprint is {computed}, not the {stated} the file states; ask the operator for a new join file")]
    FingerprintMismatch {
        /// which file
        what: String,
        /// the fingerprint the file states
        stated: String,
        /// the fingerprint of the key it carries
        computed: String,
    },
    /// A certificate of an import was refused: nothing was imported.
    #[error("certificate {index} of the file is refused: {reason}; nothing was imported")]
    CertificateRefused {
        /// its position in the file (from 1)
        index: usize,
        /// why
        reason: String,
    },
    /// Too many keys requested at once.
    #[error("--count {count}: a CSR holds 1 to {max} keys (the registry certifies at most {max} per request); run `member csr` again for more")]
    BadCount {
        /// requested
        count: usize,
        /// the limit
        max: usize,
    },
}

fn exhausted_help(pending: usize) -> String {
    let get_more = "run `dgsp-manager member csr --count N --out req.json`, send req.json to the \
         operator, who runs `dgsp-manager operator issue req.json --out certs.json`, then run \
         `dgsp-manager member import certs.json`";
    if pending > 0 {
        format!(
            ", {pending} requested but not imported yet). Import the certificates file the \
             operator sends back for them (`dgsp-manager member import FILE`). For more: \
             {get_more}"
        )
    } else {
        format!("). To get more: {get_more}")
    }
}

impl WalletError {
    /// A short stable name for scripts (`--json` errors carry it as `kind`).
    pub fn kind(&self) -> &'static str {
        match self {
            WalletError::NotFound { .. } => "wallet_not_found",
            WalletError::Exists { .. } => "wallet_exists",
            WalletError::WrongPassphrase { .. } => "wrong_passphrase",
            WalletError::WeakPassphrase => "weak_passphrase",
            WalletError::PassphraseMismatch => "passphrase_mismatch",
            WalletError::NoPassphrase(_) => "no_passphrase",
            WalletError::Malformed { .. } => "wallet_malformed",
            WalletError::Exhausted { .. } => "wallet_exhausted",
            WalletError::JournalMissing { .. } => "journal_missing",
            WalletError::JournalCorrupt { .. } => "journal_corrupt",
            WalletError::JournalRolledBack { .. } => "journal_rolled_back",
            WalletError::WrongMember { .. } => "wrong_member",
            WalletError::FingerprintMismatch { .. } => "fingerprint_mismatch",
            WalletError::CertificateRefused { .. } => "certificate_refused",
            WalletError::BadCount { .. } => "input",
        }
    }
}
