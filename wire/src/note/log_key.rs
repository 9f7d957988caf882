//! The group key's statement naming its log's ML-DSA-44 key (`dgsp_core::log_key`, the
//! body of `GET /v1/log/key`), judged as whoever learns the log key from it must judge it
//! ([`verify_log_key_statement`]): signed by the group key it is pinned to, naming that
//! group's origin, naming an ML-DSA-44 verifier key under that origin (the key name the
//! log's checkpoints are signed under), and not older than the statement it already holds.
//!
//! Order: a statement of a lower generation than the one held is refused (a replayed
//! statement of a retired key); one of the same generation must name the same key. Its
//! `time` does not order statements of one generation: every registry signs its own at its
//! start (a standby's may be older than the writer's it replaces) and a generation's key is
//! derived from the manager key, so an older statement of the held generation names the
//! held key.

use dgsp_core::checkpoint::origin_for;
use dgsp_core::log_key::LogKeyError;
use dgsp_core::ManagerPublicKey;

use super::vkey::{KeyKind, Vkey, VkeyError};

/// The log key a statement that passed [`verify_log_key_statement`] names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LearnedLogKey {
    /// The log key (ML-DSA-44, named by the log's origin).
    pub vkey: Vkey,
    /// Which log key of the group (the statement's `generation`).
    pub generation: u64,
    /// When the group key signed the statement (Unix ms).
    pub time_unix_ms: u64,
}

impl LearnedLogKey {
    /// Whether `self` should replace `held` as the statement kept: a higher generation, or
    /// the same one signed later.
    pub fn is_newer_than(&self, held: &LearnedLogKey) -> bool {
        (self.generation, self.time_unix_ms) > (held.generation, held.time_unix_ms)
    }
}

/// Why a log-key statement was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogKeyStatementError {
    /// Malformed, naming another group's origin, or not signed by the group key.
    #[error(transparent)]
    Statement(#[from] LogKeyError),
    /// The key it names is not a verifier key.
    #[error("the log-key statement names a key that is not a verifier key ({0})")]
    NotAVerifierKey(VkeyError),
    /// The key it names is not named by the log's origin, so no checkpoint of the log is
    /// signed under it.
    #[error("the log-key statement names a key under {named:?}, not under the log's origin {origin:?} its checkpoints are signed under")]
    WrongKeyName {
        /// The name of the key the statement names.
        named: String,
        /// The group's origin.
        origin: String,
    },
    /// The key it names is not ML-DSA-44 (what a registry signs its checkpoints with).
    #[error(
        "the log-key statement names a key of type 0x{0:02x}, not an ML-DSA-44 (0x06) log key"
    )]
    NotMlDsa44(u8),
    /// Its generation is lower than the one held.
    #[error("the log-key statement is of generation {generation}, older than generation {held} already held: a retired key's statement is not taken back")]
    OlderGeneration {
        /// The statement's generation.
        generation: u64,
        /// The generation held.
        held: u64,
    },
    /// It names another key for the generation held.
    #[error("the log-key statement names another key for generation {generation} than the one already held")]
    OtherKeyOfGeneration {
        /// The generation.
        generation: u64,
    },
}

/// Verifies the log-key statement note `statement` under `group` and against `held`, the
/// key learned before (if any): the signature by the group key and its origin
/// ([`ManagerPublicKey::verify_log_key`]), a verifier key named by that origin of type
/// ML-DSA-44, and an order that does not go back (module docs). A SPHINCS+ verification:
/// call it off an async runtime.
pub fn verify_log_key_statement(
    group: &ManagerPublicKey,
    statement: &str,
    held: Option<&LearnedLogKey>,
) -> Result<LearnedLogKey, LogKeyStatementError> {
    let s = group.verify_log_key(statement)?;
    let vkey = Vkey::parse(&s.vkey).map_err(LogKeyStatementError::NotAVerifierKey)?;
    let origin = origin_for(group);
    if vkey.name != origin {
        return Err(LogKeyStatementError::WrongKeyName {
            named: vkey.name,
            origin,
        });
    }
    if !matches!(vkey.kind, KeyKind::MlDsa44Cosignature(_)) {
        return Err(LogKeyStatementError::NotMlDsa44(vkey.kind.type_byte()));
    }
    if let Some(held) = held {
        if s.generation < held.generation {
            return Err(LogKeyStatementError::OlderGeneration {
                generation: s.generation,
                held: held.generation,
            });
        }
        if s.generation == held.generation && vkey != held.vkey {
            return Err(LogKeyStatementError::OtherKeyOfGeneration {
                generation: s.generation,
            });
        }
    }
    Ok(LearnedLogKey {
        vkey,
        generation: s.generation,
        time_unix_ms: s.time_unix_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::note::MlDsaCosigner;
    use dgsp_core::log_key::LogKeyStatement;
    use dgsp_core::{Manager, ParamSet};

    fn manager(seed: u8) -> Manager {
        use rand_core::SeedableRng;
        let mut rng = rand_chacha::ChaCha20Rng::from_seed([seed; 32]);
        Manager::generate(ParamSet::Sha2_128f, &mut rng)
    }

    fn statement(m: &Manager, vkey: String, generation: u64, time_unix_ms: u64) -> String {
        m.sign_log_key(&LogKeyStatement {
            origin: origin_for(m.public_key()),
            vkey,
            generation,
            time_unix_ms,
        })
        .unwrap()
    }

    fn log_vkey(m: &Manager, generation: u64) -> String {
        let origin = origin_for(m.public_key());
        MlDsaCosigner::from_seed(&origin, &m.log_key_seed(generation))
            .unwrap()
            .vkey()
    }

    #[test]
    fn a_statement_is_checked_against_the_group_the_origin_and_what_is_held() {
        let (m, other) = (manager(1), manager(2));
        let g = m.public_key();
        let good = statement(&m, log_vkey(&m, 1), 1, 1_000);
        let learned = verify_log_key_statement(g, &good, None).unwrap();
        assert_eq!(learned.vkey.to_string(), log_vkey(&m, 1));
        assert_eq!((learned.generation, learned.time_unix_ms), (1, 1_000));

        // Signed by another group key, for this group's origin and key.
        let forged = other
            .sign_log_key(&LogKeyStatement {
                origin: origin_for(g),
                vkey: log_vkey(&m, 1),
                generation: 1,
                time_unix_ms: 1_000,
            })
            .unwrap();
        assert_eq!(
            verify_log_key_statement(g, &forged, None),
            Err(LogKeyError::NoSignature.into())
        );
        // Another group's own statement: another origin.
        let theirs = statement(&other, log_vkey(&other, 0), 0, 1_000);
        assert!(matches!(
            verify_log_key_statement(g, &theirs, None),
            Err(LogKeyStatementError::Statement(LogKeyError::WrongOrigin(_)))
        ));
        // Signed by this group, naming a key under another name.
        let elsewhere = MlDsaCosigner::from_seed("other.example/log", &[3; 32]).unwrap();
        let named = statement(&m, elsewhere.vkey(), 1, 1_000);
        assert!(matches!(
            verify_log_key_statement(g, &named, None),
            Err(LogKeyStatementError::WrongKeyName { .. })
        ));
        // Not a verifier key; not ML-DSA-44 (an Ed25519 note key under the origin).
        let junk = statement(&m, "not-a-vkey".into(), 1, 1_000);
        assert!(matches!(
            verify_log_key_statement(g, &junk, None),
            Err(LogKeyStatementError::NotAVerifierKey(_))
        ));
        let ed = Vkey::new(&origin_for(g), KeyKind::Ed25519(ed25519_key())).unwrap();
        let ed = statement(&m, ed.to_string(), 1, 1_000);
        assert_eq!(
            verify_log_key_statement(g, &ed, None),
            Err(LogKeyStatementError::NotMlDsa44(0x01))
        );

        // Against what is held: an older generation is refused; the same generation must
        // name the same key, whatever its time; a newer generation is taken.
        let old = statement(&m, log_vkey(&m, 0), 0, 2_000);
        assert_eq!(
            verify_log_key_statement(g, &old, Some(&learned)),
            Err(LogKeyStatementError::OlderGeneration {
                generation: 0,
                held: 1
            })
        );
        let earlier = statement(&m, log_vkey(&m, 1), 1, 500);
        let again = verify_log_key_statement(g, &earlier, Some(&learned)).unwrap();
        assert!(!again.is_newer_than(&learned));
        let swapped = statement(&m, log_vkey(&m, 2), 1, 3_000);
        assert_eq!(
            verify_log_key_statement(g, &swapped, Some(&learned)),
            Err(LogKeyStatementError::OtherKeyOfGeneration { generation: 1 })
        );
        let next = statement(&m, log_vkey(&m, 2), 2, 900);
        let next = verify_log_key_statement(g, &next, Some(&learned)).unwrap();
        assert!(next.is_newer_than(&learned));
    }

    /// A valid Ed25519 public key.
    fn ed25519_key() -> [u8; 32] {
        ed25519_dalek::SigningKey::from_bytes(&[5; 32])
            .verifying_key()
            .to_bytes()
    }
}
