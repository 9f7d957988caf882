//! The SVG plots of docs/comparison.md, drawn with `plotters` (SVG backend only, text as SVG
//! `<text>`, no system fonts needed): signature size against verify and sign time, and
//! DGSP's costs against group size and against the number of revoked zetas. Log scales.

use std::path::Path;

use plotters::coord::combinators::LogCoord;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::error::CompareError;
use crate::format::{bytes, seconds};
use crate::results::{Kind, Row, Sweep};

const WIDTH: u32 = 1180;
const HEIGHT: u32 = 640;
/// Width of the chart; the legend takes the rest, on the right.
const CHART_WIDTH: u32 = 860;

/// How a legend entry is drawn.
#[derive(Clone, Copy)]
enum Mark {
    Dot(RGBColor),
    Ring(RGBColor),
    Line(RGBColor),
    Dashed(RGBColor),
}

/// Splits `text` into lines of at most `width` characters, at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let last = lines.last_mut().expect("one line");
        if !last.is_empty() && last.len() + 1 + word.len() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

/// The legend, drawn in its own area right of the chart (it never hides a point).
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    entries: &[(Mark, String)],
) -> Result<(), String> {
    let font = ("sans-serif", 13).into_font().color(&RGBColor(30, 30, 30));
    let mut y: i32 = 60;
    for (mark, text) in entries {
        let mid = y + 7;
        match *mark {
            Mark::Dot(c) => area.draw(&Circle::new((14, mid), 5, c.filled())),
            Mark::Ring(c) => area.draw(&Circle::new((14, mid), 5, c.stroke_width(2))),
            Mark::Line(c) => area.draw(&PathElement::new(
                vec![(2, mid), (26, mid)],
                c.stroke_width(2),
            )),
            Mark::Dashed(c) => area
                .draw(&PathElement::new(
                    vec![(2, mid), (10, mid)],
                    c.stroke_width(2),
                ))
                .and_then(|()| {
                    area.draw(&PathElement::new(
                        vec![(16, mid), (26, mid)],
                        c.stroke_width(2),
                    ))
                }),
        }
        .map_err(|e| e.to_string())?;
        let lines = wrap(text, 40);
        for (i, line) in lines.iter().enumerate() {
            area.draw(&Text::new(
                line.clone(),
                (34, y + 16 * i as i32),
                font.clone(),
            ))
            .map_err(|e| e.to_string())?;
        }
        y += 16 * lines.len() as i32 + 10;
    }
    Ok(())
}

fn err(path: &Path) -> impl Fn(String) -> CompareError + '_ {
    move |reason| CompareError::Plot {
        path: path.to_path_buf(),
        reason,
    }
}

/// Colour and marker per kind.
fn style(kind: Kind) -> (RGBColor, &'static str) {
    match kind {
        Kind::Classical => (RGBColor(0, 0, 0), "classical (Ed25519, ECDSA P-256, BLS)"),
        Kind::ClassicalAnonymous => (RGBColor(230, 120, 0), "classical anonymous (BBS proof)"),
        Kind::Lattice => (RGBColor(0, 140, 70), "ML-DSA (FIPS 204)"),
        Kind::Sphincs => (RGBColor(120, 160, 230), "SPHINCS+ 3.1, raw (PQClean)"),
        Kind::SlhDsa => (RGBColor(0, 70, 200), "SLH-DSA (FIPS 205), raw"),
        Kind::DgspRound3 => (RGBColor(240, 120, 150), "DGSP, SPHINCS+ 3.1 sets"),
        Kind::DgspFips205 => (RGBColor(200, 0, 40), "DGSP, FIPS 205 sets"),
        Kind::Reference => (RGBColor(140, 60, 160), "dgsp 0.1.2 (reference), shake-256f"),
    }
}

/// The label drawn next to a point, if any: named schemes get their name; of the 48
/// hash-based points only two DGSP FIPS 205 sets, the default shape and the largest, are
/// named (the legend and results.md say the rest).
fn point_label(row: &Row) -> Option<String> {
    match row.kind {
        Kind::Lattice => Some(row.variant.clone()),
        Kind::Reference => Some("dgsp 0.1.2".into()),
        Kind::Classical | Kind::ClassicalAnonymous => Some(row.scheme.clone()),
        Kind::DgspFips205
            if matches!(
                row.variant.as_str(),
                "slh-dsa-sha2-128f" | "slh-dsa-shake-256f"
            ) =>
        {
            Some(format!("DGSP {}", row.variant))
        }
        _ => None,
    }
}

fn log_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values
        .filter(|v| *v > 0.0)
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo > hi {
        return 1.0..10.0;
    }
    // Whole decades, with at least a sixth of a decade of room around the extreme points.
    let lo = 10f64.powf((lo.log10() - 0.15).floor());
    let hi = 10f64.powf((hi.log10() + 0.15).ceil());
    lo..hi.max(lo * 10.0)
}

/// Signature size (x) against a time (y), one point per row; `time` picks the time and may
/// add a second, hollow point per row (DGSP's offline part).
fn size_against(
    rows: &[Row],
    path: &Path,
    caption: &str,
    y_desc: &str,
    time: impl Fn(&Row) -> f64,
    second: impl Fn(&Row) -> Option<f64>,
    second_desc: &str,
) -> Result<(), CompareError> {
    let e = err(path);
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(x.to_string()))?;
    let (plot_area, legend_area) = root.split_horizontally(CHART_WIDTH);
    let mut entries = Vec::new();
    let xs = log_range(rows.iter().map(|r| r.sizes.signature as f64));
    let ys = log_range(
        rows.iter()
            .flat_map(|r| [Some(time(r) * 1e-9), second(r).map(|t| t * 1e-9)])
            .flatten(),
    );
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(caption, ("sans-serif", 18))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(xs.log_scale(), ys.log_scale())
        .map_err(|x| e(x.to_string()))?;
    chart
        .configure_mesh()
        .x_desc("signature size (bytes, log scale)")
        .y_desc(y_desc)
        .x_label_formatter(&|v| bytes(*v as usize))
        .y_label_formatter(&|v| seconds(*v))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(|x| e(x.to_string()))?;
    let mut kinds: Vec<Kind> = rows.iter().map(|r| r.kind).collect();
    kinds.sort();
    kinds.dedup();
    for kind in kinds {
        let (color, name) = style(kind);
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r.kind == kind)
            .map(|r| (r.sizes.signature as f64, time(r) * 1e-9))
            .collect();
        chart
            .draw_series(points.iter().map(|p| Circle::new(*p, 5, color.filled())))
            .map_err(|x| e(x.to_string()))?;
        entries.push((Mark::Dot(color), name.to_string()));
        let hollow: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r.kind == kind)
            .filter_map(|r| second(r).map(|t| (r.sizes.signature as f64, t * 1e-9)))
            .collect();
        if !hollow.is_empty() {
            chart
                .draw_series(
                    hollow
                        .iter()
                        .map(|p| Circle::new(*p, 5, color.stroke_width(2))),
                )
                .map_err(|x| e(x.to_string()))?;
            entries.push((Mark::Ring(color), format!("{name}: {second_desc}")));
        }
    }
    let font = ("sans-serif", 12).into_font().color(&RGBColor(40, 40, 40));
    for r in rows {
        if let Some(label) = point_label(r) {
            let at = (r.sizes.signature as f64 * 1.06, time(r) * 1e-9);
            chart
                .draw_series(std::iter::once(Text::new(label, at, font.clone())))
                .map_err(|x| e(x.to_string()))?;
        }
    }
    legend(&legend_area, &entries).map_err(&e)?;
    root.present().map_err(|x| e(x.to_string()))
}

/// Signature size against verify time.
pub fn size_verify(rows: &[Row], path: &Path) -> Result<(), CompareError> {
    size_against(
        rows,
        path,
        "Signature size against verification time (one core)",
        "verify (log scale)",
        |r| r.verify.mean_ns,
        |_| None,
        "",
    )
}

/// Signature size against signing time (DGSP: online, and the offline part hollow).
pub fn size_sign(rows: &[Row], path: &Path) -> Result<(), CompareError> {
    size_against(
        rows,
        path,
        "Signature size against signing time (DGSP: online sign; hollow: offline part)",
        "sign (log scale)",
        |r| r.sign.mean_ns,
        |r| {
            r.extra(crate::schemes::dgsp::op::OFFLINE)
                .map(|e| e.mean_ns)
        },
        "offline (CSR + issue + import)",
    )
}

/// One line per operation of a sweep, against the swept value (points at 0, which a log axis
/// cannot show, are left out); a baseline timed alternately is dashed.
fn sweep_lines<X>(
    sweep: &Sweep,
    ops: &[&str],
    path: &Path,
    caption: &str,
    x_range: X,
    x_desc: &str,
    x_format: &dyn Fn(&f64) -> String,
) -> Result<(), CompareError>
where
    X: AsRangedCoord<Value = f64, CoordDescType = LogCoord<f64>>,
    LogCoord<f64>: ValueFormatter<f64>,
    RangedCoordf64: ValueFormatter<f64>,
{
    let e = err(path);
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(x.to_string()))?;
    let (plot_area, legend_area) = root.split_horizontally(CHART_WIDTH);
    let mut entries = Vec::new();
    let ys = log_range(
        sweep
            .points
            .iter()
            .flat_map(|p| p.ops.iter().map(|o| o.estimate.mean_ns * 1e-9)),
    );
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(caption, ("sans-serif", 18))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(x_range, ys.log_scale())
        .map_err(|x| e(x.to_string()))?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("time per operation (log scale)")
        .x_label_formatter(x_format)
        .y_label_formatter(&|v| seconds(*v))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(|x| e(x.to_string()))?;
    let palette = [
        RGBColor(200, 0, 40),
        RGBColor(0, 70, 200),
        RGBColor(0, 140, 70),
        RGBColor(230, 120, 0),
        RGBColor(140, 60, 160),
        RGBColor(0, 0, 0),
        RGBColor(0, 150, 170),
    ];
    let mut colour = 0;
    for op in ops {
        // A baseline timed alternately is drawn dashed in the colour of the line before it.
        let baseline = op.contains("timed alternately");
        if !baseline {
            colour += 1;
        }
        let color = palette[(colour + palette.len() - 1) % palette.len()];
        let points: Vec<(f64, f64, f64, f64)> = sweep
            .points
            .iter()
            .filter(|p| p.at > 0)
            .filter_map(|p| {
                p.op(op).map(|est| {
                    (
                        p.at as f64,
                        est.mean_ns * 1e-9,
                        est.low_ns.max(est.mean_ns * 1e-3) * 1e-9,
                        est.high_ns * 1e-9,
                    )
                })
            })
            .collect();
        if baseline {
            chart
                .draw_series(DashedLineSeries::new(
                    points.iter().map(|p| (p.0, p.1)),
                    8,
                    5,
                    color.stroke_width(2),
                ))
                .map_err(|x| e(x.to_string()))?;
            entries.push((Mark::Dashed(color), op.to_string()));
        } else {
            chart
                .draw_series(LineSeries::new(
                    points.iter().map(|p| (p.0, p.1)),
                    color.stroke_width(2),
                ))
                .map_err(|x| e(x.to_string()))?;
            entries.push((Mark::Line(color), op.to_string()));
        }
        chart
            .draw_series(
                points
                    .iter()
                    .map(|p| ErrorBar::new_vertical(p.0, p.2, p.1, p.3, color.filled(), 6)),
            )
            .map_err(|x| e(x.to_string()))?;
        chart
            .draw_series(
                points
                    .iter()
                    .map(|p| Circle::new((p.0, p.1), 3, color.filled())),
            )
            .map_err(|x| e(x.to_string()))?;
    }
    legend(&legend_area, &entries).map_err(&e)?;
    root.present().map_err(|x| e(x.to_string()))
}

/// DGSP's costs against group size.
pub fn group_size(sweep: &Sweep, path: &Path) -> Result<(), CompareError> {
    use crate::scale::group::op;
    let hi = sweep.points.iter().map(|p| p.at).max().unwrap_or(2).max(2) as f64;
    sweep_lines(
        sweep,
        &[
            op::VERIFY,
            op::VERIFY_BASE,
            op::OPEN,
            op::ISSUE,
            op::JOIN,
            op::REVOKE,
            op::PLM,
        ],
        path,
        &format!(
            "DGSP {}: cost against group size (error bars: 95 % CI)",
            sweep.params
        ),
        (1.0..hi * 2.0).log_scale().base(2.0),
        "members in the group (log scale)",
        &|v| format!("2^{}", v.log2().round() as i64),
    )
}

/// DGSP's costs against the number of revoked zetas.
pub fn revoked(sweep: &Sweep, path: &Path) -> Result<(), CompareError> {
    use crate::scale::revoked::op;
    let lo = sweep
        .points
        .iter()
        .map(|p| p.at)
        .filter(|&a| a > 0)
        .min()
        .unwrap_or(1) as f64;
    let hi = sweep
        .points
        .iter()
        .map(|p| p.at)
        .max()
        .unwrap_or(10)
        .max(10) as f64;
    sweep_lines(
        sweep,
        &[
            op::VERIFY,
            op::VERIFY_EMPTY,
            op::VERIFY_REVOKED,
            op::PROVE,
            op::CHECK,
        ],
        path,
        &format!(
            "DGSP {}: cost against revoked zetas (error bars: 95 % CI)",
            sweep.params
        ),
        (lo / 2.0..hi * 2.0).log_scale(),
        "revoked zetas on the list (log scale)",
        &|v| format!("10^{}", v.log10().round() as i64),
    )
}
