//! A witnessed checkpoint: the plain three-line checkpoint (origin, size, root), signed by
//! the log's key and cosigned by witnesses, judged against a [`Policy`].

use std::collections::BTreeSet;

use super::checkpoint_body::CheckpointBody;
use super::cosignature::verify_signature_line;
use super::policy::Policy;
use super::signed_note::SignedNote;

/// A witnessed checkpoint that met its policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witnessed {
    /// The log's origin.
    pub origin: String,
    /// The tree size.
    pub size: u64,
    /// The RFC 6962 root of the first `size` entries.
    pub root: [u8; 32],
    /// The log signature's timestamp (POSIX seconds; 0 for an Ed25519 note signature,
    /// which carries none).
    pub log_timestamp: u64,
    /// The policy witnesses whose cosignatures counted, with their timestamps, by name.
    pub cosigners: Vec<(String, u64)>,
}

/// Why a witnessed checkpoint was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WitnessedError {
    /// Not a signed note with a three-line checkpoint body.
    #[error("malformed witnessed checkpoint: {0}")]
    Malformed(String),
    /// The origin is no `log` line's key name in the policy.
    #[error("origin {0:?} is not a log of the policy")]
    UnknownOrigin(String),
    /// No signature line by the log's key.
    #[error("no signature by the log's key")]
    NoLogSignature,
    /// A signature line by the log's key does not verify.
    #[error("the log's signature does not verify")]
    BadLogSignature,
    /// The log's timestamp is older than the maximum age (or absent) when one is required.
    #[error("the log's signature is {age_s} s old, over the maximum age")]
    StaleLogSignature {
        /// Its age in seconds.
        age_s: u64,
    },
    /// The log's timestamp is ahead of now by more than the tolerance.
    #[error("the log's signature is {ahead_s} s in the future")]
    FutureLogSignature {
        /// How far ahead, in seconds.
        ahead_s: u64,
    },
    /// A policy witness's cosignature does not verify (another tree, a replayed line).
    #[error("the cosignature of witness {witness:?} does not verify")]
    BadCosignature {
        /// The witness's policy name.
        witness: String,
    },
    /// The counted cosignatures do not satisfy the quorum.
    #[error("quorum not met: counted {have:?}, stale or future {stale:?}")]
    QuorumNotMet {
        /// Witnesses whose cosignatures counted.
        have: Vec<String>,
        /// Witnesses whose cosignatures verified but were too old or too far ahead.
        stale: Vec<String>,
    },
}

/// The witnessed note: the three-line body, a blank line, the log's line, then the
/// cosignature lines (each line is given with or without its newline).
pub fn witnessed_note(
    origin: &str,
    size: u64,
    root: &[u8; 32],
    log_line: &str,
    cosignature_lines: &[String],
) -> String {
    let mut out = CheckpointBody::plain(origin, size, *root).to_body();
    out.push('\n');
    for line in std::iter::once(log_line).chain(cosignature_lines.iter().map(String::as_str)) {
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Whether a timestamp counts: not older than `max_age_s` (when given), not ahead of
/// `now_unix_s` by more than `tolerance_s`. `Err(true)` if stale, `Err(false)` if ahead.
fn fresh(ts: u64, now: u64, max_age_s: Option<u64>, tolerance_s: u64) -> Result<(), bool> {
    if ts.saturating_sub(now) > tolerance_s {
        return Err(false);
    }
    match max_age_s {
        Some(max) if now.saturating_sub(ts) > max => Err(true),
        _ => Ok(()),
    }
}

/// Verifies a witnessed checkpoint note against `policy` at `now_unix_s`.
///
/// The body must be the three-line checkpoint; its origin a policy `log` key's name, with a
/// valid signature by that key. Every line by a policy witness's key (name and key id) must
/// verify, or the note is refused ([`WitnessedError::BadCosignature`]); lines by other keys
/// are ignored. A cosignature counts if its timestamp is at most `max_age_s` old (when
/// given) and at most `tolerance_s` ahead of now; the counted witnesses must meet the
/// quorum.
pub fn verify_witnessed(
    note: &str,
    policy: &Policy,
    now_unix_s: u64,
    max_age_s: Option<u64>,
    tolerance_s: u64,
) -> Result<Witnessed, WitnessedError> {
    let note = SignedNote::parse(note).map_err(|e| WitnessedError::Malformed(e.to_string()))?;
    let cp =
        CheckpointBody::parse(&note.body).map_err(|e| WitnessedError::Malformed(e.to_string()))?;
    if !cp.extensions.is_empty() {
        return Err(WitnessedError::Malformed(
            "a witnessed checkpoint has no extension lines".into(),
        ));
    }
    let log_keys: Vec<_> = policy.log_keys(&cp.origin).collect();
    if log_keys.is_empty() {
        return Err(WitnessedError::UnknownOrigin(cp.origin));
    }

    let mut log_timestamp = None;
    for line in &note.signatures {
        let Some(key) = log_keys
            .iter()
            .find(|k| k.name == line.name && k.key_id == line.key_id)
        else {
            continue;
        };
        let ts =
            verify_signature_line(key, &cp, line).map_err(|_| WitnessedError::BadLogSignature)?;
        log_timestamp = Some(log_timestamp.map_or(ts, |t: u64| t.max(ts)));
    }
    let log_timestamp = log_timestamp.ok_or(WitnessedError::NoLogSignature)?;
    match fresh(log_timestamp, now_unix_s, max_age_s, tolerance_s) {
        Ok(()) => {}
        Err(true) => {
            return Err(WitnessedError::StaleLogSignature {
                age_s: now_unix_s.saturating_sub(log_timestamp),
            })
        }
        Err(false) => {
            return Err(WitnessedError::FutureLogSignature {
                ahead_s: log_timestamp - now_unix_s,
            })
        }
    }

    let mut counted: Vec<(String, u64)> = Vec::new();
    let mut stale = BTreeSet::new();
    for line in &note.signatures {
        let Some(w) = policy.witness_by_key(&line.name, &line.key_id) else {
            continue;
        };
        let ts = verify_signature_line(&w.vkey, &cp, line).map_err(|_| {
            WitnessedError::BadCosignature {
                witness: w.name.clone(),
            }
        })?;
        if fresh(ts, now_unix_s, max_age_s, tolerance_s).is_err() {
            stale.insert(w.name.clone());
        } else if let Some(c) = counted.iter_mut().find(|(n, _)| *n == w.name) {
            c.1 = c.1.max(ts);
        } else {
            counted.push((w.name.clone(), ts));
        }
    }
    let have: BTreeSet<String> = counted.iter().map(|(n, _)| n.clone()).collect();
    if !policy.quorum_met(&have) {
        let stale = stale.difference(&have).cloned().collect();
        return Err(WitnessedError::QuorumNotMet {
            have: have.into_iter().collect(),
            stale,
        });
    }
    Ok(Witnessed {
        origin: cp.origin,
        size: cp.size,
        root: cp.root,
        log_timestamp,
        cosigners: counted,
    })
}

#[cfg(test)]
#[path = "witnessed_tests.rs"]
mod tests;
