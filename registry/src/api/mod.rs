//! The registry's HTTP API (axum): the admin API for the operator (bearer token), the public
//! API (group info, log feed), health, readiness and Prometheus metrics.

pub mod admin;
pub mod metrics;
pub mod openapi;
pub mod problem;
pub mod public;
pub mod tiles;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::middleware;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;
use dgsp_core::Manager;
use sha3::{Digest, Sha3_256};
use subtle::ConstantTimeEq;

use crate::store::Store;
use crate::writer::Writer;
use dgsp_http::problem::Problem;

pub use dgsp_http::router::{finish, limit_body, DEFAULT_BODY_LIMIT, REQUEST_TIMEOUT};

/// Everything a handler needs.
pub struct AppState {
    /// the database
    pub store: Arc<Store>,
    /// the single writer
    pub writer: Writer,
    /// the group manager (secret key)
    pub manager: Arc<Manager>,
    /// certificate signing jobs (cancellable, shared by retries, kept for a while)
    pub issuer: crate::issuance::Issuer,
    /// SHA3-256 of the admin token
    pub admin_token: [u8; 32],
    /// SHA3-256 of the auditor token, if one is configured
    pub auditor_token: Option<[u8; 32]>,
    /// request and write counters
    pub metrics: metrics::Metrics,
    /// revocation set, latest signed snapshot and checkpoint
    pub published: crate::publisher::SharedPublished,
    /// fail-stop state: once halted, writes are refused and `/readyz` fails
    pub health: Arc<crate::health::Health>,
    /// the bound on feed pages in flight across requests
    pub feed: crate::feed::Budget,
    /// where online backups go and the key file they copy (`None`: backups disabled)
    pub backups: Option<crate::backup::Settings>,
    /// the publisher's cadence: `/readyz` fails once the newest note is twice as old
    pub checkpoint_interval: std::time::Duration,
    /// the clock notes are dated by (the publisher's)
    pub clock: Arc<dyn dgsp_http::clock::Clock>,
    /// the witnesses whose quorum the publisher waits for, and the log key (`None`: no
    /// witnesses)
    pub witnesses: Option<Arc<crate::witnessing::Witnesses>>,
    /// the group's log key (`GET /v1/log/key`), when the registry has one
    pub log_key: Option<Arc<crate::witnessing::LogKey>>,
    /// why this group's log cannot be served as tiles (`dgsp_wire::tiles::check_params`:
    /// an entry kind of its parameter set does not fit a bundle); `None` when it can
    pub tiles_unavailable: Option<String>,
    /// when serving started (a registry that has signed no note is measured from here)
    pub started: std::time::Instant,
}

/// Shared state handle.
pub type Shared = Arc<AppState>;

/// Hashes a token for constant-time comparison (equal lengths whatever the input).
pub fn token_hash(token: &str) -> [u8; 32] {
    Sha3_256::digest(token.as_bytes()).into()
}

fn bearer(parts: &Parts) -> Option<&str> {
    parts
        .headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
}

fn matches(expected: &[u8; 32], presented: Option<&str>) -> bool {
    presented.is_some_and(|t| bool::from(token_hash(t).ct_eq(expected)))
}

/// Extractor: the request carries the admin token.
pub struct Admin;

impl FromRequestParts<Shared> for Admin {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &Shared) -> Result<Self, Problem> {
        if matches(&state.admin_token, bearer(parts)) {
            Ok(Admin)
        } else {
            Err(Problem::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "Admin token required",
                "send the admin token as 'Authorization: Bearer <token>'",
            ))
        }
    }
}

/// Extractor: whether the request carries the auditor (or admin) token.
pub struct Auditor(pub bool);

impl FromRequestParts<Shared> for Auditor {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &Shared) -> Result<Self, Problem> {
        let presented = bearer(parts);
        if presented.is_none() {
            return Ok(Auditor(false));
        }
        let ok = matches(&state.admin_token, presented)
            || state
                .auditor_token
                .as_ref()
                .is_some_and(|t| matches(t, presented));
        if ok {
            Ok(Auditor(true))
        } else {
            Err(Problem::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "Unknown token",
                "the bearer token is neither the auditor nor the admin token; omit it for the public view",
            ))
        }
    }
}

async fn healthz() -> &'static str {
    "ok"
}

/// 503 `lease-unproven` while this registry cannot prove it holds the write lease: it
/// serves no checkpoint as fresh then (another registry may be the writer).
pub(crate) fn unproven(s: &AppState) -> Option<Problem> {
    s.health.fence().err().map(|why| {
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "lease-unproven",
            "Not the writer",
            format!("this registry cannot prove it holds the group's write lease, so it serves no checkpoint as fresh: {why}"),
        )
        .retry_after(1)
    })
}

async fn readyz(State(s): State<Shared>) -> impl IntoResponse {
    if let Some(reason) = s.health.halted() {
        return Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "registry-halted",
            "Halted",
            format!("the registry halted and refuses writes until it is restarted: {reason}"),
        )
        .into_response();
    }
    if let Some(p) = unproven(&s) {
        return p.into_response();
    }
    // One read of the published state: the repair, the newest note's time and what the
    // answer reports, all of one moment.
    let (repair, snapshot, checkpoint) = {
        let p = crate::publisher::read(&s.published);
        (
            p.repair.clone(),
            p.snapshot.as_ref().map_or(0, |snap| snap.record.number),
            p.checkpoint
                .as_ref()
                .map(|c| (c.checkpoint.size, c.checkpoint.time_unix_ms)),
        )
    };
    if let Some(reason) = repair {
        return Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not-ready",
            "Not ready",
            format!("a corrected snapshot is being signed: {reason}"),
        )
        .into_response();
    }
    // The newest note's age by the clock notes are dated by; before any, the time serving.
    let signed = checkpoint.and_then(|(_, t)| t);
    let age = match signed {
        Some(t) => Duration::from_millis(s.clock.now_ms().saturating_sub(t)),
        None => s.started.elapsed(),
    };
    if let Some(mut overdue) = checkpoint_overdue(age, signed.is_some(), s.checkpoint_interval) {
        if let Some(w) = &s.witnesses {
            overdue.detail = format!(
                "{}; checkpoints are published only once the witnesses' quorum cosigns them: {}",
                overdue.detail,
                witness_summary(w)
            );
        }
        return overdue.into_response();
    }
    match s.store.head() {
        Ok(head) => {
            let note = match checkpoint {
                Some((size, Some(_))) => format!(
                    ", checkpoint of {size} entries signed {:.1} s ago",
                    age.as_secs_f64()
                ),
                _ => String::new(),
            };
            let witnesses = s
                .witnesses
                .as_ref()
                .map(|w| format!("; witnesses: {}", witness_summary(w)))
                .unwrap_or_default();
            (
                StatusCode::OK,
                format!(
                    "ready: log head {}, snapshot {snapshot}{note}{witnesses}\n",
                    head.seq
                ),
            )
                .into_response()
        }
        Err(e) => Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not-ready",
            "Not ready",
            format!("store unavailable: {e}"),
        )
        .into_response(),
    }
}

/// Each witness in a word: `name ok (size N)` or `name failing N× (why)`.
fn witness_summary(w: &crate::witnessing::Witnesses) -> String {
    let mut parts: Vec<String> = w
        .status()
        .iter()
        .map(|st| match &st.last_error {
            None if st.last_success_unix.is_some() => {
                format!("{} answers (cosigned size {})", st.name, st.size)
            }
            None => format!("{} not asked yet", st.name),
            Some(e) => format!(
                "{} failing ({}× in a row: {e})",
                st.name, st.consecutive_failures
            ),
        })
        .collect();
    parts.extend(w.unreachable().iter().map(|n| format!("{n} has no URL")));
    parts.join(", ")
}

/// 503 `checkpoint-overdue` when the newest signed checkpoint is `age` old, more than twice
/// the cadence (or, with none `signed`, serving started that long ago): the publisher is
/// stuck, and every follower is about to go stale.
fn checkpoint_overdue(age: Duration, signed: bool, cadence: Duration) -> Option<Problem> {
    (age > cadence.saturating_mul(2)).then(|| {
        let what = if signed {
            "the newest signed checkpoint was signed"
        } else {
            "no checkpoint has been signed since the registry started"
        };
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "checkpoint-overdue",
            "Not ready",
            format!(
                "{what} {:.1} s ago, more than twice the checkpoint cadence of {} s: the publisher is not signing",
                age.as_secs_f64(),
                cadence.as_secs_f64()
            ),
        )
    })
}

/// The whole router.
pub fn router(state: Shared, body_limit: usize) -> Router {
    // Each write route's body limit is sized to what it carries (`admin::*_BODY_LIMIT`); a
    // bulk join takes the configured `body_limit`, which also applies where none is set (a
    // revocation has no body, and nothing reads one sent anyway).
    let router = Router::new()
        .route(
            "/admin/v1/members",
            limit_body(post(admin::join), admin::JOIN_BODY_LIMIT).get(admin::members),
        )
        .route("/admin/v1/members/bulk", post(admin::join_bulk))
        .route("/admin/v1/members/{id}", get(admin::member))
        .route(
            "/admin/v1/members/{id}/certificates",
            limit_body(post(admin::issue), admin::ISSUE_BODY_LIMIT),
        )
        .route("/admin/v1/members/{id}/revoke", post(admin::revoke))
        .route(
            "/admin/v1/open",
            limit_body(post(admin::open), admin::OPEN_BODY_LIMIT),
        )
        .route(
            "/admin/v1/backup",
            limit_body(post(admin::backup), admin::SMALL_BODY_LIMIT),
        )
        .route("/v1/group", get(public::group))
        .route("/v1/log/entries", get(public::entries))
        .route("/v1/checkpoint", get(public::checkpoint))
        .route("/v1/log/checkpoint", get(tiles::checkpoint))
        .route(
            "/v1/log/checkpoint.witnessed",
            get(tiles::checkpoint_witnessed),
        )
        .route("/v1/log/key", get(public::log_key))
        .route("/v1/log/tile/{*path}", get(tiles::tile))
        .route("/v1/log/snapshot/{*path}", get(tiles::snapshot))
        .route("/v1/revocations/snapshot", get(public::latest_snapshot))
        .route("/v1/revocations/snapshots/{n}", get(public::snapshot))
        .route("/v1/revocations/{zeta}/proof", get(public::proof))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics::render))
        .route("/openapi.json", get(openapi::serve));
    finish(router, body_limit, REQUEST_TIMEOUT)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            metrics::track,
        ))
        .with_state(state)
}
