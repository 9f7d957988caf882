//! ML-DSA-44 and ML-DSA-65 (FIPS 204) with RustCrypto `ml-dsa`: key pair from the 32-byte
//! seed (`ML-DSA.KeyGen_internal`), the deterministic signing variant with the empty context
//! (what its `Signer` does), verification with the empty context.

use core::marker::PhantomData;

use ml_dsa::{MlDsaParams, Signature, Signer, SigningKey, VerifyingKey};

use super::{measure_plain, plain_row, Plain, Scheme};
use crate::error::CompareError;
use crate::measure::Budget;
use crate::results::{ExtraSize, Kind, Row, Sizes};

/// One ML-DSA parameter set.
pub struct MlDsa<P> {
    name: &'static str,
    level: &'static str,
    expanded_secret_key: usize,
    set: PhantomData<P>,
}

/// ML-DSA-44 (NIST category 2).
pub const ML_DSA_44: MlDsa<ml_dsa::MlDsa44> = MlDsa {
    name: "ML-DSA-44",
    level: "NIST 2",
    expanded_secret_key: 2560,
    set: PhantomData,
};

/// ML-DSA-65 (NIST category 3).
pub const ML_DSA_65: MlDsa<ml_dsa::MlDsa65> = MlDsa {
    name: "ML-DSA-65",
    level: "NIST 3",
    expanded_secret_key: 4032,
    set: PhantomData,
};

impl<P: MlDsaParams> Plain for MlDsa<P> {
    type Pk = VerifyingKey<P>;
    type Sk = SigningKey<P>;
    type Sig = Signature<P>;

    fn seed_len(&self) -> usize {
        32
    }

    fn keygen(&self, seed: &[u8]) -> Result<(VerifyingKey<P>, SigningKey<P>), CompareError> {
        let seed: [u8; 32] = seed
            .try_into()
            .map_err(|_| CompareError::library(self.name, "seed is not 32 bytes"))?;
        let sk = SigningKey::<P>::from_seed(&seed.into());
        Ok((ml_dsa::Keypair::verifying_key(&sk), sk))
    }

    fn sign(&self, sk: &SigningKey<P>, msg: &[u8]) -> Signature<P> {
        sk.sign(msg)
    }

    fn verify(&self, pk: &VerifyingKey<P>, msg: &[u8], sig: &Signature<P>) -> bool {
        pk.verify_with_context(msg, &[], sig)
    }

    fn sizes(&self, pk: &VerifyingKey<P>, sk: &SigningKey<P>, sig: &Signature<P>) -> Sizes {
        Sizes {
            public_key: pk.encode().len(),
            secret_key: sk.to_seed().len(),
            signature: sig.encode().len(),
        }
    }
}

impl<P: MlDsaParams> Scheme for MlDsa<P> {
    fn label(&self) -> String {
        self.name.into()
    }

    fn measure(&self, budget: &Budget) -> Result<Row, CompareError> {
        let m = measure_plain(self, self.name, budget)?;
        let mut row = plain_row(
            &m,
            "ML-DSA",
            self.name,
            Kind::Lattice,
            self.level,
            "ml-dsa 0.1.2",
        );
        row.extra_sizes.push(ExtraSize {
            name: "secret key, FIPS 204 expanded encoding".into(),
            bytes: self.expanded_secret_key,
        });
        row.notes.push(
            "secret key: the 32-byte seed (the form RustCrypto keeps); keygen expands it; \
             deterministic signing, empty context"
                .into(),
        );
        Ok(row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expanded_sizes_are_fips_204() {
        let (_, sk) = ML_DSA_44.keygen(&[7; 32]).unwrap();
        #[allow(deprecated)]
        let len = sk.expanded_key().to_expanded().len();
        assert_eq!(len, ML_DSA_44.expanded_secret_key);
        let (_, sk) = ML_DSA_65.keygen(&[7; 32]).unwrap();
        #[allow(deprecated)]
        let len = sk.expanded_key().to_expanded().len();
        assert_eq!(len, ML_DSA_65.expanded_secret_key);
    }
}
