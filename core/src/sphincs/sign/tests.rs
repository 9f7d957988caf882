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
