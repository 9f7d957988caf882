//! Judging an opening: does `(id, pi)` show that member `id` made the signature?

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::Pi;
use serde::Serialize;

use crate::error::Error;
use crate::trust::TrustRoot;

/// The verdict on an opening (the same fields as the gateway's `POST /v1/judge` answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JudgeReport {
    /// True when the signature verifies and `(id, pi)` is its correct opening.
    pub correct: bool,
    /// Whether the signature itself verifies (revocation aside).
    pub signature_valid: bool,
    /// Whether `(id, pi)` matches the signature's `tau`.
    pub opening_matches: bool,
    /// The group's parameter set.
    pub params: String,
    /// Why it is not correct, in words.
    pub detail: Option<String>,
}

impl TrustRoot {
    /// Judges the manager's claim that member `id` made `signature`, with the opening proof
    /// `pi` (its encoding, hex or standard base64).
    pub fn judge(
        &self,
        message: &[u8],
        signature: &[u8],
        id: u64,
        pi: &[u8],
    ) -> Result<JudgeReport, Error> {
        let sig = Self::decode_signature(signature)?;
        let params = self.key().params();
        let pi = Pi::from_slice(params, pi)
            .or_else(|raw| {
                let text = std::str::from_utf8(pi).map_err(|_| raw.clone())?.trim();
                let bytes = hex::decode(text)
                    .or_else(|_| B64.decode(text))
                    .map_err(|_| raw.clone())?;
                Pi::from_slice(params, &bytes)
            })
            .map_err(|e| Error::malformed("pi", e))?;
        let verified = self.key().verify_ignoring_revocation(message, &sig);
        let matches = self.key().judge(message, &sig, id, &pi);
        Ok(JudgeReport {
            correct: verified.is_ok() && matches.is_ok(),
            signature_valid: verified.is_ok(),
            opening_matches: matches.is_ok(),
            params: params.name().to_owned(),
            detail: verified
                .err()
                .map(|e| format!("the signature: {e}"))
                .or_else(|| matches.err().map(|e| e.to_string())),
        })
    }
}
