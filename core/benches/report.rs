//! Ratio table of our DGSP (on a round 3.1 set and on its FIPS 205 twin)
//! against the reference `dgsp` crate, built from criterion's saved estimates.
//!
//! Include it from a criterion bench target with
//!
//! ```ignore
//! #[path = "report.rs"]
//! mod report;
//! ```
//!
//! and call it after `Criterion::final_summary()`, when every
//! `estimates.json` has been written:
//!
//! ```ignore
//! let table = report::print_ratio_table(&report::criterion_dir(), &["sign", "verify"]);
//! println!("{table}");
//! ```
//!
//! # Where criterion (0.5 and 0.8) writes its files
//!
//! The output root is, in this order:
//! 1. `$CRITERION_HOME` if set;
//! 2. `$CARGO_TARGET_DIR/criterion` if `CARGO_TARGET_DIR` is set;
//! 3. `<target_directory>/criterion`, where `target_directory` comes from
//!    `$CARGO metadata --format-version 1` (the workspace's `target/`);
//! 4. `target/criterion` relative to the current directory.
//!
//! [`criterion_dir`] follows the same rule (step 4 is replaced by the
//! workspace root found from `CARGO_MANIFEST_DIR`, since `cargo bench` runs
//! the bench binary in the package directory, not in the workspace root).
//!
//! Under that root, the benchmark `compare/<op>/<impl>` (`<impl>` one of
//! [`REFERENCE`], [`OURS`], [`OURS_FIPS205`]) registered as
//! `c.benchmark_group("compare").bench_function("<op>/<impl>", ..)` lives in
//! `compare/<op>_<impl>/new/estimates.json`: criterion replaces `/` (and
//! `?"\*<>:|^`) in the function id by `_`. A benchmark registered as
//! `BenchmarkId::new("<op>", "<impl>")` lives in
//! `compare/<op>/<impl>/new/estimates.json` instead. Both are tried, then every
//! `compare/**/new/benchmark.json` is scanned for a matching `full_id` (which
//! also covers ids criterion had to shorten or de-duplicate). The value used is
//! `mean.point_estimate`, in nanoseconds.

use std::fs;
use std::path::{Path, PathBuf};

/// Criterion group holding the comparison benchmarks.
pub const GROUP: &str = "compare";

/// Implementation label of our crate on the round 3.1 set in the benchmark ids.
pub const OURS: &str = "ours";

/// Implementation label of our crate on the FIPS 205 twin of that set in the
/// benchmark ids.
pub const OURS_FIPS205: &str = "ours-fips205";

/// Implementation label of the reference crate in the benchmark ids.
pub const REFERENCE: &str = "reference";

/// The criterion output root, found with the same rule criterion uses (see the
/// module documentation).
pub fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("criterion");
    }
    if let Some(target) = cargo_metadata_target_dir() {
        return target.join("criterion");
    }
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    workspace_root(&manifest_dir)
        .join("target")
        .join("criterion")
}

/// `target_directory` from `$CARGO metadata`, as criterion does it.
fn cargo_metadata_target_dir() -> Option<PathBuf> {
    let cargo = std::env::var_os("CARGO")?;
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let meta: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
    meta.get("target_directory")?.as_str().map(PathBuf::from)
}

/// The outermost ancestor of `start` whose `Cargo.toml` has a `[workspace]`
/// table, or `start` itself.
fn workspace_root(start: &Path) -> PathBuf {
    start
        .ancestors()
        .filter(|dir| {
            fs::read_to_string(dir.join("Cargo.toml"))
                .map(|toml| toml.lines().any(|l| l.trim() == "[workspace]"))
                .unwrap_or(false)
        })
        .last()
        .unwrap_or(start)
        .to_path_buf()
}

/// Criterion's directory-name sanitising of an id component.
fn filename_safe(s: &str) -> String {
    s.replace(
        &['?', '"', '/', '\\', '*', '<', '>', ':', '|', '^'][..],
        "_",
    )
}

/// Reads `mean.point_estimate` (ns) from an `estimates.json`.
pub fn read_mean(estimates: &Path) -> Option<f64> {
    let text = fs::read_to_string(estimates).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json.get("mean")?.get("point_estimate")?.as_f64()
}

/// Subdirectories of `dir` (empty if unreadable).
fn subdirs(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default()
}

/// Finds the benchmark directory whose `new/benchmark.json` has `full_id`,
/// looking one and two levels below `group_dir`.
fn find_by_full_id(group_dir: &Path, full_id: &str) -> Option<PathBuf> {
    let mut candidates = Vec::new();
    for d in subdirs(group_dir) {
        candidates.extend(subdirs(&d));
        candidates.push(d);
    }
    candidates.into_iter().find(|d| {
        fs::read_to_string(d.join("new").join("benchmark.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|j| j.get("full_id")?.as_str().map(|s| s == full_id))
            .unwrap_or(false)
    })
}

/// Mean time in nanoseconds of benchmark `compare/<op>/<imp>` under
/// `criterion_dir`, or `None` if criterion has no estimate for it.
pub fn mean_ns(criterion_dir: &Path, op: &str, imp: &str) -> Option<f64> {
    let group_dir = criterion_dir.join(filename_safe(GROUP));
    let direct = [
        group_dir.join(filename_safe(&format!("{op}/{imp}"))),
        group_dir.join(filename_safe(op)).join(filename_safe(imp)),
    ];
    direct
        .iter()
        .find_map(|d| read_mean(&d.join("new").join("estimates.json")))
        .or_else(|| {
            let d = find_by_full_id(&group_dir, &format!("{GROUP}/{op}/{imp}"))?;
            read_mean(&d.join("new").join("estimates.json"))
        })
}

/// Formats a duration given in nanoseconds with a human unit (ns, µs, ms, s).
pub fn format_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.1} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// Formats a ratio as `0.52×`, keeping two significant digits below 0.01.
pub fn format_ratio(ratio: f64) -> String {
    if ratio != 0.0 && ratio.abs() < 0.01 {
        format!("{ratio:.2e}×")
    } else {
        format!("{ratio:.2}×")
    }
}

/// Builds a Markdown table of the mean times of `compare/<op>/reference`,
/// `compare/<op>/ours` (round 3.1 set) and `compare/<op>/ours-fips205` (its
/// FIPS 205 twin) for each op, read from criterion's output root
/// `criterion_dir` (see [`criterion_dir`]). Columns: operation, the three means,
/// then ours/reference, fips205/reference and fips205/round3 (below 1 means the
/// first named is faster). A missing estimate shows "—". The caller prints the
/// returned string.
pub fn print_ratio_table(criterion_dir: &Path, ops: &[&str]) -> String {
    let mut out = String::new();
    out.push_str(
        "| operation | reference | ours round 3.1 | ours FIPS 205 \
         | ours/reference | fips205/reference | fips205/round3 |\n",
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
    let cell = |v: Option<f64>| v.map(format_ns).unwrap_or_else(|| "—".to_string());
    let ratio = |num: Option<f64>, den: Option<f64>| match (num, den) {
        (Some(n), Some(d)) if d > 0.0 => format_ratio(n / d),
        _ => "—".to_string(),
    };
    for op in ops {
        let reference = mean_ns(criterion_dir, op, REFERENCE);
        let ours = mean_ns(criterion_dir, op, OURS);
        let fips = mean_ns(criterion_dir, op, OURS_FIPS205);
        out.push_str(&format!(
            "| {op} | {} | {} | {} | {} | {} | {} |\n",
            cell(reference),
            cell(ours),
            cell(fips),
            ratio(ours, reference),
            ratio(fips, reference),
            ratio(fips, ours),
        ));
    }
    out
}
