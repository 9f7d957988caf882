//! The group key's statement naming its log's witnessing key (`docs/witnesses.md`,
//! "Formats (as built)"): the ML-DSA-44 key that signs the plain C2SP checkpoint the
//! witnesses cosign, bound to the group by a SPHINCS+ signature in the checkpoint note
//! style:
//!
//! ```text
//! dgsp-log-key/v1
//! <origin>
//! <vkey>                                  (opaque here: no spaces, no newline, non-empty)
//! generation <n>
//! time <unix ms>
//!
//! — <origin> <base64(key id (4 bytes) || SPHINCS+ signature)>
//! ```
//!
//! The signature covers `"DGSP-v1:log-key" || body`, a prefix of its own, so a checkpoint
//! signature never verifies as a statement nor the reverse. The key id is the checkpoint
//! key id ([`crate::checkpoint`]). Decimals are canonical (no leading zeros); any other
//! body is malformed.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use crate::checkpoint::{key_id, origin_for, parse_decimal};
use crate::keys::ManagerPublicKey;

/// Domain prefix of log-key statement signatures.
pub const LOG_KEY_PREFIX: &[u8] = b"DGSP-v1:log-key";

/// Domain prefix of the log key's seed derivation ([`crate::Manager::log_key_seed`]).
pub const LOG_KEY_SEED_PREFIX: &[u8] = b"DGSP-v1:log-key-seed";

/// First line of a log-key statement body.
pub const LOG_KEY_HEADER: &str = "dgsp-log-key/v1";

/// "The log `origin` signs its checkpoints with `vkey`, key generation `generation`, as of
/// `time_unix_ms`."
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogKeyStatement {
    /// The log's origin (`dgsp/<32 hex>`, [`origin_for`]).
    pub origin: String,
    /// The log key's verifier key text (a C2SP vkey; opaque here).
    pub vkey: String,
    /// Which log key of this group (from 0; a rotation signs the next).
    pub generation: u64,
    /// When the statement was signed (Unix ms).
    pub time_unix_ms: u64,
}

/// Why a log-key statement was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogKeyError {
    /// Not a well-formed statement note.
    #[error("malformed log-key statement: {0}")]
    Malformed(&'static str),
    /// The statement names another group's origin.
    #[error("the log-key statement names origin {0:?}, not this group's")]
    WrongOrigin(String),
    /// No signature line by this group's key.
    #[error("the log-key statement carries no signature by this group's key")]
    NoSignature,
    /// The signature does not verify.
    #[error("the log-key statement signature does not verify")]
    BadSignature,
}

/// Text fit for one body line: non-empty, no whitespace or control characters.
fn is_token(s: &str) -> bool {
    !s.is_empty() && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

impl LogKeyStatement {
    /// The signed body, five lines each ending in a newline. `None` if the origin or the
    /// vkey is empty or holds whitespace or control characters (no body could carry them).
    pub fn body(&self) -> Option<String> {
        if !is_token(&self.origin) || !is_token(&self.vkey) {
            return None;
        }
        Some(format!(
            "{LOG_KEY_HEADER}\n{}\n{}\ngeneration {}\ntime {}\n",
            self.origin, self.vkey, self.generation, self.time_unix_ms
        ))
    }

    /// Parses a body exactly as [`LogKeyStatement::body`] writes it.
    pub fn parse_body(body: &str) -> Result<LogKeyStatement, LogKeyError> {
        let mut lines = body.split_terminator('\n');
        if lines.next() != Some(LOG_KEY_HEADER) {
            return Err(LogKeyError::Malformed("header line"));
        }
        let origin = lines
            .next()
            .filter(|l| is_token(l))
            .ok_or(LogKeyError::Malformed("origin line"))?;
        let vkey = lines
            .next()
            .filter(|l| is_token(l))
            .ok_or(LogKeyError::Malformed("vkey line"))?;
        let generation = lines
            .next()
            .and_then(|l| l.strip_prefix("generation "))
            .and_then(parse_decimal)
            .ok_or(LogKeyError::Malformed("generation line"))?;
        let time_unix_ms = lines
            .next()
            .and_then(|l| l.strip_prefix("time "))
            .and_then(parse_decimal)
            .ok_or(LogKeyError::Malformed("time line"))?;
        if lines.next().is_some() {
            return Err(LogKeyError::Malformed("extra line"));
        }
        let s = LogKeyStatement {
            origin: origin.to_owned(),
            vkey: vkey.to_owned(),
            generation,
            time_unix_ms,
        };
        // Rejects what the line checks let through (a body without its last newline).
        if s.body().as_deref() != Some(body) {
            return Err(LogKeyError::Malformed("not the canonical body"));
        }
        Ok(s)
    }
}

/// What the group's key signs: `"DGSP-v1:log-key" || body`.
fn signed_message(body: &str) -> Vec<u8> {
    [LOG_KEY_PREFIX, body.as_bytes()].concat()
}

/// Requires the `sign` feature.
#[cfg(feature = "sign")]
impl crate::Manager {
    /// Signs a log-key statement; returns the whole note. Refused (`Malformed`) if the
    /// statement has no body ([`LogKeyStatement::body`]). Requires the `sign` feature.
    pub fn sign_log_key(&self, s: &LogKeyStatement) -> Result<String, LogKeyError> {
        let body = s
            .body()
            .ok_or(LogKeyError::Malformed("origin or vkey not a single token"))?;
        let sig = crate::spx::sign(
            self.params(),
            &self.secret_key().spx_sk,
            &signed_message(&body),
        );
        let mut blob = key_id(&s.origin, self.public_key()).to_vec();
        blob.extend_from_slice(&sig);
        Ok(format!(
            "{body}\n\u{2014} {} {}\n",
            s.origin,
            B64.encode(blob)
        ))
    }

    /// The 32-byte seed of this group's log key number `generation` (ML-DSA-44 key
    /// generation from a seed, `dgsp_wire::note::MlDsaCosigner::from_seed`):
    /// `SHA3-256("DGSP-v1:log-key-seed" || generation (u64 big-endian) || secret key
    /// encoding)`. Deterministic, so a standby holding only the manager key derives the
    /// same log key.
    pub fn log_key_seed(&self, generation: u64) -> zeroize::Zeroizing<[u8; 32]> {
        use sha3::{Digest, Sha3_256};
        let secret = self.secret_key().to_bytes();
        let mut h = Sha3_256::new();
        h.update(LOG_KEY_SEED_PREFIX);
        h.update(generation.to_be_bytes());
        h.update(secret.as_slice());
        let mut seed = zeroize::Zeroizing::new([0u8; 32]);
        seed.copy_from_slice(&h.finalize());
        seed
    }
}

impl ManagerPublicKey {
    /// Verifies a log-key statement note signed by this group's key; returns the statement.
    /// Its origin must be this group's ([`origin_for`]); signature lines by other keys are
    /// ignored, as signed notes allow.
    pub fn verify_log_key(&self, note: &str) -> Result<LogKeyStatement, LogKeyError> {
        let (body, sigs) = note
            .split_once("\n\n")
            .ok_or(LogKeyError::Malformed("no blank line"))?;
        let body = format!("{body}\n");
        let s = LogKeyStatement::parse_body(&body)?;
        let origin = origin_for(self);
        if s.origin != origin {
            return Err(LogKeyError::WrongOrigin(s.origin));
        }
        let id = key_id(&origin, self);
        let msg = signed_message(&body);
        for line in sigs.lines() {
            let (name, blob) = line
                .strip_prefix("\u{2014} ")
                .and_then(|rest| rest.split_once(' '))
                .ok_or(LogKeyError::Malformed("signature line"))?;
            let blob = B64
                .decode(blob)
                .map_err(|_| LogKeyError::Malformed("signature encoding"))?;
            if name != origin || blob.len() < 4 || blob[..4] != id {
                continue;
            }
            return if self.verifying_key().verify(&msg, &blob[4..]) {
                Ok(s)
            } else {
                Err(LogKeyError::BadSignature)
            };
        }
        Err(LogKeyError::NoSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement(origin: String) -> LogKeyStatement {
        LogKeyStatement {
            origin,
            vkey: "dgsp/00+01020304+BAAA".into(),
            generation: 2,
            time_unix_ms: 1_700_000_000_123,
        }
    }

    #[test]
    fn body_is_exact_and_strict() {
        let s = statement("dgsp/ab".into());
        let body = s.body().unwrap();
        assert_eq!(
            body,
            "dgsp-log-key/v1\ndgsp/ab\ndgsp/00+01020304+BAAA\ngeneration 2\ntime 1700000000123\n"
        );
        assert_eq!(LogKeyStatement::parse_body(&body), Ok(s.clone()));
        for bad in [
            body.replace("generation 2", "generation 02"),
            body.replace("time 1700000000123", "time +1700000000123"),
            body.replace("generation 2", "generation  2"),
            body.replace("dgsp-log-key/v1", "dgsp-log-key/v2"),
            body.replace("dgsp/00+", "dgsp/00 +"),
            format!("{body}extra\n"),
            body.trim_end().to_owned(),
            body.replace("time 1700000000123\n", ""),
            body.replace("dgsp/ab\n", "\n"),
        ] {
            assert!(
                matches!(
                    LogKeyStatement::parse_body(&bad),
                    Err(LogKeyError::Malformed(_))
                ),
                "{bad:?} must be refused"
            );
        }
        let spaced = LogKeyStatement {
            vkey: "a b".into(),
            ..s
        };
        assert_eq!(spaced.body(), None);
    }

    #[test]
    #[cfg(feature = "sign")]
    fn statements_verify_and_tampering_is_caught() {
        use crate::checkpoint::Checkpoint;
        use crate::{Manager, ParamSet};
        let mut rng = rand_core::OsRng;
        let m = Manager::generate(ParamSet::Sha2_128f, &mut rng);
        let other = Manager::generate(ParamSet::Sha2_128f, &mut rng);
        let s = statement(origin_for(m.public_key()));
        let note = m.sign_log_key(&s).unwrap();
        assert!(note.starts_with(&s.body().unwrap()));
        assert_eq!(m.public_key().verify_log_key(&note), Ok(s.clone()));

        // Each line is covered by the signature (tampered, still well formed).
        let vkey_line = format!("\n{}\n", s.vkey);
        for (from, to) in [
            ("generation 2\n", "generation 3\n"),
            ("time 1700000000123\n", "time 1700000000124\n"),
            (vkey_line.as_str(), "\ndgsp/00+01020304+BAAB\n"),
        ] {
            let tampered = note.replacen(from, to, 1);
            assert_ne!(tampered, note);
            assert_eq!(
                m.public_key().verify_log_key(&tampered),
                Err(LogKeyError::BadSignature),
                "{from:?}"
            );
        }
        let header = note.replacen("dgsp-log-key/v1", "dgsp-log-key/v2", 1);
        assert!(matches!(
            m.public_key().verify_log_key(&header),
            Err(LogKeyError::Malformed(_))
        ));
        // Another group: its origin differs.
        assert_eq!(
            other.public_key().verify_log_key(&note),
            Err(LogKeyError::WrongOrigin(s.origin.clone()))
        );
        // Another group's statement signed for this origin: no signature by this key.
        let forged = other.sign_log_key(&s).unwrap();
        assert_eq!(
            m.public_key().verify_log_key(&forged),
            Err(LogKeyError::NoSignature)
        );
        // Origin edited to another group's: that group's key never signed it.
        let moved = note.replacen(&s.origin, &origin_for(other.public_key()), 1);
        assert_eq!(
            other.public_key().verify_log_key(&moved),
            Err(LogKeyError::NoSignature)
        );
        assert!(m
            .sign_log_key(&LogKeyStatement {
                vkey: String::new(),
                ..s.clone()
            })
            .is_err());
        assert!(m.public_key().verify_log_key("garbage").is_err());

        // Prefixes keep checkpoints and statements apart: swap the signature lines.
        let cp = Checkpoint {
            origin: s.origin.clone(),
            size: 1,
            root: [7; 32],
            time_unix_ms: Some(5),
            snapshot: None,
        };
        let cp_note = m.sign_checkpoint(&cp);
        let cp_sig = cp_note.split_once("\n\n").unwrap().1;
        let st_sig = note.split_once("\n\n").unwrap().1;
        let st_with_cp_sig = format!("{}\n{cp_sig}", s.body().unwrap());
        assert_eq!(
            m.public_key().verify_log_key(&st_with_cp_sig),
            Err(LogKeyError::BadSignature)
        );
        let cp_with_st_sig = format!("{}\n{st_sig}", cp.body());
        assert!(m.public_key().verify_checkpoint(&cp_with_st_sig).is_err());
        assert!(m.public_key().verify_checkpoint(&note).is_err());
        assert!(m.public_key().verify_log_key(&cp_note).is_err());
    }

    #[test]
    #[cfg(feature = "sign")]
    fn log_key_seed_is_deterministic_per_generation() {
        use crate::{Manager, ManagerSecretKey, ParamSet};
        let mut rng = rand_core::OsRng;
        let m = Manager::generate(ParamSet::Sha2_128f, &mut rng);
        let copy = Manager::new(
            ManagerSecretKey::from_bytes(&m.secret_key().to_bytes()).expect("own encoding"),
        );
        assert_eq!(*m.log_key_seed(0), *copy.log_key_seed(0));
        assert_ne!(*m.log_key_seed(0), *m.log_key_seed(1));
        // The documented derivation, recomputed.
        use sha3::{Digest, Sha3_256};
        let mut h = Sha3_256::new();
        h.update(b"DGSP-v1:log-key-seed");
        h.update([0, 0, 0, 0, 0, 0, 0, 1]);
        h.update(m.secret_key().to_bytes().as_slice());
        assert_eq!(m.log_key_seed(1).as_slice(), h.finalize().as_slice());
    }
}
