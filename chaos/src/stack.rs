//! The running services and what the suite records about them: the registry (on the faked
//! clock; or, in the journal scenario, a writer and its standby behind one front,
//! `crate::journal`) and the gateways, each stopped and started under its lock with every
//! start checked; the suite's copy of the log, read up to date before each stop of the
//! registry; what the faults did and what the monitor saw.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dgsp_wire::log::now_ms;
use dgsp_wire::registry_api::CheckpointInfo;

use crate::clock::Clock;
use crate::faults::FaultLog;
use crate::group::Group;
use crate::http;
use crate::journal::Rig;
use crate::log_copy::LogCopy;
use crate::monitor::{self, Observations};
use crate::processes::{self, Binaries, Service, Settings, Stop};
use crate::roots::ServedNotes;

/// How long a start may take to become ready.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A service, locked by whoever stops, starts or samples it.
pub type Shared = Arc<tokio::sync::Mutex<Service>>;

/// The running services, and what the tasks record about them.
#[derive(Clone)]
pub struct Stack {
    /// The registries: one, or the journal scenario's pair (the first one the group's
    /// first writer).
    pub registries: Vec<Shared>,
    /// Where the clients, the gateways and the checks reach the registry: its own address,
    /// or the journal scenario's front (the same across restarts).
    url: String,
    /// The journal scenario: the bucket, the proxies, the front, what they saw.
    pub journal: Option<Arc<Rig>>,
    /// The gateways.
    pub gateways: Vec<Shared>,
    /// A plain client for the suite's reads.
    pub http: reqwest::Client,
    /// The registry's clock (none in the journal scenario: real time).
    clock: Option<Arc<Clock>>,
    /// The services' settings.
    pub settings: Settings,
    /// Set while the registry's clock is behind its last signed time by more than the
    /// tolerance (a halt is then expected).
    pub halt_expected: Arc<AtomicBool>,
    /// The suite's copy of the log.
    pub log_copy: Arc<LogCopy>,
    /// The admin token (the log with its private parts).
    pub admin_token: String,
    /// What the faults did, and the starts that failed.
    pub faults: Arc<Mutex<FaultLog>>,
    /// What the monitor saw.
    pub observations: Arc<Mutex<Observations>>,
    /// Every distinct checkpoint the registry served to the suite.
    pub served: Arc<ServedNotes>,
}

impl Stack {
    /// Starts `group`'s registry on `clock` and `gateways` gateways following it, each
    /// until ready.
    pub async fn launch(
        bins: &Binaries,
        group: &Group,
        state: &Path,
        settings: Settings,
        clock: Clock,
        gateways: usize,
    ) -> Result<Stack, String> {
        let http = client()?;
        let mut registry = processes::registry(bins, group, state, &settings, clock.env())?;
        registry.spawn("first start")?;
        registry.wait_for(&http, "/readyz", START_TIMEOUT).await?;
        let url = registry.url.clone();
        let gateways = start_gateways(bins, group, state, &settings, &url, gateways, &http).await?;
        Ok(Stack::assemble(
            vec![registry],
            url,
            None,
            gateways,
            http,
            Some(clock),
            settings,
            group,
        ))
    }

    /// The stack of `registries` reached at `url`, and `gateways` following it.
    #[allow(clippy::too_many_arguments)]
    pub fn assemble(
        registries: Vec<Service>,
        url: String,
        journal: Option<Arc<Rig>>,
        gateways: Vec<Shared>,
        http: reqwest::Client,
        clock: Option<Clock>,
        settings: Settings,
        group: &Group,
    ) -> Stack {
        Stack {
            registries: registries
                .into_iter()
                .map(|r| Arc::new(tokio::sync::Mutex::new(r)))
                .collect(),
            url,
            journal,
            gateways,
            http,
            clock: clock.map(Arc::new),
            settings,
            halt_expected: Arc::default(),
            log_copy: Arc::default(),
            admin_token: group.admin_token.clone(),
            faults: Arc::default(),
            observations: Arc::default(),
            served: Arc::default(),
        }
    }

    /// The registry's base URL (the same across restarts): its own, or the front's.
    pub async fn registry_url(&self) -> String {
        self.url.clone()
    }

    /// The one registry of the scenario without a journal.
    pub fn registry(&self) -> &Shared {
        &self.registries[0]
    }

    /// Stops and restarts the registry after `pause` (its log read up to date first);
    /// waits until it is ready.
    pub async fn restart_registry(&self, how: Stop, pause: Duration) {
        self.sync_log().await;
        let mut reg = self.registry().lock().await;
        reg.stop(how).await;
        tokio::time::sleep(pause).await;
        self.start(&mut reg, "/readyz", "restart").await;
    }

    /// Stops gateway `i` (its fault counters read first) and starts it again after `pause`;
    /// waits until it listens.
    pub async fn restart_gateway(&self, i: usize, how: Stop, pause: Duration) {
        let mut g = self.gateways[i].lock().await;
        monitor::read_counters(self, &g).await;
        g.stop(how).await;
        tokio::time::sleep(pause).await;
        self.start(&mut g, "/healthz", "restart").await;
    }

    /// Starts `svc` and waits until `path` answers 200; a start that fails is recorded.
    pub async fn start(&self, svc: &mut Service, path: &str, why: &str) {
        self.faults.lock().unwrap().starts_checked += 1;
        let result = match svc.spawn(why) {
            Ok(()) => svc.wait_for(&self.http, path, START_TIMEOUT).await,
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            self.faults.lock().unwrap().start_failures.push(e);
        }
    }

    /// Records a failure for each service that exited without being stopped, and restarts
    /// it (the registry until ready, a gateway until listening). The journal scenario's
    /// registries exit when they halt: its supervisor restarts them (`crate::journal`).
    pub async fn check_running(&self) {
        let registries: &[Shared] = match self.journal {
            None => &self.registries,
            Some(_) => &[],
        };
        let services = registries
            .iter()
            .map(|r| (r, "/readyz"))
            .chain(self.gateways.iter().map(|g| (g, "/healthz")));
        for (svc, path) in services {
            let mut svc = svc.lock().await;
            if !svc.running() {
                let msg = format!(
                    "{} was found exited (not stopped by the suite); see {}",
                    svc.name,
                    svc.log().display()
                );
                self.faults.lock().unwrap().start_failures.push(msg);
                self.start(&mut svc, path, "found exited").await;
            }
        }
    }

    /// Stops every service cleanly (SIGTERM), each gateway's fault counters read first.
    pub async fn stop_all(&self) {
        for g in &self.gateways {
            let mut g = g.lock().await;
            monitor::read_counters(self, &g).await;
            g.stop(Stop::Term).await;
        }
        for r in &self.registries {
            r.lock().await.stop(Stop::Term).await;
        }
    }

    /// Brings the suite's copy of the log up to date, if the registry answers within 5 s.
    async fn sync_log(&self) {
        let url = self.registry_url().await;
        let sync = self.log_copy.sync(&self.http, &url, &self.admin_token);
        let _ = tokio::time::timeout(Duration::from_secs(5), sync).await;
    }

    /// Reads the log every 2 s until `stop` (so that the checks have it when the registry
    /// no longer starts).
    pub async fn follow_log(&self, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            self.sync_log().await;
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }

    /// The registry's newest signed checkpoint, if it answers (recorded in `served`, for
    /// the check of its root).
    pub async fn registry_checkpoint(&self) -> Option<CheckpointInfo> {
        let url = format!("{}/v1/checkpoint", self.registry_url().await);
        match http::json(&self.http, &url).await? {
            (200..=299, checkpoint) => {
                self.served.record(&checkpoint);
                Some(checkpoint)
            }
            _ => None,
        }
    }

    /// The status of the registry's `/readyz` (0 when unanswered).
    pub async fn registry_readyz(&self) -> u16 {
        http::status(&self.http, &format!("{}/readyz", self.registry_url().await)).await
    }

    /// Moves the registry's clock to `ms` from real time (recorded); nothing in the
    /// journal scenario (real time).
    pub fn set_clock(&self, ms: i64) {
        let Some(clock) = &self.clock else { return };
        let mut log = self.faults.lock().unwrap();
        if let Err(e) = clock.set_ms(ms) {
            log.episode_failures.push(e);
        }
        log.offsets.push(ms);
    }

    /// Waits until the real clock is `margin_ms` past the registry's newest signed time (as
    /// far as the registry answers, and `newest` at least), watching it meanwhile; returns
    /// the newest time seen. Gives up after 2 minutes.
    pub async fn wait_past_signed_time(&self, mut newest: u64, margin_ms: u64) -> u64 {
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

    /// Restarts the registry (SIGTERM) unless it answers ready.
    pub async fn ensure_registry_ready(&self) {
        if self.registry_readyz().await != 200 {
            self.restart_registry(Stop::Term, Duration::ZERO).await;
        }
    }

    /// Brings the registry's clock back to real time and the registry to a state that
    /// serves: past its last signed time, ready (restarted if it halted). In the journal
    /// scenario: the faults lifted and a writer ready behind the front.
    pub async fn settle(&self) {
        if let Some(rig) = &self.journal {
            rig.settle(self).await;
            self.check_running().await;
            return;
        }
        self.set_clock(0);
        self.wait_past_signed_time(0, 200).await;
        self.ensure_registry_ready().await;
        self.check_running().await;
    }
}

/// The suite's HTTP client.
pub fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .pool_max_idle_per_host(16)
        .build()
        .map_err(|e| e.to_string())
}

/// Starts `n` gateways following `url`, each until ready.
pub async fn start_gateways(
    bins: &Binaries,
    group: &Group,
    state: &Path,
    settings: &Settings,
    url: &str,
    n: usize,
    http: &reqwest::Client,
) -> Result<Vec<Shared>, String> {
    let mut started = Vec::new();
    for i in 1..=n {
        let mut gw = processes::gateway(bins, group, state, settings, url, i)?;
        gw.spawn("first start")?;
        gw.wait_for(http, "/readyz", START_TIMEOUT).await?;
        started.push(Arc::new(tokio::sync::Mutex::new(gw)));
    }
    Ok(started)
}
