//! `dgsp-loadtest probe`: the tail as users feel it. An open loop at a constant arrival
//! rate, a fraction (default half) of the rate the closed loop reached, with latency counted
//! from each request's scheduled send time, so that a stall of the gateway is charged to
//! every request that should have been sent during it (coordinated omission corrected).
//!
//! The probe is `oha` (MIT, crates.io) with `-q RATE --latency-correction`, not goose: goose
//! is a closed loop (each user sends its next request when the last is answered), and its
//! coordinated-omission mitigation backfills the requests each user would have sent at its
//! own average cadence, an estimate made from the very loop that the stall slowed down;
//! oha schedules every request on a fixed clock and measures from that schedule, which is
//! the open-loop model itself (wrk2's). The bodies are the fixtures' own (one per line,
//! `-Z`; the binary body, which has newlines, is one signature sent each time, and the
//! reads are the fixture's URLs, `--urls-from-file`). oha checks status codes, not bodies:
//! the answers' content is checked by the goose run of the same scenario.
//!
//! Before the probe, with nothing of the test running, the machine's own stalls are
//! measured (`dgsp_gateway::stalls`, as the gateway's bench does) and reported beside the
//! tail: a tail shorter than the stalls cannot be promised on this machine.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{read_json, write, Error, Result};
use crate::load::{LoadSummary, Scenario};
use crate::model::{body, JudgeItem, VerifyItem, ZetaItem};

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
    /// Connections oha keeps open (requests in flight at most; a request scheduled while
    /// all are busy waits, and its wait is counted).
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Items per batch request (batch).
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// The oha binary.
    #[arg(long, env = "DGSP_OHA", default_value = "oha")]
    oha: PathBuf,
    /// Seconds of the stall measurement before the probe (0: none).
    #[arg(long, default_value_t = 3.0)]
    stall_secs: f64,
    /// Where to write `probe.json`, oha's own report (`oha.json`) and its inputs.
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
    /// Answers that were not 200, and requests without an answer.
    pub not_ok: u64,
    /// Requests in flight or waiting for their slot when the run's time was up, which oha
    /// cancels (not counted as answers or as failures).
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

/// What oha is given for one scenario.
struct Target {
    request: String,
    method: &'static str,
    url: String,
    content_type: Option<&'static str>,
    /// `-Z` (one body per line), `-D` (one body) or `--urls-from-file`.
    input: Input,
}

enum Input {
    BodyLines(Vec<u8>),
    Body(Vec<u8>),
    Urls(Vec<u8>),
}

fn lines<T>(items: &[T], f: impl Fn(&T) -> String) -> Vec<u8> {
    let mut out = Vec::new();
    for i in items {
        out.extend_from_slice(f(i).as_bytes());
        out.push(b'\n');
    }
    out
}

fn target(a: &Args) -> Result<Target> {
    let gw = a.gateway.trim_end_matches('/');
    let verify = || read_json::<Vec<VerifyItem>>(&a.fixtures.join("verify.json"));
    let verify_line = |v: &VerifyItem| body::verify(&v.message, &v.signature);
    Ok(match a.scenario {
        // mixed: its doomed members are revoked by now; the probe is the verify stream.
        Scenario::Verify | Scenario::Mixed => Target {
            request: "POST /v1/verify".into(),
            method: "POST",
            url: format!("{gw}/v1/verify"),
            content_type: Some("application/json"),
            input: Input::BodyLines(lines(&verify()?, verify_line)),
        },
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
            Target {
                request: "POST /v1/verify (binary)".into(),
                method: "POST",
                url: format!("{gw}/v1/verify"),
                content_type: Some(dgsp_gateway::api::body::BINARY),
                input: Input::Body(dgsp_gateway::api::body::encode_binary(
                    &[(&m[..], &s[..])],
                    false,
                )),
            }
        }
        Scenario::Batch => {
            let items = verify()?;
            let bodies: Vec<String> = items
                .chunks_exact(a.batch.max(1))
                .map(body::batch)
                .collect();
            Target {
                request: "POST /v1/verify/batch".into(),
                method: "POST",
                url: format!("{gw}/v1/verify/batch"),
                content_type: Some("application/json"),
                input: Input::BodyLines(lines(&bodies, String::clone)),
            }
        }
        Scenario::Judge => {
            let judge: Vec<JudgeItem> = read_json(&a.fixtures.join("judge.json"))?;
            Target {
                request: "POST /v1/judge".into(),
                method: "POST",
                url: format!("{gw}/v1/judge"),
                content_type: Some("application/json"),
                input: Input::BodyLines(lines(&judge, body::judge)),
            }
        }
        Scenario::Reads => {
            let zetas: Vec<ZetaItem> = read_json(&a.fixtures.join("zetas.json"))?;
            Target {
                request: "GET /v1/revocations/{zeta}/proof".into(),
                method: "GET",
                url: String::new(),
                content_type: None,
                input: Input::Urls(lines(&zetas, |z| {
                    format!("{gw}/v1/revocations/{}/proof", z.zeta)
                })),
            }
        }
    })
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
    let t = target(&a)?;
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

    let stalls = (a.stall_secs > 0.0).then(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let s = dgsp_gateway::stalls::measure(cores, Duration::from_secs_f64(a.stall_secs));
        let per = |n: u64| n as f64 / s.thread_secs.max(f64::MIN_POSITIVE);
        StallLine {
            seconds: a.stall_secs,
            cores,
            line: s.to_string(),
            lost: s.lost,
            over_1ms_per_core_s: per(s.over_1ms),
            over_3ms_per_core_s: per(s.over_3ms),
            longest_ms: s.longest.as_secs_f64() * 1e3,
        }
    });

    let report = a.out.join("oha.json");
    let mut cmd = tokio::process::Command::new(&a.oha);
    cmd.arg("--no-tui")
        .args(["--output-format", "json", "-o"])
        .arg(&report)
        .args(["-z", &format!("{}s", a.secs)])
        .args(["-q", &format!("{rate:.2}")])
        .arg("--latency-correction")
        .args(["-c", &a.connections.to_string()])
        .args(["-m", t.method])
        // A request that takes this long is an error, not a latency.
        .args(["-t", "30s"]);
    if let Some(ct) = t.content_type {
        cmd.args(["-H", &format!("content-type: {ct}")]);
    }
    match &t.input {
        Input::BodyLines(b) => {
            let p = a.out.join("bodies.txt");
            write(&p, b)?;
            cmd.arg("-Z").arg(p).arg(&t.url);
        }
        Input::Body(b) => {
            let p = a.out.join("body.bin");
            write(&p, b)?;
            cmd.arg("-D").arg(p).arg(&t.url);
        }
        Input::Urls(u) => {
            let p = a.out.join("urls.txt");
            write(&p, u)?;
            cmd.arg("--urls-from-file").arg(p);
        }
    }
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| Error::Tool {
            what: format!("running {}", a.oha.display()),
            detail: format!(
                "{e} (./loadtest/run.sh installs oha into ~/.cache/dgsp/tools/bin; or set DGSP_OHA)"
            ),
        })?;
    if !out.status.success() {
        return Err(Error::Tool {
            what: format!("{} ({})", a.oha.display(), out.status),
            detail: String::from_utf8_lossy(&out.stderr)
                .chars()
                .take(2000)
                .collect(),
        });
    }
    let oha: Value = read_json(&report)?;
    let summary =
        summarise(&t.request, &oha, saturation, a.fraction, rate, stalls).map_err(|detail| {
            Error::Tool {
                what: format!("{}: oha's report", report.display()),
                detail,
            }
        })?;
    crate::error::write_json(&a.out.join("probe.json"), &summary)?;
    println!("{}", summary.text());
    Ok(())
}

/// Reads oha's JSON report.
fn summarise(
    request: &str,
    oha: &Value,
    saturation: f64,
    fraction: f64,
    target: f64,
    stalls: Option<StallLine>,
) -> std::result::Result<ProbeSummary, String> {
    let secs = |p: &str| {
        oha.pointer(p)
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("no number at {p}"))
    };
    let pct = |k: &str| {
        oha["latencyPercentiles"][k]
            .as_f64()
            .map(|s| s * 1e3)
            .ok_or_else(|| format!("no latencyPercentiles.{k}"))
    };
    let codes = oha["statusCodeDistribution"].clone();
    let errors = oha["errorDistribution"].clone();
    let count = |v: &Value| -> u64 {
        v.as_object()
            .map(|o| o.values().filter_map(Value::as_u64).sum())
            .unwrap_or(0)
    };
    let ok = codes["200"].as_u64().unwrap_or(0);
    let answered = count(&codes);
    let total = secs("/summary/total")?;
    // oha ends a `-z` run by cancelling what is in flight or waiting for its slot, and
    // counts those as this error: the end of the run, not an answer of the service.
    let cut = errors["aborted due to deadline"].as_u64().unwrap_or(0);
    Ok(ProbeSummary {
        tool: "oha 1.16 (-q RATE --latency-correction)".into(),
        request: request.to_owned(),
        saturation_per_s: saturation,
        fraction,
        target_per_s: target,
        achieved_per_s: answered as f64 / total.max(f64::MIN_POSITIVE),
        seconds: total,
        requests: answered,
        not_ok: answered - ok + count(&errors) - cut,
        cut_at_end: cut,
        p50_ms: pct("p50")?,
        p90_ms: pct("p90")?,
        p99_ms: pct("p99")?,
        p999_ms: pct("p99.9")?,
        max_ms: secs("/summary/slowest")? * 1e3,
        status_codes: codes,
        errors,
        stalls,
    })
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
    fn reads_an_oha_report() {
        let oha = serde_json::json!({
            "summary": {"successRate": 1.0, "total": 10.0, "slowest": 0.050,
                        "fastest": 0.0002, "average": 0.001, "requestsPerSec": 499.5},
            "latencyPercentiles": {"p10": 0.0003, "p25": 0.0004, "p50": 0.0008, "p75": 0.001,
                                   "p90": 0.002, "p95": 0.003, "p99": 0.009, "p99.9": 0.02,
                                   "p99.99": 0.04},
            "statusCodeDistribution": {"200": 4990, "503": 5},
            "errorDistribution": {"connection closed": 2, "aborted due to deadline": 30}
        });
        let s = summarise("POST /v1/verify", &oha, 1000.0, 0.5, 500.0, None).unwrap();
        assert_eq!(s.requests, 4995);
        assert_eq!(s.not_ok, 7);
        assert_eq!(s.cut_at_end, 30);
        assert!((s.achieved_per_s - 499.5).abs() < 1e-9);
        assert!((s.p99_ms - 9.0).abs() < 1e-9 && (s.p999_ms - 20.0).abs() < 1e-9);
        assert!((s.max_ms - 50.0).abs() < 1e-9);
        assert!(summarise("x", &serde_json::json!({}), 1.0, 0.5, 1.0, None).is_err());
    }
}
