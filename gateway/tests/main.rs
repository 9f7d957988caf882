//! The gateway's integration tests, one test binary: each file of `tests/` is a module
//! here, so the shared support code is compiled once and the dependency graph linked once
//! (64 test binaries across the registry, the gateway and dgsp-manager cost about 9 minutes
//! of a cold CI run). Run one file's tests with
//! `cargo test -p dgsp-gateway --test integration <file>::`.

/// Shared by every module below.
mod support;

mod batch;
mod binary;
mod bounds;
mod clock;
mod e2e;
mod feed;
mod freeze;
mod freshness;
mod limits;
mod malformed;
mod openapi;
mod page;
mod resume;
mod roots;
mod tiles;
mod tiles_bootstrap;
mod tiles_bounds;
mod tls;
mod witness_endpoint;
mod witness_state;
mod witnessed;
