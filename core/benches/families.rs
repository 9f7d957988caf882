//! The manager's signature scheme in its two families, twin against twin: key generation,
//! signing (PQClean for round 3.1, `slh-dsa` for FIPS 205) and verification (the native
//! engine for both), measured in interleaved rounds so that a noisy machine slows both
//! sides alike. Prints, per operation, the fastest and the median round of each side and
//! the ratio of the medians; the numbers that chose `dgsp-registry init`'s default
//! (docs/parameter-sets.md).
//!
//!   cargo bench -p dgsp-core --bench families                  # sha2-128f and shake-256f twins
//!   DGSP_FAMILIES_SETS=sha2-128s,shake-128f cargo bench -p dgsp-core --bench families
//!   DGSP_FAMILIES_ROUNDS=30 cargo bench -p dgsp-core --bench families

use std::hint::black_box;
use std::time::{Duration, Instant};

use dgsp_core::hazmat;
use dgsp_core::sphincs::VerifyingKey;
use dgsp_core::ParamSet;

/// One operation's round times for both sides.
struct Op {
    name: &'static str,
    round3: Vec<Duration>,
    fips205: Vec<Duration>,
}

fn per_call(start: Instant, calls: u32) -> Duration {
    start.elapsed() / calls
}

fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[v.len() / 2]
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}

/// Calls per round so that a round of `set` takes a few tens of milliseconds.
fn calls(set: ParamSet, op: &str) -> u32 {
    let slow = !set.is_fast() || set.n() > 16;
    match (op, slow) {
        ("verify", false) => 50,
        ("verify", true) => 10,
        (_, false) => 4,
        (_, true) => 1,
    }
}

fn measure(set: ParamSet, rounds: usize) -> Vec<Op> {
    let twin = set.twin();
    let msg = b"DGSP-v1:cert and then some bytes of a certificate message";
    let keys = [set, twin].map(|p| {
        let (pk, sk) = hazmat::spx_keypair(p);
        let sig = hazmat::spx_sign(p, &sk, msg);
        let vk = VerifyingKey::new(p, &pk).unwrap();
        assert!(vk.verify(msg, &sig), "{p}");
        (p, sk, sig, vk)
    });
    let mut ops = ["keygen", "sign", "verify"].map(|name| Op {
        name,
        round3: Vec::new(),
        fips205: Vec::new(),
    });
    for round in 0..rounds {
        // Alternate which side goes first.
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for side in order {
            let (p, sk, sig, vk) = &keys[side];
            let mut times = [Duration::ZERO; 3];
            let n = calls(*p, "keygen");
            let t = Instant::now();
            for _ in 0..n {
                black_box(hazmat::spx_keypair(*p));
            }
            times[0] = per_call(t, n);
            let n = calls(*p, "sign");
            let t = Instant::now();
            for _ in 0..n {
                black_box(hazmat::spx_sign(*p, sk, black_box(msg)));
            }
            times[1] = per_call(t, n);
            let n = calls(*p, "verify");
            let t = Instant::now();
            for _ in 0..n {
                assert!(vk.verify(black_box(msg), black_box(sig)));
            }
            times[2] = per_call(t, n);
            for (op, time) in ops.iter_mut().zip(times) {
                if side == 0 {
                    op.round3.push(time);
                } else {
                    op.fips205.push(time);
                }
            }
        }
    }
    Vec::from(ops)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` asks the harness; this bench has no named cases
    }
    let sets: Vec<ParamSet> = std::env::var("DGSP_FAMILIES_SETS")
        .unwrap_or_else(|_| "sha2-128f,shake-256f".into())
        .split(',')
        .map(|s| s.trim().parse::<ParamSet>().expect("a parameter set name"))
        .map(ParamSet::round3)
        .collect();
    let rounds: usize = std::env::var("DGSP_FAMILIES_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    println!("CPU kernels: {}", hazmat::cpu_features_used());
    for set in sets {
        let twin = set.twin();
        println!("\n{set} (round 3.1, PQClean signs) against {twin} (FIPS 205, slh-dsa signs); both verified natively; {rounds} interleaved rounds\n");
        println!("| operation | {set} fastest | median | {twin} fastest | median | FIPS 205 / round 3.1 (medians) |");
        println!("|---|---:|---:|---:|---:|---:|");
        for op in measure(set, rounds) {
            let (r, f) = (median(&op.round3), median(&op.fips205));
            println!(
                "| {} | {} | {} | {} | {} | {:.2}× |",
                op.name,
                fmt(*op.round3.iter().min().unwrap()),
                fmt(r),
                fmt(*op.fips205.iter().min().unwrap()),
                fmt(f),
                f.as_secs_f64() / r.as_secs_f64()
            );
        }
    }
}
