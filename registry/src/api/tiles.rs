//! The log as C2SP `tlog-tiles`, served by the registry itself under `/v1/log/`:
//! `checkpoint` (the newest signed note, as text), `checkpoint.witnessed` (its witnessed
//! note: signed by the log key, cosigned when the registry has witnesses) and `tile/...`
//! (hash tiles and entry bundles, read from the tree projection and the log). Any static
//! server or object store can serve the same layout (`docs/format.md`, "Tiles").
//!
//! A tile is served once every hash or entry it holds is covered by the newest signed
//! checkpoint; its bytes never change after that, so every tile, full or partial, is
//! `immutable` for a year ([`TILE_CACHE_CONTROL`]). The checkpoint is fresh for
//! [`CHECKPOINT_MAX_AGE_SECS`] ([`CHECKPOINT_CACHE_CONTROL`]).
//!
//! `snapshot/<N>` is the bundle of signed snapshot `N` (its revoked zetas, sorted, and the
//! signed snapshot: `dgsp_wire::snapshot_bundle`), served for the registry's latest
//! snapshot, the one its checkpoints name; built once per snapshot and kept
//! ([`BUNDLE_CACHE`]). Older snapshots' bundles are in the tile store, where the mirror
//! wrote them.

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use std::sync::Mutex;

use super::Shared;
use dgsp_http::problem::Problem;
use dgsp_wire::snapshot_bundle::{self, SnapshotBundle};
use dgsp_wire::tiles::Tile;

/// The last snapshot bundle built, by its record's hash (which names the group and the
/// number): one per process, shared by every registry it runs (tests run several).
pub static BUNDLE_CACHE: Mutex<Option<([u8; 32], axum::body::Bytes)>> = Mutex::new(None);

// The `Cache-Control` values, defined once for this and for what the tile mirror writes
// to a bucket (`dgsp_wire::tiles::cache_control`).
pub use dgsp_wire::tiles::{CHECKPOINT_CACHE_CONTROL, CHECKPOINT_MAX_AGE_SECS, TILE_CACHE_CONTROL};

/// The newest signed checkpoint note, as text (`text/plain; charset=utf-8`).
#[utoipa::path(get, path = "/v1/log/checkpoint", tag = "tiles",
    responses((status = 200, description = "the newest signed checkpoint note (C2SP tlog-checkpoint)", content_type = "text/plain"),
        (status = 503, body = Problem)))]
pub async fn checkpoint(State(s): State<Shared>) -> Response {
    if let Some(p) = super::unproven(&s) {
        return p.into_response();
    }
    match &crate::publisher::read(&s.published).checkpoint {
        Some(c) => (
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8".to_owned()),
                (header::CACHE_CONTROL, CHECKPOINT_CACHE_CONTROL.to_owned()),
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

/// The witnessed note of the tree the newest checkpoint names (the plain C2SP checkpoint
/// signed by the group's log key and cosigned by a quorum of the witnesses; without
/// witnesses, signed by the log key alone), as text: our extension of the tiles layout
/// (docs/format.md, "Tiles"), fresh as briefly as `checkpoint`.
#[utoipa::path(get, path = "/v1/log/checkpoint.witnessed", tag = "tiles",
    responses((status = 200, description = "the witnessed note of the newest checkpoint's tree (C2SP tlog-checkpoint signed by the group's log key, with the witnesses' tlog-cosignature lines; without witnesses, the log's signature alone)", content_type = "text/plain"),
        (status = 404, description = "`no-log-key`: this registry was started without a log key (an embedding that configured none; `dgsp-registry serve` always has one)", body = Problem),
        (status = 503, body = Problem)))]
pub async fn checkpoint_witnessed(State(s): State<Shared>) -> Response {
    if let Some(p) = super::unproven(&s) {
        return p.into_response();
    }
    if s.witnesses.is_none() && s.log_key.is_none() {
        return Problem::new(
            StatusCode::NOT_FOUND,
            "no-log-key",
            "No log key",
            "this registry was started without a log key, so its checkpoints carry no witnessed note",
        )
        .into_response();
    }
    match crate::publisher::read(&s.published)
        .checkpoint
        .as_ref()
        .and_then(|c| c.witnessed.clone())
    {
        Some(witnessed) => (
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8".to_owned()),
                (header::CACHE_CONTROL, CHECKPOINT_CACHE_CONTROL.to_owned()),
            ],
            witnessed,
        )
            .into_response(),
        None => Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not-yet-published",
            "Not published yet",
            "no witnessed checkpoint has been published yet",
        )
        .retry_after(1)
        .into_response(),
    }
}

/// A hash tile or an entry bundle (`application/octet-stream`).
#[utoipa::path(get, path = "/v1/log/tile/{path}", tag = "tiles",
    params(("path" = String, Path, description = "the rest of a C2SP tlog-tiles path: `<L>/<N>[.p/<W>]` or `entries/<N>[.p/<W>]`")),
    responses((status = 200, description = "the tile's bytes", content_type = "application/octet-stream"),
        (status = 404, description = "not a tile path, or not covered by the newest checkpoint", body = Problem),
        (status = 501, description = "`tiles-unavailable`: this group's parameter set writes entries larger than a bundle carries (the 256f sets)", body = Problem)))]
pub async fn tile(State(s): State<Shared>, Path(rest): Path<String>) -> Response {
    if let Some(why) = &s.tiles_unavailable {
        return Problem::new(
            StatusCode::NOT_IMPLEMENTED,
            "tiles-unavailable",
            "No tiles for this group",
            format!("{why}: read the log through /v1/log/entries"),
        )
        .into_response();
    }
    let path = format!("tile/{rest}");
    let tile = match Tile::parse(&path) {
        Ok(t) => t,
        Err(e) => return not_found(e.to_string()),
    };
    let covered = crate::publisher::read(&s.published)
        .checkpoint
        .as_ref()
        .map_or(0, |c| c.checkpoint.size);
    match tile.extent() {
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

/// The bundle of the registry's latest signed snapshot (`application/octet-stream`,
/// immutable): `dgsp_wire::snapshot_bundle`, verifiable against the snapshot's signed root.
#[utoipa::path(get, path = "/v1/log/snapshot/{path}", tag = "tiles",
    params(("path" = String, Path, description = "the snapshot number as a tile index is written: `001`, `x001/234`")),
    responses((status = 200, description = "the snapshot bundle's bytes (docs/format.md, \"Snapshot bundles\")", content_type = "application/octet-stream"),
        (status = 404, description = "not a snapshot path, or not the registry's latest snapshot", body = Problem),
        (status = 503, description = "the latest snapshot's set is being repaired", body = Problem)))]
pub async fn snapshot(State(s): State<Shared>, Path(rest): Path<String>) -> Response {
    let path = format!("snapshot/{rest}");
    let number = match snapshot_bundle::parse_path(&path) {
        Ok(n) => n,
        Err(e) => return not_found(e.to_string()),
    };
    let (snapshot, set) = {
        let p = crate::publisher::read(&s.published);
        match &p.snapshot {
            Some(snap) if snap.record.number == number => {
                if p.repair.is_some()
                    || p.set.len() != snap.record.count
                    || p.set.root() != snap.record.root
                {
                    return Problem::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "not-yet-published",
                        "Not published yet",
                        "a corrected snapshot is being signed",
                    )
                    .retry_after(1)
                    .into_response();
                }
                (snap.clone(), p.set.clone())
            }
            other => {
                return not_found(format!(
                    "snapshot {number} is not the latest ({}): its bundle is served by the tile store the registry publishes to",
                    other.as_ref().map_or(0, |s| s.record.number)
                ))
            }
        }
    };
    let key = snapshot.record.hash();
    let cached = BUNDLE_CACHE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_ref()
        .filter(|(k, _)| *k == key)
        .map(|(_, b)| b.clone());
    let bytes = match cached {
        Some(b) => b,
        None => {
            let built =
                tokio::task::spawn_blocking(move || SnapshotBundle::encode(&snapshot, &set)).await;
            match built {
                Ok(b) => {
                    let b = axum::body::Bytes::from(b);
                    *BUNDLE_CACHE
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) =
                        Some((key, b.clone()));
                    b
                }
                Err(e) => return Problem::storage("snapshot bundle", e).into_response(),
            }
        }
    };
    (
        [
            (header::CONTENT_TYPE, "application/octet-stream"),
            (header::CACHE_CONTROL, TILE_CACHE_CONTROL),
        ],
        bytes,
    )
        .into_response()
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
