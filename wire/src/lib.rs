//! What crosses the wire between the DGSP services and whoever checks them: the formats a
//! third party must parse and the rules it must apply to trust an answer, in one place, with
//! no I/O (no RocksDB, no HTTP, no clock but [`log::now_ms`] off wasm32), so that the
//! registry, the gateways, `dgsp-manager` and the verifier SDKs read them the same way.
//!
//! - [`log`]: log entries, canonical JSON, salted commitments and the SHA3-256 hash chain
//!   (`docs/event-log.md`); [`events`]: the event kinds and their public/private payloads.
//! - [`snapshot`]: the JSON form of a signed revocation snapshot.
//! - [`feed`]: a page of the registry's log feed.
//! - [`answer`]: the gateway's verify, batch and judge answers with their evidence.
//! - [`problem`]: RFC 9457 problem details, as every error answer carries them.
//! - [`anchor`]: a group trust anchor (key or fingerprint) from its text form.
//! - [`follow`]: the rules a follower applies to a checkpointed range of the log.
//! - [`limits`]: the body limit of a request that carries one signed message.
//! - [`merkle`]: the log's RFC 6962 Merkle tree: roots, inclusion and consistency proofs.
//! - [`tiles`]: the log as C2SP tlog-tiles: tile paths, entry bundles, the entry bytes.
//! - [`snapshot_bundle`]: a signed snapshot's revoked zetas, published beside the tiles.
//! - [`note`]: C2SP signed notes, checkpoints, cosignatures and witness policies
//!   (`docs/witnesses.md`).
//!
//! Builds for `wasm32-unknown-unknown`:
//! `cargo check -p dgsp-wire --target wasm32-unknown-unknown`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod anchor;
pub mod answer;
pub mod coverage;
pub mod events;
pub mod feed;
pub mod follow;
pub mod limits;
pub mod log;
pub mod merkle;
pub mod note;
pub mod problem;
pub mod registry_api;
pub mod snapshot;
pub mod snapshot_bundle;
pub mod tiles;
