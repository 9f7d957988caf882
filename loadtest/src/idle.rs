//! `dgsp-loadtest idle`: a normal client's latency while thousands of idle and slow
//! connections are held against the services, beside the same client's latency without
//! them, in one run.
//!
//! Per listener (the registry and the gateway, plain and, when given, TLS), a normal client
//! is an open loop (`open_loop`, latency from each request's scheduled time) at `--rate`
//! requests per second, **a new connection for every request** (a client that arrives, asks
//! once and leaves, so each request goes through the server's accept and, on TLS, its
//! handshake): `GET /v1/group` on a registry (its answer must carry the group's public key),
//! `POST /v1/verify` with the fixtures' signatures on a gateway (its `status` must be the
//! fixture's). The run:
//!
//! 1. waits for every gateway to have applied the fixtures, reads each registry's group, and
//!    measures the machine's own stalls (`probe::stall_line`);
//! 2. **baseline**: every listener's client for `--secs`, all at once;
//! 3. opens the slow clients (`slow_clients`): `--per-kind` connections of each kind to each
//!    listener, idle TCP and slowloris on a plain one, silent TLS (no ClientHello) and slow
//!    TLS (a ClientHello a byte at a time) on a TLS one;
//! 4. **held**: every listener's client again for `--secs` while they are held;
//! 5. keeps holding them until `--hold-secs` after they were opened, or until the servers
//!    have closed them all, and records when each one was closed and how.
//!
//! Requests still due when a phase ends get `--drain-secs` more to be answered; the rest
//! are cut and counted at their age, so a quantile they reach is printed as a lower bound
//! (`≥`). The run fails on a wrong answer only: an answer other than 200, a body without
//! what the fixture expects, a baseline request without an answer, or slow clients the load
//! generator itself could not open (out of descriptors or ports). Times are reported, never
//! held to a bound.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Serialize;

use crate::client::Client;
use crate::error::{read, read_json, Error, Result};
use crate::load::Scenario;
use crate::model::Manifest;
use crate::open_loop::{self, Outcome, Plan};
use crate::probe::{self, StallLine};
use crate::slow_clients::{self, GroupSummary, Kind, SlowClients};

/// Options of `idle`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The fixture directory (the gateways' verify bodies, the group's key).
    #[arg(long)]
    fixtures: PathBuf,
    /// The registry's plain base URL.
    #[arg(long, default_value = "http://127.0.0.1:7350")]
    registry: String,
    /// The gateway's plain base URL.
    #[arg(long, default_value = "http://127.0.0.1:7450")]
    gateway: String,
    /// A registry serving HTTPS (any group: its answers are checked against its own key).
    #[arg(long)]
    registry_tls: Option<String>,
    /// A gateway serving HTTPS, following the fixtures' registry.
    #[arg(long)]
    gateway_tls: Option<String>,
    /// The CA certificate (PEM) the TLS listeners' certificates are signed by.
    #[arg(long)]
    ca_file: Option<PathBuf>,
    /// Slow clients of each kind per listener.
    #[arg(long, default_value_t = 500)]
    per_kind: usize,
    /// The normal client's requests per second, per listener.
    #[arg(long, default_value_t = 100.0)]
    rate: f64,
    /// Seconds of each phase (baseline, held).
    #[arg(long, default_value_t = 15)]
    secs: u64,
    /// The normal client's requests in flight at most, per listener.
    #[arg(long, default_value_t = 8)]
    connections: usize,
    /// Hold the slow clients this long after opening them (at least through the held
    /// phase), unless the servers close them all sooner.
    #[arg(long, default_value_t = 60)]
    hold_secs: u64,
    /// Milliseconds between two bytes of a trickling client.
    #[arg(long, default_value_t = 1000)]
    trickle_ms: u64,
    /// A slow client not connected after this long is given up.
    #[arg(long, default_value_t = 3000)]
    connect_timeout_ms: u64,
    /// Seconds a phase's due requests still get to be answered after it ends.
    #[arg(long, default_value_t = 10)]
    drain_secs: u64,
    /// Seconds of the machine's stall measurement (0: none).
    #[arg(long, default_value_t = 3.0)]
    stall_secs: f64,
    /// The command line to record in the summary.
    #[arg(long, default_value = "")]
    command: String,
    /// Where to write `idle.json` and `idle.txt`.
    #[arg(long)]
    out: PathBuf,
}

/// One listener under test.
struct Listener {
    name: String,
    url: String,
    tls: bool,
    addr: SocketAddr,
    request: String,
    plan: Plan,
}

/// One phase's numbers for one listener.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    /// Requests scheduled per second.
    pub target_per_s: f64,
    /// Answers (any status).
    pub answered: u64,
    /// Latency from the scheduled send, ms: p50, p90, p99, p99.9, max.
    pub ms: [f64; 5],
    /// Whether each of `ms` is exact (false: a lower bound, cut requests reach it).
    pub exact: [bool; 5],
    /// Answers other than 200.
    pub not_200: u64,
    /// Answers 200 without what the fixture expects.
    pub wrong: u64,
    /// Requests without an answer, by kind.
    pub errors: std::collections::BTreeMap<String, u64>,
    /// Requests cut after the drain.
    pub cut: u64,
}

impl Phase {
    fn of(o: &Outcome, rate: f64) -> Phase {
        let qs = [0.5, 0.9, 0.99, 0.999, 1.0].map(|q| o.quantile_bounded_ms(q));
        Phase {
            target_per_s: rate,
            answered: o.answered(),
            ms: qs.map(|(v, _)| v),
            exact: qs.map(|(_, e)| e),
            not_200: o
                .status_codes
                .iter()
                .filter(|(c, _)| **c != 200)
                .map(|(_, n)| n)
                .sum(),
            wrong: o.wrong,
            errors: o.errors.clone(),
            cut: o.cut_at_end,
        }
    }

    fn text(&self) -> String {
        let q = |i: usize| format!("{}{:.2}", if self.exact[i] { "" } else { "≥" }, self.ms[i]);
        format!("{} / {} / {}", q(0), q(2), q(4))
    }
}

/// One listener's result.
#[derive(Debug, Clone, Serialize)]
pub struct ListenerResult {
    /// The listener.
    pub name: String,
    /// Its base URL.
    pub url: String,
    /// The normal client's request.
    pub request: String,
    /// Without the slow clients.
    pub baseline: Phase,
    /// While they are held.
    pub held: Phase,
    /// held ÷ baseline for p50, p99 and max.
    pub ratio: [f64; 3],
}

/// What `idle` measured.
#[derive(Debug, Clone, Serialize)]
pub struct IdleSummary {
    /// The command that ran it.
    pub command: String,
    /// Slow clients of each kind per listener (after any cap for the open-files limit).
    pub per_kind: usize,
    /// Why `per_kind` is less than asked, if it is.
    pub capped: Option<String>,
    /// This process's open-files limit, soft and hard.
    pub open_files_limit: Option<(u64, u64)>,
    /// The normal client's rate per listener, its phase length, its connections.
    pub rate_per_s: f64,
    /// Seconds per phase.
    pub secs: u64,
    /// Milliseconds between two bytes of a trickling client.
    pub trickle_ms: u64,
    /// The machine's own stalls, measured before.
    pub stalls: Option<StallLine>,
    /// Seconds until every slow client had connected or failed to.
    pub open_s: f64,
    /// Slow clients open when the held phase started, and when it ended.
    pub open_during_held: [usize; 2],
    /// Seconds the slow clients were held in all.
    pub held_s: f64,
    /// How often the kernel found an accept queue full while they were held (machine-wide
    /// counters, `slow_clients::accept_queue_counters`).
    pub accept_queues: Option<std::collections::BTreeMap<String, u64>>,
    /// Per listener.
    pub listeners: Vec<ListenerResult>,
    /// Per listener and kind.
    pub slow_clients: Vec<GroupSummary>,
    /// The wrong answers and local failures (empty: the run passed).
    pub failures: Vec<String>,
}

/// Runs `idle`.
pub async fn run(a: Args) -> Result<()> {
    if a.secs == 0 || a.connections == 0 || !(a.rate > 0.0 && a.rate.is_finite()) {
        return Err(Error::Usage(
            "--secs, --connections and --rate must be positive".into(),
        ));
    }
    std::fs::create_dir_all(&a.out).map_err(|source| Error::Io {
        path: a.out.clone(),
        source,
    })?;
    let manifest: Manifest = read_json(&a.fixtures.join("manifest.json"))?;
    let ca = a.ca_file.as_deref().map(read).transpose()?;
    if (a.registry_tls.is_some() || a.gateway_tls.is_some()) && ca.is_none() {
        return Err(Error::Usage(
            "--registry-tls and --gateway-tls need --ca-file".into(),
        ));
    }

    let mut listeners = Vec::new();
    for (name, url) in [
        ("registry", Some(&a.registry)),
        ("registry (TLS)", a.registry_tls.as_ref()),
    ] {
        if let Some(url) = url {
            listeners.push(registry_listener(name, url, &manifest, ca.as_deref(), &a).await?);
        }
    }
    for (name, url) in [
        ("gateway", Some(&a.gateway)),
        ("gateway (TLS)", a.gateway_tls.as_ref()),
    ] {
        if let Some(url) = url {
            listeners.push(gateway_listener(name, url, &manifest, ca.as_deref(), &a).await?);
        }
    }

    // Every slow client is a descriptor here, and so is each request in flight.
    let kinds_per_listener = 2;
    let limit = slow_clients::open_files_limit();
    let reserve = 64 + 2 * a.connections * listeners.len();
    let mut per_kind = a.per_kind;
    let mut capped = None;
    if let Some((soft, _)) = limit {
        let room = usize::try_from(soft.saturating_sub(reserve as u64)).unwrap_or(usize::MAX)
            / (kinds_per_listener * listeners.len());
        if room < per_kind {
            capped = Some(format!(
                "{} slow clients of each kind asked, {room} fit in this process's open-files limit ({soft}; raise it with `ulimit -n`)",
                a.per_kind
            ));
            per_kind = room;
        }
    }
    let groups: Vec<slow_clients::Group> = listeners
        .iter()
        .flat_map(|l| {
            let kinds = if l.tls {
                [Kind::Idle, Kind::SlowHello]
            } else {
                [Kind::Idle, Kind::Slowloris]
            };
            kinds.map(|kind| slow_clients::Group {
                listener: l.name.clone(),
                addr: l.addr,
                kind,
                count: per_kind,
            })
        })
        .collect();

    let stalls = (a.stall_secs > 0.0).then(|| probe::stall_line(a.stall_secs));
    let plans: Vec<Plan> = listeners.iter().map(|l| l.plan.clone()).collect();
    eprintln!(
        "idle: baseline, {} listeners at {}/s each for {} s",
        listeners.len(),
        a.rate,
        a.secs
    );
    let baseline = phase(&plans).await?;

    eprintln!(
        "idle: opening {} slow clients ({per_kind} of each kind per listener)",
        groups.iter().map(|g| g.count).sum::<usize>()
    );
    let queues_before = slow_clients::accept_queue_counters();
    let opened_at = Instant::now();
    let clients = SlowClients::start(
        groups.clone(),
        slow_clients::Options {
            connect_timeout: Duration::from_millis(a.connect_timeout_ms),
            // Few enough SYNs at once that a listener accepting as fast as it can keeps its
            // queue (1 024) from overflowing: an overflow is then the server's own.
            connect_parallel: 128,
            trickle: Duration::from_millis(a.trickle_ms.max(1)),
        },
    )
    .map_err(|source| Error::Io {
        path: "the slow clients' thread".into(),
        source,
    })?;
    let attempts_limit = Duration::from_millis(a.connect_timeout_ms) * 4 + Duration::from_secs(30);
    clients.all_attempted(attempts_limit).await;
    let open_s = opened_at.elapsed().as_secs_f64();

    let open_before = clients.open();
    eprintln!(
        "idle: {open_before} slow clients open after {open_s:.1} s; held phase for {} s",
        a.secs
    );
    let held = phase(&plans).await?;
    let open_after = clients.open();

    let hold_until = opened_at + Duration::from_secs(a.hold_secs);
    while clients.open() > 0 && Instant::now() < hold_until {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let held_s = opened_at.elapsed().as_secs_f64();
    let records = clients.stop();
    let accept_queues = queues_before
        .zip(slow_clients::accept_queue_counters())
        .map(|(b, a)| {
            a.into_iter()
                .map(|(k, v)| {
                    let was = b.get(&k).copied().unwrap_or(0);
                    (k, v.saturating_sub(was))
                })
                .collect()
        });
    let slow = slow_clients::summarise(&groups, &records);

    let results: Vec<ListenerResult> = listeners
        .iter()
        .zip(baseline.iter().zip(&held))
        .map(|(l, (b, h))| {
            let (b, h) = (Phase::of(b, a.rate), Phase::of(h, a.rate));
            let r = |i: usize| h.ms[i] / b.ms[i].max(f64::MIN_POSITIVE);
            ListenerResult {
                name: l.name.clone(),
                url: l.url.clone(),
                request: l.request.clone(),
                ratio: [r(0), r(2), r(4)],
                baseline: b,
                held: h,
            }
        })
        .collect();
    let summary = IdleSummary {
        command: a.command.clone(),
        per_kind,
        capped,
        open_files_limit: limit,
        rate_per_s: a.rate,
        secs: a.secs,
        trickle_ms: a.trickle_ms,
        stalls,
        open_s,
        open_during_held: [open_before, open_after],
        held_s,
        accept_queues,
        failures: failures(&results, &slow),
        listeners: results,
        slow_clients: slow,
    };
    crate::error::write_json(&a.out.join("idle.json"), &summary)?;
    let text = summary.text();
    crate::error::write(&a.out.join("idle.txt"), text.as_bytes())?;
    println!("{text}");
    if summary.failures.is_empty() {
        Ok(())
    } else {
        Err(Error::Thresholds(summary.failures))
    }
}

/// Runs every plan at once; their outcomes in order.
async fn phase(plans: &[Plan]) -> Result<Vec<Outcome>> {
    let mut set = tokio::task::JoinSet::new();
    for (i, p) in plans.iter().cloned().enumerate() {
        set.spawn(async move { (i, open_loop::run(&p).await) });
    }
    let mut out: Vec<Option<Outcome>> = vec![None; plans.len()];
    while let Some(done) = set.join_next().await {
        let (i, o) = done.map_err(|e| Error::Tool {
            what: "an open loop's task".into(),
            detail: e.to_string(),
        })?;
        out[i] = Some(o.map_err(|detail| Error::Tool {
            what: "the open loop".into(),
            detail,
        })?);
    }
    Ok(out.into_iter().flatten().collect())
}

/// What a normal client does against every listener: rate, new connections, drain, trust.
fn normal(plan: Plan, a: &Args, tls: bool, ca: Option<&[u8]>) -> Plan {
    Plan {
        drain: Duration::from_secs(a.drain_secs),
        new_connection_each: true,
        root_ca_pem: if tls { ca.map(<[u8]>::to_vec) } else { None },
        ..plan
    }
}

/// The socket address of a base URL, and whether it is `https`.
fn address(url: &str) -> Result<(SocketAddr, bool)> {
    let bad = |detail: String| Error::Usage(format!("{url}: {detail}"));
    let u = reqwest::Url::parse(url).map_err(|e| bad(e.to_string()))?;
    let host = u.host_str().ok_or_else(|| bad("no host".into()))?;
    let port = u
        .port_or_known_default()
        .ok_or_else(|| bad("no port".into()))?;
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| bad(e.to_string()))?
        .next()
        .ok_or_else(|| bad("no address".into()))?;
    Ok((addr, u.scheme() == "https"))
}

async fn registry_listener(
    name: &str,
    url: &str,
    manifest: &Manifest,
    ca: Option<&[u8]>,
    a: &Args,
) -> Result<Listener> {
    let (addr, tls) = address(url)?;
    let base = url.trim_end_matches('/');
    let client = Client::with_ca(base, None, if tls { ca } else { None })?;
    let group = client.get("/v1/group").await?;
    let key = crate::client::str_field(&group, "public_key", &format!("GET {base}/v1/group"))?;
    // The fixtures' registry must serve the fixtures' group; another (the TLS one) its own,
    // the same in every answer.
    if !tls && key != manifest.public_key {
        return Err(Error::Answer {
            what: format!("GET {base}/v1/group"),
            detail: "not the fixtures' group".into(),
        });
    }
    let plan = Plan {
        expect: vec![Bytes::from(format!(r#""public_key":"{key}""#))],
        ..Plan::new(
            reqwest::Method::GET,
            vec![format!("{base}/v1/group")],
            a.rate,
            Duration::from_secs(a.secs),
            a.connections,
        )
    };
    Ok(Listener {
        name: name.into(),
        url: base.into(),
        tls,
        addr,
        request: "GET /v1/group".into(),
        plan: normal(plan, a, tls, ca),
    })
}

async fn gateway_listener(
    name: &str,
    url: &str,
    manifest: &Manifest,
    ca: Option<&[u8]>,
    a: &Args,
) -> Result<Listener> {
    let (addr, tls) = address(url)?;
    let base = url.trim_end_matches('/');
    let client = Client::with_ca(base, None, if tls { ca } else { None })?;
    crate::wait::caught_up(&client, manifest, Duration::from_secs(120)).await?;
    let t = probe::target(Scenario::Verify, base, &a.fixtures, 1)?;
    let request = t.request.clone();
    let plan = t.plan(a.rate, Duration::from_secs(a.secs), a.connections);
    Ok(Listener {
        name: name.into(),
        url: base.into(),
        tls,
        addr,
        request,
        plan: normal(plan, a, tls, ca),
    })
}

/// The wrong answers and the load generator's own failures.
fn failures(listeners: &[ListenerResult], slow: &[GroupSummary]) -> Vec<String> {
    let mut f = Vec::new();
    for l in listeners {
        for (phase, p) in [("baseline", &l.baseline), ("held", &l.held)] {
            if p.not_200 > 0 || p.wrong > 0 {
                f.push(format!(
                    "{} ({phase}): {} answers other than 200, {} wrong answers",
                    l.name, p.not_200, p.wrong
                ));
            }
        }
        let errors: u64 = l.baseline.errors.values().sum();
        if errors > 0 || l.baseline.answered == 0 {
            f.push(format!(
                "{} (baseline, nothing held): {} of {} requests without an answer ({:?})",
                l.name,
                errors,
                errors + l.baseline.answered,
                l.baseline.errors
            ));
        }
    }
    for g in slow {
        let local: usize = [slow_clients::LOCAL_NO_FILES, slow_clients::LOCAL_NO_PORTS]
            .iter()
            .filter_map(|e| g.connect_errors.get(*e))
            .sum();
        if local > 0 {
            f.push(format!(
                "{}: {local} {:?} slow clients could not be opened here (out of descriptors or ports): the load generator's limit, not the server's",
                g.listener, g.kind
            ));
        }
    }
    f
}

impl IdleSummary {
    /// The human summary.
    pub fn text(&self) -> String {
        let mut t = format!(
            "idle and slow connections: {} of each kind per listener ({} in all), held {:.1} s ({} open when the held phase started, {} when it ended); the normal client at {:.0}/s per listener, a new connection per request, {} s without them and {} s with them",
            self.per_kind,
            self.slow_clients.iter().map(|g| g.asked).sum::<usize>(),
            self.held_s,
            self.open_during_held[0],
            self.open_during_held[1],
            self.rate_per_s,
            self.secs,
            self.secs,
        );
        if let Some(c) = &self.capped {
            t.push_str(&format!("\n  capped: {c}"));
        }
        if let Some((soft, hard)) = self.open_files_limit {
            t.push_str(&format!(
                "\n  open-files limit of the load generator: {soft} (hard {hard})"
            ));
        }
        if let Some(s) = &self.stalls {
            t.push_str(&format!(
                "\n  the machine's own stalls ({} cores spinning {:.1} s, nothing else running): {}",
                s.cores, s.seconds, s.line
            ));
        }
        t.push_str("\n  latency from the scheduled send, p50 / p99 / max ms (≥: a lower bound, requests cut after the drain reach it):");
        for l in &self.listeners {
            let errs = |p: &Phase| {
                let e: u64 = p.errors.values().sum();
                format!(
                    "{e} without an answer{}, {} cut",
                    if e > 0 {
                        format!(" {:?}", p.errors)
                    } else {
                        String::new()
                    },
                    p.cut
                )
            };
            t.push_str(&format!(
                "\n  {:<15} {:<16} baseline {} ({} answered, {})\n  {:<15} {:<16} held     {} ({} answered, {}) · ×{:.2} p50, ×{:.2} p99, ×{:.2} max",
                l.name,
                l.request,
                l.baseline.text(),
                l.baseline.answered,
                errs(&l.baseline),
                "",
                "",
                l.held.text(),
                l.held.answered,
                errs(&l.held),
                l.ratio[0],
                l.ratio[1],
                l.ratio[2],
            ));
        }
        t.push_str(&format!(
            "\n  slow clients (all opened within {:.1} s); lifetime = from connecting to the server closing it, first / median / last:",
            self.open_s
        ));
        for g in &self.slow_clients {
            let tls = g.listener.contains("TLS");
            t.push_str(&format!(
                "\n  {:<15} {:<38} {} of {} connected{}; closed by the server: {}{}{}; still open at the end: {}",
                g.listener,
                g.kind.describe(tls),
                g.connected,
                g.asked,
                if g.connect_errors.is_empty() { String::new() } else { format!(" ({:?})", g.connect_errors) },
                g.ended_by_server,
                g.lifetime_s
                    .map(|[a, b, c]| format!(" after {a:.1} / {b:.1} / {c:.1} s"))
                    .unwrap_or_default(),
                if g.answers.is_empty() { String::new() } else { format!(", saying {:?}", g.answers) },
                g.still_open,
            ));
        }
        if let Some(q) = &self.accept_queues {
            t.push_str(&format!(
                "\n  full accept queues while they were held (the kernel's counters, the whole machine): {q:?}; an idle client answered by a SYN cookie may look open although the server never accepted it"
            ));
        }
        if self.failures.is_empty() {
            t.push_str("\n  every answer right");
        } else {
            t.push_str(&format!(
                "\n  FAILED:\n    {}",
                self.failures.join("\n    ")
            ));
        }
        t
    }
}
