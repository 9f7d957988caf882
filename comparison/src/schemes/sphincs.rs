//! Raw SPHINCS+ round 3.1 ("simple") on the twelve sets of DGSP ids 1-12, with PQClean
//! (`pqcrypto-sphincsplus`, its AVX2 code chosen at run time; the library that signs DGSP's
//! round 3.1 certificates): key pair, detached signature, verification. Also dgsp-core's
//! native verifier on the same signatures (what DGSP verification runs).

use dgsp_core::ParamSet;
use pqcrypto_traits::sign::{DetachedSignature as _, PublicKey as _, SecretKey as _};

use super::{measure_plain, plain_row, Plain, Scheme, MESSAGE};
use crate::error::CompareError;
use crate::measure::{self, Budget};
use crate::results::{Extra, Kind, Row, Sizes};

/// The name of the native verifier's extra row.
pub const NATIVE_VERIFY: &str = "verify, dgsp-core native verifier";

/// Raw SPHINCS+ on the round 3.1 set `.0` (one of ids 1-12).
pub struct Sphincs(pub ParamSet);

/// The NIST category of a set, in words.
pub fn level(set: ParamSet) -> String {
    let category = match set.n() {
        16 => 1,
        24 => 3,
        _ => 5,
    };
    format!("NIST {category}")
}

macro_rules! pqclean {
    ($name:ident, $m:ident) => {
        /// One PQClean module.
        struct $name;

        impl Plain for $name {
            type Pk = pqcrypto_sphincsplus::$m::PublicKey;
            type Sk = pqcrypto_sphincsplus::$m::SecretKey;
            type Sig = pqcrypto_sphincsplus::$m::DetachedSignature;

            /// PQClean draws its own seeds from the OS (inside the timed call).
            fn seed_len(&self) -> usize {
                0
            }

            fn keygen(&self, _seed: &[u8]) -> Result<(Self::Pk, Self::Sk), CompareError> {
                Ok(pqcrypto_sphincsplus::$m::keypair())
            }

            fn sign(&self, sk: &Self::Sk, msg: &[u8]) -> Self::Sig {
                pqcrypto_sphincsplus::$m::detached_sign(msg, sk)
            }

            fn verify(&self, pk: &Self::Pk, msg: &[u8], sig: &Self::Sig) -> bool {
                pqcrypto_sphincsplus::$m::verify_detached_signature(sig, msg, pk).is_ok()
            }

            fn sizes(&self, pk: &Self::Pk, sk: &Self::Sk, sig: &Self::Sig) -> Sizes {
                Sizes {
                    public_key: pk.as_bytes().len(),
                    secret_key: sk.as_bytes().len(),
                    signature: sig.as_bytes().len(),
                }
            }
        }
    };
}

pqclean!(Sha2_128s, sphincssha2128ssimple);
pqclean!(Sha2_128f, sphincssha2128fsimple);
pqclean!(Sha2_192s, sphincssha2192ssimple);
pqclean!(Sha2_192f, sphincssha2192fsimple);
pqclean!(Sha2_256s, sphincssha2256ssimple);
pqclean!(Sha2_256f, sphincssha2256fsimple);
pqclean!(Shake128s, sphincsshake128ssimple);
pqclean!(Shake128f, sphincsshake128fsimple);
pqclean!(Shake192s, sphincsshake192ssimple);
pqclean!(Shake192f, sphincsshake192fsimple);
pqclean!(Shake256s, sphincsshake256ssimple);
pqclean!(Shake256f, sphincsshake256fsimple);

fn measure_set<P: Plain>(p: &P, set: ParamSet, budget: &Budget) -> Result<Row, CompareError>
where
    P::Pk: pqcrypto_traits::sign::PublicKey,
    P::Sig: pqcrypto_traits::sign::DetachedSignature,
{
    let name = format!("SPHINCS+ {set}");
    let m = measure_plain(p, &name, budget)?;
    let mut row = plain_row(
        &m,
        "SPHINCS+",
        set.name(),
        Kind::Sphincs,
        &level(set),
        "pqcrypto-sphincsplus 0.7.2 (PQClean)",
    );
    let native = dgsp_core::sphincs::VerifyingKey::new(set, m.pk.as_bytes())
        .map_err(|e| CompareError::library(&name, e))?;
    let sig = m.sig.as_bytes();
    if !native.verify(MESSAGE, sig) {
        return Err(CompareError::SelfCheck(format!("{name} (native verifier)")));
    }
    row.extra.push(Extra {
        name: NATIVE_VERIFY.into(),
        estimate: measure::simple(budget, || native.verify(MESSAGE, sig)),
    });
    row.notes
        .push("keygen includes PQClean drawing its 3N seed bytes from the OS".into());
    Ok(row)
}

impl Scheme for Sphincs {
    fn label(&self) -> String {
        format!("SPHINCS+ {}", self.0)
    }

    fn measure(&self, budget: &Budget) -> Result<Row, CompareError> {
        let (s, b) = (self.0, budget);
        match s {
            ParamSet::Sha2_128s => measure_set(&Sha2_128s, s, b),
            ParamSet::Sha2_128f => measure_set(&Sha2_128f, s, b),
            ParamSet::Sha2_192s => measure_set(&Sha2_192s, s, b),
            ParamSet::Sha2_192f => measure_set(&Sha2_192f, s, b),
            ParamSet::Sha2_256s => measure_set(&Sha2_256s, s, b),
            ParamSet::Sha2_256f => measure_set(&Sha2_256f, s, b),
            ParamSet::Shake128s => measure_set(&Shake128s, s, b),
            ParamSet::Shake128f => measure_set(&Shake128f, s, b),
            ParamSet::Shake192s => measure_set(&Shake192s, s, b),
            ParamSet::Shake192f => measure_set(&Shake192f, s, b),
            ParamSet::Shake256s => measure_set(&Shake256s, s, b),
            ParamSet::Shake256f => measure_set(&Shake256f, s, b),
            fips205 => Err(CompareError::library(
                "SPHINCS+",
                format!("{fips205} is a FIPS 205 set"),
            )),
        }
    }
}
