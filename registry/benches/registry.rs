//! Registry throughput on real RocksDB (synced WAL), printed as a table:
//!
//!     cargo bench -p dgsp-registry --bench registry
//!
//! - durable joins/s through the writer with 1 and 64 concurrent submitters, and over HTTP
//!   on loopback with 64 concurrent clients;
//! - certificate issuance over HTTP (sha2-128f, batches of 16);
//! - one issuance of 1024 certificates: `Manager::certify` in one call against an issuance
//!   job (chunks checked for cancellation), to show the chunking costs nothing noticeable;
//! - revocation of a member holding 100 000 certificates;
//! - revocation latency under a steady stream (20/s over HTTP): until acknowledged, and
//!   until a signed checkpoint covers it;
//! - replay (rebuild) speed in events/s;
//! - what the journal costs (`journal` rows): durable joins/s and their latency through
//!   the writer with no journal, with the journal in a local directory and in S3
//!   (SeaweedFS on loopback, `scripts/s3.sh`, started by the bench; `DGSP_SKIP_S3=1` leaves
//!   that row out, saying so), side by side in one run.
//!
//! - publication latency (`publication` rows): from a join's acknowledgement to a served
//!   checkpoint covering it, without witnesses and with the two real witnesses of
//!   `scripts/witnesses.sh` (omniwitness and litewitness, 2-of-2, on loopback), side by side.
//!
//! `cargo bench -p dgsp-registry --bench registry -- WORD` runs only the rows whose label
//! contains `WORD`.

use std::sync::Arc;
use std::time::Instant;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::{Manager, ParamSet, WotsPk};
use dgsp_registry::api;
use dgsp_registry::issuance::{IssuanceConfig, Issuer, Job};
use dgsp_registry::publisher::PublisherConfig;
use dgsp_registry::server;
use dgsp_registry::store::Store;
use dgsp_registry::writer::{Command, Writer};
use rand_chacha::rand_core::SeedableRng;
use serde_json::{json, Value};

const TOKEN: &str = "bench-admin-token-0000";

fn fresh() -> (tempfile::TempDir, Arc<Store>, Arc<Manager>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    let manager = Arc::new(Manager::generate(
        ParamSet::Sha2_128f,
        &mut rand_chacha::ChaCha20Rng::seed_from_u64(1),
    ));
    (dir, store, manager)
}

/// Drops the last writer handle and waits for its thread, so RocksDB closes.
async fn stop(writer: Writer, thread: std::thread::JoinHandle<()>) {
    drop(writer);
    tokio::task::spawn_blocking(move || thread.join().unwrap())
        .await
        .unwrap();
}

async fn joins_via_writer(concurrency: usize, total: usize) -> f64 {
    let (_dir, store, manager) = fresh();
    let (writer, thread) = Writer::start(store, manager, Default::default()).unwrap();
    let start = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|c| {
            let w = writer.clone();
            tokio::spawn(async move {
                for i in 0..total / concurrency {
                    let cmd = Command::Join {
                        usernames: vec![format!("c{c}-{i}")],
                    };
                    w.submit(cmd, None).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let rate = total as f64 / start.elapsed().as_secs_f64();
    stop(writer, thread).await;
    rate
}

/// Where [`joins_journaled`] keeps its journal.
#[derive(Clone, Copy)]
enum JournalAt {
    Nowhere,
    LocalDir,
    S3,
}

/// Durable joins through the writer with `concurrency` submitters, the journal `at`:
/// "rate/s, p50 / p99 / max latency".
async fn joins_journaled(at: JournalAt, concurrency: usize, total: usize) -> String {
    use dgsp_registry::journal::{Journal, JournalKey, Lease};
    let (dir, store, manager) = fresh();
    let tiles: Option<Arc<dyn dgsp_tilestore::TileStore>> = match at {
        JournalAt::Nowhere => None,
        JournalAt::LocalDir => Some(Arc::new(
            dgsp_tilestore::LocalDir::open(dir.path().join("bucket")).unwrap(),
        )),
        JournalAt::S3 => match dgsp_tilestore::test_server::s3_env("journal bench") {
            Some(env) => Some(Arc::new(
                dgsp_tilestore::S3::open(env.config("journal-bench")).unwrap(),
            )),
            None => return "skipped (DGSP_SKIP_S3=1)".into(),
        },
    };
    let journal = match tiles {
        Some(tiles) => {
            let ttl = std::time::Duration::from_secs(15);
            let lease = Lease::acquire(tiles.clone(), ttl, || async {}).await;
            let key = Arc::new(JournalKey::derive(manager.secret_key()));
            let keeper = tokio::spawn(lease.clone().keep());
            Some((
                Arc::new(Journal::new(
                    tiles,
                    key,
                    lease,
                    tokio::runtime::Handle::current(),
                )),
                keeper,
            ))
        }
        None => None,
    };
    let (writer, thread) = Writer::start_journaled(
        store,
        manager,
        Default::default(),
        journal.as_ref().map(|j| j.0.clone()),
    )
    .unwrap();
    let start = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|c| {
            let w = writer.clone();
            tokio::spawn(async move {
                let mut lat = Vec::new();
                for i in 0..total / concurrency {
                    let cmd = Command::Join {
                        usernames: vec![format!("c{c}-{i}")],
                    };
                    let t = Instant::now();
                    w.submit(cmd, None).await.unwrap();
                    lat.push(t.elapsed().as_secs_f64() * 1e3);
                }
                lat
            })
        })
        .collect();
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.unwrap());
    }
    let rate = total as f64 / start.elapsed().as_secs_f64();
    stop(writer, thread).await;
    if let Some((_, keeper)) = journal {
        keeper.abort();
    }
    lat.sort_by(f64::total_cmp);
    let q = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
    format!(
        "{rate:.0}/s; p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        q(0.5),
        q(0.99),
        lat[lat.len() - 1]
    )
}

struct Server {
    base: String,
    running: server::Running,
    _dir: tempfile::TempDir,
}

/// A fresh group served on loopback with `publisher` (`Default::default()`: the usual
/// cadence).
async fn serve(publisher: PublisherConfig) -> Server {
    let (dir, store, manager) = fresh();
    serve_group(dir, store, manager, publisher).await
}

/// [`serve`] for a group [`fresh`] made (its manager known to the caller beforehand).
async fn serve_group(
    dir: tempfile::TempDir,
    store: Arc<Store>,
    manager: Arc<Manager>,
    publisher: PublisherConfig,
) -> Server {
    store
        .create_group(manager.public_key(), dgsp_wire::log::now_ms())
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = server::Config {
        admin_token: TOKEN.into(),
        auditor_token: None,
        body_limit: api::DEFAULT_BODY_LIMIT,
        publisher,
        feed_bytes_in_flight: dgsp_registry::feed::DEFAULT_BYTES_IN_FLIGHT,
        backups: None,
        tiles: None,
    };
    let running = server::start(store, manager, listener, config)
        .await
        .unwrap();
    Server {
        base: running.url(),
        running,
        _dir: dir,
    }
}

impl Server {
    async fn shutdown(self) {
        self.running.shutdown().await.unwrap();
    }
}

/// `GET {base}/v1/checkpoint`: the newest signed checkpoint.
async fn checkpoint(client: &reqwest::Client, base: &str) -> reqwest::Result<Value> {
    client
        .get(format!("{base}/v1/checkpoint"))
        .send()
        .await?
        .json()
        .await
}

async fn joins_via_http(concurrency: usize, total: usize) -> f64 {
    let s = serve(Default::default()).await;
    let client = reqwest::Client::new();
    let start = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|c| {
            let (client, base) = (client.clone(), s.base.clone());
            tokio::spawn(async move {
                for i in 0..total / concurrency {
                    let r = client
                        .post(format!("{base}/admin/v1/members"))
                        .bearer_auth(TOKEN)
                        .json(&json!({"username": format!("h{c}-{i}")}))
                        .send()
                        .await
                        .unwrap();
                    assert!(r.status().is_success());
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let rate = total as f64 / start.elapsed().as_secs_f64();
    s.shutdown().await;
    rate
}

async fn issuance_via_http(batches: usize, per_batch: usize) -> f64 {
    let s = serve(Default::default()).await;
    let client = reqwest::Client::new();
    let r: Value = client
        .post(format!("{}/admin/v1/members", s.base))
        .bearer_auth(TOKEN)
        .json(&json!({"username": "m"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let start = Instant::now();
    let tasks: Vec<_> = (0..4)
        .map(|t| {
            let (client, base, cid) = (client.clone(), s.base.clone(), r["cid_star"].clone());
            tokio::spawn(async move {
                for b in 0..batches / 4 {
                    let pks: Vec<String> = (0..per_batch)
                        .map(|k| B64.encode([(t * 64 + b + k) as u8; 16]))
                        .collect();
                    let r = client
                        .post(format!("{base}/admin/v1/members/0/certificates"))
                        .bearer_auth(TOKEN)
                        .json(&json!({"cid_star": cid, "wots_pks": pks}))
                        .send()
                        .await
                        .unwrap();
                    assert!(r.status().is_success());
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let rate = (batches * per_batch) as f64 / start.elapsed().as_secs_f64();
    s.shutdown().await;
    rate
}

/// Certificates/s of one 1024-key issuance, best of three: signed by `Manager::certify` in
/// one parallel call, or by an issuance job (chunks, cancellation checks between them).
async fn certify_1024(job: bool) -> f64 {
    let (_dir, _store, manager) = fresh();
    let pks: Vec<WotsPk> = (0..1024u32)
        .map(|k| WotsPk::from_slice(ParamSet::Sha2_128f, &[k.to_le_bytes(); 4].concat()).unwrap())
        .collect();
    let issuer = Issuer::new(manager.clone(), IssuanceConfig::default());
    let mut best = 0f64;
    for round in 0..3u64 {
        let start = Instant::now();
        if job {
            let job = Job {
                id: 0,
                first: round * 1024,
                wots_pks: pks.clone(),
                retryable: false,
            };
            assert_eq!(issuer.certify(job).await.unwrap().len(), 1024);
        } else {
            let (m, pks) = (manager.clone(), pks.clone());
            let certs = tokio::task::spawn_blocking(move || m.certify(0, round * 1024, &pks))
                .await
                .unwrap();
            assert_eq!(certs.len(), 1024);
        }
        best = best.max(1024.0 / start.elapsed().as_secs_f64());
    }
    best
}

async fn revoke_100k() -> f64 {
    let (_dir, store, manager) = fresh();
    let (writer, thread) = Writer::start(store.clone(), manager, Default::default()).unwrap();
    writer
        .submit(
            Command::Join {
                usernames: vec!["big".into()],
            },
            None,
        )
        .await
        .unwrap();
    for _ in 0..10 {
        let digests = (0..10_000).map(|i| format!("{i:064x}")).collect();
        writer
            .submit(
                Command::Issue {
                    id: 0,
                    count: 10_000,
                    wots_pk_digests: digests,
                },
                None,
            )
            .await
            .unwrap();
    }
    let start = Instant::now();
    writer
        .submit(Command::Revoke { id: 0 }, None)
        .await
        .unwrap();
    let revoke_ms = start.elapsed().as_secs_f64() * 1e3;
    stop(writer, thread).await;
    revoke_ms
}

/// Replay of a typical log of 100 000 events: joins, each followed by an issuance of 4
/// certificates, and every 10th member revoked.
async fn replay() -> f64 {
    let (_dir, store, manager) = fresh();
    let (writer, thread) = Writer::start(store.clone(), manager, Default::default()).unwrap();
    let mut id = 0u64;
    while store.head().unwrap().seq < 100_000 {
        let batch: Vec<_> = (id..id + 200)
            .map(|m| {
                let w = writer.clone();
                tokio::spawn(async move {
                    let join = Command::Join {
                        usernames: vec![format!("m{m}")],
                    };
                    w.submit(join, None).await.unwrap();
                    let digests = (0..4).map(|i| format!("{i:064x}")).collect();
                    let issue = Command::Issue {
                        id: m,
                        count: 4,
                        wots_pk_digests: digests,
                    };
                    w.submit(issue, None).await.unwrap();
                    if m % 10 == 0 {
                        w.submit(Command::Revoke { id: m }, None).await.unwrap();
                    }
                })
            })
            .collect();
        for t in batch {
            t.await.unwrap();
        }
        id += 200;
    }
    stop(writer, thread).await;
    let mut store = Arc::try_unwrap(store).ok().expect("sole owner");
    let events = store.head().unwrap().seq;
    let start = Instant::now();
    store.rebuild(|_, _| {}).unwrap();
    events as f64 / start.elapsed().as_secs_f64()
}

/// Revocations under a steady stream: `rate` per second over HTTP for `secs` (open loop:
/// each sent at its time whatever the others do), each of a member holding one certificate.
/// Per revocation, the time until it is acknowledged (durable) and until the registry's
/// newest signed checkpoint covers it (`GET /v1/checkpoint` polled every 2 ms): what a
/// revoking operator waits for, and what every follower waits for.
async fn revocation_latency(rate: f64, secs: f64) -> String {
    let s = serve(Default::default()).await;
    let n = (rate * secs) as usize;
    let writer = s.running.state.writer.clone();
    let usernames = (0..n).map(|i| format!("r{i}")).collect();
    writer
        .submit(Command::Join { usernames }, None)
        .await
        .unwrap();
    for id in 0..n as u64 {
        let cmd = Command::Issue {
            id,
            count: 1,
            wots_pk_digests: vec![],
        };
        writer.submit(cmd, None).await.unwrap();
    }
    drop(writer);
    let client = reqwest::Client::new();
    // Covered sizes as they change: (when, size).
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let watcher = {
        let (client, base) = (client.clone(), s.base.clone());
        tokio::spawn(async move {
            let mut seen = Vec::new();
            while !*stopped.borrow_and_update() {
                if let Ok(v) = checkpoint(&client, &base).await {
                    let size = v["size"].as_u64().unwrap_or(0);
                    if seen.last().is_none_or(|(_, s)| *s != size) {
                        seen.push((Instant::now(), size));
                    }
                }
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            seen
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let start = tokio::time::Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let (client, base) = (client.clone(), s.base.clone());
            let at = start + std::time::Duration::from_secs_f64(i as f64 / rate);
            tokio::spawn(async move {
                tokio::time::sleep_until(at).await;
                let sent = Instant::now();
                let r = client
                    .post(format!("{base}/admin/v1/members/{i}/revoke"))
                    .bearer_auth(TOKEN)
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success());
                let v: Value = r.json().await.unwrap();
                (sent, Instant::now(), v["seq"].as_u64().unwrap())
            })
        })
        .collect();
    let mut done = Vec::with_capacity(n);
    for t in tasks {
        done.push(t.await.unwrap());
    }
    let last_seq = done.iter().map(|d| d.2).max().unwrap_or(0);
    // Until the last revocation is covered (or 30 s).
    let deadline = Instant::now() + std::time::Duration::from_secs(30);
    while Instant::now() < deadline {
        let v = checkpoint(&client, &s.base).await.unwrap();
        if v["size"].as_u64().unwrap_or(0) >= last_seq {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    stop.send_replace(true);
    let seen = watcher.await.unwrap();
    let mut ack: Vec<f64> = done
        .iter()
        .map(|(sent, acked, _)| (*acked - *sent).as_secs_f64() * 1e3)
        .collect();
    let mut covered: Vec<f64> = done
        .iter()
        .map(|(sent, _, seq)| {
            seen.iter()
                .find(|(_, size)| size >= seq)
                .map_or(f64::INFINITY, |(when, _)| {
                    when.saturating_duration_since(*sent).as_secs_f64() * 1e3
                })
        })
        .collect();
    let pct = |v: &mut Vec<f64>, p: f64| {
        v.sort_by(f64::total_cmp);
        v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
    };
    let out = format!(
        "acknowledged p50 {:.1} ms, p99 {:.1} ms; in a signed checkpoint p50 {:.1} ms, p99 {:.1} ms ({n} revocations)",
        pct(&mut ack, 0.5),
        pct(&mut ack, 0.99),
        pct(&mut covered, 0.5),
        pct(&mut covered, 0.99)
    );
    s.shutdown().await;
    out
}

/// CPU time of this process (user + system), from `/proc/self/stat`, in milliseconds.
fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|i| fields.get(*i).and_then(|f| f.parse::<f64>().ok()))
        .sum();
    ticks * 10.0 // USER_HZ is 100 on Linux
}

/// The cadence's cost with nothing written: a registry signing a checkpoint every 100 ms
/// for 5 s; CPU milliseconds of the whole process per signed note.
async fn cadence_cost() -> String {
    let s = serve(PublisherConfig {
        checkpoint_interval: std::time::Duration::from_millis(100),
        ..Default::default()
    })
    .await;
    let client = reqwest::Client::new();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let (cpu0, mut times) = (cpu_ms(), std::collections::HashSet::new());
    let end = Instant::now() + std::time::Duration::from_secs(5);
    while Instant::now() < end {
        let v = checkpoint(&client, &s.base).await.unwrap();
        times.insert(v["time_unix_ms"].as_u64().unwrap_or(0));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let cpu = cpu_ms() - cpu0;
    s.shutdown().await;
    format!(
        "{:.1} ms CPU per note ({} notes in 5 s, the 250 polls included)",
        cpu / times.len().max(1) as f64,
        times.len()
    )
}

/// From a join's acknowledgement to a served checkpoint covering it (every join waits for
/// its checkpoint: the publisher's latency, not its throughput), `n` joins, with the two
/// real witnesses of `scripts/witnesses.sh` under their 2-of-2 policy or without
/// witnesses; `None` when the witnesses are skipped (`DGSP_SKIP_WITNESSES=1`, said).
async fn publication_latency(witnessed: bool, n: usize) -> String {
    use dgsp_registry::witnessing::{LogKey, Witnesses};
    let (dir, store, manager) = fresh();
    let mut publisher = PublisherConfig::default();
    let mut _witnesses = None;
    if witnessed {
        let log_key = LogKey::derive(&manager, 0, dgsp_wire::log::now_ms()).unwrap();
        let Some(w) = dgsp_witness::test_server::TestWitnesses::start(
            "publication latency bench",
            &[&log_key.vkey()],
        ) else {
            return "skipped (DGSP_SKIP_WITNESSES=1)".into();
        };
        let policy = std::fs::read_to_string(&w.policy_path).unwrap();
        let ws = Witnesses::new(
            Arc::new(log_key),
            &policy,
            std::time::Duration::from_secs(5),
            Arc::new(dgsp_http::clock::SystemClock),
        )
        .unwrap();
        publisher.witnesses = Some(Arc::new(ws));
        _witnesses = Some(w);
    }
    let s = serve_group(dir, store, manager, publisher).await;
    let (client, base) = (reqwest::Client::new(), s.base.clone());
    let mut ms = Vec::with_capacity(n);
    let mut bytes = 0;
    for i in 0..n {
        let r = client
            .post(format!("{base}/admin/v1/members"))
            .bearer_auth(TOKEN)
            .json(&json!({"username": format!("p{i}")}))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
        let acked = Instant::now();
        let seq = s.running.state.store.head().unwrap().seq;
        loop {
            if let Ok(v) = checkpoint(&client, &base).await {
                let covered = v["size"].as_u64().unwrap_or(0) >= seq;
                if covered && (!witnessed || v["witnessed"].is_string()) {
                    bytes = v["witnessed"].as_str().map_or(0, str::len);
                    break;
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        ms.push(acked.elapsed().as_secs_f64() * 1e3);
    }
    s.shutdown().await;
    ms.sort_by(f64::total_cmp);
    let extra = if witnessed {
        format!(", witnessed note {bytes} bytes")
    } else {
        String::new()
    };
    format!(
        "p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms ({n} joins){extra}",
        ms[n / 2],
        ms[n * 9 / 10],
        ms[n - 1]
    )
}

/// Milliseconds per signed checkpoint note (median of `n`) for `params`: the publisher's
/// cost per cadence tick, on its one blocking thread.
async fn checkpoint_sign_ms(params: ParamSet, n: usize) -> f64 {
    use dgsp_core::checkpoint::{origin_for, Checkpoint};
    let m = Manager::generate(params, &mut rand_core::OsRng);
    let mut ms: Vec<f64> = (0..n)
        .map(|i| {
            let cp = Checkpoint {
                origin: origin_for(m.public_key()),
                size: 1000 + i as u64,
                root: [7; 32],
                time_unix_ms: Some(1_764_000_000_000 + i as u64),
                snapshot: None,
            };
            let start = Instant::now();
            std::hint::black_box(m.sign_checkpoint(&cp));
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    ms[n / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` compatibility: nothing to list.
    }
    println!("registry benchmarks (RocksDB, WAL synced per commit group, sha2-128f)\n");
    println!("| measurement | result |\n|---|---:|");
    let only: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wanted = |label: &str| only.as_deref().is_none_or(|o| label.contains(o));
    macro_rules! row {
        ($label:expr, $fmt:literal, $value:expr) => {
            if wanted($label) {
                println!(concat!("| {} | ", $fmt, " |"), $label, $value.await);
            }
        };
    }
    row!(
        "checkpoint signature, sha2-128f (median of 20)",
        "{:.1} ms",
        checkpoint_sign_ms(ParamSet::Sha2_128f, 20)
    );
    row!(
        "checkpoint signature, shake-256f (median of 10)",
        "{:.1} ms",
        checkpoint_sign_ms(ParamSet::Shake256f, 10)
    );
    row!(
        "publication latency (ack to covering checkpoint), no witnesses",
        "{}",
        publication_latency(false, 40)
    );
    row!(
        "publication latency (ack to covering checkpoint), witnesses: omniwitness + litewitness 2-of-2, loopback",
        "{}",
        publication_latency(true, 40)
    );
    row!(
        "durable joins/s, writer, 1 client",
        "{:.0}",
        joins_via_writer(1, 2_000)
    );
    row!(
        "durable joins/s, writer, 64 clients",
        "{:.0}",
        joins_via_writer(64, 64_000)
    );
    for (at, name) in [
        (JournalAt::Nowhere, "no journal"),
        (JournalAt::LocalDir, "journal in a local directory"),
        (JournalAt::S3, "journal in S3 (SeaweedFS, loopback)"),
    ] {
        for (clients, total) in [(1, 1_000), (64, 32_000)] {
            let label = format!("durable joins, writer, {clients} client(s), {name}");
            row!(&label, "{}", joins_journaled(at, clients, total));
        }
    }
    row!(
        "durable joins/s, HTTP, 1 client",
        "{:.0}",
        joins_via_http(1, 2_000)
    );
    row!(
        "durable joins/s, HTTP, 64 clients",
        "{:.0}",
        joins_via_http(64, 32_000)
    );
    row!(
        "certificates/s, HTTP, batches of 16",
        "{:.0}",
        issuance_via_http(16, 16)
    );
    row!(
        "certificates/s, 1024 keys, Manager::certify in one call",
        "{:.0}",
        certify_1024(false)
    );
    row!(
        "certificates/s, 1024 keys, issuance job (chunked, cancellable)",
        "{:.0}",
        certify_1024(true)
    );
    row!(
        "revoke a member with 100 000 certificates",
        "{:.0} ms",
        revoke_100k()
    );
    row!(
        "revocations at 20/s over HTTP for 10 s (steady stream)",
        "{}",
        revocation_latency(20.0, 10.0)
    );
    row!(
        "checkpoint cadence at 100 ms, nothing written (steady)",
        "{}",
        cadence_cost()
    );
    row!(
        "replay (rebuild) events/s, 100 000 typical events",
        "{:.0}",
        replay()
    );
}
