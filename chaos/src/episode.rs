//! Clock episodes: the registry's clock pushed past the tolerance and brought back.
//!
//! 1. the registry's clock jumps forward by more than the tolerance and stays there longer
//!    than the gateways' staleness bound: every gateway must refuse the future-dated notes
//!    and so answer not ready (visibly stale);
//! 2. the clock returns to real time, now behind the registry's last signed time by more
//!    than the tolerance: the registry must halt (`/readyz` 503) and sign nothing more
//!    rather than crawl forward;
//! 3. once the real clock has passed the last signed time, the registry is restarted and
//!    must come back ready.

use std::sync::atomic::Ordering;
use std::time::Duration;

use dgsp_wire::log::now_ms;

use crate::processes::{Settings, Stop};
use crate::rng::Rng;
use crate::stack::Stack;

/// The longest a clock episode takes with `s`: the jump held past the staleness bound, the
/// wait for the real clock to pass the last signed time, a restart.
pub fn longest(s: &Settings) -> Duration {
    Duration::from_millis(
        s.max_staleness_secs * 1000
            + s.poll_ms
            + 4000
            + 2 * s.cadence_secs * 1000
            + 1000
            + s.clock_tolerance_ms
            + 7000
            + 15_000,
    )
}

/// The checks of one episode.
#[derive(Default)]
struct Tally {
    checks: u64,
    failures: Vec<String>,
}

impl Tally {
    /// One check: `held`, or the failure in words.
    fn check(&mut self, held: bool, failure: impl FnOnce() -> String) {
        self.checks += 1;
        if !held {
            self.failures.push(failure());
        }
    }
}

/// Runs one clock episode on `stack`, recording its checks in the fault log.
pub async fn run(stack: &Stack, rng: &mut Rng) {
    stack.faults.lock().unwrap().episodes += 1;
    let tally = checked(stack, rng).await;
    let mut l = stack.faults.lock().unwrap();
    l.episode_checks += tally.checks;
    l.episode_failures.extend(tally.failures);
}

async fn checked(stack: &Stack, rng: &mut Rng) -> Tally {
    let s = &stack.settings;
    let tolerance_ms = s.clock_tolerance_ms;
    let jump = tolerance_ms + rng.range(3000, 7000);
    let hold = s.max_staleness_secs * 1000 + s.poll_ms + rng.range(2000, 4000);
    let (jump_s, hold_s) = (jump as f64 / 1e3, hold as f64 / 1e3);
    let mut t = Tally::default();
    // From a registry that serves (one halted by something else is restarted first; the
    // monitor has recorded that halt).
    stack.ensure_registry_ready().await;
    stack.set_clock(jump as i64);
    tokio::time::sleep(Duration::from_millis(hold)).await;
    // 0. The jump took effect: the registry serves, and signs notes from the future.
    let code = stack.registry_readyz().await;
    let lead = stack
        .registry_checkpoint()
        .await
        .map(|c| c.time_unix_ms as i64 - now_ms() as i64);
    let took = code == 200 && lead.is_some_and(|l| l > tolerance_ms as i64);
    t.check(took, || {
        format!(
            "registry: /readyz {code}, newest note {lead:?} ms ahead of real time, {hold_s:.1} s \
             after its clock jumped {jump_s:+.1} s (expected ready, signing ahead; the rest of \
             the episode proves nothing and is not checked)"
        )
    });
    if !took {
        // Back to a serving registry, checking nothing more.
        let newest = lead.map_or(0, |l| (now_ms() as i64 + l).max(0) as u64);
        stack.halt_expected.store(true, Ordering::SeqCst);
        stack.set_clock(0);
        stack.wait_past_signed_time(newest, 500).await;
        stack.restart_registry(Stop::Term, Duration::ZERO).await;
        stack.halt_expected.store(false, Ordering::SeqCst);
        return t;
    }
    // 1. Every gateway visibly stale.
    for gw in &stack.gateways {
        let (name, url) = {
            let g = gw.lock().await;
            (g.name.clone(), g.url.clone())
        };
        let code = crate::http::status(&stack.http, &format!("{url}/readyz")).await;
        t.check(code == 503, || {
            format!(
                "{name}: /readyz {code} {hold_s:.1} s after the registry's clock jumped \
                 {jump_s:+.1} s (expected 503: notes signed beyond the {:.0} s tolerance must be \
                 refused, so the gateway goes stale)",
                tolerance_ms as f64 / 1e3
            )
        });
    }
    // 2. Back to real time: the registry halts instead of crawling.
    let newest = stack
        .registry_checkpoint()
        .await
        .map_or(0, |c| c.time_unix_ms);
    stack.halt_expected.store(true, Ordering::SeqCst);
    stack.set_clock(0);
    // It notices when it next signs: within a cadence, or at the next write.
    tokio::time::sleep(Duration::from_millis(2 * s.cadence_secs * 1000 + 1000)).await;
    let code = stack.registry_readyz().await;
    t.check(code == 503, || {
        format!(
            "registry: /readyz {code} with its clock {jump_s:.1} s behind its last signed time \
             (expected 503: halted until restarted)"
        )
    });
    let halted_note = stack.registry_checkpoint().await.map(|c| c.time_unix_ms);
    let newest = stack.wait_past_signed_time(newest, 500).await;
    let later_note = stack.registry_checkpoint().await.map(|c| c.time_unix_ms);
    t.check(halted_note == later_note, || {
        format!(
            "registry: signed new checkpoints (time {halted_note:?} then {later_note:?}) while \
             its clock was behind its last signed time by more than the tolerance"
        )
    });
    // 3. Restarted once its clock is past the last signed time: ready again.
    let before = stack.faults.lock().unwrap().start_failures.len();
    let how = if rng.chance(0.5) {
        Stop::Kill
    } else {
        Stop::Term
    };
    stack.restart_registry(how, Duration::ZERO).await;
    stack.halt_expected.store(false, Ordering::SeqCst);
    let back = stack.faults.lock().unwrap().start_failures.len() == before;
    t.check(back, || {
        format!(
            "registry: did not come back ready after a restart with its clock past its last \
             signed time ({newest})"
        )
    });
    t
}
