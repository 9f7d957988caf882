//! Revocation commitment: bulk build, insert-to-new-root latency, proof generation and
//! verification, at 10^5 and 10^6 revoked zetas (and 10^7 with `DGSP_BENCH_BIG=1`).
//!
//!   cargo bench -p dgsp-core --bench revocation
//!   DGSP_BENCH_BIG=1 cargo bench -p dgsp-core --bench revocation
//!
//! Also prints the set's heap size and the process's resident memory after each build.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, SamplingMode};
use dgsp_core::revocation::{verify_proof, RevocationSet};
use dgsp_core::Zeta;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

fn sizes() -> Vec<usize> {
    let mut s = vec![100_000, 1_000_000];
    if std::env::var("DGSP_BENCH_BIG").is_ok_and(|v| v == "1") {
        s.push(10_000_000);
    }
    s
}

fn random_zetas(rng: &mut ChaCha20Rng, n: usize) -> Vec<Zeta> {
    let mut bytes = vec![0u8; 16 * n];
    rng.fill_bytes(&mut bytes);
    bytes
        .chunks_exact(16)
        .map(|c| Zeta(c.try_into().expect("16-byte chunk")))
        .collect()
}

fn sorted_zetas(seed: u64, n: usize) -> Vec<Zeta> {
    let mut z = random_zetas(&mut ChaCha20Rng::seed_from_u64(seed), n);
    z.sort_unstable();
    z.dedup();
    z
}

/// Resident set size of this process (Linux), in MiB.
fn rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

fn build(c: &mut Criterion) {
    let mut g = c.benchmark_group("revocation/build");
    g.sample_size(10).sampling_mode(SamplingMode::Flat);
    for n in sizes() {
        let zetas = sorted_zetas(n as u64, n);
        g.bench_with_input(BenchmarkId::from_parameter(n), &zetas, |b, z| {
            b.iter(|| RevocationSet::from_sorted(z).expect("sorted"))
        });
    }
    g.finish();
}

fn insert_and_prove(c: &mut Criterion) {
    for n in sizes() {
        let before = rss_mib();
        let t = Instant::now();
        let base = RevocationSet::from_sorted(&sorted_zetas(n as u64, n)).expect("sorted");
        let built_in = t.elapsed();
        println!(
            "revocation set of {n}: built in {built_in:.2?}, heap {:.1} MiB ({:.1} B/zeta), \
             process RSS {:.0} MiB -> {:.0} MiB",
            base.memory_bytes() as f64 / 1048576.0,
            base.memory_bytes() as f64 / n as f64,
            before.unwrap_or(0.0),
            rss_mib().unwrap_or(0.0),
        );

        let mut g = c.benchmark_group(format!("revocation/insert_to_root/{n}"));
        g.sample_size(10).sampling_mode(SamplingMode::Flat);
        g.measurement_time(Duration::from_secs(3));
        let mut rng = ChaCha20Rng::seed_from_u64(1000 + n as u64);
        let mut set = base.clone();
        for k in [1usize, 10, 100] {
            g.bench_function(BenchmarkId::from_parameter(k), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        // Keep the set within 1% of its nominal size.
                        if set.len() > base.len() + base.len() / 100 {
                            set = base.clone();
                        }
                        let new = random_zetas(&mut rng, k);
                        let t = Instant::now();
                        set.insert(&new);
                        black_box(set.root());
                        total += t.elapsed();
                    }
                    total
                })
            });
        }
        g.finish();
        drop(set);

        let mut g = c.benchmark_group(format!("revocation/proof/{n}"));
        g.sample_size(10);
        g.measurement_time(Duration::from_secs(2));
        let (root, count) = (base.root(), base.len());
        let revoked: Vec<Zeta> = base.iter().step_by(n / 1000).copied().collect();
        let absent = random_zetas(&mut rng, 1000);
        let mut i = 0usize;
        let mut next = move |v: &[Zeta]| {
            i = i.wrapping_add(1);
            v[i % v.len()]
        };
        g.bench_function("prove_inclusion", |b| {
            b.iter_batched(|| next(&revoked), |z| base.prove(&z), BatchSize::SmallInput)
        });
        g.bench_function("prove_non_membership", |b| {
            b.iter_batched(|| next(&absent), |z| base.prove(&z), BatchSize::SmallInput)
        });
        let inc: Vec<_> = revoked.iter().map(|z| (*z, base.prove(z))).collect();
        let non: Vec<_> = absent.iter().map(|z| (*z, base.prove(z))).collect();
        let mut j = 0usize;
        g.bench_function("verify_inclusion", |b| {
            b.iter(|| {
                j = j.wrapping_add(1);
                let (z, p) = &inc[j % inc.len()];
                verify_proof(&root, count, z, p).expect("valid")
            })
        });
        g.bench_function("verify_non_membership", |b| {
            b.iter(|| {
                j = j.wrapping_add(1);
                let (z, p) = &non[j % non.len()];
                verify_proof(&root, count, z, p).expect("valid")
            })
        });
        let (inc_len, non_len) = (inc[0].1.to_bytes().len(), non[0].1.to_bytes().len());
        println!("proof sizes at {n}: inclusion {inc_len} B, non-membership {non_len} B");
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1));
    targets = build, insert_and_prove
}
criterion_main!(benches);
