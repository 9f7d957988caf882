//! Turning a checkpointed range of chain-checked entries into the next [`View`], or refusing
//! it whole. Pure: no I/O, so every rule is testable on its own.
//!
//! Rules, per entry kind (everything else is carried by the chain only; entry 1 is checked
//! against the pinned group by [`check_group`] as soon as it is fetched):
//! - `member_revoked` adds its public zetas, revoked from that seq on;
//! - `snapshot_published` must verify under the pinned key, name the group, directly extend
//!   the previous snapshot (number + 1, `prev_hash`, count and `log_seq` not going back), and
//!   the newest one in the range (the one the covering checkpoint names, and the view will
//!   serve) must have the root and count of the set rebuilt from every revocation with
//!   `seq <= log_seq`. An older snapshot of the range that does not is superseded, not
//!   served: a log written by a registry that lost a revocation from a snapshot is repaired
//!   by a later snapshot holding it (docs/checkpoints.md, "Recovering a log"), and the
//!   working set is always the log's revocations, never a snapshot's claim. Such snapshots
//!   are returned with the range, for the follower to report.
//!
//! The range's Merkle tree is computed first ([`roots::range_tree`]): the covering
//! checkpoint's root, and that of every `checkpoint` entry of the range naming a size from
//! the applied one on, must be the tree root of its size (or, in a legacy note, the chain
//! hash there); otherwise the fault is `fork`. (`checkpoint` entries naming a size before
//! the range are checked against the replica's tree by the follower, [`roots::earlier`].)
//!
//! And for the checkpoint that covers the range ([`check_covers`]): a timed checkpoint must
//! name the latest snapshot among its entries, and that snapshot must hold every revocation
//! among them (the registry's guarantee, docs/checkpoints.md), so an answer checked against
//! the view's snapshot is checked against the snapshot the checkpoint names.

use std::collections::HashMap;
use std::sync::Arc;

use dgsp_core::checkpoint::Checkpoint;
use dgsp_core::Zeta;
use dgsp_wire::follow::{self, RuleError};
use dgsp_wire::log::Entry;

use super::{roots, Fault};
use crate::replica::{Applied, Update};
use crate::state::{Verified, View};

/// Applies `entries` (chain-checked, starting right after `view.applied`, ending at the size
/// of `checkpoint`, which covers them) on top of `view`: the checkpoint's root must be the
/// root of the tree of `view` and `entries` ([`roots::range_tree`]). Faults about the
/// checkpoint itself are reported at `at` (its log entry, or the entry it covers for a note
/// from `/v1/checkpoint`). Also returns the `snapshot_mismatch` faults of older snapshots of
/// the range that the newest one supersedes.
pub fn apply_range(
    view: &View,
    entries: &[Entry],
    checkpoint: Arc<Verified>,
    at: u64,
) -> Result<(Update, View, Vec<Fault>), Fault> {
    let group = &view.group;
    let (leaves, tree) = roots::range_tree(
        &view.tree,
        &view.applied.hash,
        entries,
        &checkpoint.checkpoint,
    )?;
    let mut set = None;
    // The newest snapshot's mismatch, if it has one, and those of older ones.
    let mut mismatch: Option<Fault> = None;
    let mut superseded = Vec::new();
    let mut unsnapshotted: Vec<(Zeta, u64)> =
        view.unsnapshotted.iter().map(|(z, s)| (*z, *s)).collect();
    let mut latest = view.snapshot.clone();
    let mut update = Update {
        leaves,
        tree: tree.clone(),
        ..Update::default()
    };
    for e in entries {
        let hash = e.hash_bytes().map_err(|err| Fault::Chain {
            seq: e.seq,
            detail: err.to_string(),
        })?;
        update.hashes.push((e.seq, hash));
        match e.kind.as_str() {
            "member_revoked" => {
                for zeta in follow::revoked_zetas(e)? {
                    unsnapshotted.push((zeta, e.seq));
                    update.revocations.push((zeta, e.seq));
                }
            }
            "snapshot_published" => {
                let s = follow::parse_snapshot(e)?;
                follow::check_snapshot(group, latest.as_deref(), &s, e.seq)?;
                let working = set.get_or_insert_with(|| (*view.set).clone());
                let (now, later): (Vec<_>, Vec<_>) = unsnapshotted
                    .into_iter()
                    .partition(|(_, seq)| *seq <= s.record.log_seq);
                unsnapshotted = later;
                let zetas: Vec<Zeta> = now.into_iter().map(|(z, _)| z).collect();
                working.insert(&zetas);
                superseded.extend(mismatch.take());
                mismatch = follow::check_snapshot_root(&s, working, e.seq)
                    .err()
                    .map(Fault::from);
                let s = Arc::new(s);
                update.snapshots.push(s.clone());
                latest = Some(s);
            }
            _ => {}
        }
    }
    if let Some(fault) = mismatch {
        return Err(fault);
    }
    let last = entries
        .last()
        .ok_or_else(|| Fault::MalformedPage("empty range".into()))?;
    update.applied = Applied {
        seq: last.seq,
        hash: update.hashes.last().map(|(_, h)| *h).unwrap_or_default(),
        time_ms: last.time_ms,
    };
    check_covers(
        &checkpoint.checkpoint,
        latest.as_deref(),
        unsnapshotted.iter().map(|(_, seq)| *seq).min(),
    )
    .map_err(|detail| Fault::BadCheckpoint { seq: at, detail })?;
    update.checkpoint = checkpoint.note.to_string();
    update.witnessed = checkpoint.witness.as_ref().map(|w| w.note.to_string());
    let next = View {
        group: view.group.clone(),
        applied: update.applied,
        checkpoint: Some(checkpoint),
        snapshot: latest,
        set: set.map_or_else(|| view.set.clone(), Arc::new),
        unsnapshotted: Arc::new(unsnapshotted.into_iter().collect::<HashMap<_, _>>()),
        tree,
        witness_policy: view.witness_policy.clone(),
    };
    Ok((update, next, superseded))
}

/// The follower's rule errors are faults of the registry it follows.
impl From<RuleError> for Fault {
    fn from(e: RuleError) -> Fault {
        match e {
            RuleError::MalformedEntry { seq, detail } => Fault::MalformedEntry { seq, detail },
            RuleError::WrongGroup(detail) => Fault::WrongGroup(detail),
            RuleError::BadSnapshot { seq, detail } => Fault::BadSnapshot { seq, detail },
            RuleError::SnapshotMismatch { seq, detail } => Fault::SnapshotMismatch { seq, detail },
            RuleError::BadCheckpoint { seq, detail } => Fault::BadCheckpoint { seq, detail },
            RuleError::ReplayedCheckpoint(detail) => Fault::ReplayedCheckpoint(detail),
        }
    }
}

pub use dgsp_wire::follow::check_covers;

/// The note a `checkpoint` entry carries.
pub fn checkpoint_note(e: &Entry) -> Result<&str, Fault> {
    Ok(follow::checkpoint_note(e)?)
}

/// A `checkpoint` entry's `size` and `head` must be its note's, and it must come after the
/// entries it covers.
pub fn check_checkpoint_entry(e: &Entry, cp: &Checkpoint) -> Result<(), Fault> {
    Ok(follow::check_checkpoint_entry(e, cp)?)
}

/// Verifies a checkpoint note under the pinned key and checks its origin.
pub fn check_note(view: &View, note: &str) -> Result<Checkpoint, String> {
    follow::check_note(&view.group, note)
}

/// Entry 1, and only entry 1, is `group_created`, and it names the pinned key.
pub fn check_group(view: &View, e: &Entry) -> Result<(), Fault> {
    Ok(follow::check_group(&view.group, e)?)
}

/// The zetas a `member_revoked` entry publishes; the auditor reads them with the same rule.
pub fn revoked_zetas(e: &Entry) -> Result<Vec<Zeta>, Fault> {
    Ok(follow::revoked_zetas(e)?)
}

/// Checks a checkpoint entry's note under the pinned key and that its fields agree with the
/// note. Returns the verified note.
pub fn check_checkpoint(view: &View, e: &Entry) -> Result<Verified, Fault> {
    let (cp, note) = follow::check_checkpoint(&view.group, e)?;
    Ok(Verified::new(cp, note.to_owned()))
}

/// Two timed checkpoints of one log must agree (`dgsp_wire::follow::check_order`).
pub fn check_order(new: &Checkpoint, held: &Checkpoint) -> Result<(), Fault> {
    Ok(follow::check_order(new, held)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rules themselves are tested in `dgsp_wire::follow`; here, that each broken rule
    /// becomes the fault of the same kind, at the same entry.
    #[test]
    fn every_broken_rule_is_the_fault_of_its_kind() {
        let d = || "why".to_owned();
        for (rule, kind, seq) in [
            (
                RuleError::MalformedEntry {
                    seq: 3,
                    detail: d(),
                },
                "malformed_entry",
                Some(3),
            ),
            (RuleError::WrongGroup(d()), "wrong_group", None),
            (
                RuleError::BadSnapshot {
                    seq: 4,
                    detail: d(),
                },
                "bad_snapshot",
                Some(4),
            ),
            (
                RuleError::SnapshotMismatch {
                    seq: 5,
                    detail: d(),
                },
                "snapshot_mismatch",
                Some(5),
            ),
            (
                RuleError::BadCheckpoint {
                    seq: 6,
                    detail: d(),
                },
                "bad_checkpoint",
                Some(6),
            ),
            (
                RuleError::ReplayedCheckpoint(d()),
                "replayed_checkpoint",
                None,
            ),
        ] {
            let fault = Fault::from(rule);
            assert_eq!((fault.kind(), fault.seq()), (kind, seq));
            assert!(fault.is_integrity());
            assert!(fault.to_string().contains("why"), "{fault}");
        }
    }
}
