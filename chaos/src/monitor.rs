//! Watches the gateways throughout the run: every ~150 ms each gateway is asked for its
//! freshness (`GET /v1/group`), its readiness (`GET /readyz`) and its freshness again, under
//! the gateway's lock (never across a restart). Each sample is judged from the outside, on
//! the real clock the gateways also run on:
//!
//! - `/readyz` 200 while the newest checkpoint in service (read just after, so no older
//!   than the one readiness was judged on) was signed longer ago than the gateway's bound:
//!   ready while stale;
//! - `/readyz` 200 with a body saying `stale: true` or `ready: false`;
//! - a checkpoint in service (read just before, so no newer than the one readiness was
//!   judged on) signed more than the tolerance ahead of the real clock: a future-dated
//!   note accepted (`future_checkpoint` is the check that refuses it).
//!
//! A feed fault that says the registry published something inconsistent (a bad checkpoint
//! or snapshot, a broken chain, a rollback, ...: every kind but the transport ones and
//! `future_checkpoint`, which the clock episodes provoke) is recorded as a finding.
//!
//! The registry is sampled too (`GET /readyz`): a registry that halts (`registry-halted`)
//! other than when the suite set its clock behind its last signed time has failed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dgsp_wire::answer::Freshness;
use dgsp_wire::log::now_ms;
use dgsp_wire::problem::ProblemDetails;
use serde::Deserialize;
use serde_json::Value;

use crate::http;
use crate::processes::Service;

/// Feed fault kinds that say nothing against what the registry signed: it was down or
/// restarting (`unreachable`, `http_status`, a page cut short), a page or buffer bound, or
/// its clock was ahead (the clock episodes).
const TRANSIENT_FAULTS: &[&str] = &[
    "unreachable",
    "http_status",
    "malformed_page",
    "page_too_large",
    "pending_limit",
    "future_checkpoint",
];

/// The part of a gateway's `/readyz` body the suite reads (the gateway's `Readiness`).
#[derive(Debug, Deserialize)]
pub struct Readiness {
    /// Whether to route traffic here.
    pub ready: bool,
    /// `ok`, `degraded`, `stale` or `no_snapshot`.
    pub status: String,
    /// Whether the state is stale.
    pub stale: bool,
    /// The feed fault in force, if any.
    #[serde(default)]
    pub fault: Option<Value>,
}

/// The part of a gateway's `GET /v1/group` answer the suite reads.
#[derive(Debug, Deserialize)]
pub struct GroupAnswer {
    /// How current the gateway is (the wire type every answer carries).
    pub freshness: Freshness,
}

/// What the monitor saw.
#[derive(Default)]
pub struct Observations {
    /// Complete samples.
    pub samples: u64,
    /// Samples answered 200.
    pub ready: u64,
    /// Samples answered 503.
    pub not_ready: u64,
    /// Ready while stale (by the bound, judged from the outside, or by its own body).
    pub ready_while_stale: Vec<String>,
    /// Future-dated checkpoints in service.
    pub future: Vec<String>,
    /// Largest lead of a checkpoint in service over the real clock, ms.
    pub max_lead_ms: i64,
    /// Feed fault kinds seen, with how many samples showed each.
    pub faults: BTreeMap<String, u64>,
    /// Gateway statuses seen (`ok`, `degraded`, `stale`, `no_snapshot`), with counts.
    pub statuses: BTreeMap<String, u64>,
    /// Feed faults that find the registry's publications inconsistent (gateway, kind, entry,
    /// detail), each once.
    pub registry_faults: Vec<String>,
    /// Registry samples.
    pub registry_samples: u64,
    /// Halts of the registry the suite did not provoke (reason, with the start it was in).
    pub unprompted_halts: Vec<String>,
}

/// The monitor's settings.
#[derive(Clone, Copy)]
pub struct Bounds {
    /// The gateways' `--max-staleness-secs`, in ms.
    pub max_staleness_ms: u64,
    /// How far ahead a note may be signed, in ms.
    pub tolerance_ms: u64,
    /// Allowance for the time a sample takes and rounding, in ms.
    pub slack_ms: u64,
}

fn checkpoint_time(f: &Freshness) -> Option<u64> {
    f.checkpoint.as_ref().map(|c| c.time_unix_ms)
}

/// One sample of gateway `gw`; `None` when a request went unanswered.
async fn sample(
    client: &reqwest::Client,
    gw: &Arc<tokio::sync::Mutex<Service>>,
    bounds: Bounds,
    obs: &Mutex<Observations>,
) -> Option<()> {
    let svc = gw.lock().await;
    let (name, url) = (svc.name.clone(), svc.url.clone());
    let (_, before) = http::json::<GroupAnswer>(client, &format!("{url}/v1/group")).await?;
    let asked = now_ms();
    let (code, r) = http::json::<Readiness>(client, &format!("{url}/readyz")).await?;
    let answered = now_ms();
    let (_, after) = http::json::<GroupAnswer>(client, &format!("{url}/v1/group")).await?;
    drop(svc);
    let mut o = obs.lock().unwrap();
    o.samples += 1;
    *o.statuses.entry(r.status.clone()).or_default() += 1;
    if let Some(f) = &r.fault {
        let kind = f["kind"].as_str().unwrap_or("?");
        *o.faults.entry(kind.to_owned()).or_default() += 1;
        if !TRANSIENT_FAULTS.contains(&kind) {
            let finding = format!("{name}: {kind} at entry {}: {}", f["seq"], f["detail"]);
            if !o.registry_faults.contains(&finding) {
                o.registry_faults.push(finding);
            }
        }
    }
    let ready = code == 200;
    if ready {
        o.ready += 1;
    } else {
        o.not_ready += 1;
    }
    if ready && (r.stale || !r.ready) {
        o.ready_while_stale.push(format!(
            "{name}: /readyz 200 with ready {} stale {} status {} at {asked}",
            r.ready, r.stale, r.status
        ));
    }
    if ready {
        match checkpoint_time(&after.freshness) {
            None => o
                .ready_while_stale
                .push(format!("{name}: /readyz 200 with no timed checkpoint at {asked}")),
            Some(t) if asked.saturating_sub(t) > bounds.max_staleness_ms + bounds.slack_ms => {
                o.ready_while_stale.push(format!(
                    "{name}: /readyz 200 at {asked} while its checkpoint was signed {:.1} s before (bound {} s)",
                    (asked - t) as f64 / 1e3,
                    bounds.max_staleness_ms / 1000
                ))
            }
            Some(_) => {}
        }
    }
    if let Some(t) = checkpoint_time(&before.freshness) {
        let lead = t as i64 - answered as i64;
        o.max_lead_ms = o.max_lead_ms.max(lead);
        if lead > (bounds.tolerance_ms + bounds.slack_ms) as i64 {
            o.future.push(format!(
                "{name}: in service with a checkpoint (size {}) signed {:.1} s ahead of its clock, /readyz {code}, at {answered}",
                before.freshness.applied_seq,
                lead as f64 / 1e3
            ));
        }
    }
    Some(())
}

/// One sample of the registry's readiness: a halt is recorded unless `expected`.
async fn sample_registry(
    client: &reqwest::Client,
    registry: &Arc<tokio::sync::Mutex<Service>>,
    expected: &AtomicBool,
    obs: &Mutex<Observations>,
) -> Option<()> {
    let svc = registry.lock().await;
    let start = svc.starts;
    // Read before and after: the flag is set just before the clock is set back and cleared
    // only once a restart (which takes the lock held here) is ready.
    let expected_before = expected.load(Ordering::SeqCst);
    let (status, body) = http::text(client, &format!("{}/readyz", svc.url)).await?;
    drop(svc);
    let mut o = obs.lock().unwrap();
    o.registry_samples += 1;
    if status == 200 || expected_before || expected.load(Ordering::SeqCst) {
        return Some(());
    }
    if let Ok(p) = serde_json::from_str::<ProblemDetails>(&body) {
        if p.slug() == Some("registry-halted") {
            let halt = format!("registry halted in its start {start}: {}", p.detail);
            if !o.unprompted_halts.contains(&halt) {
                o.unprompted_halts.push(halt);
            }
        }
    }
    Some(())
}

/// The services to watch.
pub struct Watched {
    /// The registry.
    pub registry: Arc<tokio::sync::Mutex<Service>>,
    /// Set while the suite expects the registry to halt (its clock set behind).
    pub halt_expected: Arc<AtomicBool>,
    /// The gateways.
    pub gateways: Vec<Arc<tokio::sync::Mutex<Service>>>,
}

/// Samples the registry and every gateway in turn until `stop`.
pub async fn watch(
    http: reqwest::Client,
    watched: Watched,
    bounds: Bounds,
    stop: Arc<AtomicBool>,
    obs: Arc<Mutex<Observations>>,
) {
    while !stop.load(Ordering::Relaxed) {
        sample_registry(&http, &watched.registry, &watched.halt_expected, &obs).await;
        for gw in &watched.gateways {
            sample(&http, gw, bounds, &obs).await;
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}
