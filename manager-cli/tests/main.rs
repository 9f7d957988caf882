//! `dgsp-manager`'s integration tests, one test binary: each file of `tests/` is a module
//! here, so the shared support code is compiled once and the dependency graph linked once
//! (64 test binaries across the registry, the gateway and dgsp-manager cost about 9 minutes
//! of a cold CI run). Run one file's tests with
//! `cargo test -p dgsp-manager --test integration <file>::`.

/// Shared: running dgsp-manager.
#[path = "support/cli.rs"]
mod cli_support;
/// Shared: logs written for the auditor.
#[path = "support/logs.rs"]
mod logs;
/// Shared: registries and gateways as child processes.
#[path = "support/services.rs"]
mod services;
/// Shared: the gateway's test harness: its registry and gateway helpers.
#[path = "../../gateway/tests/support/mod.rs"]
mod support;
/// Shared: changing one thing in a log.
#[path = "support/tamper.rs"]
mod tamper;

mod answer_cap;
mod audit;
mod audit_compare;
mod audit_tiles;
mod client;
mod freeze;
mod fuzz_seeds;
mod proxy;
mod secrets;
mod stack;
mod tls;
mod verify;
mod walkthrough;
mod wallet;
mod witnessed_stack;
