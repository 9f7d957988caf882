//! Certificates: the manager's SPHINCS+ signature over one member WOTS+ key (kind 3).

use core::fmt;

use crate::encoding::{self, Kind};
use crate::error::DecodeError;
use crate::params::ParamSet;
use crate::values::{Pi, Zeta};

/// Domain prefix of every certificate message signed by the manager's SPHINCS+ key:
/// `"DGSP-v1:cert" || wots_pk || zeta || tau`.
pub const CERT_PREFIX: &[u8] = b"DGSP-v1:cert";

/// One certificate `(zeta, pi, spx_sig)` for one WOTS+ key of a member.
#[derive(Clone, PartialEq, Eq)]
pub struct Certificate {
    params: ParamSet,
    zeta: Zeta,
    pi: Pi,
    spx_sig: Vec<u8>,
}

impl Certificate {
    /// Only the manager makes certificates (feature `sign`).
    #[cfg(feature = "sign")]
    pub(crate) fn new(params: ParamSet, zeta: Zeta, pi: Pi, spx_sig: Vec<u8>) -> Self {
        Certificate {
            params,
            zeta,
            pi,
            spx_sig,
        }
    }

    /// The parameter set.
    pub fn params(&self) -> ParamSet {
        self.params
    }

    /// The certificate's zeta (its serial number, published on revocation).
    pub fn zeta(&self) -> &Zeta {
        &self.zeta
    }

    /// `pi = HL("pi", wots_pk || cid)`.
    pub fn pi(&self) -> &Pi {
        &self.pi
    }

    /// The manager's SPHINCS+ signature.
    pub fn spx_signature(&self) -> &[u8] {
        &self.spx_sig
    }

    /// Encodes as kind 3: header `|| zeta || pi || spx_sig`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = encoding::start(self.params, Kind::Certificate);
        out.extend_from_slice(&self.zeta.0);
        out.extend_from_slice(self.pi.as_bytes());
        out.extend_from_slice(&self.spx_sig);
        out
    }

    /// Decodes a kind-3 encoding.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let (params, mut f) = encoding::open(bytes, Kind::Certificate)?;
        Ok(Certificate {
            params,
            zeta: Zeta::from_slice(f.take(16))?,
            pi: Pi::from_slice(params, f.take(params.n()))?,
            spx_sig: f.take(params.spx_sig_len()).to_vec(),
        })
    }
}

impl fmt::Debug for Certificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Certificate")
            .field("params", &self.params)
            .field("zeta", &self.zeta)
            .field("pi", &self.pi)
            .field("spx_sig_len", &self.spx_sig.len())
            .finish()
    }
}

/// The message the manager signs for a certificate.
pub(crate) fn cert_message(wots_pk: &[u8], zeta: &Zeta, tau: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(CERT_PREFIX.len() + wots_pk.len() + 16 + tau.len());
    m.extend_from_slice(CERT_PREFIX);
    m.extend_from_slice(wots_pk);
    m.extend_from_slice(&zeta.0);
    m.extend_from_slice(tau);
    m
}
