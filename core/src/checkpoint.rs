//! Signed checkpoints of a group's event log, in the C2SP signed-note style
//! (`docs/checkpoints.md` gives the exact bytes):
//!
//! ```text
//! <origin>
//! <size>
//! <base64 root hash>                   (RFC 6962 Merkle tree root of the first `size` entries)
//! time <unix ms>                          (extension line; absent only in legacy notes)
//! snapshot <number> <hex record hash>     (extension line; absent before the first snapshot)
//!
//! — <origin> <base64(key id (4 bytes) || SPHINCS+ signature)>
//! ```
//!
//! The signature covers `"DGSP-v1:checkpoint" || body`, where `body` is every line before
//! the blank line, each with its newline; the prefix keeps checkpoint signatures distinct
//! from certificate and snapshot signatures made with the same key. The key id is
//! `SHA3-256("DGSP-v1:checkpoint-key" || origin || 0x0A || public key encoding)[..4]`.
//!
//! The `time` line is the registry's signed statement "at this time my log had exactly
//! `size` entries, whose Merkle tree has root `root`"; the `snapshot` line names the latest revocation
//! snapshot in those entries, and the registry signs it only when every revocation in them
//! is in that snapshot. Together they let anyone judge, offline, how fresh a revocation
//! answer is. Other keys (witnesses) may add signature lines over the same body; they are
//! ignored here.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use sha3::{Digest, Sha3_256};

use crate::keys::ManagerPublicKey;

/// Domain prefix of checkpoint signatures.
pub const CHECKPOINT_PREFIX: &[u8] = b"DGSP-v1:checkpoint";

/// How far (ms) a checkpoint's signed time may be ahead of a verifier's clock before the
/// verifier refuses it (`future_checkpoint`), unless the verifier sets its own tolerance:
/// enough for clocks kept by NTP, far less than any freshness bound.
pub const DEFAULT_CLOCK_TOLERANCE_MS: u64 = 5_000;

/// The revocation snapshot a checkpoint names: its number and the SHA3-256 of its record
/// ([`SnapshotRecord::hash`](crate::revocation::SnapshotRecord::hash)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotRef {
    /// Snapshot number (from 1).
    pub number: u64,
    /// Hash of the snapshot record.
    pub hash: [u8; 32],
}

impl SnapshotRef {
    /// The reference to `record`.
    pub fn of(record: &crate::revocation::SnapshotRecord) -> Self {
        SnapshotRef {
            number: record.number,
            hash: record.hash(),
        }
    }

    /// Whether `record` is the snapshot this names.
    pub fn names(&self, record: &crate::revocation::SnapshotRecord) -> bool {
        record.number == self.number && record.hash() == self.hash
    }
}

/// A log position: the first `size` entries, committed to by the root of their RFC 6962
/// Merkle tree (`dgsp_wire::merkle`), as of a signed time, with the revocation snapshot in
/// force.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// Names the log (one per group), e.g. `dgsp/<fingerprint>`.
    pub origin: String,
    /// Number of entries covered.
    pub size: u64,
    /// The root line: the RFC 6962 Merkle tree root of the first `size` entries. (Notes
    /// signed before the tree existed carry the hash-chain hash of entry `size` here; the
    /// followers' rules say where that is still accepted.)
    pub root: [u8; 32],
    /// When the registry signed it (Unix ms). `None` only in notes written before signed
    /// time existed: such a checkpoint covers entries but says nothing about freshness.
    pub time_unix_ms: Option<u64>,
    /// The latest snapshot among the covered entries, all of whose revocations it holds;
    /// `None` before the first snapshot (or in legacy notes).
    pub snapshot: Option<SnapshotRef>,
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
    hex(&fp[..16])
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lower-case hex of exactly 32 bytes (the form [`Checkpoint::body`] writes).
fn unhex32(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 || !s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// A canonical decimal: digits only, no leading zero (so one number has one body).
pub(crate) fn parse_decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

pub(crate) fn key_id(origin: &str, group: &ManagerPublicKey) -> [u8; 4] {
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
    /// The signed body: three lines and the extension lines, each ending in a newline.
    pub fn body(&self) -> String {
        let mut body = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            B64.encode(self.root)
        );
        if let Some(t) = self.time_unix_ms {
            body.push_str(&format!("time {t}\n"));
        }
        if let Some(s) = &self.snapshot {
            body.push_str(&format!("snapshot {} {}\n", s.number, hex(&s.hash)));
        }
        body
    }

    /// Milliseconds between the signed time and `now_unix_ms` (0 if the note is from the
    /// future: check [`Checkpoint::ahead_ms`] against a tolerance before taking an age of 0
    /// as fresh); `None` for a legacy note without time.
    pub fn age_ms(&self, now_unix_ms: u64) -> Option<u64> {
        self.time_unix_ms.map(|t| now_unix_ms.saturating_sub(t))
    }

    /// Milliseconds the signed time is ahead of `now_unix_ms` (0 if it is not); `None` for a
    /// legacy note without time. A note more than [`DEFAULT_CLOCK_TOLERANCE_MS`] (or the
    /// verifier's own tolerance) ahead says nothing about freshness: one of the two clocks
    /// is wrong, and a registry whose clock ran ahead keeps signing times that look fresh
    /// for as long as it was ahead.
    pub fn ahead_ms(&self, now_unix_ms: u64) -> Option<u64> {
        self.time_unix_ms.map(|t| t.saturating_sub(now_unix_ms))
    }

    fn parse_body(body: &str) -> Result<Checkpoint, CheckpointError> {
        let mut lines = body.split_terminator('\n');
        let origin = lines
            .next()
            .filter(|o| !o.is_empty())
            .ok_or(CheckpointError::Malformed("origin line"))?;
        let size = lines
            .next()
            .and_then(parse_decimal)
            .ok_or(CheckpointError::Malformed("size line"))?;
        let root = lines
            .next()
            .and_then(|h| B64.decode(h).ok())
            .and_then(|h| <[u8; 32]>::try_from(h).ok())
            .ok_or(CheckpointError::Malformed("root hash line"))?;
        let mut line = lines.next();
        let mut time_unix_ms = None;
        if let Some(t) = line.and_then(|l| l.strip_prefix("time ")) {
            time_unix_ms = Some(parse_decimal(t).ok_or(CheckpointError::Malformed("time line"))?);
            line = lines.next();
        }
        let mut snapshot = None;
        if let Some(rest) = line.and_then(|l| l.strip_prefix("snapshot ")) {
            let (number, hash) = rest
                .split_once(' ')
                .ok_or(CheckpointError::Malformed("snapshot line"))?;
            let number = parse_decimal(number)
                .filter(|n| *n >= 1)
                .ok_or(CheckpointError::Malformed("snapshot number"))?;
            let hash = unhex32(hash).ok_or(CheckpointError::Malformed("snapshot hash"))?;
            snapshot = Some(SnapshotRef { number, hash });
            line = lines.next();
        }
        if line.is_some() {
            return Err(CheckpointError::Malformed("unknown or misplaced body line"));
        }
        Ok(Checkpoint {
            origin: origin.to_owned(),
            size,
            root,
            time_unix_ms,
            snapshot,
        })
    }
}

/// Requires the `sign` feature.
#[cfg(feature = "sign")]
impl crate::Manager {
    /// Signs a checkpoint; returns the whole note. Requires the `sign` feature.
    pub fn sign_checkpoint(&self, cp: &Checkpoint) -> String {
        let sig = crate::spx::sign(
            self.params(),
            &self.secret_key().spx_sk,
            &signed_message(&cp.body()),
        );
        note(cp, &key_id(&cp.origin, self.public_key()), &sig)
    }
}

/// The whole note: `cp`'s body, the blank line, and the signature line of the key with id
/// `key_id` carrying `signature` (the bytes [`crate::Manager::sign_checkpoint`] writes; also
/// what sizes a note of a parameter set without signing one).
pub fn note(cp: &Checkpoint, key_id: &[u8; 4], signature: &[u8]) -> String {
    let mut blob = key_id.to_vec();
    blob.extend_from_slice(signature);
    format!(
        "{}\n\u{2014} {} {}\n",
        cp.body(),
        cp.origin,
        B64.encode(blob)
    )
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
            return if self.verifying_key().verify(&msg, &blob[4..]) {
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

    #[test]
    #[cfg(feature = "sign")]
    fn notes_verify_and_tampering_is_caught() {
        use crate::{Manager, ParamSet};
        let mut rng = rand_core::OsRng;
        let m = Manager::generate(ParamSet::Sha2_128f, &mut rng);
        let other = Manager::generate(ParamSet::Sha2_128f, &mut rng);
        let cp = Checkpoint {
            origin: origin_for(m.public_key()),
            size: 42,
            root: [9; 32],
            time_unix_ms: Some(1_700_000_000_123),
            snapshot: Some(SnapshotRef {
                number: 3,
                hash: [0xab; 32],
            }),
        };
        let note = m.sign_checkpoint(&cp);
        assert!(note.contains("\ntime 1700000000123\nsnapshot 3 abab"));
        assert_eq!(cp.age_ms(1_700_000_001_123), Some(1000));
        assert_eq!(cp.age_ms(0), Some(0));
        assert_eq!(cp.ahead_ms(1_700_000_001_123), Some(0));
        assert_eq!(cp.ahead_ms(1_700_000_000_023), Some(100));
        assert_eq!(
            Checkpoint {
                time_unix_ms: None,
                ..cp.clone()
            }
            .ahead_ms(0),
            None
        );
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
        // The signed time and the named snapshot are covered by the signature.
        let earlier = note.replacen("time 1700000000123", "time 1700000000122", 1);
        assert_eq!(
            m.public_key().verify_checkpoint(&earlier),
            Err(CheckpointError::BadSignature)
        );
        let other_snapshot = note.replacen("snapshot 3 ", "snapshot 2 ", 1);
        assert_eq!(
            m.public_key().verify_checkpoint(&other_snapshot),
            Err(CheckpointError::BadSignature)
        );
        assert!(m.public_key().verify_checkpoint("garbage").is_err());
        // A snapshot or certificate signature can never pass as a checkpoint signature:
        // the prefixes differ (DGSP-v1:cert / DGSP-v1:snapshot / DGSP-v1:checkpoint).
        assert_ne!(CHECKPOINT_PREFIX, crate::CERT_PREFIX);
    }

    #[test]
    fn legacy_and_partial_bodies_parse_and_unknown_lines_do_not() {
        let base = "dgsp/00\n7\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n";
        let legacy = Checkpoint::parse_body(base).unwrap();
        assert_eq!((legacy.time_unix_ms, legacy.snapshot), (None, None));
        assert_eq!(legacy.body(), base);
        let timed = Checkpoint::parse_body(&format!("{base}time 5\n")).unwrap();
        assert_eq!((timed.time_unix_ms, timed.snapshot), (Some(5), None));
        let hash = "0f".repeat(32);
        let full = format!("{base}time 5\nsnapshot 2 {hash}\n");
        let cp = Checkpoint::parse_body(&full).unwrap();
        assert_eq!(cp.snapshot.unwrap().number, 2);
        assert_eq!(cp.body(), full, "bodies round-trip byte for byte");
        for bad in [
            format!("{base}snapshot 2 {hash}\ntime 5\n"),
            format!("{base}time 05\n"),
            format!("{base}time -5\n"),
            format!("{base}time 5\nsnapshot 0 {hash}\n"),
            format!("{base}time 5\nsnapshot 2 {}\n", "0F".repeat(32)),
            format!("{base}time 5\nsnapshot 2 {hash}\nwitness x\n"),
            format!("{base}other line\n"),
            "dgsp/00\n+7\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n".to_owned(),
        ] {
            assert!(
                matches!(
                    Checkpoint::parse_body(&bad),
                    Err(CheckpointError::Malformed(_))
                ),
                "{bad:?} must be refused"
            );
        }
    }
}
