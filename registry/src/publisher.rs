//! Signs what the writer committed, beside it: revocation snapshots and log checkpoints.
//!
//! SPHINCS+ signatures cost 10-70 ms (hundreds for the `s` sets), so requests are answered
//! as soon as their batch is durable, and this task catches up: it folds new revocations
//! into the in-memory [`RevocationSet`] (milliseconds, even at 10^7 zetas), signs one
//! snapshot covering everything revoked so far, then one checkpoint of the log head, and
//! appends both through the writer. Revocations that arrive while it signs share the next
//! snapshot.

use std::sync::{Arc, RwLock};
use std::time::Instant;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::checkpoint::{origin_for, Checkpoint};
use dgsp_core::revocation::{RevocationSet, SignedSnapshot, SnapshotRecord};
use dgsp_core::{Manager, Zeta};
use serde_json::{json, Value};

use crate::events::Event;
use crate::log::{now_ms, unhex};
use crate::store::{Store, StoreError};
use crate::writer::{Command, WriteError, Writer};

/// What the API serves about revocation state.
pub struct Published {
    /// Every revoked zeta known to the publisher.
    pub set: RevocationSet,
    /// The latest signed snapshot.
    pub snapshot: Option<SignedSnapshot>,
    /// Milliseconds from noticing new revocations to having the new root, last time.
    pub last_root_ms: f64,
    /// Milliseconds spent signing the last snapshot.
    pub last_sign_ms: f64,
}

impl Published {
    /// Whether `set` is exactly the latest snapshot's set (false while a new one is signed):
    /// proofs from `set` then verify against that snapshot.
    pub fn in_sync(&self) -> bool {
        self.snapshot
            .as_ref()
            .is_some_and(|s| s.record.root == self.set.root() && s.record.count == self.set.len())
    }
}

/// Shared handle.
pub type SharedPublished = Arc<RwLock<Published>>;

/// The JSON form of a signed snapshot (as logged and served).
pub fn snapshot_json(s: &SignedSnapshot) -> Value {
    let r = &s.record;
    json!({
        "record": {
            "group": hex::encode(r.group),
            "number": r.number,
            "log_seq": r.log_seq,
            "count": r.count,
            "root": hex::encode(r.root),
            "prev_hash": hex::encode(r.prev_hash),
            "time_unix_ms": r.time_unix_ms,
        },
        "signature": B64.encode(&s.signature),
        "encoded": B64.encode(s.to_bytes()),
    })
}

/// Parses [`snapshot_json`] output (from the `encoded` field).
pub fn snapshot_from_json(v: &Value) -> Option<SignedSnapshot> {
    let bytes = B64.decode(v.get("encoded")?.as_str()?).ok()?;
    SignedSnapshot::from_bytes(&bytes).ok()
}

/// Loads the published state from the store (at startup).
pub fn load(store: &Store) -> Result<SharedPublished, StoreError> {
    let set = RevocationSet::from_zetas(store.revoked_zetas()?);
    let snapshot = store
        .latest_snapshot()?
        .as_ref()
        .and_then(snapshot_from_json);
    Ok(Arc::new(RwLock::new(Published {
        set,
        snapshot,
        last_root_ms: 0.0,
        last_sign_ms: 0.0,
    })))
}

/// How far the publisher has read the log, and what it still owes.
struct Cursor {
    /// last entry read
    processed: u64,
    /// last entry that is not the publisher's own (snapshot or checkpoint)
    last_substantive: u64,
    /// size of the last published checkpoint
    last_checkpoint: u64,
}

/// Runs until the writer stops.
pub async fn run(
    store: Arc<Store>,
    writer: Writer,
    manager: Arc<Manager>,
    published: SharedPublished,
) {
    let mut heads = writer.subscribe();
    let last_checkpoint = match store.latest_checkpoint().ok().flatten().map(|e| e.event()) {
        Some(Ok(Event::Checkpoint { size, .. })) => size,
        _ => 0,
    };
    // Re-read from the last checkpoint: its zetas are already in the set (re-inserting
    // them changes nothing), and whatever came after it still needs a checkpoint.
    let mut cursor = Cursor {
        processed: last_checkpoint,
        last_substantive: 0,
        last_checkpoint,
    };
    loop {
        if let Err(e) = step(&store, &writer, &manager, &published, &mut cursor).await {
            match e {
                StepError::Stopped => return,
                StepError::Failed(msg) => {
                    tracing::error!(error = %msg, "publisher step failed; retrying")
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            continue;
        }
        if heads.has_changed().unwrap_or(false) {
            heads.mark_unchanged();
            continue;
        }
        if heads.changed().await.is_err() {
            return;
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

async fn step(
    store: &Arc<Store>,
    writer: &Writer,
    manager: &Arc<Manager>,
    published: &SharedPublished,
    cursor: &mut Cursor,
) -> Result<(), StepError> {
    // 1. Fold new revocations into the set; note whether anything but our own entries came.
    let mut new_zetas = Vec::new();
    loop {
        let page = store.entries_after(cursor.processed, 1024)?;
        let Some(last) = page.last() else { break };
        cursor.processed = last.seq;
        for e in &page {
            match e.kind.as_str() {
                "snapshot_published" | "checkpoint" => {}
                "member_revoked" => {
                    cursor.last_substantive = e.seq;
                    if let Some(zs) = e.public.get("zetas").and_then(Value::as_array) {
                        let zetas = zs.iter().filter_map(Value::as_str).filter_map(unhex);
                        new_zetas.extend(zetas.map(Zeta));
                    }
                }
                _ => cursor.last_substantive = e.seq,
            }
        }
    }
    let needs_snapshot = {
        let mut p = published.write().expect("publisher lock");
        let started = Instant::now();
        let added = p.set.insert(&new_zetas);
        if added > 0 {
            p.last_root_ms = started.elapsed().as_secs_f64() * 1e3;
        }
        !p.in_sync()
    };

    // 2. Sign and publish a snapshot of the set.
    if needs_snapshot {
        let record = {
            let p = published.read().expect("publisher lock");
            let seq = cursor.processed;
            match &p.snapshot {
                Some(prev) => prev.record.next(seq, p.set.len(), p.set.root(), now_ms()),
                None => SnapshotRecord::genesis(
                    manager.public_key().fingerprint(),
                    seq,
                    p.set.len(),
                    p.set.root(),
                    now_ms(),
                ),
            }
        };
        let m = manager.clone();
        let started = Instant::now();
        let signed = tokio::task::spawn_blocking(move || m.sign_snapshot(&record))
            .await
            .map_err(|e| StepError::Failed(e.to_string()))?;
        let sign_ms = started.elapsed().as_secs_f64() * 1e3;
        let event = Event::SnapshotPublished {
            snapshot: snapshot_json(&signed),
        };
        writer.submit(Command::Append { event }, None).await?;
        let mut p = published.write().expect("publisher lock");
        tracing::info!(
            number = signed.record.number,
            count = signed.record.count,
            sign_ms,
            "snapshot published"
        );
        p.snapshot = Some(signed);
        p.last_sign_ms = sign_ms;
    }

    // 3. Checkpoint the head if anything besides our own entries came since the last one.
    if cursor.last_substantive > cursor.last_checkpoint {
        let head = store.head()?;
        let cp = Checkpoint {
            origin: origin_for(manager.public_key()),
            size: head.seq,
            head: head.hash,
            time_unix_ms: Some(now_ms()),
            snapshot: published
                .read()
                .expect("publisher lock")
                .snapshot
                .as_ref()
                .map(|s| dgsp_core::checkpoint::SnapshotRef::of(&s.record)),
        };
        let m = manager.clone();
        let note = tokio::task::spawn_blocking(move || m.sign_checkpoint(&cp))
            .await
            .map_err(|e| StepError::Failed(e.to_string()))?;
        let event = Event::Checkpoint {
            size: head.seq,
            head: hex::encode(head.hash),
            note,
        };
        writer.submit(Command::Append { event }, None).await?;
        cursor.last_checkpoint = head.seq;
    }
    Ok(())
}
