//! The registry with real witnesses (omniwitness and litewitness, built from the Go module
//! proxy by `scripts/witnesses.sh`) under a 2-of-2 policy: every checkpoint it publishes
//! carries a witnessed note that verifies with the policy, through growth of the log
//! (consistency proofs from the size each witness last cosigned); when one witness stops
//! answering, nothing newer is published (the served note ages, `/readyz` says which
//! witness fails) while writes are still acknowledged; when it answers again, publication
//! resumes and covers them. Its tile store (a directory) holds `checkpoint.witnessed` beside
//! `checkpoint`, of the same tree, and the log-key statement as `key`; the registry serves
//! the witnessed note at `/v1/log/checkpoint.witnessed`.
//!
//! `DGSP_SKIP_WITNESSES=1` skips it, saying so.

use crate::support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dgsp_http::clock::SystemClock;
use dgsp_registry::publisher::PublisherConfig;
use dgsp_registry::server;
use dgsp_registry::witnessing::{LogKey, Witnesses};
use dgsp_wire::log::now_ms;
use dgsp_wire::note::policy::Policy;
use dgsp_wire::note::witnessed::verify_witnessed;
use dgsp_witness::test_server::TestWitnesses;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::load::post_ok;

const TOKEN: &str = "witnesses-test-admin-token";

/// `GET /v1/checkpoint`'s JSON once.
async fn served(client: &reqwest::Client, url: &str) -> Option<Value> {
    let r = client
        .get(format!("{url}/v1/checkpoint"))
        .send()
        .await
        .ok()?;
    if r.status() != StatusCode::OK {
        return None;
    }
    r.json().await.ok()
}

/// Waits (up to `within`) for a served checkpoint that `ok` accepts.
async fn wait_served(
    client: &reqwest::Client,
    url: &str,
    within: Duration,
    what: &str,
    ok: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = served(client, url).await {
            if ok(&v) {
                return v;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no checkpoint {what} within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Checks the witnessed note of a served checkpoint against the policy: both witnesses
/// counted, the same tree as the group-signed note.
fn check_witnessed(cp: &Value, policy: &Policy, group: &dgsp_core::ManagerPublicKey) {
    let witnessed = cp["witnessed"].as_str().expect("a witnessed note");
    let w = verify_witnessed(witnessed, policy, now_ms() / 1000, Some(60), 5).unwrap_or_else(|e| {
        panic!("the witnessed note does not meet the policy: {e}\n{witnessed}")
    });
    let signed = group
        .verify_checkpoint(cp["note"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        (w.origin.as_str(), w.size, w.root),
        (signed.origin.as_str(), signed.size, signed.root),
        "the witnessed note is of another tree than the group-signed one"
    );
    let names: BTreeSet<&str> = w.cosigners.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, BTreeSet::from(["litewitness", "omniwitness"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_are_published_only_once_both_witnesses_cosign() {
    let dir = tempfile::tempdir().unwrap();
    let (store, manager) = support::group(&dir.path().join("db"), 28, now_ms());
    let log_key = LogKey::derive(&manager, 0, now_ms()).unwrap();
    let vkey = log_key.vkey();
    let Some(witnesses) = TestWitnesses::start("registry witnesses", &[&vkey]) else {
        return;
    };
    let policy_text = std::fs::read_to_string(&witnesses.policy_path).unwrap();
    let policy = Policy::parse(&policy_text).unwrap();
    let started = Instant::now();
    let w = Witnesses::new(
        Arc::new(log_key),
        &policy_text,
        Duration::from_secs(2),
        Arc::new(SystemClock),
    )
    .unwrap();
    let tiles = tempfile::tempdir().unwrap();
    let config = server::Config {
        tiles: Some(Arc::new(
            dgsp_tilestore::LocalDir::open(tiles.path()).unwrap(),
        )),
        publisher: PublisherConfig {
            checkpoint_interval: Duration::from_secs(1),
            witnesses: Some(Arc::new(w)),
            ..PublisherConfig::default()
        },
        ..support::config(TOKEN)
    };
    let group = manager.public_key().clone();
    let running = support::serve(store, manager, config).await;
    let (client, url) = (reqwest::Client::new(), running.url());

    // The group key names the log key.
    let statement = client
        .get(format!("{url}/v1/log/key"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(group.verify_log_key(&statement).unwrap().vkey, vkey);

    // The first checkpoint, cosigned by both.
    let first = wait_served(&client, &url, Duration::from_secs(30), "witnessed", |v| {
        v["witnessed"].is_string()
    })
    .await;
    check_witnessed(&first, &policy, &group);
    eprintln!("first witnessed checkpoint after {:?}", started.elapsed());

    // The registry serves the witnessed note beside the tiles' checkpoint, and its mirror
    // writes it beside the directory's checkpoint: each of the same tree as its checkpoint.
    let r = client
        .get(format!("{url}/v1/log/checkpoint.witnessed"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["cache-control"], "public, max-age=2");
    let text = r.text().await.unwrap();
    assert!(text.starts_with(first["note"].as_str().unwrap().lines().next().unwrap()));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let read = |name: &str| std::fs::read_to_string(tiles.path().join(name)).ok();
        if let (Some(note), Some(witnessed)) = (read("checkpoint"), read("checkpoint.witnessed")) {
            let cp = serde_json::json!({ "note": note, "witnessed": witnessed });
            if group.verify_checkpoint(&note).ok().map(|c| c.size)
                == dgsp_wire::note::witnessed::verify_witnessed(
                    &witnessed,
                    &policy,
                    now_ms() / 1000,
                    None,
                    5,
                )
                .ok()
                .map(|w| w.size)
            {
                check_witnessed(&cp, &policy, &group);
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no checkpoint.witnessed of the directory's checkpoint's tree"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // And the statement naming the log key, as `key` (its path under `/v1/log/`).
    assert_eq!(
        std::fs::read_to_string(tiles.path().join("key")).unwrap(),
        statement
    );

    // The log grows: the next checkpoints extend it, cosigned by both from their last size.
    for n in 0..3 {
        let joined = post_ok(
            &client,
            TOKEN,
            format!("{url}/admin/v1/members"),
            Some(&json!({ "username": format!("member-{n}") })),
        )
        .await;
        assert!(joined.is_some(), "join {n} refused");
        let before = first["size"].as_u64().unwrap();
        let cp = wait_served(
            &client,
            &url,
            Duration::from_secs(20),
            "covering the join",
            |v| v["size"].as_u64().unwrap() > before + n,
        )
        .await;
        check_witnessed(&cp, &policy, &group);
    }

    let metrics = support::get_text(&client, format!("{url}/metrics")).await;
    for w in ["omniwitness", "litewitness"] {
        assert!(
            metrics.contains(&format!("dgsp_registry_witness_up{{witness=\"{w}\"}} 1")),
            "{metrics}"
        );
    }

    // litewitness stops answering: nothing newer is published, writes still succeed.
    witnesses.freeze_litewitness();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let frozen = served(&client, &url).await.unwrap();
    let joined = post_ok(
        &client,
        TOKEN,
        format!("{url}/admin/v1/members"),
        Some(&json!({ "username": "during-the-outage" })),
    )
    .await;
    assert!(joined.is_some(), "a write during the outage was refused");
    tokio::time::sleep(Duration::from_secs(5)).await;
    let still = served(&client, &url).await.unwrap();
    assert!(
        still["time_unix_ms"].as_u64() <= frozen["time_unix_ms"].as_u64().map(|t| t + 1500),
        "a checkpoint was published without litewitness: {frozen} then {still}"
    );
    let (ready, body) = support::readyz(&client, &url).await;
    assert_eq!(ready, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(
        body.contains("checkpoint-overdue") && body.contains("litewitness failing"),
        "{body}"
    );

    let metrics = support::get_text(&client, format!("{url}/metrics")).await;
    assert!(
        metrics.contains("dgsp_registry_witness_up{witness=\"litewitness\"} 0")
            && metrics.contains("dgsp_registry_witness_up{witness=\"omniwitness\"} 1"),
        "{metrics}"
    );

    // It answers again: publication resumes and covers the write.
    witnesses.thaw_litewitness();
    let size = still["size"].as_u64().unwrap();
    let resumed = wait_served(
        &client,
        &url,
        Duration::from_secs(30),
        "after the outage",
        |v| v["size"].as_u64().unwrap() > size,
    )
    .await;
    check_witnessed(&resumed, &policy, &group);
    support::wait_readyz(&client, &url, StatusCode::OK, support::polls(100, 100)).await;
    running.shutdown().await.unwrap();
}
