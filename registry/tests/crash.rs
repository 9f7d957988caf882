//! Crash safety of the real binary: concurrent joins, issuances and revocations while the
//! registry is `kill -9`ed at random moments, 20 times. Afterwards every acknowledged write
//! is in the log, the chain verifies, and the projections equal a rebuild from the log.

use crate::support;

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dgsp_registry::store::Store;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use support::load::{client_loop, Acked};

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
                    TOKEN,
                    format!("w{w}-r{round}"),
                    w * 1000 + round,
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
