//! Crash safety of the real binary: concurrent joins, issuances and revocations while the
//! registry is `kill -9`ed at random moments, 20 times. Afterwards every acknowledged write
//! is in the log, the chain verifies, and the projections equal a rebuild from the log.

mod support;

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_registry::store::Store;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde_json::{json, Value};

const TOKEN: &str = "crash-test-admin-token";
const PASSPHRASE: &str = "crash test passphrase";

fn start(data: &std::path::Path, port: u16) -> Child {
    Command::new(support::BIN)
        .args(["serve", "--data"])
        .arg(data)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("DGSP_KEY_PASSPHRASE", PASSPHRASE)
        .env("DGSP_ADMIN_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// What the registry acknowledged (answered with success) before being killed.
#[derive(Default)]
struct Acked {
    joined: HashMap<String, u64>,
    /// member -> highest first_counter + count acknowledged
    issued: HashMap<u64, u64>,
    revoked: Vec<u64>,
}

/// An admin POST that succeeded; `None` when the registry died or refused.
async fn post_ok(
    client: &reqwest::Client,
    url: String,
    body: Option<&Value>,
) -> Option<reqwest::Response> {
    let mut request = client.post(url).bearer_auth(TOKEN);
    if let Some(body) = body {
        request = request.json(body);
    }
    let r = request.send().await.ok()?;
    r.status().is_success().then_some(r)
}

async fn client_loop(
    client: reqwest::Client,
    base: String,
    worker: u64,
    round: u64,
    acked: Arc<Mutex<Acked>>,
) {
    let mut rng = ChaCha20Rng::seed_from_u64(worker * 1000 + round);
    for i in 0.. {
        let name = format!("w{worker}-r{round}-{i}");
        let body = json!({"username": name});
        let url = format!("{base}/admin/v1/members");
        let Some(r) = post_ok(&client, url, Some(&body)).await else {
            return;
        };
        let Ok(v) = r.json::<Value>().await else {
            return;
        };
        let id = v["id"].as_u64().unwrap();
        acked.lock().unwrap().joined.insert(name, id);
        if rng.next_u32() % 2 == 0 {
            let pks: Vec<String> = (0..2).map(|k| B64.encode([(i as u8) ^ k; 16])).collect();
            let body = json!({"cid_star": v["cid_star"], "wots_pks": pks});
            let url = format!("{base}/admin/v1/members/{id}/certificates");
            let Some(r) = post_ok(&client, url, Some(&body)).await else {
                return;
            };
            let Ok(v) = r.json::<Value>().await else {
                return;
            };
            let end = v["first_counter"].as_u64().unwrap() + 2;
            acked.lock().unwrap().issued.insert(id, end);
        }
        if rng.next_u32() % 4 == 0 {
            let url = format!("{base}/admin/v1/members/{id}/revoke");
            if post_ok(&client, url, None).await.is_none() {
                return;
            }
            acked.lock().unwrap().revoked.push(id);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_write_survives_kill_minus_nine() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("group");
    support::init(&data, PASSPHRASE);

    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let acked = Arc::new(Mutex::new(Acked::default()));
    let mut rng = ChaCha20Rng::seed_from_u64(2026);
    for round in 0..20 {
        let port = support::free_port();
        let base = format!("http://127.0.0.1:{port}");
        let mut child = start(&data, port);
        let (within, every) = (Duration::from_secs(30), Duration::from_millis(20));
        support::wait_serving(&client, &base, within, every).await;
        let workers: Vec<_> = (0..6)
            .map(|w| {
                tokio::spawn(client_loop(
                    client.clone(),
                    base.clone(),
                    w,
                    round,
                    acked.clone(),
                ))
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(40 + u64::from(rng.next_u32() % 260))).await;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        for w in workers {
            w.await.unwrap();
        }
    }

    let acked = acked.lock().unwrap();
    assert!(
        acked.joined.len() > 100,
        "the test drove real load ({} joins)",
        acked.joined.len()
    );
    let mut store = Store::open(&data.join("db")).unwrap();
    let head = store.verify_chain().unwrap();
    assert!(head.seq as usize > acked.joined.len());
    for (name, id) in &acked.joined {
        assert_eq!(
            store.id_of(name).unwrap(),
            Some(*id),
            "acknowledged join of {name} lost"
        );
    }
    for (id, end) in &acked.issued {
        let m = store.member(*id).unwrap().unwrap();
        assert!(m.counter >= *end, "acknowledged issuance for {id} lost");
    }
    for id in &acked.revoked {
        let m = store.member(*id).unwrap().unwrap();
        assert!(
            !m.active && m.revoked_at.is_some(),
            "acknowledged revocation of {id} lost"
        );
    }
    let live = store.dump_views().unwrap();
    store.rebuild(|_, _| {}).unwrap();
    assert_eq!(
        store.dump_views().unwrap(),
        live,
        "views differ from a rebuild of the log"
    );
    eprintln!(
        "crash test: {} joins, {} issuances, {} revocations acknowledged; log head {}",
        acked.joined.len(),
        acked.issued.len(),
        acked.revoked.len(),
        head.seq
    );
}
