//! Group signatures (kind 4): `(wots_sig, rho, zeta, spx_sig, tau)`.

use core::fmt;

use crate::derive;
use crate::encoding::{self, Kind};
use crate::error::DecodeError;
use crate::params::ParamSet;
use crate::values::{MessageDigest, Rho, Tau, Zeta};

/// A DGSP group signature. Anyone with the group public key can verify it; only the
/// manager can tell which member made it.
#[derive(Clone, PartialEq, Eq)]
pub struct Signature {
    params: ParamSet,
    pub(crate) wots_sig: Vec<u8>,
    pub(crate) rho: Rho,
    pub(crate) zeta: Zeta,
    pub(crate) spx_sig: Vec<u8>,
    pub(crate) tau: Tau,
}

impl Signature {
    pub(crate) fn new(
        params: ParamSet,
        wots_sig: Vec<u8>,
        rho: Rho,
        zeta: Zeta,
        spx_sig: Vec<u8>,
        tau: Tau,
    ) -> Self {
        Signature {
            params,
            wots_sig,
            rho,
            zeta,
            spx_sig,
            tau,
        }
    }

    /// The parameter set.
    pub fn params(&self) -> ParamSet {
        self.params
    }

    /// The certificate serial number this signature was made under; checked against the
    /// revoked list.
    pub fn zeta(&self) -> &Zeta {
        &self.zeta
    }

    /// The WOTS+ signature (`len * N` bytes).
    pub fn wots_signature(&self) -> &[u8] {
        &self.wots_sig
    }

    /// The WOTS+ key's public seed.
    pub fn rho(&self) -> &Rho {
        &self.rho
    }

    /// The manager's SPHINCS+ certificate signature.
    pub fn spx_signature(&self) -> &[u8] {
        &self.spx_sig
    }

    /// The certificate commitment `tau`.
    pub fn tau(&self) -> &Tau {
        &self.tau
    }

    /// The digest `d = HL("msg", rho || message)` this signature's WOTS+ key signed for
    /// `message`. Public: it can be logged with an opening so that anyone can later judge
    /// the opening without the message ([`ManagerPublicKey::judge_digest`](crate::ManagerPublicKey::judge_digest)).
    pub fn message_digest(&self, message: &[u8]) -> MessageDigest {
        derive::message_digest(self.params, &self.rho, message)
    }

    /// Encoded length for `params`, header included.
    pub const fn encoded_len(params: ParamSet) -> usize {
        Kind::Signature.encoded_len(params)
    }

    /// Encodes as kind 4: header `|| wots_sig || rho || zeta || spx_sig || tau`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = encoding::start(self.params, Kind::Signature);
        out.extend_from_slice(&self.wots_sig);
        out.extend_from_slice(self.rho.as_bytes());
        out.extend_from_slice(&self.zeta.0);
        out.extend_from_slice(&self.spx_sig);
        out.extend_from_slice(self.tau.as_bytes());
        out
    }

    /// Decodes a kind-4 encoding.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let (params, mut f) = encoding::open(bytes, Kind::Signature)?;
        let n = params.n();
        Ok(Signature {
            params,
            wots_sig: f.take(params.wots_sig_len()).to_vec(),
            rho: Rho::from_slice(params, f.take(n))?,
            zeta: Zeta::from_slice(f.take(16))?,
            spx_sig: f.take(params.spx_sig_len()).to_vec(),
            tau: Tau::from_slice(params, f.take(n))?,
        })
    }
}

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signature")
            .field("params", &self.params)
            .field("zeta", &self.zeta)
            .field("rho", &self.rho)
            .field("tau", &self.tau)
            .finish_non_exhaustive()
    }
}
