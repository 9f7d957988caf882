//! The hazmat functions refuse inputs of the wrong length (or out-of-range chain positions)
//! with a typed error, never a panic, and still compute the right values on right ones.

use dgsp_core::hazmat::{self, HazmatError, Label};
use dgsp_core::{
    AesKey, Cid, HashSecret, MessageDigest, ParamSet, Pi, Rho, SeedU, SkSeed, WotsPk, WotsSeed,
    Zeta,
};

/// The set the calls are made for (N = 24) and the set the short values come from (N = 16).
const P: ParamSet = ParamSet::Sha2_192f;
const SHORT: ParamSet = ParamSet::Sha2_128f;

/// The field a `WrongLength` names, with its expected and found lengths.
fn wrong(r: Result<impl std::fmt::Debug, HazmatError>) -> (&'static str, usize, usize) {
    match r {
        Err(HazmatError::WrongLength {
            field,
            params,
            expected,
            found,
        }) => {
            assert_eq!(params, P);
            (field, expected, found)
        }
        other => panic!("expected WrongLength, got {other:?}"),
    }
}

/// Good (N = 24) and short (N = 16) values of every kind.
struct Values {
    rho: Rho,
    sk: SkSeed,
    seed_u: SeedU,
    wots_seed: WotsSeed,
    hs: HashSecret,
    d: MessageDigest,
    pk: WotsPk,
    cid: Cid,
    pi: Pi,
}

fn values(p: ParamSet) -> Values {
    let b = vec![0x5a; p.n()];
    let rho = Rho::from_slice(p, &b).unwrap();
    let sk = SkSeed::from_slice(p, &b).unwrap();
    let hs = HashSecret::from_slice(p, &b).unwrap();
    let d = MessageDigest::from_slice(p, &b).unwrap();
    let pk = hazmat::wots_public_key(p, &rho, &sk).unwrap();
    let cid = hazmat::cid(p, &hs, 3).unwrap();
    let pi = hazmat::pi(p, &pk, &cid).unwrap();
    Values {
        seed_u: SeedU::from_slice(p, &b).unwrap(),
        wots_seed: WotsSeed::from_slice(p, &b).unwrap(),
        rho,
        sk,
        hs,
        d,
        pk,
        cid,
        pi,
    }
}

#[test]
fn every_derivation_refuses_a_value_of_another_length() {
    let (good, short) = (values(P), values(SHORT));
    assert_eq!(wrong(hazmat::cid(P, &short.hs, 1)), ("hash_secret", 24, 16));
    assert_eq!(wrong(hazmat::cid_star(P, &short.cid, 1)), ("cid", 24, 16));
    assert_eq!(
        wrong(hazmat::rho(P, &short.wots_seed)),
        ("wots_seed", 24, 16)
    );
    assert_eq!(
        wrong(hazmat::sk_seed(P, &short.seed_u, &good.wots_seed)),
        ("seed_u", 24, 16)
    );
    assert_eq!(
        wrong(hazmat::sk_seed(P, &good.seed_u, &short.wots_seed)),
        ("wots_seed", 24, 16)
    );
    assert_eq!(
        wrong(hazmat::message_digest(P, &short.rho, b"m")),
        ("rho", 24, 16)
    );
    assert_eq!(
        wrong(hazmat::pi(P, &short.pk, &good.cid)),
        ("wots_pk", 24, 16)
    );
    assert_eq!(wrong(hazmat::pi(P, &good.pk, &short.cid)), ("cid", 24, 16));
    assert_eq!(
        wrong(hazmat::tau(P, &short.pk, &good.pi, 1)),
        ("wots_pk", 24, 16)
    );
    assert_eq!(
        wrong(hazmat::tau(P, &good.pk, &short.pi, 1)),
        ("pi", 24, 16)
    );
    // Longer values are refused as well (a 24-byte value under a 16-byte set).
    assert!(matches!(
        hazmat::rho(SHORT, &good.wots_seed),
        Err(HazmatError::WrongLength {
            expected: 16,
            found: 24,
            ..
        })
    ));
}

#[test]
fn every_wots_function_refuses_inputs_of_another_length() {
    let (good, short) = (values(P), values(SHORT));
    assert_eq!(wrong(hazmat::wots_digits(P, &short.d)), ("digest", 24, 16));
    assert_eq!(
        wrong(hazmat::wots_public_key(P, &short.rho, &good.sk)),
        ("rho", 24, 16)
    );
    assert_eq!(
        wrong(hazmat::wots_public_key(P, &good.rho, &short.sk)),
        ("sk_seed", 24, 16)
    );
    assert_eq!(
        wrong(hazmat::wots_sign(P, &short.rho, &good.sk, &good.d)),
        ("rho", 24, 16)
    );
    assert_eq!(
        wrong(hazmat::wots_sign(P, &good.rho, &short.sk, &good.d)),
        ("sk_seed", 24, 16)
    );
    assert_eq!(
        wrong(hazmat::wots_sign(P, &good.rho, &good.sk, &short.d)),
        ("digest", 24, 16)
    );

    let sig = hazmat::wots_sign(P, &good.rho, &good.sk, &good.d).unwrap();
    assert_eq!(sig.len(), P.wots_sig_len());
    let from_sig = |rho: &Rho, sig: &[u8], d: &MessageDigest| {
        hazmat::wots_public_key_from_signature(P, rho, sig, d)
    };
    assert_eq!(from_sig(&good.rho, &sig, &good.d).unwrap(), good.pk);
    let sig_len = P.wots_sig_len();
    for bad in [0, 1, sig_len - 1, sig_len + 1, 2 * sig_len] {
        let other = vec![7u8; bad];
        assert_eq!(
            wrong(from_sig(&good.rho, &other, &good.d)),
            ("wots_signature", sig_len, bad)
        );
    }
    assert_eq!(wrong(from_sig(&short.rho, &sig, &good.d)), ("rho", 24, 16));
    assert_eq!(
        wrong(from_sig(&good.rho, &sig, &short.d)),
        ("digest", 24, 16)
    );
}

#[test]
fn wots_chain_refuses_wrong_lengths_and_positions() {
    let (good, short) = (values(P), values(SHORT));
    for bad in [0, 16, 23, 25, 64] {
        let mut x = vec![1u8; bad];
        assert_eq!(
            wrong(hazmat::wots_chain(P, &good.rho, &mut x, 0, 0, 1)),
            ("x", 24, bad)
        );
        assert_eq!(x, vec![1u8; bad], "a refused call leaves x as it was");
    }
    let mut x = vec![1u8; 24];
    assert_eq!(
        wrong(hazmat::wots_chain(P, &short.rho, &mut x, 0, 0, 1)),
        ("rho", 24, 16)
    );
    let len = P.wots_len() as u32;
    assert_eq!(
        hazmat::wots_chain(P, &good.rho, &mut x, len, 0, 1),
        Err(HazmatError::OutOfRange {
            field: "chain",
            params: P,
            max: u64::from(len) - 1,
            found: len.into(),
        })
    );
    for (start, steps) in [(0, 16), (15, 1), (8, 8), (u32::MAX, u32::MAX)] {
        assert!(
            matches!(
                hazmat::wots_chain(P, &good.rho, &mut x, 0, start, steps),
                Err(HazmatError::OutOfRange {
                    field: "start + steps",
                    max: 15,
                    ..
                })
            ),
            "start {start}, steps {steps}"
        );
    }
    assert_eq!(x, vec![1u8; 24]);

    // Chaining a signature block to the top gives the block of the public key's chain end:
    // the accepted range computes the real thing.
    let sig = hazmat::wots_sign(P, &good.rho, &good.sk, &good.d).unwrap();
    let digits = hazmat::wots_digits(P, &good.d).unwrap();
    let zero_d = MessageDigest::from_slice(P, &[0xff; 24]).unwrap();
    let top_sig = hazmat::wots_sign(P, &good.rho, &good.sk, &zero_d).unwrap();
    let mut block = sig[..24].to_vec();
    let start = u32::from(digits[0]);
    hazmat::wots_chain(P, &good.rho, &mut block, 0, start, 15 - start).unwrap();
    // Digest 0xff..: the first digit is 15, so its block is already at the top.
    assert_eq!(hazmat::wots_digits(P, &zero_d).unwrap()[0], 15);
    assert_eq!(block, top_sig[..24]);
}

#[test]
fn the_functions_without_length_rules_accept_anything() {
    for p in [SHORT, P, ParamSet::Shake256f] {
        for input in [&[][..], &[0u8; 1][..], &[0xab; 10_000][..]] {
            assert_eq!(hazmat::labelled_hash(p, Label::Msg, input).len(), p.n());
        }
        let key = AesKey::from_slice(p, &vec![9; p.n()]).unwrap();
        let z = hazmat::zeta(&key, u64::MAX, 0);
        assert_eq!(hazmat::open_zeta(&key, &z), (u64::MAX, 0));
        // Any 16 bytes decrypt to some (id, counter): nothing to refuse.
        let _ = hazmat::open_zeta(&key, &Zeta([0xff; 16]));
    }
}
