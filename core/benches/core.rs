//! Every operation of the core, per parameter set: shake-256f and sha2-128f by default,
//! all 24 sets with `DGSP_BENCH_ALL=1`.
//!
//! `cargo bench -p dgsp-core --bench core`

use std::time::Duration;

use criterion::{Criterion, SamplingMode};
use dgsp_core::ParamSet;

#[path = "ours.rs"]
mod ours;

const OPS: [&str; 15] = [
    "keygen",
    "join",
    "csr_1",
    "csr_8",
    "issue_1",
    "issue_8",
    "import",
    "sign",
    "sign_from_seed",
    "wallet_sign",
    "verify",
    "open",
    "judge",
    "revoke",
    "revoke_100k",
];

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let sets: Vec<ParamSet> = if std::env::var_os("DGSP_BENCH_ALL").is_some() {
        ParamSet::ALL.to_vec()
    } else {
        vec![ParamSet::Shake256f, ParamSet::Sha2_128f]
    };
    for params in sets {
        let fx = ours::Fixture::new(params);
        let mut group = c.benchmark_group(format!("core/{params}"));
        for op in OPS {
            group.sample_size(10);
            // Slow operations (SPHINCS+ signing, s sets, 100k revocations): exactly 10 runs.
            let slow = op.starts_with("issue") || op == "keygen" || op == "revoke_100k";
            group.sampling_mode(if slow {
                SamplingMode::Flat
            } else {
                SamplingMode::Auto
            });
            group.warm_up_time(Duration::from_millis(500));
            group.measurement_time(Duration::from_secs(if slow { 4 } else { 2 }));
            ours::bench_op(&mut group, &fx, op, op);
        }
        group.finish();
    }
    c.final_summary();
}
