//! SPHINCS+ round 3.1 ("simple") key generation and signing for ids 1-12, dispatched at run
//! time to the twelve `pqcrypto-sphincsplus` modules (PQClean; AVX2 code is chosen
//! automatically on x86-64 CPUs that have it). Its `verify` is only the test oracle of the
//! native verifier.
//!
//! Known limit: `pqcrypto` keeps the secret key in its own `SecretKey` type, which does not
//! zeroize on drop. We build one only for the duration of a signing call.

use pqcrypto_traits::sign::{DetachedSignature as _, PublicKey as _, SecretKey as _};
use zeroize::Zeroizing;

use crate::params::ParamSet;

macro_rules! dispatch {
    ($params:expr, $m:ident => $body:expr) => {
        match $params {
            ParamSet::Sha2_128s => {
                use pqcrypto_sphincsplus::sphincssha2128ssimple as $m;
                $body
            }
            ParamSet::Sha2_128f => {
                use pqcrypto_sphincsplus::sphincssha2128fsimple as $m;
                $body
            }
            ParamSet::Sha2_192s => {
                use pqcrypto_sphincsplus::sphincssha2192ssimple as $m;
                $body
            }
            ParamSet::Sha2_192f => {
                use pqcrypto_sphincsplus::sphincssha2192fsimple as $m;
                $body
            }
            ParamSet::Sha2_256s => {
                use pqcrypto_sphincsplus::sphincssha2256ssimple as $m;
                $body
            }
            ParamSet::Sha2_256f => {
                use pqcrypto_sphincsplus::sphincssha2256fsimple as $m;
                $body
            }
            ParamSet::Shake128s => {
                use pqcrypto_sphincsplus::sphincsshake128ssimple as $m;
                $body
            }
            ParamSet::Shake128f => {
                use pqcrypto_sphincsplus::sphincsshake128fsimple as $m;
                $body
            }
            ParamSet::Shake192s => {
                use pqcrypto_sphincsplus::sphincsshake192ssimple as $m;
                $body
            }
            ParamSet::Shake192f => {
                use pqcrypto_sphincsplus::sphincsshake192fsimple as $m;
                $body
            }
            ParamSet::Shake256s => {
                use pqcrypto_sphincsplus::sphincsshake256ssimple as $m;
                $body
            }
            ParamSet::Shake256f => {
                use pqcrypto_sphincsplus::sphincsshake256fsimple as $m;
                $body
            }
            fips205 => unreachable!("{fips205} is signed by slh-dsa, not PQClean"),
        }
    };
}

/// A fresh key pair `(public key, secret key)` from the operating system's randomness;
/// `params` a round 3.1 set.
pub(crate) fn keypair(params: ParamSet) -> (Vec<u8>, Zeroizing<Vec<u8>>) {
    dispatch!(params, m => {
        let (pk, sk) = m::keypair();
        (pk.as_bytes().to_vec(), Zeroizing::new(sk.as_bytes().to_vec()))
    })
}

/// Signs `msg`. `sk` must be `4N` bytes (checked when the key was decoded); `params` a
/// round 3.1 set.
pub(crate) fn sign(params: ParamSet, sk: &[u8], msg: &[u8]) -> Vec<u8> {
    dispatch!(params, m => {
        let sk = m::SecretKey::from_bytes(sk).expect("secret key length checked at decode");
        m::detached_sign(msg, &sk).as_bytes().to_vec()
    })
}

/// Verifies a detached signature; any length or content error is simply `false`.
pub(crate) fn verify(params: ParamSet, pk: &[u8], msg: &[u8], sig: &[u8]) -> bool {
    dispatch!(params, m => {
        let (Ok(pk), Ok(sig)) = (m::PublicKey::from_bytes(pk), m::DetachedSignature::from_bytes(sig)) else {
            return false;
        };
        m::verify_detached_signature(&sig, msg, &pk).is_ok()
    })
}

/// The library's own sizes `(public key, secret key, signature)`, to check our table.
#[cfg(test)]
pub(crate) fn library_sizes(params: ParamSet) -> (usize, usize, usize) {
    dispatch!(params, m => (m::public_key_bytes(), m::secret_key_bytes(), m::signature_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_table_matches_the_library() {
        for p in ParamSet::ROUND3 {
            assert_eq!(
                library_sizes(p),
                (p.spx_pk_len(), p.spx_sk_len(), p.spx_sig_len()),
                "{p}"
            );
        }
    }
}
