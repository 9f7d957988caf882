//! # dgsp-gateway
//!
//! The public verification API of one DGSP group. A gateway follows the group's registry over
//! HTTP, checks the hash chain, every checkpoint and every snapshot signature against the
//! pinned group key before applying anything, keeps its own RocksDB replica, and answers
//! verify, batch verify and judge requests with the signed snapshot and revocation proof
//! they were checked against. Any number of gateways can follow one registry.
//!
//! Modules: [`anchor`] (which group), [`clock`] (the wall clock freshness is measured by),
//! [`follower`] (feed → checked ranges), [`replica`]
//! (RocksDB), [`state`] (the view in service, sync status), [`pool`] (bounded verification
//! threads that coalesce signatures into engine batches), [`tiles`] (starting from and
//! following the log's tiles and snapshot bundle, `--tiles`), [`layout`] (HTTP and verify threads
//! sized from the cores), [`witness`] (the witness policy a checkpoint's cosignatures must
//! meet, `--witness-policy`), [`witnessing`] (the gateway as a witness of its group's log,
//! `--witness-key`), [`api`] (axum handlers), [`server`] (start/stop), [`cli`].

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod anchor;
pub mod api;
pub mod cli;
pub mod clock;
pub mod follower;
pub mod layout;
pub mod pool;
pub mod replica;
pub mod server;
pub mod stalls;
pub mod state;
pub mod tiles;
pub mod witness;
pub mod witnessing;
