//! The public API: group information and the log feed.

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::problem::{to_b64, Params, Problem};
use super::{Auditor, Shared};
use crate::log::Entry;

/// Largest page of the feed.
pub const MAX_PAGE: usize = 1000;

/// The group: what verifiers pin.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct GroupInfo {
    /// Parameter set name.
    pub params: String,
    /// Group public key (standard base64 of its encoding).
    pub public_key: String,
    /// SHA3-256 of the public key encoding (hex).
    pub fingerprint: String,
    /// Current log head.
    pub head_seq: u64,
    /// Hash of the head entry (hex).
    pub head_hash: String,
}

/// The group's parameters, public key and log head.
#[utoipa::path(get, path = "/v1/group", tag = "public", responses((status = 200, body = GroupInfo)))]
pub async fn group(State(s): State<Shared>) -> Result<Json<GroupInfo>, Problem> {
    let pk = s.manager.public_key();
    let head = s.store.head().map_err(|e| Problem::internal("head", e))?;
    Ok(Json(GroupInfo {
        params: pk.params().name().to_owned(),
        public_key: to_b64(&pk.to_bytes()),
        fingerprint: hex::encode(pk.fingerprint()),
        head_seq: head.seq,
        head_hash: hex::encode(head.hash),
    }))
}

/// Feed position.
#[derive(Debug, Deserialize, IntoParams)]
pub struct Page {
    /// Entries with seq greater than this (default 0: from the start).
    #[serde(default)]
    pub after: u64,
    /// Page size, 1 to 1000 (default 100).
    pub limit: Option<usize>,
}

/// A page of the log.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Entries {
    /// Entries in order; private parts only for the auditor token.
    #[schema(value_type = Vec<Object>)]
    pub entries: Vec<Entry>,
    /// Current log head.
    pub head_seq: u64,
}

/// The log feed. Private payloads appear only as salted commitments unless the request
/// carries the auditor (or admin) token.
#[utoipa::path(get, path = "/v1/log/entries", tag = "public", params(Page),
    responses((status = 200, body = Entries), (status = 400, body = Problem)))]
pub async fn entries(
    State(s): State<Shared>,
    Auditor(auditor): Auditor,
    Params(page): Params<Page>,
) -> Result<Json<Entries>, Problem> {
    let limit = page.limit.unwrap_or(100);
    if limit == 0 || limit > MAX_PAGE {
        return Err(Problem::bad_field("limit", format!("1 to {MAX_PAGE}")));
    }
    let mut entries = s
        .store
        .entries_after(page.after, limit)
        .map_err(|e| Problem::internal("feed", e))?;
    if !auditor {
        entries = entries.iter().map(Entry::redacted).collect();
    }
    let head_seq = s
        .store
        .head()
        .map_err(|e| Problem::internal("head", e))?
        .seq;
    Ok(Json(Entries { entries, head_seq }))
}
