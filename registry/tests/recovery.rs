//! The registry never serves what it cannot stand behind.
//!
//! - `dgsp-registry rebuild` `kill -9`ed at random points: afterwards the projections are
//!   either refused (and `serve` finishes the rebuild first) or equal a clean rebuild; never
//!   a reused member id or a lost revocation.
//! - An injected storage failure in the writer or the publisher halts the registry: it goes
//!   not-ready and refuses writes (503), no acknowledged write is lost, a restart recovers.

use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dgsp_core::Manager;
use dgsp_registry::publisher::PublisherConfig;
use dgsp_registry::server;
use dgsp_registry::store::{ProjectionState, Store};
use dgsp_registry::writer::{Command as Write, Writer};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde_json::{json, Value};
use support::polls;

const PASSPHRASE: &str = "recovery test passphrase";
const TOKEN: &str = "recovery-test-admin-token";
const MEMBERS: u64 = 120_000;
const REVOKED: u64 = 7;

fn registry(args: &[&str], data: &Path) -> Command {
    let mut c = Command::new(support::BIN);
    c.args(args)
        .arg("--data")
        .arg(data)
        .env("DGSP_KEY_PASSPHRASE", PASSPHRASE)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// A group of `MEMBERS` members, one of them (id `REVOKED`) revoked with 20 certificates.
fn populate(data: &Path) {
    support::init(data, PASSPHRASE);
    let store = Arc::new(Store::open(&data.join("db")).unwrap());
    let manager = support::manager_key(data, PASSPHRASE);
    let (writer, thread) = Writer::start(store.clone(), manager, Default::default()).unwrap();
    for chunk in 0..MEMBERS / 10_000 {
        let usernames = (0..10_000)
            .map(|i| format!("m{}", chunk * 10_000 + i))
            .collect();
        writer
            .submit_blocking(Write::Join { usernames }, None)
            .unwrap();
    }
    let issue = Write::Issue {
        id: REVOKED,
        count: 20,
        wots_pk_digests: vec![],
    };
    writer.submit_blocking(issue, None).unwrap();
    writer
        .submit_blocking(Write::Revoke { id: REVOKED }, None)
        .unwrap();
    drop(writer);
    thread.join().unwrap();
}

#[test]
fn an_interrupted_rebuild_is_never_served_and_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("group");
    populate(&data);
    let clean = {
        let store = Store::open(&data.join("db")).unwrap();
        assert_eq!(store.projections().unwrap(), ProjectionState::Current);
        store.dump_views().unwrap()
    };

    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let (mut interrupted, mut finished) = (0, 0);
    for round in 0..6 {
        let mut child = registry(&["rebuild"], &data).spawn().unwrap();
        let delay = Duration::from_millis(rng.next_u64() % 400);
        let started = Instant::now();
        while started.elapsed() < delay && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = child.kill();
        child.wait().unwrap();

        let store = Store::open(&data.join("db")).unwrap();
        match store.projections().unwrap() {
            ProjectionState::Current => {
                finished += 1;
                assert_eq!(store.dump_views().unwrap(), clean, "round {round}");
            }
            state => {
                interrupted += 1;
                let refusal = store.projections_current().unwrap_err().to_string();
                assert!(
                    refusal.contains("rebuild"),
                    "round {round}: {state}: {refusal}"
                );
            }
        }
    }
    eprintln!("rebuild killed: {interrupted} interrupted, {finished} had finished");

    // `serve` finishes whatever is left before serving; then the next join gets a new id and
    // the revoked member is still revoked.
    let port = support::free_port();
    let mut serve = registry(&["serve", "--listen", &format!("127.0.0.1:{port}")], &data)
        .env("DGSP_ADMIN_TOKEN", TOKEN)
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let joined = rt.block_on(async {
        let client = reqwest::Client::new();
        let (within, every) = (Duration::from_secs(120), Duration::from_millis(50));
        support::wait_serving(&client, &base, within, every).await;
        let r = client
            .post(format!("{base}/admin/v1/members"))
            .bearer_auth(TOKEN)
            .json(&json!({"username": "after-the-crash"}))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.status());
        r.json::<Value>().await.unwrap()
    });
    assert_eq!(joined["id"].as_u64(), Some(MEMBERS), "no id is reused");
    let _ = Command::new("kill")
        .args(["-TERM", &serve.id().to_string()])
        .status();
    assert!(serve.wait().unwrap().success());

    let store = Store::open(&data.join("db")).unwrap();
    assert_eq!(store.projections().unwrap(), ProjectionState::Current);
    let revoked = store.member(REVOKED).unwrap().unwrap();
    assert!(!revoked.active, "the revocation is not lost");
    assert_eq!(store.count("revoked").unwrap(), 20);
    assert_eq!(store.count("members").unwrap(), MEMBERS + 1);
}

/// A new sha2-128f group in `db`; returns its manager.
fn new_group(db: &Path) -> Arc<Manager> {
    let manager = Arc::new(Manager::generate(
        dgsp_core::ParamSet::Sha2_128f,
        &mut rand_core::OsRng,
    ));
    Store::open(db)
        .unwrap()
        .create_group(manager.public_key(), 1)
        .unwrap();
    manager
}

struct Live {
    running: server::Running,
    store: Arc<Store>,
    client: reqwest::Client,
}

async fn start(db: &Path, manager: &Arc<Manager>) -> Live {
    let store = Arc::new(Store::open(db).unwrap());
    let config = server::Config {
        publisher: PublisherConfig {
            checkpoint_interval: Duration::from_secs(1),
            ..PublisherConfig::default()
        },
        ..support::config(TOKEN)
    };
    let running = support::serve(store.clone(), manager.clone(), config).await;
    Live {
        running,
        store,
        client: reqwest::Client::new(),
    }
}

impl Live {
    async fn join(&self, name: &str) -> reqwest::Response {
        self.client
            .post(format!("{}/admin/v1/members", self.running.url()))
            .bearer_auth(TOKEN)
            .json(&json!({ "username": name }))
            .send()
            .await
            .unwrap()
    }

    async fn ready(&self) -> reqwest::StatusCode {
        support::readyz(&self.client, &self.running.url()).await.0
    }

    /// The registry goes not-ready after the failure.
    async fn wait_not_ready(&self) {
        let (url, halted) = (self.running.url(), reqwest::StatusCode::SERVICE_UNAVAILABLE);
        support::wait_readyz(&self.client, &url, halted, polls(500, 10)).await;
    }

    async fn assert_refuses_writes(&self) {
        let r = self.join("refused").await;
        assert_eq!(r.status(), reqwest::StatusCode::SERVICE_UNAVAILABLE);
        assert!(r.headers().contains_key("retry-after"));
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["type"], "urn:dgsp:problem:registry-halted", "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_commit_halts_writes_and_a_restart_recovers() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let manager = new_group(&db);
    let live = start(&db, &manager).await;
    assert!(live.join("alice").await.status().is_success());
    assert_eq!(live.ready().await, reqwest::StatusCode::OK);

    live.store.fail_write_after(1);
    let failed = live.join("bob").await;
    assert_eq!(failed.status(), reqwest::StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = failed.json().await.unwrap();
    // The publisher may have hit the injected fault first; either way the write fails.
    assert!(
        [
            "urn:dgsp:problem:write-outcome-unknown",
            "urn:dgsp:problem:registry-halted"
        ]
        .contains(&body["type"].as_str().unwrap()),
        "{body}"
    );
    live.wait_not_ready().await;
    live.assert_refuses_writes().await;
    let metrics = support::get_text(&live.client, format!("{}/metrics", live.running.url())).await;
    assert!(metrics.contains("\ndgsp_registry_halted 1\n"), "{metrics}");
    live.running.shutdown().await.unwrap();
    drop(live.store);

    let live = start(&db, &manager).await;
    assert_eq!(live.ready().await, reqwest::StatusCode::OK);
    assert!(
        live.store.id_of("alice").unwrap().is_some(),
        "the acknowledged join is kept"
    );
    assert!(live.join("carol").await.status().is_success());
    live.running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_publisher_halts_the_registry() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let manager = new_group(&db);
    let live = start(&db, &manager).await;
    assert!(live.join("alice").await.status().is_success());
    // Let the publisher catch up, then make its next write (the cadence note, within 1 s,
    // with no request in flight) fail.
    tokio::time::sleep(Duration::from_millis(500)).await;
    live.store.fail_write_after(1);
    live.wait_not_ready().await;
    live.assert_refuses_writes().await;
    live.running.shutdown().await.unwrap();
    drop(live.store);

    let live = start(&db, &manager).await;
    assert_eq!(live.ready().await, reqwest::StatusCode::OK);
    assert!(live.store.id_of("alice").unwrap().is_some());
    live.running.shutdown().await.unwrap();
}
