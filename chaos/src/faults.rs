//! The faults, at seeded random points until the deadline: the registry SIGKILLed (or
//! SIGTERMed) and restarted, a gateway restarted, the registry's clock jumped a little
//! (within the tolerance, either way), and now and then a clock episode:
//!
//! 1. the registry's clock jumps forward by more than the tolerance and stays there longer
//!    than the gateways' staleness bound: every gateway must refuse the future-dated notes
//!    and so answer not ready (visibly stale);
//! 2. the clock returns to real time, now behind the registry's last signed time by more
//!    than the tolerance: the registry must halt (`/readyz` 503) and sign nothing more
//!    rather than crawl forward;
//! 3. once the real clock has passed the last signed time, the registry is restarted and
//!    must come back ready.
//!
//! Every start is checked (ready within 30 s), and a service found exited that the suite
//! did not stop is a failure.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dgsp_wire::log::now_ms;
use dgsp_wire::registry_api::CheckpointInfo;

use crate::clock::Clock;
use crate::http;
use crate::processes::{Service, Settings, Stop};
use crate::rng::Rng;

/// How long a start may take to become ready.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The running services.
#[derive(Clone)]
pub struct Stack {
    /// The registry.
    pub registry: Arc<tokio::sync::Mutex<Service>>,
    /// The gateways.
    pub gateways: Vec<Arc<tokio::sync::Mutex<Service>>>,
    /// A plain client for health and checkpoint reads.
    pub http: reqwest::Client,
    /// The registry's clock.
    pub clock: Arc<Clock>,
    /// The services' settings.
    pub settings: Settings,
    /// The tolerance for clocks, ms.
    pub tolerance_ms: u64,
    /// Set while the registry's clock is behind its last signed time by more than the
    /// tolerance (a halt is then expected).
    pub halt_expected: Arc<AtomicBool>,
    /// The suite's copy of the log, read up to date before each stop of the registry.
    pub log_copy: Arc<crate::invariants::LogCopy>,
    /// The admin token (the log with its private parts).
    pub admin_token: String,
}

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

impl Stack {
    /// Stops and restarts the registry; waits until it is ready.
    pub async fn restart_registry(&self, how: Stop, pause: Duration, log: &Mutex<FaultLog>) {
        self.sync_log().await;
        let mut reg = self.registry.lock().await;
        reg.stop(how).await;
        tokio::time::sleep(pause).await;
        self.start(&mut reg, "/readyz", "restart", log).await;
    }

    /// Starts `svc` and waits until `path` answers 200.
    pub async fn start(&self, svc: &mut Service, path: &str, why: &str, log: &Mutex<FaultLog>) {
        log.lock().unwrap().starts_checked += 1;
        let result = match svc.spawn(why) {
            Ok(()) => svc.wait_for(&self.http, path, START_TIMEOUT).await,
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            log.lock().unwrap().start_failures.push(e);
        }
    }

    /// Fails (into `log`) for each service that exited without being stopped; restarts it
    /// (the registry until ready, a gateway until listening).
    pub async fn check_running(&self, log: &Mutex<FaultLog>) {
        let services = std::iter::once((&self.registry, "/readyz"))
            .chain(self.gateways.iter().map(|g| (g, "/healthz")));
        for (svc, path) in services {
            let mut svc = svc.lock().await;
            if !svc.running() {
                let msg = format!(
                    "{} was found exited (not stopped by the suite); see {}",
                    svc.name,
                    svc.log().display()
                );
                log.lock().unwrap().start_failures.push(msg);
                self.start(&mut svc, path, "found exited", log).await;
            }
        }
    }

    /// Brings the suite's copy of the log up to date, if the registry answers within 5 s.
    pub async fn sync_log(&self) -> bool {
        let url = self.registry.lock().await.url.clone();
        let sync = self.log_copy.sync(&self.http, &url, &self.admin_token);
        matches!(
            tokio::time::timeout(Duration::from_secs(5), sync).await,
            Ok(Ok(()))
        )
    }

    /// The registry's newest signed checkpoint, if it answers.
    pub async fn registry_checkpoint(&self) -> Option<CheckpointInfo> {
        let url = format!("{}/v1/checkpoint", self.registry.lock().await.url);
        match http::json(&self.http, &url).await? {
            (200..=299, checkpoint) => Some(checkpoint),
            _ => None,
        }
    }

    /// The HTTP status of `url`'s `/readyz` (0 when unanswered).
    pub async fn readyz(&self, url: &str) -> u16 {
        http::status(&self.http, &format!("{url}/readyz")).await
    }

    fn set_clock(&self, ms: i64, log: &Mutex<FaultLog>) {
        if let Err(e) = self.clock.set_ms(ms) {
            log.lock().unwrap().episode_failures.push(e);
        }
        log.lock().unwrap().offsets.push(ms);
    }

    /// Waits until the real clock is past the registry's newest signed time (as far as
    /// the registry answers), watching it meanwhile; returns the newest time seen.
    async fn wait_past_signed_time(&self, mut newest: u64, margin_ms: u64) -> u64 {
        let give_up = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(c) = self.registry_checkpoint().await {
                newest = newest.max(c.time_unix_ms);
            }
            if now_ms() > newest + margin_ms || Instant::now() > give_up {
                return newest;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Brings the registry's clock back to real time and the registry to a state that
    /// serves: past its last signed time, ready (restarted if it halted).
    pub async fn settle(&self, log: &Mutex<FaultLog>) {
        self.set_clock(0, log);
        self.wait_past_signed_time(0, 200).await;
        let url = self.registry.lock().await.url.clone();
        if self.readyz(&url).await != 200 {
            self.restart_registry(Stop::Term, Duration::ZERO, log).await;
        }
        self.check_running(log).await;
    }

    async fn episode(&self, rng: &mut Rng, log: &Mutex<FaultLog>) {
        log.lock().unwrap().episodes += 1;
        let s = &self.settings;
        let jump = self.tolerance_ms + rng.range(3000, 7000);
        let hold = s.max_staleness_secs * 1000 + s.poll_ms + rng.range(2000, 4000);
        let mut checks = Vec::new();
        let mut fail = Vec::new();
        // From a registry that serves (one halted by something else is restarted first; the
        // monitor has recorded that halt).
        let url = self.registry.lock().await.url.clone();
        if self.readyz(&url).await != 200 {
            self.restart_registry(Stop::Term, Duration::ZERO, log).await;
        }
        self.set_clock(jump as i64, log);
        tokio::time::sleep(Duration::from_millis(hold)).await;
        // 0. The jump took effect: the registry serves, and signs notes from the future.
        let code = self.readyz(&url).await;
        let lead = self
            .registry_checkpoint()
            .await
            .map(|c| c.time_unix_ms as i64 - now_ms() as i64);
        checks.push(());
        if code != 200 || lead.is_none_or(|l| l <= self.tolerance_ms as i64) {
            fail.push(format!(
                "registry: /readyz {code}, newest note {:?} ms ahead of real time, {:.1} s after its \
                 clock jumped {:+.1} s (expected ready, signing ahead; the rest of the episode \
                 proves nothing and is not checked)",
                lead,
                hold as f64 / 1e3,
                jump as f64 / 1e3
            ));
            // Back to a serving registry, checking nothing more.
            let newest = lead.map_or(0, |l| (now_ms() as i64 + l).max(0) as u64);
            self.halt_expected.store(true, Ordering::SeqCst);
            self.set_clock(0, log);
            self.wait_past_signed_time(newest, 500).await;
            self.restart_registry(Stop::Term, Duration::ZERO, log).await;
            self.halt_expected.store(false, Ordering::SeqCst);
            let mut l = log.lock().unwrap();
            l.episode_checks += checks.len() as u64;
            l.episode_failures.extend(fail);
            return;
        }
        // 1. Every gateway visibly stale.
        for gw in &self.gateways {
            let (name, url) = {
                let g = gw.lock().await;
                (g.name.clone(), g.url.clone())
            };
            let code = self.readyz(&url).await;
            checks.push(());
            if code != 503 {
                fail.push(format!(
                    "{name}: /readyz {code} {:.1} s after the registry's clock jumped {:+.1} s \
                     (expected 503: notes signed beyond the {:.0} s tolerance must be refused, \
                     so the gateway goes stale)",
                    hold as f64 / 1e3,
                    jump as f64 / 1e3,
                    self.tolerance_ms as f64 / 1e3
                ));
            }
        }
        // 2. Back to real time: the registry halts instead of crawling.
        let newest = self
            .registry_checkpoint()
            .await
            .map_or(0, |c| c.time_unix_ms);
        self.halt_expected.store(true, Ordering::SeqCst);
        self.set_clock(0, log);
        // It notices when it next signs: within a cadence, or at the next write.
        tokio::time::sleep(Duration::from_millis(2 * s.cadence_secs * 1000 + 1000)).await;
        let url = self.registry.lock().await.url.clone();
        let code = self.readyz(&url).await;
        checks.push(());
        if code != 503 {
            fail.push(format!(
                "registry: /readyz {code} with its clock {:.1} s behind its last signed time \
                 (expected 503: halted until restarted)",
                jump as f64 / 1e3
            ));
        }
        let halted_note = self.registry_checkpoint().await.map(|c| c.time_unix_ms);
        let newest = self.wait_past_signed_time(newest, 500).await;
        let later_note = self.registry_checkpoint().await.map(|c| c.time_unix_ms);
        checks.push(());
        if halted_note != later_note {
            fail.push(format!(
                "registry: signed new checkpoints (time {halted_note:?} then {later_note:?}) while \
                 its clock was behind its last signed time by more than the tolerance"
            ));
        }
        // 3. Restarted once its clock is past the last signed time: ready again.
        let before = log.lock().unwrap().start_failures.len();
        let how = if rng.chance(0.5) {
            Stop::Kill
        } else {
            Stop::Term
        };
        self.restart_registry(how, Duration::ZERO, log).await;
        self.halt_expected.store(false, Ordering::SeqCst);
        checks.push(());
        if log.lock().unwrap().start_failures.len() > before {
            fail.push(format!(
                "registry: did not come back ready after a restart with its clock past its \
                 last signed time ({newest})"
            ));
        }
        let mut l = log.lock().unwrap();
        l.episode_checks += checks.len() as u64;
        l.episode_failures.extend(fail);
    }

    /// The longest a clock episode takes: the jump held past the staleness bound, the
    /// wait for the real clock to pass the last signed time, a restart.
    pub fn episode_len(&self) -> Duration {
        let s = &self.settings;
        Duration::from_millis(
            s.max_staleness_secs * 1000
                + s.poll_ms
                + 4000
                + 2 * s.cadence_secs * 1000
                + 1000
                + self.tolerance_ms
                + 7000
                + 15_000,
        )
    }

    /// Injects faults until `deadline`. The first clock episode comes at a random point
    /// that leaves it time to finish (the run must be at least that long: see
    /// [`episode_len`](Self::episode_len)); later ones at random, at least 25 s apart.
    pub async fn run(&self, mut rng: Rng, deadline: Instant, log: Arc<Mutex<FaultLog>>) {
        let episode_len = self.episode_len();
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
            self.check_running(&log).await;
            let episode_ok = Instant::now() + episode_len < deadline
                && last_episode.elapsed() > Duration::from_secs(25);
            let weights = [3, 3, 4, if episode_ok { 1 } else { 0 }];
            let pick = match first_episode {
                Some(t) if Instant::now() >= t => {
                    first_episode = None;
                    3
                }
                _ => rng.weighted(&weights),
            };
            match pick {
                0 => {
                    let how = if rng.chance(0.8) {
                        Stop::Kill
                    } else {
                        Stop::Term
                    };
                    {
                        let mut l = log.lock().unwrap();
                        l.registry_kills += 1;
                        l.registry_terms += u64::from(how == Stop::Term);
                    }
                    let pause = Duration::from_millis(rng.range(0, 1000));
                    self.restart_registry(how, pause, &log).await;
                }
                1 => {
                    let i = rng.below(self.gateways.len() as u64) as usize;
                    let how = if rng.chance(0.5) {
                        Stop::Kill
                    } else {
                        Stop::Term
                    };
                    {
                        let mut l = log.lock().unwrap();
                        match how {
                            Stop::Kill => l.gateway_kills += 1,
                            Stop::Term => l.gateway_terms += 1,
                        }
                    }
                    let mut g = self.gateways[i].lock().await;
                    g.stop(how).await;
                    tokio::time::sleep(Duration::from_millis(rng.range(0, 500))).await;
                    self.start(&mut g, "/healthz", "restart", &log).await;
                }
                2 => {
                    // Within the tolerance either way: the registry keeps signing, the
                    // gateways keep accepting.
                    let max = self.tolerance_ms as i64 * 2 / 5;
                    let offset = rng.range(0, 2 * max as u64) as i64 - max;
                    log.lock().unwrap().small_jumps += 1;
                    self.set_clock(offset, &log);
                }
                _ => {
                    first_episode = None;
                    self.episode(&mut rng, &log).await;
                    last_episode = Instant::now();
                }
            }
        }
    }
}
