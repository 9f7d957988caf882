//! The expensive checks (SPHINCS+ verification of checkpoints, snapshots and opened
//! signatures; judge), queued
//! while the log is replayed and run in parallel in batches. Each depends only on its
//! entry and the group key, never on the replayed state, so the order they run in does not
//! matter; their violations are sorted into place by seq at the end.

use std::sync::Arc;

use dgsp_core::checkpoint::origin_for;
use dgsp_core::revocation::SignedSnapshot;
use dgsp_core::{
    Error as CoreError, ManagerPublicKey, MemberId, MessageDigest, Pi, Signature, WotsPk,
};

use super::violation::{Violation, ViolationKind};
use dgsp_wire::coverage::Covered;

/// Run the queue once it holds this many checks.
pub(crate) const BATCH: usize = 512;

/// One expensive check.
pub(crate) enum Job {
    /// The note of a checkpoint entry must verify under the group key, with the group's
    /// origin, and state the entry's `size` and `head` (its root); then, if it matches the log, it
    /// must name the newest snapshot among the entries it covers, holding every
    /// revocation among them (`covered`, by `dgsp_wire::coverage::Covers`). A later
    /// snapshot holding the revocation repairs the log for verifiers, not the checkpoint:
    /// it stays a violation.
    Checkpoint {
        seq: u64,
        note: String,
        size: u64,
        root: [u8; 32],
        covered: Option<Covered>,
        /// The served checkpoint of a tile source, not an entry (its details say so).
        served: bool,
    },
    /// A snapshot's signature must verify under the group key and name the group.
    Snapshot {
        seq: u64,
        snapshot: Arc<SignedSnapshot>,
    },
    /// An opened signature must verify under the group key (from its digest), and the
    /// opening must pass judge.
    Opening {
        seq: u64,
        signature: Box<Signature>,
        digest: MessageDigest,
        id: MemberId,
        pi: Pi,
    },
}

impl Job {
    /// Runs the check. For an opening, `verified` is the verdict of its signature when the
    /// caller already verified it in a batch; `None` verifies it here.
    fn run(
        &self,
        group: &ManagerPublicKey,
        verified: Option<Result<WotsPk, CoreError>>,
    ) -> Option<Violation> {
        let found =
            |seq: u64, kind: ViolationKind, detail: String| Some(Violation { seq, kind, detail });
        match self {
            Job::Checkpoint {
                seq,
                note,
                size,
                root,
                covered,
                served,
            } => {
                let found = |seq: u64, kind: ViolationKind, detail: String| {
                    let detail = if *served {
                        format!("the served checkpoint (size {size}): {detail}")
                    } else {
                        detail
                    };
                    found(seq, kind, detail)
                };
                match group.verify_checkpoint(note) {
                Err(e) => found(*seq, ViolationKind::CheckpointSignature, e.to_string()),
                Ok(cp) if cp.origin != origin_for(group) => found(
                    *seq,
                    ViolationKind::CheckpointSignature,
                    format!("the note is for origin {:?}, not this group's", cp.origin),
                ),
                Ok(cp) if cp.size != *size || cp.root != *root => found(
                    *seq,
                    ViolationKind::CheckpointMismatch,
                    format!(
                        "the entry states size {size} and root {}, its signed note size {} and root {}",
                        hex::encode(root),
                        cp.size,
                        hex::encode(cp.root)
                    ),
                ),
                Ok(cp) => covered.as_ref().and_then(|(named, uncovered)| {
                    dgsp_wire::follow::check_covers(&cp, named.as_deref(), *uncovered)
                        .err()
                        .and_then(|detail| found(*seq, ViolationKind::CheckpointUncovered, detail))
                }),
                }
            }
            Job::Snapshot { seq, snapshot } => snapshot.verify(group).err().and_then(|e| {
                found(
                    *seq,
                    ViolationKind::SnapshotSignature,
                    format!("snapshot {}: {e}", snapshot.record.number),
                )
            }),
            Job::Opening {
                seq,
                signature,
                digest,
                id,
                pi,
            } => {
                // An invalid signature is the one finding: judging what no member signed
                // says nothing more (judge only looks at the WOTS+ part and tau).
                let verdict = verified
                    .unwrap_or_else(|| group.verify_digest_ignoring_revocation(digest, signature));
                if let Err(e) = verdict {
                    return found(
                        *seq,
                        ViolationKind::InvalidOpenedSignature,
                        format!(
                            "the manager opened (to member {id}) a signature that does not verify under the group key for the logged digest: {e}"
                        ),
                    );
                }
                group
                    .judge_digest(digest, signature, *id, pi)
                    .err()
                    .and_then(|e| {
                        found(
                            *seq,
                            ViolationKind::WrongOpening,
                            format!("the opening names member {id}, judge says: {e}"),
                        )
                    })
            }
        }
    }
}

/// Runs a part of the queue on one thread: the opened signatures first, verified together
/// in one batch (the native verifier fills its hash lanes across them), then every check in
/// order.
fn run_part(part: &[Job], group: &ManagerPublicKey) -> Vec<Violation> {
    let openings: Vec<(&MessageDigest, &Signature)> = part
        .iter()
        .filter_map(|j| match j {
            Job::Opening {
                signature, digest, ..
            } => Some((digest, &**signature)),
            _ => None,
        })
        .collect();
    let mut verdicts = group
        .verify_digest_batch_ignoring_revocation(&openings)
        .into_iter();
    part.iter()
        .filter_map(|j| {
            let verified = match j {
                Job::Opening { .. } => verdicts.next(),
                _ => None,
            };
            j.run(group, verified)
        })
        .collect()
}

/// Runs `jobs` on every core; returns their violations in job order.
pub(crate) fn run_all(jobs: &[Job], group: &ManagerPublicKey) -> Vec<Violation> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len());
    if threads <= 1 {
        return run_part(jobs, group);
    }
    let chunk = jobs.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .chunks(chunk)
            .map(|part| scope.spawn(move || run_part(part, group)))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}
