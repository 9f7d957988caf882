//! Ed25519 with `ed25519-dalek` (precomputed tables, the `fast` default; curve25519-dalek
//! picks its AVX2 backend at run time), single and batch verification.

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};

use super::{measure_plain, plain_row, random_bytes, Plain, Scheme, MESSAGE};
use crate::error::CompareError;
use crate::measure::{self, Budget};
use crate::results::{Extra, Kind, Row, Sizes};

/// Signatures per batch verification.
pub const BATCH: usize = 64;

/// Ed25519 (RFC 8032).
pub struct Ed25519;

impl Plain for Ed25519 {
    type Pk = VerifyingKey;
    type Sk = SigningKey;
    type Sig = Signature;

    fn seed_len(&self) -> usize {
        32
    }

    fn keygen(&self, seed: &[u8]) -> Result<(VerifyingKey, SigningKey), CompareError> {
        let seed: &[u8; 32] = seed
            .try_into()
            .map_err(|_| CompareError::library("Ed25519", "seed is not 32 bytes"))?;
        let sk = SigningKey::from_bytes(seed);
        Ok((sk.verifying_key(), sk))
    }

    fn sign(&self, sk: &SigningKey, msg: &[u8]) -> Signature {
        sk.sign(msg)
    }

    fn verify(&self, pk: &VerifyingKey, msg: &[u8], sig: &Signature) -> bool {
        pk.verify(msg, sig).is_ok()
    }

    fn sizes(&self, pk: &VerifyingKey, sk: &SigningKey, sig: &Signature) -> Sizes {
        Sizes {
            public_key: pk.as_bytes().len(),
            secret_key: sk.as_bytes().len(),
            signature: sig.to_bytes().len(),
        }
    }
}

impl Scheme for Ed25519 {
    fn label(&self) -> String {
        "Ed25519".into()
    }

    fn measure(&self, budget: &Budget) -> Result<Row, CompareError> {
        let m = measure_plain(self, "Ed25519", budget)?;
        let mut row = plain_row(
            &m,
            "Ed25519",
            "RFC 8032",
            Kind::Classical,
            "~128-bit, classical",
            "ed25519-dalek 3.0.0",
        );
        // A batch of distinct signers and messages, as a verifier receiving traffic has.
        let pairs = (0..BATCH)
            .map(|i| {
                let (pk, sk) = self.keygen(&random_bytes(32))?;
                let mut msg = MESSAGE.to_vec();
                msg.push(i as u8);
                let sig = sk.sign(&msg);
                Ok((pk, msg, sig))
            })
            .collect::<Result<Vec<_>, CompareError>>()?;
        let msgs: Vec<&[u8]> = pairs.iter().map(|(_, m, _)| m.as_slice()).collect();
        let sigs: Vec<Signature> = pairs.iter().map(|(_, _, s)| *s).collect();
        let pks: Vec<VerifyingKey> = pairs.iter().map(|(p, _, _)| *p).collect();
        ed25519_dalek::verify_batch(&msgs, &sigs, &pks)
            .map_err(|_| CompareError::SelfCheck("Ed25519 batch".into()))?;
        let batch = measure::simple(budget, || {
            ed25519_dalek::verify_batch(&msgs, &sigs, &pks).is_ok()
        });
        row.extra.push(Extra {
            name: format!("batch verify, {BATCH} signatures (per signature)"),
            estimate: batch.per_item(BATCH),
        });
        row.notes.push(
            "verify is `VerifyingKey::verify` (RFC 8032 cofactorless); the batch has distinct \
             keys and messages"
                .into(),
        );
        Ok(row)
    }
}
