//! The journal scenario (`--journal`): a writer and a standby of one group on one bucket of
//! the tests' SeaweedFS (`scripts/s3.sh`, started through `dgsp_tilestore::test_server`),
//! each registry reaching it through its own [`FaultProxy`], both behind one [`Front`]
//! that the clients and the gateways use. The first registry starts on the group's data
//! directory and becomes its writer; the second starts on an empty one and stands by.
//!
//! The faults, at seeded random points (every kind once, in a seeded order, then at
//! random): the writer's proxy (one time in five the standby's) delays, hangs, drops or
//! answers 503 for a while; the writer is frozen (SIGSTOP) past its lease and thawed
//! (SIGCONT); the writer or the standby is SIGKILLed, or the writer SIGTERMed, and started
//! again as a standby (on a new, empty data directory half of the time); a gateway is
//! restarted now and then, as in the scenario without a journal. A registry that
//! exits on its own (a writer halts and exits when it loses its lease) is started again by
//! the suite's supervisor, as systemd would, and the line it exited with is kept: an exit
//! for any other reason than a halt is a finding. There are no clock faults: the
//! registries run on the real clock, so that the times they sign compare with the times
//! the suite acknowledged writes at (`crate::fencing`).

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dgsp_tilestore::test_server::{self, S3Env};
use dgsp_tilestore::TileStore;

use crate::faults;
use crate::fencing::Fencing;
use crate::group::Group;
use crate::processes::{self, Binaries, Bucket, Settings, Stop};
use crate::proxy::{Fault, FaultProxy, Front};
use crate::rng::Rng;
use crate::stack::{self, Stack};

/// The registries' names, by slot.
pub const NAMES: [&str; 2] = ["registry-a", "registry-b"];
/// The lease object (the registry's `journal::lease::LEASE_KEY`).
const LEASE_KEY: &str = "private/lease";
/// How long the group's first writer may take to become ready (it uploads the log `init`
/// wrote).
const FIRST_START: Duration = Duration::from_secs(60);
/// How often the supervisor looks for registries that exited.
const SUPERVISE_EVERY: Duration = Duration::from_millis(250);

/// What the journal faults did, and how the registries exited.
#[derive(Default)]
pub struct JournalLog {
    /// Proxy faults, by registry and kind.
    pub proxy_faults: BTreeMap<(String, &'static str), u64>,
    /// Writers frozen past their lease and thawed.
    pub freezes: u64,
    /// SIGKILLs of the writer.
    pub writer_kills: u64,
    /// SIGKILLs of the standby.
    pub standby_kills: u64,
    /// SIGTERMs of the writer.
    pub writer_terms: u64,
    /// Faults aimed at the writer when the lease named no running registry (the one ready
    /// behind the front was taken, else the first).
    pub writer_unknown: u64,
    /// Starts on a new, empty data directory.
    pub fresh_dirs: u64,
    /// Registries that exited on their own: (name, start, the line they exited with).
    pub exits: Vec<(String, u32, String)>,
    /// Starts that failed to spawn.
    pub spawn_failures: Vec<String>,
}

/// One line: what the journal faults did.
impl fmt::Display for JournalLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "journal faults: proxies {:?}, {} writers frozen past the lease, writer SIGKILLed {} / SIGTERMed {}, standby SIGKILLed {}, writer unknown {}, {} starts on an empty data directory, {} exits on their own",
            self.proxy_faults,
            self.freezes,
            self.writer_kills,
            self.writer_terms,
            self.standby_kills,
            self.writer_unknown,
            self.fresh_dirs,
            self.exits.len()
        )
    }
}

/// The journal scenario's bucket, proxies and front, and what they saw.
pub struct Rig {
    /// The tests' S3 server.
    s3: S3Env,
    /// The group's key prefix in the bucket.
    pub prefix: String,
    /// The bucket, read by the suite (the lease object).
    bucket: Arc<dyn TileStore>,
    /// Each registry's proxy to SeaweedFS, by slot.
    pub proxies: Vec<Arc<FaultProxy>>,
    /// The registries' one address.
    pub front: Arc<Front>,
    /// `--lease-ttl-ms`.
    pub ttl_ms: u64,
    /// Where new data directories go.
    state: PathBuf,
    /// Data directories made so far.
    dirs: AtomicU64,
    /// What the faults did.
    pub log: Mutex<JournalLog>,
    /// What the registries served (`crate::fencing`).
    pub fencing: Fencing,
}

/// The tests' S3 server (`dgsp_tilestore::test_server`: `DGSP_TEST_S3_ENDPOINT`, or one
/// started with `scripts/s3.sh`), or why there is none.
async fn s3_server() -> Result<S3Env, String> {
    let found =
        tokio::task::spawn_blocking(|| test_server::s3_env("the chaos suite's journal scenario"))
            .await;
    match found {
        Ok(Some(s3)) => Ok(s3),
        Ok(None) => Err(
            "the journal scenario needs SeaweedFS, and DGSP_SKIP_S3=1 is set: run it without"
                .into(),
        ),
        Err(e) => Err(format!(
            "no S3 server for the journal scenario (see above): {e}"
        )),
    }
}

fn addr_of(url: &str) -> Result<SocketAddr, String> {
    url.trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .map_err(|e| format!("{url}: {e}"))
}

/// Starts the journal scenario's stack: SeaweedFS, the proxies, the group's first writer
/// (until ready), the standby, the front and `gateways` gateways following it.
pub async fn launch(
    bins: &Binaries,
    group: &Group,
    state: &Path,
    settings: Settings,
    gateways: usize,
) -> Result<Stack, String> {
    let s3 = s3_server().await?;
    let cfg = s3.config("chaos");
    let prefix = cfg.prefix.clone();
    let bucket: Arc<dyn TileStore> =
        Arc::new(dgsp_tilestore::S3::open(cfg).map_err(|e| format!("the bucket: {e}"))?);
    let upstream = addr_of(s3.endpoint())?;
    let mut proxies = Vec::new();
    for _ in NAMES {
        proxies.push(FaultProxy::start(upstream).await?);
    }
    // The key outside every data directory, so that a standby on an empty one has it.
    let key_file = state.join("manager.key");
    std::fs::copy(group.data.join("manager.key"), &key_file)
        .map_err(|e| format!("{}: {e}", key_file.display()))?;
    let mut registries = Vec::new();
    for (slot, name) in NAMES.iter().enumerate() {
        let data = match slot {
            0 => group.data.clone(),
            _ => new_dir(state, name, 1)?,
        };
        let b = Bucket {
            endpoint: proxies[slot].url(),
            bucket: s3.bucket(),
            prefix: &prefix,
            credentials: s3.credentials(),
            key_file: &key_file,
        };
        registries.push(processes::journaled_registry(
            bins, group, state, &settings, name, &data, &b,
        )?);
    }
    let http = stack::client()?;
    registries[0].spawn("first start: the group's first writer")?;
    registries[0]
        .wait_for(&http, "/readyz", FIRST_START)
        .await?;
    registries[1].spawn("first start: a standby on an empty data directory")?;
    let ups = registries
        .iter()
        .map(|r| addr_of(&r.url))
        .collect::<Result<Vec<_>, _>>()?;
    let front = Front::start(ups, http.clone()).await?;
    let since = Instant::now();
    while !front.ready().iter().any(|r| *r) {
        if since.elapsed() > Duration::from_secs(10) {
            return Err("the front found no ready registry within 10 s".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let url = front.url();
    let gateways =
        stack::start_gateways(bins, group, state, &settings, &url, gateways, &http).await?;
    let rig = Arc::new(Rig {
        s3,
        prefix,
        bucket,
        proxies,
        front,
        ttl_ms: settings.lease_ttl_ms.unwrap_or(15_000),
        state: state.to_owned(),
        dirs: AtomicU64::new(1),
        log: Mutex::default(),
        fencing: Fencing::default(),
    });
    Ok(Stack::assemble(
        registries,
        url,
        Some(rig),
        gateways,
        http,
        None,
        settings,
        group,
    ))
}

/// Prints what a fault does, with the time (Unix ms, as the services log it and the
/// registries' polls record it).
fn say(what: &str) {
    println!("[{} ms] {what}", dgsp_wire::log::now_ms());
}

/// `state/NAME-N`, created empty.
fn new_dir(state: &Path, name: &str, n: u64) -> Result<PathBuf, String> {
    let dir = state.join(format!("{name}-{n}"));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// The faults the journal scenario injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Delay,
    Hang,
    Drop,
    Unavailable,
    Freeze,
    KillWriter,
    KillStandby,
    TermWriter,
    RestartGateway,
}

const KINDS: [Kind; 9] = [
    Kind::Delay,
    Kind::Hang,
    Kind::Drop,
    Kind::Unavailable,
    Kind::Freeze,
    Kind::KillWriter,
    Kind::KillStandby,
    Kind::TermWriter,
    Kind::RestartGateway,
];
/// The weights of the kinds drawn after each has come once.
const WEIGHTS: [u64; 9] = [3, 3, 2, 2, 3, 2, 1, 1, 1];

impl Rig {
    fn ttl(&self) -> Duration {
        Duration::from_millis(self.ttl_ms)
    }

    /// The longest one fault takes: a delay of 3 ttl held 1 ttl longer, or a hang of 4
    /// ttl and the drop after it.
    pub fn longest_fault(&self) -> Duration {
        self.ttl() * 9 / 2
    }

    /// The slot of the registry the lease names (running, not released), waiting up to two
    /// ttl for one (after a kill the lease names a dead process until a standby takes it);
    /// else the one ready behind the front, else the first (counted).
    async fn writer(&self, stack: &Stack) -> usize {
        let give_up = Instant::now() + self.ttl() * 2;
        loop {
            if let Some(slot) = self.lease_holder(stack).await {
                return slot;
            }
            if Instant::now() > give_up {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        self.log.lock().unwrap().writer_unknown += 1;
        self.front.ready().iter().position(|r| *r).unwrap_or(0)
    }

    /// The slot of the running registry the lease object names, unless it is released.
    async fn lease_holder(&self, stack: &Stack) -> Option<usize> {
        let read = tokio::time::timeout(Duration::from_secs(2), self.bucket.get(LEASE_KEY)).await;
        let Ok(Ok(Some(obj))) = read else { return None };
        let record: serde_json::Value = serde_json::from_slice(&obj.bytes).ok()?;
        if record["released"] == serde_json::Value::Bool(true) {
            return None;
        }
        let pid = u32::try_from(record["pid"].as_u64()?).ok()?;
        for (slot, r) in stack.registries.iter().enumerate() {
            let mut svc = r.lock().await;
            if svc.pid() == Some(pid) && svc.running() {
                return Some(slot);
            }
        }
        None
    }

    /// Starts the registry of `slot` again (stopped `how` first, unless it already
    /// exited), after `pause`, on a new empty data directory when `fresh`.
    async fn restart(
        &self,
        stack: &Stack,
        slot: usize,
        how: Option<Stop>,
        pause: Duration,
        fresh: bool,
        why: &str,
    ) {
        let mut svc = stack.registries[slot].lock().await;
        if let Some(how) = how {
            svc.stop(how).await;
        }
        tokio::time::sleep(pause).await;
        if fresh {
            let n = self.dirs.fetch_add(1, Ordering::Relaxed) + 1;
            match new_dir(&self.state, NAMES[slot], n) {
                Ok(dir) => {
                    svc.set_arg("--data", dir.into());
                    self.log.lock().unwrap().fresh_dirs += 1;
                }
                Err(e) => self.log.lock().unwrap().spawn_failures.push(e),
            }
        }
        let data = match svc.arg("--data") {
            Some(d) if fresh => format!("{why}, on the new empty data directory {}", d.display()),
            Some(d) => format!("{why}, on its data directory {}", d.display()),
            None => why.to_owned(),
        };
        if let Err(e) = svc.spawn(&data) {
            self.log.lock().unwrap().spawn_failures.push(e);
        }
    }

    /// Puts `fault` on the proxy of `slot` for `hold`, then lets traffic pass.
    async fn proxy_fault(&self, slot: usize, fault: Fault, hold: Duration) {
        say(&format!(
            "{fault:?} on {}'s proxy for {:.1} s",
            NAMES[slot],
            hold.as_secs_f64()
        ));
        *self
            .log
            .lock()
            .unwrap()
            .proxy_faults
            .entry((NAMES[slot].to_owned(), fault.kind()))
            .or_default() += 1;
        self.proxies[slot].set(fault);
        tokio::time::sleep(hold).await;
        self.proxies[slot].set(Fault::Pass);
    }

    /// One fault of `kind`.
    async fn inject_one(&self, stack: &Stack, kind: Kind, rng: &mut Rng) {
        let ttl = self.ttl_ms;
        let ms = |rng: &mut Rng, lo: f64, hi: f64| {
            Duration::from_millis(rng.range((ttl as f64 * lo) as u64, (ttl as f64 * hi) as u64))
        };
        let writer = self.writer(stack).await;
        let standby = 1 - writer;
        let target = if rng.chance(0.8) { writer } else { standby };
        match kind {
            Kind::RestartGateway => faults::restart_gateway(stack, rng).await,
            Kind::Delay => {
                // Longer than the standby's wait, so that what the writer sends arrives
                // after a takeover; held a while past it.
                let delay = ms(rng, 1.5, 3.0);
                let hold = delay + ms(rng, 0.5, 1.0);
                self.proxy_fault(target, Fault::Delay(delay), hold).await;
            }
            Kind::Hang => {
                // Past the standby's wait and its first writes, most of the time.
                let hold = ms(rng, 2.0, 4.0);
                self.proxy_fault(target, Fault::Hang, hold).await;
                if rng.chance(0.5) {
                    let hold = ms(rng, 0.0, 0.2);
                    self.proxy_fault(target, Fault::Drop, hold).await;
                }
            }
            Kind::Drop => {
                let hold = ms(rng, 0.2, 1.5);
                self.proxy_fault(target, Fault::Drop, hold).await;
            }
            Kind::Unavailable => {
                let hold = ms(rng, 0.3, 2.0);
                self.proxy_fault(target, Fault::Unavailable, hold).await;
            }
            Kind::Freeze => {
                let hold = ms(rng, 2.0, 3.5);
                let start = {
                    let svc = stack.registries[writer].lock().await;
                    svc.signal(libc::SIGSTOP);
                    svc.starts
                };
                self.log.lock().unwrap().freezes += 1;
                say(&format!(
                    "{} (the writer) frozen for {:.1} s",
                    NAMES[writer],
                    hold.as_secs_f64()
                ));
                tokio::time::sleep(hold).await;
                let svc = stack.registries[writer].lock().await;
                if svc.starts == start {
                    svc.signal(libc::SIGCONT);
                    self.fencing.thawed(writer, start);
                }
            }
            Kind::KillWriter | Kind::KillStandby | Kind::TermWriter => {
                let (slot, how) = match kind {
                    Kind::KillWriter => (writer, Stop::Kill),
                    Kind::KillStandby => (standby, Stop::Kill),
                    _ => (writer, Stop::Term),
                };
                {
                    let mut l = self.log.lock().unwrap();
                    match kind {
                        Kind::KillWriter => l.writer_kills += 1,
                        Kind::KillStandby => l.standby_kills += 1,
                        _ => l.writer_terms += 1,
                    }
                }
                let pause = ms(rng, 0.0, 0.3);
                let fresh = rng.chance(0.5);
                say(&format!("{} {how:?}, started again", NAMES[slot]));
                let why = format!("restart after {how:?}: a standby");
                self.restart(stack, slot, Some(how), pause, fresh, &why)
                    .await;
            }
        }
    }

    /// Injects faults until `deadline`: every kind once, in a seeded order, then drawn by
    /// weight; 1-3 s apart, each over before the deadline.
    pub async fn inject(&self, stack: &Stack, mut rng: Rng, deadline: Instant) {
        let mut first = KINDS.to_vec();
        for i in (1..first.len()).rev() {
            first.swap(i, rng.below(i as u64 + 1) as usize);
        }
        loop {
            let pause = Duration::from_millis(rng.range(1000, 3000));
            if Instant::now() + pause + self.longest_fault() >= deadline {
                break;
            }
            tokio::time::sleep(pause).await;
            stack.check_running().await;
            let kind = first.pop().unwrap_or_else(|| KINDS[rng.weighted(&WEIGHTS)]);
            self.inject_one(stack, kind, &mut rng).await;
        }
    }

    /// Starts every registry found exited (not stopped by the suite) again as a standby,
    /// on a new empty data directory half of the time, until `stop`; records the line it
    /// exited with.
    pub async fn supervise(&self, stack: &Stack, mut rng: Rng, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            for slot in 0..stack.registries.len() {
                let exited = {
                    let mut svc = stack.registries[slot].lock().await;
                    (!svc.running()).then(|| (svc.name.clone(), svc.starts, svc.last_error()))
                };
                if let Some((name, start, line)) = exited {
                    say(&format!(
                        "{name} exited in its start {start}; started again"
                    ));
                    self.log.lock().unwrap().exits.push((name, start, line));
                    let fresh = rng.chance(0.5);
                    let why = "exited on its own: started again as a standby";
                    self.restart(stack, slot, None, Duration::ZERO, fresh, why)
                        .await;
                }
            }
            tokio::time::sleep(SUPERVISE_EVERY).await;
        }
    }

    /// After the chaos: the faults lifted (every proxy passes, no registry frozen), then a
    /// registry ready behind the front (up to a minute: a takeover may be under way).
    pub async fn settle(&self, stack: &Stack) {
        for p in &self.proxies {
            p.set(Fault::Pass);
        }
        for r in &stack.registries {
            r.lock().await.signal(libc::SIGCONT);
        }
        let since = Instant::now();
        while !self.front.ready().iter().any(|r| *r) && since.elapsed() < Duration::from_secs(60) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Where the journal is, for the summary.
    pub fn describe(&self) -> String {
        format!(
            "S3 {} bucket {} prefix {}, lease ttl {} ms, proxies {}",
            self.s3.endpoint(),
            self.s3.bucket(),
            self.prefix,
            self.ttl_ms,
            self.proxies
                .iter()
                .zip(NAMES)
                .map(|(p, n)| format!("{n} {}", p.url()))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    /// What the proxies and the front did, for the summary.
    pub fn traffic(&self) -> String {
        let proxies: Vec<String> = self
            .proxies
            .iter()
            .zip(NAMES)
            .map(|(p, n)| {
                format!(
                    "{n}: {} connections, {} dropped, {} answered 503",
                    p.stats.connections.load(Ordering::Relaxed),
                    p.stats.dropped.load(Ordering::Relaxed),
                    p.stats.answered_503.load(Ordering::Relaxed)
                )
            })
            .collect();
        let (routed, none) = self.front.routed();
        let routed: Vec<String> = routed
            .iter()
            .zip(NAMES)
            .map(|(r, n)| format!("{n} {r}"))
            .collect();
        format!(
            "proxies: {}; front: connections to {}, {none} to none",
            proxies.join("; "),
            routed.join(", "),
        )
    }
}
