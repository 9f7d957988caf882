//! Gateway verification throughput and latency against raw core verification, measured in
//! one run on one machine over one set of signatures, printed as a table:
//!
//!     cargo bench -p dgsp-gateway --bench gateway
//!
//! - first, the machine's own stalls (`dgsp_gateway::stalls`): a latency tail shorter than those
//!   cannot be promised on this machine, whatever the gateway does;
//! - raw core throughput: `ManagerPublicKey::verify_ignoring_revocation` on a rayon pool with
//!   one thread per core, signatures/s, measured before and after the HTTP runs (the ratios
//!   use their mean);
//! - `POST /v1/verify` over HTTP on loopback at saturation (closed loop), requests/s and the
//!   ratio to raw (target ≥ 0.95), with p50/p99 latency;
//! - `POST /v1/verify` open loop at half the measured saturation rate, p50/p99 latency
//!   (measured from the scheduled send time, so a stall is not hidden);
//! - `POST /v1/verify/batch` with 64 items per batch (closed loop), signatures/s;
//! - overload: twice as many closed-loop clients as the queue has slots, for half a run:
//!   accepted and shed (503) rates and the latency of accepted requests;
//! - the same runs with the compact binary body (`application/vnd.dgsp.verify`);
//! - CPU per request of the HTTP runtime and of the verify pool (from /proc), and how many
//!   signatures the pool verified per engine call (coalescing).
//!
//! A real registry (RocksDB in a temp dir) and one gateway following it run in this process
//! on one tokio runtime; the load generator runs on a runtime of its own, and the gateway
//! verifies on its own pool. Every run cycles through the whole signature set. The load
//! generator is a minimal HTTP/1.1 client (`client.rs`: requests built once, one write each,
//! answers read by length) so that the CPU it shares with the gateway is as small as a
//! client's can be; its CPU is reported, and the ratio on the CPU it leaves is given too.
//!
//! Environment: `DGSP_BENCH_PARAMS` (parameter set, default `sha2-128f`), `DGSP_BENCH_SECS`
//! (seconds per run, default 10), `DGSP_BENCH_SIGS` (distinct signatures, default 512),
//! `DGSP_BENCH_CONCURRENCY` (closed-loop requests in flight, default 4 per core within
//! 8..=32), `DGSP_BENCH_CLIENT_THREADS` (load-generator threads, default a quarter of the
//! cores, at least 1), `DGSP_BENCH_HTTP_THREADS` and `DGSP_BENCH_WORKERS` (the gateway's
//! thread layout, default as `dgsp-gateway serve`: see `dgsp_gateway::layout`),
//! `DGSP_BENCH_COALESCE_US` (the gateway's coalescing wait, default as `serve`),
//! `DGSP_BENCH_BINARY` and `DGSP_BENCH_JSON` (0 skips the binary-body or the JSON runs),
//! `DGSP_BENCH_DEBUG_SLOW` (set: print every open-loop request slower than its value in ms,
//! 10 if it is not a number, every
//! send the generator made over 5 ms late, and every change of the gateway's view),
//! `DGSP_BENCH_TAIL_PROBE` (requests/s: run only the open loop at that rate, print p50, p99,
//! p99.9 and the maximum, and stop; for finding what moves the tail), `DGSP_BENCH_STALL_SECS`
//! (how long the machine's own stalls are measured first, default 3 s: see `dgsp_gateway::stalls`),
//! `DGSP_BENCH_STRICT=1` (fail unless every request of every run was answered as it should
//! be, only the overload run shedding: the test command's smoke run, with tiny settings).
//!
//! Cores are those this process may use: run it under `taskset -c 0-3` to measure 4 cores.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::{ManagerPublicKey, ParamSet, Signature};
use dgsp_gateway::api::body::{encode_binary, BINARY};
use dgsp_gateway::layout::Layout;
use dgsp_gateway::stalls;
use serde_json::json;

mod client;
#[path = "../../tests/support/mod.rs"]
mod support;

const BATCH: usize = 64;

/// `DGSP_BENCH_DEBUG_SLOW` set: the open loop prints every request slower than this (its
/// value in milliseconds, 10 when it is not a number; when it was sent, how long it took),
/// to find what a tail lines up with.
static SLOW: std::sync::LazyLock<Option<Duration>> = std::sync::LazyLock::new(|| {
    std::env::var("DGSP_BENCH_DEBUG_SLOW")
        .ok()
        .map(|v| Duration::from_secs_f64(v.parse::<f64>().unwrap_or(10.0) / 1e3))
});

/// The clock of those prints.
static T0: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);
const MIN_MEMBERS: usize = 8;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v}: not a valid value")),
        Err(_) => default,
    }
}

struct Settings {
    params: ParamSet,
    layout: Layout,
    coalesce: Duration,
    binary: bool,
    secs: Duration,
    sigs: usize,
    cores: usize,
    concurrency: usize,
    client_threads: usize,
    tail_probe: Option<f64>,
    stall_secs: Duration,
    strict: bool,
}

impl Settings {
    fn from_env() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let params: String = env_or("DGSP_BENCH_PARAMS", "sha2-128f".to_owned());
        Settings {
            layout: Layout::for_cores(
                cores,
                env_or("DGSP_BENCH_HTTP_THREADS", 0),
                env_or("DGSP_BENCH_WORKERS", 0),
            ),
            coalesce: Duration::from_micros(env_or(
                "DGSP_BENCH_COALESCE_US",
                dgsp_gateway::server::DEFAULT_COALESCE_WAIT.as_micros() as u64,
            )),
            binary: env_or("DGSP_BENCH_BINARY", 1u8) != 0,
            params: params
                .parse()
                .unwrap_or_else(|e| panic!("DGSP_BENCH_PARAMS: {e}")),
            secs: Duration::from_secs_f64(env_or("DGSP_BENCH_SECS", 10.0)),
            sigs: env_or("DGSP_BENCH_SIGS", 512usize).max(1),
            cores,
            concurrency: env_or("DGSP_BENCH_CONCURRENCY", (4 * cores).clamp(8, 32)).max(1),
            client_threads: env_or("DGSP_BENCH_CLIENT_THREADS", (cores / 4).max(1)),
            stall_secs: Duration::from_secs_f64(env_or("DGSP_BENCH_STALL_SECS", 3.0)),
            strict: env_or("DGSP_BENCH_STRICT", 0u8) != 0,
            tail_probe: std::env::var("DGSP_BENCH_TAIL_PROBE").ok().map(|v| {
                v.parse()
                    .expect("DGSP_BENCH_TAIL_PROBE: requests per second")
            }),
        }
    }

    /// Warm-up before each timed run (connections, caches, CPU frequency).
    fn warmup(&self) -> Duration {
        (self.secs / 5).clamp(Duration::from_millis(200), Duration::from_secs(2))
    }
}

/// One signed message.
struct Sample {
    message: Vec<u8>,
    sig: Signature,
}

/// The registry, the gateway following it (the test harness's, so the bench measures the
/// same setup the tests check).
struct Services {
    registry: support::Registry,
    gateway: support::Gateway,
}

/// Starts the registry, makes the signatures (distinct 128-byte messages, one per
/// certificate), starts the gateway and waits until it serves everything the registry has
/// checkpointed.
async fn setup(s: &Settings) -> (Services, ManagerPublicKey, Vec<Sample>) {
    let registry = support::registry_with(s.params).await;
    let group = registry.manager.public_key().clone();
    let started = Instant::now();
    // At most `MAX_ISSUE` (1024) certificates per member, so one issue request each.
    let members = MIN_MEMBERS.max(s.sigs.div_ceil(1024));
    let mut samples = Vec::with_capacity(s.sigs);
    for m in 0..members {
        let count = s.sigs / members + usize::from(m < s.sigs % members);
        let mut member = registry.member(&format!("bench-{m}"), count).await;
        for _ in 0..count {
            let mut message = format!("gateway bench message {:08}", samples.len()).into_bytes();
            message.resize(128, b'.');
            let sig = member.sign(&message);
            samples.push(Sample { message, sig });
        }
    }
    eprintln!(
        "{} signatures by {members} members issued and signed in {:.1} s",
        samples.len(),
        started.elapsed().as_secs_f64()
    );
    // Production defaults for the follower.
    let url = registry.url.clone();
    let (workers, coalesce) = (s.layout.verify_workers, s.coalesce);
    let gateway = registry
        .follower(|c| {
            c.follow = dgsp_gateway::follower::FollowConfig::new(&url);
            c.workers = workers;
            c.coalesce_wait = coalesce;
        })
        .await;
    (Services { registry, gateway }, group, samples)
}

impl Services {
    async fn shutdown(self) {
        self.gateway.shutdown().await;
        self.registry.shutdown().await;
    }
}

/// Raw core verification on `pool` for `dur`: every thread takes the next signature of the
/// set in turn. Returns (signatures/s, failures).
fn raw(
    pool: &rayon::ThreadPool,
    group: &ManagerPublicKey,
    samples: &[Sample],
    dur: Duration,
) -> (f64, u64) {
    let next = AtomicUsize::new(0);
    let failed = AtomicU64::new(0);
    let start = Instant::now();
    let deadline = start + dur;
    let done: u64 = pool
        .broadcast(|_| {
            let mut n = 0u64;
            while Instant::now() < deadline {
                let s = &samples[next.fetch_add(1, Ordering::Relaxed) % samples.len()];
                if group
                    .verify_ignoring_revocation(&s.message, &s.sig)
                    .is_err()
                {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
                n += 1;
            }
            n
        })
        .into_iter()
        .sum();
    (
        done as f64 / start.elapsed().as_secs_f64(),
        failed.into_inner(),
    )
}

/// What a load run saw.
#[derive(Default)]
struct Outcome {
    /// 200 answers that passed the check.
    good: u64,
    /// 200 answers that did not (e.g. not `valid`).
    bad: u64,
    /// 503 (the pool shed the request).
    shed: u64,
    /// Any other status.
    other: u64,
    /// Transport errors.
    errors: u64,
    /// Latency of every good answer (fast 503s would flatter the percentiles), sorted.
    latencies: Vec<Duration>,
    elapsed: Duration,
}

impl Outcome {
    fn merge(&mut self, o: Outcome) {
        self.good += o.good;
        self.bad += o.bad;
        self.shed += o.shed;
        self.other += o.other;
        self.errors += o.errors;
        self.latencies.extend(o.latencies);
    }

    fn finish(mut self, elapsed: Duration) -> Self {
        self.latencies.sort_unstable();
        self.elapsed = elapsed;
        self
    }

    fn rate(&self) -> f64 {
        self.good as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, q: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let i = ((self.latencies.len() - 1) as f64 * q).round() as usize;
        self.latencies[i]
    }

    fn p50_p99(&self) -> String {
        format!(
            "{:.2} ms / {:.2} ms",
            self.percentile(0.50).as_secs_f64() * 1e3,
            self.percentile(0.99).as_secs_f64() * 1e3
        )
    }

    /// Requests that failed other than by being shed (503).
    fn failed(&self) -> u64 {
        self.other + self.errors + self.bad
    }

    fn failures(&self) -> String {
        format!(
            "{} / {} / {} / {}",
            self.shed, self.other, self.errors, self.bad
        )
    }
}

/// A pre-encoded request stream: requests taken in turn, and how to check a 200 answer.
#[derive(Clone)]
struct Load {
    conns: client::Pool,
    requests: Arc<Vec<Vec<u8>>>,
    check: fn(&[u8]) -> bool,
    next: Arc<AtomicUsize>,
}

impl Load {
    /// Sends the next request; records the outcome with latency from `since`.
    async fn one(&self, since: Instant, out: &mut Outcome) {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.requests.len();
        let mut conn = match self.conns.take().await {
            Ok(c) => c,
            Err(_) => {
                out.errors += 1;
                return;
            }
        };
        let (status, good) = match conn.send(&self.requests[i]).await {
            Ok(a) => (a.status, a.status == 200 && (self.check)(a.body)),
            Err(_) => {
                out.errors += 1;
                return;
            }
        };
        let latency = since.elapsed();
        self.conns.give(conn);
        match status {
            200 if good => {
                out.good += 1;
                out.latencies.push(latency);
            }
            200 => out.bad += 1,
            503 => {
                out.shed += 1;
                // Do not spin on a full queue.
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            _ => out.other += 1,
        }
    }

    /// `concurrency` clients, each sending its next request as soon as the last is answered.
    async fn closed(&self, concurrency: usize, dur: Duration) -> Outcome {
        let start = Instant::now();
        let deadline = start + dur;
        let tasks: Vec<_> = (0..concurrency)
            .map(|_| {
                let load = self.clone();
                tokio::spawn(async move {
                    let mut out = Outcome::default();
                    while Instant::now() < deadline {
                        load.one(Instant::now(), &mut out).await;
                    }
                    out
                })
            })
            .collect();
        let mut all = Outcome::default();
        for t in tasks {
            all.merge(t.await.unwrap());
        }
        all.finish(start.elapsed())
    }

    /// Requests sent at `rate` per second on a fixed schedule, whatever the answers do;
    /// latency counts from the scheduled time. The schedule is kept by a thread of its own
    /// sleeping to each send time (tokio's timer rounds up to the next millisecond, which
    /// would add up to 1 ms to every latency measured from the schedule).
    async fn open(&self, rate: f64, dur: Duration) -> Outcome {
        let period = Duration::from_secs_f64(1.0 / rate.max(1.0));
        let total = (dur.as_secs_f64() * rate.max(1.0)) as u32;
        let handle = tokio::runtime::Handle::current();
        let load = self.clone();
        let start = Instant::now();
        let tasks = tokio::task::spawn_blocking(move || {
            let mut tasks = Vec::with_capacity(total as usize);
            for k in 0..total {
                let at = start + period * k;
                if let Some(wait) = at.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                let late = at.elapsed();
                if SLOW.is_some() && late > Duration::from_millis(5) {
                    eprintln!(
                        "late: the generator sent the request due at {:.3} s {:.1} ms late",
                        (at - *T0).as_secs_f64(),
                        late.as_secs_f64() * 1e3
                    );
                }
                let load = load.clone();
                tasks.push(handle.spawn(async move {
                    let mut out = Outcome::default();
                    load.one(at, &mut out).await;
                    if SLOW.is_some_and(|t| at.elapsed() > t) {
                        eprintln!(
                            "slow: sent at {:.3} s, answered after {:.1} ms",
                            (at - *T0).as_secs_f64(),
                            at.elapsed().as_secs_f64() * 1e3
                        );
                    }
                    out
                }));
            }
            tasks
        })
        .await
        .unwrap();
        let mut all = Outcome::default();
        for t in tasks {
            all.merge(t.await.unwrap());
        }
        all.finish(start.elapsed())
    }
}

/// CPU seconds (user + system) used so far by this process's threads, by thread-name prefix:
/// `[verify pool, server runtime, load generator, everything else]` (from /proc; Linux only,
/// 10 ms resolution, zeros elsewhere).
fn cpu_by_role() -> [f64; 4] {
    let mut out = [0.0; 4];
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for t in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue;
        };
        let Some((head, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let name = head.split_once(" (").map_or("", |(_, n)| n);
        let fields: Vec<&str> = rest.split(' ').collect();
        // After "pid (comm) ", utime and stime are fields 12 and 13 (0-based from state).
        let ticks: f64 = fields.get(11..13).map_or(0.0, |f| {
            f.iter().filter_map(|v| v.parse::<f64>().ok()).sum()
        });
        let role = if name.starts_with("dgsp-verify") {
            0
        } else if name.starts_with("bench-servers") {
            1
        } else if name.starts_with("bench-load") {
            2
        } else {
            3
        };
        out[role] += ticks / 100.0;
    }
    out
}

fn verify_body(s: &Sample) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "message": B64.encode(&s.message),
        "signature": B64.encode(s.sig.to_bytes()),
    }))
    .unwrap()
}

fn valid_answer(body: &[u8]) -> bool {
    body.starts_with(br#"{"valid":true,"#)
}

fn all_valid_batch(body: &[u8]) -> bool {
    body.ends_with(br#""not_ok":0}"#)
}

/// Batch bodies of [`BATCH`] items cycling through `n` samples: `body` makes one from the
/// samples' indices.
fn batch_bodies(n: usize, body: impl Fn(&[usize]) -> Vec<u8>) -> Vec<Vec<u8>> {
    (0..n.div_ceil(BATCH))
        .map(|b| {
            let items: Vec<usize> = (0..BATCH).map(|j| (b * BATCH + j) % n).collect();
            body(&items)
        })
        .collect()
}

/// The verify pool's counters.
fn pool_stats(services: &Services) -> dgsp_gateway::pool::PoolStats {
    services.gateway.state().pool.stats()
}

/// What one closed-loop saturation run of single verifies saw, with the CPU it cost.
struct Saturation {
    out: Outcome,
    /// CPU seconds by role during the run.
    cpu: [f64; 4],
    /// Signatures per engine call during the run.
    per_call: f64,
}

async fn saturate(load: &Load, s: &Settings, services: &Services) -> Saturation {
    load.closed(s.concurrency, s.warmup()).await;
    let (cpu_before, stats_before) = (cpu_by_role(), pool_stats(services));
    let out = load.closed(s.concurrency, s.secs).await;
    let (cpu_after, stats_after) = (cpu_by_role(), pool_stats(services));
    let calls = stats_after.engine_calls - stats_before.engine_calls;
    Saturation {
        out,
        cpu: std::array::from_fn(|i| cpu_after[i] - cpu_before[i]),
        per_call: (stats_after.verified - stats_before.verified) as f64 / calls.max(1) as f64,
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` compatibility: nothing to list.
    }
    let s = Settings::from_env();
    let servers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(s.layout.http_threads)
        .thread_name("bench-servers")
        .enable_all()
        .build()
        .unwrap();
    let clients = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(s.client_threads)
        .thread_name("bench-load")
        .enable_all()
        .build()
        .unwrap();
    let verify_pool = rayon::ThreadPoolBuilder::new()
        .num_threads(s.cores)
        .thread_name(|i| format!("bench-raw-{i}"))
        .build()
        .unwrap();

    let (services, group, samples) = servers.block_on(setup(&s));
    let bad = samples
        .iter()
        .filter(|x| {
            group
                .verify_ignoring_revocation(&x.message, &x.sig)
                .is_err()
        })
        .count();
    assert_eq!(bad, 0, "signatures of the set that do not verify");

    let json: Vec<Vec<u8>> = samples.iter().map(verify_body).collect();
    let sig_bytes: Vec<Vec<u8>> = samples.iter().map(|x| x.sig.to_bytes()).collect();
    let binary: Vec<Vec<u8>> = samples
        .iter()
        .zip(&sig_bytes)
        .map(|(x, sig)| encode_binary(&[(&x.message, sig)], false))
        .collect();
    let json_batches = batch_bodies(samples.len(), |items| {
        let parts: Vec<&[u8]> = items.iter().map(|&k| json[k].as_slice()).collect();
        let mut body = br#"{"items":["#.to_vec();
        body.extend_from_slice(&parts.join(&b','));
        body.extend_from_slice(b"]}");
        body
    });
    let binary_batches = batch_bodies(samples.len(), |items| {
        let pairs: Vec<(&[u8], &[u8])> = items
            .iter()
            .map(|&k| (samples[k].message.as_slice(), sig_bytes[k].as_slice()))
            .collect();
        encode_binary(&pairs, true)
    });
    if SLOW.is_some() {
        // When the gateway's view changes (a new checkpoint or range), on the same clock.
        let state = services.gateway.state().clone();
        std::thread::spawn(move || {
            let mut last = None;
            loop {
                let v = dgsp_gateway::state::current(&state.view);
                let now = (
                    v.applied.seq,
                    v.checkpoint.as_ref().and_then(|c| c.time_unix_ms()),
                );
                if last != Some(now) {
                    eprintln!(
                        "view: at {:.3} s, applied {} checkpoint time {:?}",
                        T0.elapsed().as_secs_f64(),
                        now.0,
                        now.1
                    );
                    last = Some(now);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
    }
    let pool = &services.gateway.state().pool;
    let (workers, capacity) = (pool.workers(), pool.capacity());
    // Batches are refused whole when the queue cannot take all their items: stay within it.
    let batch_clients = (capacity / BATCH).clamp(1, 4);

    println!(
        "gateway benchmarks ({}, {} distinct signatures, {} cores, {:.1} s per run; gateway: {} HTTP threads, {workers} verify workers, queue {capacity}, coalescing wait {} µs; load generator: {} thread(s))\n",
        s.params,
        samples.len(),
        s.cores,
        s.secs.as_secs_f64(),
        s.layout.http_threads,
        s.coalesce.as_micros(),
        s.client_threads,
    );

    let addr = services.gateway.addr();
    let load = |path: &str, bodies: Vec<Vec<u8>>, content_type: &str, check| Load {
        conns: client::Pool::new(addr),
        requests: Arc::new(
            bodies
                .iter()
                .map(|b| client::request(path, content_type, b))
                .collect(),
        ),
        check,
        next: Arc::default(),
    };
    let mut singles = Vec::new();
    if env_or("DGSP_BENCH_JSON", 1u8) != 0 {
        singles.push((
            "JSON",
            load("/v1/verify", json, "application/json", valid_answer),
            load(
                "/v1/verify/batch",
                json_batches,
                "application/json",
                all_valid_batch,
            ),
        ));
    }
    if s.binary {
        singles.push((
            "binary",
            load("/v1/verify", binary, BINARY, valid_answer),
            load("/v1/verify/batch", binary_batches, BINARY, all_valid_batch),
        ));
    }
    // 0. The machine's own stalls, with nothing else running: the floor under any tail.
    let stalls = stalls::measure(s.cores, s.stall_secs);
    if let Some(rate) = s.tail_probe {
        println!(
            "the machine's own stalls (a thread spinning on each core, {:.1} s): {stalls}",
            s.stall_secs.as_secs_f64()
        );
        // The quick tail probe: the open loop alone at a given rate, then stop.
        clients.block_on(async {
            for (name, single, _) in &singles {
                single.open(rate, s.warmup()).await;
                let out = single.open(rate, s.secs).await;
                println!(
                    "{name}: open loop at {rate:.0} req/s: {:.0} answered/s, p50 / p99 {}, p99.9 {:.2} ms, max {:.2} ms; not ok {}",
                    out.rate(),
                    out.p50_p99(),
                    out.percentile(0.999).as_secs_f64() * 1e3,
                    out.percentile(1.0).as_secs_f64() * 1e3,
                    out.failures()
                );
            }
        });
        drop(clients);
        servers.block_on(services.shutdown());
        return;
    }
    // 1. Raw core verification, before and after the HTTP runs (their mean is the reference,
    // so a drift of the machine over the run shows instead of skewing the ratio silently).
    raw(&verify_pool, &group, &samples, s.warmup());
    let (raw_before, failed) = raw(&verify_pool, &group, &samples, s.secs);
    assert_eq!(failed, 0, "raw verification failures");
    let runs: Vec<_> = clients.block_on(async {
        let mut runs = Vec::new();
        for (name, single, batch) in &singles {
            // 2. Saturation, closed loop (also the full-load latency).
            let sat = saturate(single, &s, &services).await;
            // 3. Half of the saturation rate, open loop.
            let half = single.open(sat.out.rate() / 2.0, s.secs).await;
            // 4. Batches of 64.
            batch.closed(batch_clients, s.warmup()).await;
            let batch = batch.closed(batch_clients, s.secs).await;
            // 5. Overload: twice as many clients as the queue has slots; the excess must be
            // shed with 503 while accepted requests keep a bounded latency.
            let over = single.closed(2 * capacity, s.secs / 2).await;
            runs.push((*name, sat, half, batch, over));
        }
        runs
    });
    let (raw_after, failed) = raw(&verify_pool, &group, &samples, s.secs);
    assert_eq!(failed, 0, "raw verification failures");
    let raw_rate = (raw_before + raw_after) / 2.0;

    println!("| measurement | result |\n|---|---:|");
    println!(
        "| the machine's own stalls: a thread spinning on each core for {:.1} s, nothing else running | {stalls} |",
        s.stall_secs.as_secs_f64()
    );
    println!(
        "| raw core verify, rayon, {} threads (before / after the HTTP runs) | {raw_rate:.0} sig/s ({raw_before:.0} / {raw_after:.0}) |",
        s.cores
    );
    for (name, sat, half, batch, over) in &runs {
        report(&s, name, raw_rate, sat, half, batch, batch_clients);
        println!(
            "| {name}: overload, {} clients (queue {capacity}): accepted / shed with 503 | {:.0} req/s / {:.0} req/s |",
            2 * capacity,
            over.rate(),
            over.shed as f64 / over.elapsed.as_secs_f64()
        );
        println!(
            "| {name}: overload: p50 / p99 of accepted requests; other failures | {}; {} |",
            over.p50_p99(),
            over.other + over.errors + over.bad
        );
    }

    drop(clients);
    servers.block_on(services.shutdown());
    if s.strict {
        // The smoke run's check: every request answered as it should have been (only the
        // overload run may shed), and each kind of run answered some.
        for (name, sat, half, batch, over) in &runs {
            for (what, out) in [
                ("saturation", &sat.out),
                ("half load", half),
                ("batch", batch),
            ] {
                assert!(
                    out.good > 0 && out.failed() == 0 && out.shed == 0,
                    "{name} {what}: {} good; shed / other / transport / not valid: {}",
                    out.good,
                    out.failures()
                );
            }
            assert!(
                over.good > 0 && over.failed() == 0,
                "{name} overload: {}",
                over.failures()
            );
        }
    }
}

fn report(
    s: &Settings,
    name: &str,
    raw_rate: f64,
    sat: &Saturation,
    half: &Outcome,
    batch: &Outcome,
    batch_clients: usize,
) {
    let (out, cpu) = (&sat.out, &sat.cpu);
    println!(
        "| {name}: POST /v1/verify, {} clients, closed loop | {:.0} req/s |",
        s.concurrency,
        out.rate()
    );
    println!(
        "| {name}: gateway / raw (target ≥ 0.95) | {:.2} |",
        out.rate() / raw_rate
    );
    let wall = out.elapsed.as_secs_f64() * s.cores as f64;
    let share = |c: f64| 100.0 * c / wall;
    println!(
        "| {name}: CPU during saturation: verify pool / gateway HTTP runtime / load generator / other | {:.0}% / {:.0}% / {:.0}% / {:.0}% |",
        share(cpu[0]),
        share(cpu[1]),
        share(cpu[2]),
        share(cpu[3])
    );
    let per_req = |c: f64| 1e6 * c / out.good.max(1) as f64;
    println!(
        "| {name}: CPU per request: HTTP runtime / verify pool / load generator | {:.0} µs / {:.0} µs / {:.0} µs |",
        per_req(cpu[1]),
        per_req(cpu[0]),
        per_req(cpu[2])
    );
    println!(
        "| {name}: signatures per engine call at saturation (coalescing) | {:.2} |",
        sat.per_call
    );
    let left = (wall - cpu[2]) / wall;
    println!(
        "| {name}: gateway / raw on the CPU the load generator leaves ({:.0}%) | {:.2} |",
        100.0 * left,
        out.rate() / (raw_rate * left)
    );
    println!(
        "| {name}: latency p50 / p99 at full load (closed loop) | {} |",
        out.p50_p99()
    );
    println!(
        "| {name}: latency p50 / p99 at half load (open loop, {:.0} req/s offered, {:.0} answered) | {} |",
        out.rate() / 2.0,
        half.rate(),
        half.p50_p99()
    );
    println!(
        "| {name}: POST /v1/verify/batch, {BATCH} items, {batch_clients} clients | {:.0} sig/s |",
        batch.rate() * BATCH as f64
    );
    println!(
        "| {name}: batch / raw | {:.2} |",
        batch.rate() * BATCH as f64 / raw_rate
    );
    println!(
        "| {name}: batch latency p50 / p99 (per {BATCH}-item request) | {} |",
        batch.p50_p99()
    );
    println!(
        "| {name}: not ok, saturation / half load / batch (503 shed / other status / transport error / 200 not valid) | {} · {} · {} |",
        out.failures(),
        half.failures(),
        batch.failures()
    );
}
