//! `dgsp-loadtest load`: one scenario, closed loop at saturation, on goose.
//!
//! Goose runs `--users` users for `--secs` seconds against the gateway (and, for `reads`,
//! the registry's tiles); every answer is checked against its fixture, and a wrong answer is
//! a failed request. The run writes goose's own reports (`goose.html`, `goose.json`) and
//! this tool's summary of it (`load.json`: requests and items per second, p50 to max per
//! request kind, the goose rules and, for `mixed`, the revocation checks), which
//! `dgsp-loadtest report` combines with the raw core, the open-loop probe and the CPU.
//!
//! Items are prepared once (request bodies built before the run, so the generator spends
//! its time sending) and shared by every user through one cursor, so that each item is sent
//! once before any is sent twice.

mod fixtures;
mod mixed;
mod requests;
mod summary;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use goose::config::GooseConfiguration;
use goose::prelude::*;

use crate::error::{Error, Result};
use crate::thresholds;

pub use summary::LoadSummary;

/// The scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// `POST /v1/verify` with JSON bodies.
    Verify,
    /// `POST /v1/verify` with the compact binary body (`application/vnd.dgsp.verify`).
    VerifyBinary,
    /// `POST /v1/verify/batch`, `--batch` items per request (JSON).
    Batch,
    /// `POST /v1/judge`.
    Judge,
    /// The public reads: proofs, snapshots and the checkpoint from the gateway, the log's
    /// checkpoint and tiles from the registry.
    Reads,
    /// Verify while members are revoked under load: every answer about a revoked member
    /// must turn `revoked` within the bound and never turn back.
    Mixed,
}

impl Scenario {
    /// Every scenario.
    #[cfg(test)]
    pub const ALL: [Scenario; 6] = [
        Scenario::Verify,
        Scenario::VerifyBinary,
        Scenario::Batch,
        Scenario::Judge,
        Scenario::Reads,
        Scenario::Mixed,
    ];

    /// Its name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Verify => "verify",
            Scenario::VerifyBinary => "verify-binary",
            Scenario::Batch => "batch",
            Scenario::Judge => "judge",
            Scenario::Reads => "reads",
            Scenario::Mixed => "mixed",
        }
    }
}

/// Options of `load`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The scenario.
    #[arg(long, value_enum)]
    pub scenario: Scenario,
    /// The gateway's base URL.
    #[arg(long, default_value = "http://127.0.0.1:7450")]
    pub gateway: String,
    /// The registry's base URL (reads: the log's tiles; mixed: the revocations).
    #[arg(long, default_value = "http://127.0.0.1:7350")]
    pub registry: String,
    /// The fixture directory `generate` wrote.
    #[arg(long)]
    pub fixtures: PathBuf,
    /// Where to write `goose.html`, `goose.json` and `load.json` (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Users (requests in flight at once; the closed loop's concurrency).
    #[arg(long, default_value_t = 16)]
    pub users: usize,
    /// Seconds of the run, after all users have started.
    #[arg(long, default_value_t = 15)]
    pub secs: usize,
    /// Items per batch request.
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// mixed: a file holding the registry's admin token.
    #[arg(long, env = "DGSP_ADMIN_TOKEN_FILE")]
    pub admin_token_file: Option<PathBuf>,
    /// mixed: the longest a revoked member's signatures may still verify `ok` after the
    /// registry acknowledged the revocation, in ms. The gateway's promise to third parties
    /// is its `--max-staleness-secs` (60 s); on loopback the registry publishes within
    /// milliseconds and the gateway polls every 500 ms, so the default is far inside it.
    #[arg(long, default_value_t = 5_000)]
    pub bound_ms: u64,
    /// A smoke run: the same checks, with time and throughput bounds loosened (the
    /// correctness rules are never loosened).
    #[arg(long)]
    pub smoke: bool,
}

/// Runs `load`: prepares the items, runs goose, writes the reports; fails when an answer
/// was wrong or a goose rule failed.
pub async fn run(a: Args) -> Result<()> {
    if a.users == 0 || a.secs == 0 || a.batch == 0 {
        return Err(Error::Usage(
            "--users, --secs and --batch: at least 1".into(),
        ));
    }
    if a.scenario == Scenario::Mixed && a.users < 2 {
        return Err(Error::Usage(
            "mixed: at least 2 users (one revokes, the others verify)".into(),
        ));
    }
    std::fs::create_dir_all(&a.out).map_err(|source| Error::Io {
        path: a.out.clone(),
        source,
    })?;
    let prepared = fixtures::prepare(&a).await?;
    let items_per_request = prepared.items_per_request();
    let distinct = prepared.distinct();
    fixtures::install(Arc::new(prepared))?;

    let bounds = thresholds::bounds(a.scenario, a.smoke);
    let mut config = GooseConfiguration::default();
    config.host = Some(a.gateway.clone());
    config.users = Some(a.users);
    // Every user within a tenth of a second; goose resets its metrics once all have
    // started, so the run is measured at the concurrency asked for.
    config.increase_rate = Some((a.users * 10).to_string());
    config.run_time = Some(format!("{}s", a.secs));
    config.report_file = vec![
        a.out.join("goose.html").display().to_string(),
        a.out.join("goose.json").display().to_string(),
    ];
    config.threshold = thresholds::goose_rules(&bounds);
    // Judge at the end, so that the reports cover the whole run even when a rule fails.
    config.no_threshold_abort = true;
    // No controllers: nothing listens on the machine but the services under test.
    config.no_telnet = true;
    config.no_websocket = true;
    config.no_gzip = true;
    config.timeout = Some("30".into());
    config.quiet = 1;

    let mut attack = GooseAttack::initialize_with_config(config).map_err(goose_error)?;
    for scenario in requests::scenarios(a.scenario, a.users, mixed_interval(&a))? {
        attack = attack.register_scenario(scenario);
    }
    let started = std::time::SystemTime::now();
    let (metrics, goose_failed) = match attack.execute().await {
        Ok(m) => (m, Vec::new()),
        Err(GooseError::ThresholdsFailed { failed, metrics }) => (
            *metrics.0,
            failed
                .iter()
                .map(|r| format!("goose rule {}: observed {}", r.rule, r.observed))
                .collect(),
        ),
        Err(e) => return Err(goose_error(e)),
    };
    let mixed = (a.scenario == Scenario::Mixed).then(|| mixed::analyse(a.bound_ms));
    let summary = summary::summarise(
        &a,
        &metrics,
        items_per_request,
        distinct,
        fixtures::sent(),
        started,
        mixed,
        bounds,
    );
    crate::error::write_json(&a.out.join("load.json"), &summary)?;
    print!("{}", summary.text());
    let mut failed = goose_failed;
    failed.extend(summary.correctness_failures());
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::Thresholds(failed))
    }
}

/// mixed: the revoker's pause between two revocations, so that they spread over the first
/// third of the run (and revoked members are asked about for long after their bound).
fn mixed_interval(a: &Args) -> Duration {
    let doomed = fixtures::doomed_members().max(1) as f64;
    let spread = a.secs as f64 / 3.0;
    Duration::from_secs_f64((spread / doomed).clamp(0.02, 2.0))
}

fn goose_error(e: GooseError) -> Error {
    Error::Tool {
        what: "goose".into(),
        detail: e.to_string(),
    }
}
