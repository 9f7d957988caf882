//! The registry's integration tests, one test binary: each file of `tests/` is a module
//! here, so the shared support code is compiled once and the dependency graph linked once
//! (64 test binaries across the registry, the gateway and dgsp-manager cost about 9 minutes
//! of a cold CI run). Run one file's tests with
//! `cargo test -p dgsp-registry --test integration <file>::`.

/// Shared by every module below.
mod support;

mod backup;
mod bounds;
mod clock;
mod crash;
mod feed;
mod fencing;
mod http;
mod init;
mod issuance;
mod migration;
mod openapi;
mod recovery;
mod revocation_order;
mod secrets;
mod snapshot_bundle;
mod store;
mod takeover;
mod tiles;
mod tls;
mod traits;
mod upcast;
mod witnesses;
mod witnesses_loopback;
mod writer;
