//! The contenders, one module each, behind one small trait ([`Scheme`]). Ordinary signature
//! schemes implement [`Plain`] and are measured by [`measure_plain`]; DGSP, the reference and
//! BBS have operations of their own and implement [`Scheme`] directly.

use rand_core::{OsRng, RngCore};

use crate::error::CompareError;
use crate::measure::{self, Budget, Estimate};
use crate::results::{Kind, Row, Sizes};

pub mod bbs;
pub mod bls;
pub mod dgsp;
pub mod ecdsa;
pub mod ed25519;
pub mod mldsa;
pub mod slhdsa;
pub mod sphincs;

/// The message every contender signs: 32 bytes, the size of a digest.
pub const MESSAGE: &[u8; 32] = b"dgsp-compare: the message, 32 B.";

/// A contender: measures itself into a [`Row`].
pub trait Scheme {
    /// `scheme variant`, for progress output.
    fn label(&self) -> String;

    /// Measures key generation, signing, verification, sizes and any extras.
    fn measure(&self, budget: &Budget) -> Result<Row, CompareError>;
}

/// An ordinary signature scheme: key pair from a seed, sign, verify.
pub trait Plain {
    /// The public key.
    type Pk;
    /// The secret key.
    type Sk;
    /// A signature.
    type Sig;

    /// Bytes of seed [`Plain::keygen`] takes.
    fn seed_len(&self) -> usize;
    /// A key pair from `seed` (the scheme's own key generation from its seed or IKM).
    fn keygen(&self, seed: &[u8]) -> Result<(Self::Pk, Self::Sk), CompareError>;
    /// Signs `msg`.
    fn sign(&self, sk: &Self::Sk, msg: &[u8]) -> Self::Sig;
    /// Whether `sig` verifies.
    fn verify(&self, pk: &Self::Pk, msg: &[u8], sig: &Self::Sig) -> bool;
    /// The encoded sizes.
    fn sizes(&self, pk: &Self::Pk, sk: &Self::Sk, sig: &Self::Sig) -> Sizes;
}

/// What [`measure_plain`] returns: the three times, the sizes and one key pair and
/// signature for further measurements.
pub struct Measured<P: Plain> {
    /// Key generation.
    pub keygen: Estimate,
    /// Signing.
    pub sign: Estimate,
    /// Verification.
    pub verify: Estimate,
    /// Sizes.
    pub sizes: Sizes,
    /// A public key.
    pub pk: P::Pk,
    /// Its secret key.
    pub sk: P::Sk,
    /// A signature on [`MESSAGE`] under it.
    pub sig: P::Sig,
}

/// Random bytes (untimed setup).
pub fn random_bytes(len: usize) -> Vec<u8> {
    let mut seed = vec![0u8; len];
    OsRng.fill_bytes(&mut seed);
    seed
}

/// Measures keygen (from a fresh random seed each call; drawing it is not timed), sign and
/// verify of [`MESSAGE`], after checking that the signature verifies and that a signature on
/// another message does not.
pub fn measure_plain<P: Plain>(
    p: &P,
    name: &str,
    budget: &Budget,
) -> Result<Measured<P>, CompareError> {
    let (pk, sk) = p.keygen(&random_bytes(p.seed_len()))?;
    let sig = p.sign(&sk, MESSAGE);
    if !p.verify(&pk, MESSAGE, &sig) || p.verify(&pk, b"another message", &sig) {
        return Err(CompareError::SelfCheck(name.into()));
    }
    let mut keygen_error = None;
    let keygen = measure::batched(
        budget,
        || random_bytes(p.seed_len()),
        |seed| {
            let pair = p.keygen(&seed);
            if let Err(e) = &pair {
                keygen_error.get_or_insert_with(|| e.to_string());
            }
            pair
        },
    );
    if let Some(reason) = keygen_error {
        return Err(CompareError::library(name, reason));
    }
    let sign = measure::simple(budget, || p.sign(&sk, MESSAGE));
    let verify = measure::simple(budget, || p.verify(&pk, MESSAGE, &sig));
    Ok(Measured {
        keygen,
        sign,
        verify,
        sizes: p.sizes(&pk, &sk, &sig),
        pk,
        sk,
        sig,
    })
}

/// A row from a [`Measured`], without extras.
pub fn plain_row<P: Plain>(
    m: &Measured<P>,
    scheme: &str,
    variant: &str,
    kind: Kind,
    security: &str,
    library: &str,
) -> Row {
    Row {
        scheme: scheme.into(),
        variant: variant.into(),
        kind,
        security: security.into(),
        library: library.into(),
        sizes: m.sizes,
        keygen: m.keygen,
        sign: m.sign,
        verify: m.verify,
        extra: Vec::new(),
        extra_sizes: Vec::new(),
        notes: Vec::new(),
    }
}

/// Every contender of a run: the classical and lattice schemes, BBS, then for each set in
/// `sets` DGSP and the raw SPHINCS+ / SLH-DSA of that set, then the reference when given.
pub fn contenders(
    sets: &[dgsp_core::ParamSet],
    reference: Option<Box<dyn Scheme>>,
) -> Vec<Box<dyn Scheme>> {
    let mut out: Vec<Box<dyn Scheme>> = vec![
        Box::new(ed25519::Ed25519),
        Box::new(ecdsa::P256),
        Box::new(bls::Bls),
        Box::new(mldsa::ML_DSA_44),
        Box::new(mldsa::ML_DSA_65),
        Box::new(bbs::Bbs),
    ];
    for &set in sets {
        out.push(Box::new(dgsp::Dgsp(set)));
        match set.standard() {
            dgsp_core::Standard::Round3 => out.push(Box::new(sphincs::Sphincs(set))),
            dgsp_core::Standard::Fips205 => out.push(Box::new(slhdsa::SlhDsa(set))),
        }
    }
    out.extend(reference);
    out
}
