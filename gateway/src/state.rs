//! What the gateway serves: an immutable verified [`View`], swapped whole when a new range
//! is applied or a newer signed checkpoint confirms it, and the [`SyncStatus`] of the
//! follower (lag, faults) for readiness and metrics.
//!
//! Freshness is a property of the view, not of the follower's polling: a view is as fresh as
//! the signed time of the checkpoint that covers it ([`Verified`]). Nothing else (when the
//! gateway last reached the registry, what a page claimed) moves it. Its staleness is the
//! larger of that time's age by the gateway's wall clock and the monotonic time since the
//! gateway verified the note, so a wall clock stepped back never keeps a frozen gateway
//! fresh; a note dated more than the clock tolerance ahead of the wall clock is stale.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Instant;

use dgsp_core::checkpoint::Checkpoint;
use dgsp_core::revocation::{RevocationSet, SignedSnapshot};
use dgsp_core::{ManagerPublicKey, Zeta};
use dgsp_wire::follow::check_root;
use dgsp_wire::merkle::Frontier;

use crate::api::model::Note;
use crate::clock::WallClock;
use crate::replica::{Applied, Loaded};
use crate::witness::{Witness, WitnessPolicy};

pub use dgsp_wire::log::now_ms;

/// A checkpoint note that verified under the pinned key, with what it says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// The checkpoint the note signs.
    pub checkpoint: Checkpoint,
    /// The whole signed note, as the registry served it (ready to go into answers).
    pub note: Note,
    /// When this gateway verified the note (monotonic): staleness is never less than the
    /// time since, whatever the wall clock says.
    pub verified_at: Instant,
    /// The witnessed note of the same tree and the quorum it met (only from the registry's
    /// `/v1/checkpoint`, with a witness policy; checkpoint entries of the feed carry none).
    pub witness: Option<Arc<Witness>>,
}

impl Verified {
    /// A `checkpoint` and the `note` that signs it, verified just now.
    pub fn new(checkpoint: Checkpoint, note: String) -> Self {
        Verified {
            checkpoint,
            note: Note::new(note),
            verified_at: Instant::now(),
            witness: None,
        }
    }

    /// This checkpoint with its witnessed note.
    pub fn with_witness(self, witness: Option<Witness>) -> Self {
        Verified {
            witness: witness.map(Arc::new),
            ..self
        }
    }

    /// The signed time, if the note has one (legacy notes do not).
    pub fn time_unix_ms(&self) -> Option<u64> {
        self.checkpoint.time_unix_ms
    }
}

/// A verified state of the group: every part of it is covered by a checkpoint signed by the
/// pinned key, and `set` is exactly the zetas of `snapshot`, whose root and count it matches.
#[derive(Clone)]
pub struct View {
    /// The pinned group.
    pub group: Arc<ManagerPublicKey>,
    /// Last applied entry.
    pub applied: Applied,
    /// The newest verified checkpoint that covers `applied` exactly (its size is
    /// `applied.seq`, its root `tree`'s root, or in a legacy note `applied.hash`). When it carries a signed time, the view is fresh
    /// as of that time; the follower never replaces it with an older one.
    pub checkpoint: Option<Arc<Verified>>,
    /// The latest verified snapshot.
    pub snapshot: Option<Arc<SignedSnapshot>>,
    /// The zetas of `snapshot`.
    pub set: Arc<RevocationSet>,
    /// Revocations applied after `snapshot.log_seq` (zeta -> seq): revoked, with an
    /// inclusion proof only once the next snapshot covers them.
    pub unsnapshotted: Arc<HashMap<Zeta, u64>>,
    /// The right edge of the Merkle tree of the applied entries (its size is
    /// `applied.seq`): the roots of the next checkpoints are computed from it without
    /// reading the replica.
    pub tree: Frontier,
    /// The witness policy (`--witness-policy`): with one, the view is fresh only as of a
    /// checkpoint that carries its witnessed note ([`Verified::witness`]).
    pub witness_policy: Option<Arc<WitnessPolicy>>,
}

impl View {
    /// The view a replica resumes with: the set is rebuilt from the stored zetas up to the
    /// latest snapshot's `log_seq` and must match that snapshot's root and count; the stored
    /// checkpoint note must verify under the group key and cover the applied position: its
    /// size is the applied seq and its root the replica's tree root there (or, in a legacy
    /// note, the applied entry's hash).
    ///
    /// With a witness policy, the stored witnessed note is verified again (under the policy
    /// as it is now, with no maximum age: its cosignatures' age counts in the view's
    /// staleness) and must be of the same tree; one that does not verify, or a replica
    /// written without one, resumes without it (stale until the next witnessed checkpoint).
    pub fn resume(
        group: ManagerPublicKey,
        loaded: Loaded,
        witness_policy: Option<Arc<WitnessPolicy>>,
        clock: &WallClock,
    ) -> Result<View, String> {
        if loaded.tree.size() != loaded.applied.seq {
            return Err(format!(
                "the replica's tree holds {} entries, {} are applied",
                loaded.tree.size(),
                loaded.applied.seq
            ));
        }
        let later = loaded.later;
        // The replica reads them in key order (RocksDB's bytewise order is the zetas'
        // order), so the set is built from the one vector (its peak: the zetas once, not
        // twice); a store that is not in order is refused by `from_sorted_vec` as corrupt.
        let set = RevocationSet::from_sorted_vec(loaded.covered)
            .map_err(|e| format!("the stored zetas: {e}"))?;
        if let Some(s) = &loaded.snapshot {
            if set.root() != s.record.root || set.len() != s.record.count {
                return Err(format!(
                    "the stored zetas do not rebuild snapshot {} (count {} vs {})",
                    s.record.number,
                    set.len(),
                    s.record.count
                ));
            }
        }
        let checkpoint = match loaded.checkpoint {
            None => None,
            Some(note) => {
                let checkpoint = group
                    .verify_checkpoint(&note)
                    .map_err(|e| format!("the stored checkpoint note: {e}"))?;
                if checkpoint.size != loaded.applied.seq {
                    return Err(format!(
                        "the stored checkpoint covers entry {}, the replica has applied {}",
                        checkpoint.size, loaded.applied.seq
                    ));
                }
                let chain = (loaded.applied.seq > 0).then_some(&loaded.applied.hash);
                check_root(&checkpoint, &loaded.tree.root(), chain).map_err(|why| {
                    format!(
                        "the stored checkpoint note is not of the applied entries: {why}; entry {}'s hash is {}",
                        loaded.applied.seq,
                        hex::encode(loaded.applied.hash)
                    )
                })?;
                let witness = match (&witness_policy, loaded.witnessed) {
                    (Some(policy), Some(witnessed)) => match policy.verify(
                        &witnessed,
                        &checkpoint,
                        clock.now_unix_ms(),
                        None,
                        clock.tolerance(),
                    ) {
                        Ok(w) => Some(w),
                        Err(why) => {
                            tracing::warn!(%why, "the stored witnessed checkpoint does not meet the witness policy; stale until the next witnessed checkpoint");
                            None
                        }
                    },
                    _ => None,
                };
                Some(Arc::new(
                    Verified::new(checkpoint, note).with_witness(witness),
                ))
            }
        };
        Ok(View {
            group: Arc::new(group),
            applied: loaded.applied,
            checkpoint,
            snapshot: loaded.snapshot.map(Arc::new),
            set: Arc::new(set),
            unsnapshotted: Arc::new(later.into_iter().collect()),
            tree: loaded.tree,
            witness_policy,
        })
    }

    /// Whether `zeta` is revoked in this view (in the snapshot or applied after it).
    pub fn is_revoked(&self, zeta: &Zeta) -> bool {
        self.set.contains(zeta) || self.unsnapshotted.contains_key(zeta)
    }

    /// The checkpoint that makes this view fresh: the covering one, when it is timed and,
    /// with a witness policy, carries its witnessed note.
    pub fn fresh(&self) -> Option<&Verified> {
        self.checkpoint.as_deref().filter(|v| {
            v.time_unix_ms().is_some() && (self.witness_policy.is_none() || v.witness.is_some())
        })
    }

    /// How stale the view is at `now_unix_ms`, in milliseconds: the larger of the age of
    /// [`View::fresh`]'s signed time by the wall clock and the monotonic time since this
    /// gateway verified that note, and, with a witness policy, the age of its quorum time
    /// (the witnesses' timestamps, [`crate::witness::quorum_time`]) (`None`: no such
    /// checkpoint, which counts as stale).
    pub fn age_ms(&self, now_unix_ms: u64) -> Option<u64> {
        let fresh = self.fresh()?;
        let wall = fresh.checkpoint.age_ms(now_unix_ms)?;
        let since = u64::try_from(fresh.verified_at.elapsed().as_millis()).unwrap_or(u64::MAX);
        let witnessed = fresh
            .witness
            .as_ref()
            .and_then(|w| w.quorum_time_s)
            .map_or(0, |t| now_unix_ms.saturating_sub(t.saturating_mul(1000)));
        Some(wall.max(since).max(witnessed))
    }

    /// Whether the view is stale at `now_unix_ms` by `clock`: older than
    /// `max_staleness_ms` ([`View::age_ms`]), without a signed time at all, or signed more
    /// than the clock's tolerance ahead of now (then one of the clocks is wrong, and the
    /// note says nothing about freshness).
    pub fn is_stale(&self, clock: &WallClock, now_unix_ms: u64, max_staleness_ms: u64) -> bool {
        let ahead = self
            .fresh()
            .is_some_and(|v| clock.is_ahead(&v.checkpoint, now_unix_ms));
        ahead
            || self
                .age_ms(now_unix_ms)
                .is_none_or(|age| age > max_staleness_ms)
    }
}

/// The current view, replaced atomically.
pub type SharedView = Arc<RwLock<Arc<View>>>;

/// Reads the current view (a cheap `Arc` clone). A poisoned lock is recovered: the view is
/// only ever replaced whole, so whatever it holds is a complete view.
pub fn current(view: &SharedView) -> Arc<View> {
    view.read().unwrap_or_else(PoisonError::into_inner).clone()
}

/// Replaces the current view (recovering a poisoned lock, as [`current`] does).
pub fn replace(view: &SharedView, next: View) {
    *view.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
}

/// Locks `m`, recovering it if a thread panicked while holding it: the data behind the
/// gateway's mutexes are counters and reports, each field consistent on its own, so a
/// request after such a panic is still answered instead of panicking in turn.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A fault the follower found in the registry's feed or on its way here.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
pub struct FaultReport {
    /// Stable kind: `unreachable`, `http_status`, `malformed_page`, `page_too_large`,
    /// `pending_limit`, `chain`, `fork`, `rollback`, `wrong_group`, `malformed_entry`,
    /// `bad_checkpoint`, `replayed_checkpoint`, `future_checkpoint`, `withheld`,
    /// `bad_snapshot`, `snapshot_mismatch`, `storage`; reading tiles (`--tiles`) also
    /// `bad_tile`, `tile_mismatch`, `root_mismatch`, `bad_snapshot_bundle`, `unsettled`;
    /// with a witness policy (`--witness-policy`) also `unwitnessed_checkpoint`,
    /// `witness_quorum`, `bad_witnessed_checkpoint`, `log_key`.
    pub kind: String,
    /// What was wrong.
    pub detail: String,
    /// The log seq it was found at, when it concerns one entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// When it was first seen (Unix ms); repeats of the same kind keep this time.
    pub since_unix_ms: u64,
}

/// The follower's progress, for readiness and metrics. None of it decides freshness (that is
/// the signed time of the view's checkpoint); it tells operators how far behind they are.
#[derive(Default)]
pub struct SyncStatus {
    /// The registry's head as of the last good page.
    pub registry_head: u64,
    /// The last entry fetched and chain-checked.
    pub fetched: u64,
    /// Entries fetched and chain-checked but not yet covered by a checkpoint (excluding the
    /// registry's own trailing checkpoint entries).
    pub pending_substantive: u64,
    /// Memory held by the entries pending, by their parsed size (bytes).
    pub pending_bytes: u64,
    /// Registry time of the oldest such entry (Unix ms).
    pub oldest_pending_ms: Option<u64>,
    /// When the follower last fetched the registry's whole feed without a fault (Unix ms);
    /// reported as lag while the registry cannot be reached, never used for freshness.
    pub last_sync_unix_ms: Option<u64>,
    /// The newest checkpoint the registry served at `/v1/checkpoint` that verified:
    /// `(size, signed time)`.
    pub registry_checkpoint: Option<(u64, Option<u64>)>,
    /// Entries per feed page now (halved after pages refused for size).
    pub page_limit: usize,
    /// The fault in force: the last poll failed, or a signed checkpoint was refused for what
    /// it covers and no checkpoint at least as large has been applied since.
    pub fault: Option<FaultReport>,
    /// The last fault that found the registry's publications at fault (every kind but
    /// `unreachable`, `http_status` and `storage`), kept after the gateway resumed.
    pub last_integrity_fault: Option<FaultReport>,
    /// Faults seen since start, by kind.
    pub faults_total: HashMap<&'static str, u64>,
    /// Ranges applied since start.
    pub ranges_applied: u64,
    /// How this gateway started from tiles, when it did (`--tiles`).
    pub tiles: Option<TilesStatus>,
}

/// A gateway that started from the tiles (`--tiles`): where from, and how long it took.
#[derive(Clone, Debug, Default, serde::Serialize, utoipa::ToSchema)]
pub struct TilesStatus {
    /// The tiles' base URL.
    pub url: String,
    /// The snapshot the replica started from (its bundle), if it started from tiles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap_snapshot: Option<u64>,
    /// The entry that snapshot covers: the replica holds the entries after it, not those
    /// before (their snapshots are not served: `/v1/revocations/snapshots/{n}` answers 404
    /// `before-bootstrap` for an older `n`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_from_seq: Option<u64>,
    /// Milliseconds from the first request to a verified, applied state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap_ms: Option<u64>,
    /// Checkpoints applied through tiles since start.
    pub checkpoints_applied: u64,
}

impl SyncStatus {
    /// Entries the gateway is behind the registry: not yet fetched, plus fetched but not yet
    /// covered by a checkpoint (the registry's own trailing checkpoint entries never count).
    pub fn lag_entries(&self, applied: u64) -> u64 {
        let fetched = self.fetched.max(applied);
        self.registry_head.saturating_sub(fetched) + self.pending_substantive
    }

    /// Seconds the gateway is behind: the age of the oldest entry it has seen but not
    /// applied, or, when the registry cannot be reached, the time since the last sync.
    pub fn lag_seconds(&self, now_ms: u64) -> f64 {
        let since = self
            .oldest_pending_ms
            .or(self.fault.as_ref().and(self.last_sync_unix_ms));
        since.map_or(0.0, |t| now_ms.saturating_sub(t) as f64 / 1e3)
    }

    /// Records a fault, now in force (keeping the first-seen time of a repeated kind).
    pub fn record_fault(
        &mut self,
        kind: &'static str,
        detail: String,
        seq: Option<u64>,
    ) -> &FaultReport {
        *self.faults_total.entry(kind).or_default() += 1;
        let since_unix_ms = match &self.fault {
            Some(f) if f.kind == kind => f.since_unix_ms,
            _ => now_ms(),
        };
        self.fault.insert(FaultReport {
            kind: kind.to_owned(),
            detail,
            seq,
            since_unix_ms,
        })
    }
}

/// Shared handle.
pub type SharedStatus = Arc<Mutex<SyncStatus>>;
