//! One run: every contender, the sweeps, the member's side, then the files.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::baseline::Baseline;
use crate::cli::Options;
use crate::device;
use crate::error::CompareError;
use crate::format::{estimate, utc_date};
use crate::machine::Machine;
use crate::measure::Budget;
use crate::report::{self, Results};
use crate::scale;
use crate::schemes;

/// The workspace root (the directory above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The command that reproduces this run, for the report.
fn command(release: bool) -> String {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let base = if release {
        "cargo bench -p dgsp-comparison --bench compare"
    } else {
        "cargo bench -p dgsp-comparison --bench compare --profile dev"
    };
    if args.is_empty() {
        base.into()
    } else {
        format!("{base} -- {}", args.join(" "))
    }
}

fn sampling(b: &Budget) -> String {
    format!(
        "per measurement {:.1} s warm-up (at least one call), about {:.1} s timed in {}-{} samples \
         (each the mean of consecutive calls, inputs prepared untimed), at most {:.0} s with setup; \
         slow operations get the minimum number of one-call samples; mean ± 95 % Student-t interval",
        b.warm_up.as_secs_f64(),
        b.target.as_secs_f64(),
        b.min_samples,
        b.max_samples,
        b.wall_cap.as_secs_f64(),
    )
}

/// Runs everything `options` asks for and writes the results; returns the files written.
/// `baseline` is the published `dgsp` 0.1.2, which only the bench target links.
pub fn run(
    options: &Options,
    baseline: Option<&dyn Baseline>,
) -> Result<Vec<PathBuf>, CompareError> {
    let started = Instant::now();
    let machine = Machine::detect();
    eprintln!("dgsp-compare: {}", machine.summary());
    eprintln!("dgsp-core hash kernels: {}", machine.dgsp_kernels);
    let release = !cfg!(debug_assertions);
    if !options.smoke && !release && !options.allow_debug {
        return Err(CompareError::NotRelease);
    }
    let budget = if options.smoke {
        Budget::SMOKE
    } else {
        Budget::FULL
    };
    let sets = options.parameter_sets().map_err(CompareError::Usage)?;
    let root = workspace_root();

    let contenders = schemes::contenders(&sets, baseline.map(|b| b.scheme()));
    let mut rows = Vec::with_capacity(contenders.len());
    for (i, c) in contenders.iter().enumerate() {
        let t = Instant::now();
        let row = c.measure(&budget)?;
        eprintln!(
            "[{:>2}/{}] {:<32} keygen {:<18} sign {:<18} verify {:<18} ({:.1} s)",
            i + 1,
            contenders.len(),
            c.label(),
            estimate(&row.keygen),
            estimate(&row.sign),
            estimate(&row.verify),
            t.elapsed().as_secs_f64()
        );
        rows.push(row);
    }

    let (group, revoked) = if options.skip_sweeps {
        (None, None)
    } else {
        let (sizes, counts): (&[u64], &[u64]) = if options.smoke {
            (&scale::SMOKE_GROUP_SIZES, &scale::SMOKE_REVOKED)
        } else {
            (&scale::FULL_GROUP_SIZES, &scale::FULL_REVOKED)
        };
        let t = Instant::now();
        let group = scale::group::sweep(scale::SET, sizes, &budget)?;
        eprintln!("group-size sweep: {:.1} s", t.elapsed().as_secs_f64());
        let t = Instant::now();
        let revoked = scale::revoked::sweep(scale::SET, counts, &budget)?;
        eprintln!("revoked-list sweep: {:.1} s", t.elapsed().as_secs_f64());
        (Some(group), Some(revoked))
    };

    let t = Instant::now();
    let build = !(options.smoke || options.skip_build);
    let device = device::measure(&sets, build.then_some(root.as_path()), baseline)?;
    eprintln!("member's side: {:.1} s", t.elapsed().as_secs_f64());

    let results = Results {
        machine,
        mode: if options.smoke { "smoke" } else { "full" }.into(),
        command: command(release),
        date: utc_date(),
        seconds: started.elapsed().as_secs_f64(),
        sampling: sampling(&budget),
        rows,
        group,
        revoked,
        device: Some(device),
    };

    let out = match (&options.out, options.smoke) {
        (Some(dir), _) => dir.clone(),
        (None, true) => {
            // One fixed directory, emptied first: repeated smoke runs do not pile up.
            let dir = std::env::temp_dir().join("dgsp-compare-smoke");
            if dir.exists() {
                std::fs::remove_dir_all(&dir).map_err(CompareError::io(&dir))?;
            }
            dir
        }
        (None, false) => root.join("docs/comparison"),
    };
    let mut written = report::write_dir(&results, &out)?;
    let doc = match (&options.doc, options.smoke) {
        (Some(d), _) => Some(d.clone()),
        (None, false) => Some(root.join("docs/comparison.md")),
        (None, true) => {
            // Smoke: check the real document's blocks on a copy.
            let real = root.join("docs/comparison.md");
            let copy = out.join("comparison.md");
            std::fs::copy(&real, &copy).map_err(CompareError::io(&real))?;
            Some(copy)
        }
    };
    if let Some(doc) = doc {
        report::update_doc(&results, &doc)?;
        written.push(doc);
    }
    eprintln!("done in {:.1} s", started.elapsed().as_secs_f64());
    Ok(written)
}
