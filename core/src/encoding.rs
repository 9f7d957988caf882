//! The self-describing binary format (spec section 5): a 4-byte header
//! `0xD6, 0x01, param_id, kind` followed by fixed-length fields.
//!
//! Every length follows from the header, so decoding checks the total length before
//! reading any field and never panics on any input.

use crate::error::DecodeError;
use crate::params::ParamSet;

/// First header byte of every encoding.
pub const MARKER: u8 = 0xD6;
/// Encoding version written and read by this crate.
pub const VERSION: u8 = 0x01;
/// Header length in bytes.
pub const HEADER_LEN: usize = 4;

/// The object kinds of spec section 5.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Manager public key: `spx_pk`.
    ManagerPublicKey = 1,
    /// Manager secret key: `hash_secret`, `aes_key`, `spx_sk`.
    ManagerSecretKey = 2,
    /// Certificate: `zeta`, `pi`, `spx_sig`.
    Certificate = 3,
    /// Signature: `wots_sig`, `rho`, `zeta`, `spx_sig`, `tau`.
    Signature = 4,
    /// Member secret: `seed_u`, `id`, `cid*`.
    MemberKey = 5,
}

impl Kind {
    /// Human name used in error messages.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::ManagerPublicKey => "manager public key",
            Kind::ManagerSecretKey => "manager secret key",
            Kind::Certificate => "certificate",
            Kind::Signature => "signature",
            Kind::MemberKey => "member key",
        }
    }

    /// Body length (after the header) for `params`.
    pub const fn body_len(self, params: ParamSet) -> usize {
        let n = params.n();
        match self {
            Kind::ManagerPublicKey => params.spx_pk_len(),
            Kind::ManagerSecretKey => 2 * n + params.spx_sk_len(),
            Kind::Certificate => 16 + n + params.spx_sig_len(),
            Kind::Signature => params.wots_sig_len() + n + 16 + params.spx_sig_len() + n,
            Kind::MemberKey => n + 8 + n,
        }
    }

    /// Total encoded length (header included) for `params`.
    pub const fn encoded_len(self, params: ParamSet) -> usize {
        HEADER_LEN + self.body_len(params)
    }
}

/// Reads the header of any encoding: its parameter set and kind byte.
pub fn peek_header(bytes: &[u8]) -> Result<(ParamSet, u8), DecodeError> {
    if bytes.len() < HEADER_LEN {
        return Err(DecodeError::MissingHeader { len: bytes.len() });
    }
    if bytes[0] != MARKER {
        return Err(DecodeError::BadMarker(bytes[0]));
    }
    if bytes[1] != VERSION {
        return Err(DecodeError::UnsupportedVersion(bytes[1]));
    }
    let params = ParamSet::from_id(bytes[2]).ok_or(DecodeError::UnknownParamSet(bytes[2]))?;
    Ok((params, bytes[3]))
}

/// Checks the header and the total length; returns the parameter set and a field reader.
pub(crate) fn open(bytes: &[u8], kind: Kind) -> Result<(ParamSet, Fields<'_>), DecodeError> {
    let (params, found) = peek_header(bytes)?;
    if found != kind as u8 {
        return Err(DecodeError::WrongKind {
            expected: kind as u8,
            expected_name: kind.name(),
            found,
        });
    }
    let expected = kind.encoded_len(params);
    if bytes.len() != expected {
        return Err(DecodeError::WrongLength {
            kind: kind.name(),
            params,
            expected,
            found: bytes.len(),
        });
    }
    Ok((params, Fields(&bytes[HEADER_LEN..])))
}

/// Starts an encoding: the header, with capacity for the whole object.
pub(crate) fn start(params: ParamSet, kind: Kind) -> Vec<u8> {
    let mut out = Vec::with_capacity(kind.encoded_len(params));
    out.extend_from_slice(&[MARKER, VERSION, params.id(), kind as u8]);
    out
}

/// Splits a length-checked body into consecutive fields.
pub(crate) struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    /// The next `len` bytes. The caller has checked the total length against the header.
    pub(crate) fn take(&mut self, len: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        head
    }
}
