//! The trust anchor: which group this gateway serves.
//!
//! `--group-key` takes either the manager public key (a file holding its standard-base64
//! encoding, as `dgsp-registry public-key` prints on its first line, or the raw encoding) or
//! its SHA3-256 fingerprint (64 hex characters). With a fingerprint, the key is taken from
//! entry 1 of the feed (`group_created`) and accepted only if it hashes to the fingerprint.
//! Either way the key is pinned in the replica; a later start with another anchor is refused.

use std::path::PathBuf;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::ManagerPublicKey;
use dgsp_wire::log::{unhex32, GENESIS_PREV};
use serde_json::Value;

use crate::follower::{fetch, FollowConfig};

/// A configured anchor.
#[derive(Clone, Debug)]
pub enum Anchor {
    /// The key itself.
    Key(Box<ManagerPublicKey>),
    /// Its fingerprint.
    Fingerprint([u8; 32]),
}

impl Anchor {
    /// Parses `--group-key`: 64 hex characters are a fingerprint, anything else a key file.
    pub fn parse(arg: &str) -> Result<Anchor, String> {
        if arg.len() == 64 {
            if let Some(fp) = unhex32(arg) {
                return Ok(Anchor::Fingerprint(fp));
            }
        }
        let path = PathBuf::from(arg);
        let bytes = std::fs::read(&path).map_err(|e| {
            format!("--group-key {arg}: neither a 64-hex-character fingerprint nor a readable key file ({e})")
        })?;
        parse_key_file(&bytes)
            .map(|pk| Anchor::Key(Box::new(pk)))
            .map_err(|e| format!("{}: not a group public key ({e})", path.display()))
    }

    /// The fingerprint this anchor pins.
    pub fn fingerprint(&self) -> [u8; 32] {
        match self {
            Anchor::Key(pk) => pk.fingerprint(),
            Anchor::Fingerprint(fp) => *fp,
        }
    }

    /// Resolves to the key, reading entry 1 of the feed when only the fingerprint is known.
    pub async fn resolve(&self, config: &FollowConfig) -> Result<ManagerPublicKey, ResolveError> {
        match self {
            Anchor::Key(pk) => Ok((**pk).clone()),
            Anchor::Fingerprint(fp) => {
                let client = crate::follower::client(config.timeout)
                    .map_err(|e| ResolveError::Unavailable(e.to_string()))?;
                let (page, _) = fetch::fetch_page(&client, config, 0, 1)
                    .await
                    .map_err(|e| ResolveError::Unavailable(e.to_string()))?;
                let first = page.entries.first().ok_or_else(|| {
                    ResolveError::Unavailable("the registry's log is empty".into())
                })?;
                first
                    .check(0, &GENESIS_PREV)
                    .map_err(|e| ResolveError::Refused(format!("entry 1: {e}")))?;
                if first.kind != "group_created" {
                    return Err(ResolveError::Refused(format!(
                        "entry 1 is {:?}, not group_created",
                        first.kind
                    )));
                }
                let pk = first
                    .public
                    .get("public_key")
                    .and_then(Value::as_str)
                    .and_then(|s| B64.decode(s).ok())
                    .and_then(|b| ManagerPublicKey::from_bytes(&b).ok())
                    .ok_or_else(|| {
                        ResolveError::Refused("entry 1 carries no decodable public key".into())
                    })?;
                if pk.fingerprint() != *fp {
                    return Err(ResolveError::Refused(format!(
                        "the registry's group {} is not the pinned fingerprint {}",
                        hex::encode(pk.fingerprint()),
                        hex::encode(fp)
                    )));
                }
                Ok(pk)
            }
        }
    }
}

pub use dgsp_wire::anchor::parse_key_file;

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
