//! `/healthz`, `/readyz` and `/metrics`.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use dgsp_http::metrics::gauge;
use serde::Serialize;
use utoipa::ToSchema;

use super::model::{Freshness, FreshnessOf, SnapshotRef, Status};
use super::Shared;
use crate::clock::FUTURE_CHECKPOINT;
use crate::state::{current, lock, FaultReport, TilesStatus};

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, description = "alive", body = String)))]
pub async fn healthz() -> &'static str {
    "ok\n"
}

/// Readiness and sync state.
#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    /// Whether to route traffic here: a verified snapshot is in service, the state is not
    /// stale, and the registry's newest checkpoint is not dated ahead of this gateway's clock.
    pub ready: bool,
    /// `ok`, `degraded` (serving the last verified state while the feed is faulty),
    /// `future_checkpoint` (the registry's newest checkpoint is signed more than the clock
    /// tolerance ahead of this gateway's clock: refused, the last verified state is kept, and
    /// the gateway is not ready), `stale` (the newest signed checkpoint is older than the
    /// bound, dated beyond the tolerance ahead, or there is none) or `no_snapshot`.
    pub status: String,
    /// Whether the state is stale: its newest signed checkpoint is older than the bound (by
    /// the wall clock, or by the monotonic time since it was verified, whichever is more),
    /// dated more than the clock tolerance ahead of this gateway's clock, or there is none
    /// with a time.
    pub stale: bool,
    /// Last applied entry.
    pub applied_seq: u64,
    /// Seconds since the signed time of the checkpoint in service, or since this gateway
    /// verified it if that is longer (absent before the first timed checkpoint). Staleness is
    /// decided by this, never by when the registry answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint_age_seconds: Option<f64>,
    /// The bound (`--max-staleness-secs`).
    pub max_staleness_seconds: f64,
    /// The registry's newest signed checkpoint as last verified: entries it covers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry_checkpoint_size: Option<u64>,
    /// The registry's head as last seen.
    pub registry_head_seq: u64,
    /// Entries behind.
    pub lag_entries: u64,
    /// Seconds behind (operators' view: the oldest entry seen but not applied, or the time
    /// since the last complete fetch while the registry is faulty).
    pub lag_seconds: f64,
    /// When the follower last fetched the whole feed without a fault (Unix ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_sync_unix_ms: Option<u64>,
    /// Entries asked for per feed page (halved after pages refused for size).
    pub page_limit: usize,
    /// The snapshot in service.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<SnapshotRef>,
    /// The feed fault in force: the last poll failed, or the gateway refused a signed
    /// checkpoint for what it covers and has not applied a later one yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<FaultReport>,
    /// The last fault that found the registry's publications at fault (a refused
    /// checkpoint, snapshot or entry; not `unreachable`, `http_status` or `storage`) since
    /// start, still shown once the gateway has resumed and `fault` is gone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_integrity_fault: Option<FaultReport>,
    /// Following the tiles (`--tiles`): the snapshot this replica started from, the entry
    /// before which it holds no history (older snapshots by number answer 404
    /// `before-bootstrap`; every other answer is complete), how long the start took.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiles: Option<TilesStatus>,
    /// With a witness policy (`--witness-policy`): the witnesses of the checkpoint in
    /// service (absent without a policy, or before the first witnessed checkpoint).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witnessed: Option<WitnessedReport>,
    /// With `--witness-key`: this gateway's own witness (its name, vkey, whether it
    /// cosigns, and the tree it last cosigned per log). It does not affect `ready`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<crate::witnessing::WitnessReport>,
}

/// The witnesses of the checkpoint in service.
#[derive(Debug, Serialize, ToSchema)]
pub struct WitnessedReport {
    /// The log key's signature time (Unix seconds).
    pub log_timestamp_unix_s: u64,
    /// The policy witnesses whose cosignatures counted, with their times.
    pub cosigners: Vec<CosignerReport>,
    /// The latest time such that the cosignatures made at or after it still meet the
    /// quorum (Unix seconds): the state is stale once it is older than the bound. Absent
    /// under `quorum none`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quorum_time_unix_s: Option<u64>,
}

/// One witness's cosignature.
#[derive(Debug, Serialize, ToSchema)]
pub struct CosignerReport {
    /// The witness's name in the policy.
    pub name: String,
    /// When it cosigned (Unix seconds).
    pub timestamp_unix_s: u64,
}

/// Readiness: 200 while a verified snapshot is in service and the state is fresh by signed
/// time (a feed fault alone keeps the gateway ready, serving its last verified state, and is
/// reported as `degraded`); 503 before the first snapshot, when stale, or while the
/// registry's newest checkpoint is dated beyond the clock tolerance ahead
/// (`future_checkpoint`).
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, body = Readiness), (status = 503, body = Readiness)))]
pub async fn readyz(State(s): State<Shared>) -> impl IntoResponse {
    let r = readiness(&s);
    let code = if r.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(r))
}

/// The readiness report.
pub fn readiness(s: &Shared) -> Readiness {
    let view = current(&s.view);
    let now = s.clock.now_unix_ms();
    let fresh = Freshness::of(&view, &s.clock, s.config.max_staleness);
    let stale = fresh.stale;
    let st = lock(&s.status);
    let snapshot = view.snapshot.as_deref().map(SnapshotRef::of);
    let future = st
        .fault
        .as_ref()
        .is_some_and(|f| f.kind == FUTURE_CHECKPOINT);
    let status = if snapshot.is_none() {
        "no_snapshot"
    } else if stale {
        "stale"
    } else if future {
        FUTURE_CHECKPOINT
    } else if st.fault.is_some() {
        "degraded"
    } else {
        "ok"
    };
    Readiness {
        ready: snapshot.is_some() && !stale && !future,
        status: status.into(),
        stale,
        applied_seq: view.applied.seq,
        checkpoint_age_seconds: fresh.age_ms.map(|a| a as f64 / 1e3),
        max_staleness_seconds: s.config.max_staleness.as_secs_f64(),
        registry_checkpoint_size: st.registry_checkpoint.map(|(size, _)| size),
        registry_head_seq: st.registry_head,
        lag_entries: st.lag_entries(view.applied.seq),
        lag_seconds: st.lag_seconds(now),
        last_sync_unix_ms: st.last_sync_unix_ms,
        page_limit: st.page_limit,
        snapshot,
        fault: st.fault.clone(),
        last_integrity_fault: st.last_integrity_fault.clone(),
        tiles: st.tiles.clone(),
        witnessed: view
            .checkpoint
            .as_ref()
            .and_then(|c| c.witness.as_ref())
            .map(|w| WitnessedReport {
                log_timestamp_unix_s: w.log_timestamp,
                cosigners: w
                    .cosigners
                    .iter()
                    .map(|(name, t)| CosignerReport {
                        name: name.clone(),
                        timestamp_unix_s: *t,
                    })
                    .collect(),
                quorum_time_unix_s: w.quorum_time_s,
            }),
        witness: s.witness.as_ref().map(|w| w.report()),
    }
}

/// Prometheus metrics (text exposition format).
#[utoipa::path(get, path = "/metrics", tag = "operations", responses((status = 200, description = "Prometheus text format", body = String)))]
pub async fn metrics(State(s): State<Shared>) -> impl IntoResponse {
    let mut out = String::new();
    s.http.render_requests("dgsp_gateway", &mut out);
    out.push_str("# HELP dgsp_gateway_verify_total Verification results by status.\n# TYPE dgsp_gateway_verify_total counter\n");
    for st in Status::ALL {
        out.push_str(&format!(
            "dgsp_gateway_verify_total{{status=\"{}\"}} {}\n",
            st.label(),
            s.counters.verify[st.index()].load(Ordering::Relaxed)
        ));
    }
    let counter = |out: &mut String, name: &str, help: &str, v: u64| {
        out.push_str(&format!(
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}\n"
        ));
    };
    counter(
        &mut out,
        "dgsp_gateway_judge_total",
        "Judge requests answered.",
        s.counters.judge.load(Ordering::Relaxed),
    );
    counter(
        &mut out,
        "dgsp_gateway_batches_total",
        "Batch verify requests answered.",
        s.counters.batches.load(Ordering::Relaxed),
    );
    counter(
        &mut out,
        "dgsp_gateway_stale_answers_total",
        "Verify answers given from a stale state (status stale, or served stale).",
        s.counters.stale.load(Ordering::Relaxed),
    );
    counter(
        &mut out,
        "dgsp_gateway_shed_total",
        "Requests refused with 503 because the verification queue was full.",
        s.counters.shed.load(Ordering::Relaxed),
    );
    let stats = s.pool.stats();
    counter(
        &mut out,
        "dgsp_gateway_verify_signatures_total",
        "Signatures the verification pool has checked (SPHINCS+ and WOTS+).",
        stats.verified,
    );
    counter(
        &mut out,
        "dgsp_gateway_verify_engine_calls_total",
        "Engine batch calls those took (signatures / calls is the mean coalesced batch).",
        stats.engine_calls,
    );
    counter(
        &mut out,
        "dgsp_gateway_verify_coalescing_waits_total",
        "Times a worker waited (at most --coalesce-us) for more signatures to batch.",
        stats.waits,
    );
    gauge(
        &mut out,
        "dgsp_gateway_pool_in_flight",
        "Verifications queued or running.",
        s.pool.in_flight(),
    );
    gauge(
        &mut out,
        "dgsp_gateway_pool_capacity",
        "Verifications that may be queued or running at once.",
        s.pool.capacity(),
    );
    let r = readiness(&s);
    gauge(
        &mut out,
        "dgsp_gateway_ready",
        "1 when ready.",
        u64::from(r.ready),
    );
    gauge(
        &mut out,
        "dgsp_gateway_stale",
        "1 while the newest signed checkpoint is older than the bound, dated beyond the clock tolerance ahead, or absent.",
        u64::from(r.stale),
    );
    // No timed checkpoint yet: +Inf, so an alert on the age fires.
    gauge(
        &mut out,
        "dgsp_gateway_checkpoint_age_seconds",
        "Seconds since the signed time of the checkpoint in service.",
        r.checkpoint_age_seconds
            .map_or_else(|| "+Inf".to_owned(), |a| a.to_string()),
    );
    gauge(
        &mut out,
        "dgsp_gateway_max_staleness_seconds",
        "The staleness bound.",
        r.max_staleness_seconds,
    );
    gauge(
        &mut out,
        "dgsp_gateway_applied_seq",
        "Last log entry applied.",
        r.applied_seq,
    );
    gauge(
        &mut out,
        "dgsp_gateway_registry_head_seq",
        "The registry's log head as last seen.",
        r.registry_head_seq,
    );
    gauge(
        &mut out,
        "dgsp_gateway_lag_entries",
        "Entries behind the registry.",
        r.lag_entries,
    );
    gauge(
        &mut out,
        "dgsp_gateway_lag_seconds",
        "Seconds behind the registry.",
        r.lag_seconds,
    );
    let (number, count) = r.snapshot.as_ref().map_or((0, 0), |s| (s.number, s.count));
    gauge(
        &mut out,
        "dgsp_gateway_snapshot_number",
        "The snapshot in service.",
        number,
    );
    gauge(
        &mut out,
        "dgsp_gateway_snapshot_count",
        "Revoked zetas in the snapshot in service.",
        count,
    );
    gauge(
        &mut out,
        "dgsp_gateway_feed_fault",
        "1 while the registry feed is faulty (the last verified state is served).",
        u64::from(r.fault.is_some()),
    );
    gauge(
        &mut out,
        "dgsp_gateway_pending_bytes",
        "Memory held by fetched entries waiting for a checkpoint (parsed size, bytes).",
        lock(&s.status).pending_bytes,
    );
    gauge(
        &mut out,
        "dgsp_gateway_page_limit",
        "Entries asked for per feed page.",
        r.page_limit,
    );
    let st = lock(&s.status);
    out.push_str("# HELP dgsp_gateway_feed_faults_total Feed faults by kind.\n# TYPE dgsp_gateway_feed_faults_total counter\n");
    let mut kinds: Vec<_> = st.faults_total.iter().collect();
    kinds.sort();
    for (kind, n) in kinds {
        out.push_str(&format!(
            "dgsp_gateway_feed_faults_total{{kind=\"{kind}\"}} {n}\n"
        ));
    }
    counter(
        &mut out,
        "dgsp_gateway_ranges_applied_total",
        "Checkpointed ranges applied.",
        st.ranges_applied,
    );
    drop(st);
    if let Some(w) = &s.witness {
        w.render_metrics(&mut out);
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out)
}
