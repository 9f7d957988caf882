//! DGSP's side of the C2SP `tlog-witness` protocol (issue 28; `docs/witnesses.md`).
//!
//! - [`protocol`]: the `add-checkpoint` request body (encode and strict parse, for a log and
//!   for a gateway acting as a witness), the 409 answer (`text/x.tlog.size`), and the
//!   cosignature lines of a 200 answer.
//! - [`client`]: [`WitnessClient`], one witness over HTTP with bounded reads and a
//!   per-request timeout, every answer a typed [`SubmitError`]; [`Submitter`], the per-witness
//!   state machine (the size it last cosigned, one retry after a 409, [`WitnessStatus`] for
//!   metrics).
//! - [`server`]: a witness ([`server::Witness`]): the `add-checkpoint` logic per spec, its
//!   state behind [`server::WitnessStore`] (an atomic, durable compare-and-set; a gateway
//!   implements it on RocksDB), and an axum [`server::router`].
//! - `test_server` (feature `test-server`): the two real witnesses, omniwitness and
//!   litewitness, started by `scripts/witnesses.sh` for tests.
//!
//! [`WitnessClient`] returns a witness's lines as given; a [`Submitter`] made with the
//! witness's key keeps only its one line under that key that verifies, so that a witness's
//! bad answer is that witness's failure alone. The caller still judges the note it builds
//! against its policy (`dgsp_wire::note`).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod client;
pub mod protocol;
pub mod server;
#[cfg(feature = "test-server")]
pub mod test_server;

pub use client::{InvalidPrefix, SubmitError, Submitter, WitnessClient, WitnessStatus};
pub use protocol::{AddCheckpoint, ProtocolError};
