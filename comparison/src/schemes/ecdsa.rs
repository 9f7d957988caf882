//! ECDSA on P-256 with RustCrypto `p256` (precomputed base-point tables): RFC 6979
//! deterministic signing with SHA-256.

use p256::ecdsa::signature::{Signer, Verifier};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};

use super::{measure_plain, plain_row, Plain, Scheme};
use crate::error::CompareError;
use crate::measure::Budget;
use crate::results::{Kind, Row, Sizes};

/// ECDSA P-256 with SHA-256.
pub struct P256;

impl Plain for P256 {
    type Pk = VerifyingKey;
    type Sk = SigningKey;
    type Sig = Signature;

    fn seed_len(&self) -> usize {
        32
    }

    fn keygen(&self, seed: &[u8]) -> Result<(VerifyingKey, SigningKey), CompareError> {
        // A random 32-byte string is a valid scalar except with probability ~2^-32.
        let sk = SigningKey::from_slice(seed).map_err(|e| CompareError::library("P-256", e))?;
        Ok((*sk.verifying_key(), sk))
    }

    fn sign(&self, sk: &SigningKey, msg: &[u8]) -> Signature {
        sk.sign(msg)
    }

    fn verify(&self, pk: &VerifyingKey, msg: &[u8], sig: &Signature) -> bool {
        pk.verify(msg, sig).is_ok()
    }

    fn sizes(&self, pk: &VerifyingKey, sk: &SigningKey, sig: &Signature) -> Sizes {
        Sizes {
            public_key: pk.to_sec1_point(true).as_ref().len(),
            secret_key: sk.to_bytes().len(),
            signature: sig.to_bytes().len(),
        }
    }
}

impl Scheme for P256 {
    fn label(&self) -> String {
        "ECDSA P-256".into()
    }

    fn measure(&self, budget: &Budget) -> Result<Row, CompareError> {
        let m = measure_plain(self, "ECDSA P-256", budget)?;
        let mut row = plain_row(
            &m,
            "ECDSA",
            "P-256, SHA-256",
            Kind::Classical,
            "~128-bit, classical",
            "p256 0.14.0",
        );
        row.notes.push(
            "public key: compressed SEC1 point (33 B; 65 B uncompressed); signature: fixed r || s \
             (64 B; DER up to 72 B); signing is RFC 6979 deterministic"
                .into(),
        );
        Ok(row)
    }
}
