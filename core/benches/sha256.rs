//! SHA-256 compressions on dependent chains (each lane's output state is its next input, as
//! in a WOTS+ chain): `sha2::compress256` one lane at a time, the four-lane SHA-NI kernel the
//! verifier uses (`hashes::lanes`), and the sixteen-lane AVX-512F kernel
//! (`hashes::sha256_x16`), also in its chain form (`chain_steps_x16`: the blocks kept as
//! message words between steps, as the SHA-2 verifier's WOTS+ chains run). Criterion's throughput is in compressions, so ns per block per
//! lane = 1000 / (Melem/s).
//!
//! `cargo bench -p dgsp-core --bench sha256`

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use dgsp_core::hazmat::sha256_lanes_bench;

/// Compressions per lane per measured call, so call overhead does not count.
const ITERATIONS: u32 = 64;

fn main() {
    let mut c = Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut group = c.benchmark_group("sha256_compress");
    let block: [u8; 64] = core::array::from_fn(|i| i as u8);
    for (kernel, lanes) in [
        ("compress256", 1usize),
        ("sha-ni-x4", 4),
        ("avx512-x16", 16),
        ("avx512-x16-chain", 16),
    ] {
        let mut states: Vec<[u32; 8]> = (0..lanes)
            .map(|i| core::array::from_fn(|j| (i * 8 + j) as u32))
            .collect();
        if !sha256_lanes_bench(kernel, &mut states, &block, 1) {
            eprintln!("sha256_compress/{kernel}: not available on this CPU, skipped");
            continue;
        }
        group.throughput(Throughput::Elements(u64::from(ITERATIONS) * lanes as u64));
        group.bench_function(kernel, |b| {
            b.iter(|| sha256_lanes_bench(kernel, black_box(&mut states), &block, ITERATIONS))
        });
    }
    group.finish();
    c.final_summary();
}
