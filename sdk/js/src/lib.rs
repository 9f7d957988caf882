//! WebAssembly bindings of [`dgsp_verifier`] for the `@dgsp/verifier` npm package.
//!
//! The boundary is deliberately narrow: bytes and strings in, JSON text out. Reports are
//! the Rust crate's own serde forms (snake_case fields, the stable check names), errors are
//! JSON objects `{"kind", "message"}` with `kind` one of `trust_root`, `malformed`,
//! `signature`, `bad_signed_object` (plus `argument` for a bad JS argument); the JavaScript
//! wrapper (`verifier.js`) parses both and throws a `DgspError`. No I/O and no clock: the
//! caller passes "now".

#![forbid(unsafe_code)]

use dgsp_verifier::{Error, Policy, SnapshotInfo};
use wasm_bindgen::prelude::*;

fn kind(e: &Error) -> &'static str {
    match e {
        Error::TrustRoot(_) => "trust_root",
        Error::Malformed { .. } => "malformed",
        Error::Signature(_) => "signature",
        Error::BadSignedObject { .. } => "bad_signed_object",
    }
}

fn err(e: Error) -> JsValue {
    let v = serde_json::json!({"kind": kind(&e), "message": e.to_string()});
    JsValue::from_str(&v.to_string())
}

fn arg_err(message: &str) -> JsValue {
    let v = serde_json::json!({"kind": "argument", "message": message});
    JsValue::from_str(&v.to_string())
}

fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("reports serialize")
}

/// A non-negative integer passed from JavaScript as a Number (exact up to 2^53).
fn uint(name: &str, v: f64) -> Result<u64, JsValue> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 9_007_199_254_740_991.0 {
        Ok(v as u64)
    } else {
        Err(arg_err(&format!("{name} must be a non-negative integer")))
    }
}

/// The group a caller trusts (its manager public key); every check is made under it.
#[wasm_bindgen]
pub struct TrustRoot {
    inner: dgsp_verifier::TrustRoot,
}

#[wasm_bindgen]
impl TrustRoot {
    /// The root from the key's raw encoding.
    #[wasm_bindgen(js_name = fromKeyBytes)]
    pub fn from_key_bytes(bytes: &[u8]) -> Result<TrustRoot, JsValue> {
        dgsp_verifier::TrustRoot::from_key_bytes(bytes)
            .map(|inner| TrustRoot { inner })
            .map_err(err)
    }

    /// The root from a key file's contents (base64 on its first non-blank line, as
    /// `GET /v1/group` serves `public_key`, or the raw encoding).
    #[wasm_bindgen(js_name = fromKeyFile)]
    pub fn from_key_file(contents: &[u8]) -> Result<TrustRoot, JsValue> {
        dgsp_verifier::TrustRoot::from_key_file(contents)
            .map(|inner| TrustRoot { inner })
            .map_err(err)
    }

    /// The root from a key file whose key must have `fingerprint` (64 hex characters).
    #[wasm_bindgen(js_name = fromKeyFilePinned)]
    pub fn from_key_file_pinned(contents: &[u8], fingerprint: &str) -> Result<TrustRoot, JsValue> {
        dgsp_verifier::TrustRoot::from_key_file_pinned(contents, fingerprint)
            .map(|inner| TrustRoot { inner })
            .map_err(err)
    }

    /// This root with a witness policy (C2SP tlog-policy text) and, optionally, the group
    /// key's log-key statement, which must name the policy's log key.
    #[wasm_bindgen(js_name = withWitnessPolicy)]
    pub fn with_witness_policy(
        &self,
        policy: &str,
        log_key_statement: Option<String>,
    ) -> Result<TrustRoot, JsValue> {
        self.inner
            .clone()
            .with_witness_policy(policy, log_key_statement.as_deref())
            .map(|inner| TrustRoot { inner })
            .map_err(err)
    }

    /// The policy `log` line of the group's log key, from the group key's log-key
    /// statement (verified under the group key).
    #[wasm_bindgen(js_name = logLineFromStatement)]
    pub fn log_line_from_statement(&self, log_key_statement: &str) -> Result<String, JsValue> {
        self.inner
            .log_line_from_statement(log_key_statement)
            .map_err(err)
    }

    /// Whether this root has a witness policy.
    #[wasm_bindgen(getter, js_name = hasWitnessPolicy)]
    pub fn has_witness_policy(&self) -> bool {
        self.inner.witness_policy().is_some()
    }

    /// The group's fingerprint (hex).
    #[wasm_bindgen(getter)]
    pub fn fingerprint(&self) -> String {
        self.inner.fingerprint()
    }

    /// The group's parameter set name.
    #[wasm_bindgen(getter)]
    pub fn params(&self) -> String {
        self.inner.params().name().to_owned()
    }

    /// `SignatureInfo` as JSON.
    #[wasm_bindgen(js_name = verifySignature)]
    pub fn verify_signature(&self, message: &[u8], signature: &[u8]) -> Result<String, JsValue> {
        self.inner
            .verify_signature(message, signature)
            .map(|i| to_json(&i))
            .map_err(err)
    }

    /// `AnswerReport` as JSON. `clock_tolerance_ms`: how far the checkpoint's signed time may
    /// be ahead of `now_unix_ms` (the crate's default, 5000, when absent).
    #[wasm_bindgen(js_name = checkAnswer)]
    // The policy's fields cross the wasm boundary as plain numbers (verifier.js builds them
    // from the caller's policy object), so the export takes more than clippy's seven.
    #[allow(clippy::too_many_arguments)]
    pub fn check_answer(
        &self,
        message: &[u8],
        signature: &[u8],
        answer_json: &[u8],
        snapshot_json: Option<Vec<u8>>,
        max_age_ms: f64,
        now_unix_ms: f64,
        min_snapshot: Option<f64>,
        clock_tolerance_ms: Option<f64>,
    ) -> Result<String, JsValue> {
        let policy = Policy {
            max_age_ms: uint("max_age_ms", max_age_ms)?,
            clock_tolerance_ms: clock_tolerance_ms
                .map(|t| uint("clock_tolerance_ms", t))
                .transpose()?
                .unwrap_or(dgsp_verifier::evidence::DEFAULT_CLOCK_TOLERANCE_MS),
            now_unix_ms: uint("now_unix_ms", now_unix_ms)?,
            min_snapshot: min_snapshot.map(|m| uint("min_snapshot", m)).transpose()?,
        };
        self.inner
            .check_answer(
                message,
                signature,
                answer_json,
                snapshot_json.as_deref(),
                &policy,
            )
            .map(|r| to_json(&r))
            .map_err(err)
    }

    /// `JudgeReport` as JSON.
    pub fn judge(
        &self,
        message: &[u8],
        signature: &[u8],
        id: f64,
        pi: &[u8],
    ) -> Result<String, JsValue> {
        let id = uint("id", id)?;
        self.inner
            .judge(message, signature, id, pi)
            .map(|r| to_json(&r))
            .map_err(err)
    }

    /// `CheckpointInfo` as JSON.
    #[wasm_bindgen(js_name = verifyCheckpoint)]
    pub fn verify_checkpoint(&self, note: &str) -> Result<String, JsValue> {
        self.inner
            .verify_checkpoint(note)
            .map(|c| to_json(&c))
            .map_err(err)
    }

    /// The verified snapshot's record as JSON.
    #[wasm_bindgen(js_name = verifySnapshot)]
    pub fn verify_snapshot(&self, snapshot_json: &[u8]) -> Result<String, JsValue> {
        self.inner
            .verify_snapshot(snapshot_json)
            .map(|s| to_json(&SnapshotInfo::of(&s)))
            .map_err(err)
    }
}

/// The version of this package's Rust side.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}
