//! The freeze attack, automated. A real registry (signing a checkpoint every second) and two
//! gateways: one follows it directly, the other through a proxy that passes every request on
//! but, once frozen, drops every entry after the head of that moment and reports that head
//! (and, in the second variant, keeps replaying the checkpoint note of that moment). A member
//! is then revoked. The direct gateway answers `revoked`; the frozen one must not answer `ok`
//! for long: within `--max-staleness-secs` plus one cadence and one poll it answers `stale`
//! (`valid: false`) and `/readyz` fails, because nothing the proxy serves carries a newer
//! signed time. Before signed time, it answered `valid: true, stale: false` forever.
//!
//! `support::registry_with_cadence` starts a registry that signs a checkpoint every second
//! (`--checkpoint-interval-secs 1`).

use crate::support;

use std::time::{Duration, Instant};

use dgsp_gateway::anchor::Anchor;
use dgsp_gateway::server::Config;
use support::proxy::Proxy;
use support::{gateway_config, gateway_in, wait_for, Gateway};

/// The gateways' staleness bound in this test.
const MAX_STALENESS: Duration = Duration::from_secs(3);
/// The registry's checkpoint cadence in this test.
const CADENCE: Duration = Duration::from_secs(1);

fn bounded(c: &mut Config) {
    c.api.max_staleness = MAX_STALENESS;
}

async fn status(gw: &Gateway, message: &[u8], sig: &dgsp_core::Signature) -> String {
    gw.verify(message, sig).await["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn frozen_gateway_goes_stale(replay: bool) {
    let reg = support::registry_with_cadence(CADENCE).await;
    let mut alice = reg.member("alice", 2).await;
    let mut bob = reg.member("bob", 2).await;
    let settled = reg.settled().await;
    let proxy = Proxy::start(&reg.feed_url).await;
    let direct = reg.follower(bounded).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = gateway_config(
        &proxy.url,
        Anchor::Key(Box::new(reg.manager.public_key().clone())),
        dir.path(),
    );
    bounded(&mut config);
    let frozen = gateway_in(config, dir).await;
    frozen.reach(settled).await;

    // Before the freeze both are fresh and say bob's signature is valid.
    let sig_b = bob.sign(b"order 7");
    let sig_a = alice.sign(b"order 8");
    for gw in [&direct, &frozen] {
        wait_for("a fresh ok", || async {
            (status(gw, b"order 7", &sig_b).await == "ok").then_some(())
        })
        .await;
    }

    let head = proxy.freeze(replay).await;
    let revoked_at = Instant::now();
    reg.revoke(bob.id).await;

    // The direct gateway learns of it.
    wait_for("the direct gateway to answer revoked", || async {
        (status(&direct, b"order 7", &sig_b).await == "revoked").then_some(())
    })
    .await;

    // The frozen one stops giving verdicts within the bound (plus a cadence, a poll and
    // slack for a loaded machine), for bob and for everyone else.
    let answer = wait_for("the frozen gateway to answer stale", || async {
        let a = frozen.verify(b"order 7", &sig_b).await;
        assert_ne!(
            a["status"], "revoked",
            "the proxy let the revocation through: {a}"
        );
        (a["status"] == "stale").then_some(a)
    })
    .await;
    let took = revoked_at.elapsed();
    assert!(
        took <= MAX_STALENESS + CADENCE + Duration::from_secs(3),
        "stale only after {took:?}"
    );
    assert_eq!(answer["valid"], false, "{answer}");
    assert_eq!(answer["freshness"]["stale"], true, "{answer}");
    assert!(answer["freshness"]["applied_seq"].as_u64().unwrap() <= head);
    assert!(
        answer["freshness"]["age_ms"].as_u64().unwrap() > 3000,
        "{answer}"
    );
    assert_eq!(status(&frozen, b"order 8", &sig_a).await, "stale");
    let (code, ready) = frozen.get("/readyz").await;
    assert_eq!(
        (code, ready["status"].as_str()),
        (503, Some("stale")),
        "{ready}"
    );
    if !replay {
        // The registry's signed checkpoint covers entries the proxy withholds.
        assert_eq!(ready["fault"]["kind"], "withheld", "{ready}");
    }

    // The direct gateway stays fresh (the registry signs every second) and ready.
    tokio::time::sleep(MAX_STALENESS).await;
    assert_eq!(status(&direct, b"order 7", &sig_b).await, "revoked");
    assert_eq!(status(&direct, b"order 8", &sig_a).await, "ok");
    assert_eq!(direct.get("/readyz").await.0, 200);

    frozen.shutdown().await;
    direct.shutdown().await;
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_that_withholds_entries_makes_the_gateway_stale_not_wrong() {
    frozen_gateway_goes_stale(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_that_also_replays_the_old_checkpoint_makes_the_gateway_stale_not_wrong() {
    frozen_gateway_goes_stale(true).await;
}
