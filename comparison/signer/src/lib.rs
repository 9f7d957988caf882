//! # dgsp-signer-probe
//!
//! The member's side of DGSP and nothing else, so that its build can be weighed and run:
//! decode what a wallet holds for one unused certificate (the member key, the group key, the
//! one-time key's seed and public key, the certificate) and sign once, exactly as
//! `dgsp-manager member sign` does per signature ([`MemberKey::resume`]: the certificate was
//! checked when the wallet imported it, and is not checked again). `dgsp-core` is used
//! without its `sign` feature: no PQClean C code, no SLH-DSA signer, no OS randomness (a
//! member needs none to sign; the wallet's seed is the randomness).
//!
//! `dgsp-compare` frames a [`Request`] with [`Request::encode`], pipes it to the
//! `dgsp-sign-only` binary and reads the signature back; it builds the binary with the
//! workspace's `signer` profile, native and for `wasm32-wasip1`, reports the sizes, and runs
//! both (the WebAssembly one under Node's WASI) to time a signature (`docs/comparison.md`).

#![deny(unsafe_code)]
#![warn(missing_docs)]

use dgsp_core::{Certificate, CsrItem, ManagerPublicKey, MemberKey, WotsPk, WotsSeed};

/// Why a request could not be signed.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The framing is short, has an impossible length, or has bytes left over.
    #[error("malformed request: {0}")]
    Framing(&'static str),
    /// A field does not decode.
    #[error("{field}: {source}")]
    Decode {
        /// which field
        field: &'static str,
        /// the decoder's reason
        source: dgsp_core::DecodeError,
    },
    /// The certificate, the member key and the group key are of different parameter sets.
    #[error("certificate refused: {0}")]
    Certificate(#[from] dgsp_core::Error),
}

/// One signing request: what a wallet holds for one unused certificate, and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The member key encoding (`MemberKey::to_bytes`).
    pub member_key: Vec<u8>,
    /// The group public key encoding (`ManagerPublicKey::to_bytes`).
    pub group_key: Vec<u8>,
    /// The one-time key's secret seed (`N` bytes).
    pub wots_seed: Vec<u8>,
    /// The one-time key's public key (`N` bytes), as the wallet stored it on import.
    pub wots_pk: Vec<u8>,
    /// The certificate encoding (`Certificate::to_bytes`).
    pub certificate: Vec<u8>,
    /// The message to sign.
    pub message: Vec<u8>,
}

impl Request {
    /// The framing: each field as a big-endian `u32` length and its bytes, in field order.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for field in self.fields() {
            out.extend_from_slice(&(field.len() as u32).to_be_bytes());
            out.extend_from_slice(field);
        }
        out
    }

    /// Reads [`Request::encode`]'s output; nothing may follow the last field.
    pub fn decode(mut bytes: &[u8]) -> Result<Self, ProbeError> {
        let mut take = || -> Result<Vec<u8>, ProbeError> {
            let (len, rest) = bytes
                .split_first_chunk::<4>()
                .ok_or(ProbeError::Framing("truncated length"))?;
            let len = u32::from_be_bytes(*len) as usize;
            if rest.len() < len {
                return Err(ProbeError::Framing("truncated field"));
            }
            let (field, rest) = rest.split_at(len);
            bytes = rest;
            Ok(field.to_vec())
        };
        let request = Request {
            member_key: take()?,
            group_key: take()?,
            wots_seed: take()?,
            wots_pk: take()?,
            certificate: take()?,
            message: take()?,
        };
        if !bytes.is_empty() {
            return Err(ProbeError::Framing("trailing bytes"));
        }
        Ok(request)
    }

    fn fields(&self) -> [&[u8]; 6] {
        [
            &self.member_key,
            &self.group_key,
            &self.wots_seed,
            &self.wots_pk,
            &self.certificate,
            &self.message,
        ]
    }
}

/// Decodes the request and signs the message as the wallet does per signature (the
/// certificate checked at import, not here): returns the signature's encoding.
pub fn sign(request: &Request) -> Result<Vec<u8>, ProbeError> {
    let decode = |field| move |source| ProbeError::Decode { field, source };
    let member = MemberKey::from_bytes(&request.member_key).map_err(decode("member key"))?;
    let group = ManagerPublicKey::from_bytes(&request.group_key).map_err(decode("group key"))?;
    let seed =
        WotsSeed::from_slice(member.params(), &request.wots_seed).map_err(decode("wots seed"))?;
    let wots_pk =
        WotsPk::from_slice(member.params(), &request.wots_pk).map_err(decode("wots pk"))?;
    let certificate =
        Certificate::from_bytes(&request.certificate).map_err(decode("certificate"))?;
    let item = CsrItem::from_stored(&member, seed, wots_pk);
    let key = member.resume(&group, item, &certificate)?;
    Ok(key.sign(&request.message).to_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Request {
        Request {
            member_key: vec![1; 3],
            group_key: vec![],
            wots_seed: vec![2; 16],
            wots_pk: vec![4; 16],
            certificate: vec![3; 5],
            message: b"m".to_vec(),
        }
    }

    #[test]
    fn framing_round_trips() {
        let r = sample();
        assert_eq!(Request::decode(&r.encode()).unwrap(), r);
    }

    #[test]
    fn framing_refuses_truncation_and_trailing_bytes() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            assert!(Request::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(matches!(
            Request::decode(&long),
            Err(ProbeError::Framing("trailing bytes"))
        ));
    }

    #[test]
    fn garbage_fields_are_typed_errors() {
        assert!(matches!(
            sign(&sample()),
            Err(ProbeError::Decode {
                field: "member key",
                ..
            })
        ));
    }
}
