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
//! `future_checkpoint`, which the clock episodes provoke) is a finding: the fault in force
//! and the last integrity fault in each sample's `/readyz` (with what was wrong), and every
//! such kind the gateway's cumulative counters (`dgsp_gateway_feed_faults_total{kind}` in
//! its `/metrics`) hold, read with each sample and just before each stop of the gateway,
//! so that a refusal that came and went between two samples is a finding too.
//!
//! Each gateway's applied view (the seq it applied and the size of the checkpoint it
//! serves, read before and after `/readyz`) never goes back, across its restarts too.
//!
//! The registry is sampled too (`GET /readyz`): a registry that halts (`registry-halted`)
//! other than when the suite set its clock behind its last signed time has failed. Not in
//! the journal scenario, where a writer halts when it loses its lease (`crate::fencing`
//! watches the registries there).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dgsp_wire::answer::Freshness;
use dgsp_wire::log::now_ms;
use dgsp_wire::problem::ProblemDetails;
use serde::Deserialize;

use crate::http;
use crate::processes::Service;
use crate::report::Row;
use crate::stack::{Shared, Stack};

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

/// A gateway's feed fault counter, up to the kind: `{FEED_FAULTS}KIND"} N`.
const FEED_FAULTS: &str = "dgsp_gateway_feed_faults_total{kind=\"";

/// Allowance for the time a sample takes and rounding, in ms.
const SLACK_MS: u64 = 500;

/// The part of a gateway's `/readyz` body the suite reads (the gateway's `Readiness`).
#[derive(Debug, Deserialize)]
struct Readiness {
    /// Whether to route traffic here.
    ready: bool,
    /// `ok`, `degraded`, `stale` or `no_snapshot`.
    status: String,
    /// Whether the state is stale.
    stale: bool,
    /// The feed fault in force, if any.
    #[serde(default)]
    fault: Option<FaultReport>,
    /// The last fault that found the registry's publications at fault since the gateway
    /// started, kept after it resumed.
    #[serde(default)]
    last_integrity_fault: Option<FaultReport>,
}

/// A feed fault as a gateway reports it.
#[derive(Debug, Deserialize)]
struct FaultReport {
    /// Its stable kind.
    kind: String,
    /// What was wrong.
    detail: String,
    /// The entry it concerns, if one.
    #[serde(default)]
    seq: Option<u64>,
}

impl FaultReport {
    /// The fault as a finding against the registry, by `gateway`.
    fn finding(&self, gateway: &str) -> String {
        let at = self
            .seq
            .map(|s| format!(" at entry {s}"))
            .unwrap_or_default();
        format!("{gateway}: {}{at}: {}", self.kind, self.detail)
    }
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
    samples: u64,
    /// Samples answered 200.
    ready: u64,
    /// Ready while stale (by the bound, judged from the outside, or by its own body).
    ready_while_stale: Vec<String>,
    /// Future-dated checkpoints in service.
    future: Vec<String>,
    /// Largest lead of a checkpoint in service over the real clock, ms.
    max_lead_ms: i64,
    /// Feed fault kinds seen, with how many samples showed each.
    faults: BTreeMap<String, u64>,
    /// Gateway statuses seen (`ok`, `degraded`, `stale`, `no_snapshot`), with counts.
    statuses: BTreeMap<String, u64>,
    /// Feed faults that find the registry's publications inconsistent (gateway, kind, entry,
    /// detail), each once.
    registry_faults: Vec<String>,
    /// Feed faults each gateway counted, by (gateway, start, kind): the largest count read.
    counted: BTreeMap<(String, u32, String), u64>,
    /// Registry samples.
    registry_samples: u64,
    /// Halts of the registry the suite did not provoke (reason, with the start it was in).
    unprompted_halts: Vec<String>,
    /// Each gateway's applied view at its last sample: (applied seq, checkpoint size, its
    /// start, when).
    applied: BTreeMap<String, (u64, u64, u32, u64)>,
    /// Samples whose applied view was behind the gateway's previous one.
    went_back: Vec<String>,
}

impl Observations {
    /// The rows of the invariants the monitor checks (`tolerance_ms`: how far ahead a note
    /// may be signed; `halts`: whether a halt of the registry is a finding, as it is without
    /// a journal).
    pub fn rows(&self, tolerance_ms: u64, halts: bool) -> Vec<Row> {
        let mut rows = vec![Row::new(
            "no gateway finds fault with what the registry signed",
            self.samples,
            self.registry_faults_counted(),
        )];
        if halts {
            rows.push(Row::new(
                "the registry never halts unprompted",
                self.registry_samples,
                self.unprompted_halts.clone(),
            ));
        }
        rows.extend([
            Row::new(
                "no gateway's applied view goes backwards",
                self.samples,
                self.went_back.clone(),
            ),
            Row::new(
                "no gateway ready while stale",
                self.samples,
                self.ready_while_stale.clone(),
            ),
            Row::new(
                format!(
                    "no gateway serves a note > {} s in the future",
                    tolerance_ms / 1000
                ),
                self.samples,
                self.future.clone(),
            ),
        ]);
        rows
    }

    /// Records gateway `name`'s applied view (its start `start`, sampled at `at`): its
    /// applied seq and the size of the checkpoint it serves never go back, across its
    /// restarts too (it keeps its replica).
    fn applied(&mut self, name: &str, start: u32, at: u64, applied: u64, size: u64) {
        if let Some(&(a, s, st, t)) = self.applied.get(name) {
            if applied < a || size < s {
                self.went_back.push(format!(
                    "{name}: applied {a} with a checkpoint of size {s} at {t} (start {st}), \
                     then {applied} with size {size} at {at} (start {start})"
                ));
            }
        }
        let e = self.applied.entry(name.to_owned()).or_default();
        *e = (e.0.max(applied), e.1.max(size), start, at);
    }

    /// The findings against the registry: those reported with what was wrong, then every
    /// such kind a gateway counted.
    fn registry_faults_counted(&self) -> Vec<String> {
        let counted = self
            .counted
            .iter()
            .filter(|((_, _, kind), _)| !TRANSIENT_FAULTS.contains(&kind.as_str()))
            .map(|((gateway, start, kind), n)| {
                format!("{gateway} counted {n} {kind} fault(s) in its start {start} ({FEED_FAULTS}{kind}\"}})")
            });
        self.registry_faults
            .iter()
            .cloned()
            .chain(counted)
            .collect()
    }

    /// Feed faults counted, by kind, over every gateway and start.
    fn counted_by_kind(&self) -> BTreeMap<&str, u64> {
        let mut by_kind = BTreeMap::new();
        for ((_, _, kind), n) in &self.counted {
            *by_kind.entry(kind.as_str()).or_default() += n;
        }
        by_kind
    }

    /// Records `finding` unless it is already recorded.
    fn registry_fault(&mut self, finding: String) {
        if !self.registry_faults.contains(&finding) {
            self.registry_faults.push(finding);
        }
    }
}

/// One line: what the gateways looked like.
impl fmt::Display for Observations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "gateways: {} samples, {} ready, {} not ready ({:?}), largest lead of a note in service {:.1} s, faults seen {:?}, counted {:?}",
            self.samples,
            self.ready,
            self.samples - self.ready,
            self.statuses,
            self.max_lead_ms as f64 / 1e3,
            self.faults,
            self.counted_by_kind()
        )
    }
}

fn checkpoint_time(f: &Freshness) -> Option<u64> {
    f.checkpoint.as_ref().map(|c| c.time_unix_ms)
}

/// One sample of gateway `gw`; `None` when a request went unanswered.
async fn sample(stack: &Stack, gw: &Shared) -> Option<()> {
    let client = &stack.http;
    let max_staleness_ms = stack.settings.max_staleness_secs * 1000;
    let tolerance_ms = stack.settings.clock_tolerance_ms;
    let svc = gw.lock().await;
    let (name, url, start) = (svc.name.clone(), svc.url.clone(), svc.starts);
    let (_, before) = http::json::<GroupAnswer>(client, &format!("{url}/v1/group")).await?;
    let asked = now_ms();
    let (code, r) = http::json::<Readiness>(client, &format!("{url}/readyz")).await?;
    let answered = now_ms();
    let (_, after) = http::json::<GroupAnswer>(client, &format!("{url}/v1/group")).await?;
    let counted = read_counters(stack, &svc).await;
    drop(svc);
    let mut o = stack.observations.lock().unwrap();
    o.samples += 1;
    let size = |f: &Freshness| f.checkpoint.as_ref().map_or(0, |c| c.size);
    o.applied(
        &name,
        start,
        asked,
        before.freshness.applied_seq,
        size(&before.freshness),
    );
    o.applied(
        &name,
        start,
        answered,
        after.freshness.applied_seq,
        size(&after.freshness),
    );
    *o.statuses.entry(r.status.clone()).or_default() += 1;
    if let Some(f) = &r.fault {
        *o.faults.entry(f.kind.clone()).or_default() += 1;
    }
    for f in r.fault.iter().chain(&r.last_integrity_fault) {
        if !TRANSIENT_FAULTS.contains(&f.kind.as_str()) {
            o.registry_fault(f.finding(&name));
        }
        // Every fault a gateway reports it has counted: the counters, read just after, are
        // read as the gateway writes them.
        if counted.as_ref().is_some_and(|c| !c.contains_key(&f.kind)) {
            o.registry_fault(format!(
                "{name}: /readyz reports a {} fault that its /metrics does not count ({FEED_FAULTS}{}\"}}): the suite does not read the counters as the gateway writes them",
                f.kind, f.kind
            ));
        }
    }
    let ready = code == 200;
    if ready {
        o.ready += 1;
        if r.stale || !r.ready {
            o.ready_while_stale.push(format!(
                "{name}: /readyz 200 with ready {} stale {} status {} at {asked}",
                r.ready, r.stale, r.status
            ));
        }
        match checkpoint_time(&after.freshness) {
            None => o
                .ready_while_stale
                .push(format!("{name}: /readyz 200 with no timed checkpoint at {asked}")),
            Some(t) if asked.saturating_sub(t) > max_staleness_ms + SLACK_MS => {
                o.ready_while_stale.push(format!(
                    "{name}: /readyz 200 at {asked} while its checkpoint was signed {:.1} s before (bound {} s)",
                    (asked - t) as f64 / 1e3,
                    max_staleness_ms / 1000
                ))
            }
            Some(_) => {}
        }
    }
    if let Some(t) = checkpoint_time(&before.freshness) {
        let lead = t as i64 - answered as i64;
        o.max_lead_ms = o.max_lead_ms.max(lead);
        if lead > (tolerance_ms + SLACK_MS) as i64 {
            o.future.push(format!(
                "{name}: in service with a checkpoint (size {}) signed {:.1} s ahead of its clock, /readyz {code}, at {answered}",
                before.freshness.applied_seq,
                lead as f64 / 1e3
            ));
        }
    }
    Some(())
}

/// Reads the feed faults gateway `svc` has counted since it started (its `/metrics`, every
/// kind counted at least once), each kind recorded with the largest count read in this
/// start; `None` when it does not answer.
pub async fn read_counters(stack: &Stack, svc: &Service) -> Option<BTreeMap<String, u64>> {
    let (200, metrics) = http::text(&stack.http, &format!("{}/metrics", svc.url)).await? else {
        return None;
    };
    let counted: BTreeMap<String, u64> = metrics
        .lines()
        .filter_map(|line| {
            let (kind, n) = line.strip_prefix(FEED_FAULTS)?.split_once("\"} ")?;
            Some((kind.to_owned(), n.trim().parse().ok()?))
        })
        .collect();
    let mut o = stack.observations.lock().unwrap();
    for (kind, n) in &counted {
        let count = o
            .counted
            .entry((svc.name.clone(), svc.starts, kind.clone()))
            .or_default();
        *count = (*count).max(*n);
    }
    Some(counted)
}

/// One sample of the registry's readiness: a halt is recorded unless the suite expects it.
async fn sample_registry(stack: &Stack) -> Option<()> {
    let expected = &stack.halt_expected;
    let svc = stack.registry().lock().await;
    let start = svc.starts;
    // Read before and after: the flag is set just before the clock is set back and cleared
    // only once a restart (which takes the lock held here) is ready.
    let expected_before = expected.load(Ordering::SeqCst);
    let (status, body) = http::text(&stack.http, &format!("{}/readyz", svc.url)).await?;
    drop(svc);
    let mut o = stack.observations.lock().unwrap();
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

/// Samples the registry and every gateway of `stack` in turn until `stop`.
pub async fn watch(stack: &Stack, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        if stack.journal.is_none() {
            sample_registry(stack).await;
        }
        for gw in &stack.gateways {
            sample(stack, gw).await;
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}
