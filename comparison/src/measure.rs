//! Timing with confidence intervals: a small sampler in the manner of criterion's
//! `iter_batched`, bounded in wall time so that a full run of every scheme fits in minutes.
//!
//! One measurement: a warm-up (at least one call) estimates the cost of the routine and of
//! its untimed setup; then `n` samples are taken, each timing `k` consecutive calls of the
//! routine on inputs prepared beforehand (outputs are dropped after the clock stops). The
//! estimate is the mean of the `n` per-call sample means with a 95 % Student-t interval
//! (`mean ± t(0.975, n-1) · s / √n`). `n` and `k` are chosen from the warm-up so that the
//! timed part takes about [`Budget::target`] and the whole measurement, setup included,
//! stays under [`Budget::wall_cap`]; a routine slower than `target / min_samples` gets
//! `min_samples` samples of one call each. [`paired`] times two routines alternately, for
//! comparisons that must not depend on when each was timed.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::stats;

/// How long one measurement may take.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Warm-up time (at least one call).
    pub warm_up: Duration,
    /// Timed part of the measurement.
    pub target: Duration,
    /// The whole measurement including untimed setup.
    pub wall_cap: Duration,
    /// Fewest samples (the interval's degrees of freedom are `min_samples - 1`).
    pub min_samples: usize,
    /// Most samples.
    pub max_samples: usize,
    /// Most timed calls in all (for operations that change what they measure, e.g. a join
    /// that grows the group); at least `min_samples` calls are made anyway.
    pub max_calls: usize,
}

impl Budget {
    /// The full run: 0.3 s warm-up, ~1 s timed, at most 4 s with setup, 5-30 samples.
    pub const FULL: Budget = Budget {
        warm_up: Duration::from_millis(300),
        target: Duration::from_millis(1000),
        wall_cap: Duration::from_secs(4),
        min_samples: 5,
        max_samples: 30,
        max_calls: usize::MAX,
    };

    /// The smoke run: one warm-up call, a few milliseconds, 3 samples.
    pub const SMOKE: Budget = Budget {
        warm_up: Duration::ZERO,
        target: Duration::from_millis(3),
        wall_cap: Duration::from_millis(30),
        min_samples: 3,
        max_samples: 3,
        max_calls: usize::MAX,
    };
}

/// A measured mean time per call with its 95 % confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// Mean time per call, nanoseconds.
    pub mean_ns: f64,
    /// Lower end of the 95 % interval of the mean, nanoseconds.
    pub low_ns: f64,
    /// Upper end of the 95 % interval of the mean, nanoseconds.
    pub high_ns: f64,
    /// Number of samples.
    pub samples: usize,
    /// Calls per sample.
    pub calls_per_sample: u64,
}

impl Estimate {
    /// Half the interval's width relative to the mean (0.02 = ±2 %).
    pub fn relative_half_width(&self) -> f64 {
        if self.mean_ns > 0.0 {
            (self.high_ns - self.low_ns) / 2.0 / self.mean_ns
        } else {
            0.0
        }
    }

    /// This estimate divided by `n` (a batch of `n` items measured as one call), interval
    /// included.
    pub fn per_item(&self, n: usize) -> Estimate {
        let d = n.max(1) as f64;
        Estimate {
            mean_ns: self.mean_ns / d,
            low_ns: self.low_ns / d,
            high_ns: self.high_ns / d,
            ..*self
        }
    }

    /// The sum of independent estimates (means add; half-widths add in quadrature).
    pub fn sum(parts: &[Estimate]) -> Estimate {
        let mean: f64 = parts.iter().map(|e| e.mean_ns).sum();
        let half = parts
            .iter()
            .map(|e| ((e.high_ns - e.low_ns) / 2.0).powi(2))
            .sum::<f64>()
            .sqrt();
        Estimate {
            mean_ns: mean,
            low_ns: (mean - half).max(0.0),
            high_ns: mean + half,
            samples: parts.iter().map(|e| e.samples).min().unwrap_or(0),
            calls_per_sample: 1,
        }
    }
}

/// Measures `routine` with a fresh input from `setup` per call (setup untimed).
pub fn batched<I, O>(
    budget: &Budget,
    mut setup: impl FnMut() -> I,
    mut routine: impl FnMut(I) -> O,
) -> Estimate {
    let (n, k) = warm_up(budget, &mut setup, &mut routine);
    let means = sample(n, k, &mut setup, &mut routine);
    estimate(&means, k)
}

/// Measures `routine` with no per-call input.
pub fn simple<O>(budget: &Budget, mut routine: impl FnMut() -> O) -> Estimate {
    batched(budget, || (), |()| routine())
}

/// Rounds of [`paired`].
pub const PAIRED_ROUNDS: usize = 4;

/// Measures `a` and `b` alternately, [`PAIRED_ROUNDS`] rounds of a quarter of the budget
/// each, and pools each one's samples: a slow change of the machine's load then weighs on
/// both alike, so their ratio shows what differs between them, not when each was timed.
pub fn paired<A, B>(
    budget: &Budget,
    mut a: impl FnMut() -> A,
    mut b: impl FnMut() -> B,
) -> (Estimate, Estimate) {
    let (mut none_a, mut none_b) = (|| (), || ());
    let (mut ra, mut rb) = (|(): ()| a(), |(): ()| b());
    let (na, ka) = warm_up(budget, &mut none_a, &mut ra);
    let (nb, kb) = warm_up(budget, &mut none_b, &mut rb);
    let per_round = |n: usize| n.div_ceil(PAIRED_ROUNDS).max(2);
    let (mut sa, mut sb) = (Vec::new(), Vec::new());
    for _ in 0..PAIRED_ROUNDS {
        sa.extend(sample(per_round(na), ka, &mut none_a, &mut ra));
        sb.extend(sample(per_round(nb), kb, &mut none_b, &mut rb));
    }
    (estimate(&sa, ka), estimate(&sb, kb))
}

/// Warm-up: single calls until the warm-up time has passed (at least one); returns the
/// samples and calls per sample the budget allows.
fn warm_up<I, O>(
    budget: &Budget,
    setup: &mut impl FnMut() -> I,
    routine: &mut impl FnMut(I) -> O,
) -> (usize, usize) {
    let started = Instant::now();
    let (mut calls, mut timed, mut untimed) = (0u32, Duration::ZERO, Duration::ZERO);
    loop {
        let s = Instant::now();
        let input = setup();
        let t = Instant::now();
        let out = black_box(routine(black_box(input)));
        timed += t.elapsed();
        drop(out);
        untimed += t.duration_since(s);
        calls += 1;
        if started.elapsed() >= budget.warm_up {
            break;
        }
    }
    let per_call = timed.as_secs_f64() / f64::from(calls);
    let setup_per_call = untimed.as_secs_f64() / f64::from(calls);
    plan(budget, per_call, setup_per_call)
}

/// `n` samples of `k` calls each: the mean time per call of each sample, in nanoseconds.
fn sample<I, O>(
    n: usize,
    k: usize,
    setup: &mut impl FnMut() -> I,
    routine: &mut impl FnMut(I) -> O,
) -> Vec<f64> {
    let mut means = Vec::with_capacity(n);
    for _ in 0..n {
        let inputs: Vec<I> = (0..k).map(|_| setup()).collect();
        let mut outputs = Vec::with_capacity(k);
        let t = Instant::now();
        for input in inputs {
            outputs.push(black_box(routine(black_box(input))));
        }
        let elapsed = t.elapsed();
        drop(outputs);
        means.push(elapsed.as_nanos() as f64 / k as f64);
    }
    means
}

fn estimate(means: &[f64], k: usize) -> Estimate {
    let (mean, half) = stats::mean_ci95(means);
    Estimate {
        mean_ns: mean,
        low_ns: (mean - half).max(0.0),
        high_ns: mean + half,
        samples: means.len(),
        calls_per_sample: k as u64,
    }
}

/// Samples `n` and calls per sample `k` for a routine of `per_call` seconds with
/// `setup_per_call` seconds of untimed setup.
fn plan(budget: &Budget, per_call: f64, setup_per_call: f64) -> (usize, usize) {
    let per_call = per_call.max(1e-9);
    let target = budget.target.as_secs_f64();
    // Calls that fit the target, and the wall cap once setup is counted.
    let by_target = (target / per_call).floor();
    let by_wall = (budget.wall_cap.as_secs_f64() / (per_call + setup_per_call)).floor();
    let calls = by_target
        .min(by_wall)
        .min(budget.max_calls as f64)
        .max(budget.min_samples as f64);
    let n = (calls as usize).clamp(budget.min_samples, budget.max_samples);
    let k = ((calls / n as f64).floor() as usize).max(1);
    (n, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_respect_the_bounds() {
        let b = Budget::FULL;
        // A 1 µs routine: many calls per sample, the most samples.
        let (n, k) = plan(&b, 1e-6, 0.0);
        assert_eq!(n, b.max_samples);
        assert!(k > 1000, "{k}");
        // A 2 s routine: the fewest samples, one call each.
        assert_eq!(plan(&b, 2.0, 0.0), (b.min_samples, 1));
        // An expensive setup caps the calls by wall time.
        let (n, k) = plan(&b, 1e-5, 1e-3);
        assert!((n * k) as f64 * 1.01e-3 <= b.wall_cap.as_secs_f64() + 1e-3);
        // A call cap wins over the target, but not over the fewest samples.
        let capped = Budget { max_calls: 64, ..b };
        let (n, k) = plan(&capped, 1e-6, 0.0);
        assert!(n * k <= 64 && n >= b.min_samples, "{n} {k}");
        let tiny = Budget { max_calls: 1, ..b };
        assert_eq!(plan(&tiny, 1e-6, 0.0), (b.min_samples, 1));
    }

    #[test]
    fn a_sleep_is_measured_within_its_interval() {
        let budget = Budget {
            warm_up: Duration::ZERO,
            target: Duration::from_millis(30),
            wall_cap: Duration::from_millis(100),
            min_samples: 3,
            max_samples: 5,
            max_calls: usize::MAX,
        };
        let e = simple(&budget, || std::thread::sleep(Duration::from_millis(2)));
        assert!(e.mean_ns >= 2e6, "{e:?}");
        assert!(e.low_ns <= e.mean_ns && e.mean_ns <= e.high_ns);
        assert!(e.samples >= 3);
    }

    #[test]
    fn paired_measures_both() {
        let budget = Budget {
            warm_up: Duration::ZERO,
            target: Duration::from_millis(20),
            wall_cap: Duration::from_millis(100),
            min_samples: 4,
            max_samples: 8,
            max_calls: usize::MAX,
        };
        let (a, b) = paired(
            &budget,
            || std::thread::sleep(Duration::from_millis(1)),
            || std::thread::sleep(Duration::from_millis(3)),
        );
        assert!(a.mean_ns >= 1e6 && b.mean_ns >= 3e6, "{a:?} {b:?}");
        assert!(b.mean_ns > a.mean_ns);
        assert!(a.samples >= PAIRED_ROUNDS * 2);
    }

    #[test]
    fn setup_is_not_timed() {
        let budget = Budget::SMOKE;
        let e = batched(
            &budget,
            || std::thread::sleep(Duration::from_millis(3)),
            |()| 1u8,
        );
        assert!(e.mean_ns < 1e6, "{e:?}");
    }

    #[test]
    fn sums_and_batches() {
        let e = Estimate {
            mean_ns: 100.0,
            low_ns: 97.0,
            high_ns: 103.0,
            samples: 10,
            calls_per_sample: 1,
        };
        let s = Estimate::sum(&[e, e]);
        assert_eq!(s.mean_ns, 200.0);
        assert!((s.high_ns - 200.0 - 18f64.sqrt()).abs() < 1e-9);
        assert_eq!(e.per_item(4).mean_ns, 25.0);
        assert!((e.relative_half_width() - 0.03).abs() < 1e-12);
    }
}
