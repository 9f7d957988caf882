//! What the gateway serves: an immutable verified [`View`], swapped whole when a new range
//! is applied, and the [`SyncStatus`] of the follower (lag, faults) for readiness and metrics.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use dgsp_core::revocation::{RevocationSet, SignedSnapshot};
use dgsp_core::{ManagerPublicKey, Zeta};

use crate::replica::{Applied, Loaded};

pub use dgsp_registry::log::now_ms;

/// A verified state of the group: every part of it is covered by a checkpoint signed by the
/// pinned key, and `set` is exactly the zetas of `snapshot`, whose root and count it matches.
#[derive(Clone)]
pub struct View {
    /// The pinned group.
    pub group: Arc<ManagerPublicKey>,
    /// Last applied entry.
    pub applied: Applied,
    /// The signed note of the checkpoint that covers `applied` (its size and head are
    /// `applied.seq` and `applied.hash`).
    pub checkpoint: Option<String>,
    /// The latest verified snapshot.
    pub snapshot: Option<Arc<SignedSnapshot>>,
    /// The zetas of `snapshot`.
    pub set: Arc<RevocationSet>,
    /// Revocations applied after `snapshot.log_seq` (zeta -> seq): revoked, with an
    /// inclusion proof only once the next snapshot covers them.
    pub unsnapshotted: Arc<HashMap<Zeta, u64>>,
}

impl View {
    /// The view a replica resumes with: the set is rebuilt from the stored zetas up to the
    /// latest snapshot's `log_seq` and must match that snapshot's root and count.
    pub fn resume(group: ManagerPublicKey, loaded: Loaded) -> Result<View, String> {
        let cut = loaded.snapshot.as_ref().map_or(0, |s| s.record.log_seq);
        let (covered, later): (Vec<_>, Vec<_>) = loaded
            .zetas
            .into_iter()
            .partition(|(_, seq)| loaded.snapshot.is_some() && *seq <= cut);
        let set = RevocationSet::from_zetas(covered.into_iter().map(|(z, _)| z));
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
        Ok(View {
            group: Arc::new(group),
            applied: loaded.applied,
            checkpoint: loaded.checkpoint,
            snapshot: loaded.snapshot.map(Arc::new),
            set: Arc::new(set),
            unsnapshotted: Arc::new(later.into_iter().collect()),
        })
    }

    /// Whether `zeta` is revoked in this view (in the snapshot or applied after it).
    pub fn is_revoked(&self, zeta: &Zeta) -> bool {
        self.set.contains(zeta) || self.unsnapshotted.contains_key(zeta)
    }
}

/// The current view, replaced atomically.
pub type SharedView = Arc<RwLock<Arc<View>>>;

/// Reads the current view (a cheap `Arc` clone).
pub fn current(view: &SharedView) -> Arc<View> {
    view.read().expect("view lock").clone()
}

/// A fault the follower found in the registry's feed or on its way here.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
pub struct FaultReport {
    /// Stable kind: `unreachable`, `http_status`, `malformed_page`, `chain`, `fork`,
    /// `rollback`, `wrong_group`, `bad_checkpoint`, `bad_snapshot`, `snapshot_mismatch`,
    /// `storage`.
    pub kind: String,
    /// What was wrong.
    pub detail: String,
    /// The log seq it was found at, when it concerns one entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// When it was first seen (Unix ms); repeats of the same kind keep this time.
    pub since_unix_ms: u64,
}

/// The follower's progress, for readiness, metrics and freshness notes in answers.
#[derive(Default)]
pub struct SyncStatus {
    /// The registry's head as of the last good page.
    pub registry_head: u64,
    /// The last entry fetched and chain-checked.
    pub fetched: u64,
    /// Entries fetched and chain-checked but not yet covered by a checkpoint (excluding the
    /// registry's own trailing checkpoint entries).
    pub pending_substantive: u64,
    /// Registry time of the oldest such entry (Unix ms).
    pub oldest_pending_ms: Option<u64>,
    /// When the gateway last confirmed it holds everything the registry had checkpointed
    /// (Unix ms).
    pub synced_unix_ms: Option<u64>,
    /// The fault in force, if the last poll failed.
    pub fault: Option<FaultReport>,
    /// Faults seen since start, by kind.
    pub faults_total: HashMap<&'static str, u64>,
    /// Ranges applied since start.
    pub ranges_applied: u64,
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
            .or(self.fault.as_ref().and(self.synced_unix_ms));
        since.map_or(0.0, |t| now_ms.saturating_sub(t) as f64 / 1e3)
    }

    /// Records a fault (keeping the first-seen time of a repeated kind).
    pub fn record_fault(&mut self, kind: &'static str, detail: String, seq: Option<u64>) {
        *self.faults_total.entry(kind).or_default() += 1;
        let since_unix_ms = match &self.fault {
            Some(f) if f.kind == kind => f.since_unix_ms,
            _ => now_ms(),
        };
        self.fault = Some(FaultReport {
            kind: kind.to_owned(),
            detail,
            seq,
            since_unix_ms,
        });
    }
}

/// Shared handle.
pub type SharedStatus = Arc<Mutex<SyncStatus>>;
