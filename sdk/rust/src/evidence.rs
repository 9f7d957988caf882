//! The checks of a gateway answer, each by a stable name, trusting nothing the gateway says
//! that can be checked: the signature, here; the checkpoint note in the answer (signature
//! under the group key, this group's origin, signed time within the policy's maximum age and
//! not more than the policy's tolerance ahead of the caller's clock);
//! the snapshot that note names (its signature, and that the note names exactly it: number
//! and record hash); the revocation proof in the answer against that snapshot, for the zeta
//! read from the signature itself; optionally a minimum snapshot number; and, when the trust
//! root has a witness policy, the answer's witnessed checkpoint and its witnesses' quorum
//! ([`check_witnesses`]). Any failure is a negative verdict. `dgsp-manager verify
//! --group-key` and the SDKs report these names.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
pub use dgsp_core::checkpoint::DEFAULT_CLOCK_TOLERANCE_MS;
use dgsp_core::checkpoint::{origin_for, Checkpoint};
use dgsp_core::revocation::{verify_revocation, Membership, RevocationProof, SignedSnapshot};
use dgsp_core::{ManagerPublicKey, Signature};
use dgsp_wire::answer::{Status, VerifyAnswer};
use dgsp_wire::note::{
    verify_witnessed, CheckpointBody, Policy as WitnessPolicy, SignedNote, WitnessedError,
};
use serde::Serialize;

/// The gateway's own verdict: `ok`, not stale, not revoked or pending a snapshot.
pub const GATEWAY_STATUS: &str = "gateway_status";
/// The signature verifies under the group key (revocation aside), computed here.
pub const SIGNATURE: &str = "signature";
/// The answer's checkpoint note verifies under the group key, for this group's log.
pub const CHECKPOINT_SIGNATURE: &str = "checkpoint_signature";
/// The checkpoint was signed no longer than the policy's maximum age ago.
pub const CHECKPOINT_AGE: &str = "checkpoint_age";
/// The checkpoint's signed time is not more than the policy's tolerance ahead of the
/// caller's clock: a note from the future has age 0 by any clock, so it would pass
/// [`CHECKPOINT_AGE`] for as long as the registry's clock was ahead.
pub const FUTURE_CHECKPOINT: &str = "future_checkpoint";
/// Only with a witness policy in the trust root: the answer carries a witnessed checkpoint
/// (`freshness.checkpoint.witnessed`), signed by the policy's log key for its origin, that
/// signature no older than the maximum age nor more than the tolerance ahead, naming the
/// same origin, size and root as the group-signed checkpoint note.
pub const WITNESSED_CHECKPOINT: &str = "witnessed_checkpoint";
/// Only with a witness policy in the trust root: every cosignature on the witnessed
/// checkpoint by a policy witness verifies (one over another tree, or replayed from an
/// older one, fails this), and the witnesses whose cosignatures are no older than the
/// maximum age (nor more than the tolerance ahead) meet the policy's quorum. The detail
/// names the witnesses that counted and those whose cosignatures were too old.
pub const WITNESS_QUORUM: &str = "witness_quorum";
/// The snapshot the checkpoint names verifies under the group key.
pub const SNAPSHOT_SIGNATURE: &str = "snapshot_signature";
/// The checkpoint names that snapshot (number and record hash), and the answer's proof is
/// against it.
pub const SNAPSHOT_NAMED: &str = "snapshot_named";
/// The proof shows the signature's zeta is not in that snapshot.
pub const REVOCATION_PROOF: &str = "revocation_proof";
/// The snapshot is at least the policy's minimum snapshot number.
pub const MIN_SNAPSHOT: &str = "min_snapshot";

/// One check and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Stable name (the constants of this module).
    pub check: &'static str,
    /// Whether it held.
    pub passed: bool,
    /// What was found, in words.
    pub detail: String,
}

/// What the caller accepts. How fresh an answer must be, and what "now" is, have no
/// default: they are the caller's to say (a browser or a device has its own clock). The
/// constructors set `clock_tolerance_ms` to [`DEFAULT_CLOCK_TOLERANCE_MS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Oldest acceptable checkpoint, in milliseconds before `now_unix_ms`.
    pub max_age_ms: u64,
    /// How far, in milliseconds, a checkpoint's signed time may be ahead of `now_unix_ms`
    /// (clock skew between the registry and the caller); further ahead fails
    /// [`FUTURE_CHECKPOINT`].
    pub clock_tolerance_ms: u64,
    /// Lowest acceptable snapshot number (a snapshot seen before must not be replaced by an
    /// older one).
    pub min_snapshot: Option<u64>,
    /// Now (Unix ms).
    pub now_unix_ms: u64,
}

impl Policy {
    /// Checkpoints no older than `secs` seconds before `now_unix_ms`, any snapshot.
    pub fn max_age_secs(secs: u64, now_unix_ms: u64) -> Self {
        Policy {
            max_age_ms: secs.saturating_mul(1000),
            clock_tolerance_ms: DEFAULT_CLOCK_TOLERANCE_MS,
            min_snapshot: None,
            now_unix_ms,
        }
    }

    /// This policy with `ms` as the tolerance for checkpoints signed ahead of `now_unix_ms`.
    pub fn with_clock_tolerance_ms(self, ms: u64) -> Self {
        Policy {
            clock_tolerance_ms: ms,
            ..self
        }
    }
}

/// The checks made so far, in order.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Checks(pub Vec<Check>);

impl Checks {
    fn record(&mut self, check: &'static str, outcome: Result<String, String>) {
        let (passed, detail) = match outcome {
            Ok(d) => (true, d),
            Err(d) => (false, d),
        };
        self.0.push(Check {
            check,
            passed,
            detail,
        });
    }

    /// The first check that failed, if any.
    pub fn first_failure(&self) -> Option<&Check> {
        self.0.iter().find(|c| !c.passed)
    }

    /// Whether every check held (and there was at least one).
    pub fn all_passed(&self) -> bool {
        !self.0.is_empty() && self.first_failure().is_none()
    }
}

/// The checks that need nothing but the answer: the gateway's verdict, the signature, and
/// the checkpoint note. Returns the checkpoint when its note verified (to fetch the snapshot
/// it names).
pub fn check_answer(
    group: &ManagerPublicKey,
    message: &[u8],
    sig: &Signature,
    answer: &VerifyAnswer,
    policy: &Policy,
    checks: &mut Checks,
) -> Option<Checkpoint> {
    checks.record(GATEWAY_STATUS, gateway_status(answer));
    checks.record(
        SIGNATURE,
        group
            .verify_ignoring_revocation(message, sig)
            .map(|_| "verifies under the group key (checked here)".to_owned())
            .map_err(|e| {
                format!(
                    "does not verify under the group key: {e}{}",
                    if answer.valid {
                        " (yet the gateway said it was valid)"
                    } else {
                        ""
                    }
                )
            }),
    );
    let cp = checkpoint(group, answer);
    checks.record(
        CHECKPOINT_SIGNATURE,
        cp.as_ref()
            .map(|cp| {
                format!(
                    "signed by the group key for {} ({} entries)",
                    cp.origin, cp.size
                )
            })
            .map_err(Clone::clone),
    );
    let cp = cp.ok();
    checks.record(
        CHECKPOINT_AGE,
        match cp.as_ref().map(|cp| (cp.time_unix_ms, cp)) {
            None => Err("no verified checkpoint to take the time from".into()),
            Some((None, _)) => Err("the checkpoint carries no signed time".into()),
            Some((Some(t), cp)) => {
                let age = cp.age_ms(policy.now_unix_ms).unwrap_or_default();
                let words = format!(
                    "signed at {t} (Unix ms), {}; maximum age {:.1} s",
                    when(cp, policy.now_unix_ms),
                    policy.max_age_ms as f64 / 1e3
                );
                if age <= policy.max_age_ms {
                    Ok(words)
                } else {
                    Err(format!("too old: {words}"))
                }
            }
        },
    );
    checks.record(
        FUTURE_CHECKPOINT,
        match cp.as_ref().map(|cp| (cp.ahead_ms(policy.now_unix_ms), cp)) {
            None => Err("no verified checkpoint to take the time from".into()),
            Some((None, _)) => Err("the checkpoint carries no signed time".into()),
            Some((Some(ahead), cp)) => {
                let words = format!(
                    "signed at {} (Unix ms), {}; at most {:.1} s ahead is tolerated",
                    cp.time_unix_ms.unwrap_or_default(),
                    when(cp, policy.now_unix_ms),
                    policy.clock_tolerance_ms as f64 / 1e3
                );
                if ahead <= policy.clock_tolerance_ms {
                    Ok(words)
                } else {
                    Err(format!(
                        "from the future: {words}; the registry's clock or this one is wrong, and such a note says nothing about how fresh the answer is"
                    ))
                }
            }
        },
    );
    cp
}

/// When a timed checkpoint was signed, relative to `now_unix_ms`, in words.
fn when(cp: &Checkpoint, now_unix_ms: u64) -> String {
    match cp.ahead_ms(now_unix_ms) {
        Some(ahead) if ahead > 0 => {
            format!("{:.1} s ahead of this clock", ahead as f64 / 1e3)
        }
        _ => format!(
            "{:.1} s ago",
            cp.age_ms(now_unix_ms).unwrap_or_default() as f64 / 1e3
        ),
    }
}

/// The policy's times in the witnesses' unit, seconds: now (rounded down), the maximum age
/// (rounded down: never more lenient than the caller's milliseconds) and the clock
/// tolerance (rounded up: cosignature timestamps are truncated to the second).
fn witness_clock(policy: &Policy) -> (u64, u64, u64) {
    (
        policy.now_unix_ms / 1000,
        policy.max_age_ms / 1000,
        policy.clock_tolerance_ms.div_ceil(1000),
    )
}

/// A witness timestamp (Unix s) relative to `now_s`, in words.
fn ago_s(ts: u64, now_s: u64) -> String {
    if ts > now_s {
        format!("{} s ahead", ts - now_s)
    } else {
        format!("{} s ago", now_s - ts)
    }
}

/// The checks of the answer's witnessed checkpoint against the trust root's witness
/// policy ([`WITNESSED_CHECKPOINT`], [`WITNESS_QUORUM`]); `cp` is the group-signed
/// checkpoint [`check_answer`] verified, if it did. The maximum age and the clock tolerance
/// of `policy` apply to the log's and to every witness's timestamp: a cosignature older
/// than the maximum age does not count towards the quorum.
pub fn check_witnesses(
    witnesses: &WitnessPolicy,
    answer: &VerifyAnswer,
    cp: Option<&Checkpoint>,
    policy: &Policy,
    checks: &mut Checks,
) {
    let Some(note) = answer
        .freshness
        .checkpoint
        .as_ref()
        .and_then(|c| c.witnessed.as_deref())
    else {
        checks.record(
            WITNESSED_CHECKPOINT,
            Err("the answer carries no witnessed checkpoint (freshness.checkpoint.witnessed), and the trust root's witness policy requires one".into()),
        );
        checks.record(
            WITNESS_QUORUM,
            Err("no witnessed checkpoint to count cosignatures on".into()),
        );
        return;
    };
    let (now_s, max_age_s, tolerance_s) = witness_clock(policy);
    let parsed = SignedNote::parse(note)
        .map_err(|e| format!("malformed witnessed checkpoint: {e}"))
        .and_then(|n| {
            CheckpointBody::parse(&n.body)
                .map(|body| (n, body))
                .map_err(|e| format!("malformed witnessed checkpoint: {e}"))
        });
    let same_tree = parsed
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|(_, body)| same_tree(body, cp));
    let verdict = verify_witnessed(note, witnesses, now_s, Some(max_age_s), tolerance_s);
    let log_part = match &verdict {
        Ok(w) => Ok(format!(
            "signed by the log key of {} at {} (Unix s, {})",
            w.origin,
            w.log_timestamp,
            ago_s(w.log_timestamp, now_s)
        )),
        // The log's signature verified before the cosignatures were looked at.
        Err(WitnessedError::BadCosignature { .. } | WitnessedError::QuorumNotMet { .. }) => Ok(
            match parsed.as_ref().ok().and_then(|(n, body)| {
                log_timestamp(n, witnesses, &body.origin).map(|ts| (ts, &body.origin))
            }) {
                Some((ts, origin)) => format!(
                    "signed by the log key of {origin} at {ts} (Unix s, {})",
                    ago_s(ts, now_s)
                ),
                None => "signed by the policy's log key, in time".to_owned(),
            },
        ),
        Err(e @ WitnessedError::StaleLogSignature { .. }) => Err(format!("{e} of {max_age_s} s")),
        Err(e @ WitnessedError::FutureLogSignature { .. }) => {
            Err(format!("{e}, over the tolerance of {tolerance_s} s"))
        }
        Err(e) => Err(e.to_string()),
    };
    checks.record(
        WITNESSED_CHECKPOINT,
        same_tree.and_then(|tree| log_part.map(|log| format!("{log}; {tree}"))),
    );
    checks.record(
        WITNESS_QUORUM,
        match verdict {
            Ok(w) => {
                let counted: Vec<String> = w
                    .cosigners
                    .iter()
                    .map(|(name, ts)| format!("{name} ({})", ago_s(*ts, now_s)))
                    .collect();
                Ok(format!(
                    "quorum {} met by {} (cosignatures no older than {max_age_s} s)",
                    witnesses.quorum().unwrap_or("none"),
                    if counted.is_empty() {
                        "no witness".to_owned()
                    } else {
                        counted.join(", ")
                    }
                ))
            }
            Err(WitnessedError::BadCosignature { witness }) => Err(format!(
                "the cosignature of witness {witness} does not verify on this checkpoint (a cosignature of another tree, or replayed from an older one)"
            )),
            Err(WitnessedError::QuorumNotMet { have, stale }) => {
                let mut words = format!(
                    "quorum {} not met: counted {}",
                    witnesses.quorum().unwrap_or("none"),
                    if have.is_empty() {
                        "no witness".to_owned()
                    } else {
                        have.join(", ")
                    }
                );
                if !stale.is_empty() {
                    words.push_str(&format!(
                        "; not counted, their cosignatures older than {max_age_s} s or more than {tolerance_s} s ahead: {}",
                        stale.join(", ")
                    ));
                }
                Err(words)
            }
            Err(_) => Err("cosignatures not counted: the witnessed checkpoint was refused".into()),
        },
    );
}

/// The newest timestamp of the note's signature lines by the policy's log keys for
/// `origin` (lines already verified by [`verify_witnessed`]).
fn log_timestamp(note: &SignedNote, witnesses: &WitnessPolicy, origin: &str) -> Option<u64> {
    let keys: Vec<_> = witnesses.log_keys(origin).collect();
    note.signatures
        .iter()
        .filter(|l| {
            keys.iter()
                .any(|k| k.name == l.name && k.key_id == l.key_id && k.kind.is_timestamped())
        })
        .filter_map(|l| Some(u64::from_be_bytes(l.sig.get(..8)?.try_into().ok()?)))
        .max()
}

/// Whether the witnessed note's checkpoint is the group-signed one's tree: same origin,
/// size and root.
fn same_tree(body: &CheckpointBody, cp: Option<&Checkpoint>) -> Result<String, String> {
    let cp = cp.ok_or("no verified group-signed checkpoint to compare it with")?;
    if body.origin != cp.origin || body.size != cp.size || body.root != cp.root {
        return Err(format!(
            "another tree than the group-signed checkpoint: {} size {} root {}, against {} size {} root {}",
            body.origin,
            body.size,
            hex::encode(body.root),
            cp.origin,
            cp.size,
            hex::encode(cp.root)
        ));
    }
    Ok(format!(
        "same origin, size ({}) and root as the group-signed checkpoint",
        cp.size
    ))
}

/// The checks against the snapshot the checkpoint names (`fetched`: the snapshot served
/// under that number, or why there is none).
pub fn check_snapshot(
    group: &ManagerPublicKey,
    sig: &Signature,
    answer: &VerifyAnswer,
    cp: &Checkpoint,
    fetched: Result<SignedSnapshot, String>,
    policy: &Policy,
    checks: &mut Checks,
) {
    let Some(named) = cp.snapshot else {
        for check in [SNAPSHOT_SIGNATURE, SNAPSHOT_NAMED, REVOCATION_PROOF] {
            checks.record(check, Err("the checkpoint names no snapshot".into()));
        }
        return;
    };
    let snapshot = fetched.and_then(|s| {
        s.verify(group)
            .map(|_| s)
            .map_err(|e| format!("snapshot {}: {e}", named.number))
    });
    checks.record(
        SNAPSHOT_SIGNATURE,
        snapshot
            .as_ref()
            .map(|s| {
                format!(
                    "snapshot {} ({} revoked, log entry {}) is signed by the group key",
                    s.record.number, s.record.count, s.record.log_seq
                )
            })
            .map_err(Clone::clone),
    );
    let proof_against = answer
        .revocation
        .as_ref()
        .and_then(|r| r.snapshot.as_ref())
        .map(|s| s.number);
    checks.record(
        SNAPSHOT_NAMED,
        match &snapshot {
            Err(_) => Err(format!(
                "snapshot {} could not be checked",
                named.number
            )),
            Ok(s) if !named.names(&s.record) => Err(format!(
                "the checkpoint names snapshot {} with another record hash than the snapshot served",
                named.number
            )),
            Ok(_) if proof_against != Some(named.number) => Err(format!(
                "the answer's proof is against snapshot {}, the checkpoint names snapshot {}",
                proof_against.map_or_else(|| "(none)".to_owned(), |n| n.to_string()),
                named.number
            )),
            Ok(_) => Ok(format!(
                "the checkpoint names snapshot {} (number and record hash), the one the proof is against",
                named.number
            )),
        },
    );
    checks.record(
        REVOCATION_PROOF,
        snapshot.and_then(|s| proof(group, sig, answer, &s)),
    );
    if let Some(min) = policy.min_snapshot {
        checks.record(
            MIN_SNAPSHOT,
            if named.number >= min {
                Ok(format!("snapshot {} >= {min}", named.number))
            } else {
                Err(format!(
                    "snapshot {} is older than the minimum snapshot {min}",
                    named.number
                ))
            },
        );
    }
}

fn gateway_status(answer: &VerifyAnswer) -> Result<String, String> {
    let pending = answer
        .revocation
        .as_ref()
        .is_some_and(|r| r.pending_snapshot);
    let label = answer.status.label();
    match answer.status {
        _ if pending => Err(format!(
            "{label}: revoked by an entry no snapshot covers yet (pending_snapshot)"
        )),
        Status::Ok if answer.freshness.stale => Err(
            "ok, but served from a stale state (its newest signed checkpoint is older than the gateway's bound)".into(),
        ),
        Status::Ok if answer.valid => Ok("ok".into()),
        _ => Err(match &answer.detail {
            Some(d) => format!("{label}: {d}"),
            None => label.to_owned(),
        }),
    }
}

/// The answer's checkpoint note, verified under the group key, for this group's origin.
fn checkpoint(group: &ManagerPublicKey, answer: &VerifyAnswer) -> Result<Checkpoint, String> {
    let note = answer
        .freshness
        .checkpoint
        .as_ref()
        .and_then(|c| c.note.as_deref())
        .ok_or("the answer carries no signed checkpoint note")?;
    let cp = group
        .verify_checkpoint(note)
        .map_err(|e| format!("the answer's checkpoint note: {e}"))?;
    let origin = origin_for(group);
    if cp.origin != origin {
        return Err(format!(
            "the checkpoint is for log {:?}, this group's is {origin:?}",
            cp.origin
        ));
    }
    Ok(cp)
}

/// The answer's proof for the signature's own zeta against `snapshot`: it must verify and
/// show "not revoked".
fn proof(
    group: &ManagerPublicKey,
    sig: &Signature,
    answer: &VerifyAnswer,
    snapshot: &SignedSnapshot,
) -> Result<String, String> {
    let encoded = answer
        .revocation
        .as_ref()
        .and_then(|r| r.proof.as_ref())
        .ok_or("the answer carries no revocation proof")?;
    let proof = B64
        .decode(&encoded.encoded)
        .ok()
        .and_then(|b| RevocationProof::from_bytes(&b).ok())
        .ok_or("the revocation proof does not decode")?;
    let n = snapshot.record.number;
    match verify_revocation(group, snapshot, sig.zeta(), &proof) {
        Ok(Membership::NotRevoked) => Ok(format!(
            "the signature's zeta is not in snapshot {n} (proof checked here)"
        )),
        Ok(Membership::Revoked) => Err(format!(
            "the proof shows the signature's zeta IS revoked in snapshot {n}"
        )),
        Err(e) => Err(format!(
            "the proof does not verify against snapshot {n} for the signature's zeta: {e}"
        )),
    }
}
