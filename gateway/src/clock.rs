//! The gateway's wall clock, and how far a signed time may be ahead of it.
//!
//! Freshness compares the registry's signed times with this clock. A checkpoint signed more
//! than the tolerance ahead of it (`--clock-tolerance-ms`, default 5 s) is refused
//! (`future_checkpoint`): one of the two clocks is wrong, and such a note would have age 0
//! for as long as the registry's clock ran ahead. The time comes from a
//! [`dgsp_http::clock::Clock`] (the system's; tests step an
//! [`OffsetClock`](dgsp_http::clock::OffsetClock) instead); monotonic time
//! ([`std::time::Instant`], which the gateway also measures staleness by) is the system's.

use std::sync::Arc;
use std::time::Duration;

use dgsp_core::checkpoint::Checkpoint;
pub use dgsp_core::checkpoint::DEFAULT_CLOCK_TOLERANCE_MS;
use dgsp_http::clock::{Clock, SystemClock};

/// The fault kind (and `/readyz` status) of a checkpoint signed beyond the tolerance ahead.
pub const FUTURE_CHECKPOINT: &str = "future_checkpoint";

/// The default tolerance for signed times ahead of the gateway's clock.
pub const DEFAULT_CLOCK_TOLERANCE: Duration = Duration::from_millis(DEFAULT_CLOCK_TOLERANCE_MS);

/// The gateway's wall clock and its tolerance for signed times ahead of it. Clones read the
/// same clock.
#[derive(Clone, Debug)]
pub struct WallClock {
    source: Arc<dyn Clock>,
    tolerance: Duration,
}

impl WallClock {
    /// The system clock, with [`DEFAULT_CLOCK_TOLERANCE`].
    pub fn system() -> Self {
        WallClock::new(Arc::new(SystemClock))
    }

    /// `source`, with [`DEFAULT_CLOCK_TOLERANCE`].
    pub fn new(source: Arc<dyn Clock>) -> Self {
        WallClock {
            source,
            tolerance: DEFAULT_CLOCK_TOLERANCE,
        }
    }

    /// This clock with `tolerance` for signed times ahead of it.
    pub fn with_tolerance(self, tolerance: Duration) -> Self {
        WallClock { tolerance, ..self }
    }

    /// How far ahead of this clock a signed time may be.
    pub fn tolerance(&self) -> Duration {
        self.tolerance
    }

    /// Now, Unix milliseconds.
    pub fn now_unix_ms(&self) -> u64 {
        self.source.now_ms()
    }

    /// Whether `cp`'s signed time is more than the tolerance ahead of `now_unix_ms`.
    pub fn is_ahead(&self, cp: &Checkpoint, now_unix_ms: u64) -> bool {
        let tolerance_ms = u64::try_from(self.tolerance.as_millis()).unwrap_or(u64::MAX);
        cp.ahead_ms(now_unix_ms)
            .is_some_and(|ahead| ahead > tolerance_ms)
    }

    /// Refuses a checkpoint signed more than the tolerance ahead of this clock, saying by
    /// how much (the detail of a `future_checkpoint` fault).
    pub fn check_not_ahead(&self, cp: &Checkpoint) -> Result<(), String> {
        let now = self.now_unix_ms();
        if !self.is_ahead(cp, now) {
            return Ok(());
        }
        Err(format!(
            "it is signed at {} (Unix ms), {:.1} s ahead of this gateway's clock ({now}), more than the {:.1} s tolerated: the registry's clock or this one is wrong, and such a note says nothing about how fresh the state is",
            cp.time_unix_ms.unwrap_or_default(),
            cp.ahead_ms(now).unwrap_or_default() as f64 / 1e3,
            self.tolerance.as_secs_f64()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dgsp_http::clock::OffsetClock;

    fn signed_at(t: u64) -> Checkpoint {
        Checkpoint {
            origin: "dgsp/test".into(),
            size: 1,
            root: [0; 32],
            time_unix_ms: Some(t),
            snapshot: None,
        }
    }

    #[test]
    fn a_signed_time_beyond_the_tolerance_ahead_is_refused() {
        let clock = WallClock::system().with_tolerance(Duration::from_secs(5));
        let now = clock.now_unix_ms();
        assert!(clock.check_not_ahead(&signed_at(now)).is_ok());
        assert!(clock.check_not_ahead(&signed_at(now + 4_000)).is_ok());
        let err = clock
            .check_not_ahead(&signed_at(now + 600_000))
            .unwrap_err();
        assert!(err.contains("ahead of this gateway's clock"), "{err}");
        assert!(!clock.is_ahead(&signed_at(now + 5_000), now));
        assert!(clock.is_ahead(&signed_at(now + 5_001), now));
        // Untimed (legacy) notes are never ahead.
        let untimed = Checkpoint {
            time_unix_ms: None,
            ..signed_at(0)
        };
        assert!(!clock.is_ahead(&untimed, 0));
    }

    #[test]
    fn clones_share_the_offset() {
        let offset = OffsetClock::new(0);
        let clock = WallClock::new(offset.clone());
        let other = clock.clone();
        let before = other.now_unix_ms();
        offset.set_offset_ms(-3_600_000);
        let behind = other.now_unix_ms();
        assert!(before - behind >= 3_599_000, "{before} {behind}");
        offset.set_offset_ms(3_600_000);
        assert!(other.now_unix_ms() >= before + 3_600_000);
        // A note signed "now" by the real clock is an hour ahead of a clock an hour behind.
        offset.set_offset_ms(-3_600_000);
        assert!(clock.check_not_ahead(&signed_at(before)).is_err());
    }
}
