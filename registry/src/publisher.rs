//! Signs what the writer committed, beside it: revocation snapshots and log checkpoints with
//! the registry's signed time (`docs/checkpoints.md`).
//!
//! SPHINCS+ signatures cost 10-70 ms (hundreds for the `s` sets), so requests are answered
//! as soon as their batch is durable, and this task catches up. Each step:
//!
//! 1. takes the revocation fence ([`Writer::fence_revocations`]): revocations already
//!    queued become durable (their shares are released by the writer, not by their
//!    callers), new ones wait;
//! 2. folds every entry after the last one folded into a copy-on-write clone of the signed
//!    set (milliseconds, even at 10^7 zetas; nothing read is ever dropped) and, if the set
//!    changed or a revocation is past the last snapshot's cut, signs one snapshot covering
//!    everything folded and appends it, then folds again;
//! 3. signs a checkpoint of exactly the entries folded (never simply the store's head) with
//!    the signed time and the snapshot in force — after any change, and at the fixed
//!    cadence even when nothing was written — once the followers' own rule
//!    (`dgsp_wire::follow::check_covers`) holds for it, and stores it as the newest note
//!    (`GET /v1/checkpoint`); checkpoints after a change are also appended to the log, so
//!    followers can apply what they cover.
//!
//! So every revocation a checkpoint covers is in the snapshot it names: by the fence, and
//! checked before signing (a checkpoint that would break it halts the registry instead).
//! Proofs keep being served from the previous signed set while the next one is signed. A
//! clock behind the last signed time by more than the tolerance halts the registry too
//! (`docs/checkpoints.md`).
//!
//! Any failure (storage, a panicked signing task) halts the registry ([`Health`](crate::health::Health)): no
//! silent retries of a write whose outcome is unknown, and followers go stale visibly
//! instead of trusting a registry that stopped signing.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use dgsp_core::checkpoint::{origin_for, Checkpoint, SnapshotRef};
use dgsp_core::revocation::{RevocationSet, SignedSnapshot, SnapshotRecord};
use dgsp_core::Manager;
use dgsp_wire::events::Event;
use dgsp_wire::follow;

use crate::store::{self, Store, StoredNote};
use crate::writer::{Command, WriteError, Writer};
use dgsp_http::clock::{Clock, SystemClock};

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
    /// The witnessed note of the same tree: signed by the log key and cosigned by a quorum
    /// of the witnesses, or, without witnesses, signed by the log key alone (`None` only
    /// for a registry without a log key, and for a note stored before there was one).
    pub witnessed: Option<String>,
    /// [`StoredNote`] JSON: what `meta` keeps and `GET /v1/checkpoint` answers.
    pub json: axum::body::Bytes,
}

impl SignedCheckpoint {
    /// Pairs a checkpoint with its note and serializes the served form.
    pub fn new(checkpoint: Checkpoint, note: String) -> Self {
        Self::witnessed(checkpoint, note, None)
    }

    /// [`new`](Self::new), with the witnessed note of the same tree.
    pub fn witnessed(checkpoint: Checkpoint, note: String, witnessed: Option<String>) -> Self {
        let stored = StoredNote {
            size: checkpoint.size,
            head: hex::encode(checkpoint.root),
            time_unix_ms: checkpoint.time_unix_ms.unwrap_or(0),
            note,
            witnessed,
        };
        let json = serde_json::to_vec(&stored).expect("notes serialize").into();
        SignedCheckpoint {
            checkpoint,
            note: stored.note,
            witnessed: stored.witnessed,
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
    /// Set when the latest signed snapshot does not hold every revocation it covers (a log
    /// written before revocations were ordered by the writer): `set` then holds every
    /// logged revocation, no proof is served and the registry is not ready until the
    /// publisher signs the corrected snapshot, its first step after a start.
    pub repair: Option<String>,
    /// The group key's statement naming the log key that signs the witnessed notes
    /// (`GET /v1/log/key`), set when the publisher starts: the tile mirror publishes it.
    pub log_key_statement: Option<String>,
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
pub fn load(store: &Store, manager: &Manager) -> Result<SharedPublished, store::Error> {
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
    let mut repair = None;
    if let Some(s) = &snapshot {
        if set.len() > s.record.count
            || (set.len() == s.record.count && set.root() != s.record.root)
        {
            // A set that lacks revocations the snapshot covers cannot be recovered from it
            // (it signs a root, not a list), but the log holds them all: serve none of its
            // proofs and publish a corrected snapshot first.
            let reason = format!(
                "snapshot {} covers entries up to {} but holds {} zetas where the log revokes {} up to there; it omits revocations (docs/checkpoints.md, \"Recovering a log\")",
                s.record.number,
                s.record.log_seq,
                s.record.count,
                set.len()
            );
            tracing::error!(%reason, "publishing a corrected snapshot before serving proofs");
            repair = Some(reason);
        } else if set.len() < s.record.count {
            return Err(store::Error::Corrupt {
                what: format!("snapshot {}", s.record.number),
                reason: format!(
                    "it holds {} zetas, more than the {} the log revokes up to entry {}",
                    s.record.count,
                    set.len(),
                    s.record.log_seq
                ),
            });
        }
    }
    let checkpoint = match store.latest_note()? {
        Some(n) => Some(parse_witnessed(manager, &n.note, n.witnessed)?),
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
        repair,
        log_key_statement: None,
    })))
}

fn parse_note(manager: &Manager, note: &str) -> Result<SignedCheckpoint, store::Error> {
    parse_witnessed(manager, note, None)
}

fn parse_witnessed(
    manager: &Manager,
    note: &str,
    witnessed: Option<String>,
) -> Result<SignedCheckpoint, store::Error> {
    let checkpoint =
        manager
            .public_key()
            .verify_checkpoint(note)
            .map_err(|e| store::Error::Corrupt {
                what: "stored checkpoint note".into(),
                reason: e.to_string(),
            })?;
    Ok(SignedCheckpoint::witnessed(
        checkpoint,
        note.to_owned(),
        witnessed,
    ))
}

/// How far behind its last signed time the clock may read before the registry halts: the
/// same tolerance followers give a note dated ahead of their clock
/// ([`DEFAULT_CLOCK_TOLERANCE_MS`](dgsp_core::checkpoint::DEFAULT_CLOCK_TOLERANCE_MS)).
pub const DEFAULT_CLOCK_TOLERANCE: Duration =
    Duration::from_millis(dgsp_core::checkpoint::DEFAULT_CLOCK_TOLERANCE_MS);

/// How long the publisher waits before reading a clock that was behind again.
const CLOCK_REREAD: Duration = Duration::from_millis(250);

/// How soon a checkpoint the witnesses did not cosign is tried again (or the cadence, if
/// shorter).
pub const WITNESS_RETRY: Duration = Duration::from_secs(2);

/// How soon a checkpoint is tried again after the write lease could not be proven.
const LEASE_RETRY: Duration = Duration::from_millis(500);

/// How the publisher runs.
#[derive(Clone, Debug)]
pub struct PublisherConfig {
    /// Longest time between two signed checkpoints.
    pub checkpoint_interval: Duration,
    /// The wall clock notes and snapshots are dated by.
    pub clock: Arc<dyn Clock>,
    /// How far behind the last signed time the clock may be before the registry halts
    /// rather than sign.
    pub clock_tolerance: Duration,
    /// The witnesses whose quorum must cosign a checkpoint before it is published
    /// (`crate::witnessing`); `None`: checkpoints are published as signed (with the log
    /// key's signature alone when there is a log key).
    pub witnesses: Option<Arc<crate::witnessing::Witnesses>>,
    /// The group's log key, whose statement `GET /v1/log/key` serves (the one the witnesses
    /// use, when there are witnesses) and which signs every checkpoint's witnessed note;
    /// `None` (and no witnesses): checkpoints carry no witnessed note, 404 there.
    /// `dgsp-registry serve` always has one.
    pub log_key: Option<Arc<crate::witnessing::LogKey>>,
}

impl Default for PublisherConfig {
    fn default() -> Self {
        PublisherConfig {
            checkpoint_interval: DEFAULT_CHECKPOINT_INTERVAL,
            clock: Arc::new(SystemClock),
            clock_tolerance: DEFAULT_CLOCK_TOLERANCE,
            witnesses: None,
            log_key: None,
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
    clock: Arc<dyn Clock>,
    tolerance_ms: u64,
    witnessing: Option<Arc<crate::witnessing::Witnesses>>,
    /// Signs every checkpoint's witnessed note (the witnesses' own log key when there are
    /// witnesses).
    log_key: Option<Arc<crate::witnessing::LogKey>>,
    /// Every revoked zeta folded so far (a copy-on-write clone of the served set plus what
    /// came since). Nothing read from the log is ever dropped from it.
    working: RevocationSet,
    /// Last entry folded: the only state a checkpoint may cover (its root is the tree's at
    /// this size).
    processed: u64,
    /// The newest `member_revoked` entry folded that revokes at least one zeta.
    last_revocation: u64,
    /// The newest snapshot among the entries folded, parsed from the log, and its entry:
    /// what a follower will hold the next checkpoint against.
    logged_snapshot: Option<(u64, SignedSnapshot)>,
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

impl From<store::Error> for StepError {
    fn from(e: store::Error) -> Self {
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
    ) -> Result<Self, store::Error> {
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
        let log_key = config
            .log_key
            .or_else(|| config.witnesses.as_ref().map(|w| w.log_key().clone()));
        if let (Some(w), Some(k)) = (&config.witnesses, &log_key) {
            assert!(
                Arc::ptr_eq(w.log_key(), k) || w.log_key().vkey() == k.vkey(),
                "the witnesses' log key is the publisher's"
            );
        }
        write(&published).log_key_statement = log_key.as_ref().map(|k| k.statement.clone());
        Ok(Publisher {
            store,
            writer,
            manager,
            published,
            interval: config.checkpoint_interval,
            clock: config.clock,
            tolerance_ms: config.clock_tolerance.as_millis() as u64,
            witnessing: config.witnesses,
            log_key,
            working,
            processed,
            // Revocations up to the cut are in the latest snapshot ([`load`] checked it,
            // or marked it for repair); later ones are folded again.
            last_revocation: 0,
            logged_snapshot: None,
            last_substantive: 0,
            last_logged_checkpoint,
            last_time,
            // A fresh signed time right after a start.
            due: Instant::now(),
        })
    }

    /// One round, under the revocation fence: fold, snapshot if the set changed, checkpoint
    /// if anything changed or the cadence is due.
    ///
    /// The fence keeps revocations out while the snapshot is signed, so the second fold
    /// finds none; if one did slip in (a broken fence), it is kept in the working set, no
    /// checkpoint is signed this round, and the next round snapshots it. Independently of
    /// the fence, [`Self::check_covers`] refuses (fail-stop) to sign a checkpoint whose
    /// revocations are not all in the snapshot it names.
    async fn step(&mut self) -> Result<(), StepError> {
        let head = self.store.head()?;
        let cadence_due = Instant::now() >= self.due;
        if head.seq == self.processed
            && !cadence_due
            && self.writer.health().claimed()
            && !self.owes_checkpoint()
            && !self.owes_snapshot()
        {
            return Ok(());
        }
        let fence = self.writer.fence_revocations().await;
        let started = Instant::now();
        let added = self.fold()?;
        let root_ms = started.elapsed().as_secs_f64() * 1e3;
        if self.owes_snapshot() {
            self.publish_snapshot(if added > 0 { Some(root_ms) } else { None })
                .await?;
            // Our own entry, and anything written meanwhile (but a revocation: the fence).
            let more = self.fold()?;
            if self.owes_snapshot() {
                tracing::error!(
                    zetas = more,
                    "revocations were committed while a snapshot was signed; they are kept for the next snapshot and no checkpoint is signed before it"
                );
                return Ok(());
            }
        }
        if !(self.owes_checkpoint() || cadence_due || !self.writer.health().claimed()) {
            return Ok(());
        }
        // Nothing is signed as fresh by a registry that cannot prove it is the writer now
        // (another may have taken the lease): asked of the store, not of this clock.
        if let Err(why) = self.writer.health().prove_fence().await {
            tracing::warn!(%why, "no checkpoint signed: the write lease is not proven");
            self.due = Instant::now() + self.interval.min(LEASE_RETRY);
            return Ok(());
        }
        let signed = self.sign_checkpoint().await?;
        // Witnesses answer over the network (seconds, when one is slow): revocations do not
        // wait for them. What is published is decided by the checkpoint signed above.
        drop(fence);
        self.publish_checkpoint(signed).await
    }

    /// Whether entries other than our own checkpoints came after the last checkpoint in
    /// the log: a snapshot counts (a corrected one follows no new revocation, and readers
    /// of the log alone must see a checkpoint naming it).
    fn owes_checkpoint(&self) -> bool {
        let snapshot_entry = self.logged_snapshot.as_ref().map_or(0, |(seq, _)| *seq);
        self.last_substantive.max(snapshot_entry) > self.last_logged_checkpoint
    }

    /// Whether a snapshot is owed: none yet, a repair, or a revocation folded past the
    /// published snapshot's cut (the working set then holds zetas the snapshot lacks).
    fn owes_snapshot(&self) -> bool {
        let p = read(&self.published);
        p.repair.is_some()
            || p.snapshot
                .as_ref()
                .is_none_or(|s| s.record.log_seq < self.last_revocation)
    }

    /// Reads every entry after `processed` and folds the zetas of new revocations into the
    /// working set (never dropping one); returns how many zetas were new.
    fn fold(&mut self) -> Result<usize, store::Error> {
        let corrupt = |seq: u64, reason: String| store::Error::Corrupt {
            what: format!("entry {seq}"),
            reason,
        };
        let mut added = 0;
        loop {
            let page = self.store.entries_after(self.processed, 1024)?;
            if page.is_empty() {
                break;
            }
            for e in &page {
                match e.kind.as_str() {
                    "checkpoint" => {}
                    "snapshot_published" => {
                        let s =
                            follow::parse_snapshot(e).map_err(|r| corrupt(e.seq, r.to_string()))?;
                        self.logged_snapshot = Some((e.seq, s));
                    }
                    "member_revoked" => {
                        self.last_substantive = e.seq;
                        let zetas =
                            follow::revoked_zetas(e).map_err(|r| corrupt(e.seq, r.to_string()))?;
                        // A member revoked before any certificate revokes no zeta: followers
                        // hold nothing of it against a snapshot.
                        if !zetas.is_empty() {
                            self.last_revocation = e.seq;
                        }
                        added += self.working.insert(&zetas);
                    }
                    _ => self.last_substantive = e.seq,
                }
                self.processed = e.seq;
            }
        }
        Ok(added)
    }

    /// The registry's guarantee, checked with the followers' own rule before anything is
    /// signed: a checkpoint of the `processed` entries names the newest snapshot among them,
    /// and that snapshot holds every revocation among them.
    fn check_covers(&self, cp: &Checkpoint) -> Result<(), StepError> {
        let snapshot = self.logged_snapshot.as_ref().map(|(_, s)| s);
        let cut = snapshot.map_or(0, |s| s.record.log_seq);
        let uncovered = (self.last_revocation > cut).then_some(self.last_revocation);
        follow::check_covers(cp, snapshot, uncovered).map_err(|why| {
            StepError::Failed(format!(
                "refusing to sign a checkpoint of {} entries: {why}",
                cp.size
            ))
        })
    }

    /// The signed time of the next note: the clock's, and later than the last one. A clock
    /// behind the last signed time by more than the tolerance halts the registry instead
    /// of signing notes dated by the last one (followers would take a stepped-back clock
    /// for a frozen registry, and a clock that ran ahead would date every later note in
    /// its future).
    fn next_time(&self) -> Result<u64, StepError> {
        let now = self.clock.now_ms();
        if now.saturating_add(self.tolerance_ms) < self.last_time {
            return Err(StepError::Failed(format!(
                "the clock reads {now} (Unix ms), {:.1} s behind the last signed time {}; past the tolerance of {:.1} s, so no note is signed. Correct the clock (or wait until it passes {}) and restart the registry",
                (self.last_time - now) as f64 / 1e3,
                self.last_time,
                self.tolerance_ms as f64 / 1e3,
                self.last_time,
            )));
        }
        Ok(now.max(self.last_time.saturating_add(1)))
    }

    async fn publish_snapshot(&mut self, root_ms: Option<f64>) -> Result<(), StepError> {
        let record = {
            let p = read(&self.published);
            let (seq, count, root) = (self.processed, self.working.len(), self.working.root());
            let now = self.clock.now_ms();
            match &p.snapshot {
                Some(prev) => prev.record.next(seq, count, root, now),
                None => SnapshotRecord::genesis(
                    self.manager.public_key().fingerprint(),
                    seq,
                    count,
                    root,
                    now,
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
            snapshot: dgsp_wire::snapshot::snapshot_entry_json(&signed),
        };
        self.writer.submit(Command::Append { event }, None).await?;
        tracing::info!(
            number = signed.record.number,
            count = signed.record.count,
            sign_ms,
            "snapshot published"
        );
        let mut p = write(&self.published);
        if let Some(reason) = p.repair.take() {
            tracing::warn!(
                number = signed.record.number,
                %reason,
                "a corrected snapshot holding every logged revocation is published"
            );
        }
        p.snapshot = Some(signed);
        p.set = self.working.clone();
        p.last_sign_ms = sign_ms;
        if let Some(ms) = root_ms {
            p.last_root_ms = ms;
        }
        Ok(())
    }

    /// Signs a checkpoint of the entries folded, with the next signed time (under the
    /// fence: the snapshot it names holds every revocation it covers).
    async fn sign_checkpoint(&mut self) -> Result<SignedCheckpoint, StepError> {
        // What was folded, never the store's head: a checkpoint covers only what the
        // snapshot it names was checked against.
        let size = self.processed;
        let root = self.store.tree_root(size)?;
        // A clock read behind past the tolerance is read again a moment later before the
        // registry halts: a clock stepped back stays back, a single bad read (seen under
        // libfaketime in the chaos suite) does not.
        let time = match self.next_time() {
            Ok(t) => t,
            Err(_) => {
                tokio::time::sleep(CLOCK_REREAD).await;
                self.next_time()?
            }
        };
        let cp = Checkpoint {
            origin: origin_for(self.manager.public_key()),
            size,
            root,
            time_unix_ms: Some(time),
            snapshot: read(&self.published)
                .snapshot
                .as_ref()
                .map(|s| SnapshotRef::of(&s.record)),
        };
        self.check_covers(&cp)?;
        let m = self.manager.clone();
        let started = Instant::now();
        let body = cp.clone();
        let note = tokio::task::spawn_blocking(move || m.sign_checkpoint(&body))
            .await
            .map_err(|e| StepError::Failed(format!("checkpoint signing: {e}")))?;
        let sign_ms = started.elapsed().as_secs_f64() * 1e3;
        tracing::debug!(size, time, sign_ms, "checkpoint signed");
        write(&self.published).last_checkpoint_sign_ms = sign_ms;
        // Times only increase, whether or not this one is published.
        self.last_time = time;
        Ok(SignedCheckpoint::new(cp, note))
    }

    /// Has `signed` cosigned by a quorum of the witnesses (when the registry has any), or
    /// else signed by the log key alone (when it has one), then serves it and, if the log
    /// owes one, appends it. Without a quorum nothing is published: the served note keeps
    /// its older signed time, so followers see the registry's freshness age (never a fresh
    /// time no quorum vouched for), and the next try comes after [`WITNESS_RETRY`] at the
    /// latest.
    async fn publish_checkpoint(&mut self, signed: SignedCheckpoint) -> Result<(), StepError> {
        let size = signed.checkpoint.size;
        let root = signed.checkpoint.root;
        let witnessed = match (self.witnessing.as_ref(), self.log_key.as_ref()) {
            (Some(w), _) => match w.witness(&signed.checkpoint, &self.store).await {
                Ok(witnessed) => Some(witnessed),
                Err(why) => {
                    tracing::warn!(size, %why, "checkpoint not published: no witness quorum");
                    self.due = Instant::now() + self.interval.min(WITNESS_RETRY);
                    return Ok(());
                }
            },
            (None, Some(k)) => {
                let (k, cp) = (k.clone(), signed.checkpoint.clone());
                let now_s = self.clock.now_ms() / 1000;
                let started = Instant::now();
                let note = tokio::task::spawn_blocking(move || k.log_signed_note(&cp, now_s))
                    .await
                    .map_err(|e| StepError::Failed(format!("log-key signing: {e}")))?
                    .map_err(StepError::Failed)?;
                let ms = started.elapsed().as_secs_f64() * 1e3;
                tracing::debug!(size, ms, "checkpoint signed with the log key");
                Some(note)
            }
            (None, None) => None,
        };
        let signed = match witnessed {
            Some(w) => SignedCheckpoint::witnessed(signed.checkpoint, signed.note, Some(w)),
            None => signed,
        };
        // A registry that has not written since it took the lease logs this checkpoint
        // first: that segment fences every earlier writer out of the journal, and only
        // then is anything served as fresh.
        let claim = !self.writer.health().claimed();
        if claim {
            self.log_checkpoint(&signed, size, root).await?;
        }
        // The witnesses may have taken seconds: still the writer?
        if let Err(why) = self.writer.health().lease_holds() {
            tracing::warn!(size, %why, "checkpoint not published: the write lease is not held");
            self.due = Instant::now() + self.interval.min(LEASE_RETRY);
            return Ok(());
        }
        // Served first, logged second: the note a follower fetches is never older than a
        // checkpoint entry it has already read from the log.
        self.store.put_latest_note(&signed.json)?;
        write(&self.published).checkpoint = Some(signed.clone());
        if claim {
            self.writer.health().claim();
        } else if self.owes_checkpoint() {
            self.log_checkpoint(&signed, size, root).await?;
        }
        self.due = Instant::now() + self.interval;
        Ok(())
    }

    /// Appends `signed` (of `size` entries, `root`) to the log.
    async fn log_checkpoint(
        &mut self,
        signed: &SignedCheckpoint,
        size: u64,
        root: [u8; 32],
    ) -> Result<(), StepError> {
        let event = Event::Checkpoint {
            size,
            head: hex::encode(root),
            note: signed.note.clone(),
        };
        self.writer.submit(Command::Append { event }, None).await?;
        self.last_logged_checkpoint = size;
        // Our own entry, folded now, so that it alone does not wake another round (a
        // fence and a fold for nothing after every change).
        self.fold()?;
        Ok(())
    }
}
