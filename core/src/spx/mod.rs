//! The manager's hash-based signatures, signing side: key pairs and signatures for the
//! certificate, checkpoint and snapshot messages, by the parameter set's standard.
//!
//! | standard | ids | keys and signatures | verified by |
//! |---|---|---|---|
//! | SPHINCS+ round 3.1 | 1-12 | PQClean (`pqclean`, C, unmaintained since 2026) | [`crate::sphincs`] |
//! | FIPS 205 SLH-DSA | 13-24 | RustCrypto `slh-dsa` (`slh`, pure Rust) | [`crate::sphincs`] |
//!
//! Verification never comes here: the crate's native engine checks both families.

mod pqclean;
mod slh;

use rand_core::{CryptoRngCore, RngCore};
use zeroize::Zeroizing;

use crate::params::{ParamSet, Standard};

/// A fresh key pair `(PK.seed || PK.root, SK.seed || SK.prf || PK.seed || PK.root)`.
///
/// FIPS 205 sets draw their three seeds from `rng`; round 3.1 sets from the operating
/// system (PQClean takes no generator).
pub(crate) fn keypair(
    params: ParamSet,
    rng: &mut impl CryptoRngCore,
) -> (Vec<u8>, Zeroizing<Vec<u8>>) {
    match params.standard() {
        Standard::Round3 => pqclean::keypair(params),
        Standard::Fips205 => slh::keypair(params, rng),
    }
}

/// Signs `msg` with the `4N`-byte secret key `sk` (its length checked when decoded): a
/// round 3.1 signature (PQClean's randomisation), or FIPS 205 pure `slh_sign(msg, ctx = "")`
/// hedged with `addrnd` fresh from the operating system (spec section 7).
pub(crate) fn sign(params: ParamSet, sk: &[u8], msg: &[u8]) -> Vec<u8> {
    match params.standard() {
        Standard::Round3 => pqclean::sign(params, sk, msg),
        Standard::Fips205 => {
            let mut addrnd = Zeroizing::new([0u8; 32]);
            let addrnd = &mut addrnd[..params.n()];
            rand_core::OsRng.fill_bytes(addrnd);
            slh::sign(params, sk, msg, Some(addrnd))
        }
    }
}

/// PQClean's verdict on a round 3.1 signature: the native verifier's test oracle.
pub(crate) fn verify_pqclean(params: ParamSet, pk: &[u8], msg: &[u8], sig: &[u8]) -> bool {
    params.standard() == Standard::Round3 && pqclean::verify(params, pk, msg, sig)
}

/// The library's verdict on a signature of either standard: PQClean's for a round 3.1 set,
/// `slh-dsa`'s (pure mode, empty context) for a FIPS 205 set. The native verifier's test
/// oracle on all 24 sets.
pub(crate) fn verify_oracle(params: ParamSet, pk: &[u8], msg: &[u8], sig: &[u8]) -> bool {
    match params.standard() {
        Standard::Round3 => pqclean::verify(params, pk, msg, sig),
        Standard::Fips205 => slh::verify(params, pk, msg, sig),
    }
}

/// A FIPS 205 key pair from given seeds (`slh_keygen_internal`): for known-answer tests.
pub(crate) use slh::keypair_from_seeds;
/// A deterministic FIPS 205 signature (`opt_rand = PK.seed`): for known-answer tests.
pub(crate) fn sign_deterministic(params: ParamSet, sk: &[u8], msg: &[u8]) -> Vec<u8> {
    slh::sign(params, sk, msg, None)
}
