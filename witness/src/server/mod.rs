//! A `c2sp.org/tlog-witness` witness (issue 28 item 5: every gateway can be a witness),
//! storage-agnostic and reusable.
//!
//! - [`Witness`]: the logic. `Witness::new(key, logs, store, clock)`;
//!   [`Witness::add_checkpoint`] judges a request body and returns a [`WitnessAnswer`]
//!   (200 with an ML-DSA-44 cosignature line, 400, 403, 404, 409 `text/x.tlog.size`, 413,
//!   422, 500), exactly per the spec where omniwitness deviates (it answers 500 for an
//!   unknown origin and a bad log signature; this answers 404 and 403).
//! - [`KnownLogs`]: origin → trusted log keys (`from_policy` takes a tlog-policy's `log`
//!   lines).
//! - [`WitnessStore`]: the durable per-origin [`TreeHead`], with an atomic, durable
//!   compare-and-set: [`DirStore`], a directory of its own (a gateway keeps it with its
//!   witness key); [`MemoryStore`] for tests.
//! - [`router`]: `POST /add-checkpoint` for axum, 16 KiB body limit (413 beyond), and the
//!   monitoring `GET /<hex SHA-256(origin)>/checkpoint` ([`latest_checkpoint`]): the newest
//!   checkpoint cosigned since the start, with the log's signature and the cosignature.

mod http;
mod store;
mod witness;

pub use http::{latest_checkpoint, router};
pub use store::{
    DirStore, MemoryStore, StoreError, TreeHead, WitnessStore, MAX_LOG_KEY_STATEMENT, STATE_FORMAT,
};
pub use witness::{
    origin_hash, system_clock, KnownLogs, KnownLogsError, UnixClock, Witness, WitnessAnswer,
    BAD_PROOF, BAD_TRUSTED_SIGNATURE, MAX_ORIGIN_LEN, NOT_EMPTY_ROOT, NO_TRUSTED_SIGNATURE,
    OTHER_ROOT, PROOF_FROM_ZERO, TEXT_PLAIN, UNSIGNED_EXTENSIONS,
};

#[cfg(test)]
mod tests;
