//! FIPS 205 SLH-DSA key generation and signing for ids 13-24, on RustCrypto's `slh-dsa`
//! (pure Rust; its signing keys zeroize on drop), dispatched at run time to its twelve
//! parameter-set types.

use rand_core::CryptoRngCore;
use slh_dsa::{ParameterSet, SigningKey};
use zeroize::Zeroizing;

use crate::params::ParamSet;

macro_rules! dispatch {
    ($params:expr, $P:ident => $body:expr) => {
        match $params {
            ParamSet::SlhDsaSha2_128s => {
                type $P = slh_dsa::Sha2_128s;
                $body
            }
            ParamSet::SlhDsaSha2_128f => {
                type $P = slh_dsa::Sha2_128f;
                $body
            }
            ParamSet::SlhDsaSha2_192s => {
                type $P = slh_dsa::Sha2_192s;
                $body
            }
            ParamSet::SlhDsaSha2_192f => {
                type $P = slh_dsa::Sha2_192f;
                $body
            }
            ParamSet::SlhDsaSha2_256s => {
                type $P = slh_dsa::Sha2_256s;
                $body
            }
            ParamSet::SlhDsaSha2_256f => {
                type $P = slh_dsa::Sha2_256f;
                $body
            }
            ParamSet::SlhDsaShake128s => {
                type $P = slh_dsa::Shake128s;
                $body
            }
            ParamSet::SlhDsaShake128f => {
                type $P = slh_dsa::Shake128f;
                $body
            }
            ParamSet::SlhDsaShake192s => {
                type $P = slh_dsa::Shake192s;
                $body
            }
            ParamSet::SlhDsaShake192f => {
                type $P = slh_dsa::Shake192f;
                $body
            }
            ParamSet::SlhDsaShake256s => {
                type $P = slh_dsa::Shake256s;
                $body
            }
            ParamSet::SlhDsaShake256f => {
                type $P = slh_dsa::Shake256f;
                $body
            }
            round3 => unreachable!("{round3} is signed by PQClean, not slh-dsa"),
        }
    };
}

/// A fresh key pair `(PK.seed || PK.root, SK.seed || SK.prf || PK.seed || PK.root)` from
/// three `N`-byte seeds drawn from `rng`.
pub(crate) fn keypair(
    params: ParamSet,
    rng: &mut impl CryptoRngCore,
) -> (Vec<u8>, Zeroizing<Vec<u8>>) {
    let n = params.n();
    let mut seeds = Zeroizing::new([0u8; 96]);
    rng.fill_bytes(&mut seeds[..3 * n]);
    keypair_from_seeds(params, &seeds[..n], &seeds[n..2 * n], &seeds[2 * n..3 * n])
}

/// FIPS 205 `slh_keygen_internal(SK.seed, SK.prf, PK.seed)`. Each seed must be `N` bytes.
pub(crate) fn keypair_from_seeds(
    params: ParamSet,
    sk_seed: &[u8],
    sk_prf: &[u8],
    pk_seed: &[u8],
) -> (Vec<u8>, Zeroizing<Vec<u8>>) {
    dispatch!(params, P => {
        let sk = SigningKey::<P>::slh_keygen_internal(sk_seed, sk_prf, pk_seed);
        let bytes = Zeroizing::new(sk.to_bytes().to_vec());
        let pk = bytes[2 * params.n()..].to_vec();
        (pk, bytes)
    })
}

/// FIPS 205 pure `slh_sign(msg, ctx = "", sk)` with `opt_rand = addrnd` (`N` bytes), or
/// `PK.seed` (the deterministic variant) when `None`. `sk` must be `4N` bytes (checked when
/// the key was decoded).
pub(crate) fn sign(params: ParamSet, sk: &[u8], msg: &[u8], addrnd: Option<&[u8]>) -> Vec<u8> {
    dispatch!(params, P => sign_with::<P>(sk, msg, addrnd))
}

/// `slh-dsa`'s verdict on a FIPS 205 pure-mode signature with the empty context: any
/// length or content error is `false`.
pub(crate) fn verify(params: ParamSet, pk: &[u8], msg: &[u8], sig: &[u8]) -> bool {
    dispatch!(params, P => verify_with::<P>(pk, msg, sig))
}

fn verify_with<P: ParameterSet>(pk: &[u8], msg: &[u8], sig: &[u8]) -> bool {
    let (Ok(vk), Ok(sig)) = (
        slh_dsa::VerifyingKey::<P>::try_from(pk),
        slh_dsa::Signature::<P>::try_from(sig),
    ) else {
        return false;
    };
    vk.try_verify_with_context(msg, &[], &sig).is_ok()
}

fn sign_with<P: ParameterSet>(sk: &[u8], msg: &[u8], addrnd: Option<&[u8]>) -> Vec<u8> {
    let sk = SigningKey::<P>::try_from(sk).expect("secret key length checked at decode");
    sk.try_sign_with_context(msg, &[], addrnd)
        .expect("the empty context is not too long")
        .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sphincs::VerifyingKey;

    #[test]
    fn keys_and_signatures_have_the_table_sizes_and_verify_natively() {
        for p in ParamSet::FIPS205.into_iter().filter(|p| p.is_fast()) {
            let (pk, sk) = keypair(p, &mut rand_core::OsRng);
            assert_eq!(
                (pk.len(), sk.len()),
                (p.spx_pk_len(), p.spx_sk_len()),
                "{p}"
            );
            assert_eq!(&sk[2 * p.n()..], &pk[..], "{p}: sk ends with pk");
            let sig = sign(p, &sk, b"m", Some(&[9; 32][..p.n()]));
            assert_eq!(sig.len(), p.spx_sig_len(), "{p}");
            let vk = VerifyingKey::new(p, &pk).unwrap();
            assert!(vk.verify(b"m", &sig), "{p}");
            assert!(!vk.verify(b"n", &sig), "{p}");
            assert!(verify(p, &pk, b"m", &sig), "{p}: slh-dsa's verdict");
            assert!(!verify(p, &pk, b"n", &sig), "{p}: slh-dsa's verdict");
            assert!(!verify(p, &pk, b"m", &sig[1..]), "{p}: a short signature");
            // Deterministic signing is reproducible; hedged signing is not.
            assert_eq!(sign(p, &sk, b"m", None), sign(p, &sk, b"m", None));
            assert_ne!(
                super::super::sign(p, &sk, b"m"),
                super::super::sign(p, &sk, b"m")
            );
        }
    }
}
