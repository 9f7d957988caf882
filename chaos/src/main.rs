//! `dgsp-chaos`: the chaos suite (docs/chaos.md). Starts a fresh group's registry and
//! gateways from the built binaries on loopback, runs concurrent clients against the
//! registry while SIGKILLing and restarting it, restarting gateways and moving its clock,
//! then quiesces and checks the invariants, printing a table. With `--journal`, a writer
//! and a standby on one bucket instead, behind fault proxies (`journal`). Exits 1 when any
//! invariant fails, printing the seed and the command that runs the same schedule again.

mod args;
mod clock;
mod episode;
mod faults;
mod fencing;
mod group;
mod http;
mod invariants;
mod journal;
mod log_copy;
mod monitor;
mod processes;
mod proxy;
mod quiesce;
mod report;
mod rng;
mod roots;
mod stack;
mod workload;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;

use crate::args::Args;
use crate::clock::Clock;
use crate::group::Group;
use crate::processes::Binaries;
use crate::report::Row;
use crate::rng::Rng;
use crate::stack::Stack;
use crate::workload::{Api, Workload};

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

/// The run in its state directory: the rows, or why it could not complete; and the
/// directory, once made.
async fn run(
    args: &Args,
    seed: u64,
    bin_dir: &Path,
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

/// Setup, chaos, quiescing, checks.
async fn run_in(args: &Args, seed: u64, bin_dir: &Path, state: &Path) -> Result<Vec<Row>, String> {
    let t0 = Instant::now();
    let need = if args.journal {
        // A few of the faults, each up to four and a half lease ttls.
        args.lease_ttl_ms * 18 / 1000 + 10
    } else {
        episode::longest(&args.settings()).as_secs() + 5
    };
    if args.duration_secs < need {
        return Err(format!(
            "--duration-secs {} is too short for {} with these settings: at least {need}",
            args.duration_secs,
            if args.journal {
                "the journal faults"
            } else {
                "a clock episode"
            }
        ));
    }
    let bins = Binaries::in_dir(bin_dir)?;
    let (stack, group) = if args.journal {
        step(
            t0,
            &format!(
                "journal scenario: state in {}, binaries from {}",
                state.display(),
                bin_dir.display()
            ),
        );
        let group = Group::create(&bins, state, args.params.name())?;
        let stack = journal::launch(
            &bins,
            &group,
            state,
            args.settings(),
            args.gateways as usize,
        )
        .await?;
        (stack, group)
    } else {
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
        let clock = Clock::new(state.join("registry.faketime"), library)?;
        let group = Group::create(&bins, state, args.params.name())?;
        let stack = Stack::launch(
            &bins,
            &group,
            state,
            args.settings(),
            clock,
            args.gateways as usize,
        )
        .await?;
        (stack, group)
    };
    let registry_url = stack.registry_url().await;
    match &stack.journal {
        Some(rig) => step(
            t0,
            &format!(
                "{} group: registries {} behind the front {registry_url} ({}), {} gateways ready",
                args.params,
                journal::NAMES.join(" and "),
                rig.describe(),
                args.gateways
            ),
        ),
        None => step(
            t0,
            &format!(
                "{} group: registry {registry_url}, {} gateways ready",
                args.params, args.gateways
            ),
        ),
    }

    // Setup: members with one certificate each, patiently.
    let api = Api::new(stack.http.clone(), &registry_url, &group.admin_token)?;
    let work = Arc::new(Workload::new(api, args.params.n(), seed));
    let pooled = work.populate(seed, args.members as usize).await?;
    step(
        t0,
        &format!(
            "{pooled} members with a certificate each; chaos for {} s",
            args.duration_secs
        ),
    );

    // Chaos: clients and faults, watched from now until the checks.
    let watch = Watch::start(&stack, seed);
    let deadline = Instant::now() + Duration::from_secs(args.duration_secs);
    let clients = work.spawn_clients(seed);
    let faults = {
        let stack = stack.clone();
        tokio::spawn(async move {
            let rng = Rng::new(seed, 50);
            match stack.journal.clone() {
                Some(rig) => rig.inject(&stack, rng, deadline).await,
                None => faults::inject(&stack, rng, deadline).await,
            }
        })
    };
    tokio::time::sleep_until(deadline.into()).await;
    work.stop.store(true, Ordering::Relaxed);
    let _ = faults.await;
    workload::join(clients).await?;
    step(t0, "chaos over; quiescing");

    // Quiesce: real time, the registry serving, then published.
    stack.settle().await;
    let published = quiesce::published(&stack).await;
    step(t0, "registry published; waiting for the gateways");
    let catch_up = quiesce::catch_up(&stack, published, args.catch_up_grace_ms).await;
    watch.finish().await;
    step(t0, "checking the invariants");
    let rows = check(&stack, &work, &bins, &group, state, catch_up).await?;
    println!("wall time {:.0} s", t0.elapsed().as_secs_f64());
    Ok(rows)
}

/// The tasks that watch the services from the start of the chaos until the checks: the
/// monitor and the suite's log follower; in the journal scenario also the registries'
/// monitor (`fencing`) and the supervisor that starts exited registries again.
struct Watch {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Watch {
    fn start(stack: &Stack, seed: u64) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let (s1, stop1) = (stack.clone(), stop.clone());
        let (s2, stop2) = (stack.clone(), stop.clone());
        let mut tasks = vec![
            tokio::spawn(async move { monitor::watch(&s1, &stop1).await }),
            tokio::spawn(async move { s2.follow_log(&stop2).await }),
        ];
        if let Some(rig) = &stack.journal {
            for slot in 0..stack.registries.len() {
                let (s, rig, stop) = (stack.clone(), rig.clone(), stop.clone());
                tasks.push(tokio::spawn(async move {
                    fencing::watch(&s, &rig.fencing, slot, &stop).await
                }));
            }
            let (s, rig, stop) = (stack.clone(), rig.clone(), stop.clone());
            tasks.push(tokio::spawn(async move {
                rig.supervise(&s, Rng::new(seed, 51), &stop).await
            }));
        }
        Watch { stop, tasks }
    }

    async fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// Every invariant's row, in the table's order; the services are stopped once nothing
/// more needs them. Prints what happened.
async fn check(
    stack: &Stack,
    work: &Workload,
    bins: &Binaries,
    group: &Group,
    state: &Path,
    catch_up: Row,
) -> Result<Vec<Row>, String> {
    let group_key = group.key()?;
    let registry_url = stack.registry_url().await;
    // The log as the registry serves it now, or as last read when it no longer does.
    let serving = stack
        .log_copy
        .sync(&stack.http, &registry_url, &group.admin_token)
        .await;
    let log = invariants::Log::new(stack.log_copy.entries().await, &group_key);
    let mut gateways = Vec::new();
    for g in &stack.gateways {
        let g = g.lock().await;
        gateways.push((g.name.clone(), g.url.clone()));
    }
    let http = &stack.http;
    if serving.is_ok() {
        // The newest served note too (recorded in `served` by the read).
        let _ = stack.registry_checkpoint().await;
    }
    let mut rows = vec![
        stack.log_copy.row(),
        invariants::snapshots_exact(&log, &group_key),
        invariants::checkpoints_cover(&log),
        roots::checkpoint_roots(&log, &stack.served, &group_key),
        invariants::registry_answers_revoked(http, &registry_url, &serving, &log, &group_key).await,
        invariants::gateways_answer_revoked(http, &gateways, &log).await,
        invariants::acked_in_log(&log, &work.ledger, serving.is_ok()),
        invariants::replays_agree(&work.ledger),
        catch_up,
    ];
    let audit = invariants::audit(bins, group, &registry_url, state);
    stack.stop_all().await;
    let observations = stack.observations.lock().unwrap();
    let faults = stack.faults.lock().unwrap();
    let journaled = stack.journal.is_some();
    rows.extend(observations.rows(stack.settings.clock_tolerance_ms, !journaled));
    rows.extend(faults.rows(!journaled));
    if let Some(rig) = &stack.journal {
        let acks = work.ledger.acks.lock().unwrap().clone();
        let bound_ms = stack.settings.max_staleness_secs * 1000;
        rows.extend(rig.fencing.rows(&log, &acks, bound_ms));
        if let Err(e) = rig.fencing.dump(state, &log, &acks) {
            println!("dgsp-chaos: {e}");
        }
        let jlog = rig.log.lock().unwrap();
        rows.push(fencing::exits_row(&jlog.exits, &jlog.spawn_failures));
    }
    rows.push(audit);
    println!("{}", work.ledger.stats);
    match &stack.journal {
        Some(rig) => {
            let jlog = rig.log.lock().unwrap();
            println!("{jlog}");
            for (name, start, line) in &jlog.exits {
                println!("  {name} exited in its start {start}: {line}");
            }
            println!("{}", rig.fencing);
            println!("{}", rig.traffic());
        }
        None => println!("{faults}"),
    }
    println!("{observations}");
    println!("{log}");
    Ok(rows)
}
