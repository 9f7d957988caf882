//! Crash points for the tests: `DGSP_WALLET_TEST_CRASH=<point>` makes the process abort
//! (no destructors, no flushing: like a `kill -9`) when it reaches `<point>`.
//!
//! Only compiled into debug builds (`cfg(debug_assertions)`, which `cargo test` uses); in a
//! release build every function here is a no-op and the variable is ignored.
//!
//! Points, in the order `member sign` reaches them: `before-journal` (slot chosen, nothing
//! written), `torn-record` (half a record written and synced), `after-journal-write`
//! (whole record written, not yet fsynced), `after-fsync` (record durable, lock still held),
//! `before-output` (signature computed, not yet written).

/// The environment variable naming the crash point.
pub const ENV: &str = "DGSP_WALLET_TEST_CRASH";

/// Is `point` the armed crash point?
#[cfg(debug_assertions)]
pub fn armed(point: &str) -> bool {
    std::env::var_os(ENV).is_some_and(|v| v == point)
}

/// Is `point` the armed crash point? (never, in release builds)
#[cfg(not(debug_assertions))]
pub fn armed(_point: &str) -> bool {
    false
}

/// Aborts the process (what an armed point does).
pub fn now() {
    if cfg!(debug_assertions) {
        std::process::abort();
    }
}

/// Aborts here when `point` is armed.
pub fn at(point: &str) {
    if armed(point) {
        now();
    }
}
