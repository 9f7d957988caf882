//! The trust anchor: which group this gateway serves.
//!
//! `--group-key` takes either the manager public key (a file holding its standard-base64
//! encoding, as `dgsp-registry public-key` prints on its first line, or the raw encoding) or
//! its SHA3-256 fingerprint (64 hex characters). With a fingerprint, the key is taken from
//! entry 1 of the feed (`group_created`) and accepted only if it hashes to the fingerprint.
//! Either way the key is pinned in the replica; a later start with another anchor is refused.
//! The anchor and its rules are `dgsp_wire::anchor`'s; reading the file and the feed is here.

use dgsp_core::ManagerPublicKey;

pub use dgsp_wire::anchor::{parse_key_file, Anchor};

use crate::follower::{fetch, FollowConfig};

/// Parses `--group-key`: 64 hex characters are a fingerprint, anything else a key file.
pub fn parse(arg: &str) -> Result<Anchor, String> {
    Anchor::from_arg(arg, |path| std::fs::read(path))
}

/// Resolves `anchor` to the key, reading entry 1 of the feed when only the fingerprint is
/// known.
pub async fn resolve(
    anchor: &Anchor,
    config: &FollowConfig,
) -> Result<ManagerPublicKey, ResolveError> {
    if let Anchor::Key(pk) = anchor {
        return Ok((**pk).clone());
    }
    let client = crate::follower::client(config.timeout, &config.roots)
        .map_err(|e| ResolveError::Unavailable(e.to_string()))?;
    let page = fetch::fetch_page(&client, config, 0, 1)
        .await
        .map_err(|e| ResolveError::Unavailable(e.to_string()))?;
    let first = page
        .entries
        .first()
        .ok_or_else(|| ResolveError::Unavailable("the registry's log is empty".into()))?;
    anchor
        .key_from_first_entry(first)
        .map_err(ResolveError::Refused)
}

/// Why the anchor could not be resolved.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ResolveError {
    /// The registry could not be asked (worth retrying).
    #[error("{0}")]
    Unavailable(String),
    /// The registry's answer contradicts the anchor (retrying will not help).
    #[error("{0}")]
    Refused(String),
}
