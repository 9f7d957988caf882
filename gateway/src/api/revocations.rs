//! The group, signed snapshots and revocation proofs, from the verified replica.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use dgsp_http::problem::{to_b64, Problem};
use dgsp_wire::registry_api::StoredNote;
use dgsp_wire::snapshot::snapshot_json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::model::{Freshness, FreshnessOf, Note, Revocation, RevocationOf};
use super::Shared;
use crate::state::current;

/// The pinned group and how far this gateway has followed its log.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct GroupAnswer {
    /// Parameter set name.
    pub params: String,
    /// Group public key (base64 of its encoding).
    pub public_key: String,
    /// SHA3-256 of the public key encoding (hex).
    pub fingerprint: String,
    /// The newest verified checkpoint note covering the applied entries (absent before the
    /// first).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub checkpoint: Option<Note>,
    /// How current this gateway is.
    pub freshness: Freshness,
}

/// The pinned group, the checkpoint in force and freshness.
#[utoipa::path(get, path = "/v1/group", tag = "revocations", responses((status = 200, body = GroupAnswer)))]
pub async fn group(State(s): State<Shared>) -> Json<GroupAnswer> {
    let view = current(&s.view);
    Json(GroupAnswer {
        params: view.group.params().name().to_owned(),
        public_key: to_b64(&view.group.to_bytes()),
        fingerprint: hex::encode(view.group.fingerprint()),
        checkpoint: view.checkpoint.as_ref().map(|c| c.note.clone()),
        freshness: Freshness::of(&view, &s.clock, s.config.max_staleness),
    })
}

/// The newest checkpoint this gateway has verified and applied, in the registry's
/// `/v1/checkpoint` form (`{size, head, time_unix_ms, note, witnessed}`): the checkpoint its
/// answers are fresh as of. With a witness policy it is a witnessed one and `witnessed`
/// carries its witnessed note (the log key's signature and the witnesses' cosignatures), so
/// that anyone can compare the views of several gateways (`dgsp-manager audit --compare`);
/// without one, `witnessed` is absent. 503 before the first.
#[utoipa::path(get, path = "/v1/checkpoint", tag = "revocations",
    responses((status = 200, body = StoredNote),
              (status = 503, body = Problem, content_type = "application/problem+json")))]
pub async fn checkpoint(State(s): State<Shared>) -> Response {
    let view = current(&s.view);
    let Some(v) = view.fresh() else {
        return Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "no-checkpoint-yet",
            "No checkpoint applied yet",
            if view.witness_policy.is_some() {
                "this gateway has not yet applied a checkpoint its witness policy's quorum cosigned; retry shortly"
            } else {
                "this gateway has not yet applied a timed signed checkpoint; retry shortly"
            },
        )
        .retry_after(1)
        .into_response();
    };
    Json(StoredNote {
        size: v.checkpoint.size,
        head: hex::encode(v.checkpoint.root),
        time_unix_ms: v.checkpoint.time_unix_ms.unwrap_or_default(),
        note: v.note.to_string(),
        witnessed: v.witness.as_ref().map(|w| w.note.to_string()),
    })
    .into_response()
}

fn no_snapshot() -> Response {
    Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "no-snapshot-yet",
        "No verified snapshot yet",
        "this gateway has not yet applied a signed revocation snapshot; retry shortly",
    )
    .retry_after(1)
    .into_response()
}

/// The latest verified signed snapshot: `{record, signature, encoded}` (the registry's form;
/// `encoded` is the binary signed snapshot of docs/revocation-proofs.md, base64).
#[utoipa::path(get, path = "/v1/revocations/snapshot", tag = "revocations",
    responses((status = 200, description = "the signed snapshot: {record, signature, encoded}", body = Object),
              (status = 503, body = Problem, content_type = "application/problem+json")))]
pub async fn latest_snapshot(State(s): State<Shared>) -> Response {
    match current(&s.view).snapshot.as_deref() {
        Some(snap) => Json(snapshot_json(snap)).into_response(),
        None => no_snapshot(),
    }
}

/// Verified signed snapshot number `n`.
#[utoipa::path(get, path = "/v1/revocations/snapshots/{n}", tag = "revocations",
    params(("n" = u64, Path, description = "snapshot number, from 1", minimum = 1)),
    responses((status = 200, body = Object),
              (status = 400, body = Problem, content_type = "application/problem+json"),
              (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn snapshot(
    State(s): State<Shared>,
    Path(n): Path<String>,
) -> Result<Json<Value>, Problem> {
    let n: u64 = n
        .parse()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| Problem::bad_field("n", "snapshot number must be an integer from 1"))?;
    let replica = s.replica.clone();
    let (found, base) = tokio::task::spawn_blocking(move || {
        Ok::<_, crate::replica::ReplicaError>((replica.snapshot_json(n)?, replica.tiles_base()?))
    })
    .await
    .map_err(|e| Problem::internal("snapshot", e))?
    .map_err(|e| Problem::internal("snapshot", e))?;
    if let (None, Some((seq, first))) = (&found, base) {
        if n < first {
            return Err(Problem::new(
                StatusCode::NOT_FOUND,
                "before-bootstrap",
                "Snapshot older than this replica",
                format!("this gateway started from the tiles at snapshot {first} (entry {seq}) and holds no older snapshot; ask the registry or a gateway that replayed the log"),
            ));
        }
    }
    found.map(Json).ok_or_else(|| {
        Problem::new(
            StatusCode::NOT_FOUND,
            "unknown-snapshot",
            "No such snapshot",
            format!("this gateway has applied no snapshot number {n}"),
        )
    })
}

/// The revocation state of one zeta.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ProofAnswer {
    /// The zeta (base64).
    pub zeta: String,
    /// Revocation state, snapshot and proof.
    #[serde(flatten)]
    pub revocation: Revocation,
    /// How current the state is, with the signed checkpoint note.
    pub freshness: Freshness,
}

pub use dgsp_wire::answer::parse_zeta;

/// Inclusion (revoked) or non-membership (not revoked) proof for a zeta against the latest
/// verified snapshot. The zeta is 32 hex characters or unpadded base64url.
#[utoipa::path(get, path = "/v1/revocations/{zeta}/proof", tag = "revocations",
    params(("zeta" = String, Path, description = "the zeta: 32 hex characters or 22 base64url characters",
        pattern = "^([0-9a-fA-F]{32}|[A-Za-z0-9_-]{21}[AQgw])$")),
    responses((status = 200, body = ProofAnswer),
              (status = 400, body = Problem, content_type = "application/problem+json"),
              (status = 503, body = Problem, content_type = "application/problem+json")))]
pub async fn proof(State(s): State<Shared>, Path(zeta): Path<String>) -> Response {
    let Some(zeta) = parse_zeta(&zeta) else {
        return Problem::bad_field(
            "zeta",
            "a zeta is 16 bytes: 32 hex characters or 22 unpadded base64url characters",
        )
        .into_response();
    };
    let view = current(&s.view);
    if view.snapshot.is_none() {
        return no_snapshot();
    }
    Json(ProofAnswer {
        zeta: to_b64(zeta.as_bytes()),
        revocation: Revocation::of(&view, &zeta),
        freshness: Freshness::of(&view, &s.clock, s.config.max_staleness),
    })
    .into_response()
}
