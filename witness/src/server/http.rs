//! The `axum` face of a [`Witness`]: `POST /add-checkpoint`, to be nested under the
//! witness's submission prefix.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;

use super::witness::{Witness, WitnessAnswer};
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
pub fn router(witness: Arc<Witness>) -> Router {
    Router::new()
        .route("/add-checkpoint", post(add_checkpoint))
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BODY))
        .with_state(witness)
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
