//! The `axum` face of a [`Witness`]: `POST /add-checkpoint` and the monitoring
//! `GET /<hex SHA-256(origin)>/checkpoint`, to be nested under the witness's prefix (its
//! submission and monitoring prefixes are the same).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

use super::witness::{Witness, WitnessAnswer, TEXT_PLAIN};
use crate::protocol::MAX_REQUEST_BODY;

impl IntoResponse for WitnessAnswer {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, [(CONTENT_TYPE, self.content_type())], self.body()).into_response()
    }
}

/// `POST /add-checkpoint` for `witness` (`c2sp.org/tlog-witness`). Nest it under the
/// submission prefix, e.g. `Router::new().nest("/witness", router(w))` serves
/// `POST /witness/add-checkpoint`. Other methods on the path get axum's 405.
///
/// Bodies over [`MAX_REQUEST_BODY`] (16 KiB) are refused with **413** before they are read
/// past the limit (axum's `DefaultBodyLimit`, with or without `Content-Length`): 413 says
/// what is wrong (the request is too large, not malformed). omniwitness answers 400 here and
/// litewitness 500; a log's client treats any of them as "not cosigned". A body the client
/// stops sending halfway is a 400. The work runs on tokio's blocking pool
/// ([`Witness::add_checkpoint_async`]).
///
/// `GET /{origin_hash}/checkpoint` serves [`latest_checkpoint`].
pub fn router(witness: Arc<Witness>) -> Router {
    Router::new()
        .route("/add-checkpoint", post(add_checkpoint))
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BODY))
        .route("/{origin_hash}/checkpoint", get(get_checkpoint))
        .with_state(witness)
}

async fn get_checkpoint(
    State(witness): State<Arc<Witness>>,
    Path(origin_hash): Path<String>,
) -> Response {
    latest_checkpoint(&witness, &origin_hash)
}

/// The answer to the monitoring `GET <prefix>/<hex SHA-256(origin)>/checkpoint` (ours: the
/// `c2sp.org/tlog-witness` copy read here leaves monitor retrieval "TBD"; the path is the
/// one `docs/witnesses.md` records): 200 `text/plain` with
/// [`Witness::latest_checkpoint`]'s note (the checkpoint, the log's signature, this
/// witness's cosignature), `Cache-Control: no-store`; 404 `text/plain` for an origin hash
/// this witness does not know (64 lowercase hex digits) or a log it cosigned nothing for
/// since it started.
pub fn latest_checkpoint(witness: &Witness, origin_hash: &str) -> Response {
    match witness.latest_checkpoint(origin_hash) {
        Some(note) => (
            StatusCode::OK,
            [(CONTENT_TYPE, TEXT_PLAIN), (CACHE_CONTROL, "no-store")],
            note,
        )
            .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            [(CONTENT_TYPE, TEXT_PLAIN), (CACHE_CONTROL, "no-store")],
            "no checkpoint cosigned for this log since this witness started (or an unknown log)\n",
        )
            .into_response(),
    }
}

async fn add_checkpoint(
    State(witness): State<Arc<Witness>>,
    body: Result<Bytes, BytesRejection>,
) -> WitnessAnswer {
    match body {
        Ok(body) => witness.add_checkpoint_async(body).await,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            WitnessAnswer::TooLarge
        }
        Err(rejection) => {
            WitnessAnswer::BadRequest(format!("the request body could not be read: {rejection}"))
        }
    }
}
