//! Freshness by signed time, against a registry played by wiremock over a real, honestly
//! signed log, with cadence notes the test signs itself: a gateway is fresh as of the newest
//! checkpoint it has verified and applied, never by when it last polled; older or
//! contradicting notes are refused (`replayed_checkpoint`, `bad_checkpoint`), a note beyond
//! what the feed serves is `withheld`, nothing ever moves back (across a restart too), and a
//! state older than the bound answers `stale` (or, with `serve_stale`, its verdict marked
//! stale). Also: pages refused for size shrink instead of wedging the follower, pending data
//! is bounded in bytes, and a poisoned lock does not turn requests into panics.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use dgsp_core::checkpoint::{origin_for, SnapshotRef};
use dgsp_gateway::anchor::Anchor;
use dgsp_registry::publisher::snapshot_from_json;
use dgsp_wire::log::{now_ms, Entry};
use support::mock::{padded, Log, MockRegistry};
use support::signed_time::{fault, fresh_time, group, honest_log, later};
use support::{gateway, gateway_config, metric, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn freshness_is_signed_time_and_never_moves_back() {
    let (log, mut alice) = honest_log().await;
    let group = group(&log);
    let size = log.entries.len() as u64;
    let mock = MockRegistry::start(log.entries.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = gateway_config(&mock.url, Anchor::Key(Box::new(group.clone())), dir.path());
    config.api.max_staleness = Duration::from_secs(4);

    // No note at /v1/checkpoint (503): the log's own checkpoints cover all but the trailing
    // checkpoint entry, which only a note of the whole log covers.
    let gw = gateway(config.clone()).await;
    gw.reach(size - 1).await;
    assert_eq!(gw.applied().await, size - 1);

    // a. A cadence note of the whole log, signed now: applied, and fresh as of its time.
    let t1 = later(&log, 0);
    let n1 = log.note(size, t1);
    mock.note(Some(n1.clone()));
    wait_for("freshness as of the first note", || async {
        (fresh_time(&gw).await == t1).then_some(())
    })
    .await;
    assert_eq!(gw.applied().await, size);
    let sig = alice.sign(b"m");
    let a = gw.verify(b"m", &sig).await;
    assert_eq!(
        (a["status"].as_str(), a["valid"].as_bool()),
        (Some("ok"), Some(true)),
        "{a}"
    );
    let f = &a["freshness"];
    assert_eq!(f["stale"], false, "{a}");
    assert_eq!(f["applied_seq"], size);
    assert_eq!(f["max_staleness_ms"], 4000);
    assert!(f["age_ms"].as_u64().unwrap() <= now_ms() - t1, "{f}");
    // The evidence: the note itself, which verifies offline and names the answer's snapshot.
    let cp = &f["checkpoint"];
    assert_eq!(
        (cp["size"].as_u64(), cp["time_unix_ms"].as_u64()),
        (Some(size), Some(t1))
    );
    let note = cp["note"].as_str().unwrap();
    assert_eq!(note, n1.note);
    let checked = group.verify_checkpoint(note).unwrap();
    assert_eq!(checked.origin, origin_for(&group));
    let named = checked.snapshot.unwrap();
    assert_eq!(cp["snapshot_number"], named.number);
    assert_eq!(a["revocation"]["snapshot"]["number"], named.number, "{a}");
    let n = named.number;
    let (_, snap) = gw.get(&format!("/v1/revocations/snapshots/{n}")).await;
    assert!(named.names(&snapshot_from_json(&snap).unwrap().record));

    // b. A later note of the same state moves freshness forward (nothing else changes).
    let t2 = later(&log, t1);
    let n2 = log.note(size, t2);
    mock.note(Some(n2.clone()));
    wait_for("freshness as of the second note", || async {
        (fresh_time(&gw).await == t2).then_some(())
    })
    .await;

    // c. The first note again (a replay): refused, freshness stays.
    mock.note(Some(n1.clone()));
    fault(&gw, "replayed_checkpoint", "older than one signed at").await;
    assert_eq!((fresh_time(&gw).await, gw.applied().await), (t2, size));

    // d. A newer note naming the previous snapshot (an older revocation state): refused.
    let prev = log
        .entries
        .iter()
        .filter(|e| e.kind == "snapshot_published")
        .map(|e| SnapshotRef::of(&snapshot_from_json(&e.public["snapshot"]).unwrap().record))
        .find(|s| s.number == named.number - 1)
        .unwrap();
    mock.note(Some(log.note_naming(size, later(&log, t2), Some(prev))));
    fault(&gw, "bad_checkpoint", "latest snapshot among its entries").await;
    assert_eq!((fresh_time(&gw).await, gw.applied().await), (t2, size));

    // e. A newer note covering fewer entries (the log going back): refused.
    mock.note(Some(log.note(size - 1, later(&log, t2))));
    fault(&gw, "replayed_checkpoint", "contradicts").await;
    assert_eq!((fresh_time(&gw).await, gw.applied().await), (t2, size));

    // f. A newer note of entries the feed does not serve: withheld, and nothing applied.
    let longer = Log {
        entries: padded(&log.entries, 5, 10),
        manager: log.manager.clone(),
    };
    mock.note(Some(longer.note(size + 5, later(&log, t2))));
    let (_, r) = fault(&gw, "withheld", &format!("ends at {size}")).await;
    assert_eq!(r["fault"]["seq"], size + 1, "{r}");
    assert_eq!((fresh_time(&gw).await, gw.applied().await), (t2, size));

    // g. Whatever the registry answers, with no newer note applied the state goes stale:
    //    no verdict, /readyz fails, metrics say so.
    wait_for("the state to go stale", || async {
        let (status, r) = gw.get("/readyz").await;
        (status == 503 && r["status"] == "stale").then_some(())
    })
    .await;
    let sig2 = alice.sign(b"m2");
    let a = gw.verify(b"m2", &sig2).await;
    assert_eq!(
        (a["status"].as_str(), a["valid"].as_bool()),
        (Some("stale"), Some(false)),
        "{a}"
    );
    assert_eq!(a["freshness"]["stale"], true);
    assert!(a["freshness"]["age_ms"].as_u64().unwrap() > 4000, "{a}");
    assert!(a["detail"].as_str().unwrap().contains("bound"), "{a}");
    assert_eq!(
        a["revocation"]["revoked"], false,
        "the evidence is still given: {a}"
    );
    let b = gw.verify_batch(b"m2", &[&sig2, &sig]).await;
    assert_eq!(
        b["freshness"]["checkpoint"]["note"],
        n2.note.as_str(),
        "{b}"
    );
    for item in b["results"].as_array().unwrap() {
        assert_eq!(item["status"], "stale", "{b}");
        assert!(item["freshness"]["checkpoint"].get("note").is_none(), "{b}");
        assert_eq!(item["freshness"]["checkpoint"]["time_unix_ms"], t2);
    }
    let m = gw.metrics().await;
    assert_eq!(metric(&m, "dgsp_gateway_stale"), Some(1.0), "{m}");
    assert_eq!(metric(&m, "dgsp_gateway_ready"), Some(0.0));
    assert!(metric(&m, "dgsp_gateway_checkpoint_age_seconds").unwrap() > 4.0);
    assert_eq!(
        metric(&m, "dgsp_gateway_verify_total{status=\"stale\"}"),
        Some(3.0),
        "{m}"
    );
    assert_eq!(metric(&m, "dgsp_gateway_stale_answers_total"), Some(3.0));
    gw.shutdown().await;

    // h. Restarted (serving stale answers this time) while the registry replays the first
    //    note: freshness resumes from the replica as of the second note, the replay is
    //    refused, and verdicts come marked stale.
    mock.note(Some(n1.clone()));
    config.api.serve_stale = true;
    let gw = gateway(config.clone()).await;
    assert_eq!((fresh_time(&gw).await, gw.applied().await), (t2, size));
    fault(&gw, "replayed_checkpoint", "older than one signed at").await;
    let sig3 = alice.sign(b"m3");
    let a = gw.verify(b"m3", &sig3).await;
    assert_eq!(
        (a["status"].as_str(), a["valid"].as_bool()),
        (Some("ok"), Some(true)),
        "{a}"
    );
    assert_eq!(a["freshness"]["stale"], true, "{a}");
    assert!(
        a["detail"].as_str().unwrap().contains("served stale"),
        "{a}"
    );
    assert_eq!(gw.get("/readyz").await.0, 503);

    // i. A new note: fresh again.
    let t3 = later(&log, t2);
    mock.note(Some(log.note(size, t3)));
    wait_for("fresh again", || async {
        let (status, r) = gw.get("/readyz").await;
        (status == 200 && r["status"] == "ok").then_some(())
    })
    .await;
    assert_eq!(fresh_time(&gw).await, t3);
    let a = gw.verify(b"m3", &sig3).await;
    assert_eq!(
        (a["status"].as_str(), a["freshness"]["stale"].as_bool()),
        (Some("ok"), Some(false))
    );
    assert!(a.get("detail").is_none(), "{a}");
    gw.shutdown().await;
}

/// The JSON size of the largest entry in `entries`.
fn largest(entries: &[Entry]) -> usize {
    entries
        .iter()
        .map(|e| serde_json::to_vec(e).unwrap().len())
        .max()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_pages_shrink_and_pending_bytes_are_bounded() {
    let (log, _) = honest_log().await;
    let size = log.entries.len() as u64;
    let m = largest(&log.entries);
    let mock = MockRegistry::start(log.entries.clone()).await;
    mock.note(Some(log.note(size, later(&log, 0))));
    let dir = tempfile::tempdir().unwrap();
    let mut config = gateway_config(&mock.url, Anchor::Key(Box::new(group(&log))), dir.path());
    // A page holds the tip and one more entry of any size, not many more.
    config.follow.page = 64;
    config.follow.max_page_bytes = 2 * m + 1024;
    config.follow.max_pending_bytes = 6 * m;
    let gw = gateway(config).await;

    // The follower asks for fewer entries until pages fit, applies the whole log, and asks
    // for full pages again once they fit (caught up, a page is the tip alone).
    gw.reach(size).await;
    wait_for("full pages again", || async {
        (mock.limits().last() == Some(&64)).then_some(())
    })
    .await;
    let limits = mock.limits();
    let least = *limits.iter().min().unwrap();
    assert!(least <= 4, "{limits:?}");
    let first_small = limits.iter().position(|l| *l == least).unwrap();
    assert!(
        limits[first_small..].iter().any(|l| *l > least),
        "{limits:?}"
    );
    let metrics = gw.metrics().await;
    assert_eq!(
        metric(
            &metrics,
            "dgsp_gateway_feed_faults_total{kind=\"page_too_large\"}"
        ),
        None,
        "shrinking pages is not a fault: {metrics}"
    );
    assert_eq!(gw.get("/readyz").await.1.get("fault"), None);

    // One entry larger than a page: reported (it cannot shrink further), nothing applied.
    mock.serve(padded(&log.entries, 1, 3 * m));
    let (_, r) = fault(&gw, "page_too_large", "").await;
    assert_eq!(
        (r["applied_seq"].as_u64(), r["page_limit"].as_u64()),
        (Some(size), Some(1))
    );

    // A feed that grows without checkpoints, each page within bounds: refused once more
    // than the bound is held (by parsed size), and the bytes held never exceed it.
    mock.serve(padded(&log.entries, 40, m / 2));
    fault(&gw, "pending_limit", "bytes of parsed entries").await;
    for _ in 0..20 {
        let held = metric(&gw.metrics().await, "dgsp_gateway_pending_bytes").unwrap();
        assert!(held <= (6 * m) as f64, "{held}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(gw.applied().await, size);

    // The honest log again: the fault clears.
    mock.serve(log.entries.clone());
    wait_for("the fault to clear", || async {
        gw.get("/readyz")
            .await
            .1
            .get("fault")
            .is_none()
            .then_some(())
    })
    .await;
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poisoned_lock_does_not_turn_requests_into_panics() {
    let (log, mut alice) = honest_log().await;
    let size = log.entries.len() as u64;
    let mock = MockRegistry::start(log.entries.clone()).await;
    let t1 = later(&log, 0);
    mock.note(Some(log.note(size, t1)));
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(gateway_config(
        &mock.url,
        Anchor::Key(Box::new(group(&log))),
        dir.path(),
    ))
    .await;
    gw.reach(size).await;

    // Panic while holding the status mutex and the view lock.
    let state = gw.state().clone();
    let s = Arc::clone(&state);
    let panicked = std::thread::spawn(move || {
        let _status = s.status.lock().unwrap();
        let _view = s.view.write().unwrap();
        panic!("a bug while holding the locks");
    })
    .join();
    assert!(panicked.is_err());
    assert!(state.status.is_poisoned() && state.view.is_poisoned());

    // Every route still answers.
    let sig = alice.sign(b"m");
    let a = gw.verify(b"m", &sig).await;
    assert_eq!(a["status"], "ok", "{a}");
    assert_eq!(gw.verify_batch(b"m", &[&sig]).await["ok"], 1);
    for path in ["/readyz", "/v1/group", "/v1/revocations/snapshot"] {
        assert_eq!(gw.get(path).await.0, 200, "{path}");
    }
    assert!(gw.metrics().await.contains("dgsp_gateway_ready 1"));
    // And the follower still applies: a newer note moves freshness.
    let t2 = later(&log, t1);
    mock.note(Some(log.note(size, t2)));
    wait_for("the follower to go on", || async {
        (fresh_time(&gw).await == t2).then_some(())
    })
    .await;
    // The test's own handle on the state goes first: shutdown waits for the replica to close.
    drop(state);
    gw.shutdown().await;
}
