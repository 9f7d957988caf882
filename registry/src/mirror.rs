//! Publishes the log's tiles to a tile store (a directory any static server can serve, or
//! an S3-compatible bucket behind a CDN): after each signed checkpoint, every tile that is
//! new or changed at its size (`dgsp_wire::tiles::tiles_for`), each written create-if-absent
//! (a tile's bytes never change: an existing tile with other bytes is a fault, reported and
//! retried), then the `checkpoint` object. Partial tiles are written only at checkpointed
//! sizes.
//!
//! The mirror follows the publisher and never delays a write: a store that is down is
//! retried with backoff (1 s to 30 s) and the failure logged and counted; the registry keeps
//! serving the same layout itself (`api::tiles`). Where it got to is kept in the store's
//! `meta` column family (`tiles_published`), so a restart continues there.

use std::sync::Arc;
use std::time::Duration;

use dgsp_tilestore::{Bytes, TileStore};
use dgsp_wire::tiles::tiles_for;

use crate::publisher::{read, SharedPublished};
use crate::store::Store;

/// How often the mirror looks for a newer checkpoint.
const POLL: Duration = Duration::from_millis(200);

/// Runs until aborted. Where it got to is read from the store once, then kept here.
pub async fn run(store: Arc<Store>, published: SharedPublished, tiles: Arc<dyn TileStore>) {
    let mut backoff = Duration::from_secs(1);
    let failed = |e: String, backoff: &mut Duration| {
        tracing::warn!(store = %tiles.describe(), error = %e, retry_in = ?*backoff, "publishing tiles failed");
        let wait = *backoff;
        *backoff = (*backoff * 2).min(Duration::from_secs(30));
        wait
    };
    let mut done = loop {
        match store.tiles_published() {
            Ok(d) => break d.unwrap_or_default(),
            Err(e) => tokio::time::sleep(failed(e.to_string(), &mut backoff)).await,
        }
    };
    loop {
        match step(&store, &published, tiles.as_ref(), &mut done).await {
            Ok(true) => backoff = Duration::from_secs(1),
            Ok(false) => tokio::time::sleep(POLL).await,
            Err(e) => tokio::time::sleep(failed(e, &mut backoff)).await,
        }
    }
}

/// Publishes up to the newest checkpoint after `done` (the size and note last published,
/// updated once this one is recorded); `Ok(false)` when there was nothing to do.
///
/// Dropped at any `.await` (the registry stopping), it leaves some tiles written and
/// neither the checkpoint object nor the record: the next run writes them again (a tile
/// written twice with the same bytes is `AlreadySame`). Killed between the checkpoint object
/// and the record, the next run publishes the same note again.
pub async fn step(
    store: &Arc<Store>,
    published: &SharedPublished,
    tiles: &dyn TileStore,
    done: &mut (u64, String),
) -> Result<bool, String> {
    let (size, note) = {
        let p = read(published);
        match p.checkpoint.as_ref() {
            Some(c) if c.note != done.1 => (c.checkpoint.size, c.note.clone()),
            _ => return Ok(false),
        }
    };
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
    tiles
        .put("checkpoint", Bytes::from(note.clone().into_bytes()))
        .await
        .map_err(|e| format!("checkpoint: {e}"))?;
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
