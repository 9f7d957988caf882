//! Benchmark baseline: the published `dgsp` crate (version 0.1.2, crates.io).
//!
//! This module only *calls the public API* of the reference crate; no code of
//! the reference crate is copied. It is pulled into the `compare` bench target
//! next to `ours.rs` (whose [`MESSAGE`] both sides sign) and `report.rs`.
//!
//! The parameter set is fixed at compile time by the `dgsp` feature the
//! `baseline-*` features of this crate select (shake-256f by default); the
//! manager private list (PLM) and the revoked list are the crate's in-memory
//! implementations.
//!
//! # What is measured
//!
//! | op        | timed call                                                    | untimed setup                                    |
//! |-----------|---------------------------------------------------------------|--------------------------------------------------|
//! | `keygen`  | `DGSP::keygen_manager()`                                      | —                                                |
//! | `join`    | `DGSP::join(hash_secret, username, plm)`                      | a fresh username from a counter                  |
//! | `csr_B`   | `DGSP::csr(seed_u, B)`                                        | —                                                |
//! | `issue_B` | `DGSP::gen_cert(skm, id, cid*, &wots_pks[..B], plm)`          | `B` WOTS+ public keys made once in the fixture   |
//! | `sign`    | `DGSP::sign(msg, seed_u, id, wots_seed, cert)`                | a clone of one stock certificate (sign consumes it) |
//! | `verify`  | `DGSP::verify(msg, sig, revoked_list, pkm)`                   | —                                                |
//! | `open`    | `DGSP::open(msk, plm, sig, msg)`                              | —                                                |
//! | `judge`   | `DGSP::judge(sig, msg, id, pi)`                               | —                                                |
//! | `revoke`  | `DGSP::revoke(aes_key, plm, &[id], revoked_list)`             | a fresh member joined, counter set to 1 cert     |
//!
//! Quirks of the reference API that the numbers depend on:
//!
//! - `DGSP::sign` takes the certificate and the WOTS+ seed by value but does
//!   not check anything, so one stock certificate is cloned for every
//!   iteration (the ~50 KB clone is done in the untimed setup).
//! - `DGSP::gen_cert` does not check that the WOTS+ public keys are new, so the
//!   same stock keys are certified again on every iteration; the member's
//!   certificate counter in the PLM simply keeps growing.
//! - `DGSP::revoke` only reads the member's certificate counter from the PLM
//!   (it derives one zeta per issued certificate), so the untimed setup joins a
//!   fresh member and raises its counter with the public
//!   `PLMInterface::increment_ctr_id_by` instead of running the (≈60 ms)
//!   SPHINCS+ signing of a real `gen_cert`. The PLM state seen by `revoke` is
//!   identical to the one after issuing [`REVOKE_CERTS`] certificates.
//! - `DGSP::csr` and `DGSP::gen_cert` run their batch in parallel on rayon's
//!   global pool (all cores by default). Run with `RAYON_NUM_THREADS=1` for a
//!   single-threaded baseline.
//! - `join` and `revoke` add members to the in-memory PLM on every iteration,
//!   so the PLM grows during those benchmarks (as in the crate's own benches).

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, SamplingMode};
use dgsp::params::DGSP_N;
use dgsp::scheme::{DGSPCert, DGSPManagerPublicKey, DGSPManagerSecretKey, DGSPSignature};
use dgsp::{InMemoryPLM, InMemoryRevokedList, PLMInterface, RevokedListInterface};

/// The reference scheme (all operations are associated functions).
use dgsp::DGSP;

use super::ours::MESSAGE;

#[cfg(all(feature = "baseline-shake-256f", feature = "baseline-sha2-128f"))]
compile_error!("choose one baseline: --no-default-features --features sign,baseline-sha2-128f");

/// The set both sides run, matching the reference's compile-time choice.
#[cfg(not(feature = "baseline-sha2-128f"))]
pub const SET: dgsp_core::ParamSet = dgsp_core::ParamSet::Shake256f;
/// The set both sides run, matching the reference's compile-time choice.
#[cfg(feature = "baseline-sha2-128f")]
pub const SET: dgsp_core::ParamSet = dgsp_core::ParamSet::Sha2_128f;

/// Operation names, in the order they are registered.
///
/// `sign_from_seed` is the reference's `sign` again, beside ours recomputing the one-time key
/// from its seed before signing: the reference's `sign` takes the seed, not the key, so that
/// is the like-with-like row; ours' `sign` is the online part alone.
pub const OPS: [&str; 12] = [
    "keygen",
    "join",
    "csr_1",
    "csr_8",
    "issue_1",
    "issue_8",
    "sign",
    "sign_from_seed",
    "verify",
    "open",
    "judge",
    "revoke",
];

/// Largest certificate batch the fixture has WOTS+ public keys for.
pub const MAX_ISSUE_BATCH: usize = 8;

/// Number of certificates the member revoked in `revoke` has been issued.
pub const REVOKE_CERTS: u64 = 1;

/// Everything the reference operations need: a manager key pair, an in-memory
/// PLM and revoked list, one joined member with a stock of WOTS+ public keys,
/// one certificate, and one signature already opened.
pub struct RefFixture {
    /// Manager public key.
    pub pkm: DGSPManagerPublicKey,
    /// Manager secret key.
    pub skm: DGSPManagerSecretKey,
    /// The manager's private list (in memory).
    pub plm: InMemoryPLM,
    /// The public revoked list (in memory).
    pub revoked_list: InMemoryRevokedList,
    /// Id of the fixture member.
    pub id: u64,
    /// Credential `cid*` of the fixture member.
    pub cid_star: [u8; DGSP_N],
    /// Secret seed of the fixture member.
    pub seed_u: [u8; DGSP_N],
    /// `MAX_ISSUE_BATCH` WOTS+ public keys of the fixture member (CSR output).
    pub wots_pks: Vec<[u8; DGSP_N]>,
    /// WOTS+ seed matching `cert`.
    pub wots_seed: [u8; DGSP_N],
    /// A certificate for `wots_seed`, reused (cloned) by every `sign`.
    pub cert: DGSPCert,
    /// A valid signature on [`MESSAGE`].
    pub sig: DGSPSignature,
    /// The `pi` returned by opening `sig`.
    pub pi: [u8; DGSP_N],
    counter: AtomicU64,
}

impl Default for RefFixture {
    fn default() -> Self {
        Self::new()
    }
}

impl RefFixture {
    /// Builds the fixture: manager keys, in-memory PLM and revoked list, one
    /// member with [`MAX_ISSUE_BATCH`] WOTS+ public keys, one certificate, one
    /// signature (checked by verify, open and judge).
    pub fn new() -> Self {
        let plm = InMemoryPLM::open("").expect("in-memory PLM");
        let revoked_list = InMemoryRevokedList::open("").expect("in-memory revoked list");
        let (pkm, skm) = DGSP::keygen_manager().expect("reference keygen");

        let (id, cid_star) =
            DGSP::join(&skm.msk.hash_secret, "reference fixture member", &plm).expect("join");
        let seed_u = DGSP::keygen_user();
        let (wots_pks, _) = DGSP::csr(&seed_u, MAX_ISSUE_BATCH);

        let (sign_pks, mut sign_seeds) = DGSP::csr(&seed_u, 1);
        let cert = DGSP::gen_cert(&skm, id, &cid_star, &sign_pks, &plm)
            .expect("gen_cert")
            .pop()
            .expect("one certificate");
        let wots_seed = sign_seeds.pop().expect("one wots seed");

        let sig = DGSP::sign(MESSAGE, &seed_u, id, wots_seed, cert.clone());
        DGSP::verify(MESSAGE, &sig, &revoked_list, &pkm).expect("fixture signature verifies");
        let (opened, _, pi) = DGSP::open(&skm.msk, &plm, &sig, MESSAGE).expect("open");
        assert_eq!(opened, id, "fixture signature opens to the fixture member");
        DGSP::judge(&sig, MESSAGE, id, &pi).expect("judge accepts the opening");

        Self {
            pkm,
            skm,
            plm,
            revoked_list,
            id,
            cid_star,
            seed_u,
            wots_pks,
            wots_seed,
            cert,
            sig,
            pi,
            counter: AtomicU64::new(0),
        }
    }

    fn next_username(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.counter.fetch_add(1, Ordering::Relaxed))
    }

    /// Manager key generation (SPHINCS+ key pair plus the two secrets).
    pub fn keygen(&self) -> (DGSPManagerPublicKey, DGSPManagerSecretKey) {
        DGSP::keygen_manager().expect("reference keygen")
    }

    /// Untimed part of `join`: a username never used before.
    pub fn join_setup(&self) -> String {
        self.next_username("ref-join")
    }

    /// Timed part of `join`: adds `username` to the PLM, returns `(id, cid*)`.
    pub fn join_run(&self, username: String) -> (u64, [u8; DGSP_N]) {
        DGSP::join(&self.skm.msk.hash_secret, &username, &self.plm).expect("reference join")
    }

    /// Member CSR: `batch` WOTS+ key pairs, returns `(wots_pks, wots_seeds)`.
    pub fn csr(&self, batch: usize) -> (Vec<[u8; DGSP_N]>, Vec<[u8; DGSP_N]>) {
        DGSP::csr(&self.seed_u, batch)
    }

    /// Manager certificate generation for the first `batch` stock WOTS+ public
    /// keys of the fixture member (`batch <= MAX_ISSUE_BATCH`).
    pub fn gen_cert(&self, batch: usize) -> Vec<DGSPCert> {
        assert!(
            batch <= self.wots_pks.len(),
            "fixture has only {} WOTS+ public keys",
            self.wots_pks.len()
        );
        DGSP::gen_cert(
            &self.skm,
            self.id,
            &self.cid_star,
            &self.wots_pks[..batch],
            &self.plm,
        )
        .expect("reference gen_cert")
    }

    /// Untimed part of `sign`: the WOTS+ seed and a clone of the stock
    /// certificate (the reference `sign` consumes both).
    pub fn sign_setup(&self) -> ([u8; DGSP_N], DGSPCert) {
        (self.wots_seed, self.cert.clone())
    }

    /// Timed part of `sign`: signs [`MESSAGE`] with the given seed and certificate.
    pub fn sign_run(&self, input: ([u8; DGSP_N], DGSPCert)) -> DGSPSignature {
        let (wots_seed, cert) = input;
        DGSP::sign(MESSAGE, &self.seed_u, self.id, wots_seed, cert)
    }

    /// Verifies the fixture signature against the revoked list and manager key.
    pub fn verify(&self) {
        DGSP::verify(MESSAGE, &self.sig, &self.revoked_list, &self.pkm).expect("reference verify");
    }

    /// Opens the fixture signature, returns `(id, username, pi)`.
    pub fn open(&self) -> (u64, String, [u8; DGSP_N]) {
        DGSP::open(&self.skm.msk, &self.plm, &self.sig, MESSAGE).expect("reference open")
    }

    /// Judges the opening of the fixture signature.
    pub fn judge(&self) {
        DGSP::judge(&self.sig, MESSAGE, self.id, &self.pi).expect("reference judge");
    }

    /// Untimed part of `revoke`: joins a fresh member and records
    /// [`REVOKE_CERTS`] issued certificates for it; returns its id.
    pub fn revoke_setup(&self) -> u64 {
        self.revoke_setup_with(REVOKE_CERTS)
    }

    /// Like [`RefFixture::revoke_setup`] with `certs` issued certificates.
    pub fn revoke_setup_with(&self, certs: u64) -> u64 {
        let username = self.next_username("ref-revoke");
        let (id, _) = DGSP::join(&self.skm.msk.hash_secret, &username, &self.plm)
            .expect("reference join for revoke");
        self.plm
            .increment_ctr_id_by(id, certs)
            .expect("set certificate counter");
        id
    }

    /// Timed part of `revoke`: revokes member `id` (derives and inserts one
    /// zeta per issued certificate, deactivates the member).
    pub fn revoke_run(&self, id: u64) {
        DGSP::revoke(&self.skm.msk.aes_key, &self.plm, &[id], &self.revoked_list)
            .expect("reference revoke");
    }
}

/// Applies the sampling settings used for `op` to `group`. Call it once before
/// registering both sides of `op`, so they are measured the same way.
pub fn configure(group: &mut BenchmarkGroup<'_, WallTime>, op: &str) {
    group.sample_size(10);
    match op {
        // One SPHINCS+ signature per certificate (~60 ms each): flat sampling
        // runs exactly 10 iterations, i.e. a few seconds in total.
        "issue_1" | "issue_8" => {
            group.sampling_mode(SamplingMode::Flat);
            group.warm_up_time(Duration::from_millis(500));
            group.measurement_time(Duration::from_secs(if op == "issue_8" { 6 } else { 2 }));
        }
        // These grow the in-memory PLM every iteration: keep them short.
        "join" | "revoke" => {
            group.sampling_mode(SamplingMode::Auto);
            group.warm_up_time(Duration::from_millis(500));
            group.measurement_time(Duration::from_secs(2));
        }
        _ => {
            group.sampling_mode(SamplingMode::Auto);
            group.warm_up_time(Duration::from_secs(1));
            group.measurement_time(Duration::from_secs(3));
        }
    }
}

/// Registers the reference benchmark of one operation as `id` in `group`.
/// Panics on an unknown `op`.
pub fn bench_reference_op(
    group: &mut BenchmarkGroup<'_, WallTime>,
    fx: &RefFixture,
    op: &str,
    id: &str,
) {
    match op {
        "keygen" => group.bench_function(id, |b| b.iter(|| black_box(fx.keygen()))),
        "join" => group.bench_function(id, |b| {
            b.iter_batched(
                || fx.join_setup(),
                |u| black_box(fx.join_run(u)),
                BatchSize::SmallInput,
            )
        }),
        "csr_1" => group.bench_function(id, |b| b.iter(|| black_box(fx.csr(black_box(1))))),
        "csr_8" => group.bench_function(id, |b| b.iter(|| black_box(fx.csr(black_box(8))))),
        "issue_1" => group.bench_function(id, |b| b.iter(|| black_box(fx.gen_cert(black_box(1))))),
        "issue_8" => group.bench_function(id, |b| b.iter(|| black_box(fx.gen_cert(black_box(8))))),
        "sign" | "sign_from_seed" => group.bench_function(id, |b| {
            b.iter_batched(
                || fx.sign_setup(),
                |input| black_box(fx.sign_run(input)),
                BatchSize::SmallInput,
            )
        }),
        "verify" => group.bench_function(id, |b| b.iter(|| fx.verify())),
        "open" => group.bench_function(id, |b| b.iter(|| black_box(fx.open()))),
        "judge" => group.bench_function(id, |b| b.iter(|| fx.judge())),
        "revoke" => group.bench_function(id, |b| {
            b.iter_batched(
                || fx.revoke_setup(),
                |m| fx.revoke_run(m),
                BatchSize::SmallInput,
            )
        }),
        other => panic!("unknown reference operation {other:?}"),
    };
}
