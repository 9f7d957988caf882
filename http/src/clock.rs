//! The wall clock both services read signed times against, injectable so tests can step it
//! forward and back: the registry dates its notes and snapshots by it, the gateway measures
//! their freshness by it.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// A source of Unix time in milliseconds.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now, Unix ms.
    fn now_ms(&self) -> u64;
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        dgsp_wire::log::now_ms()
    }
}

/// The system clock shifted by an offset that can be changed while it is in use (tests
/// jump it forward and back).
#[derive(Debug, Default)]
pub struct OffsetClock {
    offset_ms: AtomicI64,
}

impl OffsetClock {
    /// A clock reading the system's time plus `offset_ms`, shareable.
    pub fn new(offset_ms: i64) -> Arc<OffsetClock> {
        Arc::new(OffsetClock {
            offset_ms: AtomicI64::new(offset_ms),
        })
    }

    /// Sets the offset from the system clock.
    pub fn set_offset_ms(&self, offset_ms: i64) {
        self.offset_ms.store(offset_ms, Ordering::SeqCst);
    }
}

impl Clock for OffsetClock {
    fn now_ms(&self) -> u64 {
        let now = dgsp_wire::log::now_ms() as i64;
        now.saturating_add(self.offset_ms.load(Ordering::SeqCst))
            .max(0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offset_clock_follows_its_offset() {
        let c = OffsetClock::new(60_000);
        let ahead = c.now_ms();
        assert!(ahead >= SystemClock.now_ms() + 59_000);
        c.set_offset_ms(-60_000);
        assert!(c.now_ms() + 119_000 <= ahead);
    }
}
