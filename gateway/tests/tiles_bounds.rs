//! A gateway reading tiles applies the log's rules as the feed follower does, and bounds
//! what it reads before it holds it: a member revoked before it held a certificate does not
//! stop a start from the tiles; a group with more entries since its newest snapshot than one
//! step holds starts in steps; a step over the byte budget is refused whole; a snapshot
//! bundle that declares more zetas than its signed record is refused from its header, the
//! rest unread; a `checkpoint.witnessed` of another tree than `checkpoint` (a cache serving
//! one older than the other) is read again, not taken for an integrity fault.
//!
//! Each against a real registry's published directory (its mirror writing to a local
//! directory), served by the registry (`/v1/log`) or a small static server over a copy.

use crate::support;
use crate::tiles::{bulk_join, publish_to, published, put, readyz, static_server, tiles_config};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dgsp_wire::snapshot_bundle::{self, Header, SnapshotBundle};
use serde_json::Value;
use support::{gateway_in, wait_for, Gateway, Registry};

/// A gateway reading the tiles at `url` (fingerprint anchor), its tiles configuration
/// adjusted by `tweak`.
async fn gateway_with(
    reg: &Registry,
    url: &str,
    tweak: impl FnOnce(&mut dgsp_gateway::server::Config),
) -> Gateway {
    let data = tempfile::tempdir().unwrap();
    let mut c = tiles_config(
        reg.manager.public_key(),
        url,
        Duration::from_secs(600),
        data.path(),
    );
    tweak(&mut c);
    gateway_in(c, data).await
}

/// The first `/readyz` that is ready, or that reports a fault.
async fn ready_or_fault(g: &Gateway, what: &str) -> (u16, Value) {
    wait_for(what, || async {
        let (code, r) = readyz(g).await;
        (code == 200 || r["fault"]["kind"].is_string()).then_some((code, r))
    })
    .await
}

/// The snapshot record `log_seq` of the bundle the directory's checkpoint `note` names.
fn named_log_seq(reg: &Registry, dir: &Path, note: &str) -> u64 {
    let cp = reg.manager.public_key().verify_checkpoint(note).unwrap();
    let bundle =
        std::fs::read(dir.join(snapshot_bundle::path(cp.snapshot.unwrap().number))).unwrap();
    SnapshotBundle::decode(&bundle)
        .unwrap()
        .snapshot
        .record
        .log_seq
}

/// A member revoked before any certificate was issued to it revokes no zeta, so no
/// snapshot follows its revocation: the newest snapshot is before it, and the checkpoint
/// after it still holds every revoked zeta. A gateway starting from those tiles, as one on
/// the feed, is ready (the canonical rule, `dgsp_wire::coverage`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_revoked_without_certificates_does_not_stop_a_start_from_the_tiles() {
    let tiles = tempfile::tempdir().unwrap();
    let (reg, ()) =
        support::registry_with_tiles(tiles.path(), Duration::from_millis(200), |_, _| ()).await;
    bulk_join(&reg, "m", 10).await;
    let mut alice = reg.member("alice", 2).await;
    reg.reserve_and_revoke(0, 3).await;
    published(&reg, tiles.path(), 3).await;
    // m-1 never had a certificate.
    assert_eq!(reg.revoke(1).await, Vec::<String>::new());
    let revoked = reg
        .public_log()
        .into_iter()
        .rfind(|e| e.kind == "member_revoked")
        .unwrap();
    assert_eq!(
        revoked.public["zetas"],
        serde_json::json!([]),
        "{revoked:?}"
    );
    let head = reg.store.head().unwrap().seq;
    let note = wait_for("a published checkpoint past the revocation", || async {
        let note = published(&reg, tiles.path(), 3).await;
        let cp = reg.manager.public_key().verify_checkpoint(&note).unwrap();
        (cp.size >= head).then_some(note)
    })
    .await;
    let cut = named_log_seq(&reg, tiles.path(), &note);
    assert!(
        cut < revoked.seq,
        "the newest snapshot ({cut}) is before the revocation at {}",
        revoked.seq
    );
    let cp = reg.manager.public_key().verify_checkpoint(&note).unwrap();
    for url in [
        format!("{}/v1/log", reg.url),
        static_server(tiles.path().to_owned()).await,
    ] {
        let g = gateway_with(&reg, &url, |_| ()).await;
        let (code, r) = ready_or_fault(&g, "ready from the tiles").await;
        assert_eq!(code, 200, "{url}: {r}");
        assert!(r["applied_seq"].as_u64().unwrap() >= cp.size, "{r}");
        assert_eq!(r["tiles"]["history_from_seq"].as_u64(), Some(cut), "{r}");
        let message = b"after a revocation of no zeta";
        let sig = alice.sign(message);
        assert_eq!(g.verify(message, &sig).await["status"], "ok");
        g.shutdown().await;
    }
    reg.shutdown().await;
}

/// The step bound of these tests, far below the default (200 000).
const STEP: u64 = 64;

/// More entries after the newest snapshot than one step holds: the gateway applies them in
/// steps, each covered by a checkpoint entry of the log, and is ready at the published
/// checkpoint. A gateway restarted on its replica after that follows on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_entries_after_the_newest_snapshot_than_a_step_holds_start_in_steps() {
    let tiles = tempfile::tempdir().unwrap();
    let (reg, ()) =
        support::registry_with_tiles(tiles.path(), Duration::from_millis(200), |_, _| ()).await;
    bulk_join(&reg, "m", 10).await;
    let mut alice = reg.member("alice", 2).await;
    reg.reserve_and_revoke(0, 3).await;
    published(&reg, tiles.path(), 3).await;
    // Joins only (no snapshot follows them), each batch checkpointed in the log.
    for round in 0..8 {
        bulk_join(&reg, &format!("r{round}"), 30).await;
        let head = reg.store.head().unwrap().seq;
        wait_for("a checkpoint entry of the batch", || async {
            (reg.checkpointed() >= head).then_some(())
        })
        .await;
    }
    let head = reg.store.head().unwrap().seq;
    let note = wait_for("the published checkpoint of the whole log", || async {
        let note = published(&reg, tiles.path(), 3).await;
        let cp = reg.manager.public_key().verify_checkpoint(&note).unwrap();
        (cp.size >= head).then_some(note)
    })
    .await;
    let cp = reg.manager.public_key().verify_checkpoint(&note).unwrap();
    let cut = named_log_seq(&reg, tiles.path(), &note);
    assert!(
        cp.size - cut > 3 * STEP,
        "{} entries after the snapshot, several steps of {STEP}",
        cp.size - cut
    );
    let url = static_server(tiles.path().to_owned()).await;
    let data = tempfile::tempdir().unwrap();
    let mut c = tiles_config(
        reg.manager.public_key(),
        &url,
        Duration::from_secs(600),
        data.path(),
    );
    c.tiles.as_mut().unwrap().max_entries = STEP;
    let g = support::gateway(c.clone()).await;
    // Each step is a checkpoint's state (ready as soon as one is fresh), up to the last.
    let r = wait_for("the whole log applied from the tiles, in steps", || async {
        let (code, r) = readyz(&g).await;
        let done = r["fault"]["kind"].is_string()
            || (code == 200 && r["applied_seq"].as_u64()? >= cp.size);
        done.then_some(r)
    })
    .await;
    assert!(r["fault"].is_null(), "{r}");
    assert_eq!(r["tiles"]["history_from_seq"].as_u64(), Some(cut), "{r}");
    let steps = support::metric(&g.metrics().await, "dgsp_gateway_ranges_applied_total").unwrap();
    assert!(
        steps >= ((cp.size - cut) / STEP) as f64,
        "{steps} steps for {} entries",
        cp.size - cut
    );
    let message = b"started in steps";
    let sig = alice.sign(message);
    assert_eq!(g.verify(message, &sig).await["status"], "ok");
    g.shutdown().await;
    // Restarted on that replica, it follows new entries (in steps again).
    for round in 0..3 {
        bulk_join(&reg, &format!("later{round}"), 30).await;
        let head = reg.store.head().unwrap().seq;
        wait_for("a checkpoint entry of the batch", || async {
            (reg.checkpointed() >= head).then_some(())
        })
        .await;
    }
    let head = reg.store.head().unwrap().seq;
    let g = support::gateway(c).await;
    wait_for("the restarted gateway past the new entries", || async {
        let (code, r) = readyz(&g).await;
        (code == 200 && r["applied_seq"].as_u64()? >= head).then_some(())
    })
    .await;
    let (_, r) = readyz(&g).await;
    assert_eq!(r["tiles"]["history_from_seq"].as_u64(), Some(cut), "{r}");
    drop(data);
    g.shutdown().await;
    reg.shutdown().await;
}

/// A step holds at most the byte budget of parsed entries (`--max-pending-bytes`, as the
/// feed's pending entries): a revocation of many zetas, parts of which pass it before any
/// checkpoint covers them, is refused (`pending_limit`) and none of it applied; the gateway
/// keeps its state. A gateway with the default budget applies it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_over_the_byte_budget_is_refused_whole() {
    const BUDGET: usize = 256 << 10;
    let tiles = tempfile::tempdir().unwrap();
    let (reg, ()) =
        support::registry_with_tiles(tiles.path(), Duration::from_millis(200), |_, _| ()).await;
    bulk_join(&reg, "m", 10).await;
    let mut alice = reg.member("alice", 2).await;
    reg.reserve_and_revoke(0, 3).await;
    published(&reg, tiles.path(), 3).await;
    let url = format!("{}/v1/log", reg.url);
    let g = gateway_with(&reg, &url, |c| {
        c.tiles.as_mut().unwrap().max_bytes = BUDGET;
    })
    .await;
    let (code, r) = ready_or_fault(&g, "ready within the budget").await;
    assert_eq!(code, 200, "{r}");
    let before = r["applied_seq"].as_u64().unwrap();
    let message = b"before the large revocation";
    let sig = alice.sign(message);
    // Alice's 2 certificates and 6000 reserved ones: ~480 KB of parsed zetas.
    reg.reserve_and_revoke(alice.id, 6000).await;
    let note = published(&reg, tiles.path(), 6003).await;
    let cp = reg.manager.public_key().verify_checkpoint(&note).unwrap();
    let r = wait_for("the large step refused or applied", || async {
        let (_, r) = readyz(&g).await;
        let done = r["fault"]["kind"].is_string() || r["applied_seq"].as_u64()? >= cp.size;
        done.then_some(r)
    })
    .await;
    assert_eq!(r["fault"]["kind"], "pending_limit", "{r}");
    let detail = r["fault"]["detail"].as_str().unwrap();
    assert!(detail.contains(&BUDGET.to_string()), "{detail}");
    // What checkpoints covered before the revocation may be applied; none of it is.
    let applied = r["applied_seq"].as_u64().unwrap();
    assert!(applied >= before && applied < cp.size, "{r}");
    let answer = g.verify(message, &sig).await;
    assert_eq!(
        answer["status"], "ok",
        "the revocation is not applied: {answer}"
    );
    g.shutdown().await;
    // The default budget holds it.
    let g = gateway_with(&reg, &url, |_| ()).await;
    let (code, r) = ready_or_fault(&g, "ready with the default budget").await;
    assert_eq!(code, 200, "{r}");
    g.reach(cp.size).await;
    let answer = g.verify(message, &sig).await;
    assert_eq!(answer["revocation"]["revoked"], true, "{answer}");
    g.shutdown().await;
    reg.shutdown().await;
}

/// One answer of [`lying_server`]'s bundle: bytes sent, and whether sending has ended.
type Sent = Arc<(AtomicU64, AtomicBool)>;

/// Serves the files under `dir` over HTTP/1.1 (one request a connection, closed after the
/// answer), except `lying`, answered with `head` then 1 GiB of zero bytes, without a
/// length, for as long as the client reads; each such answer is recorded in the list.
async fn lying_server(
    dir: PathBuf,
    lying: String,
    head: Vec<u8>,
) -> (String, Arc<Mutex<Vec<Sent>>>) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let answers: Arc<Mutex<Vec<Sent>>> = Arc::default();
    let list = answers.clone();
    tokio::spawn(async move {
        loop {
            let Ok((conn, _)) = listener.accept().await else {
                return;
            };
            let (dir, lying, head, list) = (dir.clone(), lying.clone(), head.clone(), list.clone());
            tokio::spawn(async move {
                let (read, mut write) = conn.into_split();
                let mut lines = BufReader::new(read);
                let mut request = String::new();
                if lines.read_line(&mut request).await.is_err() {
                    return;
                }
                let mut line = String::new();
                while lines.read_line(&mut line).await.is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let path = request
                    .split(' ')
                    .nth(1)
                    .unwrap_or("/")
                    .trim_start_matches('/')
                    .to_owned();
                if path == lying {
                    let sent: Sent = Arc::default();
                    list.lock().unwrap().push(sent.clone());
                    let mut ok = write
                        .write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
                        .await
                        .is_ok()
                        && write.write_all(&head).await.is_ok();
                    let zeros = vec![0u8; 64 << 10];
                    let mut left: u64 = 1 << 30;
                    while ok && left > 0 {
                        ok = write.write_all(&zeros).await.is_ok();
                        if ok {
                            sent.0.fetch_add(zeros.len() as u64, Ordering::SeqCst);
                            left -= zeros.len() as u64;
                        }
                    }
                    sent.1.store(true, Ordering::SeqCst);
                    return;
                }
                let ok = path
                    .split('/')
                    .all(|s| !s.is_empty() && !s.starts_with('.'));
                let answer = match tokio::fs::read(dir.join(&path)).await {
                    Ok(bytes) if ok => {
                        let mut a = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            bytes.len()
                        )
                        .into_bytes();
                        a.extend_from_slice(&bytes);
                        a
                    }
                    _ => {
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .to_vec()
                    }
                };
                let _ = write.write_all(&answer).await;
                let _ = write.shutdown().await;
            });
        }
    });
    (url, answers)
}

/// The bundle of the snapshot the checkpoint names, its header declaring 2^26 zetas (1 GiB
/// of them) where the signed record counts 3, then zeros for as long as the gateway reads:
/// refused from the header (`bad_snapshot_bundle`, naming both counts) with the zetas
/// unread: far less than the offered gigabyte left the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_declaring_another_count_than_its_record_is_refused_unread() {
    let tiles = tempfile::tempdir().unwrap();
    let (reg, ()) =
        support::registry_with_tiles(tiles.path(), Duration::from_millis(200), |_, _| ()).await;
    bulk_join(&reg, "m", 5).await;
    reg.reserve_and_revoke(0, 3).await;
    let note = published(&reg, tiles.path(), 3).await;
    let served = tempfile::tempdir().unwrap();
    publish_to(tiles.path(), served.path(), &note, |_| ());
    let cp = reg.manager.public_key().verify_checkpoint(&note).unwrap();
    let path = snapshot_bundle::path(cp.snapshot.unwrap().number);
    let bundle = std::fs::read(served.path().join(&path)).unwrap();
    let header = Header::decode(&bundle).unwrap().unwrap();
    assert_eq!(header.count, 3);
    let mut head = bundle[..header.len].to_vec();
    let at = header.len - 8;
    head[at..].copy_from_slice(&(1u64 << 26).to_be_bytes());
    let (url, answers) = lying_server(served.path().to_owned(), path, head).await;
    let g = gateway_with(&reg, &url, |_| ()).await;
    let (code, r) = ready_or_fault(&g, "the bundle refused").await;
    assert_eq!(code, 503, "{r}");
    assert_eq!(r["fault"]["kind"], "bad_snapshot_bundle", "{r}");
    let detail = r["fault"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("declares 67108864 zetas") && detail.contains("counts 3"),
        "{detail}"
    );
    g.shutdown().await;
    let first = answers.lock().unwrap()[0].clone();
    wait_for("the server to stop sending the first answer", || async {
        first.1.load(Ordering::SeqCst).then_some(())
    })
    .await;
    let sent = first.0.load(Ordering::SeqCst);
    assert!(
        sent < 64 << 20,
        "{sent} bytes of the offered 1 GiB of zetas were sent"
    );
    reg.shutdown().await;
}

/// A witnessed note of another tree than the checkpoint beside it (a cache holding an older
/// `checkpoint.witnessed` than its `checkpoint`) is not an integrity fault: `unsettled`,
/// nothing applied, no integrity fault recorded; once the two agree, the gateway is ready
/// on the witnessed checkpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_witnessed_note_of_another_size_is_read_again_not_refused() {
    use dgsp_core::checkpoint::origin_for;
    use dgsp_gateway::witness::WitnessPolicy;
    use dgsp_wire::note::cosignature::MlDsaCosigner;
    use dgsp_wire::note::witnessed::witnessed_note;

    let tiles = tempfile::tempdir().unwrap();
    let (reg, ()) =
        support::registry_with_tiles(tiles.path(), Duration::from_millis(200), |_, _| ()).await;
    bulk_join(&reg, "m", 5).await;
    reg.reserve_and_revoke(0, 2).await;
    let note = published(&reg, tiles.path(), 2).await;
    let cp = reg.manager.public_key().verify_checkpoint(&note).unwrap();
    let served = tempfile::tempdir().unwrap();
    publish_to(tiles.path(), served.path(), &note, |_| ());
    // The group's log key and one witness; the test cosigns as both.
    let origin = origin_for(reg.manager.public_key());
    let log_key = MlDsaCosigner::from_seed(&origin, &reg.manager.log_key_seed(0)).unwrap();
    let w1 = MlDsaCosigner::from_seed("w1.test.invalid", &[1; 32]).unwrap();
    let policy = format!(
        "log {}\nwitness w1 {}\nquorum w1\n",
        log_key.vkey(),
        w1.vkey()
    );
    let witnessed = |size: u64, root: &[u8; 32]| {
        let now = dgsp_wire::log::now_ms() / 1000;
        let log_line = log_key.cosign(&origin, size, root, now).unwrap();
        let line = w1.cosign(&origin, size, root, now).unwrap();
        witnessed_note(&origin, size, root, &log_line, &[line])
    };
    // An older tree of the same log: a checkpoint entry's.
    let older = reg
        .public_log()
        .into_iter()
        .filter(|e| e.kind == "checkpoint")
        .find_map(|e| {
            let size = e.public["size"].as_u64()?;
            let root = dgsp_wire::log::unhex32(e.public["head"].as_str()?)?;
            (size < cp.size).then_some((size, root))
        })
        .expect("an earlier checkpoint");
    put(
        &served.path().join("checkpoint.witnessed"),
        witnessed(older.0, &older.1),
    );
    let url = static_server(served.path().to_owned()).await;
    let g = gateway_with(&reg, &url, |c| {
        c.witness_policy = Some(Arc::new(WitnessPolicy::parse(&policy).unwrap()));
    })
    .await;
    let (code, r) = ready_or_fault(&g, "the two notes of different sizes").await;
    assert_eq!(r["fault"]["kind"], "unsettled", "{r}");
    let detail = r["fault"]["detail"].as_str().unwrap();
    assert!(
        detail.contains(&older.0.to_string()) && detail.contains(&cp.size.to_string()),
        "{detail}"
    );
    assert!(r["last_integrity_fault"].is_null(), "{r}");
    assert_eq!((code, r["applied_seq"].as_u64()), (503, Some(0)), "{r}");
    // The cache catches up: the witnessed note of the checkpoint's tree.
    put(
        &served.path().join("checkpoint.witnessed"),
        witnessed(cp.size, &cp.root),
    );
    let r = wait_for("ready on the witnessed checkpoint", || async {
        let (code, r) = readyz(&g).await;
        (code == 200).then_some(r)
    })
    .await;
    assert!(r["fault"].is_null(), "{r}");
    assert!(r["last_integrity_fault"].is_null(), "{r}");
    assert_eq!(
        r["witnessed"]["cosigners"].as_array().map(Vec::len),
        Some(1),
        "{r}"
    );
    g.shutdown().await;
    reg.shutdown().await;
}
