//! The native half of the Python package `dgsp_verifier`: a thin PyO3 layer over the
//! `dgsp-verifier` crate. Every check is the crate's; this module only converts types.
//!
//! It returns plain tuples and raises one exception type, `NativeError(kind, what, detail,
//! message)`; the pure-Python layer (`python/dgsp_verifier/__init__.py`) turns them into
//! typed reports and the exception hierarchy users see (`DgspError`, `TrustRootError`,
//! `MalformedInput`, `InvalidSignature`, `BadSignedObject`). Verification runs with the
//! interpreter detached, so other Python threads run meanwhile.

#![forbid(unsafe_code)]

use dgsp_verifier::{Error, Policy, SnapshotInfo, TrustRoot as Root};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    _native,
    NativeError,
    PyException,
    "Raised by the native module with args (kind, what, detail, message); the package \
     turns it into a DgspError subclass."
);

/// Converts a crate error into `NativeError(kind, what, detail, message)`.
fn to_py(e: Error) -> PyErr {
    let message = e.to_string();
    let (kind, what, detail) = match e {
        Error::TrustRoot(d) => ("trust_root", "trust_root", d),
        Error::Malformed { what, detail } => ("malformed", what, detail),
        Error::Signature(d) => ("signature", "signature", d),
        Error::BadSignedObject { what, detail } => ("bad_signed_object", what, detail),
    };
    NativeError::new_err((kind, what, detail, message))
}

/// `(params, zeta_hex)`
type SignatureTuple = (String, String);
/// `(check, passed, detail)`
type CheckTuple = (&'static str, bool, String);
/// `(valid, gateway_status, gateway_valid, checks, witnesses_checked)`
type AnswerTuple = (bool, String, bool, Vec<CheckTuple>, bool);
/// `(correct, signature_valid, opening_matches, params, detail)`
type JudgeTuple = (bool, bool, bool, String, Option<String>);
/// `(origin, size, head_hex, time_unix_ms, snapshot_number)`
type CheckpointTuple = (String, u64, String, Option<u64>, Option<u64>);
/// `(group_hex, number, log_seq, count, root_hex, prev_hash_hex, time_unix_ms)`
type SnapshotTuple = (String, u64, u64, u64, String, String, u64);

/// A group public key trusted by the caller (the native form of `dgsp_verifier.TrustRoot`).
#[pyclass(frozen, module = "dgsp_verifier._native", name = "TrustRoot")]
struct TrustRoot {
    root: Root,
}

#[pymethods]
impl TrustRoot {
    /// The root from the key's binary encoding.
    #[staticmethod]
    fn from_key_bytes(key: &[u8]) -> PyResult<Self> {
        Root::from_key_bytes(key)
            .map(|root| TrustRoot { root })
            .map_err(to_py)
    }

    /// The root from a group key file's contents (base64 on the first non-blank line, or
    /// the raw encoding).
    #[staticmethod]
    fn from_key_file(contents: &[u8]) -> PyResult<Self> {
        Root::from_key_file(contents)
            .map(|root| TrustRoot { root })
            .map_err(to_py)
    }

    /// The root from a key file whose key must have `fingerprint` (64 hex characters).
    #[staticmethod]
    fn from_key_file_pinned(contents: &[u8], fingerprint: &str) -> PyResult<Self> {
        Root::from_key_file_pinned(contents, fingerprint)
            .map(|root| TrustRoot { root })
            .map_err(to_py)
    }

    /// This root with a witness policy (C2SP tlog-policy text) and, optionally, the group
    /// key's log-key statement, which must name the policy's log key.
    #[pyo3(signature = (policy, log_key_statement=None))]
    fn with_witness_policy(&self, policy: &str, log_key_statement: Option<&str>) -> PyResult<Self> {
        self.root
            .clone()
            .with_witness_policy(policy, log_key_statement)
            .map(|root| TrustRoot { root })
            .map_err(to_py)
    }

    /// The policy `log` line of the group's log key, from the group key's log-key
    /// statement (verified under the group key).
    fn log_line_from_statement(&self, log_key_statement: &str) -> PyResult<String> {
        self.root
            .log_line_from_statement(log_key_statement)
            .map_err(to_py)
    }

    /// Whether this root has a witness policy.
    #[getter]
    fn has_witness_policy(&self) -> bool {
        self.root.witness_policy().is_some()
    }

    /// The group's fingerprint (hex SHA3-256 of the key's encoding).
    #[getter]
    fn fingerprint(&self) -> String {
        self.root.fingerprint()
    }

    /// The group's parameter set name.
    #[getter]
    fn params(&self) -> &'static str {
        self.root.params().name()
    }

    /// Verifies a signature (revocation aside): `(params, zeta_hex)`.
    fn verify_signature(
        &self,
        py: Python<'_>,
        message: &[u8],
        signature: &[u8],
    ) -> PyResult<SignatureTuple> {
        py.detach(|| self.root.verify_signature(message, signature))
            .map(|i| (i.params, i.zeta))
            .map_err(to_py)
    }

    /// Checks a gateway's verify answer (JSON bytes) against the snapshot (JSON bytes, or
    /// None) and the policy (`clock_tolerance_ms`: how far the checkpoint's signed time may
    /// be ahead of `now_unix_ms`, the crate's default when None):
    /// `(valid, gateway_status, gateway_valid, checks, witnesses_checked)`.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (message, signature, answer, snapshot, max_age_ms, now_unix_ms, min_snapshot=None, clock_tolerance_ms=None))]
    fn check_answer(
        &self,
        py: Python<'_>,
        message: &[u8],
        signature: &[u8],
        answer: &[u8],
        snapshot: Option<&[u8]>,
        max_age_ms: u64,
        now_unix_ms: u64,
        min_snapshot: Option<u64>,
        clock_tolerance_ms: Option<u64>,
    ) -> PyResult<AnswerTuple> {
        let policy = Policy {
            max_age_ms,
            clock_tolerance_ms: clock_tolerance_ms
                .unwrap_or(dgsp_verifier::evidence::DEFAULT_CLOCK_TOLERANCE_MS),
            min_snapshot,
            now_unix_ms,
        };
        let report = py
            .detach(|| {
                self.root
                    .check_answer(message, signature, answer, snapshot, &policy)
            })
            .map_err(to_py)?;
        let checks = report
            .checks
            .0
            .into_iter()
            .map(|c| (c.check, c.passed, c.detail))
            .collect();
        Ok((
            report.valid,
            report.gateway_status,
            report.gateway_valid,
            checks,
            report.witnesses_checked,
        ))
    }

    /// Judges an opening `(id, pi)` of a signature:
    /// `(correct, signature_valid, opening_matches, params, detail)`.
    fn judge(
        &self,
        py: Python<'_>,
        message: &[u8],
        signature: &[u8],
        id: u64,
        pi: &[u8],
    ) -> PyResult<JudgeTuple> {
        py.detach(|| self.root.judge(message, signature, id, pi))
            .map(|j| {
                (
                    j.correct,
                    j.signature_valid,
                    j.opening_matches,
                    j.params,
                    j.detail,
                )
            })
            .map_err(to_py)
    }

    /// Verifies a signed checkpoint note of this group's log:
    /// `(origin, size, head_hex, time_unix_ms, snapshot_number)`.
    fn verify_checkpoint(&self, py: Python<'_>, note: &str) -> PyResult<CheckpointTuple> {
        py.detach(|| self.root.verify_checkpoint(note))
            .map(|c| (c.origin, c.size, c.head, c.time_unix_ms, c.snapshot_number))
            .map_err(to_py)
    }

    /// Verifies a signed snapshot (its JSON form):
    /// `(group_hex, number, log_seq, count, root_hex, prev_hash_hex, time_unix_ms)`.
    fn verify_snapshot(&self, py: Python<'_>, snapshot: &[u8]) -> PyResult<SnapshotTuple> {
        py.detach(|| self.root.verify_snapshot(snapshot))
            .map(|s| {
                let r = SnapshotInfo::of(&s);
                (
                    r.group,
                    r.number,
                    r.log_seq,
                    r.count,
                    r.root,
                    r.prev_hash,
                    r.time_unix_ms,
                )
            })
            .map_err(to_py)
    }

    fn __repr__(&self) -> String {
        format!(
            "TrustRoot(params={:?}, fingerprint={:?})",
            self.root.params().name(),
            self.root.fingerprint()
        )
    }
}

/// Native half of `dgsp_verifier` (use the package, not this module).
#[pymodule]
mod _native {
    #[pymodule_export]
    use super::NativeError;
    #[pymodule_export]
    use super::TrustRoot;
}
