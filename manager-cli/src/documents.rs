//! The files people hand each other: join files (operator → member), CSR files (member →
//! operator), certificate files (operator → member) and signature files. JSON with a
//! `format` tag so a file given to the wrong command is refused with a clear message.

use std::path::Path;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::{MemberId, ParamSet, Signature};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// `format` of a join file.
pub const JOIN_FORMAT: &str = "dgsp-join-v1";
/// `format` of a CSR file.
pub const CSR_FORMAT: &str = "dgsp-csr-v1";
/// `format` of a certificates file.
pub const CERTIFICATES_FORMAT: &str = "dgsp-certificates-v1";

/// What a new member needs to create a wallet: written by `operator join --out`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct JoinFile {
    /// always [`JOIN_FORMAT`]
    pub format: String,
    /// assigned member id
    pub id: MemberId,
    /// username
    pub username: String,
    /// `cid*` (standard base64)
    pub cid_star: String,
    /// the group public key (standard base64 of its encoding)
    pub group_public_key: String,
    /// SHA3-256 of the group public key (hex), to compare out of band
    pub fingerprint: String,
}

/// A certificate request: written by `member csr`, read by `operator issue`. Public: it
/// holds only WOTS+ public keys.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CsrFile {
    /// always [`CSR_FORMAT`]
    pub format: String,
    /// parameter set
    pub params: ParamSet,
    /// member id
    pub id: MemberId,
    /// `cid*` (standard base64)
    pub cid_star: String,
    /// WOTS+ public keys to certify (standard base64), in wallet order
    pub wots_pks: Vec<String>,
}

/// Certificates for a CSR: written by `operator issue`, read by `member import`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CertificatesFile {
    /// always [`CERTIFICATES_FORMAT`]
    pub format: String,
    /// member id
    pub id: MemberId,
    /// counter value of the first certificate
    pub first_counter: u64,
    /// the certified WOTS+ public keys (standard base64), same order as `certificates`
    pub wots_pks: Vec<String>,
    /// the certificates (standard base64 of their encoding)
    pub certificates: Vec<String>,
}

/// Reads a JSON document and checks its `format` tag.
pub fn read<T: DeserializeOwned>(path: &Path, format: &str) -> Result<T, Error> {
    parse(path, &crate::io::read_input(path)?, format)
}

/// Parses the `bytes` read from `path` as a JSON document tagged `format`.
pub fn parse<T: DeserializeOwned>(path: &Path, bytes: &[u8], format: &str) -> Result<T, Error> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| Error::input(path, format!("not JSON: {e}")))?;
    match value.get("format").and_then(|f| f.as_str()) {
        Some(f) if f == format => {}
        Some(f) => {
            return Err(Error::input(
                path,
                format!("this is a {f} file; a {format} file is expected here"),
            ))
        }
        None => {
            return Err(Error::input(
                path,
                format!("not a {format} file (no format tag)"),
            ))
        }
    }
    serde_json::from_value(value)
        .map_err(|e| Error::input(path, format!("malformed {format}: {e}")))
}

/// Writes a JSON document (created new: an existing file is never overwritten).
pub fn write<T: Serialize>(path: &Path, doc: &T) -> Result<(), Error> {
    let mut json = serde_json::to_vec_pretty(doc).expect("documents serialize");
    json.push(b'\n');
    crate::io::write_new(path, &json, 0o644)
}

/// Reads a signature file: base64 text (what `member sign` writes) or the raw encoding.
pub fn read_signature(path: &Path) -> Result<Signature, Error> {
    parse_signature(path, crate::io::read_input(path)?)
}

/// Parses the `bytes` read from `path` as a signature file.
pub fn parse_signature(path: &Path, bytes: Vec<u8>) -> Result<Signature, Error> {
    let text = String::from_utf8_lossy(&bytes);
    let decoded = B64.decode(text.trim()).unwrap_or(bytes);
    Signature::from_bytes(&decoded)
        .map_err(|e| Error::input(path, format!("not a DGSP signature: {e}")))
}

/// The base64 text form of a signature, as `member sign` writes it (one line).
pub fn signature_text(sig: &Signature) -> String {
    let mut s = B64.encode(sig.to_bytes());
    s.push('\n');
    s
}
