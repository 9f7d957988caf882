//! C2SP signed notes for witnessing (`docs/witnesses.md`, "Formats (as built)"), with no
//! I/O:
//!
//! - [`signed_note`]: notes and signature lines (`c2sp.org/signed-note`).
//! - [`vkey`]: verifier keys `<name>+<key id>+base64(type || key)`.
//! - [`checkpoint_body`]: the plain checkpoint body (`c2sp.org/tlog-checkpoint`).
//! - [`cosignature`]: ML-DSA-44 and Ed25519 cosignatures (`c2sp.org/tlog-cosignature`),
//!   the log's own ML-DSA-44 signature, and [`MlDsaCosigner`] that makes them.
//! - [`policy`]: witness policies (`c2sp.org/tlog-policy`) and quorum evaluation.
//! - [`witnessed`]: a witnessed checkpoint judged against a policy.
//! - [`log_key`]: the group key's statement naming the log's key, judged by a learner.

pub mod checkpoint_body;
pub mod cosignature;
pub mod log_key;
pub mod policy;
pub mod signed_note;
pub mod vkey;
pub mod witnessed;

pub use checkpoint_body::{CheckpointBody, CheckpointBodyError};
pub use cosignature::{
    cosigned_message, ed25519_cosigned_message, verify_signature_line, CosignatureError,
    MlDsaCosigner,
};
pub use log_key::{verify_log_key_statement, LearnedLogKey, LogKeyStatementError};
pub use policy::{Policy, PolicyError, PolicyErrorKind, PolicyGroup, PolicyLog, PolicyWitness};
pub use signed_note::{parse_signature_lines, NoteError, SignatureLine, SignedNote};
pub use vkey::{KeyKind, Vkey, VkeyError};
pub use witnessed::{verify_witnessed, witnessed_note, Witnessed, WitnessedError};
