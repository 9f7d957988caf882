//! The native signer against the libraries it replaced, in one run: PQClean (round 3.1; its
//! AVX2 code where the CPU has AVX2) and RustCrypto `slh-dsa` (FIPS 205), each on one
//! thread, per signature, all hedged/randomized as DGSP signs. Where the CPU has AVX-512F,
//! also the native signer with the wide kernels switched off (four lanes), beside them.
//! Prints a table and writes it to `<criterion dir>/signer-table.md`.
//!
//! `cargo bench -p dgsp-core --bench signer`          (sha2-128f and shake-256f)
//! `DGSP_BENCH_ALL=1 cargo bench -p dgsp-core --bench signer`     (the twelve `f` sets)
//!
//! Rows per set `S` (round 3.1) and its FIPS 205 twin `S'` (the same hash work):
//! `native` (`SigningKey::sign` on `S`), `native-fips205` (on `S'`), `native-x4` (on `S`,
//! four-lane kernels), `pqclean` (on `S`), `slh-dsa` (on `S'`). The ratio column is each row
//! against the faster library.

use std::time::Duration;

use criterion::Criterion;
use dgsp_core::hazmat;
use dgsp_core::sphincs::{SigningKey, VerifyingKey};
use dgsp_core::ParamSet;

#[path = "report.rs"]
#[allow(dead_code)]
mod report;

const MESSAGE: &[u8] =
    b"a DGSP certificate message of about this length, 100 bytes or so, as the manager signs";

const ROWS: [(&str, &str); 5] = [
    ("native", "native signer"),
    ("native-fips205", "native signer, FIPS 205 twin"),
    ("native-x4", "native signer, four-lane kernels only"),
    ("pqclean", "PQClean (round 3.1)"),
    ("slh-dsa", "slh-dsa (FIPS 205 twin)"),
];

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4))
        .sample_size(10)
        .configure_from_args();
    let sets: Vec<ParamSet> = if std::env::var_os("DGSP_BENCH_ALL").is_some() {
        ParamSet::ROUND3
            .into_iter()
            .filter(|p| p.is_fast())
            .collect()
    } else {
        vec![ParamSet::Sha2_128f, ParamSet::Shake256f]
    };
    let wide = hazmat::cpu_features_used().contains("avx512f");
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
        // Every signer's output verifies before it is timed.
        let vk = VerifyingKey::new(set, &pk).unwrap();
        let vk2 = VerifyingKey::new(twin, &pk2).unwrap();
        for s in [
            native.sign(MESSAGE, Some(&rand)).unwrap(),
            narrow.sign(MESSAGE, Some(&rand)).unwrap(),
            hazmat::spx_sign(set, &sk, MESSAGE),
        ] {
            assert!(vk.verify(MESSAGE, &s), "{set}");
        }
        for s in [
            native2.sign(MESSAGE, Some(&rand)).unwrap(),
            hazmat::spx_sign(twin, &sk2, MESSAGE),
        ] {
            assert!(vk2.verify(MESSAGE, &s), "{twin}");
        }

        let mut g = c.benchmark_group(format!("signer/{set}"));
        g.bench_function("native", |b| {
            b.iter(|| native.sign(MESSAGE, Some(&rand)).unwrap())
        });
        g.bench_function("native-fips205", |b| {
            b.iter(|| native2.sign(MESSAGE, Some(&rand)).unwrap())
        });
        if wide {
            g.bench_function("native-x4", |b| {
                b.iter(|| narrow.sign(MESSAGE, Some(&rand)).unwrap())
            });
        }
        g.bench_function("pqclean", |b| {
            b.iter(|| hazmat::spx_sign(set, &sk, MESSAGE))
        });
        g.bench_function("slh-dsa", |b| {
            b.iter(|| hazmat::spx_sign(twin, &sk2, MESSAGE))
        });
        g.finish();
    }
    c.final_summary();
    print_table(&sets, wide);
}

/// Prints this run's rows per set and writes them to `<criterion dir>/signer-table.md`.
fn print_table(sets: &[ParamSet], wide: bool) {
    let mut t = format!(
        "One thread per signer; CPU features used: {}\n\n\
         | set | signer | per signature | vs the faster library |\n|---|---|---:|---:|\n",
        hazmat::cpu_features_used()
    );
    for set in sets {
        let dir = report::criterion_dir().join(format!("signer_{set}"));
        let mean = |row: &str| report::read_mean(&dir.join(row).join("new/estimates.json"));
        let Some(fastest) = [mean("pqclean"), mean("slh-dsa")]
            .into_iter()
            .flatten()
            .reduce(f64::min)
        else {
            eprintln!("no criterion estimates under {}", dir.display());
            continue;
        };
        for (row, label) in ROWS {
            if row == "native-x4" && !wide {
                continue;
            }
            let Some(ns) = mean(row) else { continue };
            t.push_str(&format!(
                "| {set} | {label} | {} | {:.2}x |\n",
                report::format_ns(ns),
                ns / fastest
            ));
        }
    }
    println!("\n{t}");
    let out = report::criterion_dir().join("signer-table.md");
    if let Err(e) = std::fs::write(&out, &t) {
        eprintln!("could not write {}: {e}", out.display());
    }
}
