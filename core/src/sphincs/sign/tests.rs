//! The native signer against the libraries, byte for byte: `slh-dsa` on the FIPS 205 sets
//! (key generation, deterministic and hedged signing), PQClean on the round 3.1 sets (key
//! generation checked through `PK.root`; signatures given PQClean's randomizer `R`, which
//! carries its `OptRand`). The FIPS 205 `s` sets are also checked against the known-answer
//! vectors of an independent implementation (`core/tests/kat.rs`).

use rand_core::{OsRng, RngCore};

use super::*;
use crate::spx;

fn random(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    OsRng.fill_bytes(&mut v);
    v
}

#[test]
fn fips205_fast_sets_equal_slh_dsa() {
    for set in ParamSet::FIPS205.into_iter().filter(|p| p.is_fast()) {
        let n = set.n();
        let (sk_seed, sk_prf, pk_seed) = (random(n), random(n), random(n));
        let key = SigningKey::from_seeds(set, &sk_seed, &sk_prf, &pk_seed).unwrap();
        let (pk, sk) = spx::oracle::keypair_from_seeds(set, &sk_seed, &sk_prf, &pk_seed);
        assert_eq!(key.public_key(), &pk[..], "{set}: PK.root");
        assert_eq!(&key.to_bytes()[..], &sk[..], "{set}: the secret key bytes");
        assert!(key.check(), "{set}");
        for msg in [&b""[..], b"m", &random(200)] {
            let ours = key.sign(msg, None).unwrap();
            assert_eq!(
                ours,
                spx::oracle::slh_sign(set, &sk, msg, None),
                "{set}: deterministic"
            );
            let addrnd = random(n);
            let ours = key.sign(msg, Some(&addrnd)).unwrap();
            assert_eq!(
                ours,
                spx::oracle::slh_sign(set, &sk, msg, Some(&addrnd)),
                "{set}: hedged"
            );
            assert!(key.verifying_key().verify(msg, &ours), "{set}");
        }
    }
}

#[test]
fn round3_fast_sets_equal_pqclean() {
    for set in ParamSet::ROUND3.into_iter().filter(|p| p.is_fast()) {
        let n = set.n();
        let (pk, sk) = spx::oracle::keypair(set, &mut OsRng);
        let key = SigningKey::from_bytes(set, &sk).unwrap();
        assert!(key.check(), "{set}: PQClean's PK.root from its seeds");
        let again =
            SigningKey::from_seeds(set, &sk[..n], &sk[n..2 * n], &sk[2 * n..3 * n]).unwrap();
        assert_eq!(again.public_key(), &pk[..], "{set}: seed key pair");
        for msg in [&b""[..], b"m", &random(200)] {
            let theirs = spx::oracle::sign(set, &sk, msg);
            let ours = key.sign_randomized(&theirs[..n], [&[], msg]).unwrap();
            assert_eq!(ours, theirs, "{set}: the signature given PQClean's R");
            let fresh = key.sign(msg, Some(&random(n))).unwrap();
            assert!(
                spx::oracle::verify_pqclean(set, &pk, msg, &fresh),
                "{set}: PQClean accepts ours"
            );
        }
    }
}

#[test]
fn a_wrong_root_or_opt_rand_makes_no_signature() {
    let set = ParamSet::Sha2_128f;
    let key = SigningKey::from_seeds(set, &[1; 16], &[2; 16], &[3; 16]).unwrap();
    let mut bytes = key.to_bytes().to_vec();
    bytes[63] ^= 1;
    let bad = SigningKey::from_bytes(set, &bytes).unwrap();
    assert!(!bad.check());
    assert_eq!(bad.sign(b"m", None), Err(SignError::RootMismatch));
    assert_eq!(
        key.sign(b"m", Some(&[0; 15])),
        Err(SignError::OptRandLength {
            expected: 16,
            found: 15
        })
    );
    assert!(SigningKey::from_bytes(set, &bytes[1..]).is_err());
    assert!(SigningKey::from_seeds(set, &[1; 15], &[2; 16], &[3; 16]).is_err());
    assert!(
        !format!("{key:?}").contains("0101"),
        "Debug shows no secret"
    );
}

/// One signature per small set, round 3.1 against PQClean and FIPS 205 against `slh-dsa`
/// (hedged), byte for byte.
#[test]
fn small_sets_equal_the_libraries() {
    for set in ParamSet::ALL.into_iter().filter(|p| !p.is_fast()) {
        let n = set.n();
        let (pk, sk) = spx::oracle::keypair(set, &mut OsRng);
        let key = SigningKey::from_bytes(set, &sk).unwrap();
        let msg = random(33);
        let (ours, theirs) = match set.standard() {
            Standard::Round3 => {
                let theirs = spx::oracle::sign(set, &sk, &msg);
                (
                    key.sign_randomized(&theirs[..n], [&[], &msg]).unwrap(),
                    theirs,
                )
            }
            Standard::Fips205 => {
                let addrnd = random(n);
                (
                    key.sign(&msg, Some(&addrnd)).unwrap(),
                    spx::oracle::slh_sign(set, &sk, &msg, Some(&addrnd)),
                )
            }
        };
        assert_eq!(ours, theirs, "{set}");
        assert!(spx::oracle::verify(set, &pk, &msg, &ours), "{set}");
    }
}

/// The long differential, on demand: `DGSP_SIGNER_DIFF_CASES` random (key, message) cases
/// (default 1 000) over the twelve `f` sets, each signature compared byte for byte with the
/// library's (round 3.1: PQClean's, given its `R`; FIPS 205: `slh-dsa`'s, hedged with the
/// same `addrnd`, and every tenth case deterministic too), a fresh key every 50 cases.
///
/// `DGSP_SIGNER_DIFF_CASES=100000 cargo test --release -p dgsp-core --lib sphincs::sign::tests::long_differential -- --ignored --nocapture`
#[test]
#[ignore = "long run: set DGSP_SIGNER_DIFF_CASES and pass --ignored"]
fn long_differential() {
    use rand_chacha::rand_core::SeedableRng;
    let cases: usize = std::env::var("DGSP_SIGNER_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x5349_474e);
    let sets: Vec<ParamSet> = ParamSet::ALL.into_iter().filter(|p| p.is_fast()).collect();
    let mut key = None;
    for case in 0..cases {
        let set = sets[(case / 50) % sets.len()];
        let n = set.n();
        if case % 50 == 0 {
            let (pk, sk) = spx::oracle::keypair(set, &mut rng);
            key = Some((pk, sk.to_vec(), SigningKey::from_bytes(set, &sk).unwrap()));
        }
        let (pk, sk, ours) = key.as_ref().unwrap();
        let mut msg = vec![0u8; (rng.next_u32() % 300) as usize];
        rng.fill_bytes(&mut msg);
        match set.standard() {
            Standard::Round3 => {
                let theirs = spx::oracle::sign(set, sk, &msg);
                let mine = ours.sign_randomized(&theirs[..n], [&[], &msg]).unwrap();
                assert_eq!(mine, theirs, "case {case}, {set}");
            }
            Standard::Fips205 => {
                let mut addrnd = vec![0u8; n];
                rng.fill_bytes(&mut addrnd);
                let theirs = spx::oracle::slh_sign(set, sk, &msg, Some(&addrnd));
                assert_eq!(
                    ours.sign(&msg, Some(&addrnd)).unwrap(),
                    theirs,
                    "case {case}, {set}"
                );
                if case % 10 == 0 {
                    let det = spx::oracle::slh_sign(set, sk, &msg, None);
                    assert_eq!(ours.sign(&msg, None).unwrap(), det, "case {case}, {set}");
                }
                assert!(spx::oracle::verify(set, pk, &msg, &theirs));
            }
        }
    }
    eprintln!("{cases} cases, every signature byte-identical to the library's");
}
