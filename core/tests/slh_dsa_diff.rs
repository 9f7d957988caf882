//! The native verifier in its FIPS 205 mode against RustCrypto's `slh-dsa` (an independent
//! FIPS 205 implementation) on all 12 SLH-DSA parameter sets: signatures `slh-dsa` makes
//! (pure mode, with a context string) verify natively, and every mutation class rejects on
//! both sides. Also: the same signature does not verify under the round 3.1 rules (the FORS
//! index rule differs), except on the 192f sets (a = 8), where the two rules coincide.

use dgsp_core::sphincs::{fips205_message, Standard, VerifyingKey};
use dgsp_core::ParamSet;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use slh_dsa::signature::Keypair;
use slh_dsa::{ParameterSet, Signature, SigningKey};

/// Signs with `slh-dsa` and checks the native verdicts (and `slh-dsa`'s own) on the
/// signature and on one mutation of each region.
fn check<P: ParameterSet>(set: ParamSet, seed: u64) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let sk = SigningKey::<P>::new(&mut rng);
    let vk = sk.verifying_key();
    let pk = vk.to_bytes().to_vec();
    let (msg, ctx) = (
        b"a message signed under FIPS 205".as_slice(),
        b"dgsp".as_slice(),
    );
    let sig = sk
        .try_sign_with_context(msg, ctx, Some(&[7u8; 32][..set.n()]))
        .unwrap()
        .to_vec();
    let native = VerifyingKey::with_standard(set, Standard::Fips205, &pk).unwrap();
    let m = fips205_message(ctx, msg).unwrap();
    let theirs = |m: &[u8], s: &[u8]| {
        Signature::<P>::try_from(s).is_ok_and(|s| vk.slh_verify_internal(m, &s).is_ok())
    };
    assert!(theirs(&m, &sig), "{set}: slh-dsa rejects its own signature");
    assert!(
        native.verify(&m, &sig),
        "{set}: native FIPS 205 rejects a valid signature"
    );
    // The other standard's FORS index rule gives another FORS key: rejected. Except where
    // an index is exactly one byte (a = 8: the 192f sets), where both rules read the same
    // indices, so the standards coincide on the same M': there, only the parameter set id a
    // DGSP encoding carries can keep the families apart (issue 14).
    let round3 = VerifyingKey::new(set, &pk).unwrap();
    assert_eq!(
        round3.verify(&m, &sig),
        shape(set).1 == 8,
        "{set}: the round 3.1 rules and FIPS 205 should differ exactly when a != 8"
    );
    // Without the pure-mode prefix, or with another context: rejected.
    assert!(
        !native.verify(msg, &sig),
        "{set}: accepted without the M' prefix"
    );
    let other_ctx = fips205_message(b"other", msg).unwrap();
    assert!(!native.verify(&other_ctx, &sig));

    // Mutations: the message, then the first byte of every region of the signature (R,
    // each FORS tree's secret and path, each layer's WOTS+ signature and path), then the
    // last byte, truncation and extension.
    let (n, (k, a, d, hp)) = (set.n(), shape(set));
    let mut m2 = m.clone();
    *m2.last_mut().unwrap() ^= 1;
    assert!(
        !native.verify(&m2, &sig) && !theirs(&m2, &sig),
        "{set}: message mutation"
    );
    let mut offsets = vec![0];
    for t in 0..k {
        offsets.push(n + t * (a + 1) * n); // secret
        offsets.push(n + t * (a + 1) * n + n); // first path node
    }
    let len = 2 * n + 3;
    let ht = n + k * (a + 1) * n;
    for layer in 0..d {
        let base = ht + layer * (len + hp) * n;
        offsets.push(base); // WOTS+ signature
        offsets.push(base + len * n); // auth path
    }
    offsets.push(sig.len() - 1);
    assert_eq!(ht + d * (len + hp) * n, sig.len(), "{set}: layout");
    for &o in &offsets {
        let mut s = sig.clone();
        s[o] ^= 0x20;
        assert!(
            !native.verify(&m, &s),
            "{set}: byte {o} flipped, native accepts"
        );
        assert!(!theirs(&m, &s), "{set}: byte {o} flipped, slh-dsa accepts");
    }
    assert!(!native.verify(&m, &sig[..sig.len() - 1]));
    let mut longer = sig.clone();
    longer.push(0);
    assert!(!native.verify(&m, &longer));
    // A mutated public key (seed or root byte).
    for i in [0, pk.len() - 1] {
        let mut bad = pk.clone();
        bad[i] ^= 1;
        let v = VerifyingKey::with_standard(set, Standard::Fips205, &bad).unwrap();
        assert!(
            !v.verify(&m, &sig),
            "{set}: public key byte {i} flipped, accepted"
        );
    }
}

/// FIPS 205 Table 2 for `set`: FORS trees `k`, FORS height `a`, layers `d` and the height
/// of one layer's tree `h'` (they depend only on the security level and s/f).
fn shape(set: ParamSet) -> (usize, usize, usize, usize) {
    match set.name().rsplit('-').next().unwrap() {
        "128s" => (14, 12, 7, 9),
        "128f" => (33, 6, 22, 3),
        "192s" => (17, 14, 7, 9),
        "192f" => (33, 8, 22, 3),
        "256s" => (22, 14, 8, 8),
        _ => (35, 9, 17, 4),
    }
}

#[test]
fn fips205_mode_agrees_with_slh_dsa_on_every_set() {
    check::<slh_dsa::Sha2_128s>(ParamSet::Sha2_128s, 1);
    check::<slh_dsa::Sha2_128f>(ParamSet::Sha2_128f, 2);
    check::<slh_dsa::Sha2_192s>(ParamSet::Sha2_192s, 3);
    check::<slh_dsa::Sha2_192f>(ParamSet::Sha2_192f, 4);
    check::<slh_dsa::Sha2_256s>(ParamSet::Sha2_256s, 5);
    check::<slh_dsa::Sha2_256f>(ParamSet::Sha2_256f, 6);
    check::<slh_dsa::Shake128s>(ParamSet::Shake128s, 7);
    check::<slh_dsa::Shake128f>(ParamSet::Shake128f, 8);
    check::<slh_dsa::Shake192s>(ParamSet::Shake192s, 9);
    check::<slh_dsa::Shake192f>(ParamSet::Shake192f, 10);
    check::<slh_dsa::Shake256s>(ParamSet::Shake256s, 11);
    check::<slh_dsa::Shake256f>(ParamSet::Shake256f, 12);
}
