//! # dgsp-registry
//!
//! The group manager's service: every join, certificate issuance, revocation and opening is
//! an event in an append-only, hash-chained RocksDB log; the private member list (PLM) and
//! the public revoked list are projections of it. See ARCHITECTURE.md and docs/event-log.md.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod api;
pub mod backup;
pub mod cli;
pub mod clock;
pub mod feed;
pub mod health;
pub mod issuance;
pub mod keyfile;
pub mod publisher;
pub mod server;
pub mod store;
pub mod views;
pub mod writer;
