//! BBS (draft-irtf-cfrg-bbs-signatures-13, ciphersuite BLS12-381-SHA-256) with `zkryptium`,
//! used as a classical anonymous credential: the issuer (the group manager's role) signs a
//! credential over one hidden member attribute; to "sign" a message anonymously the holder
//! makes a presentation proof that discloses nothing and carries the message as its
//! presentation header; a verifier checks the proof against the issuer's public key. Two
//! proofs by one holder are unlinkable. Unlike DGSP there is no opening (no traceability)
//! and no revocation in the scheme itself; it is not post-quantum.

use zkryptium::bbsplus::keys::{BBSplusPublicKey, BBSplusSecretKey};
use zkryptium::keys::pair::KeyPair;
use zkryptium::schemes::algorithms::{BBSplus, BbsBls12381Sha256, Scheme as ZkScheme};
use zkryptium::schemes::generics::{PoKSignature, Signature};

use super::{random_bytes, Scheme, MESSAGE};
use crate::error::CompareError;
use crate::measure::{self, Budget};
use crate::results::{Extra, ExtraSize, Kind, Row, Sizes};

type Suite = <BbsBls12381Sha256 as ZkScheme>::Ciphersuite;
type Bbs12381 = BBSplus<Suite>;

/// Names of the extra rows.
pub mod op {
    /// The issuer signs a credential.
    pub const ISSUE: &str = "issue credential (issuer signs 1 hidden attribute)";
    /// The holder checks it.
    pub const CHECK: &str = "check credential (holder)";
}

/// BBS as an anonymous credential.
pub struct Bbs;

fn lib(e: impl std::fmt::Debug) -> CompareError {
    CompareError::library("BBS", format!("{e:?}"))
}

fn keygen(ikm: &[u8]) -> Result<(BBSplusPublicKey, BBSplusSecretKey), CompareError> {
    let pair = KeyPair::<Bbs12381>::generate(ikm, None, None).map_err(lib)?;
    let (sk, pk) = pair.into_parts();
    Ok((pk, sk))
}

impl Scheme for Bbs {
    fn label(&self) -> String {
        "BBS".into()
    }

    fn measure(&self, budget: &Budget) -> Result<Row, CompareError> {
        let (pk, sk) = keygen(&random_bytes(32))?;
        // The member's hidden attribute (e.g. a secret identifier).
        let attributes = vec![random_bytes(32)];
        let issue = || Signature::<Bbs12381>::sign(Some(&attributes), &sk, &pk, None);
        let credential = issue().map_err(lib)?;
        credential
            .verify(&pk, Some(&attributes), None)
            .map_err(|_| CompareError::SelfCheck("BBS credential".into()))?;
        let credential_bytes = credential.to_bytes();
        let present = |msg: &[u8]| {
            PoKSignature::<Bbs12381>::proof_gen(
                &pk,
                &credential_bytes,
                None,
                Some(msg),
                Some(&attributes),
                Some(&[]),
            )
        };
        let check = |proof: &PoKSignature<Bbs12381>, msg: &[u8]| {
            proof
                .proof_verify(&pk, Some(&[]), Some(&[]), None, Some(msg))
                .is_ok()
        };
        let proof = present(MESSAGE).map_err(lib)?;
        if !check(&proof, MESSAGE) || check(&proof, b"another message") {
            return Err(CompareError::SelfCheck("BBS".into()));
        }

        let t_keygen = measure::batched(budget, || random_bytes(32), |ikm| keygen(&ikm));
        let t_sign = measure::simple(budget, || present(MESSAGE));
        let t_verify = measure::simple(budget, || check(&proof, MESSAGE));
        let t_issue = measure::simple(budget, issue);
        let t_check = measure::simple(budget, || credential.verify(&pk, Some(&attributes), None));

        Ok(Row {
            scheme: "BBS".into(),
            variant: "BLS12-381-SHA-256".into(),
            kind: Kind::ClassicalAnonymous,
            security: "~120-bit, classical".into(),
            library: "zkryptium 0.8.0".into(),
            sizes: Sizes {
                public_key: pk.to_bytes().len(),
                // The holder keeps the credential (a BBS signature) and its attribute.
                secret_key: credential_bytes.len() + attributes[0].len(),
                signature: proof.to_bytes().len(),
            },
            keygen: t_keygen,
            sign: t_sign,
            verify: t_verify,
            extra: vec![
                Extra {
                    name: op::ISSUE.into(),
                    estimate: t_issue,
                },
                Extra {
                    name: op::CHECK.into(),
                    estimate: t_check,
                },
            ],
            extra_sizes: vec![
                ExtraSize {
                    name: "issuer secret key".into(),
                    bytes: sk.to_bytes().len(),
                },
                ExtraSize {
                    name: "credential (BBS signature)".into(),
                    bytes: credential_bytes.len(),
                },
            ],
            notes: vec![
                "keygen: the issuer's; sign: a presentation proof (nothing disclosed, the message \
                 as presentation header); verify: the proof; secret key: the holder's credential \
                 and attribute. No opening and no revocation in the scheme."
                    .into(),
            ],
        })
    }
}
