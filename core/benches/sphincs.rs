//! The native SPHINCS+ verifier against PQClean's: single verification, and
//! `verify_batch` of 8 and 64 signatures (reported per signature via criterion's
//! throughput). sha2-128f and shake-256f by default, all twelve sets (single verify only
//! for the extra ones) with `DGSP_BENCH_ALL=1`.
//!
//! `cargo bench -p dgsp-core --bench sphincs`

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use dgsp_core::hazmat;
use dgsp_core::sphincs::VerifyingKey;
use dgsp_core::ParamSet;

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
        .configure_from_args();
    let main_sets = [ParamSet::Sha2_128f, ParamSet::Shake256f];
    let sets: Vec<ParamSet> = if std::env::var_os("DGSP_BENCH_ALL").is_some() {
        ParamSet::ALL.to_vec()
    } else {
        main_sets.to_vec()
    };
    for set in sets {
        let (pk, sk) = hazmat::spx_keypair(set);
        let vk = VerifyingKey::new(set, &pk).unwrap();
        let batch = if main_sets.contains(&set) { 64 } else { 1 };
        let signed: Vec<(Vec<u8>, Vec<u8>)> = (0..batch)
            .map(|i| {
                let m = format!("message {i}").into_bytes();
                let s = hazmat::spx_sign(set, &sk, &m);
                (m, s)
            })
            .collect();
        let (m, s) = &signed[0];
        assert!(vk.verify(m, s) && hazmat::spx_verify_pqclean(set, &pk, m, s));

        let mut g = c.benchmark_group(format!("sphincs/{set}"));
        g.throughput(Throughput::Elements(1));
        g.bench_function("verify_native", |b| b.iter(|| assert!(vk.verify(m, s))));
        g.bench_function("verify_pqclean", |b| {
            b.iter(|| assert!(hazmat::spx_verify_pqclean(set, &pk, m, s)))
        });
        if main_sets.contains(&set) {
            for size in [8usize, 64] {
                let items: Vec<(&[u8], &[u8])> = signed[..size]
                    .iter()
                    .map(|(m, s)| (m.as_slice(), s.as_slice()))
                    .collect();
                g.throughput(Throughput::Elements(size as u64));
                g.bench_with_input(
                    BenchmarkId::new("verify_batch_native", size),
                    &items,
                    |b, items| b.iter(|| assert!(vk.verify_batch(items).iter().all(|v| *v))),
                );
            }
        }
        g.finish();
    }
    c.final_summary();
}
