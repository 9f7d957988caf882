//! BLS signatures on BLS12-381 with supranational `blst` (C with its own assembly; its build
//! enables the ADX path when the CPU has it), "minimal public key" variant (48-byte public
//! keys in G1, 96-byte signatures in G2), the IETF ciphersuite
//! `BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_NUL_`. Also aggregate verification: one
//! aggregated signature over many distinct messages and signers, and the same-message case.

use blst::min_pk::{AggregateSignature, PublicKey, SecretKey, Signature};
use blst::BLST_ERROR;

use super::{measure_plain, plain_row, random_bytes, Plain, Scheme, MESSAGE};
use crate::error::CompareError;
use crate::measure::{self, Budget};
use crate::results::{Extra, Kind, Row, Sizes};

/// The ciphersuite's domain separation tag (basic scheme, RFC 9380 hash to G2).
pub const DST: &[u8] = b"BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_NUL_";

/// Signatures per aggregate.
pub const AGGREGATE: usize = 64;

/// BLS12-381, min-pk.
pub struct Bls;

impl Plain for Bls {
    type Pk = PublicKey;
    type Sk = SecretKey;
    type Sig = Signature;

    fn seed_len(&self) -> usize {
        32
    }

    fn keygen(&self, seed: &[u8]) -> Result<(PublicKey, SecretKey), CompareError> {
        let sk = SecretKey::key_gen(seed, &[])
            .map_err(|e| CompareError::library("BLS", format!("{e:?}")))?;
        Ok((sk.sk_to_pk(), sk))
    }

    fn sign(&self, sk: &SecretKey, msg: &[u8]) -> Signature {
        sk.sign(msg, DST, &[])
    }

    /// The signature is group-checked; the public key was validated once when it was loaded
    /// (`pk_validate = false`, as verifiers holding known keys do).
    fn verify(&self, pk: &PublicKey, msg: &[u8], sig: &Signature) -> bool {
        sig.verify(true, msg, DST, &[], pk, false) == BLST_ERROR::BLST_SUCCESS
    }

    fn sizes(&self, pk: &PublicKey, sk: &SecretKey, sig: &Signature) -> Sizes {
        Sizes {
            public_key: pk.compress().len(),
            secret_key: sk.to_bytes().len(),
            signature: sig.compress().len(),
        }
    }
}

impl Scheme for Bls {
    fn label(&self) -> String {
        "BLS12-381".into()
    }

    fn measure(&self, budget: &Budget) -> Result<Row, CompareError> {
        let m = measure_plain(self, "BLS12-381", budget)?;
        let mut row = plain_row(
            &m,
            "BLS",
            "BLS12-381 min-pk",
            Kind::Classical,
            "~120-bit, classical",
            "blst 0.3.17",
        );
        let signers = (0..AGGREGATE)
            .map(|i| {
                let (pk, sk) = self.keygen(&random_bytes(32))?;
                let mut msg = MESSAGE.to_vec();
                msg.extend_from_slice(&(i as u32).to_be_bytes());
                let sig = sk.sign(&msg, DST, &[]);
                let same = sk.sign(MESSAGE, DST, &[]);
                Ok((pk, msg, sig, same))
            })
            .collect::<Result<Vec<_>, CompareError>>()?;
        let pks: Vec<&PublicKey> = signers.iter().map(|s| &s.0).collect();
        let msgs: Vec<&[u8]> = signers.iter().map(|s| s.1.as_slice()).collect();
        let sigs: Vec<&Signature> = signers.iter().map(|s| &s.2).collect();
        let same: Vec<&Signature> = signers.iter().map(|s| &s.3).collect();
        let aggregate = |sigs: &[&Signature]| {
            AggregateSignature::aggregate(sigs, true)
                .map(|a| a.to_signature())
                .map_err(|e| CompareError::library("BLS aggregate", format!("{e:?}")))
        };
        let distinct = aggregate(&sigs)?;
        let common = aggregate(&same)?;
        if distinct.aggregate_verify(true, &msgs, DST, &pks, false) != BLST_ERROR::BLST_SUCCESS
            || common.fast_aggregate_verify(true, MESSAGE, DST, &pks) != BLST_ERROR::BLST_SUCCESS
        {
            return Err(CompareError::SelfCheck("BLS aggregate".into()));
        }
        let t_aggregate = measure::simple(budget, || aggregate(&sigs).is_ok());
        let t_distinct = measure::simple(budget, || {
            distinct.aggregate_verify(true, &msgs, DST, &pks, false)
        });
        let t_common = measure::simple(budget, || {
            common.fast_aggregate_verify(true, MESSAGE, DST, &pks)
        });
        row.extra.extend([
            Extra {
                name: format!("aggregate {AGGREGATE} signatures (per signature)"),
                estimate: t_aggregate.per_item(AGGREGATE),
            },
            Extra {
                name: format!(
                    "aggregate verify, {AGGREGATE} distinct messages and signers (per signature)"
                ),
                estimate: t_distinct.per_item(AGGREGATE),
            },
            Extra {
                name: format!(
                    "fast aggregate verify, {AGGREGATE} signers of one message (per signer)"
                ),
                estimate: t_common.per_item(AGGREGATE),
            },
        ]);
        row.notes.push(
            "blst's Rust binding verifies on its own thread pool (both cores for an aggregate); \
             public keys validated once at load, signatures group-checked on every verify"
                .into(),
        );
        Ok(row)
    }
}
