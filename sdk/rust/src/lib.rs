//! Check DGSP group signatures, and the answers of a DGSP gateway, offline.
//!
//! Trust comes only from the [`TrustRoot`] the caller passes: the group's public key (its
//! file, bytes or base64), optionally cross-checked against a fingerprint obtained out of
//! band. Nothing here does I/O or asks the network: the caller fetches what it wants
//! checked (a gateway's verify answer, the signed snapshot its checkpoint names) and hands
//! it over; every check is computed here.
//!
//! ```no_run
//! # fn main() -> Result<(), dgsp_verifier::Error> {
//! # let (key_file, message, signature, answer_json, snapshot_json) = (b"", b"", b"", b"", b"");
//! use dgsp_verifier::{Policy, TrustRoot};
//! let root = TrustRoot::from_key_file(key_file)?;                   // the group key you trust
//! root.verify_signature(message, signature)?;                        // the signature alone
//! let policy = Policy::max_age_secs(300, 1_795_000_000_000);         // now, Unix ms
//! let report = root.check_answer(message, signature, answer_json, Some(snapshot_json), &policy)?;
//! assert!(report.valid, "{:?}", report.first_failure());
//! # Ok(()) }
//! ```
//!
//! - [`TrustRoot::verify_signature`]: the signature under the group key (revocation aside:
//!   a signature carries no revocation state; that is what a gateway answer proves).
//! - [`TrustRoot::check_answer`]: a gateway's `POST /v1/verify` answer: the signature, the
//!   signed checkpoint note in the answer (group key, this group's log, signed time no older
//!   than the policy allows), the signed snapshot that checkpoint names (its signature, and
//!   that the checkpoint names exactly it), and the revocation proof against it for the
//!   zeta read from the signature itself. Each check is reported by a stable name. With a
//!   witness policy in the trust root ([`TrustRoot::with_witness_policy`]), also the
//!   answer's witnessed checkpoint: the group's log key signed the same tree, and a quorum
//!   of the policy's witnesses cosigned it, each within the maximum age.
//! - [`TrustRoot::judge`]: whether `(id, pi)` is the correct opening of a signature.
//! - [`TrustRoot::verify_checkpoint`] and [`TrustRoot::verify_snapshot`]: a signed
//!   checkpoint note or snapshot on its own.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod answer;
mod error;
pub mod evidence;
mod judge;
mod trust;

pub use answer::AnswerReport;
pub use error::Error;
pub use evidence::{Check, Checks, Policy};
pub use judge::JudgeReport;
pub use trust::{CheckpointInfo, SignatureInfo, SnapshotInfo, TrustRoot};

/// A witness policy (`c2sp.org/tlog-policy`), as [`TrustRoot::with_witness_policy`] reads
/// it.
pub use dgsp_wire::note::Policy as WitnessPolicy;

/// The wire types this crate reads (gateway answers, snapshots), re-exported.
pub use dgsp_wire as wire;
