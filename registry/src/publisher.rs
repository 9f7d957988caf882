//! Signs what the writer committed, beside it: revocation snapshots and log checkpoints with
//! the registry's signed time (`docs/checkpoints.md`).
//!
//! SPHINCS+ signatures cost 10-70 ms (hundreds for the `s` sets), so requests are answered
//! as soon as their batch is durable, and this task catches up. Each step:
//!
//! 1. takes the revocation fence ([`Writer::fence_revocations`]): in-flight revocations
//!    finish, new ones wait;
//! 2. folds new revocations into a copy-on-write clone of the signed set (milliseconds, even
//!    at 10^7 zetas) and, if it changed, signs one snapshot covering everything revoked so
//!    far and appends it;
//! 3. signs a checkpoint of the log head with the signed time and the snapshot in force —
//!    after any change, and at the fixed cadence even when nothing was written — and stores
//!    it as the newest note (`GET /v1/checkpoint`); checkpoints after a change are also
//!    appended to the log, so followers can apply what they cover.
//!
//! Because of the fence, every revocation a checkpoint covers is in the snapshot it names.
//! Proofs keep being served from the previous signed set while the next one is signed.
//!
//! Any failure (storage, a panicked signing task) halts the registry ([`Health`](crate::health::Health)): no
//! silent retries of a write whose outcome is unknown, and followers go stale visibly
//! instead of trusting a registry that stopped signing.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use dgsp_core::checkpoint::{origin_for, Checkpoint, SnapshotRef};
use dgsp_core::revocation::{RevocationSet, SignedSnapshot, SnapshotRecord};
use dgsp_core::{Manager, Zeta};
use serde_json::Value;

use crate::events::Event;
use crate::log::{now_ms, unhex};
use crate::store::{Store, StoreError, StoredNote};
use crate::writer::{Command, WriteError, Writer};

/// Default cadence of signed checkpoints when nothing is written: well under the 60 s a
/// verifier may demand, with room for a few missed polls.
pub const DEFAULT_CHECKPOINT_INTERVAL: Duration = Duration::from_secs(15);

/// A signed checkpoint, its note, and its served form serialized once (every follower
/// fetches it at each poll).
#[derive(Clone, Debug)]
pub struct SignedCheckpoint {
    /// What it says.
    pub checkpoint: Checkpoint,
    /// The signed note.
    pub note: String,
    /// [`StoredNote`] JSON: what `meta` keeps and `GET /v1/checkpoint` answers.
    pub json: axum::body::Bytes,
}

impl SignedCheckpoint {
    /// Pairs a checkpoint with its note and serializes the served form.
    pub fn new(checkpoint: Checkpoint, note: String) -> Self {
        let stored = StoredNote {
            size: checkpoint.size,
            head: hex::encode(checkpoint.head),
            time_unix_ms: checkpoint.time_unix_ms.unwrap_or(0),
            note,
        };
        let json = serde_json::to_vec(&stored).expect("notes serialize").into();
        SignedCheckpoint {
            checkpoint,
            note: stored.note,
            json,
        }
    }
}

/// What the API serves about revocation state.
pub struct Published {
    /// Exactly the zetas of `snapshot` (proofs from it verify against that snapshot).
    pub set: RevocationSet,
    /// The latest signed snapshot.
    pub snapshot: Option<SignedSnapshot>,
    /// The newest signed checkpoint.
    pub checkpoint: Option<SignedCheckpoint>,
    /// Milliseconds from noticing new revocations to having the new root, last time.
    pub last_root_ms: f64,
    /// Milliseconds spent signing the last snapshot.
    pub last_sign_ms: f64,
    /// Milliseconds spent signing the last checkpoint.
    pub last_checkpoint_sign_ms: f64,
}

/// Shared handle.
pub type SharedPublished = Arc<RwLock<Published>>;

/// Reads the published state (a poisoned lock is recovered: the state is only ever
/// replaced whole, so a panic elsewhere cannot leave it half-written).
pub fn read(p: &SharedPublished) -> RwLockReadGuard<'_, Published> {
    p.read().unwrap_or_else(PoisonError::into_inner)
}

fn write(p: &SharedPublished) -> RwLockWriteGuard<'_, Published> {
    p.write().unwrap_or_else(PoisonError::into_inner)
}

/// The JSON form of a signed snapshot (served, and carried by `snapshot_published`
/// entries), and its parser: `dgsp-wire`'s, shared with every follower.
pub use dgsp_wire::snapshot::{snapshot_from_json, snapshot_json};

/// Loads the published state from the store (at startup; the projections must be
/// current). The served set is rebuilt from the revocations the latest snapshot covers and
/// must reproduce its root.
pub fn load(store: &Store, manager: &Manager) -> Result<SharedPublished, StoreError> {
    let snapshot = store
        .latest_snapshot()?
        .as_ref()
        .and_then(snapshot_from_json);
    let cut = snapshot.as_ref().map_or(0, |s| s.record.log_seq);
    let covered = store
        .revoked_zetas_with_seq()?
        .into_iter()
        .filter(|(_, seq)| *seq <= cut)
        .map(|(z, _)| z);
    let set = RevocationSet::from_zetas(covered);
    if let Some(s) = &snapshot {
        if set.root() != s.record.root || set.len() != s.record.count {
            return Err(StoreError::Corrupt {
                what: format!("snapshot {}", s.record.number),
                reason: "the revoked zetas it covers do not reproduce its root".into(),
            });
        }
    }
    let checkpoint = match store.latest_note()? {
        Some(n) => Some(parse_note(manager, &n.note)?),
        None => match store.latest_checkpoint()?.map(|e| e.event()).transpose()? {
            // Only a starting point for the signed time: a fresh checkpoint is signed at
            // once, so a log note this key cannot verify is logged and skipped.
            Some(Event::Checkpoint { note, .. }) => parse_note(manager, &note)
                .map_err(|e| tracing::warn!(error = %e, "the log's last checkpoint note"))
                .ok(),
            _ => None,
        },
    };
    Ok(Arc::new(RwLock::new(Published {
        set,
        snapshot,
        checkpoint,
        last_root_ms: 0.0,
        last_sign_ms: 0.0,
        last_checkpoint_sign_ms: 0.0,
    })))
}

fn parse_note(manager: &Manager, note: &str) -> Result<SignedCheckpoint, StoreError> {
    let checkpoint =
        manager
            .public_key()
            .verify_checkpoint(note)
            .map_err(|e| StoreError::Corrupt {
                what: "stored checkpoint note".into(),
                reason: e.to_string(),
            })?;
    Ok(SignedCheckpoint::new(checkpoint, note.to_owned()))
}

/// How the publisher runs.
#[derive(Clone, Debug)]
pub struct PublisherConfig {
    /// Longest time between two signed checkpoints.
    pub checkpoint_interval: Duration,
}

impl Default for PublisherConfig {
    fn default() -> Self {
        PublisherConfig {
            checkpoint_interval: DEFAULT_CHECKPOINT_INTERVAL,
        }
    }
}

/// The publisher's position in the log and what it still owes.
struct Publisher {
    store: Arc<Store>,
    writer: Writer,
    manager: Arc<Manager>,
    published: SharedPublished,
    interval: Duration,
    /// Every revoked zeta folded so far (a copy-on-write clone of the served set plus what
    /// came since).
    working: RevocationSet,
    /// Last entry folded.
    processed: u64,
    /// Last entry that is not the publisher's own (snapshot or checkpoint).
    last_substantive: u64,
    /// Size of the last checkpoint appended to the log.
    last_logged_checkpoint: u64,
    /// Signed time of the newest checkpoint (times only increase).
    last_time: u64,
    /// When the next checkpoint is due even if nothing changes.
    due: Instant,
}

/// Runs until the writer stops; halts the registry on any failure.
pub async fn run(
    store: Arc<Store>,
    writer: Writer,
    manager: Arc<Manager>,
    published: SharedPublished,
    config: PublisherConfig,
) {
    let health = writer.health().clone();
    let mut heads = writer.subscribe();
    let mut p = match Publisher::new(store, writer, manager, published, config) {
        Ok(p) => p,
        Err(e) => return health.halt(format!("the publisher could not start: {e}")),
    };
    loop {
        match p.step().await {
            Ok(()) => {}
            Err(StepError::Stopped) => return,
            Err(StepError::Failed(msg)) => {
                return health.halt(format!("the publisher failed: {msg}"));
            }
        }
        if heads.has_changed().unwrap_or(false) {
            heads.mark_unchanged();
            continue;
        }
        tokio::select! {
            changed = heads.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep_until(p.due.into()) => {}
        }
    }
}

enum StepError {
    Stopped,
    Failed(String),
}

impl From<StoreError> for StepError {
    fn from(e: StoreError) -> Self {
        StepError::Failed(e.to_string())
    }
}

impl From<WriteError> for StepError {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Stopped => StepError::Stopped,
            other => StepError::Failed(other.to_string()),
        }
    }
}

impl Publisher {
    fn new(
        store: Arc<Store>,
        writer: Writer,
        manager: Arc<Manager>,
        published: SharedPublished,
        config: PublisherConfig,
    ) -> Result<Self, StoreError> {
        // Re-read from the latest snapshot's cut: its zetas are already in the set
        // (re-inserting them changes nothing), and whatever came after it is folded again;
        // entries after the last logged checkpoint are owed one.
        let (working, last_time, processed) = {
            let p = read(&published);
            let time = p
                .checkpoint
                .as_ref()
                .and_then(|c| c.checkpoint.time_unix_ms)
                .unwrap_or(0);
            let cut = p.snapshot.as_ref().map_or(0, |s| s.record.log_seq);
            (p.set.clone(), time, cut)
        };
        let last_logged_checkpoint = match store.latest_checkpoint()?.map(|e| e.event()) {
            Some(Ok(Event::Checkpoint { size, .. })) => size,
            _ => 0,
        };
        Ok(Publisher {
            store,
            writer,
            manager,
            published,
            interval: config.checkpoint_interval,
            working,
            processed,
            last_substantive: 0,
            last_logged_checkpoint,
            last_time,
            // A fresh signed time right after a start.
            due: Instant::now(),
        })
    }

    /// One round: fold, snapshot if the set changed, checkpoint if anything changed or the
    /// cadence is due.
    async fn step(&mut self) -> Result<(), StepError> {
        let head = self.store.head()?;
        let cadence_due = Instant::now() >= self.due;
        if head.seq == self.processed && !cadence_due && !self.owes_checkpoint() {
            return Ok(());
        }
        let _fence = self.writer.fence_revocations().await;
        let new_zetas = self.fold()?;
        let started = Instant::now();
        let added = self.working.insert(&new_zetas);
        let root_ms = started.elapsed().as_secs_f64() * 1e3;
        let needs_snapshot = {
            let p = read(&self.published);
            p.snapshot.as_ref().is_none_or(|s| {
                s.record.root != self.working.root() || s.record.count != self.working.len()
            })
        };
        if needs_snapshot {
            self.publish_snapshot(if added > 0 { Some(root_ms) } else { None })
                .await?;
            // Our own entry, and anything (but a revocation: the fence) written meanwhile.
            let more = self.fold()?;
            debug_assert!(more.is_empty(), "no revocation passes the fence");
        }
        if self.owes_checkpoint() || cadence_due {
            self.publish_checkpoint().await?;
        }
        Ok(())
    }

    /// Whether entries other than our own came after the last checkpoint in the log.
    fn owes_checkpoint(&self) -> bool {
        self.last_substantive > self.last_logged_checkpoint
    }

    /// Reads every entry after `processed`; returns the zetas of new revocations.
    fn fold(&mut self) -> Result<Vec<Zeta>, StoreError> {
        let mut new_zetas = Vec::new();
        loop {
            let page = self.store.entries_after(self.processed, 1024)?;
            let Some(last) = page.last() else { break };
            self.processed = last.seq;
            for e in &page {
                match e.kind.as_str() {
                    "snapshot_published" | "checkpoint" => {}
                    "member_revoked" => {
                        self.last_substantive = e.seq;
                        if let Some(zs) = e.public.get("zetas").and_then(Value::as_array) {
                            let zetas = zs.iter().filter_map(Value::as_str).filter_map(unhex);
                            new_zetas.extend(zetas.map(Zeta));
                        }
                    }
                    _ => self.last_substantive = e.seq,
                }
            }
        }
        Ok(new_zetas)
    }

    async fn publish_snapshot(&mut self, root_ms: Option<f64>) -> Result<(), StepError> {
        let record = {
            let p = read(&self.published);
            let (seq, count, root) = (self.processed, self.working.len(), self.working.root());
            match &p.snapshot {
                Some(prev) => prev.record.next(seq, count, root, now_ms()),
                None => SnapshotRecord::genesis(
                    self.manager.public_key().fingerprint(),
                    seq,
                    count,
                    root,
                    now_ms(),
                ),
            }
        };
        let m = self.manager.clone();
        let started = Instant::now();
        let signed = tokio::task::spawn_blocking(move || m.sign_snapshot(&record))
            .await
            .map_err(|e| StepError::Failed(format!("snapshot signing: {e}")))?;
        let sign_ms = started.elapsed().as_secs_f64() * 1e3;
        let event = Event::SnapshotPublished {
            snapshot: snapshot_json(&signed),
        };
        self.writer.submit(Command::Append { event }, None).await?;
        tracing::info!(
            number = signed.record.number,
            count = signed.record.count,
            sign_ms,
            "snapshot published"
        );
        let mut p = write(&self.published);
        p.snapshot = Some(signed);
        p.set = self.working.clone();
        p.last_sign_ms = sign_ms;
        if let Some(ms) = root_ms {
            p.last_root_ms = ms;
        }
        Ok(())
    }

    async fn publish_checkpoint(&mut self) -> Result<(), StepError> {
        let head = self.store.head()?;
        let time = now_ms().max(self.last_time.saturating_add(1));
        let cp = Checkpoint {
            origin: origin_for(self.manager.public_key()),
            size: head.seq,
            head: head.hash,
            time_unix_ms: Some(time),
            snapshot: read(&self.published)
                .snapshot
                .as_ref()
                .map(|s| SnapshotRef::of(&s.record)),
        };
        let m = self.manager.clone();
        let started = Instant::now();
        let body = cp.clone();
        let note = tokio::task::spawn_blocking(move || m.sign_checkpoint(&body))
            .await
            .map_err(|e| StepError::Failed(format!("checkpoint signing: {e}")))?;
        let sign_ms = started.elapsed().as_secs_f64() * 1e3;
        let signed = SignedCheckpoint::new(cp, note);
        // Served first, logged second: the note a follower fetches is never older than a
        // checkpoint entry it has already read from the log.
        self.store.put_latest_note(&signed.json)?;
        tracing::debug!(size = head.seq, time, sign_ms, "checkpoint signed");
        {
            let mut p = write(&self.published);
            p.checkpoint = Some(signed.clone());
            p.last_checkpoint_sign_ms = sign_ms;
        }
        if self.owes_checkpoint() {
            let event = Event::Checkpoint {
                size: head.seq,
                head: hex::encode(head.hash),
                note: signed.note,
            };
            self.writer.submit(Command::Append { event }, None).await?;
            self.last_logged_checkpoint = head.seq;
        }
        self.last_time = time;
        self.due = Instant::now() + self.interval;
        Ok(())
    }
}
