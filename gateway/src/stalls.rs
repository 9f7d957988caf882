//! The machine's own stalls: how often and for how long a thread that never blocks is kept
//! from running, measured with nothing else of a benchmark running. Used by the gateway's
//! in-process bench (`benches/gateway`) and by the load test (`dgsp-loadtest probe`). A latency tail shorter than the
//! stalls the machine itself imposes cannot be promised on it, so the benches measure them
//! first and print them beside the tail (on a VM they are mostly the hypervisor running
//! other guests on our cores: time that neither the guest's scheduler nor its steal clock
//! may show).
//!
//! One thread per core reads the monotonic clock in a loop; any gap between two readings
//! longer than [`GAP`] is time that thread did not run.

use std::time::{Duration, Instant};

/// A gap shorter than this is the loop itself (a clock read is ~20 ns) or an interrupt.
const GAP: Duration = Duration::from_micros(50);

/// What the spinning threads saw, added up.
#[derive(Debug, Default)]
pub struct Stalls {
    /// Thread-seconds measured.
    pub thread_secs: f64,
    /// Time lost in gaps over [`GAP`], as a fraction of `thread_secs`.
    pub lost: f64,
    /// Gaps over 1 ms.
    pub over_1ms: u64,
    /// Gaps over 3 ms.
    pub over_3ms: u64,
    /// The longest gap.
    pub longest: Duration,
}

impl std::fmt::Display for Stalls {
    /// The bench's line: time lost, gaps over 1 and 3 ms per thread-second, the longest.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let per_sec = |n: u64| n as f64 / self.thread_secs.max(f64::MIN_POSITIVE);
        write!(
            f,
            "{:.2}% of the time lost; {:.2} gaps over 1 ms and {:.2} over 3 ms per core-second; longest {:.2} ms",
            100.0 * self.lost,
            per_sec(self.over_1ms),
            per_sec(self.over_3ms),
            self.longest.as_secs_f64() * 1e3
        )
    }
}

/// Spins `threads` threads for `dur` and adds up their gaps (fewer threads when the system
/// refuses to start one: [`Stalls::thread_secs`] says how many ran).
pub fn measure(threads: usize, dur: Duration) -> Stalls {
    let one = move || {
        let start = Instant::now();
        let (mut last, mut lost) = (start, Duration::ZERO);
        let mut s = Stalls::default();
        loop {
            let now = Instant::now();
            let gap = now - last;
            if gap > GAP {
                lost += gap;
                s.over_1ms += u64::from(gap > Duration::from_millis(1));
                s.over_3ms += u64::from(gap > Duration::from_millis(3));
                s.longest = s.longest.max(gap);
            }
            last = now;
            if now - start >= dur {
                break;
            }
        }
        s.thread_secs = dur.as_secs_f64();
        s.lost = lost.as_secs_f64();
        s
    };
    let handles: Vec<_> = (0..threads.max(1))
        .filter_map(|i| {
            std::thread::Builder::new()
                .name(format!("stalls-{i}"))
                .spawn(one)
                .ok()
        })
        .collect();
    let mut all = Stalls::default();
    for h in handles {
        let Ok(s) = h.join() else { continue };
        all.thread_secs += s.thread_secs;
        all.lost += s.lost;
        all.over_1ms += s.over_1ms;
        all.over_3ms += s.over_3ms;
        all.longest = all.longest.max(s.longest);
    }
    all.lost /= all.thread_secs.max(f64::MIN_POSITIVE);
    all
}
