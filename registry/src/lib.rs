//! # dgsp-registry
//!
//! The group manager's service: every join, certificate issuance, revocation and opening is
//! an event in an append-only, hash-chained RocksDB log; the private member list (PLM) and
//! the public revoked list are projections of it. See ARCHITECTURE.md and docs/event-log.md.
//!
//! The modules are layered one way: a module uses only modules of lower layers (and the
//! crates below: `dgsp-wire` for the log format, events and the API's request and answer
//! types, `dgsp-secrets` for secret files, `dgsp-http` for what both services serve). A unit
//! test (`layering.rs`) reads the sources and fails on an import that goes up or sideways.
//!
//! | layer | modules |
//! |---|---|
//! | 0 | [`health`], [`keyfile`] |
//! | 1 | [`store`] |
//! | 2 | [`journal`], [`witnessing`] |
//! | 3 | [`writer`] |
//! | 4 | [`publisher`], [`issuance`], [`feed`], [`views`], [`backup`] |
//! | 5 | [`api`], [`mirror`] |
//! | 6 | [`server`] |
//! | 7 | [`cli`] (and the `dgsp-registry` binary, `main.rs`, above everything) |

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod api;
pub mod backup;
pub mod cli;
pub mod feed;
pub mod health;
pub mod issuance;
pub mod journal;
pub mod keyfile;
pub mod mirror;
pub mod publisher;
pub mod server;
pub mod store;
pub mod views;
pub mod witnessing;
pub mod writer;

#[cfg(test)]
mod layering;
