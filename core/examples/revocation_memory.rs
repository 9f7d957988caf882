//! Peak memory of applying a revocation to a large revoked set, as a gateway applies it:
//! the set being served stays alive while the next one is built from a clone of it plus
//! the new zetas, then the next one replaces it.
//!
//! ```text
//! cargo run --release -p dgsp-core --example revocation_memory -- 10000000 20
//! ```
//!
//! Arguments: zetas already revoked (default 10^6), zetas the new revocation adds (default
//! 20: one member's certificates). Prints the process's resident set (VmRSS) and its peak
//! (VmHWM, from `/proc/self/status`, Linux only) after building the set and during the apply
//! (the peak is reset before it through `/proc/self/clear_refs`).
//! `docs/benchmarks.md` has the numbers before and after clones became copy-on-write.

use std::time::Instant;

use dgsp_core::revocation::RevocationSet;
use dgsp_core::Zeta;
use rand_chacha::rand_core::{RngCore, SeedableRng};

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn random_zetas(rng: &mut rand_chacha::ChaCha20Rng, n: usize) -> Vec<Zeta> {
    (0..n)
        .map(|_| {
            let mut z = [0u8; 16];
            rng.fill_bytes(&mut z);
            Zeta(z)
        })
        .collect()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let revoked: usize = args
        .next()
        .map_or(1_000_000, |a| a.parse().expect("a count"));
    let adding: usize = args.next().map_or(20, |a| a.parse().expect("a count"));
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);

    let served = {
        let zetas = random_zetas(&mut rng, revoked);
        RevocationSet::from_zetas(zetas)
    };
    let (rss0, peak0) = (status_kib("VmRSS:"), status_kib("VmHWM:"));
    println!(
        "set of {revoked} zetas: {:.1} MiB by its own count; process RSS {:.1} MiB, peak so far {:.1} MiB",
        served.memory_bytes() as f64 / (1 << 20) as f64,
        mib(rss0),
        mib(peak0)
    );

    let new = random_zetas(&mut rng, adding);
    // Resets the peak to the current RSS (Linux 4.0+), so the peak below is the apply's.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let started = Instant::now();
    // What the gateway's apply does: clone the served set, insert, hash; both alive.
    let mut next = served.clone();
    next.insert(&new);
    let root = next.root();
    let elapsed = started.elapsed();
    let rss1 = status_kib("VmRSS:");
    drop(served);
    let peak1 = status_kib("VmHWM:");
    println!(
        "apply {adding} zetas: {:.1} ms; RSS while both sets live {:.1} MiB (+{:.1}); peak {:.1} MiB (+{:.1} over the served set); root {}",
        elapsed.as_secs_f64() * 1e3,
        mib(rss1),
        mib(rss1.saturating_sub(rss0)),
        mib(peak1),
        mib(peak1.saturating_sub(if reset { rss0 } else { peak0 })),
        hex::encode(&root[..8]),
    );
    assert_eq!(
        next.len(),
        (revoked + adding) as u64,
        "random zetas collided"
    );
}
