//! `dgsp-chaos`: the chaos suite (docs/chaos.md). Starts a fresh group's registry and
//! gateways from the built binaries on loopback, runs concurrent clients against the
//! registry while SIGKILLing and restarting it, restarting gateways and moving its clock,
//! then quiesces and checks the invariants, printing a table. Exits 1 when any invariant
//! fails, printing the seed and the command that runs the same schedule again.

mod clock;
mod faults;
mod http;
mod invariants;
mod monitor;
mod processes;
mod report;
mod rng;
mod workload;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use dgsp_core::ParamSet;

use dgsp_wire::log::now_ms;
use dgsp_wire::registry_api::GroupInfo;

use crate::clock::Clock;
use crate::faults::{FaultLog, Stack};
use crate::monitor::{Bounds, Observations};
use crate::processes::{Binaries, Group, Settings, Stop};
use crate::report::Row;
use crate::rng::Rng;
use crate::workload::{Api, Workload};

/// The chaos suite: the real registry and gateways under concurrent clients with
/// disconnects and retries, SIGKILLs, restarts and clock jumps; then the invariants.
#[derive(Debug, Parser)]
#[command(name = "dgsp-chaos", version, about)]
struct Args {
    /// Directory holding dgsp-registry, dgsp-gateway and dgsp-manager (default: this
    /// program's own directory, the cargo target's debug or release directory).
    #[arg(long, env = "DGSP_CHAOS_BIN_DIR")]
    bin_dir: Option<PathBuf>,
    /// Seed of every decision the run makes (default: random; always printed).
    #[arg(long, env = "DGSP_CHAOS_SEED")]
    seed: Option<u64>,
    /// Length of the chaos phase in seconds (setup, quiescing and the checks come on top).
    #[arg(long, env = "DGSP_CHAOS_SECONDS", default_value_t = 120,
          value_parser = clap::value_parser!(u64).range(10..=86_400))]
    duration_secs: u64,
    /// Parameter set of the group.
    #[arg(long, default_value = "sha2-128f")]
    params: ParamSet,
    /// Gateways following the registry.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=8))]
    gateways: u64,
    /// Members joined (with one certificate each) before the chaos starts.
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u64).range(2..=10_000))]
    members: u64,
    /// The registry's --checkpoint-interval-secs (the cadence).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=60))]
    checkpoint_interval_secs: u64,
    /// The gateways' --poll-ms.
    #[arg(long, default_value_t = 200)]
    poll_ms: u64,
    /// The gateways' --max-staleness-secs.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=600))]
    max_staleness_secs: u64,
    /// How far ahead a signed time may be, and behind the last one the registry's clock may
    /// fall, in seconds (the services' tolerance).
    #[arg(long, default_value_t = 5)]
    clock_tolerance_secs: u64,
    /// Allowance on top of one cadence plus one poll for a gateway to reach the registry's
    /// latest checkpoint after quiescing, in ms (the gateway verifies a SPHINCS+ note and
    /// the entries on a shared machine).
    #[arg(long, default_value_t = 2000)]
    catch_up_grace_ms: u64,
    /// The libfaketime library (default: Debian's path).
    #[arg(long, env = "DGSP_FAKETIME_LIB")]
    faketime_lib: Option<PathBuf>,
    /// Where the group, the replicas and the logs go (default: a new directory under the
    /// temporary directory; kept when the run fails).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Keep the state directory even when the run passes.
    #[arg(long)]
    keep_state: bool,
}

impl Args {
    /// The command line that runs this schedule again.
    fn reproduce(&self, seed: u64, bin_dir: &std::path::Path) -> String {
        let me = std::env::current_exe()
            .map_or_else(|_| "dgsp-chaos".into(), |p| p.display().to_string());
        format!(
            "{me} --bin-dir {} --seed {seed} --duration-secs {} --params {} \
             --gateways {} --members {} --checkpoint-interval-secs {} --poll-ms {} --max-staleness-secs {} \
             --clock-tolerance-secs {} --catch-up-grace-ms {}",
            bin_dir.display(),
            self.duration_secs,
            self.params,
            self.gateways,
            self.members,
            self.checkpoint_interval_secs,
            self.poll_ms,
            self.max_staleness_secs,
            self.clock_tolerance_secs,
            self.catch_up_grace_ms
        )
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let seed = args
        .seed
        .unwrap_or_else(|| rand_core::RngCore::next_u64(&mut rand_core::OsRng));
    println!("dgsp-chaos: seed {seed}");
    let bin_dir = match args.bin_dir.clone().or_else(|| {
        std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(PathBuf::from))
    }) {
        Some(d) => d,
        None => {
            eprintln!("dgsp-chaos: cannot tell where the binaries are; pass --bin-dir");
            return ExitCode::FAILURE;
        }
    };
    let reproduce = args.reproduce(seed, &bin_dir);
    println!("dgsp-chaos: reproduce with: {reproduce}");
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("dgsp-chaos: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (result, state) = rt.block_on(run(&args, seed, &bin_dir));
    let passed = match result {
        Ok(rows) => report::print(&rows),
        Err(e) => {
            println!("dgsp-chaos: the run could not complete: {e}");
            false
        }
    };
    if passed {
        println!("\ndgsp-chaos: PASSED (seed {seed})");
        if let Some(s) = state.filter(|_| !args.keep_state && args.state_dir.is_none()) {
            let _ = std::fs::remove_dir_all(s);
        }
        ExitCode::SUCCESS
    } else {
        println!("\ndgsp-chaos: FAILED (seed {seed})");
        if let Some(s) = state {
            println!("dgsp-chaos: logs and data kept in {}", s.display());
        }
        println!("dgsp-chaos: reproduce with: {reproduce}");
        ExitCode::FAILURE
    }
}

fn step(t0: Instant, what: &str) {
    println!("[{:>6.1} s] {what}", t0.elapsed().as_secs_f64());
}

async fn run(
    args: &Args,
    seed: u64,
    bin_dir: &std::path::Path,
) -> (Result<Vec<Row>, String>, Option<PathBuf>) {
    let state = match &args.state_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("dgsp-chaos-{seed}-{}", std::process::id())),
    };
    if let Err(e) = std::fs::create_dir_all(&state) {
        return (Err(format!("{}: {e}", state.display())), None);
    }
    let result = run_in(args, seed, bin_dir, &state).await;
    (result, Some(state))
}

async fn run_in(
    args: &Args,
    seed: u64,
    bin_dir: &std::path::Path,
    state: &std::path::Path,
) -> Result<Vec<Row>, String> {
    let t0 = Instant::now();
    let bins = Binaries::in_dir(bin_dir)?;
    let library = clock::find_library(args.faketime_lib.as_deref())?;
    step(
        t0,
        &format!(
            "state in {}, binaries from {}, libfaketime {}",
            state.display(),
            bin_dir.display(),
            library.display()
        ),
    );
    let clock = Arc::new(Clock::new(state.join("registry.faketime"), library)?);
    let group = Group::create(&bins, state, args.params.name())?;
    let group_key = std::fs::read(&group.public_key)
        .map_err(|e| e.to_string())
        .and_then(|b| dgsp_wire::anchor::parse_key_file(&b).map_err(|e| e.to_string()))?;
    let settings = Settings {
        cadence_secs: args.checkpoint_interval_secs,
        poll_ms: args.poll_ms,
        max_staleness_secs: args.max_staleness_secs,
    };
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(16)
        .build()
        .map_err(|e| e.to_string())?;
    let mut registry = processes::registry(&bins, &group, state, &settings, clock.env())?;
    let registry_url = registry.url.clone();
    let fault_log = Arc::new(Mutex::new(FaultLog::default()));
    let stack = Stack {
        registry: Arc::new(tokio::sync::Mutex::new({
            registry.spawn("first start")?;
            registry
                .wait_for(&http, "/readyz", faults::START_TIMEOUT)
                .await?;
            registry
        })),
        gateways: Vec::new(),
        http: http.clone(),
        clock: clock.clone(),
        settings: settings.clone(),
        tolerance_ms: args.clock_tolerance_secs * 1000,
        halt_expected: Arc::default(),
        log_copy: Arc::default(),
        admin_token: group.admin_token.clone(),
    };
    let mut stack = stack;
    let need = stack.episode_len().as_secs() + 5;
    if args.duration_secs < need {
        return Err(format!(
            "--duration-secs {} is too short for a clock episode with these settings: at least {need}",
            args.duration_secs
        ));
    }
    for i in 1..=args.gateways as usize {
        let mut gw = processes::gateway(&bins, &group, state, &settings, &registry_url, i)?;
        gw.spawn("first start")?;
        gw.wait_for(&http, "/readyz", faults::START_TIMEOUT).await?;
        stack.gateways.push(Arc::new(tokio::sync::Mutex::new(gw)));
    }
    step(
        t0,
        &format!(
            "{} group: registry {registry_url}, {} gateways ready",
            args.params, args.gateways
        ),
    );

    // Setup: members with one certificate each, patiently.
    let api = Api::new(http.clone(), &registry_url, &group.admin_token)?;
    let work = Arc::new(Workload::new(api, args.params.n(), seed));
    let mut rng = Rng::new(seed, 0);
    let mut members = Vec::new();
    while members.len() < args.members as usize {
        let n = (args.members as usize - members.len()).min(dgsp_wire::registry_api::MAX_BULK_JOIN);
        members.extend(work.join_bulk(&mut rng, n).await?);
    }
    let chunks: Vec<Vec<workload::Member>> = members
        .chunks(members.len().div_ceil(4))
        .map(<[_]>::to_vec)
        .collect();
    let mut tasks = Vec::new();
    for (i, chunk) in chunks.into_iter().enumerate() {
        let work = work.clone();
        let mut rng = Rng::new(seed, 100 + i as u64);
        tasks.push(tokio::spawn(async move {
            for m in chunk {
                if work.issue_one(&mut rng, &m).await {
                    work.pool.lock().unwrap().push(m);
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    let pooled = work.pool.lock().unwrap().len();
    if pooled < args.members as usize {
        return Err(format!(
            "setup: only {pooled} of {} issuances answered",
            args.members
        ));
    }
    step(
        t0,
        &format!(
            "{pooled} members with a certificate each; chaos for {} s",
            args.duration_secs
        ),
    );

    // Chaos: clients, faults, the monitor.
    let bounds = Bounds {
        max_staleness_ms: args.max_staleness_secs * 1000,
        tolerance_ms: args.clock_tolerance_secs * 1000,
        slack_ms: 500,
    };
    let monitor_stop = Arc::new(AtomicBool::new(false));
    let observations = Arc::new(Mutex::new(Observations::default()));
    let watched = monitor::Watched {
        registry: stack.registry.clone(),
        halt_expected: stack.halt_expected.clone(),
        gateways: stack.gateways.clone(),
    };
    let monitor = tokio::spawn(monitor::watch(
        http.clone(),
        watched,
        bounds,
        monitor_stop.clone(),
        observations.clone(),
    ));
    let follower = {
        let (stack, stop) = (stack.clone(), monitor_stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                stack.sync_log().await;
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(args.duration_secs);
    let mut clients = Vec::new();
    for (i, kind) in [0u8, 1, 2, 2, 2].into_iter().enumerate() {
        clients.push(tokio::spawn(
            work.clone().client(kind, Rng::new(seed, 1 + i as u64)),
        ));
    }
    let faults = {
        let stack = stack.clone();
        let log = fault_log.clone();
        tokio::spawn(async move { stack.run(Rng::new(seed, 50), deadline, log).await })
    };
    tokio::time::sleep_until(deadline.into()).await;
    work.stop.store(true, Ordering::Relaxed);
    let _ = faults.await;
    for c in clients {
        if tokio::time::timeout(Duration::from_secs(45), c)
            .await
            .is_err()
        {
            return Err("a client did not stop within 45 s".into());
        }
    }
    step(t0, "chaos over; quiescing");

    // Quiesce: real time, the registry serving, then published.
    stack.settle(&fault_log).await;
    let published = wait_published(&stack, &registry_url, args).await;
    step(t0, "registry published; waiting for the gateways");
    let catch_up = catch_up(&stack, published, args).await;
    monitor_stop.store(true, Ordering::Relaxed);
    let _ = monitor.await;
    let _ = follower.await;
    step(t0, "checking the invariants");

    // The invariants.
    // The log as the registry serves it now, or as last read when it no longer does.
    let serving = stack
        .log_copy
        .sync(&http, &registry_url, &group.admin_token)
        .await;
    let log = invariants::Log::new(stack.log_copy.entries().await, &group_key);
    let mut gateways = Vec::new();
    for g in &stack.gateways {
        let g = g.lock().await;
        gateways.push((g.name.clone(), g.url.clone()));
    }
    let ledger = work.ledger.clone();
    let log_problems = stack.log_copy.problems.lock().unwrap().clone();
    let mut rows = vec![
        Row::new(
            "the log only grows, across crashes too",
            stack.log_copy.syncs.load(Ordering::Relaxed),
            log_problems,
        ),
        invariants::snapshots_exact(&log, &group_key),
        invariants::checkpoints_cover(&log),
        match &serving {
            Ok(()) => {
                invariants::registry_answers_revoked(&http, &registry_url, &log, &group_key).await
            }
            Err(e) => Row::new(
                invariants::REGISTRY_REVOKED,
                1,
                vec![format!(
                    "not checked: the registry does not serve after quiescing: {e}"
                )],
            ),
        },
        invariants::gateways_answer_revoked(&http, &gateways, &log).await,
        invariants::acked_in_log(&log, &ledger, serving.is_ok()),
    ];
    rows.extend([
        Row::new(
            "a retried write is answered as the first time",
            ledger.stats.replays.load(Ordering::Relaxed),
            ledger.replay_mismatches.lock().unwrap().clone(),
        ),
        catch_up,
    ]);
    {
        let o = observations.lock().unwrap();
        rows.push(Row::new(
            "no gateway finds fault with what the registry signed",
            o.samples,
            o.registry_faults.clone(),
        ));
        rows.push(Row::new(
            "the registry never halts unprompted",
            o.registry_samples,
            o.unprompted_halts.clone(),
        ));
        rows.push(Row::new(
            "no gateway ready while stale",
            o.samples,
            o.ready_while_stale.clone(),
        ));
        rows.push(Row::new(
            format!(
                "no gateway serves a note > {} s in the future",
                args.clock_tolerance_secs
            ),
            o.samples,
            o.future.clone(),
        ));
    }
    {
        let f = fault_log.lock().unwrap();
        rows.push(Row::new(
            "clock episodes: gateways stale, registry halts",
            f.episode_checks,
            f.episode_failures.clone(),
        ));
        rows.push(Row::new(
            "every (re)start becomes ready; none exits",
            f.starts_checked,
            f.start_failures.clone(),
        ));
    }
    rows.push(invariants::audit(&bins, &group, &registry_url, state));
    summary(&work, &fault_log, &observations, &log, t0);

    // Stop the services cleanly.
    for g in &stack.gateways {
        g.lock().await.stop(Stop::Term).await;
    }
    stack.registry.lock().await.stop(Stop::Term).await;
    Ok(rows)
}

/// Waits until the registry's newest checkpoint covers its head (after quiescing nothing
/// more is written, so this is the checkpoint every gateway must reach).
async fn wait_published(stack: &Stack, registry: &str, args: &Args) -> Option<(u64, u64)> {
    let give_up = Instant::now() + Duration::from_secs(args.checkpoint_interval_secs * 3 + 30);
    while Instant::now() < give_up {
        let head = http::json::<GroupInfo>(&stack.http, &format!("{registry}/v1/group"))
            .await
            .map(|(_, g)| g.head_seq);
        if let (Some(head), Some(cp)) = (head, stack.registry_checkpoint().await) {
            if cp.size == head {
                return Some((cp.size, cp.time_unix_ms));
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}

/// Every gateway reaches the registry's latest checkpoint within one cadence plus one poll
/// (plus the grace) of its signing: the clock is back at real time, so the note's signed
/// time is real time.
async fn catch_up(stack: &Stack, published: Option<(u64, u64)>, args: &Args) -> Row {
    let name = "every gateway reaches the latest checkpoint in time";
    let Some((size, time)) = published else {
        return Row::new(
            name,
            1,
            vec!["the registry's checkpoint never covered its head after quiescing".into()],
        );
    };
    let bound_ms = args.checkpoint_interval_secs * 1000 + args.poll_ms + args.catch_up_grace_ms;
    let give_up = time + bound_ms + 30_000;
    let mut failures = Vec::new();
    let mut slowest = 0;
    for gw in &stack.gateways {
        let (gname, url) = {
            let g = gw.lock().await;
            (g.name.clone(), g.url.clone())
        };
        let group = format!("{url}/v1/group");
        let mut last = String::from("no answer");
        let reached = loop {
            if let Some((_, g)) = http::json::<monitor::GroupAnswer>(&stack.http, &group).await {
                let f = g.freshness;
                let cp = f.checkpoint.as_ref().map(|c| (c.size, c.time_unix_ms));
                if f.applied_seq >= size && cp.is_some_and(|(s, t)| s >= size && t >= time) {
                    break true;
                }
                last = format!(
                    "applied {} checkpoint {cp:?} stale {}",
                    f.applied_seq, f.stale
                );
            }
            if now_ms() > give_up {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let took = now_ms().saturating_sub(time);
        slowest = slowest.max(took);
        if !reached {
            failures.push(format!(
                "{gname}: had not reached checkpoint {size} {:.1} s after it was signed; last: {last}",
                took as f64 / 1e3
            ));
        } else if took > bound_ms {
            failures.push(format!(
                "{gname}: reached checkpoint {size} {:.1} s after it was signed (bound {:.1} s)",
                took as f64 / 1e3,
                bound_ms as f64 / 1e3
            ));
        }
    }
    println!(
        "catch-up: the slowest gateway served checkpoint {size} {:.2} s after it was signed (bound {:.1} s)",
        slowest as f64 / 1e3,
        bound_ms as f64 / 1e3
    );
    Row::new(name, stack.gateways.len() as u64, failures)
}

fn summary(
    work: &Workload,
    faults: &Mutex<FaultLog>,
    obs: &Mutex<Observations>,
    log: &invariants::Log,
    t0: Instant,
) {
    let s = &work.ledger.stats;
    let n = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    println!(
        "clients: {} writes, {} acknowledged, {} refused (4xx), {} abandoned, {} retries, {} dropped right after sending, {} disconnect races, {} replays",
        n(&s.writes),
        n(&s.acked),
        n(&s.refused),
        n(&s.abandoned),
        n(&s.retries),
        n(&s.disconnects),
        n(&s.races),
        n(&s.replays)
    );
    let f = faults.lock().unwrap();
    println!(
        "faults: registry stopped {} times ({} SIGTERM, the rest SIGKILL), gateways {} SIGKILL / {} SIGTERM, {} small clock jumps, {} clock episodes; offsets {:?} ms",
        f.registry_kills, f.registry_terms, f.gateway_kills, f.gateway_terms, f.small_jumps, f.episodes, f.offsets
    );
    let o = obs.lock().unwrap();
    println!(
        "gateways: {} samples, {} ready, {} not ready ({:?}), largest lead of a note in service {:.1} s, faults seen {:?}",
        o.samples,
        o.ready,
        o.not_ready,
        o.statuses,
        o.max_lead_ms as f64 / 1e3,
        o.faults
    );
    let revocations = log
        .entries
        .iter()
        .filter(|e| e.kind == "member_revoked")
        .count();
    println!(
        "log: {} entries, {revocations} revocations",
        log.entries.len()
    );
    println!("wall time {:.0} s", t0.elapsed().as_secs_f64());
}
