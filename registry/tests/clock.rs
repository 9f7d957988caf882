//! The registry's clock: a clock stepped back (or corrected after running ahead) by more
//! than the tolerance halts the registry with the reason, instead of dating every later
//! note 1 ms after the last one; a step within the tolerance is absorbed.

use std::sync::Arc;
use std::time::Duration;

use dgsp_core::{Manager, ParamSet};
use dgsp_http::clock::OffsetClock;
use dgsp_registry::publisher::PublisherConfig;
use dgsp_registry::store::Store;
use dgsp_registry::{api, server};
use rand_chacha::rand_core::SeedableRng;
use serde_json::Value;

async fn start(clock: Arc<OffsetClock>) -> (tempfile::TempDir, server::Running) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
    let manager = Arc::new(Manager::generate(ParamSet::Sha2_128f, &mut rng));
    let store = Store::open(&dir.path().join("db")).unwrap();
    store
        .create_group(manager.public_key(), dgsp_wire::log::now_ms())
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = server::Config {
        admin_token: "clock-test-admin-token".into(),
        auditor_token: None,
        body_limit: api::DEFAULT_BODY_LIMIT,
        feed_bytes_in_flight: dgsp_registry::feed::DEFAULT_BYTES_IN_FLIGHT,
        backups: None,
        publisher: PublisherConfig {
            checkpoint_interval: Duration::from_millis(200),
            clock,
            clock_tolerance: Duration::from_secs(5),
        },
    };
    let running = server::start(Arc::new(store), manager, listener, config)
        .await
        .unwrap();
    (dir, running)
}

/// The signed time of the newest note (waiting for the first one).
async fn checkpoint_time(client: &reqwest::Client, url: &str) -> Option<u64> {
    for _ in 0..100 {
        let r = client
            .get(format!("{url}/v1/checkpoint"))
            .send()
            .await
            .ok()?;
        let v: Value = r.json().await.ok()?;
        if let Some(t) = v["time_unix_ms"].as_u64() {
            return Some(t);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// Waits until `/readyz` answers `status`; returns its body.
async fn readyz(client: &reqwest::Client, url: &str, status: u16) -> String {
    let mut last = String::new();
    for _ in 0..100 {
        let r = client.get(format!("{url}/readyz")).send().await.unwrap();
        let code = r.status().as_u16();
        last = r.text().await.unwrap();
        if code == status {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("/readyz never answered {status}; last: {last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_set_back_past_the_tolerance_halts_the_registry() {
    let clock = OffsetClock::new(0);
    let (_dir, running) = start(clock.clone()).await;
    let (client, url) = (reqwest::Client::new(), running.url());
    readyz(&client, &url, 200).await;

    // Within the tolerance: absorbed, notes keep coming, times never go back.
    let before = checkpoint_time(&client, &url).await.unwrap();
    clock.set_offset_ms(-3_000);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let after = checkpoint_time(&client, &url).await.unwrap();
    assert!(
        after > before,
        "notes stopped or went back: {before} then {after}"
    );
    readyz(&client, &url, 200).await;

    // Past it: halted, with the clock and the last signed time in the reason.
    clock.set_offset_ms(-60_000);
    let body = readyz(&client, &url, 503).await;
    assert!(body.contains("behind the last signed time"), "{body}");
    assert!(body.contains("tolerance"), "{body}");
    let signed = checkpoint_time(&client, &url).await.unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        checkpoint_time(&client, &url).await.unwrap(),
        signed,
        "a halted registry signed another note"
    );
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_that_ran_ahead_and_was_corrected_halts_instead_of_crawling() {
    let clock = OffsetClock::new(600_000);
    let (_dir, running) = start(clock.clone()).await;
    let (client, url) = (reqwest::Client::new(), running.url());
    readyz(&client, &url, 200).await;
    let ahead = checkpoint_time(&client, &url).await.unwrap();
    assert!(ahead > dgsp_wire::log::now_ms() + 500_000);

    // Corrected: the next note would be dated ten minutes ahead of the real time.
    clock.set_offset_ms(0);
    let body = readyz(&client, &url, 503).await;
    assert!(body.contains("behind the last signed time"), "{body}");
    running.shutdown().await.unwrap();
}
