//! Signed checkpoints of a group's event log, in the C2SP signed-note style:
//!
//! ```text
//! <origin>
//! <size>
//! <base64 head hash>
//!
//! — <origin> <base64(key id (4 bytes) || SPHINCS+ signature)>
//! ```
//!
//! The signature covers `"DGSP-v1:checkpoint" || body`, where `body` is the first three
//! lines with their newlines; the prefix keeps checkpoint signatures distinct from
//! certificate and snapshot signatures made with the same key. The key id is
//! `SHA3-256("DGSP-v1:checkpoint-key" || origin || 0x0A || public key encoding)[..4]`.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use sha3::{Digest, Sha3_256};

use crate::keys::ManagerPublicKey;
use crate::manager::Manager;
use crate::spx;

/// Domain prefix of checkpoint signatures.
pub const CHECKPOINT_PREFIX: &[u8] = b"DGSP-v1:checkpoint";

/// A log position: the first `size` entries, whose last has hash `head`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// Names the log (one per group), e.g. `dgsp/<fingerprint>`.
    pub origin: String,
    /// Number of entries covered.
    pub size: u64,
    /// Hash of entry `size`.
    pub head: [u8; 32],
}

/// Why a signed note was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// Not a well-formed note.
    #[error("malformed checkpoint note: {0}")]
    Malformed(&'static str),
    /// No signature line by this group's key.
    #[error("the checkpoint carries no signature by this group's key")]
    NoSignature,
    /// The signature does not verify.
    #[error("the checkpoint signature does not verify")]
    BadSignature,
}

/// The origin line used for a group's log.
pub fn origin_for(group: &ManagerPublicKey) -> String {
    format!("dgsp/{}", hex_prefix(&group.fingerprint()))
}

fn hex_prefix(fp: &[u8; 32]) -> String {
    fp.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

fn key_id(origin: &str, group: &ManagerPublicKey) -> [u8; 4] {
    let mut h = Sha3_256::new();
    h.update(b"DGSP-v1:checkpoint-key");
    h.update(origin.as_bytes());
    h.update(b"\n");
    h.update(group.to_bytes());
    let d = h.finalize();
    [d[0], d[1], d[2], d[3]]
}

/// What the group's key signs for a checkpoint body: `"DGSP-v1:checkpoint" || body`.
fn signed_message(body: &str) -> Vec<u8> {
    [CHECKPOINT_PREFIX, body.as_bytes()].concat()
}

impl Checkpoint {
    /// The signed body: three lines, each ending in a newline.
    pub fn body(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            B64.encode(self.head)
        )
    }

    fn parse_body(body: &str) -> Result<Checkpoint, CheckpointError> {
        let mut lines = body.split_terminator('\n');
        let origin = lines
            .next()
            .filter(|o| !o.is_empty())
            .ok_or(CheckpointError::Malformed("origin line"))?;
        let size = lines
            .next()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or(CheckpointError::Malformed("size line"))?;
        let head = lines
            .next()
            .and_then(|h| B64.decode(h).ok())
            .and_then(|h| <[u8; 32]>::try_from(h).ok())
            .ok_or(CheckpointError::Malformed("head hash line"))?;
        if lines.next().is_some() {
            return Err(CheckpointError::Malformed("extra body lines"));
        }
        Ok(Checkpoint {
            origin: origin.to_owned(),
            size,
            head,
        })
    }
}

impl Manager {
    /// Signs a checkpoint; returns the whole note.
    pub fn sign_checkpoint(&self, cp: &Checkpoint) -> String {
        let body = cp.body();
        let sig = spx::sign(
            self.params(),
            &self.secret_key().spx_sk,
            &signed_message(&body),
        );
        let mut blob = key_id(&cp.origin, self.public_key()).to_vec();
        blob.extend_from_slice(&sig);
        format!("{body}\n\u{2014} {} {}\n", cp.origin, B64.encode(blob))
    }
}

impl ManagerPublicKey {
    /// Verifies a signed checkpoint note made by this group's key; returns its checkpoint.
    /// Signature lines by other keys are ignored, as signed notes allow.
    pub fn verify_checkpoint(&self, note: &str) -> Result<Checkpoint, CheckpointError> {
        let (body, sigs) = note
            .split_once("\n\n")
            .ok_or(CheckpointError::Malformed("no blank line"))?;
        let body = format!("{body}\n");
        let cp = Checkpoint::parse_body(&body)?;
        let id = key_id(&cp.origin, self);
        let msg = signed_message(&body);
        for line in sigs.lines() {
            let Some(rest) = line.strip_prefix("\u{2014} ") else {
                return Err(CheckpointError::Malformed("signature line"));
            };
            let Some((name, blob)) = rest.split_once(' ') else {
                return Err(CheckpointError::Malformed("signature line"));
            };
            let Ok(blob) = B64.decode(blob) else {
                return Err(CheckpointError::Malformed("signature encoding"));
            };
            if name != cp.origin || blob.len() < 4 || blob[..4] != id {
                continue;
            }
            return if spx::verify(self.params(), self.spx_bytes(), &msg, &blob[4..]) {
                Ok(cp)
            } else {
                Err(CheckpointError::BadSignature)
            };
        }
        Err(CheckpointError::NoSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ParamSet;

    #[test]
    fn notes_verify_and_tampering_is_caught() {
        let mut rng = rand_core::OsRng;
        let m = Manager::generate(ParamSet::Sha2_128f, &mut rng);
        let other = Manager::generate(ParamSet::Sha2_128f, &mut rng);
        let cp = Checkpoint {
            origin: origin_for(m.public_key()),
            size: 42,
            head: [9; 32],
        };
        let note = m.sign_checkpoint(&cp);
        assert!(note.starts_with(&cp.body()));
        assert_eq!(m.public_key().verify_checkpoint(&note), Ok(cp.clone()));
        assert_eq!(
            other.public_key().verify_checkpoint(&note),
            Err(CheckpointError::NoSignature)
        );
        let bigger = note.replacen("\n42\n", "\n43\n", 1);
        assert_eq!(
            m.public_key().verify_checkpoint(&bigger),
            Err(CheckpointError::BadSignature)
        );
        assert!(m.public_key().verify_checkpoint("garbage").is_err());
        // A snapshot or certificate signature can never pass as a checkpoint signature:
        // the prefixes differ (DGSP-v1:cert / DGSP-v1:snapshot / DGSP-v1:checkpoint).
        assert_ne!(CHECKPOINT_PREFIX, crate::CERT_PREFIX);
    }
}
