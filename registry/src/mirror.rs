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

/// Runs until aborted.
pub async fn run(store: Arc<Store>, published: SharedPublished, tiles: Arc<dyn TileStore>) {
    let mut backoff = Duration::from_secs(1);
    loop {
        match step(&store, &published, tiles.as_ref()).await {
            Ok(true) => backoff = Duration::from_secs(1),
            Ok(false) => tokio::time::sleep(POLL).await,
            Err(e) => {
                tracing::warn!(store = %tiles.describe(), error = %e, retry_in = ?backoff, "publishing tiles failed");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }
    }
}

/// Publishes up to the newest checkpoint; `Ok(false)` when there was nothing to do.
pub async fn step(
    store: &Arc<Store>,
    published: &SharedPublished,
    tiles: &dyn TileStore,
) -> Result<bool, String> {
    let Some((size, note)) = read(published)
        .checkpoint
        .as_ref()
        .map(|c| (c.checkpoint.size, c.note.clone()))
    else {
        return Ok(false);
    };
    let (done, done_note) = store
        .tiles_published()
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    if done_note == note {
        return Ok(false);
    }
    // A checkpoint never covers less than an earlier one; `min` keeps a store restored
    // from an older backup from skipping tiles.
    let from = done.min(size);
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
    Ok(true)
}
