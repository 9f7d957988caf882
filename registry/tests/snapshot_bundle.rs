//! The snapshot bundle (docs/format.md, "Snapshot bundles"): the mirror publishes the
//! bundle of the snapshot each checkpoint names before the checkpoint itself, the registry
//! serves the same bytes at `/v1/log/snapshot/<N>`, and the bundle verifies against the
//! snapshot's signed root and the checkpoint's `snapshot` line.

use crate::support;

use std::time::Duration;

use dgsp_core::checkpoint::Checkpoint;
use dgsp_wire::snapshot_bundle::{self, SnapshotBundle};
use reqwest::StatusCode;
use serde_json::json;
use support::Registry;

const ADMIN: &str = "admin-token-for-snapshot-bundles";

/// Waits until the directory's checkpoint names snapshot `number` or later.
async fn published_naming(reg: &Registry, dir: &std::path::Path, number: u64) -> Checkpoint {
    for _ in 0..600 {
        if let Ok(note) = std::fs::read_to_string(dir.join("checkpoint")) {
            let cp = reg.manager.public_key().verify_checkpoint(&note).unwrap();
            if cp.snapshot.is_some_and(|s| s.number >= number) {
                return cp;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no published checkpoint names snapshot {number}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_named_snapshots_bundle_is_published_before_its_checkpoint_and_served() {
    let out = tempfile::tempdir().unwrap();
    let tiles = dgsp_tilestore::LocalDir::open(out.path()).unwrap();
    let config = dgsp_registry::server::Config {
        tiles: Some(std::sync::Arc::new(tiles)),
        ..support::config(ADMIN)
    };
    let reg = Registry::start(31, config).await;
    let group = reg.manager.public_key();
    // Snapshot 1 (empty) is named by the first checkpoint.
    let cp = published_naming(&reg, out.path(), 1).await;
    let named = cp.snapshot.unwrap();
    let bytes = std::fs::read(out.path().join(snapshot_bundle::path(named.number))).unwrap();
    let first = SnapshotBundle::decode(&bytes).unwrap();
    assert_eq!(first.verify(group, &named).unwrap().len(), 0);
    // Two members with certificates, both revoked: a later snapshot of their zetas.
    for name in ["alice", "bob"] {
        let r = reg
            .client
            .post(format!("{}/admin/v1/members", reg.url))
            .bearer_auth(ADMIN)
            .json(&json!({ "username": name }))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    }
    support::reserve_certificates(&reg.running.state.writer, 0, 5).await;
    support::reserve_certificates(&reg.running.state.writer, 1, 7).await;
    for id in [0, 1] {
        let r = reg
            .client
            .post(format!("{}/admin/v1/members/{id}/revoke", reg.url))
            .bearer_auth(ADMIN)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    }
    // Wait for a published checkpoint whose snapshot holds all 12 zetas.
    let mut found = None;
    for _ in 0..600 {
        let cp = published_naming(&reg, out.path(), 2).await;
        let named = cp.snapshot.unwrap();
        let path = out.path().join(snapshot_bundle::path(named.number));
        let bundle = SnapshotBundle::decode(&std::fs::read(&path).unwrap()).unwrap();
        let set = bundle.verify(group, &named).unwrap();
        if set.len() == 12 {
            found = Some((named, bundle, std::fs::read(&path).unwrap()));
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (named, bundle, written) = found.expect("a published snapshot of the 12 zetas");
    assert!(bundle.zetas.windows(2).all(|w| w[0] < w[1]), "sorted");
    assert!(bundle.snapshot.record.log_seq > 0);
    // The registry serves the same bytes while it is the latest snapshot, immutable.
    let served = reg
        .client
        .get(format!(
            "{}/v1/log/{}",
            reg.url,
            snapshot_bundle::path(named.number)
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), StatusCode::OK);
    assert_eq!(
        served.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert_eq!(served.bytes().await.unwrap().to_vec(), written);
    // Not the latest, or not a snapshot path: 404.
    for path in ["snapshot/001", "snapshot/1", "snapshot/x000/002"] {
        let r = reg
            .client
            .get(format!("{}/v1/log/{path}", reg.url))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
    }
    // A changed zeta no longer gives the signed root; another number is not the named one.
    let mut tampered = bundle.clone();
    tampered.zetas[0].0[15] ^= 1;
    assert!(tampered.verify(group, &named).is_err());
    let mut other = named;
    other.number += 1;
    assert!(bundle.verify(group, &other).is_err());
    reg.shutdown().await;
}
