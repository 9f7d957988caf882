//! A gateway that reads the log's tiles (`--tiles`): it starts from the newest checkpoint
//! and the snapshot bundle it names without replaying the log, follows new checkpoints
//! through the tiles, refuses every tampered tile with a named fault (at the start, and a
//! new checkpoint's tile while following, keeping what it had), and keeps answering from a
//! published directory with the registry stopped until its state is stale.
//!
//! The registries here mirror to a local directory (`dgsp_tilestore::LocalDir`), served to
//! the gateways either by the registry itself (`/v1/log`) or by a small static file server
//! over the directory (as any web server, CDN or bucket would serve it); and, in the last
//! test, to the tests' S3 server (SeaweedFS), which two gateways read directly. One registry
//! has real witnesses (omniwitness and litewitness, `dgsp_witness::test_server`): a gateway
//! with their policy follows its directory's `checkpoint.witnessed` and turns stale when a
//! witness stops cosigning (`DGSP_SKIP_WITNESSES=1` skips it, saying so).

use crate::support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dgsp_gateway::anchor::Anchor;
use dgsp_gateway::tiles::TilesConfig;
use dgsp_wire::snapshot_bundle;
use serde_json::{json, Value};
use support::{gateway_config, gateway_in, wait_for, Gateway, Registry};

/// Serves the files under `dir` at `/<path>` (404 otherwise), as a static server or a
/// bucket does; the checkpoint with `max-age=1`, everything else immutable.
pub(crate) async fn static_server(dir: PathBuf) -> String {
    use axum::http::{header, StatusCode, Uri};
    use axum::response::IntoResponse;
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let dir = dir.clone();
        async move {
            let path = uri.path().trim_start_matches('/').to_owned();
            if path.split('/').any(|s| s.is_empty() || s.starts_with('.')) {
                return StatusCode::NOT_FOUND.into_response();
            }
            match tokio::fs::read(dir.join(&path)).await {
                Ok(bytes) => {
                    let cache = if path == "checkpoint" || path == "checkpoint.witnessed" {
                        "public, max-age=1"
                    } else {
                        "public, max-age=31536000, immutable"
                    };
                    ([(header::CACHE_CONTROL, cache)], bytes).into_response()
                }
                Err(_) => StatusCode::NOT_FOUND.into_response(),
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// Joins `n` members `{prefix}-N` in bulk requests.
pub(crate) async fn bulk_join(reg: &Registry, prefix: &str, n: usize) {
    let mut start = 0;
    while start < n {
        let end = (start + dgsp_wire::registry_api::MAX_BULK_JOIN).min(n);
        let names: Vec<String> = (start..end).map(|i| format!("{prefix}-{i}")).collect();
        reg.admin("/admin/v1/members/bulk", &json!({ "usernames": names }))
            .await;
        start = end;
    }
}

/// Waits until the directory's checkpoint covers the registry's whole log and names a
/// snapshot of at least `zetas` zetas; returns the note.
pub(crate) async fn published(reg: &Registry, dir: &Path, zetas: u64) -> String {
    wait_for("the mirror to publish the whole log", || async {
        let head = reg.store.head().unwrap().seq;
        let note = std::fs::read_to_string(dir.join("checkpoint")).ok()?;
        let cp = reg.manager.public_key().verify_checkpoint(&note).ok()?;
        let named = cp.snapshot?;
        let bundle = std::fs::read(dir.join(snapshot_bundle::path(named.number))).ok()?;
        let b = snapshot_bundle::SnapshotBundle::decode(&bundle).ok()?;
        (cp.size >= head && b.snapshot.record.count >= zetas).then_some(note)
    })
    .await
}

/// A gateway reading the tiles at `url`, pinned by fingerprint (the key read from the
/// tiles' entry 1), with `max_staleness`.
async fn tiles_gateway(
    reg_key: &dgsp_core::ManagerPublicKey,
    url: &str,
    max_staleness: Duration,
) -> Gateway {
    tiles_gateway_in(reg_key, url, max_staleness, tempfile::tempdir().unwrap()).await
}

/// [`tiles_gateway`] on the replica directory `dir`.
async fn tiles_gateway_in(
    reg_key: &dgsp_core::ManagerPublicKey,
    url: &str,
    max_staleness: Duration,
    dir: tempfile::TempDir,
) -> Gateway {
    let c = tiles_config(reg_key, url, max_staleness, dir.path());
    gateway_in(c, dir).await
}

/// The configuration of a gateway reading the tiles at `url` with its replica in `data`.
pub(crate) fn tiles_config(
    reg_key: &dgsp_core::ManagerPublicKey,
    url: &str,
    max_staleness: Duration,
    data: &Path,
) -> dgsp_gateway::server::Config {
    let mut c = gateway_config(
        "http://127.0.0.1:9",
        Anchor::Fingerprint(reg_key.fingerprint()),
        data,
    );
    let mut t = TilesConfig::new(url);
    t.poll = Duration::from_millis(50);
    t.max_backoff = Duration::from_millis(200);
    t.timeout = Duration::from_secs(2);
    c.tiles = Some(t);
    c.api.max_staleness = max_staleness;
    c
}

pub(crate) async fn readyz(g: &Gateway) -> (u16, Value) {
    g.get("/readyz").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_starts_from_the_tiles_and_follows_them() {
    let tiles = tempfile::tempdir().unwrap();
    let (reg, ()) =
        support::registry_with_tiles(tiles.path(), Duration::from_millis(200), |_, _| ()).await;
    bulk_join(&reg, "m", 600).await;
    let mut alice = reg.member("alice", 3).await;
    reg.reserve_and_revoke(0, 7).await;
    let note = published(&reg, tiles.path(), 7).await;
    let cp = reg.manager.public_key().verify_checkpoint(&note).unwrap();
    let key = reg.manager.public_key().clone();
    // From the registry's own /v1/log, and from a static server over the directory.
    for url in [
        format!("{}/v1/log", reg.url),
        static_server(tiles.path().to_owned()).await,
    ] {
        let g = tiles_gateway(&key, &url, Duration::from_secs(60)).await;
        let r = wait_for("ready from the tiles", || async {
            let (code, r) = readyz(&g).await;
            (code == 200).then_some(r)
        })
        .await;
        assert!(r["applied_seq"].as_u64().unwrap() >= cp.size, "{r}");
        let t = &r["tiles"];
        assert!(t["bootstrap_snapshot"].as_u64().unwrap() >= 2, "{r}");
        let from = t["history_from_seq"].as_u64().unwrap();
        assert!(from > 600, "it started after the joins: {r}");
        // It answers with the revocation state, without having read the joins.
        let message = b"from the tiles";
        let sig = alice.sign(message);
        let answer = g.verify(message, &sig).await;
        assert_eq!(answer["status"], "ok", "{answer}");
        // Older snapshots are before its history.
        let (code, body) = g.get("/v1/revocations/snapshots/1").await;
        assert_eq!(code, 404);
        assert!(
            body["type"].as_str().unwrap().ends_with("before-bootstrap"),
            "{body}"
        );
        g.shutdown().await;
    }
    // A gateway that started from the tiles follows them: a revocation after its start.
    let g = tiles_gateway(
        &key,
        &format!("{}/v1/log", reg.url),
        Duration::from_secs(60),
    )
    .await;
    wait_for("ready", || async {
        (readyz(&g).await.0 == 200).then_some(())
    })
    .await;
    let message = b"after the revocation";
    let sig = alice.sign(message);
    reg.revoke(alice.id).await;
    let answer = wait_for("the revocation through the tiles", || async {
        let a = g.verify(message, &sig).await;
        (a["status"] == "revoked" && a["revocation"]["pending_snapshot"] == false).then_some(a)
    })
    .await;
    assert!(
        answer["revocation"]["snapshot"]["number"].as_u64().unwrap() >= 3,
        "{answer}"
    );
    let (code, r) = readyz(&g).await;
    assert_eq!(code, 200, "{r}");
    assert!(
        r["tiles"]["checkpoints_applied"].as_u64().unwrap() >= 2,
        "{r}"
    );
    g.shutdown().await;
    // A gateway restarted on its replica resumes from it (no second bootstrap) and follows.
    let data = tempfile::tempdir().unwrap();
    let url = format!("{}/v1/log", reg.url);
    let c = tiles_config(&key, &url, Duration::from_secs(60), data.path());
    let first = support::gateway(c.clone()).await;
    let before = wait_for("ready", || async {
        let (code, r) = readyz(&first).await;
        (code == 200).then_some(r)
    })
    .await;
    first.shutdown().await;
    bulk_join(&reg, "later", 5).await;
    let head = reg.store.head().unwrap().seq;
    let again = support::gateway(c).await;
    let after = wait_for("ready again, past the new entries", || async {
        let (code, r) = readyz(&again).await;
        (code == 200 && r["applied_seq"].as_u64()? >= head).then_some(r)
    })
    .await;
    assert_eq!(
        after["tiles"]["history_from_seq"], before["tiles"]["history_from_seq"],
        "resumed, not started again: {after}"
    );
    again.shutdown().await;
    reg.shutdown().await;
}

/// Copies `from` to a new directory.
pub(crate) fn copy_dir(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    let ok = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", from.display()))
        .arg(to.path())
        .status()
        .unwrap();
    assert!(ok.success());
    to
}

fn flip(path: &Path, at: impl Fn(usize) -> usize) {
    let mut b = std::fs::read(path).unwrap();
    let i = at(b.len());
    b[i] ^= 0x01;
    put(path, b);
}

/// Replaces the file at `path` with `bytes` in one step, as the registry's mirror does (a
/// temporary file renamed over it): a gateway following the directory never reads a file
/// half-written. (`std::fs::write` and `std::fs::copy` truncate first: a gateway polling at
/// that moment read an empty bundle, `bad_tile`, where the test meant another fault.)
pub(crate) fn put(path: &Path, bytes: impl AsRef<[u8]>) {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_file_name(format!(".put-{}-{n}", std::process::id()));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampered_tiles_are_refused_with_named_faults() {
    let tiles = tempfile::tempdir().unwrap();
    let (reg, ()) =
        support::registry_with_tiles(tiles.path(), Duration::from_millis(200), |_, _| ()).await;
    bulk_join(&reg, "m", 300).await;
    reg.reserve_and_revoke(0, 9).await;
    bulk_join(&reg, "n", 10).await;
    let note = published(&reg, tiles.path(), 9).await;
    let manager = reg.manager.clone();
    let key = manager.public_key().clone();
    reg.shutdown().await;
    let cp = key.verify_checkpoint(&note).unwrap();
    assert!(cp.size % 256 != 0, "a partial tile at the checkpoint");
    let bundle = format!(
        "tile/entries/{}.p/{}",
        dgsp_wire::tiles::encode_index(cp.size / 256),
        cp.size % 256
    );
    let level0 = format!(
        "tile/0/{}.p/{}",
        dgsp_wire::tiles::encode_index(cp.size / 256),
        cp.size % 256
    );
    let snapshot = snapshot_bundle::path(cp.snapshot.unwrap().number);
    // Another partial tile of the same index, from an earlier checkpoint (another size).
    let level0_dir = tiles.path().join(&level0).parent().unwrap().to_owned();
    let other = std::fs::read_dir(&level0_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| *p != tiles.path().join(&level0))
        .expect("an earlier checkpoint's partial tile");
    let forged = {
        let mut wrong = cp.clone();
        wrong.root = [7; 32];
        manager.sign_checkpoint(&wrong)
    };
    type Tamper = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Tamper, &str)> = vec![
        (
            "a changed byte in an entry bundle",
            Box::new({
                let p = bundle.clone();
                move |d: &Path| flip(&d.join(&p), |n| n - 20)
            }),
            "tile_mismatch",
        ),
        (
            "a changed byte in a hash tile",
            Box::new({
                let p = level0.clone();
                move |d: &Path| flip(&d.join(&p), |n| n / 2)
            }),
            "root_mismatch",
        ),
        (
            "a truncated bundle",
            Box::new({
                let p = bundle.clone();
                move |d: &Path| {
                    let b = std::fs::read(d.join(&p)).unwrap();
                    std::fs::write(d.join(&p), &b[..b.len() - 5]).unwrap();
                }
            }),
            "bad_tile",
        ),
        (
            "a tile from another tree size",
            Box::new({
                let (p, other) = (level0.clone(), other.clone());
                move |d: &Path| {
                    std::fs::copy(&other, d.join(&p)).unwrap();
                }
            }),
            "bad_tile",
        ),
        (
            "a checkpoint whose root line was changed",
            Box::new({
                let note = note.clone();
                move |d: &Path| {
                    let mut lines: Vec<String> = note.lines().map(str::to_owned).collect();
                    lines[2] = base64::Engine::encode(
                        &base64::engine::general_purpose::STANDARD,
                        [9u8; 32],
                    );
                    std::fs::write(d.join("checkpoint"), lines.join("\n") + "\n").unwrap();
                }
            }),
            "bad_checkpoint",
        ),
        (
            "a signed checkpoint whose root is not the tiles'",
            Box::new(move |d: &Path| std::fs::write(d.join("checkpoint"), &forged).unwrap()),
            "root_mismatch",
        ),
        (
            "a snapshot bundle whose zetas do not give its signed root",
            Box::new({
                let p = snapshot.clone();
                move |d: &Path| flip(&d.join(&p), |n| n - 1)
            }),
            "bad_snapshot_bundle",
        ),
    ];
    for (what, tamper, kind) in cases {
        let copy = copy_dir(tiles.path());
        tamper(copy.path());
        let url = static_server(copy.path().to_owned()).await;
        let g = tiles_gateway(&key, &url, Duration::from_secs(60)).await;
        let r = wait_for(what, || async {
            let (code, r) = readyz(&g).await;
            (r["fault"]["kind"].is_string()).then_some((code, r))
        })
        .await;
        assert_eq!(r.1["fault"]["kind"], kind, "{what}: {}", r.1);
        assert_eq!(r.0, 503, "{what}: nothing unverified is served: {}", r.1);
        assert_eq!(r.1["status"], "no_snapshot", "{what}");
        assert_eq!(r.1["applied_seq"], 0, "{what}");
        g.shutdown().await;
    }
    // The untampered copy starts.
    let url = static_server(tiles.path().to_owned()).await;
    let g = tiles_gateway(&key, &url, Duration::from_secs(600)).await;
    wait_for("ready from the untampered tiles", || async {
        (readyz(&g).await.0 == 200).then_some(())
    })
    .await;
    g.shutdown().await;
}

/// Brings the served directory `to` up to the registry's published `from` for the checkpoint
/// `note`: every tile and snapshot bundle first, then `tamper` on the copy, then the
/// checkpoint, as the mirror writes them (a reader that sees the note finds its tiles).
pub(crate) fn publish_to(from: &Path, to: &Path, note: &str, tamper: impl FnOnce(&Path)) {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let name = e.file_name();
            if name == "checkpoint" || name == "checkpoint.witnessed" {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &to.join(&name));
            } else {
                put(&to.join(&name), std::fs::read(e.path()).unwrap());
            }
        }
    }
    copy(from, to);
    tamper(to);
    put(&to.join("checkpoint"), note);
}

/// The entry bundle of the tree of `size` entries that holds entry `size`.
fn last_bundle(size: u64) -> String {
    dgsp_wire::tiles::Tile {
        level: None,
        index: (size - 1) / 256,
        width: ((size - 1) % 256 + 1) as u16,
    }
    .path()
}

/// A gateway that started from the tiles and follows them: a new checkpoint's entry bundle
/// is changed in the served directory before the gateway reads it. It is refused
/// (`tile_mismatch`, in `/readyz` and the fault counter), none of its entries (a revocation
/// among them) is applied, and the gateway keeps answering from the checkpoint it had,
/// ready and degraded, until that is older than its bound; the honest bundle is then applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_tile_is_refused_while_following() {
    let tiles = tempfile::tempdir().unwrap();
    let (reg, ()) =
        support::registry_with_tiles(tiles.path(), Duration::from_millis(200), |_, _| ()).await;
    bulk_join(&reg, "m", 50).await;
    let mut alice = reg.member("alice", 2).await;
    reg.reserve_and_revoke(0, 3).await;
    let key = reg.manager.public_key().clone();
    // The directory the gateway reads, which the test brings up to the registry's.
    let served = tempfile::tempdir().unwrap();
    let note = published(&reg, tiles.path(), 3).await;
    publish_to(tiles.path(), served.path(), &note, |_| ());
    let url = static_server(served.path().to_owned()).await;
    let max = Duration::from_secs(8);
    let g = tiles_gateway(&key, &url, max).await;
    wait_for("ready from the tiles", || async {
        (readyz(&g).await.0 == 200).then_some(())
    })
    .await;
    // It follows an honest checkpoint (which also makes its state recent).
    bulk_join(&reg, "honest", 5).await;
    let note = published(&reg, tiles.path(), 3).await;
    let held = key.verify_checkpoint(&note).unwrap();
    publish_to(tiles.path(), served.path(), &note, |_| ());
    g.reach(held.size).await;
    let (code, r) = readyz(&g).await;
    assert_eq!(code, 200, "{r}");
    assert!(r["fault"].is_null(), "{r}");
    let message = b"signed before the revocation";
    let sig = alice.sign(message);
    assert_eq!(g.verify(message, &sig).await["status"], "ok");

    // Alice is revoked; the next checkpoint's last bundle has a changed byte when the
    // gateway reads it.
    bulk_join(&reg, "tampered", 5).await;
    reg.revoke(alice.id).await;
    let note = published(&reg, tiles.path(), 5).await;
    let next = key.verify_checkpoint(&note).unwrap();
    assert!(next.size > held.size);
    let bundle = last_bundle(next.size);
    assert!(
        !served.path().join(&bundle).exists(),
        "{bundle} is new to the gateway"
    );
    publish_to(tiles.path(), served.path(), &note, |d| {
        flip(&d.join(&bundle), |n| n - 20)
    });
    let r = wait_for("the tampered bundle refused", || async {
        let (code, r) = readyz(&g).await;
        (r["fault"]["kind"].is_string()).then_some((code, r))
    })
    .await;
    assert_eq!(r.1["fault"]["kind"], "tile_mismatch", "{}", r.1);
    assert_eq!(
        r.1["last_integrity_fault"]["kind"], "tile_mismatch",
        "{}",
        r.1
    );
    // Still ready on what it had: nothing of the refused checkpoint is applied.
    assert_eq!(r.0, 200, "{}", r.1);
    assert_eq!(r.1["status"], "degraded", "{}", r.1);
    assert_eq!(r.1["applied_seq"], held.size, "{}", r.1);
    assert_eq!(r.1["registry_checkpoint_size"], next.size, "{}", r.1);
    let faults = support::metric(
        &g.metrics().await,
        "dgsp_gateway_feed_faults_total{kind=\"tile_mismatch\"}",
    )
    .unwrap_or(0.0);
    assert!(faults >= 1.0, "the fault is counted");
    let answer = g.verify(message, &sig).await;
    assert_eq!(
        answer["status"], "ok",
        "the revocation was not applied: {answer}"
    );
    assert_eq!(answer["freshness"]["applied_seq"], held.size, "{answer}");
    assert_eq!(
        answer["freshness"]["checkpoint"]["size"], held.size,
        "{answer}"
    );
    // Retried, refused each time, and stale once its checkpoint is older than the bound.
    let r = wait_for("stale", || async {
        let (code, r) = readyz(&g).await;
        (code == 503).then_some(r)
    })
    .await;
    let age =
        Duration::from_millis(dgsp_wire::log::now_ms().saturating_sub(held.time_unix_ms.unwrap()));
    assert!(
        age >= max - Duration::from_millis(600),
        "stale only after max-age ({age:?})"
    );
    assert_eq!(r["status"], "stale", "{r}");
    assert_eq!(r["fault"]["kind"], "tile_mismatch", "{r}");
    assert_eq!(r["applied_seq"], held.size, "{r}");
    assert_eq!(g.verify(message, &sig).await["status"], "stale");
    // The honest bundle in its place: the checkpoint is applied, the revocation with it.
    put(
        &served.path().join(&bundle),
        std::fs::read(tiles.path().join(&bundle)).unwrap(),
    );
    g.reach(next.size).await;
    let (_, r) = readyz(&g).await;
    assert!(r["fault"].is_null(), "{r}");
    assert_eq!(r["last_integrity_fault"]["kind"], "tile_mismatch", "{r}");
    let answer = g.verify(message, &sig).await;
    assert_eq!(answer["revocation"]["revoked"], true, "{answer}");
    g.shutdown().await;
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_keep_answering_from_the_directory_with_the_registry_stopped() {
    let tiles = tempfile::tempdir().unwrap();
    let (reg, ()) =
        support::registry_with_tiles(tiles.path(), Duration::from_millis(200), |_, _| ()).await;
    bulk_join(&reg, "m", 50).await;
    let mut alice = reg.member("alice", 2).await;
    reg.reserve_and_revoke(0, 3).await;
    published(&reg, tiles.path(), 3).await;
    let key = reg.manager.public_key().clone();
    let url = static_server(tiles.path().to_owned()).await;
    let max = Duration::from_secs(4);
    let a = tiles_gateway(&key, &url, max).await;
    let b = tiles_gateway(&key, &url, max).await;
    for g in [&a, &b] {
        wait_for("ready", || async {
            (readyz(g).await.0 == 200).then_some(())
        })
        .await;
    }
    let message = b"while the registry is gone";
    let sig = alice.sign(message);
    reg.shutdown().await;
    let stopped = Instant::now();
    // Both keep answering from the last checkpoint the directory holds...
    for g in [&a, &b] {
        let answer = g.verify(message, &sig).await;
        assert_eq!(answer["status"], "ok", "{answer}");
        assert_eq!(readyz(g).await.0, 200);
    }
    // ...until it is older than their bound: stale, by its signed time.
    for g in [&a, &b] {
        let r = wait_for("stale", || async {
            let (code, r) = readyz(g).await;
            (code == 503).then_some(r)
        })
        .await;
        assert_eq!(r["status"], "stale", "{r}");
        let answer = g.verify(message, &sig).await;
        assert_eq!(answer["status"], "stale", "{answer}");
    }
    let elapsed = stopped.elapsed();
    assert!(
        elapsed >= max - Duration::from_millis(600),
        "stale only after max-age ({elapsed:?})"
    );
    a.shutdown().await;
    b.shutdown().await;
}

/// Two gateways reading the same S3 bucket directly (`--tiles s3://...`, with credentials)
/// keep answering with the registry stopped, until their state is older than their bound.
/// Against the tests' SeaweedFS (`scripts/s3.sh`); `DGSP_SKIP_S3=1` skips it, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_keep_answering_from_the_bucket_with_the_registry_stopped() {
    let Some(s3) = dgsp_tilestore::test_server::s3_env("two gateways on one bucket") else {
        return;
    };
    let cfg = s3.config("gateways");
    let bucket: std::sync::Arc<dyn dgsp_tilestore::TileStore> =
        std::sync::Arc::new(dgsp_tilestore::S3::open(cfg.clone()).unwrap());
    let reg = support::registry_with_tile_store(bucket.clone(), Duration::from_millis(200)).await;
    bulk_join(&reg, "m", 50).await;
    let mut alice = reg.member("alice", 2).await;
    reg.reserve_and_revoke(0, 3).await;
    let head = reg.store.head().unwrap().seq;
    let group = reg.manager.public_key().clone();
    wait_for(
        "the mirror to publish the whole log into the bucket",
        || async {
            let note = bucket.get("checkpoint").await.ok()??;
            let cp = group
                .verify_checkpoint(std::str::from_utf8(&note.bytes).ok()?)
                .ok()?;
            (cp.size >= head && cp.snapshot.is_some()).then_some(())
        },
    )
    .await;
    let url = format!("s3://{}/{}", cfg.bucket, cfg.prefix);
    let max = Duration::from_secs(4);
    let gateway = |data: tempfile::TempDir| {
        let mut c = tiles_config(&group, &url, max, data.path());
        let t = c.tiles.as_mut().unwrap();
        // Each its own client of the bucket, as two processes would have.
        t.store = Some(std::sync::Arc::new(
            dgsp_tilestore::S3::open(cfg.clone()).unwrap(),
        ));
        gateway_in(c, data)
    };
    let a = gateway(tempfile::tempdir().unwrap()).await;
    let b = gateway(tempfile::tempdir().unwrap()).await;
    for g in [&a, &b] {
        wait_for("ready from the bucket", || async {
            (readyz(g).await.0 == 200).then_some(())
        })
        .await;
        let (_, r) = readyz(g).await;
        assert_eq!(r["tiles"]["url"], url.as_str(), "{r}");
    }
    let message = b"while the registry is gone";
    let sig = alice.sign(message);
    reg.shutdown().await;
    let stopped = Instant::now();
    for g in [&a, &b] {
        let answer = g.verify(message, &sig).await;
        assert_eq!(answer["status"], "ok", "{answer}");
    }
    for g in [&a, &b] {
        let r = wait_for("stale", || async {
            let (code, r) = readyz(g).await;
            (code == 503).then_some(r)
        })
        .await;
        assert_eq!(r["status"], "stale", "{r}");
        assert_eq!(g.verify(message, &sig).await["status"], "stale");
    }
    assert!(
        stopped.elapsed() >= max - Duration::from_millis(600),
        "stale only after max-age ({:?})",
        stopped.elapsed()
    );
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_with_a_witness_policy_follows_the_witnessed_tiles() {
    use dgsp_gateway::witness::WitnessPolicy;
    use dgsp_registry::publisher::PublisherConfig;
    use dgsp_registry::witnessing::{LogKey, Witnesses};
    use dgsp_wire::log::now_ms;
    use dgsp_witness::test_server::TestWitnesses;
    use std::sync::{Arc, Mutex};

    let tiles = tempfile::tempdir().unwrap();
    // The witnesses need the log's key, which the registry's manager derives.
    let started: Arc<Mutex<Option<TestWitnesses>>> = Arc::default();
    let held = started.clone();
    let reg = support::registry_publishing_with_tiles(
        tiles.path(),
        Box::new(move |manager| {
            let log_key = LogKey::derive(manager, 0, now_ms()).unwrap();
            let Some(w) = TestWitnesses::start("gateway tiles witnessed", &[&log_key.vkey()])
            else {
                return PublisherConfig::default();
            };
            let policy = std::fs::read_to_string(&w.policy_path).unwrap();
            let witnesses = Witnesses::new(
                Arc::new(log_key),
                &policy,
                Duration::from_secs(2),
                Arc::new(dgsp_http::clock::SystemClock),
            )
            .unwrap();
            *held.lock().unwrap() = Some(w);
            PublisherConfig {
                checkpoint_interval: Duration::from_secs(1),
                witnesses: Some(Arc::new(witnesses)),
                ..PublisherConfig::default()
            }
        }),
    )
    .await;
    let Some(witnesses) = started.lock().unwrap().take() else {
        reg.shutdown().await;
        return;
    };
    let policy_text = std::fs::read_to_string(&witnesses.policy_path).unwrap();
    let policy = WitnessPolicy::parse(&policy_text).unwrap();
    bulk_join(&reg, "m", 20).await;
    let mut alice = reg.member("alice", 2).await;
    reg.reserve_and_revoke(0, 2).await;
    published(&reg, tiles.path(), 2).await;

    // The directory holds the witnessed note of the tree its checkpoint names.
    let group = reg.manager.public_key().clone();
    wait_for("checkpoint.witnessed of the checkpoint's tree", || async {
        let note = std::fs::read_to_string(tiles.path().join("checkpoint")).ok()?;
        let witnessed = std::fs::read_to_string(tiles.path().join("checkpoint.witnessed")).ok()?;
        let cp = group.verify_checkpoint(&note).ok()?;
        policy
            .verify(
                &witnessed,
                &cp,
                now_ms(),
                Some(Duration::from_secs(60)),
                Duration::from_secs(5),
            )
            .ok()
    })
    .await;

    // A gateway with the policy, reading the directory: fresh as of a witnessed checkpoint.
    let url = static_server(tiles.path().to_owned()).await;
    let max = Duration::from_secs(6);
    let data = tempfile::tempdir().unwrap();
    let mut c = tiles_config(&group, &url, max, data.path());
    c.witness_policy = Some(Arc::new(policy));
    let g = gateway_in(c, data).await;
    let r = wait_for("ready on a witnessed checkpoint", || async {
        let (code, r) = readyz(&g).await;
        (code == 200).then_some(r)
    })
    .await;
    assert_eq!(
        r["witnessed"]["cosigners"].as_array().map(Vec::len),
        Some(2),
        "{r}"
    );
    let message = b"witnessed through the tiles";
    let sig = alice.sign(message);
    let answer = g.verify(message, &sig).await;
    assert_eq!(answer["status"], "ok", "{answer}");
    let witnessed = answer["freshness"]["checkpoint"]["witnessed"]
        .as_str()
        .unwrap_or_else(|| panic!("no witnessed note in {answer}"));
    assert!(witnessed.starts_with(&dgsp_core::checkpoint::origin_for(&group)));

    // litewitness stops cosigning: nothing newer is published, and the gateway turns stale
    // once the quorum's cosignatures are older than its bound.
    witnesses.freeze_litewitness();
    let frozen = Instant::now();
    let r = wait_for("stale without the quorum", || async {
        let (code, r) = readyz(&g).await;
        (code == 503).then_some(r)
    })
    .await;
    witnesses.thaw_litewitness();
    assert_eq!(r["status"], "stale", "{r}");
    let answer = g.verify(message, &sig).await;
    assert_eq!(answer["status"], "stale", "{answer}");
    assert!(
        frozen.elapsed() >= max / 2,
        "stale only after about max-age ({:?})",
        frozen.elapsed()
    );
    // It answers again: the gateway is fresh again on a newer witnessed checkpoint.
    wait_for("fresh again", || async {
        (readyz(&g).await.0 == 200).then_some(())
    })
    .await;
    g.shutdown().await;
    reg.shutdown().await;
}
