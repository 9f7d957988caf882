//! Publishes the log's tiles to a tile store (a directory any static server can serve, or
//! an S3-compatible bucket behind a CDN): after each signed checkpoint, every tile that is
//! new or changed at its size (`dgsp_wire::tiles::tiles_for`), each written create-if-absent
//! (a tile's bytes never change: an existing tile with other bytes is a fault, reported and
//! retried), then the bundle of the snapshot the checkpoint names
//! (`dgsp_wire::snapshot_bundle`, `snapshot/<N>`, create-if-absent too: its bytes are a
//! function of the signed snapshot), then the `checkpoint` object, then the witnessed note
//! of the same tree (signed by the log key, cosigned when the registry has witnesses) as
//! [`WITNESSED_CHECKPOINT`] (our extension of the layout). Both are replaced only by a note
//! of a tree at least as large, by compare-and-swap on the object read ([`put_forward`]),
//! and only while this registry is the writer (its fence holds): a registry that lost the
//! lease never moves a bucket's checkpoint back.
//! Partial tiles are written only at checkpointed sizes; a reader that finds a checkpoint
//! finds every tile and the snapshot bundle it needs. The group key's statement naming the
//! log key is written as [`LOG_KEY`] (the path `GET /v1/log/key` has under `/v1/log/`)
//! before anything else, and again whenever it changes (each start dates it anew).
//!
//! The mirror follows the publisher and never delays a write: a store that is down is
//! retried with backoff (1 s to 30 s) and the failure logged and counted; the registry keeps
//! serving the same layout itself (`api::tiles`). Where it got to is kept in the store's
//! `meta` column family (`tiles_published`), so a restart continues there (it writes the
//! named snapshot's bundle again, which is `AlreadySame`). A database with no such record
//! (a registry that took over from another, or one restored onto a new disk) continues
//! from the store's own `checkpoint` when it verifies under the group's key and has this
//! log's root at its size ([`already_published`]), instead of writing every tile again.
//!
//! The snapshot's zetas come from the publisher's state (`Published::set`, exactly the
//! zetas of `Published::snapshot`), remembered for the last few snapshots seen at each
//! poll, so that a checkpoint naming a snapshot a newer one has since replaced still finds
//! its set. Should it not (more than [`RECENT`] snapshots signed between two polls), the
//! checkpoint is published without its bundle and a warning logged: readers starting from
//! the tiles then wait for the next checkpoint, which names a newer snapshot.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use dgsp_core::revocation::{RevocationSet, SignedSnapshot};
use dgsp_tilestore::{Bytes, Error as StoreError, Precondition, TileStore};
use dgsp_wire::snapshot_bundle::{self, SnapshotBundle};
use dgsp_wire::tiles::tiles_for;

use crate::health::Health;
use crate::publisher::{read, SharedPublished};
use crate::store::Store;

/// How often the mirror looks for a newer checkpoint.
const POLL: Duration = Duration::from_millis(200);

/// The tile store object holding the witnessed note of the tree `checkpoint` names (the
/// plain C2SP checkpoint signed by the log key and cosigned by the witnesses), written after
/// `checkpoint`.
pub const WITNESSED_CHECKPOINT: &str = "checkpoint.witnessed";

/// The tile store object holding the group key's statement naming its log key (what the
/// registry serves at `GET /v1/log/key`, so the layout under `/v1/log/` and the store's
/// are the same), for readers that reach only the tiles.
pub const LOG_KEY: &str = "key";

/// Snapshots (with their sets) remembered from the publisher's state, newest last.
pub const RECENT: usize = 4;

/// Where the mirror got to, kept in memory (the size and note are read from the store once,
/// at start).
#[derive(Default)]
pub struct Progress {
    /// The size and note last published.
    pub done: (u64, String),
    /// The number of the snapshot whose bundle was last written.
    pub bundle: Option<u64>,
    /// The log-key statement last written as [`LOG_KEY`].
    pub log_key: Option<String>,
    /// The last few signed snapshots seen in the publisher's state, each with exactly its
    /// set (its root checked), newest last; at most [`RECENT`].
    recent: VecDeque<(SignedSnapshot, RevocationSet)>,
}

impl Progress {
    /// Starts after `done` (size and note published).
    pub fn new(done: (u64, String)) -> Self {
        Progress {
            done,
            ..Progress::default()
        }
    }

    /// Remembers the published snapshot and set, when new and when the set is exactly the
    /// snapshot's (not while a repair is pending). A clone of the set shares its buckets.
    fn remember(&mut self, p: &crate::publisher::Published) {
        let Some(s) = &p.snapshot else { return };
        if p.repair.is_some()
            || self
                .recent
                .back()
                .is_some_and(|(last, _)| last.record == s.record)
            || p.set.len() != s.record.count
            || p.set.root() != s.record.root
        {
            return;
        }
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back((s.clone(), p.set.clone()));
    }
}

/// Runs until aborted. Where it got to is read from the store once, then kept here.
pub async fn run(
    store: Arc<Store>,
    published: SharedPublished,
    tiles: Arc<dyn TileStore>,
    health: Arc<Health>,
) {
    let mut backoff = Duration::from_secs(1);
    let failed = |e: String, backoff: &mut Duration| {
        tracing::warn!(store = %tiles.describe(), error = %e, retry_in = ?*backoff, "publishing tiles failed");
        let wait = *backoff;
        *backoff = (*backoff * 2).min(Duration::from_secs(30));
        wait
    };
    let mut progress = loop {
        match store.tiles_published() {
            Ok(Some(d)) => break Progress::new(d),
            Ok(None) => break Progress::new(already_published(&store, tiles.as_ref()).await),
            Err(e) => tokio::time::sleep(failed(e.to_string(), &mut backoff)).await,
        }
    };
    loop {
        match step(&store, &published, tiles.as_ref(), &mut progress, &health).await {
            Ok(true) => backoff = Duration::from_secs(1),
            Ok(false) => tokio::time::sleep(POLL).await,
            Err(e) => tokio::time::sleep(failed(e, &mut backoff)).await,
        }
    }
}

/// Where a store this registry has no record of publishing to already is: its
/// `checkpoint`, if it verifies under the group's key and its root is this log's root at
/// its size (a registry that took over from another, or restored on a new disk, continues
/// there instead of writing every tile again). Anything else starts from 0.
pub async fn already_published(store: &Store, tiles: &dyn TileStore) -> (u64, String) {
    let Ok(Some(obj)) = tiles.get("checkpoint").await else {
        return Default::default();
    };
    let group = match store.entry(1) {
        Ok(Some(e)) => dgsp_wire::follow::group_key(&e),
        _ => None,
    };
    let (Some(group), Ok(note)) = (group, String::from_utf8(obj.bytes.to_vec())) else {
        return Default::default();
    };
    let Ok(cp) = group.verify_checkpoint(&note) else {
        tracing::warn!(store = %tiles.describe(), "the store's checkpoint is not this group's: publishing every tile");
        return Default::default();
    };
    match store.tree_root(cp.size) {
        Ok(root) if root == cp.root => {
            tracing::info!(size = cp.size, store = %tiles.describe(), "the store already holds this log's tiles up to its checkpoint");
            (cp.size, note)
        }
        _ => {
            tracing::warn!(size = cp.size, store = %tiles.describe(), "the store's checkpoint is not of this log: publishing every tile");
            Default::default()
        }
    }
}

/// The tree size of a checkpoint note (its body's second line), if it is one.
fn note_size(bytes: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(bytes).ok()?;
    let body = &text[..text.find("\n\n")? + 1];
    dgsp_wire::note::CheckpointBody::parse(body)
        .ok()
        .map(|b| b.size)
}

/// Writes the note `text` of a tree of `size` entries as `key`, unless the object there
/// already holds a larger tree's note: compare-and-swap on the version read, so a
/// concurrent writer of a larger tree is never overwritten. `Ok(false)` when the object
/// holds a larger tree (left as it is), `Ok(true)` when it holds `text` now.
pub async fn put_forward(
    tiles: &dyn TileStore,
    key: &str,
    text: &str,
    size: u64,
) -> Result<bool, String> {
    let fail = |e: StoreError| format!("{key}: {e}");
    let pre = match tiles.get(key).await.map_err(fail)? {
        None => Precondition::Absent,
        Some(o) if o.bytes == text.as_bytes() => return Ok(true),
        Some(o) => match note_size(&o.bytes) {
            Some(theirs) if theirs > size => {
                tracing::warn!(
                    key,
                    theirs,
                    ours = size,
                    "the store holds a larger tree's note: left as it is"
                );
                return Ok(false);
            }
            _ => Precondition::Matches(o.version),
        },
    };
    match tiles
        .put_if(key, Bytes::from(text.to_owned().into_bytes()), pre)
        .await
    {
        Ok(_) => Ok(true),
        Err(StoreError::PreconditionFailed { .. }) => {
            Err(format!("{key}: changed while it was written; trying again"))
        }
        Err(e) => Err(fail(e)),
    }
}

/// Publishes up to the newest checkpoint after `progress.done` (the size and note last
/// published, updated once this one is recorded); `Ok(false)` when there was nothing to do.
///
/// Dropped at any `.await` (the registry stopping), it leaves some tiles (and perhaps the
/// snapshot bundle) written and neither the checkpoint object nor the record: the next run
/// writes them again (an object written twice with the same bytes is `AlreadySame`).
/// Killed between the checkpoint object and the record (the witnessed note perhaps not yet
/// written), the next run publishes the same note, and its witnessed note, again.
pub async fn step(
    store: &Arc<Store>,
    published: &SharedPublished,
    tiles: &dyn TileStore,
    progress: &mut Progress,
    health: &Health,
) -> Result<bool, String> {
    let statement = read(published).log_key_statement.clone();
    if let Some(statement) = statement.filter(|s| progress.log_key.as_ref() != Some(s)) {
        tiles
            .put(LOG_KEY, Bytes::from(statement.clone().into_bytes()))
            .await
            .map_err(|e| format!("{LOG_KEY}: {e}"))?;
        progress.log_key = Some(statement);
    }
    let (size, note, named, witnessed) = {
        let p = read(published);
        progress.remember(&p);
        match p.checkpoint.as_ref() {
            Some(c) if c.note != progress.done.1 => (
                c.checkpoint.size,
                c.note.clone(),
                c.checkpoint.snapshot,
                c.witnessed.clone(),
            ),
            _ => return Ok(false),
        }
    };
    let done = &mut progress.done;
    // A checkpoint never covers less than an earlier one; `min` keeps a store restored
    // from an older backup from skipping tiles.
    let from = done.0.min(size);
    let started = std::time::Instant::now();
    let new = tiles_for(from, size);
    for tile in &new {
        let s = store.clone();
        let t = *tile;
        let bytes = tokio::task::spawn_blocking(move || s.tile(&t))
            .await
            .map_err(|e| format!("tile task: {e}"))?
            .map_err(|e| format!("{}: {e}", tile.path()))?;
        tiles
            .put_new(&tile.path(), Bytes::from(bytes))
            .await
            .map_err(|e| format!("{}: {e}", tile.path()))?;
    }
    if let Some(named) = named.filter(|n| progress.bundle != Some(n.number)) {
        match progress.recent.iter().find(|(s, _)| named.names(&s.record)) {
            Some((snapshot, set)) => {
                let (snapshot, set) = (snapshot.clone(), set.clone());
                let bytes =
                    tokio::task::spawn_blocking(move || SnapshotBundle::encode(&snapshot, &set))
                        .await
                        .map_err(|e| format!("snapshot bundle task: {e}"))?;
                let path = snapshot_bundle::path(named.number);
                tiles
                    .put_new(&path, Bytes::from(bytes))
                    .await
                    .map_err(|e| format!("{path}: {e}"))?;
                progress.bundle = Some(named.number);
            }
            None => tracing::warn!(
                snapshot = named.number,
                size,
                "the set of the snapshot this checkpoint names is no longer held: the checkpoint is published without its snapshot bundle"
            ),
        }
    }
    // Only the writer moves the bucket's checkpoint, and only forward.
    health
        .fence()
        .map_err(|why| format!("checkpoint not published: {why}"))?;
    if put_forward(tiles, "checkpoint", &note, size).await? {
        if let Some(witnessed) = witnessed {
            put_forward(tiles, WITNESSED_CHECKPOINT, &witnessed, size).await?;
        }
    }
    store
        .put_tiles_published(size, &note)
        .map_err(|e| e.to_string())?;
    tracing::debug!(
        size,
        tiles = new.len(),
        ms = started.elapsed().as_millis() as u64,
        "tiles published"
    );
    *done = (size, note);
    Ok(true)
}
