//! The native signer against the libraries it replaced, in interleaved rounds (every round
//! times each signer in turn, so a noisy machine slows all of them alike): PQClean (round
//! 3.1; its AVX2 code where the CPU has AVX2) and RustCrypto `slh-dsa` (FIPS 205), each on
//! one thread, per signature, hedged/randomized as DGSP signs. Where the CPU has AVX-512F,
//! also the native signer with the wide kernels switched off (four lanes), beside them.
//! Prints, per signer, the fastest and the median round and the median against the faster
//! library's median, and writes the table to `<criterion dir>/signer-table.md`.
//!
//! `cargo bench -p dgsp-core --bench signer`          (sha2-128f and shake-256f)
//! `DGSP_BENCH_ALL=1 cargo bench -p dgsp-core --bench signer`     (the twelve `f` sets)
//! `DGSP_SIGNER_ROUNDS=30 cargo bench -p dgsp-core --bench signer`  (rounds; default 15)
//! `DGSP_SIGNER_SETS=sha2-192f,shake-128s cargo bench -p dgsp-core --bench signer`
//!
//! Rows per set `S` (round 3.1) and its FIPS 205 twin `S'` (the same hash work):
//! `native` (`SigningKey::sign` on `S`), `native, FIPS 205 twin` (on `S'`), `native, four-lane
//! kernels only` (on `S`), `PQClean` (on `S`), `slh-dsa` (on `S'`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use dgsp_core::hazmat;
use dgsp_core::sphincs::{SigningKey, VerifyingKey};
use dgsp_core::ParamSet;

#[path = "report.rs"]
#[allow(dead_code)]
mod report;

const MESSAGE: &[u8] =
    b"a DGSP certificate message of about this length, 100 bytes or so, as the manager signs";

fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` asks the harness; this bench has no named cases
    }
    let sets: Vec<ParamSet> = if std::env::var_os("DGSP_BENCH_ALL").is_some() {
        ParamSet::ROUND3
            .into_iter()
            .filter(|p| p.is_fast())
            .collect()
    } else if let Ok(list) = std::env::var("DGSP_SIGNER_SETS") {
        list.split(',')
            .map(|s| s.trim().parse::<ParamSet>().expect("a parameter set name"))
            .map(ParamSet::round3)
            .collect()
    } else {
        vec![ParamSet::Sha2_128f, ParamSet::Shake256f]
    };
    let rounds: usize = std::env::var("DGSP_SIGNER_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(15);
    let wide = hazmat::cpu_features_used().contains("avx512f");
    let mut t = format!(
        "One thread per signer, {rounds} interleaved rounds; CPU features used: {}\n\n\
         | set | signer | fastest round | median round | median vs the faster library |\n\
         |---|---|---:|---:|---:|\n",
        hazmat::cpu_features_used()
    );
    for &set in &sets {
        let twin = set.twin();
        let (pk, sk) = hazmat::spx_keypair(set);
        let (pk2, sk2) = hazmat::spx_keypair(twin);
        let native = SigningKey::from_bytes(set, &sk).unwrap();
        let native2 = SigningKey::from_bytes(twin, &sk2).unwrap();
        hazmat::wide_kernels_enable(false);
        let narrow = SigningKey::from_bytes(set, &sk).unwrap();
        hazmat::wide_kernels_enable(true);
        let rand = vec![7u8; set.n()];
        let vk = VerifyingKey::new(set, &pk).unwrap();
        let vk2 = VerifyingKey::new(twin, &pk2).unwrap();
        type Signer<'a> = (&'static str, bool, Box<dyn Fn() -> Vec<u8> + 'a>);
        let mut signers: Vec<Signer<'_>> = vec![
            (
                "native signer",
                false,
                Box::new(|| native.sign(MESSAGE, Some(&rand)).unwrap()),
            ),
            (
                "native signer, FIPS 205 twin",
                true,
                Box::new(|| native2.sign(MESSAGE, Some(&rand)).unwrap()),
            ),
            (
                "PQClean (round 3.1)",
                false,
                Box::new(|| hazmat::spx_sign(set, &sk, MESSAGE)),
            ),
            (
                "slh-dsa (FIPS 205 twin)",
                true,
                Box::new(|| hazmat::spx_sign(twin, &sk2, MESSAGE)),
            ),
        ];
        if wide {
            signers.insert(
                2,
                (
                    "native signer, four-lane kernels only",
                    false,
                    Box::new(|| narrow.sign(MESSAGE, Some(&rand)).unwrap()),
                ),
            );
        }
        // Every signer's output verifies before it is timed.
        for (name, fips, sign) in &signers {
            let vk = if *fips { &vk2 } else { &vk };
            assert!(vk.verify(MESSAGE, &sign()), "{set}: {name}");
        }
        let per_round: u32 = if set.n() == 16 && set.is_fast() { 8 } else { 2 };
        let mut times = vec![Vec::with_capacity(rounds); signers.len()];
        for _ in 0..rounds {
            for ((_, _, sign), times) in signers.iter().zip(times.iter_mut()) {
                let start = Instant::now();
                for _ in 0..per_round {
                    black_box(sign());
                }
                times.push(start.elapsed() / per_round);
            }
        }
        let medians: Vec<Duration> = times.iter().map(|v| median(v)).collect();
        let libs = signers
            .iter()
            .zip(&medians)
            .filter(|((name, _, _), _)| !name.starts_with("native"))
            .map(|(_, m)| *m)
            .min()
            .expect("two libraries");
        for ((name, _, _), (v, m)) in signers.iter().zip(times.iter().zip(&medians)) {
            let fastest = v.iter().min().copied().unwrap_or_default();
            t.push_str(&format!(
                "| {set} | {name} | {} | {} | {:.2}x |\n",
                report::format_ns(fastest.as_nanos() as f64),
                report::format_ns(m.as_nanos() as f64),
                m.as_secs_f64() / libs.as_secs_f64()
            ));
        }
    }
    println!("\n{t}");
    let out = report::criterion_dir().join("signer-table.md");
    if let Err(e) =
        std::fs::create_dir_all(report::criterion_dir()).and_then(|()| std::fs::write(&out, &t))
    {
        eprintln!("could not write {}: {e}", out.display());
    }
}
