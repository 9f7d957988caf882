//! The manager's hash-based signatures, signing side: key pairs and signatures for the
//! certificate, checkpoint and snapshot messages, made by the crate's native signer
//! ([`crate::sphincs::SigningKey`]) on all 24 sets: SPHINCS+ round 3.1 on ids 1-12, FIPS 205
//! SLH-DSA (pure mode, empty context, hedged) on ids 13-24.
//!
//! The libraries that signed before it are its oracles (feature `oracle`, and the crate's
//! own tests), byte for byte (`docs/sphincs-signer.md`):
//!
//! | standard | ids | oracle |
//! |---|---|---|
//! | SPHINCS+ round 3.1 | 1-12 | PQClean (`pqclean`, C, unmaintained since 2026) |
//! | FIPS 205 SLH-DSA | 13-24 | RustCrypto `slh-dsa` (`slh`, pure Rust) |

#[cfg(any(test, feature = "oracle"))]
mod pqclean;
#[cfg(any(test, feature = "oracle"))]
mod slh;

use rand_core::{CryptoRngCore, RngCore};
use zeroize::Zeroizing;

use crate::params::ParamSet;
use crate::sphincs::{SignError, SigningKey};

/// A fresh key pair `(PK.seed || PK.root, SK.seed || SK.prf || PK.seed || PK.root)` from
/// three `N`-byte seeds drawn from `rng` (FIPS 205 `slh_keygen`; PQClean's
/// `crypto_sign_keypair` for round 3.1 sets).
pub(crate) fn keypair(
    params: ParamSet,
    rng: &mut impl CryptoRngCore,
) -> (Vec<u8>, Zeroizing<Vec<u8>>) {
    let n = params.n();
    let mut seeds = Zeroizing::new([0u8; 96]);
    rng.fill_bytes(&mut seeds[..3 * n]);
    let key = SigningKey::from_seeds(params, &seeds[..n], &seeds[n..2 * n], &seeds[2 * n..3 * n])
        .expect("three seeds of the set's length");
    (key.public_key().to_vec(), key.to_bytes())
}

/// Whether the `4N`-byte secret key `sk` is whole: its `PK.root` is the root its seeds give
/// (one hypertree layer of work). Decoders of manager keys check this, so that
/// [`sign`] never meets an inconsistent key.
pub(crate) fn is_consistent(params: ParamSet, sk: &[u8]) -> bool {
    SigningKey::from_bytes(params, sk).is_ok_and(|k| k.check())
}

/// Signs `msg` with the `4N`-byte secret key `sk` (its length and consistency checked when
/// decoded): a round 3.1 signature with `OptRand`, or FIPS 205 pure `slh_sign(msg, ctx = "")`
/// hedged with `addrnd`, `N` bytes fresh from the operating system (spec section 7).
///
/// # Panics
/// If the hypertree computed while signing does not end at the key's `PK.root`: with a key
/// checked at decoding ([`is_consistent`]) that is a fault of the machine, and a signature
/// from a faulty computation can give away one-time keys, so none is made.
pub(crate) fn sign(params: ParamSet, sk: &[u8], msg: &[u8]) -> Vec<u8> {
    let key = SigningKey::from_bytes(params, sk).expect("secret key length checked at decode");
    let mut opt_rand = Zeroizing::new([0u8; 32]);
    let opt_rand = &mut opt_rand[..params.n()];
    rand_core::OsRng.fill_bytes(opt_rand);
    match key.sign(msg, Some(opt_rand)) {
        Ok(sig) => sig,
        Err(e @ SignError::RootMismatch) => panic!("manager signature refused: {e}"),
        Err(e @ SignError::OptRandLength { .. }) => unreachable!("{e}"),
    }
}

/// The oracles: the libraries' own key generation, signing and verdicts.
#[cfg(any(test, feature = "oracle"))]
pub(crate) mod oracle {
    use super::*;
    use crate::params::Standard;

    /// A key pair made by the library of the set's standard: PQClean (from the operating
    /// system's randomness) or `slh-dsa` (seeds from `rng`).
    pub(crate) fn keypair(
        params: ParamSet,
        rng: &mut impl CryptoRngCore,
    ) -> (Vec<u8>, Zeroizing<Vec<u8>>) {
        match params.standard() {
            Standard::Round3 => pqclean::keypair(params),
            Standard::Fips205 => slh::keypair(params, rng),
        }
    }

    /// A signature made by the library: PQClean's (its own `OptRand`), or `slh-dsa`'s
    /// pure-mode signature with the empty context and fresh `addrnd`.
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

    /// PQClean's verdict on a round 3.1 signature (`false` for a FIPS 205 set).
    pub(crate) fn verify_pqclean(params: ParamSet, pk: &[u8], msg: &[u8], sig: &[u8]) -> bool {
        params.standard() == Standard::Round3 && pqclean::verify(params, pk, msg, sig)
    }

    /// The library's verdict on a signature of either standard: PQClean's for a round 3.1
    /// set, `slh-dsa`'s (pure mode, empty context) for a FIPS 205 set.
    pub(crate) fn verify(params: ParamSet, pk: &[u8], msg: &[u8], sig: &[u8]) -> bool {
        match params.standard() {
            Standard::Round3 => pqclean::verify(params, pk, msg, sig),
            Standard::Fips205 => slh::verify(params, pk, msg, sig),
        }
    }

    /// `slh-dsa`'s `slh_keygen_internal` (FIPS 205 sets only).
    pub(crate) use super::slh::keypair_from_seeds;

    /// `slh-dsa`'s pure-mode signature with the empty context and `opt_rand = addrnd`, or
    /// `PK.seed` (deterministic) when `None` (FIPS 205 sets only).
    pub(crate) fn slh_sign(
        params: ParamSet,
        sk: &[u8],
        msg: &[u8],
        addrnd: Option<&[u8]>,
    ) -> Vec<u8> {
        slh::sign(params, sk, msg, addrnd)
    }
}
