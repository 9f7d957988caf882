//! The gateway's public HTTP API (axum): verify, batch verify, judge, the group, snapshots and
//! revocation proofs, health, readiness, Prometheus metrics and the OpenAPI document.
//!
//! Every answer about a signature names the signed snapshot it was checked against, carries
//! the revocation proof and the signed checkpoint note the state is fresh as of (which names
//! that snapshot), so a caller need not trust the gateway: it can check the note's signature
//! and age, the snapshot's signature and the proof offline
//! (`dgsp_core::revocation::verify_revocation`, docs/revocation-proofs.md, docs/gateway.md).
//! Errors are `application/problem+json`.

pub mod body;
pub mod health;
pub mod model;
pub mod openapi;
pub mod page;
pub mod revocations;
pub mod verify;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::{get, post};
use axum::Router;
use dgsp_http::router::limit_body;

use crate::pool::VerifyPool;
use crate::replica::Replica;
use crate::state::{SharedStatus, SharedView};

/// Default request body limit, a batch's: a full batch of the largest signatures fits (256 ×
/// ~50 KiB shake-256f signatures in base64 is ~17 MiB), a flood does not. A single verify or
/// judge has a much smaller limit ([`ApiConfig::single_body_limit`]).
pub const DEFAULT_BODY_LIMIT: usize = 20 << 20;

pub use dgsp_wire::limits::DEFAULT_MAX_MESSAGE;

/// Default largest batch.
pub const DEFAULT_MAX_BATCH: usize = 256;

/// A request that takes longer than this (slow client or stuck work) is answered 408.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings of the HTTP side.
#[derive(Clone, Debug)]
pub struct ApiConfig {
    /// Largest request body in bytes (a batch's; single requests get less).
    pub body_limit: usize,
    /// Largest message a single verify or judge carries: sizes their body limit.
    pub max_message: usize,
    /// Most items in one batch verify.
    pub max_batch: usize,
    /// A state whose newest signed checkpoint is older than this is stale: verify answers
    /// `stale` and `/readyz` fails.
    pub max_staleness: Duration,
    /// Give verdicts from a stale state anyway, marked `stale: true` (`--serve-stale`).
    pub serve_stale: bool,
    /// The verification page's directory, served at `/verify/` (`--web-dir`); none: no page.
    pub web_dir: Option<std::path::PathBuf>,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            body_limit: DEFAULT_BODY_LIMIT,
            max_message: DEFAULT_MAX_MESSAGE,
            max_batch: DEFAULT_MAX_BATCH,
            max_staleness: Duration::from_secs(60),
            serve_stale: false,
            web_dir: None,
        }
    }
}

impl ApiConfig {
    /// The body limit of `/v1/verify` and `/v1/judge`, which carry one message and one
    /// signature: the message limit in base64, twice the largest signature of all parameter
    /// sets and 1 KiB ([`dgsp_wire::limits::signed_message_body_limit`]; 1,503,296 bytes
    /// for the default 1 MiB message), never more than [`body_limit`](Self::body_limit).
    pub fn single_body_limit(&self) -> usize {
        dgsp_wire::limits::signed_message_body_limit(self.max_message).min(self.body_limit)
    }
}

/// Request counters (Prometheus).
#[derive(Default)]
pub struct Counters {
    /// Verify results by status: ok, revoked, invalid_signature, wrong_group, malformed,
    /// stale.
    pub verify: [AtomicU64; 6],
    /// Verify answers given from a stale state (status `stale`, or served stale).
    pub stale: AtomicU64,
    /// Judge requests answered.
    pub judge: AtomicU64,
    /// Requests refused because the pool was full.
    pub shed: AtomicU64,
    /// Batch requests answered.
    pub batches: AtomicU64,
}

/// Everything a handler needs.
pub struct AppState {
    /// The verified view in service.
    pub view: SharedView,
    /// The follower's progress.
    pub status: SharedStatus,
    /// The replica (older snapshots).
    pub replica: Arc<Replica>,
    /// Where verification runs.
    pub pool: VerifyPool,
    /// HTTP settings.
    pub config: ApiConfig,
    /// Counters.
    pub counters: Counters,
    /// HTTP request counters by route and status.
    pub http: dgsp_http::metrics::Metrics,
    /// The wall clock freshness is measured by, and its tolerance for signed times ahead.
    pub clock: crate::clock::WallClock,
    /// The gateway's witness (`--witness-key`), serving `POST /witness/add-checkpoint` and
    /// `GET /witness/{origin_hash}/checkpoint`.
    pub witness: Option<Arc<crate::witnessing::WitnessService>>,
}

async fn track(
    axum::extract::State(s): axum::extract::State<Shared>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    s.http.observe(req, next).await
}

/// Shared state handle.
pub type Shared = Arc<AppState>;

/// The router.
pub fn router(state: Shared) -> Router {
    let (limit, single) = (state.config.body_limit, state.config.single_body_limit());
    let mut router = Router::new()
        .route("/v1/verify", limit_body(post(verify::verify), single))
        .route("/v1/verify/batch", post(verify::verify_batch))
        .route("/v1/judge", limit_body(post(verify::judge), single))
        .route("/v1/group", get(revocations::group))
        .route("/v1/checkpoint", get(revocations::checkpoint))
        .route(
            "/v1/revocations/snapshot",
            get(revocations::latest_snapshot),
        )
        .route("/v1/revocations/snapshots/{n}", get(revocations::snapshot))
        .route("/v1/revocations/{zeta}/proof", get(revocations::proof))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
        .route("/openapi.json", get(openapi::serve))
        .route("/verify", get(page::redirect))
        .route("/verify/", get(page::index))
        .route("/verify/{file}", get(page::file));
    if state.witness.is_some() {
        // Its own limit, the protocol's 16 KiB, answered 413 in text/plain as the protocol's
        // other errors are.
        router = router
            .route(
                "/witness/add-checkpoint",
                limit_body(
                    post(crate::witnessing::add_checkpoint),
                    dgsp_witness::protocol::MAX_REQUEST_BODY,
                ),
            )
            .route(
                "/witness/{origin_hash}/checkpoint",
                get(crate::witnessing::latest_checkpoint),
            );
    }
    dgsp_http::router::finish(router, limit, REQUEST_TIMEOUT)
        .layer(axum::middleware::from_fn_with_state(state.clone(), track))
        .with_state(state)
}
