//! `dgsp-loadtest plot`: the two SVG plots of a run (docs/benchmarks.md shows the measured
//! ones), drawn with `plotters` (SVG backend, text as SVG `<text>`, no fonts needed) from
//! the scenarios' `summary.json`:
//!
//! - `throughput.svg`: items verified per second through the gateway at saturation beside
//!   the raw core on the same fixtures and cores, per scenario;
//! - `latency.svg`: the open-loop probe's answer times from the scheduled send (p50 to
//!   max), one line per scenario, with the machine's longest stall as a dashed line.

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use serde_json::Value;

use crate::error::{read_json, Error, Result};

/// Options of `plot`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A run directory of `run.sh` (one subdirectory per scenario, each with
    /// `summary.json`).
    #[arg(long)]
    run: PathBuf,
    /// Where to write the SVGs (default: the run directory).
    #[arg(long)]
    out: Option<PathBuf>,
}

const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// One scenario's numbers.
struct Row {
    name: String,
    items_per_s: f64,
    raw_per_s: Option<f64>,
    /// p50, p90, p99, p99.9, max of the open loop, ms.
    tail: [f64; 5],
    longest_stall_ms: Option<f64>,
}

fn rows(run: &Path) -> Result<Vec<Row>> {
    let order = [
        "verify",
        "verify-binary",
        "batch",
        "judge",
        "reads",
        "mixed",
    ];
    let mut out = Vec::new();
    for name in order {
        let p = run.join(name).join("summary.json");
        if !p.exists() {
            continue;
        }
        let v: Value = read_json(&p)?;
        let f = |ptr: &str| v.pointer(ptr).and_then(Value::as_f64);
        let o = |k: &str| f(&format!("/open_loop/{k}")).unwrap_or(f64::NAN);
        out.push(Row {
            name: name.to_owned(),
            items_per_s: f("/closed_loop/items_per_s").unwrap_or(0.0),
            raw_per_s: f("/raw/mix_sig_per_s").filter(|_| name != "reads"),
            tail: [
                o("p50_ms"),
                o("p90_ms"),
                o("p99_ms"),
                o("p999_ms"),
                o("max_ms"),
            ],
            longest_stall_ms: f("/open_loop/stalls/longest_ms"),
        });
    }
    if out.is_empty() {
        return Err(Error::Usage(format!(
            "{}: no scenario directory with a summary.json",
            run.display()
        )));
    }
    Ok(out)
}

fn plot_err(e: impl std::fmt::Display) -> Error {
    Error::Tool {
        what: "plotting".into(),
        detail: e.to_string(),
    }
}

/// Runs `plot`.
pub fn run(a: Args) -> Result<()> {
    let rows = rows(&a.run)?;
    let out = a.out.unwrap_or_else(|| a.run.clone());
    std::fs::create_dir_all(&out).map_err(|source| Error::Io {
        path: out.clone(),
        source,
    })?;
    let stamp = a
        .run
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    throughput(&rows, &out.join("throughput.svg"), &stamp).map_err(plot_err)?;
    latency(&rows, &out.join("latency.svg"), &stamp).map_err(plot_err)?;
    println!(
        "wrote {} and {}",
        out.join("throughput.svg").display(),
        out.join("latency.svg").display()
    );
    Ok(())
}

fn throughput(
    rows: &[Row],
    path: &Path,
    stamp: &str,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (900, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = rows
        .iter()
        .flat_map(|r| [Some(r.items_per_s), r.raw_per_s])
        .flatten()
        .fold(1.0, f64::max)
        * 1.35;
    let n = rows.len();
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Through the gateway at saturation (goose) and the raw core, items/s — {stamp}"
            ),
            ("sans-serif", 15),
        )
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..n as f64, 0f64..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("items (signatures, proofs) per second")
        .draw()?;
    // The scenario names, under the middle of each pair of bars.
    for (i, r) in rows.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        root.draw(&Text::new(
            r.name.clone(),
            (px - 4 * r.name.len() as i32, py + 10),
            ("sans-serif", 13),
        ))?;
    }
    let gw = COLOURS[0];
    let raw = RGBColor(170, 170, 170);
    chart
        .draw_series(rows.iter().enumerate().map(|(i, r)| {
            let x = i as f64;
            Rectangle::new([(x + 0.15, 0.0), (x + 0.48, r.items_per_s)], gw.filled())
        }))?
        .label("through the gateway (HTTP, every answer checked)")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], gw.filled()));
    chart
        .draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
            let x = i as f64;
            r.raw_per_s
                .map(|v| Rectangle::new([(x + 0.52, 0.0), (x + 0.85, v)], raw.filled()))
        }))?
        .label("raw core, same fixtures and cores (no HTTP)")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], raw.filled()));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

fn latency(
    rows: &[Row],
    path: &Path,
    stamp: &str,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (900, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let values = rows
        .iter()
        .flat_map(|r| r.tail)
        .filter(|v| v.is_finite() && *v > 0.0);
    let (lo, hi) = values.fold((f64::MAX, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let stall = rows
        .iter()
        .filter_map(|r| r.longest_stall_ms)
        .fold(0f64, f64::max);
    let (lo, hi) = ((lo.min(stall.max(lo)) * 0.7).max(0.01), hi.max(stall) * 1.5);
    let labels = ["p50", "p90", "p99", "p99.9", "max"];
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Open loop at half the saturation rate (open loop, from the scheduled send) — {stamp}"
            ),
            ("sans-serif", 15),
        )
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.2f64..4.2, (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .x_labels(5)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && (0.0..5.0).contains(&i) {
                labels[i as usize].to_owned()
            } else {
                String::new()
            }
        })
        .y_desc("ms (log scale)")
        .draw()?;
    for (k, r) in rows.iter().enumerate() {
        let c = COLOURS[k % COLOURS.len()];
        let pts: Vec<(f64, f64)> = r
            .tail
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite() && **v > 0.0)
            .map(|(i, v)| (i as f64, *v))
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?
            .label(r.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
        chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
    }
    if stall > 0.0 {
        let grey = RGBColor(90, 90, 90);
        chart
            .draw_series(DashedLineSeries::new(
                vec![(-0.2, stall), (4.2, stall)],
                6,
                4,
                grey.stroke_width(1),
            ))?
            .label(format!(
                "the machine's longest stall, nothing running ({stall:.1} ms)"
            ))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], grey.stroke_width(1))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
