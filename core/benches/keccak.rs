//! The Keccak-f[1600] kernels of `hashes::keccak_lanes`: `keccak::f1600` on one state, and
//! each four-state kernel the CPU can run, and the eight-state AVX-512F kernel where it can. Criterion's throughput is in permutations
//! (one state permuted once), so ns per permutation per lane = 1000 / (Melem/s).
//!
//! `cargo bench -p dgsp-core --bench keccak`

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use dgsp_core::hazmat::{keccak_f1600_x4_bench, keccak_f1600_x8_bench};

/// Permutations per state per measured call, so call overhead does not count.
const ITERATIONS: u32 = 64;

fn main() {
    let mut c = Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut group = c.benchmark_group("keccak_f1600");

    group.throughput(Throughput::Elements(ITERATIONS.into()));
    group.bench_function("keccak::f1600", |b| {
        let mut state = [0x0123_4567_89ab_cdefu64; 25];
        b.iter(|| {
            for _ in 0..ITERATIONS {
                keccak::f1600(black_box(&mut state));
            }
        })
    });

    group.throughput(Throughput::Elements(u64::from(ITERATIONS) * 4));
    for kernel in ["portable", "avx2", "avx512"] {
        let mut states: [[u64; 25]; 4] =
            core::array::from_fn(|i| core::array::from_fn(|j| (i * 25 + j) as u64));
        if !keccak_f1600_x4_bench(kernel, &mut states, 1) {
            eprintln!("keccak_f1600/x4_{kernel}: not available on this CPU, skipped");
            continue;
        }
        group.bench_function(format!("x4_{kernel}"), |b| {
            b.iter(|| keccak_f1600_x4_bench(black_box(kernel), black_box(&mut states), ITERATIONS))
        });
    }
    group.throughput(Throughput::Elements(u64::from(ITERATIONS) * 8));
    let mut states: [[u64; 25]; 8] =
        core::array::from_fn(|i| core::array::from_fn(|j| (i * 25 + j) as u64));
    if keccak_f1600_x8_bench(&mut states, 1) {
        group.bench_function("x8_avx512", |b| {
            b.iter(|| keccak_f1600_x8_bench(black_box(&mut states), ITERATIONS))
        });
    } else {
        eprintln!("keccak_f1600/x8_avx512: not available on this CPU, skipped");
    }
    group.finish();
    c.final_summary();
}
