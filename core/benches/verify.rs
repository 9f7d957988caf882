//! Group-signature verification, ours against the published `dgsp` 0.1.2 and against our own
//! verify with PQClean doing the SPHINCS+ part (what ours was before the native verifier),
//! in one run: single verifies on one thread, batches of 8 and 64, and all cores.
//! Prints a table (per signature, and signatures per second) and writes it to
//! `<criterion dir>/verify-table-<set>.md`.
//!
//! `cargo bench -p dgsp-core --bench verify`                                   (shake-256f)
//! `cargo bench -p dgsp-core --bench verify --no-default-features --features sign,baseline-sha2-128f`
//!
//! Rows (all verify the same kind of signature on the same message length):
//! - `reference`: `dgsp::DGSP::verify` (its revoked-list check, WOTS+, PQClean SPHINCS+);
//! - `ours-pqclean`: our revoked-list check and WOTS+, then PQClean's SPHINCS+ verify;
//! - `ours`: `ManagerPublicKey::verify` (native SPHINCS+ verifier);
//! - `ours-batch-8` / `ours-batch-64`: `ManagerPublicKey::verify_batch`, per signature;
//! - `ours-keccak-x4`, `ours-keccak-x4-batch-64`: where the CPU has AVX-512F, the same key
//!   decoded with the wide kernels switched off (`hazmat::wide_kernels_enable(false)`: four
//!   Keccak-f states instead of eight, four SHA-NI lanes instead of sixteen AVX-512F ones):
//!   the four-lane kernels beside them in one run;
//! - `*-all-cores`: every core verifying (ours: one batch of 64 per core per round).

use std::time::Duration;

use criterion::{Criterion, Throughput};
use dgsp_core::{
    hazmat, HashFamily, InMemoryPlm, InMemoryRevokedList, Manager, ManagerPublicKey, MemberKey,
    Signature,
};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

#[path = "ours.rs"]
#[allow(dead_code)]
mod ours;
#[path = "reference_dgsp.rs"]
#[allow(dead_code)]
mod reference_dgsp;
#[path = "report.rs"]
#[allow(dead_code)]
mod report;

use ours::MESSAGE;
use reference_dgsp::SET;

/// Distinct signatures in the batches.
const BATCH: usize = 64;

/// Single verifies per thread per iteration in the all-cores rows.
const PER_THREAD: usize = 16;

/// Our group with `BATCH` signatures on [`MESSAGE`], each under its own certificate.
struct Group {
    manager: Manager,
    revoked: InMemoryRevokedList,
    sigs: Vec<Signature>,
}

fn group() -> Group {
    let mut rng = ChaCha20Rng::seed_from_u64(12);
    let plm = InMemoryPlm::new();
    let manager = Manager::generate(SET, &mut rng);
    let (id, cid_star) = manager.join(&plm, "bench").unwrap();
    let member = MemberKey::generate(SET, id, cid_star, &mut rng);
    let items = member.csr(BATCH, &mut rng);
    let pks: Vec<_> = items.iter().map(|i| *i.wots_pk()).collect();
    let certs = manager.issue(&plm, id, member.cid_star(), &pks).unwrap();
    let sigs = items
        .into_iter()
        .zip(&certs)
        .map(|(item, cert)| {
            member
                .import(manager.public_key(), item, cert)
                .unwrap()
                .sign(MESSAGE)
        })
        .collect();
    Group {
        manager,
        revoked: InMemoryRevokedList::new(),
        sigs,
    }
}

/// Our verify with PQClean for the SPHINCS+ part: the revoked-list check, the WOTS+ key
/// from the signature, then PQClean on the certificate message.
fn verify_with_pqclean(g: &Group, sig: &Signature) -> bool {
    use dgsp_core::RevokedList;
    let pk = g.manager.public_key();
    if g.revoked.contains(sig.zeta()).unwrap() {
        return false;
    }
    let d = sig.message_digest(MESSAGE);
    let Ok(wots_pk) =
        hazmat::wots_public_key_from_signature(SET, sig.rho(), sig.wots_signature(), &d)
    else {
        return false;
    };
    let msg = hazmat::certificate_message(&wots_pk, sig.zeta(), sig.tau());
    hazmat::spx_verify_pqclean(SET, pk.spx_bytes(), &msg, sig.spx_signature())
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs `f` on every core at once, `PER_THREAD` times each.
fn on_all_cores(per_thread: usize, f: &(dyn Fn() + Sync)) {
    std::thread::scope(|s| {
        for _ in 0..threads() {
            s.spawn(|| {
                for _ in 0..per_thread {
                    f();
                }
            });
        }
    });
}

const ROWS: [(&str, &str); 10] = [
    ("reference", "dgsp 0.1.2, one thread"),
    ("ours-pqclean", "ours with PQClean SPHINCS+, one thread"),
    ("ours", "ours (native), one thread"),
    ("ours-batch-8", "ours, batch of 8, one thread"),
    ("ours-batch-64", "ours, batch of 64, one thread"),
    ("ours-keccak-x4", "ours, four-lane kernels only, one thread"),
    (
        "ours-keccak-x4-batch-64",
        "ours, four-lane kernels only, batch of 64, one thread",
    ),
    ("reference-all-cores", "dgsp 0.1.2, all cores"),
    (
        "ours-all-cores",
        "ours (native), single verifies, all cores",
    ),
    ("ours-batch-64-all-cores", "ours, batches of 64, all cores"),
];

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(10)
        .configure_from_args();
    let g = group();
    let reference = reference_dgsp::RefFixture::new();
    let pk = g.manager.public_key();
    for sig in &g.sigs {
        pk.verify(MESSAGE, sig, &g.revoked).unwrap();
        assert!(verify_with_pqclean(&g, sig));
    }
    let items: Vec<(&[u8], &Signature)> = g.sigs.iter().map(|s| (MESSAGE, s)).collect();
    let cores = threads();
    // The same key with the four-lane kernels only, where a wide one is in use (a CPU with
    // AVX-512F: eight Keccak-f states for SHAKE, sixteen SHA-256 lanes for SHA-2).
    let wide = match SET.hash_family() {
        HashFamily::Shake => "Keccak-f x8: avx512f",
        HashFamily::Sha2 => "SHA-256 x16: avx512f",
    };
    let x4 = hazmat::cpu_features_used().contains(wide).then(|| {
        hazmat::wide_kernels_enable(false);
        let key = ManagerPublicKey::from_bytes(&pk.to_bytes()).unwrap();
        hazmat::wide_kernels_enable(true);
        for sig in &g.sigs {
            key.verify(MESSAGE, sig, &g.revoked).unwrap();
        }
        key
    });
    {
        let mut b = c.benchmark_group("verify");
        b.throughput(Throughput::Elements(1));
        b.bench_function("reference", |b| b.iter(|| reference.verify()));
        b.bench_function("ours-pqclean", |b| {
            b.iter(|| assert!(verify_with_pqclean(&g, &g.sigs[0])))
        });
        b.bench_function("ours", |b| {
            b.iter(|| pk.verify(MESSAGE, &g.sigs[0], &g.revoked).unwrap())
        });
        for n in [8, BATCH] {
            b.throughput(Throughput::Elements(n as u64));
            b.bench_function(format!("ours-batch-{n}"), |b| {
                b.iter(|| {
                    let r = pk.verify_batch(&items[..n], &g.revoked);
                    assert!(r.iter().all(|v| v.is_ok()));
                })
            });
        }
        if let Some(x4) = &x4 {
            b.throughput(Throughput::Elements(1));
            b.bench_function("ours-keccak-x4", |b| {
                b.iter(|| x4.verify(MESSAGE, &g.sigs[0], &g.revoked).unwrap())
            });
            b.throughput(Throughput::Elements(BATCH as u64));
            b.bench_function("ours-keccak-x4-batch-64", |b| {
                b.iter(|| {
                    let r = x4.verify_batch(&items, &g.revoked);
                    assert!(r.iter().all(|v| v.is_ok()));
                })
            });
        }
        b.throughput(Throughput::Elements((cores * PER_THREAD) as u64));
        b.bench_function("reference-all-cores", |b| {
            b.iter(|| on_all_cores(PER_THREAD, &|| reference.verify()))
        });
        b.bench_function("ours-all-cores", |b| {
            b.iter(|| {
                on_all_cores(PER_THREAD, &|| {
                    pk.verify(MESSAGE, &g.sigs[0], &g.revoked).unwrap()
                })
            })
        });
        b.throughput(Throughput::Elements((cores * BATCH) as u64));
        b.bench_function("ours-batch-64-all-cores", |b| {
            b.iter(|| {
                on_all_cores(1, &|| {
                    let r = pk.verify_batch(&items, &g.revoked);
                    assert!(r.iter().all(|v| v.is_ok()));
                })
            })
        });
        b.finish();
    }
    c.final_summary();
    print_table(cores, x4.is_some());
}

/// Signatures each iteration of `row` verifies.
fn elements(row: &str, cores: usize) -> f64 {
    match row {
        "ours-batch-8" => 8.0,
        "ours-batch-64" | "ours-keccak-x4-batch-64" => BATCH as f64,
        "reference-all-cores" | "ours-all-cores" => (cores * PER_THREAD) as f64,
        "ours-batch-64-all-cores" => (cores * BATCH) as f64,
        _ => 1.0,
    }
}

/// Prints the table of this run's rows (the four-state Keccak rows only when `x4` ran: the
/// criterion directory keeps other runs' estimates).
fn print_table(cores: usize, x4: bool) {
    let dir = report::criterion_dir().join("verify");
    let mean = |row: &str| report::read_mean(&dir.join(row).join("new/estimates.json"));
    let Some(reference) = mean("reference") else {
        eprintln!("no criterion estimates under {}", dir.display());
        return;
    };
    let mut t = format!(
        "{SET}, {cores} threads for \"all cores\", CPU features used: {}\n\n\
         | verification | per signature | signatures/s | time vs dgsp 0.1.2 (one thread) |\n\
         |---|---:|---:|---:|\n",
        hazmat::cpu_features_used()
    );
    for (row, label) in ROWS {
        if !x4 && row.starts_with("ours-keccak-x4") {
            continue;
        }
        let Some(ns) = mean(row) else { continue };
        let per = ns / elements(row, cores);
        t.push_str(&format!(
            "| {label} | {} | {:.0} | {} |\n",
            report::format_ns(per),
            1e9 / per,
            report::format_ratio(per / reference)
        ));
    }
    println!("\n{t}");
    let out = report::criterion_dir().join(format!("verify-table-{SET}.md"));
    match std::fs::write(&out, &t) {
        Ok(()) => println!("written to {}", out.display()),
        Err(e) => eprintln!("could not write {}: {e}", out.display()),
    }
}
