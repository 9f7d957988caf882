//! Time the gateway can rely on, against a registry played by wiremock over a real, honestly
//! signed log with notes the test signs itself at the times it chooses (a registry whose
//! clock runs ahead signs exactly such notes), and with the gateway's own wall clock stepped
//! through an injectable [`OffsetClock`]:
//! - a note from `/v1/checkpoint`, or a `checkpoint` entry of the feed, signed more than the
//!   tolerance ahead of the gateway's clock is refused (`future_checkpoint`, visible in
//!   `/readyz` and metrics, not ready), the previous state stays in service, and an honest
//!   note afterwards is taken;
//! - a wall clock stepped back keeps a frozen gateway fresh no longer than the bound: its
//!   staleness is the larger of the wall-clock age of its note and the monotonic time since
//!   it verified the note; stepped back beyond the tolerance, the state is stale at once.

use crate::support;

use std::time::Duration;

use dgsp_gateway::anchor::Anchor;
use dgsp_gateway::clock::WallClock;
use dgsp_http::clock::OffsetClock;
use dgsp_wire::log::now_ms;
use serde_json::json;
use support::mock::{padded, relink, Log, MockRegistry};
use support::signed_time::{fault, fresh_time, group, honest_log, later};
use support::{gateway, gateway_config, metric, wait_for};

/// `log` with one more entry (a member joined) and a `checkpoint` entry after it whose note,
/// signed at `time`, covers that entry: what a registry whose clock reads `time` appends.
fn with_checkpoint_entry(log: &Log, time: u64) -> (Log, u64) {
    let mut longer = Log {
        entries: padded(&log.entries, 1, 10),
        manager: log.manager.clone(),
    };
    let covered = longer.entries.len() as u64;
    let note = longer.note(covered, time);
    let mut entry = log.entries.last().unwrap().clone();
    assert_eq!(entry.kind, "checkpoint");
    entry.public = json!({"size": note.size, "head": note.head, "note": note.note});
    longer.entries.push(entry);
    relink(&mut longer.entries, covered as usize);
    (longer, covered)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_from_the_future_are_refused_and_the_previous_state_kept() {
    let (log, mut alice) = honest_log().await;
    let size = log.entries.len() as u64;
    let mock = MockRegistry::start(log.entries.clone()).await;
    let t1 = later(&log, 0);
    mock.note(Some(log.note(size, t1)));
    let dir = tempfile::tempdir().unwrap();
    let mut config = gateway_config(&mock.url, Anchor::Key(Box::new(group(&log))), dir.path());
    let clock = OffsetClock::new(0);
    config.clock = WallClock::new(clock.clone());
    let gw = gateway(config).await;
    gw.reach(size).await;
    assert_eq!(fresh_time(&gw).await, t1);
    assert_eq!(gw.get("/readyz").await.0, 200);

    // a. The registry's clock runs ten minutes ahead: its newest note is refused, visibly,
    //    and the gateway is not ready; the state verified before stays in service (still
    //    fresh by its own note, so verdicts are given).
    let ahead = now_ms() + 600_000;
    mock.note(Some(log.note(size, ahead)));
    let (status, r) = fault(&gw, "future_checkpoint", "ahead of this gateway's clock").await;
    assert_eq!(status, 503, "{r}");
    assert_eq!(
        (
            r["ready"].as_bool(),
            r["status"].as_str(),
            r["stale"].as_bool()
        ),
        (Some(false), Some("future_checkpoint"), Some(false)),
        "{r}"
    );
    assert_eq!(r["fault"]["seq"], size, "{r}");
    assert_eq!((fresh_time(&gw).await, gw.applied().await), (t1, size));
    let sig = alice.sign(b"m");
    let a = gw.verify(b"m", &sig).await;
    assert_eq!(
        (a["status"].as_str(), a["freshness"]["stale"].as_bool()),
        (Some("ok"), Some(false)),
        "{a}"
    );
    assert_eq!(
        a["freshness"]["checkpoint"]["time_unix_ms"], t1,
        "the answer's evidence is the note verified before: {a}"
    );
    let m = gw.metrics().await;
    assert!(
        metric(
            &m,
            "dgsp_gateway_feed_faults_total{kind=\"future_checkpoint\"}"
        )
        .is_some_and(|n| n >= 1.0),
        "{m}"
    );
    assert_eq!(metric(&m, "dgsp_gateway_ready"), Some(0.0), "{m}");

    // b. Within the tolerance (clocks 2 s apart), a note ahead is taken.
    let near = now_ms() + 2_000;
    mock.note(Some(log.note(size, near)));
    wait_for("the note 2 s ahead to be taken", || async {
        (fresh_time(&gw).await == near).then_some(())
    })
    .await;
    let (status, r) = gw.get("/readyz").await;
    assert_eq!((status, r["status"].as_str()), (200, Some("ok")), "{r}");

    // c. A checkpoint entry of the feed signed ten minutes ahead: refused at its entry,
    //    nothing it covers is applied.
    mock.note(None);
    let (longer, covered) = with_checkpoint_entry(&log, now_ms() + 600_000);
    mock.serve(longer.entries.clone());
    let (status, r) = fault(&gw, "future_checkpoint", "ahead of this gateway's clock").await;
    assert_eq!(status, 503, "{r}");
    assert_eq!(r["fault"]["seq"], covered + 1, "{r}");
    assert_eq!((fresh_time(&gw).await, gw.applied().await), (near, size));

    // d. The gateway's clock stepped ten minutes forward (now agreeing with that registry):
    //    the same entry is taken and what it covers applied.
    clock.set_offset_ms(600_000);
    gw.reach(covered).await;
    let (status, r) = gw.get("/readyz").await;
    assert_eq!((status, r.get("fault")), (200, None), "{r}");
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wall_clock_stepped_back_does_not_keep_a_frozen_gateway_fresh() {
    let (log, _) = honest_log().await;
    let size = log.entries.len() as u64;
    let mock = MockRegistry::start(log.entries.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = gateway_config(&mock.url, Anchor::Key(Box::new(group(&log))), dir.path());
    config.api.max_staleness = Duration::from_secs(4);
    // A tolerance of an hour, so that only the monotonic rule can make the state stale.
    let clock = OffsetClock::new(0);
    config.clock = WallClock::new(clock.clone()).with_tolerance(Duration::from_secs(3600));
    let gw = gateway(config).await;

    // The registry freezes: it serves one note, signed now, forever.
    let t1 = later(&log, 0);
    mock.note(Some(log.note(size, t1)));
    wait_for("freshness as of the note", || async {
        (fresh_time(&gw).await == t1).then_some(())
    })
    .await;
    assert_eq!(gw.get("/readyz").await.0, 200);

    // The gateway's wall clock is stepped back half an hour: by the wall clock alone the
    // note would be 0 s old for the next half hour. The time since the gateway verified it
    // still counts, so the state goes stale within the bound (plus a poll).
    clock.set_offset_ms(-1_800_000);
    let stepped = std::time::Instant::now();
    let r = wait_for("the frozen state to go stale", || async {
        let (status, r) = gw.get("/readyz").await;
        (status == 503 && r["status"] == "stale").then_some(r)
    })
    .await;
    let took = stepped.elapsed();
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(r["checkpoint_age_seconds"].as_f64().unwrap() > 4.0, "{r}");
    assert_eq!(fresh_time(&gw).await, t1);
    gw.shutdown().await;

    // With the default tolerance, a clock stepped back ten minutes makes the note it verified
    // a note from its future: stale at once; and the registry's next note, signed by the
    // right clock, is refused.
    let dir = tempfile::tempdir().unwrap();
    let mut config = gateway_config(&mock.url, Anchor::Key(Box::new(group(&log))), dir.path());
    let clock = OffsetClock::new(0);
    config.clock = WallClock::new(clock.clone());
    let gw = gateway(config).await;
    wait_for("freshness as of the note", || async {
        (fresh_time(&gw).await == t1).then_some(())
    })
    .await;
    assert_eq!(gw.get("/readyz").await.0, 200);
    clock.set_offset_ms(-600_000);
    let (status, r) = gw.get("/readyz").await;
    assert_eq!(
        (status, r["status"].as_str(), r["stale"].as_bool()),
        (503, Some("stale"), Some(true)),
        "{r}"
    );
    let a = gw.get("/v1/group").await.1;
    assert_eq!(a["freshness"]["stale"], true, "{a}");
    mock.note(Some(log.note(size, later(&log, t1))));
    let (status, r) = fault(&gw, "future_checkpoint", "ahead of this gateway's clock").await;
    assert_eq!((status, r["status"].as_str()), (503, Some("stale")), "{r}");
    gw.shutdown().await;
}
