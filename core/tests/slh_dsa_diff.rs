//! The native verifier on the 12 FIPS 205 sets (ids 13-24) against RustCrypto's `slh-dsa`
//! (an independent FIPS 205 implementation, also the crate's signer for these sets):
//! signatures `slh-dsa` makes (pure mode, with the empty context as DGSP signs, and with
//! another context) verify natively, and every mutation class rejects on both sides. Also:
//! the same signature does not verify under the round 3.1 twin's rules (the FORS index rule
//! differs), except on the 192f sets (a = 8), where the two rules coincide — there only the
//! parameter id in every DGSP header keeps the families apart (tests/protocol.rs).
//!
//! The random differential test is `#[ignore]`d; run it in release:
//! `DGSP_SLH_DIFF_CASES=1000000 cargo test --release -p dgsp-core --test slh_dsa_diff random_differential -- --ignored --nocapture`

mod support;

use dgsp_core::sphincs::{fips205_message, VerifyingKey};
use dgsp_core::{ParamSet, Standard};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use slh_dsa::signature::Keypair;
use slh_dsa::{ParameterSet, Signature, SigningKey};

/// Signs with `slh-dsa` and checks the native verdicts (and `slh-dsa`'s own) on the
/// signature and on one mutation of each region.
fn check<P: ParameterSet>(set: ParamSet, seed: u64) {
    assert_eq!(set.standard(), Standard::Fips205);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut seeds = [0u8; 96];
    rng.fill_bytes(&mut seeds);
    let n = set.n();
    let sk =
        SigningKey::<P>::slh_keygen_internal(&seeds[..n], &seeds[32..32 + n], &seeds[64..64 + n]);
    let vk = sk.verifying_key();
    let pk = vk.to_bytes().to_vec();
    // The empty context, as DGSP signs, on the slow-to-sign `s` sets; another context on the
    // `f` sets, which also sign once with the empty one.
    let msg = b"a message signed under FIPS 205".as_slice();
    let ctx: &[u8] = if set.is_fast() { b"dgsp" } else { b"" };
    let sig = sk
        .try_sign_with_context(msg, ctx, Some(&[7u8; 32][..set.n()]))
        .unwrap()
        .to_vec();
    let native = VerifyingKey::new(set, &pk).unwrap();
    let m = fips205_message(ctx, msg).unwrap();
    let theirs = |m: &[u8], s: &[u8]| {
        Signature::<P>::try_from(s).is_ok_and(|s| vk.slh_verify_internal(&[m], &s).is_ok())
    };
    assert!(theirs(&m, &sig), "{set}: slh-dsa rejects its own signature");
    assert!(
        native.verify_internal(&m, &sig),
        "{set}: native FIPS 205 rejects a valid signature"
    );
    // The empty context, as DGSP signs: `verify` adds the prefix itself.
    let plain = if ctx.is_empty() {
        sig.clone()
    } else {
        let plain = sk
            .try_sign_with_context(msg, &[], Some(&[5u8; 32][..n]))
            .unwrap()
            .to_vec();
        assert!(
            !native.verify(msg, &sig),
            "{set}: context \"dgsp\" taken for the empty one"
        );
        plain
    };
    assert!(native.verify(msg, &plain), "{set}: empty context");
    assert!(native.verify_internal(&fips205_message(&[], msg).unwrap(), &plain));
    assert!(
        !native.verify_internal(msg, &plain),
        "{set}: accepted without the prefix"
    );
    // The other standard's FORS index rule gives another FORS key: rejected. Except where
    // an index is exactly one byte (a = 8: the 192f sets), where both rules read the same
    // indices, so the standards coincide on the same M': there, only the parameter set id a
    // DGSP encoding carries can keep the families apart (issue 14).
    let round3 = VerifyingKey::new(set.twin(), &pk).unwrap();
    assert_eq!(round3.standard(), Standard::Round3);
    assert_eq!(
        round3.verify(&m, &sig),
        shape(set).1 == 8,
        "{set}: the round 3.1 rules and FIPS 205 should differ exactly when a != 8"
    );
    // Without the pure-mode prefix, or with another context: rejected.
    assert!(
        !native.verify_internal(msg, &sig),
        "{set}: accepted without the M' prefix"
    );
    let other_ctx = fips205_message(b"other", msg).unwrap();
    assert!(!native.verify_internal(&other_ctx, &sig));

    // Mutations: the message, then the first byte of every region of the signature (R,
    // each FORS tree's secret and path, each layer's WOTS+ signature and path), then the
    // last byte, truncation and extension.
    let (k, a, d, hp) = shape(set);
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
            !native.verify_internal(&m, &s),
            "{set}: byte {o} flipped, native accepts"
        );
        assert!(!theirs(&m, &s), "{set}: byte {o} flipped, slh-dsa accepts");
    }
    assert!(!native.verify_internal(&m, &sig[..sig.len() - 1]));
    let mut longer = sig.clone();
    longer.push(0);
    assert!(!native.verify_internal(&m, &longer));
    // A mutated public key (seed or root byte).
    for i in [0, pk.len() - 1] {
        let mut bad = pk.clone();
        bad[i] ^= 1;
        let v = VerifyingKey::new(set, &bad).unwrap();
        assert!(
            !v.verify_internal(&m, &sig),
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

/// One test per set, so that the harness runs them in parallel.
macro_rules! sets {
    ($($name:ident: $P:ty => $set:ident, $seed:literal;)*) => {$(
        #[test]
        fn $name() {
            check::<$P>(ParamSet::$set, $seed);
        }
    )*};
}

sets! {
    slh_dsa_sha2_128s: slh_dsa::Sha2_128s => SlhDsaSha2_128s, 1;
    slh_dsa_sha2_128f: slh_dsa::Sha2_128f => SlhDsaSha2_128f, 2;
    slh_dsa_sha2_192s: slh_dsa::Sha2_192s => SlhDsaSha2_192s, 3;
    slh_dsa_sha2_192f: slh_dsa::Sha2_192f => SlhDsaSha2_192f, 4;
    slh_dsa_sha2_256s: slh_dsa::Sha2_256s => SlhDsaSha2_256s, 5;
    slh_dsa_sha2_256f: slh_dsa::Sha2_256f => SlhDsaSha2_256f, 6;
    slh_dsa_shake_128s: slh_dsa::Shake128s => SlhDsaShake128s, 7;
    slh_dsa_shake_128f: slh_dsa::Shake128f => SlhDsaShake128f, 8;
    slh_dsa_shake_192s: slh_dsa::Shake192s => SlhDsaShake192s, 9;
    slh_dsa_shake_192f: slh_dsa::Shake192f => SlhDsaShake192f, 10;
    slh_dsa_shake_256s: slh_dsa::Shake256s => SlhDsaShake256s, 11;
    slh_dsa_shake_256f: slh_dsa::Shake256f => SlhDsaShake256f, 12;
}

/// A verifier's verdict on a message and a signature.
type Verdict = Box<dyn Fn(&[u8], &[u8]) -> bool>;

/// One set of the random differential: a key made by `slh-dsa`, eight messages it signed
/// (empty context, as DGSP signs), the native verifier, and `slh-dsa`'s verdict.
struct Fixture {
    set: ParamSet,
    native: VerifyingKey,
    signed: Vec<(Vec<u8>, Vec<u8>)>,
    theirs: Verdict,
}

impl support::Fixture for Fixture {
    fn set(&self) -> ParamSet {
        self.set
    }
    fn signed(&self) -> &[(Vec<u8>, Vec<u8>)] {
        &self.signed
    }
    fn verdicts(&self, m: &[u8], s: &[u8]) -> (bool, bool) {
        (self.native.verify(m, s), (self.theirs)(m, s))
    }
}

fn fixture<P: ParameterSet + 'static>(set: ParamSet, rng: &mut ChaCha20Rng) -> Fixture {
    let n = set.n();
    let mut seeds = [0u8; 96];
    rng.fill_bytes(&mut seeds);
    let sk =
        SigningKey::<P>::slh_keygen_internal(&seeds[..n], &seeds[32..32 + n], &seeds[64..64 + n]);
    let vk = sk.verifying_key();
    let signed = (0..8)
        .map(|i| {
            let mut m = vec![0u8; i * 9];
            rng.fill_bytes(&mut m);
            let mut opt = [0u8; 32];
            rng.fill_bytes(&mut opt);
            let s = sk
                .try_sign_with_context(&m, &[], Some(&opt[..n]))
                .unwrap()
                .to_vec();
            (m, s)
        })
        .collect();
    Fixture {
        set,
        native: VerifyingKey::new(set, &vk.to_bytes()).unwrap(),
        signed,
        theirs: Box::new(move |m, s| {
            let m = fips205_message(&[], m).unwrap();
            Signature::<P>::try_from(s).is_ok_and(|s| vk.slh_verify_internal(&[&m], &s).is_ok())
        }),
    }
}

/// Random mutations on slh-dsa-sha2-128f and slh-dsa-shake-128f; the native verdict
/// (`VerifyingKey::verify`, the path DGSP takes: pure mode, empty context) must equal
/// `slh-dsa`'s on every case. Cases: env `DGSP_SLH_DIFF_CASES` (default 1,000,000); RNG
/// seed: `DGSP_SLH_DIFF_SEED` (fixed default; keys and signatures follow from it).
#[test]
#[ignore = "long: run in release with DGSP_SLH_DIFF_CASES"]
fn random_differential() {
    let cases = support::env_u64("DGSP_SLH_DIFF_CASES", 1_000_000);
    let seed = support::env_u64("DGSP_SLH_DIFF_SEED", 0x534c_4844_4946_4621);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let fixtures = [
        fixture::<slh_dsa::Sha2_128f>(ParamSet::SlhDsaSha2_128f, &mut rng),
        fixture::<slh_dsa::Shake128f>(ParamSet::SlhDsaShake128f, &mut rng),
    ];
    let (accepted, rejected) = support::run_cases(&mut rng, cases, &fixtures);
    println!(
        "random differential (seed {seed}): {cases} cases agree with slh-dsa ({accepted} accepted, {rejected} rejected)"
    );
}
