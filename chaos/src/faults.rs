//! The faults, at seeded random points until the deadline: the registry SIGKILLed (or
//! SIGTERMed) and restarted, a gateway restarted, the registry's clock jumped a little
//! (within the tolerance, either way), and clock episodes (`episode`): one at a random
//! point of every run, more at random when time is left.
//!
//! Every start is checked (ready within 30 s), and a service found exited that the suite
//! did not stop is a failure.

use std::fmt;
use std::time::{Duration, Instant};

use crate::episode;
use crate::processes::Stop;
use crate::report::Row;
use crate::rng::Rng;
use crate::stack::Stack;

/// What the faults did and what went wrong with them.
#[derive(Default)]
pub struct FaultLog {
    /// Registry stops (SIGKILL, SIGTERM) and restarts.
    pub registry_kills: u64,
    /// Registry SIGTERMs.
    pub registry_terms: u64,
    /// Gateway SIGKILLs.
    pub gateway_kills: u64,
    /// Gateway SIGTERMs.
    pub gateway_terms: u64,
    /// Small clock jumps.
    pub small_jumps: u64,
    /// Starts checked (each must become ready / listening).
    pub starts_checked: u64,
    /// Starts that failed, and services found exited on their own.
    pub start_failures: Vec<String>,
    /// Clock episodes: checks made.
    pub episode_checks: u64,
    /// Clock episodes: checks failed.
    pub episode_failures: Vec<String>,
    /// Clock episodes run.
    pub episodes: u64,
    /// Offsets (ms) the registry's clock took, in order.
    pub offsets: Vec<i64>,
}

impl FaultLog {
    /// The rows of the invariants the faults check (`episodes`: whether the run had clock
    /// episodes, as the scenario without a journal has).
    pub fn rows(&self, episodes: bool) -> Vec<Row> {
        let mut rows = Vec::new();
        if episodes {
            rows.push(Row::new(
                "clock episodes: gateways stale, registry halts",
                self.episode_checks,
                self.episode_failures.clone(),
            ));
        }
        rows.push(Row::new(
            "every (re)start becomes ready; none exits",
            self.starts_checked,
            self.start_failures.clone(),
        ));
        rows
    }
}

/// One line: what the faults did.
impl fmt::Display for FaultLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "faults: registry stopped {} times ({} SIGTERM, the rest SIGKILL), gateways {} SIGKILL / {} SIGTERM, {} small clock jumps, {} clock episodes; offsets {:?} ms",
            self.registry_kills,
            self.registry_terms,
            self.gateway_kills,
            self.gateway_terms,
            self.small_jumps,
            self.episodes,
            self.offsets
        )
    }
}

/// Injects faults into `stack` until `deadline`. The first clock episode comes at a random
/// point that leaves it time to finish (the run must be at least that long: see
/// [`episode::longest`]); later ones at random, at least 25 s apart.
pub async fn inject(stack: &Stack, mut rng: Rng, deadline: Instant) {
    let episode_len = episode::longest(&stack.settings);
    let latest_first = deadline
        .saturating_duration_since(Instant::now() + episode_len)
        .as_millis() as u64;
    let mut first_episode =
        Some(Instant::now() + Duration::from_millis(rng.range(0, latest_first)));
    let mut last_episode = Instant::now();
    loop {
        let pause = Duration::from_millis(rng.range(1000, 4000));
        if Instant::now() + pause >= deadline {
            break;
        }
        tokio::time::sleep(pause).await;
        stack.check_running().await;
        let episode_ok = Instant::now() + episode_len < deadline
            && last_episode.elapsed() > Duration::from_secs(25);
        let weights = [3, 3, 4, if episode_ok { 1 } else { 0 }];
        let pick = match first_episode {
            Some(t) if Instant::now() >= t => 3,
            _ => rng.weighted(&weights),
        };
        match pick {
            0 => restart_registry(stack, &mut rng).await,
            1 => restart_gateway(stack, &mut rng).await,
            2 => small_jump(stack, &mut rng),
            _ => {
                first_episode = None;
                episode::run(stack, &mut rng).await;
                last_episode = Instant::now();
            }
        }
    }
}

/// SIGKILL (or, one time in five, SIGTERM) and a restart 0-1 s later.
async fn restart_registry(stack: &Stack, rng: &mut Rng) {
    let how = if rng.chance(0.8) {
        Stop::Kill
    } else {
        Stop::Term
    };
    {
        let mut l = stack.faults.lock().unwrap();
        l.registry_kills += 1;
        l.registry_terms += u64::from(how == Stop::Term);
    }
    let pause = Duration::from_millis(rng.range(0, 1000));
    stack.restart_registry(how, pause).await;
}

/// A random gateway SIGKILLed or SIGTERMed, restarted 0-0.5 s later.
pub async fn restart_gateway(stack: &Stack, rng: &mut Rng) {
    let i = rng.below(stack.gateways.len() as u64) as usize;
    let how = if rng.chance(0.5) {
        Stop::Kill
    } else {
        Stop::Term
    };
    {
        let mut l = stack.faults.lock().unwrap();
        match how {
            Stop::Kill => l.gateway_kills += 1,
            Stop::Term => l.gateway_terms += 1,
        }
    }
    let pause = Duration::from_millis(rng.range(0, 500));
    stack.restart_gateway(i, how, pause).await;
}

/// The registry's clock moved within the tolerance either way: the registry keeps signing,
/// the gateways keep accepting.
fn small_jump(stack: &Stack, rng: &mut Rng) {
    let max = stack.settings.clock_tolerance_ms as i64 * 2 / 5;
    let offset = rng.range(0, 2 * max as u64) as i64 - max;
    stack.faults.lock().unwrap().small_jumps += 1;
    stack.set_clock(offset);
}
