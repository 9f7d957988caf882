//! `dgsp-loadtest probe`: the tail as users feel it. An open loop at a constant arrival
//! rate, a fraction (default half) of the rate the closed loop reached, with latency counted
//! from each request's scheduled send time, so that a stall of the gateway is charged to
//! every request that should have been sent during it (coordinated omission corrected).
//!
//! The probe is this crate's open loop (`open_loop`), not goose: goose is a closed loop
//! (each user sends its next request when the last is answered), and its coordinated-omission
//! mitigation backfills the requests each user would have sent at its own average cadence, an
//! estimate made from the very loop that the stall slowed down; the open loop schedules every
//! request on a fixed clock and measures from that schedule, which is the open-loop model
//! itself (wrk2's; until 2026-11-27 the probe ran oha 1.16 with `-q RATE
//! --latency-correction`, the same model). The bodies are the fixtures' own, one per request
//! in turn (the binary body is one signature sent each time; the reads are the fixture's
//! URLs). The probe checks status codes, and of a JSON verify answer its `status` too (a
//! wrong one counts as not ok); the rest of the answers' content is checked by the goose run
//! of the same scenario.
//!
//! Before the probe, with nothing of the test running, the machine's own stalls are
//! measured (`dgsp_gateway::stalls`, as the gateway's bench does) and reported beside the
//! tail: a tail shorter than the stalls cannot be promised on this machine.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{read_json, Error, Result};
use crate::load::{LoadSummary, Scenario};
use crate::model::{body, JudgeItem, VerifyItem, ZetaItem};
use crate::open_loop::{self, Outcome, Plan};

/// How the probe is named in its report.
const TOOL: &str = "dgsp-loadtest, fixed schedule";

/// Options of `probe`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The scenario (its request kind is probed).
    #[arg(long, value_enum)]
    scenario: Scenario,
    /// The gateway's base URL.
    #[arg(long, default_value = "http://127.0.0.1:7450")]
    gateway: String,
    /// The registry's base URL (reads: the log's tiles).
    #[arg(long, default_value = "http://127.0.0.1:7350")]
    registry: String,
    /// The fixture directory.
    #[arg(long)]
    fixtures: PathBuf,
    /// The closed-loop run's `load.json`: the probe's rate is a fraction of its rate.
    #[arg(long)]
    load: PathBuf,
    /// The fraction of the closed loop's request rate to probe at.
    #[arg(long, default_value_t = 0.5)]
    fraction: f64,
    /// Seconds of the probe.
    #[arg(long, default_value_t = 15)]
    secs: u64,
    /// Requests in flight at most (a request scheduled while all are busy waits, and its
    /// wait is counted).
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Items per batch request (batch).
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Seconds of the stall measurement before the probe (0: none).
    #[arg(long, default_value_t = 3.0)]
    stall_secs: f64,
    /// Where to write `probe.json`.
    #[arg(long)]
    out: PathBuf,
}

/// The machine's stall line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StallLine {
    /// Threads (one per core this process may use) spinning, seconds each.
    pub seconds: f64,
    /// Cores measured.
    pub cores: usize,
    /// The line, in words.
    pub line: String,
    /// Fraction of the time lost.
    pub lost: f64,
    /// Gaps over 1 ms per core-second.
    pub over_1ms_per_core_s: f64,
    /// Gaps over 3 ms per core-second.
    pub over_3ms_per_core_s: f64,
    /// The longest gap, ms.
    pub longest_ms: f64,
}

/// What the probe measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeSummary {
    /// The tool and how it was run.
    pub tool: String,
    /// The request probed.
    pub request: String,
    /// The closed loop's rate, requests/s.
    pub saturation_per_s: f64,
    /// The fraction asked for.
    pub fraction: f64,
    /// The scheduled rate, requests/s.
    pub target_per_s: f64,
    /// The rate answered, requests/s.
    pub achieved_per_s: f64,
    /// Seconds.
    pub seconds: f64,
    /// Requests answered.
    pub requests: u64,
    /// Answers that were not 200, answers 200 without what the fixture expects (verify:
    /// its `status`), and requests without an answer.
    pub not_ok: u64,
    /// Requests in flight or waiting for their slot when the run's time was up, cancelled
    /// (not counted as answers or as failures).
    #[serde(default)]
    pub cut_at_end: u64,
    /// Latency from the scheduled send time, ms.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p999_ms: f64,
    /// The slowest, ms.
    pub max_ms: f64,
    /// Status codes and their counts.
    pub status_codes: Value,
    /// Errors (no answer) and their counts.
    pub errors: Value,
    /// The machine's own stalls, measured just before.
    pub stalls: Option<StallLine>,
}

/// What the open loop sends for one scenario.
pub struct Target {
    /// The request, in words.
    pub request: String,
    /// GET or POST.
    pub method: reqwest::Method,
    /// Request `i` goes to `urls[i % len]`.
    pub urls: Vec<String>,
    /// The bodies' content type.
    pub content_type: Option<&'static str>,
    /// Request `i` carries `bodies[i % len]` (none: no body).
    pub bodies: Vec<Bytes>,
    /// Request `i`'s answer must contain `expect[i % len]` (none: not checked).
    pub expect: Vec<Bytes>,
}

impl Target {
    /// The open loop's plan for it: `rate` per second for `duration`, `connections` in
    /// flight at most (the rest of [`Plan::new`]'s defaults).
    pub fn plan(self, rate: f64, duration: Duration, connections: usize) -> Plan {
        Plan {
            bodies: self.bodies,
            content_type: self.content_type,
            expect: self.expect,
            ..Plan::new(self.method, self.urls, rate, duration, connections)
        }
    }
}

/// What `scenario`'s probe sends to the gateway at `gateway`, from the fixtures in
/// `fixtures` (`batch` items per batch request).
pub fn target(scenario: Scenario, gateway: &str, fixtures: &Path, batch: usize) -> Result<Target> {
    let gw = gateway.trim_end_matches('/');
    let verify = || read_json::<Vec<VerifyItem>>(&fixtures.join("verify.json"));
    let json =
        |bodies: Vec<String>| -> Vec<Bytes> { bodies.into_iter().map(Bytes::from).collect() };
    let post = |request: &str, path: &str, content_type, bodies| Target {
        request: request.into(),
        method: reqwest::Method::POST,
        urls: vec![format!("{gw}{path}")],
        content_type: Some(content_type),
        bodies,
        expect: Vec::new(),
    };
    Ok(match scenario {
        // mixed: its doomed members are revoked by now; the probe is the verify stream.
        Scenario::Verify | Scenario::Mixed => {
            let items = verify()?;
            Target {
                // The answer is compact JSON that opens with these two fields.
                expect: items
                    .iter()
                    .map(|v| {
                        let valid = v.expect == "ok";
                        Bytes::from(format!(r#""valid":{valid},"status":"{}""#, v.expect))
                    })
                    .collect(),
                ..post(
                    "POST /v1/verify",
                    "/v1/verify",
                    "application/json",
                    json(
                        items
                            .iter()
                            .map(|v| body::verify(&v.message, &v.signature))
                            .collect(),
                    ),
                )
            }
        }
        Scenario::VerifyBinary => {
            let items = verify()?;
            let v = items
                .iter()
                .find(|v| v.expect == "ok")
                .ok_or_else(|| Error::Usage("no valid signature in verify.json".into()))?;
            let dec = |s: &str| {
                base64::Engine::decode(&base64::engine::general_purpose::STANDARD, s)
                    .map_err(|e| Error::Usage(format!("verify.json: {e}")))
            };
            let (m, s) = (dec(&v.message)?, dec(&v.signature)?);
            post(
                "POST /v1/verify (binary)",
                "/v1/verify",
                dgsp_gateway::api::body::BINARY,
                vec![Bytes::from(dgsp_gateway::api::body::encode_binary(
                    &[(&m[..], &s[..])],
                    false,
                ))],
            )
        }
        Scenario::Batch => post(
            "POST /v1/verify/batch",
            "/v1/verify/batch",
            "application/json",
            json(
                verify()?
                    .chunks_exact(batch.max(1))
                    .map(body::batch)
                    .collect(),
            ),
        ),
        Scenario::Judge => {
            let judge: Vec<JudgeItem> = read_json(&fixtures.join("judge.json"))?;
            post(
                "POST /v1/judge",
                "/v1/judge",
                "application/json",
                json(judge.iter().map(body::judge).collect()),
            )
        }
        Scenario::Reads => {
            let zetas: Vec<ZetaItem> = read_json(&fixtures.join("zetas.json"))?;
            Target {
                request: "GET /v1/revocations/{zeta}/proof".into(),
                method: reqwest::Method::GET,
                urls: zetas
                    .iter()
                    .map(|z| format!("{gw}/v1/revocations/{}/proof", z.zeta))
                    .collect(),
                content_type: None,
                bodies: Vec::new(),
                expect: Vec::new(),
            }
        }
    })
}

/// Measures the machine's own stalls for `secs`, one spinning thread per core this process
/// may use (`dgsp_gateway::stalls`).
pub fn stall_line(secs: f64) -> StallLine {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let s = dgsp_gateway::stalls::measure(cores, Duration::from_secs_f64(secs));
    let per = |n: u64| n as f64 / s.thread_secs.max(f64::MIN_POSITIVE);
    StallLine {
        seconds: secs,
        cores,
        line: s.to_string(),
        lost: s.lost,
        over_1ms_per_core_s: per(s.over_1ms),
        over_3ms_per_core_s: per(s.over_3ms),
        longest_ms: s.longest.as_secs_f64() * 1e3,
    }
}

/// Runs `probe`.
pub async fn run(a: Args) -> Result<()> {
    if !(a.fraction > 0.0 && a.fraction <= 1.0) || a.secs == 0 || a.connections == 0 {
        return Err(Error::Usage(
            "--fraction in (0, 1], --secs and --connections at least 1".into(),
        ));
    }
    std::fs::create_dir_all(&a.out).map_err(|source| Error::Io {
        path: a.out.clone(),
        source,
    })?;
    let load: LoadSummary = read_json(&a.load)?;
    let t = target(a.scenario, &a.gateway, &a.fixtures, a.batch)?;
    if t.urls.is_empty() || (t.method == reqwest::Method::POST && t.bodies.is_empty()) {
        return Err(Error::Usage(format!(
            "{}: no request to send for {}",
            a.fixtures.display(),
            t.request
        )));
    }
    let saturation = load
        .requests
        .iter()
        .find(|r| r.name.ends_with(&t.request) || r.name == t.request)
        .or_else(|| load.primary())
        .map(|r| r.per_s)
        .unwrap_or(0.0);
    if saturation <= 0.0 {
        return Err(Error::Usage(format!(
            "{}: no closed-loop rate for {} to take a fraction of",
            a.load.display(),
            t.request
        )));
    }
    let rate = (saturation * a.fraction).max(1.0);

    let stalls = (a.stall_secs > 0.0).then(|| stall_line(a.stall_secs));

    let request = t.request.clone();
    // A request that takes 30 s (the plan's timeout) is an error, not a latency.
    let plan = t.plan(rate, Duration::from_secs(a.secs), a.connections);
    let outcome = open_loop::run(&plan).await.map_err(|detail| Error::Tool {
        what: "the open loop".into(),
        detail,
    })?;
    let summary = summarise(&request, &outcome, saturation, a.fraction, rate, stalls);
    crate::error::write_json(&a.out.join("probe.json"), &summary)?;
    println!("{}", summary.text());
    Ok(())
}

/// The summary of one open-loop run.
fn summarise(
    request: &str,
    o: &Outcome,
    saturation: f64,
    fraction: f64,
    target: f64,
    stalls: Option<StallLine>,
) -> ProbeSummary {
    let answered = o.answered();
    let ok = o.status_codes.get(&200).copied().unwrap_or(0);
    let errors: u64 = o.errors.values().sum();
    let codes: serde_json::Map<String, Value> = o
        .status_codes
        .iter()
        .map(|(k, v)| (k.to_string(), Value::from(*v)))
        .collect();
    let kinds: serde_json::Map<String, Value> = o
        .errors
        .iter()
        .map(|(k, v)| (k.clone(), Value::from(*v)))
        .collect();
    ProbeSummary {
        tool: TOOL.into(),
        request: request.to_owned(),
        saturation_per_s: saturation,
        fraction,
        target_per_s: target,
        achieved_per_s: answered as f64 / o.seconds.max(f64::MIN_POSITIVE),
        seconds: o.seconds,
        requests: answered,
        not_ok: answered - ok + o.wrong + errors,
        cut_at_end: o.cut_at_end,
        p50_ms: o.quantile_ms(0.5),
        p90_ms: o.quantile_ms(0.9),
        p99_ms: o.quantile_ms(0.99),
        p999_ms: o.quantile_ms(0.999),
        max_ms: o.quantile_ms(1.0),
        status_codes: Value::Object(codes),
        errors: Value::Object(kinds),
        stalls,
    }
}

impl ProbeSummary {
    /// The human summary.
    pub fn text(&self) -> String {
        let mut t = format!(
            "open loop ({}) on {}: {:.0}/s scheduled ({:.0}% of the closed loop's {:.0}/s), {:.0}/s answered, {} requests · from the scheduled send: p50 {:.2} ms · p90 {:.2} · p99 {:.2} · p99.9 {:.2} · max {:.1} · not 200: {}",
            self.tool,
            self.request,
            self.target_per_s,
            self.fraction * 100.0,
            self.saturation_per_s,
            self.achieved_per_s,
            self.requests,
            self.p50_ms,
            self.p90_ms,
            self.p99_ms,
            self.p999_ms,
            self.max_ms,
            self.not_ok
        );
        if let Some(s) = &self.stalls {
            t.push_str(&format!(
                "\n  the machine's own stalls ({} cores spinning {:.1} s, nothing else running): {}",
                s.cores, s.seconds, s.line
            ));
        }
        t
    }
}

/// Reads a `probe.json`.
pub fn load(path: &Path) -> Result<ProbeSummary> {
    read_json(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarises_an_open_loop_run() {
        let o = Outcome {
            seconds: 10.0,
            latencies_ms: (1..=1000).map(|i| f64::from(i) / 10.0).collect(),
            status_codes: [(200, 990), (503, 10)].into(),
            errors: [("connect".to_string(), 2)].into(),
            cut_at_end: 30,
            wrong: 3,
            ..Outcome::default()
        };
        let s = summarise("POST /v1/verify", &o, 1000.0, 0.5, 500.0, None);
        assert_eq!(s.requests, 1000);
        assert_eq!(s.not_ok, 15);
        assert_eq!(s.cut_at_end, 30);
        assert!((s.achieved_per_s - 100.0).abs() < 1e-9);
        assert!((s.p50_ms - 50.0).abs() < 1e-9 && (s.p99_ms - 99.0).abs() < 1e-9);
        assert!((s.p999_ms - 99.9).abs() < 1e-9 && (s.max_ms - 100.0).abs() < 1e-9);
        assert_eq!(s.status_codes["503"], 10);
        assert_eq!(s.errors["connect"], 2);
        assert!(s.text().contains("p99 99.00 ·"), "{}", s.text());
    }
}
