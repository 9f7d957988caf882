//! A gateway's verify answer, checked whole.

use dgsp_core::revocation::SignedSnapshot;
use dgsp_wire::answer::VerifyAnswer;
use serde::Serialize;

use crate::error::Error;
use crate::evidence::{self, Check, Checks, Policy};
use crate::trust::{parse_snapshot, TrustRoot};

/// The outcome of checking a gateway's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AnswerReport {
    /// True exactly when every check held: the signature is valid, its certificate is
    /// proven not revoked in the snapshot a fresh signed checkpoint names.
    pub valid: bool,
    /// The gateway's own status word (`ok`, `revoked`, `invalid_signature`, `stale`, ...):
    /// the gateway's word, not checked by itself.
    pub gateway_status: String,
    /// Whether the gateway said valid.
    pub gateway_valid: bool,
    /// Every check, in order, by its stable name (the constants of [`evidence`]).
    pub checks: Checks,
    /// Whether the checkpoint's witnesses were checked ([`evidence::WITNESSED_CHECKPOINT`],
    /// [`evidence::WITNESS_QUORUM`]): only when the trust root has a witness policy
    /// ([`TrustRoot::with_witness_policy`]). When false, nothing excludes a checkpoint the
    /// group key signed for this caller alone (a split view).
    pub witnesses_checked: bool,
}

impl AnswerReport {
    /// The first check that failed.
    pub fn first_failure(&self) -> Option<&Check> {
        self.checks.first_failure()
    }
}

impl TrustRoot {
    /// Checks a gateway's `POST /v1/verify` answer (its JSON body) for `signature` on
    /// `message`. `snapshot_json` is the signed snapshot the answer's checkpoint names, as
    /// served at `/v1/revocations/snapshots/{n}` (`n` from
    /// [`VerifyAnswer::freshness`]`.checkpoint.snapshot_number`); without it the snapshot and
    /// proof checks fail. Errors only for inputs that cannot be read; everything that can be
    /// checked and fails is a negative report.
    pub fn check_answer(
        &self,
        message: &[u8],
        signature: &[u8],
        answer_json: &[u8],
        snapshot_json: Option<&[u8]>,
        policy: &Policy,
    ) -> Result<AnswerReport, Error> {
        let answer: VerifyAnswer =
            serde_json::from_slice(answer_json).map_err(|e| Error::malformed("answer", e))?;
        let snapshot = match snapshot_json {
            Some(bytes) => parse_snapshot(bytes).map_err(|e| e.to_string()),
            None => Err("no snapshot was given to check the proof against".to_owned()),
        };
        self.check_parsed_answer(message, signature, &answer, snapshot, policy)
    }

    /// [`TrustRoot::check_answer`] on an answer and snapshot already decoded (`snapshot`:
    /// the one the answer's checkpoint names, or why there is none).
    pub fn check_parsed_answer(
        &self,
        message: &[u8],
        signature: &[u8],
        answer: &VerifyAnswer,
        snapshot: Result<SignedSnapshot, String>,
        policy: &Policy,
    ) -> Result<AnswerReport, Error> {
        let sig = Self::decode_signature(signature)?;
        let mut checks = Checks::default();
        let cp = evidence::check_answer(self.key(), message, &sig, answer, policy, &mut checks);
        if let Some(witnesses) = self.witness_policy() {
            evidence::check_witnesses(witnesses, answer, cp.as_ref(), policy, &mut checks);
        }
        if let Some(cp) = cp {
            evidence::check_snapshot(self.key(), &sig, answer, &cp, snapshot, policy, &mut checks);
        }
        Ok(AnswerReport {
            valid: checks.all_passed(),
            gateway_status: answer.status.label().to_owned(),
            gateway_valid: answer.valid,
            checks,
            witnesses_checked: self.witness_policy().is_some(),
        })
    }
}
