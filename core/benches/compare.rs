//! Ours against the published `dgsp` 0.1.2 (in-memory), operation by operation, interleaved
//! in one run on the same machine. Ours runs twice: on the reference's SPHINCS+ round 3.1 set
//! (`SET`) and on its FIPS 205 SLH-DSA twin (`SET.twin()`), so every operation is measured
//! as `<op>/reference`, `<op>/ours` and `<op>/ours-fips205` back to back. Prints the table
//! of the three means with the ratios ours/reference, fips205/reference and fips205/round3
//! and writes it to `<criterion dir>/compare-table-<set>.md` (`<set>` being the round 3.1 set).
//!
//! `cargo bench -p dgsp-core --bench compare` (shake-256f and slh-dsa-shake-256f, the
//! reference's default), or
//! `cargo bench -p dgsp-core --bench compare --no-default-features --features sign,baseline-sha2-128f`
//! (sha2-128f and slh-dsa-sha2-128f).

use criterion::Criterion;

#[path = "ours.rs"]
mod ours;
#[path = "reference_dgsp.rs"]
mod reference_dgsp;
#[path = "report.rs"]
mod report;

use reference_dgsp::SET;

fn main() {
    let twin = SET.twin();
    let mut c = Criterion::default().configure_from_args();
    let reference = reference_dgsp::RefFixture::new();
    let ours = ours::Fixture::new(SET);
    let ours_fips205 = ours::Fixture::new(twin);
    {
        let mut group = c.benchmark_group(report::GROUP);
        for op in reference_dgsp::OPS {
            reference_dgsp::configure(&mut group, op);
            let id = |imp| format!("{op}/{imp}");
            reference_dgsp::bench_reference_op(&mut group, &reference, op, &id(report::REFERENCE));
            ours::bench_op(&mut group, &ours, op, &id(report::OURS));
            ours::bench_op(&mut group, &ours_fips205, op, &id(report::OURS_FIPS205));
        }
        group.finish();
    }
    c.final_summary();

    let dir = report::criterion_dir();
    let table = format!(
        "{SET} (round 3.1) and {twin} (FIPS 205), ours vs dgsp 0.1.2 {SET} (criterion means)\n\n\
         Ratios: ours/reference = ours on {SET} / reference, fips205/reference = ours on {twin} / \
         reference, fips205/round3 = ours on {twin} / ours on {SET}; < 1 means the first is faster.\n\n{}",
        report::print_ratio_table(&dir, &reference_dgsp::OPS)
    );
    println!("\n{table}");
    let out = dir.join(format!("compare-table-{SET}.md"));
    if let Err(e) = std::fs::write(&out, &table) {
        eprintln!("could not write {}: {e}", out.display());
    } else {
        println!("written to {}", out.display());
    }
}
