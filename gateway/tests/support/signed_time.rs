//! Shared by the tests of signed time (`freshness.rs`, `clock.rs`): an honest log for the
//! mock registry to serve, times to sign its notes at, and what a gateway says about them.

use dgsp_core::ManagerPublicKey;
use dgsp_wire::log::now_ms;
use serde_json::Value;

use super::mock::Log;
use super::{wait_for, Gateway, Member};

/// An honest log with two members (alice active, bob revoked), two snapshots, ending with a
/// checkpoint entry; and alice, who can still sign.
pub async fn honest_log() -> (Log, Member) {
    let reg = super::registry().await;
    let alice = reg.member("alice", 4).await;
    let bob = reg.member("bob", 1).await;
    reg.settled().await;
    reg.revoke(bob.id).await;
    reg.settled().await;
    let entries = reg.public_log();
    let manager = reg.manager.clone();
    reg.shutdown().await;
    assert_eq!(entries.last().unwrap().kind, "checkpoint");
    (Log { entries, manager }, alice)
}

/// The group key of `log`.
pub fn group(log: &Log) -> ManagerPublicKey {
    log.manager.public_key().clone()
}

/// A time later than every checkpoint in `log` and than `after` (Unix ms).
pub fn later(log: &Log, after: u64) -> u64 {
    now_ms().max(log.last_checkpoint_time() + 1).max(after + 1)
}

/// The signed time the gateway's answers are fresh as of (0 before any).
pub async fn fresh_time(gw: &Gateway) -> u64 {
    gw.get("/v1/group").await.1["freshness"]["checkpoint"]["time_unix_ms"]
        .as_u64()
        .unwrap_or(0)
}

/// Waits until `/readyz` reports a fault of `kind` whose detail contains `detail`; returns
/// the status code and body.
pub async fn fault(gw: &Gateway, kind: &str, detail: &str) -> (u16, Value) {
    wait_for(&format!("a {kind} fault ({detail})"), || async {
        let (status, r) = gw.get("/readyz").await;
        (r["fault"]["kind"] == kind
            && r["fault"]["detail"]
                .as_str()
                .is_some_and(|d| d.contains(detail)))
        .then_some((status, r))
    })
    .await
}
