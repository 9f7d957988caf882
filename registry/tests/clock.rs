//! The registry's clock: a clock stepped back (or corrected after running ahead) by more
//! than the tolerance halts the registry with the reason, instead of dating every later
//! note 1 ms after the last one; a step within the tolerance is absorbed.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use dgsp_http::clock::OffsetClock;
use dgsp_registry::publisher::PublisherConfig;
use dgsp_registry::server;
use dgsp_wire::log::now_ms;
use reqwest::StatusCode;
use serde_json::Value;
use support::polls;

async fn start(clock: Arc<OffsetClock>) -> (tempfile::TempDir, server::Running) {
    let dir = tempfile::tempdir().unwrap();
    let (store, manager) = support::group(&dir.path().join("db"), 7, now_ms());
    let config = server::Config {
        publisher: PublisherConfig {
            checkpoint_interval: Duration::from_millis(200),
            clock,
            clock_tolerance: Duration::from_secs(5),
            witnesses: None,
            log_key: None,
        },
        ..support::config("clock-test-admin-token")
    };
    (dir, support::serve(store, manager, config).await)
}

/// The signed time of the newest note (waiting for the first one).
async fn checkpoint_time(client: &reqwest::Client, url: &str) -> u64 {
    let (what, timed) = ("with a signed time", |_, cp: &Value| {
        cp["time_unix_ms"].is_u64()
    });
    let cp = support::wait_checkpoint(client, url, polls(100, 50), what, timed).await;
    cp["time_unix_ms"].as_u64().unwrap()
}

/// Waits until `/readyz` answers `status`; returns its body.
async fn readyz(client: &reqwest::Client, url: &str, status: StatusCode) -> String {
    support::wait_readyz(client, url, status, polls(100, 50)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_set_back_past_the_tolerance_halts_the_registry() {
    let clock = OffsetClock::new(0);
    let (_dir, running) = start(clock.clone()).await;
    let (client, url) = (reqwest::Client::new(), running.url());
    readyz(&client, &url, StatusCode::OK).await;

    // Within the tolerance: absorbed, notes keep coming, times never go back.
    let before = checkpoint_time(&client, &url).await;
    clock.set_offset_ms(-3_000);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let after = checkpoint_time(&client, &url).await;
    assert!(
        after > before,
        "notes stopped or went back: {before} then {after}"
    );
    readyz(&client, &url, StatusCode::OK).await;

    // Past it: halted, with the clock and the last signed time in the reason.
    clock.set_offset_ms(-60_000);
    let body = readyz(&client, &url, StatusCode::SERVICE_UNAVAILABLE).await;
    assert!(body.contains("behind the last signed time"), "{body}");
    assert!(body.contains("tolerance"), "{body}");
    let signed = checkpoint_time(&client, &url).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        checkpoint_time(&client, &url).await,
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
    readyz(&client, &url, StatusCode::OK).await;
    let ahead = checkpoint_time(&client, &url).await;
    assert!(ahead > now_ms() + 500_000);

    // Corrected: the next note would be dated ten minutes ahead of the real time.
    clock.set_offset_ms(0);
    let body = readyz(&client, &url, StatusCode::SERVICE_UNAVAILABLE).await;
    assert!(body.contains("behind the last signed time"), "{body}");
    running.shutdown().await.unwrap();
}
