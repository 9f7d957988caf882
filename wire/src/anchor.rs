//! A group trust anchor: the manager public key itself, or its SHA3-256 fingerprint.
//!
//! Its text forms: 64 hex characters are a fingerprint; a key file holds the key's standard
//! base64 on its first non-blank line (as `dgsp-registry public-key` prints it) or the raw
//! encoding. With only a fingerprint, the key is taken from entry 1 of the log
//! (`group_created`) and accepted only if it hashes to the fingerprint
//! ([`Anchor::key_from_first_entry`]).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::{DecodeError, ManagerPublicKey};

use crate::log::{unhex32, Entry, GENESIS_PREV};

/// A trust anchor.
#[derive(Clone, Debug)]
pub enum Anchor {
    /// The key itself.
    Key(Box<ManagerPublicKey>),
    /// Its fingerprint.
    Fingerprint([u8; 32]),
}

impl Anchor {
    /// A fingerprint anchor from 64 hex characters; `None` for anything else.
    pub fn from_fingerprint_hex(s: &str) -> Option<Anchor> {
        (s.len() == 64)
            .then(|| unhex32(s))
            .flatten()
            .map(Anchor::Fingerprint)
    }

    /// An anchor from its command-line form (`--group-key`): 64 hex characters are a
    /// fingerprint, anything else names a key file, which `read` reads (the caller's I/O).
    pub fn from_arg(
        arg: &str,
        read: impl FnOnce(&str) -> std::io::Result<Vec<u8>>,
    ) -> Result<Anchor, String> {
        if let Some(anchor) = Anchor::from_fingerprint_hex(arg) {
            return Ok(anchor);
        }
        let bytes = read(arg).map_err(|e| {
            format!("--group-key {arg}: neither a 64-hex-character fingerprint nor a readable key file ({e})")
        })?;
        parse_key_file(&bytes)
            .map(|pk| Anchor::Key(Box::new(pk)))
            .map_err(|e| format!("{arg}: not a group public key ({e})"))
    }

    /// The fingerprint this anchor pins.
    pub fn fingerprint(&self) -> [u8; 32] {
        match self {
            Anchor::Key(pk) => pk.fingerprint(),
            Anchor::Fingerprint(fp) => *fp,
        }
    }

    /// The key, from the log's entry 1 when only the fingerprint is known: the entry must
    /// be a chain-valid `group_created` carrying a key that hashes to the pinned
    /// fingerprint. For a key anchor, the key itself (the entry is not needed).
    pub fn key_from_first_entry(&self, first: &Entry) -> Result<ManagerPublicKey, String> {
        let fp = match self {
            Anchor::Key(pk) => return Ok((**pk).clone()),
            Anchor::Fingerprint(fp) => fp,
        };
        first
            .check(0, &GENESIS_PREV)
            .map_err(|e| format!("entry 1: {e}"))?;
        if first.kind != "group_created" {
            return Err(format!("entry 1 is {:?}, not group_created", first.kind));
        }
        let pk = crate::follow::group_key(first)
            .ok_or_else(|| "entry 1 carries no decodable public key".to_owned())?;
        if pk.fingerprint() != *fp {
            return Err(format!(
                "the registry's group {} is not the pinned fingerprint {}",
                hex::encode(pk.fingerprint()),
                hex::encode(fp)
            ));
        }
        Ok(pk)
    }
}

/// The contents of a group key file: the key's standard base64 on its first non-blank line
/// (as `dgsp-registry public-key` prints it), or the raw encoding.
pub fn parse_key_file(bytes: &[u8]) -> Result<ManagerPublicKey, DecodeError> {
    let text = String::from_utf8_lossy(bytes);
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    match B64.decode(first) {
        Ok(decoded) => ManagerPublicKey::from_bytes(&decoded),
        Err(_) => ManagerPublicKey::from_bytes(bytes),
    }
}
