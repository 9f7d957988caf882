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
//! - replay (rebuild) speed in events/s.
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

struct Server {
    base: String,
    running: server::Running,
    _dir: tempfile::TempDir,
}

async fn serve() -> Server {
    let (dir, store, manager) = fresh();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = server::Config {
        admin_token: TOKEN.into(),
        auditor_token: None,
        body_limit: api::DEFAULT_BODY_LIMIT,
        publisher: Default::default(),
        feed_bytes_in_flight: dgsp_registry::feed::DEFAULT_BYTES_IN_FLIGHT,
        backups: None,
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

async fn joins_via_http(concurrency: usize, total: usize) -> f64 {
    let s = serve().await;
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
    let s = serve().await;
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
                head: [7; 32],
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
        "durable joins/s, writer, 1 client",
        "{:.0}",
        joins_via_writer(1, 2_000)
    );
    row!(
        "durable joins/s, writer, 64 clients",
        "{:.0}",
        joins_via_writer(64, 64_000)
    );
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
        "replay (rebuild) events/s, 100 000 typical events",
        "{:.0}",
        replay()
    );
}
