//! Ours against the published `dgsp` 0.1.2 (in-memory), operation by operation, interleaved
//! in one run on the same machine; prints the ours/reference table and writes it to
//! `<criterion dir>/compare-table-<set>.md`.
//!
//! `cargo bench -p dgsp-core --bench compare` (shake-256f, the reference's default), or
//! `cargo bench -p dgsp-core --bench compare --no-default-features --features sign,baseline-sha2-128f`.

use criterion::Criterion;

#[path = "ours.rs"]
mod ours;
#[path = "reference_dgsp.rs"]
mod reference_dgsp;
#[path = "report.rs"]
mod report;

use reference_dgsp::SET;

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let ours = ours::Fixture::new(SET);
    let reference = reference_dgsp::RefFixture::new();
    {
        let mut group = c.benchmark_group(report::GROUP);
        for op in reference_dgsp::OPS {
            reference_dgsp::configure(&mut group, op);
            let id = |imp| format!("{op}/{imp}");
            reference_dgsp::bench_reference_op(&mut group, &reference, op, &id(report::REFERENCE));
            ours::bench_op(&mut group, &ours, op, &id(report::OURS));
        }
        group.finish();
    }
    c.final_summary();

    let dir = report::criterion_dir();
    let table = report::print_ratio_table(&dir, &reference_dgsp::OPS);
    println!("\n{SET}, ours vs dgsp 0.1.2 (criterion means):\n\n{table}");
    let out = dir.join(format!("compare-table-{SET}.md"));
    if let Err(e) = std::fs::write(&out, &table) {
        eprintln!("could not write {}: {e}", out.display());
    } else {
        println!("written to {}", out.display());
    }
}
