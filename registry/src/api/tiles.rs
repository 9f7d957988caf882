//! The log as C2SP `tlog-tiles`, served by the registry itself under `/v1/log/`:
//! `checkpoint` (the newest signed note, as text) and `tile/...` (hash tiles and entry
//! bundles, read from the tree projection and the log). Any static server or object store
//! can serve the same layout (`docs/format.md`, "Tiles").
//!
//! A tile is served once every hash or entry it holds is covered by the newest signed
//! checkpoint; its bytes never change after that, so every tile, full or partial, is
//! `immutable` for a year. The checkpoint is fresh for [`CHECKPOINT_MAX_AGE_SECS`].

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use super::Shared;
use dgsp_http::problem::Problem;
use dgsp_wire::tiles::{Tile, TILE_HEIGHT, TILE_WIDTH};

/// How long a cache may serve the checkpoint without asking again (seconds). Short: a
/// verifier judges freshness by the note's signed time, and a cache adds its age to it.
pub const CHECKPOINT_MAX_AGE_SECS: u32 = 2;
/// `Cache-Control` of every tile: its bytes never change.
pub const TILE_CACHE_CONTROL: &str = "public, max-age=31536000, immutable";

/// The newest signed checkpoint note, as text (`text/plain; charset=utf-8`).
#[utoipa::path(get, path = "/v1/log/checkpoint", tag = "tiles",
    responses((status = 200, description = "the newest signed checkpoint note (C2SP tlog-checkpoint)", content_type = "text/plain"),
        (status = 503, body = Problem)))]
pub async fn checkpoint(State(s): State<Shared>) -> Response {
    match &crate::publisher::read(&s.published).checkpoint {
        Some(c) => (
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8".to_owned()),
                (
                    header::CACHE_CONTROL,
                    format!("public, max-age={CHECKPOINT_MAX_AGE_SECS}"),
                ),
            ],
            c.note.clone(),
        )
            .into_response(),
        None => Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not-yet-published",
            "Not published yet",
            "no checkpoint has been signed yet",
        )
        .retry_after(1)
        .into_response(),
    }
}

/// The number of leaves a tile's contents span: it can be served once a checkpoint covers
/// that many entries. `None` if that is beyond any tree.
pub fn extent(tile: &Tile) -> Option<u64> {
    let nodes = tile
        .index
        .checked_mul(TILE_WIDTH)?
        .checked_add(u64::from(tile.width))?;
    let shift = u32::from(tile.level.unwrap_or(0)) * u32::from(TILE_HEIGHT);
    let leaves = nodes.checked_shl(shift)?;
    (leaves >> shift == nodes).then_some(leaves)
}

/// A hash tile or an entry bundle (`application/octet-stream`).
#[utoipa::path(get, path = "/v1/log/tile/{path}", tag = "tiles",
    params(("path" = String, Path, description = "the rest of a C2SP tlog-tiles path: `<L>/<N>[.p/<W>]` or `entries/<N>[.p/<W>]`")),
    responses((status = 200, description = "the tile's bytes", content_type = "application/octet-stream"),
        (status = 404, description = "not a tile path, or not covered by the newest checkpoint", body = Problem)))]
pub async fn tile(State(s): State<Shared>, Path(rest): Path<String>) -> Response {
    let path = format!("tile/{rest}");
    let tile = match Tile::parse(&path) {
        Ok(t) => t,
        Err(e) => return not_found(e.to_string()),
    };
    let covered = crate::publisher::read(&s.published)
        .checkpoint
        .as_ref()
        .map_or(0, |c| c.checkpoint.size);
    match extent(&tile) {
        Some(n) if n <= covered => {}
        _ => {
            return not_found(format!(
                "{path} is not covered by the newest checkpoint ({covered} entries)"
            ))
        }
    }
    let store = s.store.clone();
    match tokio::task::spawn_blocking(move || store.tile(&tile)).await {
        Ok(Ok(bytes)) => (
            [
                (header::CONTENT_TYPE, "application/octet-stream"),
                (header::CACHE_CONTROL, TILE_CACHE_CONTROL),
            ],
            bytes,
        )
            .into_response(),
        Ok(Err(e)) => Problem::storage("tile", e).into_response(),
        Err(e) => Problem::storage("tile", e).into_response(),
    }
}

fn not_found(detail: String) -> Response {
    Problem::new(
        StatusCode::NOT_FOUND,
        "no-such-tile",
        "No such tile",
        detail,
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents() {
        let t = |level, index, width| Tile {
            level,
            index,
            width,
        };
        assert_eq!(extent(&t(None, 0, 5)), Some(5));
        assert_eq!(extent(&t(Some(0), 2, 256)), Some(768));
        assert_eq!(extent(&t(Some(1), 0, 1)), Some(256));
        assert_eq!(extent(&t(Some(2), 1, 3)), Some((256 + 3) << 16));
        assert_eq!(extent(&t(Some(7), u64::MAX / 256, 256)), None);
    }
}
