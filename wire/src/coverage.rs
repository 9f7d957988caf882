//! The revocation rules of a whole log, replayed entry by entry: every snapshot holds
//! exactly the revocations it covers, and every checkpoint names the newest snapshot among
//! its entries and covers no revocation outside it ([`crate::follow`]'s rules, applied to
//! every checkpoint of the log rather than to the range a follower is about to apply).
//!
//! Used by `dgsp-registry verify` and the auditor to find checkpoints that vouch for a
//! revoked member's signatures, and to tell whether a later snapshot and checkpoint
//! repaired them (`docs/checkpoints.md`, "Recovering a log"). Pure: no I/O.

use std::collections::VecDeque;
use std::sync::Arc;

use dgsp_core::revocation::{RevocationSet, SignedSnapshot};
use dgsp_core::{ManagerPublicKey, Zeta};

use crate::follow::{self, RuleError};
use crate::log::Entry;

/// Replays a log's revocation rules. Push every entry in order, then read
/// [`findings`](Self::findings) and [`state`](Self::state).
pub struct Coverage {
    group: ManagerPublicKey,
    /// Every revocation up to the newest snapshot's `log_seq`.
    snapshotted: RevocationSet,
    /// Revocations after it: `(seq, zetas)`, in log order.
    later: VecDeque<(u64, Vec<Zeta>)>,
    /// What each checkpoint is held against.
    covers: Covers,
    /// Whether the newest snapshot holds exactly what it covers.
    snapshot_ok: bool,
    /// Whether the newest checkpoint passed.
    checkpoint_ok: Option<bool>,
    findings: Vec<RuleError>,
}

/// Where a replayed log stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No rule was broken.
    Clean,
    /// Rules were broken, but the newest snapshot and checkpoint hold (a repaired log).
    Repaired,
    /// The newest snapshot or checkpoint breaks a rule.
    Broken,
}

impl Coverage {
    /// A replay of a log whose snapshots and checkpoints are signed by `group`.
    pub fn new(group: ManagerPublicKey) -> Coverage {
        Coverage {
            group,
            snapshotted: RevocationSet::default(),
            later: VecDeque::new(),
            covers: Covers::default(),
            snapshot_ok: true,
            checkpoint_ok: None,
            findings: Vec::new(),
        }
    }

    /// Checks one entry (entries in order, from the first).
    pub fn push(&mut self, e: &Entry) {
        match e.kind.as_str() {
            "member_revoked" => match follow::revoked_zetas(e) {
                Ok(zetas) => {
                    self.covers.revoked(e.seq, &zetas);
                    self.later.push_back((e.seq, zetas));
                }
                Err(err) => self.findings.push(err),
            },
            "snapshot_published" => self.snapshot(e),
            "checkpoint" => self.checkpoint(e),
            _ => {}
        }
    }

    fn snapshot(&mut self, e: &Entry) {
        let s = match follow::parse_snapshot(e) {
            Ok(s) => s,
            Err(err) => return self.findings.push(err),
        };
        let previous = self.covers.newest();
        if let Err(err) = follow::check_snapshot(&self.group, previous, &s, e.seq) {
            self.findings.push(err);
        }
        while self
            .later
            .front()
            .is_some_and(|(seq, _)| *seq <= s.record.log_seq)
        {
            if let Some((_, zetas)) = self.later.pop_front() {
                self.snapshotted.insert(&zetas);
            }
        }
        self.snapshot_ok = match follow::check_snapshot_root(&s, &self.snapshotted, e.seq) {
            Ok(()) => true,
            Err(err) => {
                self.findings.push(err);
                false
            }
        };
        self.covers.published(e.seq, Arc::new(s));
    }

    fn checkpoint(&mut self, e: &Entry) {
        let (cp, _) = match follow::check_checkpoint(&self.group, e) {
            Ok(c) => c,
            Err(err) => {
                self.checkpoint_ok = Some(false);
                return self.findings.push(err);
            }
        };
        let (named, first_uncovered) = self.covers.at(cp.size);
        let result = follow::check_covers(&cp, named.as_deref(), first_uncovered);
        self.checkpoint_ok = Some(result.is_ok());
        if let Err(detail) = result {
            self.findings
                .push(RuleError::BadCheckpoint { seq: e.seq, detail });
        }
    }

    /// Every rule broken so far, in log order.
    pub fn findings(&self) -> &[RuleError] {
        &self.findings
    }

    /// Whether the log is clean, repaired (its newest snapshot and checkpoint hold), or
    /// still broken.
    pub fn state(&self) -> State {
        if self.findings.is_empty() {
            State::Clean
        } else if self.snapshot_ok && self.checkpoint_ok != Some(false) {
            State::Repaired
        } else {
            State::Broken
        }
    }
}

/// What each checkpoint of a log is held against ([`follow::check_covers`]): the newest
/// snapshot among its entries, and the first revocation among them that snapshot does not
/// hold. Fed entries in log order; shared by [`Coverage`] and the auditor.
#[derive(Default)]
pub struct Covers {
    /// Snapshots in log order with their entry, from the newest one a checkpoint reached
    /// (the newest is always kept).
    snapshots: Vec<(u64, Arc<SignedSnapshot>)>,
    /// The entry of every revocation that revokes a zeta, in log order.
    revocations: Vec<u64>,
}

/// What a checkpoint of some size is checked against: the newest snapshot among its
/// entries, and the first revocation among them that snapshot does not cover.
pub type Covered = (Option<Arc<SignedSnapshot>>, Option<u64>);

impl Covers {
    /// A `member_revoked` entry at `seq`. A member revoked before any certificate revokes
    /// no zeta, so nothing of it is held against a snapshot (as in the followers' rule).
    pub fn revoked(&mut self, seq: u64, zetas: &[Zeta]) {
        if !zetas.is_empty() {
            self.revocations.push(seq);
        }
    }

    /// A `snapshot_published` entry at `seq`.
    pub fn published(&mut self, seq: u64, s: Arc<SignedSnapshot>) {
        self.snapshots.push((seq, s));
    }

    /// The newest snapshot so far.
    pub fn newest(&self) -> Option<&SignedSnapshot> {
        self.snapshots.last().map(|(_, s)| &**s)
    }

    /// What a checkpoint of the first `size` entries must name and hold.
    pub fn at(&mut self, size: u64) -> Covered {
        let i = self.snapshots.iter().rposition(|(seq, _)| *seq <= size);
        let named = i.map(|i| self.snapshots[i].1.clone());
        let cut = named.as_ref().map_or(0, |s| s.record.log_seq);
        let first = self.revocations.partition_point(|seq| *seq <= cut);
        let uncovered = self
            .revocations
            .get(first)
            .copied()
            .filter(|seq| *seq <= size);
        // Older snapshots than the one a checkpoint reached are never named again (a
        // checkpoint covering fewer entries breaks another rule).
        if let Some(i) = i {
            self.snapshots.drain(..i);
        }
        (named, uncovered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revocation_of_no_zeta_is_never_uncovered() {
        let mut c = Covers::default();
        c.revoked(5, &[]);
        let (named, uncovered) = c.at(9);
        assert!(named.is_none());
        assert_eq!(uncovered, None);
        c.revoked(10, &[Zeta([1; 16])]);
        assert_eq!(
            c.at(9).1,
            None,
            "a revocation after the size is not among its entries"
        );
        assert_eq!(c.at(10).1, Some(10));
    }
}
