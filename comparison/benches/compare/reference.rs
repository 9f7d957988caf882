//! The published `dgsp` 0.1.2 (crates.io; the paper's artifact), a dev-dependency: the
//! benchmark baseline, linked only by the bench target and the smoke test, measured through
//! its public API only, on the one set it is compiled for here (shake-256f, the crate's default and
//! dgsp-core's benchmark baseline), with its in-memory PLM and revoked list. No code of it
//! is copied (DEVELOPERS.md); its signatures are not compatible with ours (README).

use dgsp::params::{DGSP_BYTES, DGSP_N, DGSP_PK_BYTES, DGSP_SK_BYTES, DGSP_ZETA_BYTES};
use dgsp::scheme::{DGSPCert, DGSPManagerPublicKey, DGSPSignature};
use dgsp::sphincs_plus::SPX_BYTES;
use dgsp::{InMemoryPLM, InMemoryRevokedList, PLMInterface, RevokedListInterface, DGSP};

use dgsp_comparison::baseline::Baseline;
use dgsp_comparison::device::{heap, ReferenceSide};
use dgsp_comparison::error::CompareError;
use dgsp_comparison::measure::{self, Budget};
use dgsp_comparison::results::{ExtraSize, Kind, Row, Sizes};
use dgsp_comparison::schemes::{sphincs, Scheme, MESSAGE};

/// The set the reference is compiled for.
pub const SET: dgsp_core::ParamSet = dgsp_core::ParamSet::Shake256f;

/// The name of the per-certificate storage extra size.
const PER_CERTIFICATE: &str = "member storage per unused certificate (wots seed + certificate)";

/// The reference implementation.
pub struct Reference;

/// A reference group with one member, one certificate and one signature.
pub struct RefFixture {
    /// The group key.
    pub pk: DGSPManagerPublicKey,
    /// The member's seed.
    pub seed_u: [u8; DGSP_N],
    /// The member's id.
    pub id: u64,
    /// The one-time key's seed.
    pub wots_seed: [u8; DGSP_N],
    /// Its certificate (cloned for each signature: the reference's sign consumes it).
    pub cert: DGSPCert,
    /// A signature on [`MESSAGE`].
    pub sig: DGSPSignature,
    /// The (empty) revoked list.
    pub revoked: InMemoryRevokedList,
}

fn lib(e: dgsp::Error) -> CompareError {
    CompareError::library("dgsp 0.1.2", e)
}

impl RefFixture {
    /// Keys, one member, one certificate, one checked signature.
    pub fn new() -> Result<Self, CompareError> {
        let (pk, sk) = DGSP::keygen_manager().map_err(lib)?;
        let plm = InMemoryPLM::open("").map_err(lib)?;
        let revoked = InMemoryRevokedList::open("").map_err(lib)?;
        let (id, cid_star) = DGSP::join(&sk.msk.hash_secret, "alice", &plm).map_err(lib)?;
        let seed_u = DGSP::keygen_user();
        let (wots_pks, wots_seeds) = DGSP::csr(&seed_u, 1);
        let cert = DGSP::gen_cert(&sk, id, &cid_star, &wots_pks, &plm)
            .map_err(lib)?
            .remove(0);
        let wots_seed = wots_seeds[0];
        let sig = DGSP::sign(MESSAGE, &seed_u, id, wots_seed, cert.clone());
        DGSP::verify(MESSAGE, &sig, &revoked, &pk).map_err(lib)?;
        Ok(RefFixture {
            pk,
            seed_u,
            id,
            wots_seed,
            cert,
            sig,
            revoked,
        })
    }

    /// Signs [`MESSAGE`] with a clone of the certificate.
    pub fn sign(&self, cert: DGSPCert) -> DGSPSignature {
        DGSP::sign(MESSAGE, &self.seed_u, self.id, self.wots_seed, cert)
    }
}

/// Bytes a reference member keeps per unused certificate: the WOTS+ seed and the certificate
/// (zeta, pi, SPHINCS+ signature); the reference has no wallet format of its own.
pub fn per_certificate_bytes() -> usize {
    DGSP_N + DGSP_ZETA_BYTES + DGSP_N + SPX_BYTES
}

impl Scheme for Reference {
    fn label(&self) -> String {
        format!("dgsp 0.1.2 {SET}")
    }

    fn measure(&self, budget: &Budget) -> Result<Row, CompareError> {
        let f = RefFixture::new()?;
        let keygen = measure::simple(budget, DGSP::keygen_manager);
        let sign = measure::batched(budget, || f.cert.clone(), |cert| f.sign(cert));
        let verify = measure::simple(budget, || DGSP::verify(MESSAGE, &f.sig, &f.revoked, &f.pk));
        Ok(Row {
            scheme: "dgsp 0.1.2".into(),
            variant: SET.name().into(),
            kind: Kind::Reference,
            security: sphincs::level(SET),
            library: "dgsp 0.1.2 (crates.io)".into(),
            sizes: Sizes {
                public_key: DGSP_PK_BYTES,
                // seed_u, id (8 bytes) and cid*.
                secret_key: 2 * DGSP_N + 8,
                signature: DGSP_BYTES,
            },
            keygen,
            sign,
            verify,
            extra: Vec::new(),
            extra_sizes: vec![
                ExtraSize {
                    name: "manager secret key".into(),
                    bytes: DGSP_SK_BYTES,
                },
                ExtraSize {
                    name: PER_CERTIFICATE.into(),
                    bytes: per_certificate_bytes(),
                },
            ],
            notes: vec![
                "the reference's constants for sizes (it has no byte encoding of its own); its sign \
                 takes the certificate by value, cloned outside the timing"
                    .into(),
            ],
        })
    }
}

impl Baseline for Reference {
    fn scheme(&self) -> Box<dyn Scheme> {
        Box::new(Reference)
    }

    fn member_side(&self) -> Result<ReferenceSide, CompareError> {
        let f = RefFixture::new()?;
        let cert = f.cert.clone();
        let (_sig, heap_sign) = heap::peak(|| f.sign(cert));
        Ok(ReferenceSide {
            params: SET.name().into(),
            per_certificate_bytes: per_certificate_bytes(),
            heap_sign,
            by_value_bytes: std::mem::size_of::<DGSPSignature>() + std::mem::size_of::<DGSPCert>(),
        })
    }
}
