//! What each checkpoint must name, by the followers' rule (`dgsp_wire::follow::check_covers`,
//! the one the registry checks before it signs and gateways check before they apply): a
//! timed checkpoint of `size` entries names the newest snapshot among them, and that snapshot
//! holds every revocation among them. The rule itself runs with the checkpoint's signature
//! check ([`super::crypto`]), on the note that verified; this module keeps what it is
//! checked against.
//!
//! A checkpoint that breaks it (`checkpoint_uncovered`) vouches for a state in which a
//! revoked member's signatures still verify: registries with the revocation-fence race of
//! issue 26 signed such checkpoints. A later snapshot holding the revocation repairs the
//! log for verifiers, not the checkpoint: it stays a violation (docs/checkpoints.md,
//! "Recovering a log").

use std::sync::Arc;

use dgsp_core::revocation::SignedSnapshot;

/// Snapshots and revocations, by entry.
#[derive(Default)]
pub(crate) struct Covers {
    /// Snapshots in log order with their entry, from the newest one a checkpoint reached.
    snapshots: Vec<(u64, Arc<SignedSnapshot>)>,
    /// The entry of every revocation, in log order.
    revocations: Vec<u64>,
}

/// What a checkpoint of some size is checked against: the newest snapshot among its
/// entries, and the first revocation among them that snapshot does not cover.
pub(crate) type Covered = (Option<Arc<SignedSnapshot>>, Option<u64>);

impl Covers {
    /// A `member_revoked` entry at `seq`.
    pub(crate) fn revoked(&mut self, seq: u64) {
        self.revocations.push(seq);
    }

    /// A `snapshot_published` entry at `seq`.
    pub(crate) fn published(&mut self, seq: u64, s: Arc<SignedSnapshot>) {
        self.snapshots.push((seq, s));
    }

    /// What a checkpoint of the first `size` entries must name and hold.
    pub(crate) fn at(&mut self, size: u64) -> Covered {
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
        // checkpoint covering fewer entries is `checkpoint_mismatch`).
        if let Some(i) = i {
            self.snapshots.drain(..i);
        }
        (named, uncovered)
    }
}
