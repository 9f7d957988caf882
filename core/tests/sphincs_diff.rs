//! Differential tests of the native SPHINCS+ verifier (`dgsp_core::sphincs`) against
//! PQClean (`pqcrypto-sphincsplus`, through `hazmat`), on all twelve parameter sets.
//!
//! Every case asserts that both verifiers give the same verdict, and that the verdict is
//! the expected one (accept for untouched signatures, reject for every mutation).
//!
//! The random differential test is `#[ignore]`d; run it in release:
//! `DGSP_SPX_DIFF_CASES=100000 cargo test --release -p dgsp-core --test sphincs_diff -- --ignored --nocapture`

// Makes manager keys and signs: needs the `sign` feature (on by default).
#![cfg(feature = "oracle")]

mod support;

use dgsp_core::hazmat;
use dgsp_core::sphincs::VerifyingKey;
use dgsp_core::ParamSet;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// `(n, d, h', a, k)` of each set, from PQClean's `params.h` (written out here rather than
/// taken from the crate, so the test checks the crate's tables too).
fn shape(set: ParamSet) -> (usize, usize, usize, usize, usize) {
    match set.name().rsplit('-').next().unwrap() {
        "128s" => (16, 7, 9, 12, 14),
        "128f" => (16, 22, 3, 6, 33),
        "192s" => (24, 7, 9, 14, 17),
        "192f" => (24, 22, 3, 8, 33),
        "256s" => (32, 8, 8, 14, 22),
        "256f" => (32, 17, 4, 9, 35),
        other => panic!("unknown set {other}"),
    }
}

/// The named byte ranges of a signature: R, the FORS secret leaves and auth paths (all
/// trees together), each layer's WOTS+ signature and auth path.
#[allow(clippy::single_range_in_vec_init)] // a region is a list of ranges; some have one
fn regions(set: ParamSet) -> Vec<(String, Vec<std::ops::Range<usize>>)> {
    let (n, d, hp, a, k) = shape(set);
    let len = 2 * n + 3;
    let mut out = vec![("R".to_string(), vec![0..n])];
    let fors = n;
    let tree = (a + 1) * n;
    out.push((
        "FORS secret leaves".into(),
        (0..k)
            .map(|i| fors + i * tree..fors + i * tree + n)
            .collect(),
    ));
    out.push((
        "FORS auth paths".into(),
        (0..k)
            .map(|i| fors + i * tree + n..fors + (i + 1) * tree)
            .collect(),
    ));
    let mut off = fors + k * tree;
    for layer in 0..d {
        out.push((format!("layer {layer} WOTS+"), vec![off..off + len * n]));
        off += len * n;
        out.push((format!("layer {layer} auth path"), vec![off..off + hp * n]));
        off += hp * n;
    }
    assert_eq!(off, set.spx_sig_len(), "{set}: region table");
    out
}

/// Both verdicts; asserts they agree.
fn both(set: ParamSet, pk: &[u8], msg: &[u8], sig: &[u8], what: &str) -> bool {
    let theirs = hazmat::spx_verify_pqclean(set, pk, msg, sig);
    let ours = match VerifyingKey::new(set, pk) {
        Ok(vk) => vk.verify(msg, sig),
        Err(_) => false,
    };
    assert_eq!(
        ours, theirs,
        "{set}: {what}: native {ours}, PQClean {theirs}"
    );
    ours
}

fn flip(v: &[u8], pos: usize, mask: u8) -> Vec<u8> {
    let mut v = v.to_vec();
    v[pos] ^= mask;
    v
}

struct Case {
    msg: Vec<u8>,
    sig: Vec<u8>,
    valid: bool,
    what: String,
}

fn check_set(set: ParamSet) {
    let mut rng = ChaCha20Rng::seed_from_u64(set.id().into());
    let (pk, sk) = hazmat::spx_keypair(set);
    let (pk2, sk2) = hazmat::spx_keypair(set);
    let vk = VerifyingKey::new(set, &pk).unwrap();
    assert_eq!(vk.as_bytes(), &pk[..]);
    assert_eq!(vk.params(), set);

    let mut long = vec![0u8; 1000];
    rng.fill_bytes(&mut long);
    let mut msgs: Vec<Vec<u8>> = vec![Vec::new(), b"DGSP-v1:cert example".to_vec()];
    if set.is_fast() {
        msgs.push(long);
    }
    let sigs: Vec<Vec<u8>> = msgs.iter().map(|m| hazmat::spx_sign(set, &sk, m)).collect();
    let mut cases: Vec<Case> = Vec::new();

    // Valid signatures accept.
    for (m, s) in msgs.iter().zip(&sigs) {
        assert!(
            both(set, &pk, m, s, "valid"),
            "{set}: valid signature rejected"
        );
        cases.push(Case {
            msg: m.clone(),
            sig: s.clone(),
            valid: true,
            what: "valid".into(),
        });
    }

    let (m, s) = (&msgs[1], &sigs[1]);
    let mut bad = |msg: Vec<u8>, sig: Vec<u8>, what: String| {
        assert!(!both(set, &pk, &msg, &sig, &what), "{set}: accepted {what}");
        cases.push(Case {
            msg,
            sig,
            valid: false,
            what,
        });
    };

    // Message bit flips: every byte.
    for pos in 0..m.len() {
        let bit = 1u8 << (rng.next_u32() % 8);
        bad(flip(m, pos, bit), s.clone(), format!("message byte {pos}"));
    }
    bad(
        b"x".to_vec(),
        sigs[0].clone(),
        "non-empty message, signature of empty".into(),
    );

    // Each signature region: first and last byte, and random bytes in between.
    for (name, ranges) in regions(set) {
        let first = ranges[0].start;
        let last = ranges[ranges.len() - 1].end - 1;
        let all: Vec<usize> = ranges.iter().flat_map(|r| r.clone()).collect();
        let mut positions = vec![first, last];
        for _ in 0..2 {
            positions.push(all[rng.next_u32() as usize % all.len()]);
        }
        for pos in positions {
            let bit = 1u8 << (rng.next_u32() % 8);
            bad(m.clone(), flip(s, pos, bit), format!("{name} byte {pos}"));
        }
    }

    // Lengths.
    bad(
        m.clone(),
        s[..s.len() - 1].to_vec(),
        "truncated by 1".into(),
    );
    bad(m.clone(), Vec::new(), "empty signature".into());
    let mut ext = s.clone();
    ext.push(0);
    bad(m.clone(), ext, "extended by 1".into());
    for other in ParamSet::ALL {
        if other.spx_sig_len() != set.spx_sig_len() {
            let mut wrong = s.clone();
            wrong.resize(other.spx_sig_len(), 0x5A);
            bad(m.clone(), wrong, format!("{other}-sized signature"));
        }
    }

    // Another key's signature.
    let s2 = hazmat::spx_sign(set, &sk2, m);
    assert!(both(set, &pk2, m, &s2, "valid under key 2"));
    bad(m.clone(), s2, "signature by another key".into());

    // The public key: PK.seed and PK.root bytes.
    let n = set.n();
    for pos in [0, n / 2, n - 1, n, n + n / 2, 2 * n - 1] {
        let pk_bad = flip(&pk, pos, 1 << (pos % 8));
        assert!(
            !both(set, &pk_bad, m, s, &format!("public key byte {pos}")),
            "{set}: accepted under a flipped public key byte {pos}"
        );
    }
    assert!(VerifyingKey::new(set, &pk[1..]).is_err());
    assert!(VerifyingKey::new(set, &[pk.clone(), vec![0]].concat()).is_err());

    // Batches: the same verdicts as one at a time, in several sizes and orders.
    for size in [1usize, 3, 4, 5, 64] {
        let start = rng.next_u32() as usize % cases.len();
        let picked: Vec<&Case> = (0..size)
            .map(|i| &cases[(start + i * 7) % cases.len()])
            .collect();
        let items: Vec<(&[u8], &[u8])> = picked
            .iter()
            .map(|c| (c.msg.as_slice(), c.sig.as_slice()))
            .collect();
        let got = vk.verify_batch(&items);
        assert_eq!(got.len(), size);
        for (c, g) in picked.iter().zip(got) {
            assert_eq!(g, c.valid, "{set}: batch of {size}: {}", c.what);
            assert_eq!(
                g,
                vk.verify(&c.msg, &c.sig),
                "{set}: batch of {size}: {}",
                c.what
            );
        }
    }
    assert!(vk.verify_batch(&[]).is_empty());
}

macro_rules! per_set {
    ($($name:ident => $set:ident,)*) => {$(
        #[test]
        fn $name() {
            check_set(ParamSet::$set);
        }
    )*};
}

per_set! {
    sha2_128s => Sha2_128s,
    sha2_128f => Sha2_128f,
    sha2_192s => Sha2_192s,
    sha2_192f => Sha2_192f,
    sha2_256s => Sha2_256s,
    sha2_256f => Sha2_256f,
    shake_128s => Shake128s,
    shake_128f => Shake128f,
    shake_192s => Shake192s,
    shake_192f => Shake192f,
    shake_256s => Shake256s,
    shake_256f => Shake256f,
}

/// Random mutations on sha2-128f and shake-128f; the native verdict must equal PQClean's
/// on every case, and accept every untouched signature. Cases: env `DGSP_SPX_DIFF_CASES` (default 1,000,000); RNG seed:
/// `DGSP_SPX_DIFF_SEED` (fixed default; the keys are fresh on every run).
#[test]
#[ignore = "long: run in release with DGSP_SPX_DIFF_CASES"]
fn random_differential() {
    let cases = support::env_u64("DGSP_SPX_DIFF_CASES", 1_000_000);
    let seed = support::env_u64("DGSP_SPX_DIFF_SEED", 0x5350_5844_4946_4621);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    struct Fixture {
        set: ParamSet,
        pk: Vec<u8>,
        vk: VerifyingKey,
        signed: Vec<(Vec<u8>, Vec<u8>)>,
    }
    impl support::Fixture for Fixture {
        fn set(&self) -> ParamSet {
            self.set
        }
        fn signed(&self) -> &[(Vec<u8>, Vec<u8>)] {
            &self.signed
        }
        fn verdicts(&self, m: &[u8], s: &[u8]) -> (bool, bool) {
            let theirs = hazmat::spx_verify_pqclean(self.set, &self.pk, m, s);
            (self.vk.verify(m, s), theirs)
        }
    }
    let fixtures: Vec<Fixture> = [ParamSet::Sha2_128f, ParamSet::Shake128f]
        .into_iter()
        .map(|set| {
            let (pk, sk) = hazmat::spx_keypair(set);
            let signed = (0..8)
                .map(|i| {
                    let mut m = vec![0u8; i * 9];
                    rng.fill_bytes(&mut m);
                    let s = hazmat::spx_sign(set, &sk, &m);
                    (m, s)
                })
                .collect();
            Fixture {
                set,
                vk: VerifyingKey::new(set, &pk).unwrap(),
                pk,
                signed,
            }
        })
        .collect();
    let (accepted, rejected) = support::run_cases(&mut rng, cases, &fixtures);
    println!(
        "random differential (seed {seed}): {cases} cases agree with PQClean ({accepted} accepted, {rejected} rejected)"
    );
}
