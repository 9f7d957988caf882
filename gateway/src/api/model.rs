//! The gateway's request and answer bodies: the wire types (`dgsp_wire::answer`, which
//! clients and the verifier SDKs read too), and how the gateway fills the parts of an answer
//! that come from its verified view.

pub use dgsp_wire::answer::*;

use dgsp_core::Zeta;

use crate::clock::WallClock;
use crate::state::View;

/// How current a view is, as an answer states it.
pub trait FreshnessOf {
    /// The freshness of `view` now by `clock` against the bound, with the signed note.
    fn of(view: &View, clock: &WallClock, max_staleness: std::time::Duration) -> Self;
}

impl FreshnessOf for Freshness {
    fn of(view: &View, clock: &WallClock, max_staleness: std::time::Duration) -> Self {
        let now_unix_ms = clock.now_unix_ms();
        let max_staleness_ms = u64::try_from(max_staleness.as_millis()).unwrap_or(u64::MAX);
        let fresh = view.fresh();
        Freshness {
            applied_seq: view.applied.seq,
            checkpoint: fresh.and_then(|v| {
                Some(CheckpointEvidence {
                    size: v.checkpoint.size,
                    time_unix_ms: v.checkpoint.time_unix_ms?,
                    snapshot_number: v.checkpoint.snapshot.map(|s| s.number),
                    note: Some(v.note.clone()),
                    witnessed: v.witness.as_ref().map(|w| w.note.clone()),
                })
            }),
            age_ms: view.age_ms(now_unix_ms),
            max_staleness_ms,
            stale: view.is_stale(clock, now_unix_ms, max_staleness_ms),
        }
    }
}

/// The revocation state of one zeta in a view.
pub trait RevocationOf {
    /// Looks `zeta` up in `view`.
    fn of(view: &View, zeta: &Zeta) -> Self;
}

impl RevocationOf for Revocation {
    fn of(view: &View, zeta: &Zeta) -> Self {
        let pending = view.unsnapshotted.contains_key(zeta);
        let snapshot = view.snapshot.as_deref().map(SnapshotRef::of);
        let proof = if pending || snapshot.is_none() {
            None
        } else {
            Some(ProofRef::of(&view.set.prove(zeta)))
        };
        Revocation {
            revoked: view.is_revoked(zeta),
            pending_snapshot: pending,
            snapshot,
            proof,
        }
    }
}
