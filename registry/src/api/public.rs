//! The public API: group information and the log feed.

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use dgsp_core::Zeta;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::{Auditor, Shared};
use crate::feed;
use dgsp_http::problem::{to_b64, Params, Problem};
use dgsp_wire::log::unhex;

pub use dgsp_wire::registry_api::GroupInfo;

/// Largest page of the feed.
pub const MAX_PAGE: usize = 1000;

/// The group's parameters, public key and log head.
#[utoipa::path(get, path = "/v1/group", tag = "public", responses((status = 200, body = GroupInfo)))]
pub async fn group(State(s): State<Shared>) -> Result<Json<GroupInfo>, Problem> {
    let pk = s.manager.public_key();
    let head = s.store.head().map_err(|e| Problem::storage("head", e))?;
    Ok(Json(GroupInfo {
        params: pk.params().name().to_owned(),
        standard: pk.params().standard().tag().to_owned(),
        public_key: to_b64(&pk.to_bytes()),
        fingerprint: hex::encode(pk.fingerprint()),
        head_seq: head.seq,
        head_hash: hex::encode(head.hash),
    }))
}

/// Feed position.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Page {
    /// Entries with seq greater than this (default 0: from the start).
    #[serde(default)]
    #[param(required = false)]
    pub after: u64,
    /// Most entries, 1 to 1000 (default 100); fewer when the page reaches 16 MiB.
    #[param(minimum = 1, maximum = 1000, nullable = false)]
    pub limit: Option<usize>,
}

/// A page of the log (the wire type, `dgsp_wire::feed::Entries`).
pub use dgsp_wire::feed::Entries;

/// The log feed. Private payloads appear only as salted commitments unless the request
/// carries the auditor (or admin) token.
///
/// A page holds at most `limit` entries and at most 16 MiB (16777216 bytes) of serialized
/// entries: it ends before the entry that would pass that bound, so it can hold fewer than
/// `limit` entries although more follow. It always holds at least one entry when one exists
/// after `after` (an entry larger than the bound comes alone). Continue from the last seq
/// received until it reaches `head_seq`.
///
/// The bytes of pages in flight across all requests are bounded (`--feed-bytes-in-flight`):
/// while many large pages are being sent, pages are smaller, and a request the bound leaves
/// no room for is answered 503 `feed-busy` with `Retry-After`.
#[utoipa::path(get, path = "/v1/log/entries", tag = "public", params(Page),
    responses((status = 200, body = Entries), (status = 400, body = Problem),
        (status = 401, description = "a bearer token that is neither the auditor nor the admin token (omit it for the public view)", body = Problem),
        (status = 503, description = "the bytes of feed pages in flight are at their bound; retry after `Retry-After` seconds", body = Problem)))]
pub async fn entries(
    State(s): State<Shared>,
    Auditor(auditor): Auditor,
    Params(page): Params<Page>,
) -> Result<Response, Problem> {
    let limit = page.limit.unwrap_or(100);
    if limit == 0 || limit > MAX_PAGE {
        return Err(Problem::bad_field("limit", format!("1 to {MAX_PAGE}")));
    }
    let turn = s.feed.build_turn().await;
    let reservation = s.feed.reserve(feed::MAX_PAGE_BYTES).map_err(feed_busy)?;
    let store = s.store.clone();
    // The build owns its turn and its reservation: if this request's future is dropped (a
    // client that goes away) while the page is built, both are held until the build ends,
    // so disconnecting clients cannot pile up builds past the bounds.
    let (page, reservation) = tokio::task::spawn_blocking(move || {
        let page = feed::page(&store, page.after, limit, reservation.bytes(), auditor);
        drop(turn);
        (page, reservation)
    })
    .await
    .map_err(|e| Problem::internal("feed", e))?;
    let page = page.map_err(|e| Problem::storage("feed", e))?;
    let reservation = s
        .feed
        .fit(reservation, page.body.len())
        .map_err(feed_busy)?;
    let body = axum::body::Body::new(feed::HeldBody::new(page.body, reservation));
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// 503 `feed-busy`: the bytes of pages in flight are at their bound.
fn feed_busy(busy: feed::Busy) -> Problem {
    Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "feed-busy",
        "Feed busy",
        format!("{busy}; retry shortly"),
    )
    .retry_after(1)
}

/// The newest signed checkpoint: what a follower or verifier uses to judge freshness.
pub type CheckpointInfo = crate::store::StoredNote;

/// The newest signed checkpoint of the log head (`docs/checkpoints.md`). The registry signs
/// one after every change and, even when nothing is written, at a fixed cadence
/// (`--checkpoint-interval-secs`), so its `time` shows how fresh it is; checkpoints signed
/// only for the cadence are served here and not appended to the log.
#[utoipa::path(get, path = "/v1/checkpoint", tag = "public",
    responses((status = 200, body = CheckpointInfo), (status = 503, body = Problem)))]
pub async fn checkpoint(State(s): State<Shared>) -> Response {
    if let Some(p) = super::unproven(&s) {
        return p.into_response();
    }
    // Serialized once when signed: followers fetch it at every poll.
    match &crate::publisher::read(&s.published).checkpoint {
        Some(c) => ([(header::CONTENT_TYPE, "application/json")], c.json.clone()).into_response(),
        None => not_yet("no checkpoint has been signed yet").into_response(),
    }
}

/// The group's statement naming its ML-DSA-44 log key (docs/witnesses.md, "The log key"):
/// a note signed by the group key, so that a verifier holding only the group key learns
/// the key that signs the witnessed checkpoints. 404 `no-log-key` only for a registry
/// started without one (an embedding that configured none; `dgsp-registry serve` always
/// has one).
#[utoipa::path(get, path = "/v1/log/key", tag = "public",
    responses((status = 200, body = String, content_type = "text/plain; charset=utf-8"),
              (status = 404, body = Problem)))]
pub async fn log_key(State(s): State<Shared>) -> Response {
    match &s.log_key {
        Some(k) => (
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            k.statement.clone(),
        )
            .into_response(),
        None => Problem::new(
            StatusCode::NOT_FOUND,
            "no-log-key",
            "No log key",
            "this registry was started without a log key, so it signs no witnessed checkpoints",
        )
        .into_response(),
    }
}

/// 503: the publisher has not signed it yet (it will within moments: `Retry-After: 1`).
fn not_yet(detail: &str) -> Problem {
    Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "not-yet-published",
        "Not published yet",
        detail,
    )
    .retry_after(1)
}

/// The latest signed revocation snapshot: `{record, signature, encoded}`.
#[utoipa::path(get, path = "/v1/revocations/snapshot", tag = "public",
    responses((status = 200, description = "the signed snapshot: {record, signature, encoded}", body = Object), (status = 503, body = Problem)))]
pub async fn latest_snapshot(State(s): State<Shared>) -> Response {
    match s.store.latest_snapshot() {
        Ok(Some(v)) => Json(v).into_response(),
        Ok(None) => not_yet("no snapshot has been signed yet").into_response(),
        Err(e) => Problem::storage("snapshot", e).into_response(),
    }
}

/// Signed revocation snapshot number `n`.
#[utoipa::path(get, path = "/v1/revocations/snapshots/{n}", tag = "public",
    params(("n" = u64, Path, description = "snapshot number, from 1", minimum = 1)),
    responses((status = 200, body = Object),
        (status = 400, description = "not an unsigned integer", body = Problem),
        (status = 404, description = "no such snapshot (yet)", body = Problem)))]
pub async fn snapshot(
    State(s): State<Shared>,
    Path(n): Path<String>,
) -> Result<Json<Value>, Problem> {
    let n: u64 = n
        .parse()
        .map_err(|_| Problem::bad_field("n", "snapshot number must be an unsigned integer"))?;
    s.store
        .snapshot(n)
        .map_err(|e| Problem::storage("snapshot", e))?
        .map(Json)
        .ok_or_else(|| {
            Problem::new(
                StatusCode::NOT_FOUND,
                "unknown-snapshot",
                "No such snapshot",
                format!("no snapshot number {n}"),
            )
        })
}

/// A revocation proof for one zeta.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ProofAnswer {
    /// The zeta asked about (hex).
    pub zeta: String,
    /// Whether it is revoked in the snapshot.
    pub revoked: bool,
    /// The proof (standard base64 of the format in docs/revocation-proofs.md).
    pub proof: String,
    /// Snapshot number the proof is against.
    pub snapshot_number: u64,
    /// Its root (hex) and count.
    pub root: String,
    /// Revoked zetas in the snapshot.
    pub count: u64,
}

/// Inclusion (revoked) or non-membership (not revoked) proof for a zeta (32 hex characters),
/// against the latest signed snapshot (also while the next one is being signed).
#[utoipa::path(get, path = "/v1/revocations/{zeta}/proof", tag = "public",
    params(("zeta" = String, Path, description = "the zeta, 32 hex characters", pattern = "^[0-9a-fA-F]{32}$")),
    responses((status = 200, body = ProofAnswer), (status = 400, body = Problem), (status = 503, body = Problem)))]
pub async fn proof(State(s): State<Shared>, Path(zeta): Path<String>) -> Response {
    let Some(bytes) = unhex(&zeta) else {
        return Problem::bad_field("zeta", "a zeta is 16 bytes written as 32 hex characters")
            .into_response();
    };
    let zeta = Zeta(bytes);
    // The served set is always exactly the latest signed snapshot's (the next one is built
    // on a copy-on-write clone), so proofs are served while a new snapshot is signed.
    let p = crate::publisher::read(&s.published);
    let Some(snap) = p.snapshot.as_ref() else {
        return not_yet("no snapshot has been signed yet").into_response();
    };
    if let Some(reason) = &p.repair {
        return not_yet(&format!(
            "a corrected snapshot is being signed; the latest one omits revocations: {reason}"
        ))
        .into_response();
    }
    let proof = p.set.prove(&zeta);
    Json(ProofAnswer {
        zeta: hex::encode(bytes),
        revoked: matches!(proof.claim(), dgsp_core::revocation::Membership::Revoked),
        proof: to_b64(&proof.to_bytes()),
        snapshot_number: snap.record.number,
        root: hex::encode(snap.record.root),
        count: snap.record.count,
    })
    .into_response()
}
