//! How long a new gateway takes to be ready from the tiles, for a group of many members and
//! revoked zetas, beside (optionally) a gateway replaying the feed of the same log.
//!
//! CI runs it at 2^16 members and 20 000 revoked zetas. The figure of docs/benchmarks.md
//! ("Starting a gateway from the tiles") comes from the same test at other sizes:
//!
//! ```sh
//! DGSP_TILES_BOOTSTRAP_MEMBERS=33554432 DGSP_TILES_BOOTSTRAP_ZETAS=1000000 \
//! DGSP_TILES_BOOTSTRAP_FEED=1 \
//!   cargo test --release -p dgsp-gateway --test integration tiles_bootstrap:: -- --nocapture
//! ```
//!
//! The log is written by a real registry (its writer, through the admin API's bulk joins;
//! certificates reserved without signing, then revoked), signed by its real manager key,
//! and published by its mirror into a directory in the real format; the gateway reads that
//! directory through a static file server on loopback.

use crate::support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use dgsp_gateway::anchor::Anchor;
use dgsp_gateway::tiles::TilesConfig;
use dgsp_wire::snapshot_bundle;
use serde_json::json;
use support::{gateway_config, gateway_in};

/// Waits (up to an hour: the large sizes write and replay for minutes) until `check` gives
/// a value.
async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(3600);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn static_server(dir: PathBuf) -> String {
    use axum::http::{StatusCode, Uri};
    use axum::response::IntoResponse;
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let dir = dir.clone();
        async move {
            let path = uri.path().trim_start_matches('/').to_owned();
            if path.split('/').any(|s| s.is_empty() || s.starts_with('.')) {
                return StatusCode::NOT_FOUND.into_response();
            }
            match tokio::fs::read(dir.join(&path)).await {
                Ok(bytes) => bytes.into_response(),
                Err(_) => StatusCode::NOT_FOUND.into_response(),
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_group_starts_from_the_tiles_without_replaying_its_joins() {
    let members = env("DGSP_TILES_BOOTSTRAP_MEMBERS", 1 << 16);
    let zetas = env("DGSP_TILES_BOOTSTRAP_ZETAS", 20_000);
    let feed = env("DGSP_TILES_BOOTSTRAP_FEED", 0) == 1;
    let tiles = tempfile::tempdir().unwrap();
    let (reg, ()) =
        support::registry_with_tiles(tiles.path(), Duration::from_secs(1), |_, _| ()).await;
    let written = Instant::now();
    let mut start = 0u64;
    while start < members {
        let end = (start + dgsp_wire::registry_api::MAX_BULK_JOIN as u64).min(members);
        let names: Vec<String> = (start..end).map(|i| format!("m{i}")).collect();
        reg.admin("/admin/v1/members/bulk", &json!({ "usernames": names }))
            .await;
        start = end;
    }
    // Revoked zetas: members at the certificate cap (2^20), then the rest, revoked.
    let mut left = zetas;
    let mut id = 0;
    while left > 0 {
        let count = left.min(1 << 20);
        reg.reserve_and_revoke(id, count).await;
        left -= count;
        id += 1;
    }
    let head = reg.store.head().unwrap().seq;
    let note = wait_for("the mirror to publish the whole log", || async {
        let note = std::fs::read_to_string(tiles.path().join("checkpoint")).ok()?;
        let cp = reg.manager.public_key().verify_checkpoint(&note).ok()?;
        let b = std::fs::read(
            tiles
                .path()
                .join(snapshot_bundle::path(cp.snapshot?.number)),
        )
        .ok()?;
        let count = snapshot_bundle::SnapshotBundle::decode(&b)
            .ok()?
            .snapshot
            .record
            .count;
        (cp.size >= head && count == zetas).then_some(note)
    })
    .await;
    let cp = reg.manager.public_key().verify_checkpoint(&note).unwrap();
    let key = reg.manager.public_key().clone();
    eprintln!(
        "tiles bootstrap: wrote {members} members, {zetas} revoked zetas, {} entries in {:.1} s",
        cp.size,
        written.elapsed().as_secs_f64()
    );
    if feed {
        // Today's way, for comparison: a gateway replaying the registry's feed.
        let dir = tempfile::tempdir().unwrap();
        let mut c = gateway_config(&reg.url, Anchor::Key(Box::new(key.clone())), dir.path());
        c.api.max_staleness = Duration::from_secs(3600);
        let started = Instant::now();
        let g = gateway_in(c, dir).await;
        wait_for("ready from the feed", || async {
            let (code, r) = g.get("/readyz").await;
            (code == 200 && r["applied_seq"].as_u64() >= Some(cp.size)).then_some(())
        })
        .await;
        eprintln!(
            "tiles bootstrap: the feed replay of the same log was ready in {:.2} s",
            started.elapsed().as_secs_f64()
        );
        g.shutdown().await;
    }
    // Nothing more is written: the registry may stop; the directory is what is read.
    reg.shutdown().await;
    let url = static_server(tiles.path().to_owned()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut c = gateway_config(
        "http://127.0.0.1:9",
        Anchor::Fingerprint(key.fingerprint()),
        dir.path(),
    );
    let mut t = TilesConfig::new(&url);
    t.poll = Duration::from_millis(50);
    c.tiles = Some(t);
    c.api.max_staleness = Duration::from_secs(3600);
    let started = Instant::now();
    let g = gateway_in(c, dir).await;
    let r = wait_for("ready from the tiles", || async {
        let (code, r) = g.get("/readyz").await;
        (code == 200).then_some(r)
    })
    .await;
    let ready = started.elapsed();
    assert!(r["applied_seq"].as_u64().unwrap() >= cp.size, "{r}");
    assert_eq!(r["snapshot"]["count"].as_u64().unwrap(), zetas, "{r}");
    let from = r["tiles"]["history_from_seq"].as_u64().unwrap();
    assert!(from > members, "it did not read the joins: {r}");
    eprintln!(
        "tiles bootstrap: ready in {:.2} s (entries read {}, snapshot {} of {zetas} zetas)",
        ready.as_secs_f64(),
        cp.size - from + 1,
        r["snapshot"]["number"]
    );
    g.shutdown().await;
}
