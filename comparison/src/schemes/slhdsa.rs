//! Raw FIPS 205 SLH-DSA on the twelve sets of DGSP ids 13-24, with RustCrypto `slh-dsa`
//! (the library that signs DGSP's FIPS 205 certificates): key pair from the three seeds
//! (`slh_keygen_internal`), pure-mode signing with the empty context and an `N`-byte
//! `addrnd` (the hedged variant; the same cost as drawing it fresh), verification. Also
//! dgsp-core's native verifier on the same signatures (what DGSP verification runs).

use core::marker::PhantomData;

use dgsp_core::ParamSet;
use slh_dsa::{ParameterSet, Signature, SigningKey, VerifyingKey};

use super::{measure_plain, plain_row, Plain, Scheme, MESSAGE};
use crate::error::CompareError;
use crate::measure::{self, Budget};
use crate::results::{Extra, Kind, Row, Sizes};

/// Raw SLH-DSA on the FIPS 205 set `.0` (one of ids 13-24).
pub struct SlhDsa(pub ParamSet);

/// The `slh-dsa` type of one set.
struct Fips205<P> {
    n: usize,
    set: PhantomData<P>,
}

impl<P: ParameterSet> Plain for Fips205<P> {
    type Pk = VerifyingKey<P>;
    type Sk = SigningKey<P>;
    type Sig = Signature<P>;

    fn seed_len(&self) -> usize {
        3 * self.n
    }

    fn keygen(&self, seed: &[u8]) -> Result<(VerifyingKey<P>, SigningKey<P>), CompareError> {
        let n = self.n;
        let sk = SigningKey::<P>::slh_keygen_internal(&seed[..n], &seed[n..2 * n], &seed[2 * n..]);
        let vk: &VerifyingKey<P> = sk.as_ref();
        Ok((vk.clone(), sk))
    }

    fn sign(&self, sk: &SigningKey<P>, msg: &[u8]) -> Signature<P> {
        let addrnd = [0x5a; 32];
        sk.try_sign_with_context(msg, &[], Some(&addrnd[..self.n]))
            .expect("the empty context is not too long")
    }

    fn verify(&self, pk: &VerifyingKey<P>, msg: &[u8], sig: &Signature<P>) -> bool {
        pk.try_verify_with_context(msg, &[], sig).is_ok()
    }

    fn sizes(&self, pk: &VerifyingKey<P>, sk: &SigningKey<P>, sig: &Signature<P>) -> Sizes {
        Sizes {
            public_key: pk.to_bytes().len(),
            secret_key: sk.to_bytes().len(),
            signature: sig.to_bytes().len(),
        }
    }
}

fn measure_set<P: ParameterSet>(set: ParamSet, budget: &Budget) -> Result<Row, CompareError> {
    let name = format!("SLH-DSA {set}");
    let p = Fips205::<P> {
        n: set.n(),
        set: PhantomData,
    };
    let m = measure_plain(&p, &name, budget)?;
    let mut row = plain_row(
        &m,
        "SLH-DSA",
        set.name(),
        Kind::SlhDsa,
        &super::sphincs::level(set),
        "slh-dsa 0.2.0-rc.5",
    );
    let native = dgsp_core::sphincs::VerifyingKey::new(set, &m.pk.to_bytes())
        .map_err(|e| CompareError::library(&name, e))?;
    let sig = m.sig.to_bytes();
    if !native.verify(MESSAGE, &sig) {
        return Err(CompareError::SelfCheck(format!("{name} (native verifier)")));
    }
    row.extra.push(Extra {
        name: super::sphincs::NATIVE_VERIFY.into(),
        estimate: measure::simple(budget, || native.verify(MESSAGE, &sig)),
    });
    Ok(row)
}

impl Scheme for SlhDsa {
    fn label(&self) -> String {
        format!("SLH-DSA {}", self.0)
    }

    fn measure(&self, budget: &Budget) -> Result<Row, CompareError> {
        let b = budget;
        match self.0 {
            ParamSet::SlhDsaSha2_128s => measure_set::<slh_dsa::Sha2_128s>(self.0, b),
            ParamSet::SlhDsaSha2_128f => measure_set::<slh_dsa::Sha2_128f>(self.0, b),
            ParamSet::SlhDsaSha2_192s => measure_set::<slh_dsa::Sha2_192s>(self.0, b),
            ParamSet::SlhDsaSha2_192f => measure_set::<slh_dsa::Sha2_192f>(self.0, b),
            ParamSet::SlhDsaSha2_256s => measure_set::<slh_dsa::Sha2_256s>(self.0, b),
            ParamSet::SlhDsaSha2_256f => measure_set::<slh_dsa::Sha2_256f>(self.0, b),
            ParamSet::SlhDsaShake128s => measure_set::<slh_dsa::Shake128s>(self.0, b),
            ParamSet::SlhDsaShake128f => measure_set::<slh_dsa::Shake128f>(self.0, b),
            ParamSet::SlhDsaShake192s => measure_set::<slh_dsa::Shake192s>(self.0, b),
            ParamSet::SlhDsaShake192f => measure_set::<slh_dsa::Shake192f>(self.0, b),
            ParamSet::SlhDsaShake256s => measure_set::<slh_dsa::Shake256s>(self.0, b),
            ParamSet::SlhDsaShake256f => measure_set::<slh_dsa::Shake256f>(self.0, b),
            round3 => Err(CompareError::library(
                "SLH-DSA",
                format!("{round3} is a SPHINCS+ round 3.1 set"),
            )),
        }
    }
}
