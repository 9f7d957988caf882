//! `dgsp-loadtest report`: one scenario's verdict. It combines the closed-loop goose run
//! (`load.json`), the open-loop probe (`probe.json`), the raw core measured on the same
//! fixtures before and after, and the CPU samples the runner took, holds them to the
//! scenario's thresholds (`thresholds.rs`), and writes `summary.json` and `summary.txt`.
//! It fails when any threshold fails, so a regression fails the run.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::json;

use crate::error::{read, read_json, write, Error, Result};
use crate::load::{LoadSummary, Scenario};
use crate::model::Manifest;
use crate::probe::ProbeSummary;
use crate::raw::RawResult;
use crate::thresholds;

/// Options of `report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The scenario.
    #[arg(long, value_enum)]
    scenario: Scenario,
    /// The fixture directory (for its manifest).
    #[arg(long)]
    fixtures: PathBuf,
    /// The goose run's `load.json`.
    #[arg(long)]
    load: PathBuf,
    /// The probe's `probe.json`.
    #[arg(long)]
    probe: PathBuf,
    /// Raw core measurements (`dgsp-loadtest raw` output) on the gateway's cores; the mean
    /// is used.
    #[arg(long = "raw")]
    raws: Vec<PathBuf>,
    /// The raw core on the whole machine, when the gateway ran pinned to some of its cores.
    #[arg(long)]
    raw_machine: Option<PathBuf>,
    /// Whether the load generator ran on cores of its own.
    #[arg(long)]
    pinned: bool,
    /// How the services and the generator were placed on the cores, in words.
    #[arg(long, default_value = "")]
    pinning: String,
    /// CPU samples taken during the goose run: lines `unix_ms generator_ticks
    /// gateway_ticks registry_ticks machine_busy_ticks`.
    #[arg(long)]
    cpu: Option<PathBuf>,
    /// Clock ticks per second of the CPU samples.
    #[arg(long, default_value_t = 100.0)]
    clk_tck: f64,
    /// The command that produced this.
    #[arg(long, default_value = "")]
    command: String,
    /// Smoke bounds (see `thresholds.rs`).
    #[arg(long)]
    smoke: bool,
    /// Where to write the combined JSON.
    #[arg(long)]
    out_json: PathBuf,
    /// Where to write the human summary (also printed).
    #[arg(long)]
    out_txt: PathBuf,
}

/// CPU use while the gateway was loaded, in cores.
#[derive(Debug, Serialize)]
struct Cpu {
    seconds: f64,
    generator: f64,
    gateway: f64,
    registry: f64,
    /// Every other process on the machine.
    other: f64,
}

/// One threshold and its outcome.
#[derive(Debug, Serialize)]
struct Check {
    what: String,
    passed: bool,
}

/// Runs `report`.
pub fn run(a: Args) -> Result<()> {
    let m: Manifest = read_json(&a.fixtures.join("manifest.json"))?;
    let load: LoadSummary = read_json(&a.load)?;
    let probe: ProbeSummary = crate::probe::load(&a.probe)?;
    let raws: Vec<RawResult> = a.raws.iter().map(|p| read_json(p)).collect::<Result<_>>()?;
    let machine: Option<RawResult> = a.raw_machine.as_deref().map(read_json).transpose()?;
    let cpu = a
        .cpu
        .as_deref()
        .map(|p| cpu(p, a.clk_tck))
        .transpose()?
        .flatten();
    let bounds = thresholds::bounds(a.scenario, a.smoke);
    let mean = |f: fn(&RawResult) -> f64| {
        (!raws.is_empty()).then(|| raws.iter().map(f).sum::<f64>() / raws.len() as f64)
    };
    let (raw_mix, raw_ok) = (mean(|r| r.mix_sig_per_s), mean(|r| r.valid_sig_per_s));

    let mut checks = Vec::new();
    let mut check = |what: String, passed: bool| checks.push(Check { what, passed });
    // Correctness: every answer as its fixture says (failed requests, and goose's
    // error-rate rule below), every goose rule, the mixed rules.
    for f in load.correctness_failures() {
        check(f, false);
    }
    for r in &load.rules {
        check(
            format!("goose rule {} (observed {})", r.rule, r.observed),
            r.passed,
        );
    }
    // The ratio to the raw core.
    let min_ratio = if a.pinned {
        bounds.min_ratio_pinned
    } else {
        bounds.min_ratio_shared
    };
    // Reads verify nothing: their rate has no raw core to be compared with.
    let ratio = raw_mix
        .filter(|_| a.scenario != Scenario::Reads)
        .map(|mix| load.items_per_s / mix);
    if let Some(min) = min_ratio {
        match ratio {
            Some(r) => check(
                format!(
                    "gateway / raw core on the same fixtures: {r:.2} (at least {min}{})",
                    if a.pinned {
                        ", generator on its own cores"
                    } else {
                        ", generator sharing the cores"
                    }
                ),
                r >= min,
            ),
            None => check(
                "no raw core measurement to compare with (--raw)".into(),
                false,
            ),
        }
    }
    // The open-loop tail.
    check(
        format!("open loop: {} answers not 200", probe.not_ok),
        probe.not_ok == 0,
    );
    check(
        format!(
            "open loop p50 {:.2} ms (under {} ms)",
            probe.p50_ms, bounds.probe_p50_ms
        ),
        probe.p50_ms < bounds.probe_p50_ms,
    );
    check(
        format!(
            "open loop p99 {:.2} ms (under {} ms)",
            probe.p99_ms, bounds.probe_p99_ms
        ),
        probe.p99_ms < bounds.probe_p99_ms,
    );
    // The probe must have kept its schedule: an open loop that fell behind measured less.
    let kept = probe.achieved_per_s >= 0.9 * probe.target_per_s;
    check(
        format!(
            "open loop kept its schedule: {:.0}/s answered of {:.0}/s scheduled",
            probe.achieved_per_s, probe.target_per_s
        ),
        kept,
    );

    let mut txt = String::new();
    let _ = writeln!(
        txt,
        "scenario {} · {} · {} members ({} revoked, {} revoked during mixed) · verify fixtures {} ok / {} revoked / {} invalid",
        a.scenario.name(),
        m.params,
        m.members,
        m.revoked_members,
        m.doomed_members,
        m.verify_ok,
        m.verify_revoked,
        m.verify_invalid
    );
    if let (Some(mix), Some(ok)) = (raw_mix, raw_ok) {
        let _ = writeln!(
            txt,
            "raw core, {} threads, same fixtures: mix {mix:.0} sig/s, ok-only {ok:.0} sig/s (mean of {})",
            raws[0].threads,
            raws.len()
        );
    }
    let _ = write!(txt, "closed loop, {}", load.text());
    if let Some(r) = ratio {
        let _ = writeln!(
            txt,
            "  gateway / raw core: {r:.2} against the same mix{}",
            raw_ok.map_or(String::new(), |ok| format!(
                ", {:.2} against ok-only verify",
                load.items_per_s / ok
            ))
        );
        if let Some(mm) = &machine {
            let _ = writeln!(
                txt,
                "  ({}); against the raw core on the whole machine ({} threads): {:.2}",
                a.pinning,
                mm.threads,
                load.items_per_s / mm.mix_sig_per_s
            );
        }
    }
    if let Some(c) = &cpu {
        let total = c.generator + c.gateway + c.registry;
        let _ = writeln!(
            txt,
            "  CPU over {:.1} s under load, in cores: generator {:.2} ({:.0}% of the test's), gateway {:.2}, registry {:.2}, other {:.2}",
            c.seconds,
            c.generator,
            if total > 0.0 { 100.0 * c.generator / total } else { 0.0 },
            c.gateway,
            c.registry,
            c.other
        );
    }
    let _ = writeln!(txt, "{}", probe.text());
    let failures: Vec<String> = checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| c.what.clone())
        .collect();
    let _ = writeln!(
        txt,
        "thresholds: {} of {} held{}",
        checks.len() - failures.len(),
        checks.len(),
        if failures.is_empty() {
            ""
        } else {
            " — FAILED:"
        }
    );
    for f in &failures {
        let _ = writeln!(txt, "  ✗ {f}");
    }

    let doc = json!({
        "scenario": a.scenario.name(),
        "command": a.command,
        "smoke": a.smoke,
        "fixtures": m,
        "raw": {"runs": raws, "mix_sig_per_s": raw_mix, "ok_only_sig_per_s": raw_ok, "whole_machine": machine},
        "pinning": a.pinning,
        "pinned": a.pinned,
        "closed_loop": load,
        "ratio_to_raw": ratio,
        "cpu_cores": cpu,
        "open_loop": probe,
        "bounds": bounds,
        "checks": checks,
        "passed": failures.is_empty(),
    });
    let bytes = serde_json::to_vec_pretty(&doc).map_err(|source| Error::Json {
        path: a.out_json.clone(),
        source,
    })?;
    write(&a.out_json, &bytes)?;
    write(&a.out_txt, txt.as_bytes())?;
    print!("{txt}");
    if failures.is_empty() {
        Ok(())
    } else {
        Err(Error::Thresholds(failures))
    }
}

/// CPU use in cores over the samples where the gateway was busy (above 0.05 cores): the
/// loaded part of the run, without the generator's start-up and wind-down.
fn cpu(path: &Path, clk_tck: f64) -> Result<Option<Cpu>> {
    let text = String::from_utf8_lossy(&read(path)?).into_owned();
    let rows: Vec<[f64; 5]> = text
        .lines()
        .filter_map(|l| {
            let v: Vec<f64> = l
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            v.try_into().ok()
        })
        // A process read as gone (0 ticks) would make a counter go backwards.
        .filter(|r: &[f64; 5]| r[1] > 0.0 && r[2] > 0.0)
        .collect();
    let busy: Vec<usize> = (1..rows.len())
        .filter(|&i| {
            let dt = (rows[i][0] - rows[i - 1][0]) / 1000.0;
            dt > 0.0 && (rows[i][2] - rows[i - 1][2]) / clk_tck / dt > 0.05
        })
        .collect();
    let (Some(&first), Some(&last)) = (busy.first(), busy.last()) else {
        return Ok(None);
    };
    let (a, b) = (rows[first - 1], rows[last]);
    let secs = (b[0] - a[0]) / 1000.0;
    let cores = |k: usize| (b[k] - a[k]) / clk_tck / secs;
    Ok(Some(Cpu {
        seconds: secs,
        generator: cores(1),
        gateway: cores(2),
        registry: cores(3),
        other: (cores(4) - cores(1) - cores(2) - cores(3)).max(0.0),
    }))
}
