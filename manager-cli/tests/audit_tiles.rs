//! `dgsp-manager audit --tiles`: the auditor reads the log as C2SP tlog-tiles from a real
//! registry's publishing (`--tiles-dir`), copied and served by a small static HTTP server,
//! and from the registry's own `/v1/log`. The honest tiles report nothing; each tampering
//! of the published directory (a changed byte in a bundle or a hash tile, a truncated
//! bundle, a tile of another tree size or of another log, a checkpoint whose root is not
//! the entries', a server that answers the consistency proofs' reads with another tree) is
//! refused with a named finding; HTTP failures are typed errors, transient ones retried.

use crate::logs;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::http::{StatusCode, Uri};
use axum::response::IntoResponse;
use dgsp_core::checkpoint::{origin_for, Checkpoint};
use dgsp_core::{Manager, ParamSet};
use dgsp_manager::audit::tiles::{self, TileBase};
use dgsp_manager::audit::{self, Auditor, Report, Skipped, Violation};
use dgsp_manager::cli::{AuditArgs, HttpArgs};
use dgsp_manager::config::Config;
use dgsp_manager::output::Output;
use dgsp_manager::{exit, Error};
use dgsp_wire::anchor::Anchor;
use dgsp_wire::log::Entry;
use dgsp_wire::merkle;
use dgsp_wire::tiles::{decode_bundle, encode_bundle, leaf_of, Tile};
use rand_core::OsRng;

/// A registry's published tile directory, and what it was made from.
struct Published {
    /// The directory as the registry left it (copied by each test).
    dir: tempfile::TempDir,
    /// Every entry the registry logged.
    entries: Vec<Entry>,
    /// The manager.
    manager: Arc<Manager>,
    /// The size of the published checkpoint.
    size: u64,
}

/// The directory a real registry published: two members with certificates, an opening,
/// 300 bulk joins (past one full tile: a full bundle, a partial one, a level-1 tile), a
/// revocation and its snapshot, checkpoints all along.
fn published() -> &'static Published {
    static P: OnceLock<Published> = OnceLock::new();
    P.get_or_init(|| logs::block_on(publish(true)))
}

/// Another group's log, published the same way (300 joins).
fn other() -> &'static Published {
    static P: OnceLock<Published> = OnceLock::new();
    P.get_or_init(|| logs::block_on(publish(false)))
}

async fn publish(full: bool) -> Published {
    let dir = tempfile::tempdir().unwrap();
    let store = dgsp_tilestore::LocalDir::open(dir.path()).unwrap();
    let r = logs::Registry::start_publishing(Some(Arc::new(store))).await;
    if full {
        let mut alice = r.member("alice", 3).await;
        let bob = r.member("bob", 2).await;
        r.sign_and_open(&mut alice, b"a message").await;
        r.settled().await;
        let names: Vec<String> = (0..300).map(|i| format!("joiner{i:03}")).collect();
        r.bulk_join(&names).await;
        r.settled().await;
        r.revoke(bob.id).await;
        r.sign_and_open(&mut alice, b"another message").await;
    } else {
        let names: Vec<String> = (0..300).map(|i| format!("stranger{i:03}")).collect();
        r.bulk_join(&names).await;
    }
    r.settled().await;
    let latest = r.store.latest_checkpoint().unwrap().unwrap();
    let note = latest.public["note"].as_str().unwrap().to_owned();
    let size = latest.public["size"].as_u64().unwrap();
    logs::wait_for("the mirror to publish the latest checkpoint", || async {
        let published = std::fs::read_to_string(dir.path().join("checkpoint")).ok();
        (published.as_deref() == Some(note.as_str())).then_some(())
    })
    .await;
    let log = r.finish().await;
    assert!(size > 300, "{size}");
    Published {
        dir,
        entries: log.entries,
        manager: log.manager,
        size,
    }
}

/// A copy of `from` to tamper with.
fn copy_dir(from: &Path) -> tempfile::TempDir {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), target).unwrap();
            }
        }
    }
    let out = tempfile::tempdir().unwrap();
    copy(from, out.path());
    out
}

/// The file at `rel` under `dir`, as a static server answers it (400 for a path that
/// leaves `dir` or has an empty component, 404 for no file).
fn file_response(dir: &Path, rel: &str) -> axum::response::Response {
    if rel.split('/').any(|c| c == ".." || c.is_empty()) {
        return StatusCode::BAD_REQUEST.into_response();
    }
    match std::fs::read(dir.join(rel)) {
        Ok(bytes) => bytes.into_response(),
        Err(_) => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Serves `app` on a free loopback port; its base URL.
async fn spawn_server(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// A static file server on loopback over `dir`; the first `fail_first` requests are
/// answered 503. Returns its base URL and the count of requests.
async fn serve(dir: PathBuf, fail_first: usize) -> (String, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let dir = dir.clone();
        let n = seen.fetch_add(1, Ordering::SeqCst);
        async move {
            if n < fail_first {
                return (StatusCode::SERVICE_UNAVAILABLE, "busy").into_response();
            }
            file_response(&dir, uri.path().trim_start_matches('/'))
        }
    });
    (spawn_server(app).await, count)
}

/// A static file server on loopback over `dir` that serves `path` from the file the first
/// time it is asked for and `later` every time after: a server (or a CDN edge) that shows
/// one reader two trees. Returns its base URL and the count of requests for `path`.
async fn serve_two_ways(
    dir: PathBuf,
    path: &'static str,
    later: Vec<u8>,
) -> (String, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let dir = dir.clone();
        let rel = uri.path().trim_start_matches('/').to_owned();
        let answer = if rel == path && seen.fetch_add(1, Ordering::SeqCst) > 0 {
            Some(later.clone())
        } else {
            None
        };
        async move {
            if let Some(bytes) = answer {
                return bytes.into_response();
            }
            file_response(&dir, &rel)
        }
    });
    (spawn_server(app).await, count)
}

fn http(retries: u32) -> HttpArgs {
    HttpArgs {
        timeout_secs: 10,
        retries,
        ..HttpArgs::default()
    }
}

/// Audits the tiles under `base` (pinned to `manager`'s group).
async fn audit_tiles(base: &str, manager: &Manager, retries: u32) -> Result<Report, Error> {
    let base = TileBase::open(base, &http(retries))?;
    let pin = Anchor::Key(Box::new(manager.public_key().clone()));
    let rt = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        tiles::audit(
            Auditor::new(Some(pin)),
            base,
            rt,
            &indicatif::ProgressBar::hidden(),
        )
    })
    .await
    .unwrap()
}

/// Serves the copy `dir` and audits it.
async fn audit_dir(dir: &Path, manager: &Manager) -> Report {
    let (url, _) = serve(dir.to_owned(), 0).await;
    let report = audit_tiles(&url, manager, 0).await.unwrap();
    eprintln!("{}", report.render());
    report
}

/// The entry bytes of bundle `name` in `dir`, and their width.
fn bundle(dir: &Path, name: &str) -> Vec<Vec<u8>> {
    let t = Tile::parse(name).unwrap();
    let bytes = std::fs::read(dir.join(name)).unwrap();
    decode_bundle(&bytes, usize::from(t.width))
        .unwrap()
        .into_iter()
        .map(<[u8]>::to_vec)
        .collect()
}

/// The path of the last bundle (partial) of the published tree.
fn last_bundle(size: u64) -> String {
    Tile {
        level: None,
        index: size / 256,
        width: (size % 256) as u16,
    }
    .path()
}

/// Asserts that `ok` holds of `v`'s detail (shown when it does not).
#[track_caller]
fn assert_detail(v: &Violation, ok: impl FnOnce(&str) -> bool) {
    assert!(ok(&v.detail), "{}", v.detail);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_published_tiles_of_an_honest_log_report_nothing() {
    let p = published();
    let (url, requests) = serve(p.dir.path().to_owned(), 0).await;
    let t = Instant::now();
    let report = audit_tiles(&url, &p.manager, 0).await.unwrap();
    let took = t.elapsed();
    eprintln!("{}", report.render());
    assert_eq!(report.kinds(), vec![], "{}", report.render());
    assert!(report.warnings.is_empty(), "{}", report.render());
    // Every entry up to the checkpoint was read and judged as from the feed.
    assert_eq!(report.entries, p.size);
    assert_eq!(report.head.as_ref().unwrap().seq, p.size);
    let s = &report.stats;
    assert_eq!(
        (s.members, s.revocations, s.openings, s.judged),
        (302, 1, 2, 2)
    );
    assert!(s.snapshots >= 1 && s.checkpoints >= 3, "{s:?}");
    // Every checkpoint entry, and the served one, is a tree root; each two successive are
    // proved consistent from the served hash tiles.
    assert_eq!(s.tree_roots, s.checkpoints + 1);
    assert_eq!(s.consistency_proofs, s.tree_roots - 1);
    assert_eq!(s.checkpointed, p.size);
    // Tiles carry no private parts.
    assert!(report.skipped.contains_key(&Skipped::MemberChecks));
    assert!(!report.skipped.contains_key(&Skipped::Consistency));
    let read = report.tiles.as_ref().unwrap();
    assert_eq!(read.checkpoint_size, p.size);
    let leaves: Vec<_> = p.entries[..p.size as usize].iter().map(leaf_of).collect();
    assert_eq!(read.checkpoint_root, hex::encode(merkle::root(&leaves)));
    // Two bundles, two level-0 hash tiles and the level-1 tile; the proofs read a few more.
    assert_eq!(read.bundles, 2);
    assert!(read.hash_tiles >= 3, "{read:?}");
    assert_eq!(read.stopped_at, None);
    let requests = requests.load(Ordering::SeqCst);
    eprintln!(
        "honest tiles: {} entries, {requests} requests, {} bytes, audited in {took:?}",
        report.entries, read.bytes
    );
    assert_eq!(requests as u64, 1 + read.bundles + read.hash_tiles);

    // The command: exit code OK, from the URL, a directory path and a file:// URL.
    for base in [
        url.clone(),
        p.dir.path().display().to_string(),
        format!("file://{}", p.dir.path().display()),
    ] {
        let args = AuditArgs {
            file: None,
            registry: None,
            tiles: Some(base.clone()),
            token: None,
            token_file: None,
            group_key: Some(hex::encode(p.manager.public_key().fingerprint())),
            compare: Vec::new(),
            witness_policy: None,
            http: http(0),
        };
        let code = audit::run(args, Output { json: true }, &Config::default())
            .await
            .unwrap();
        assert_eq!(code, exit::OK, "{base}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_byte_in_a_bundle_is_found() {
    let p = published();
    let dir = copy_dir(p.dir.path());
    let mut entries = bundle(dir.path(), "tile/entries/000");
    // One digit of entry 5's time, in the full bundle.
    let e = &mut entries[4];
    let at = e
        .windows(10)
        .position(|w| w == b"\"time_ms\":")
        .expect("a time field")
        + 10;
    e[at] = if e[at] == b'1' { b'2' } else { b'1' };
    std::fs::write(
        dir.path().join("tile/entries/000"),
        encode_bundle(entries.iter().map(Vec::as_slice)).unwrap(),
    )
    .unwrap();
    let report = audit_dir(dir.path(), &p.manager).await;
    // The entry no longer has its hash; the served leaf hash is not its bytes' hash.
    assert_eq!(report.kinds(), vec![("chain", 5), ("tile_hash", 5)]);
    assert_detail(&report.violations[1], |d| d.contains("tile/0/000"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_byte_in_a_hash_tile_is_found() {
    let p = published();
    let dir = copy_dir(p.dir.path());
    let path = dir.path().join("tile/0/000");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[32 * 7 + 3] ^= 0x40;
    std::fs::write(&path, bytes).unwrap();
    let report = audit_dir(dir.path(), &p.manager).await;
    assert_eq!(report.kinds(), vec![("tile_hash", 8)]);
    assert_detail(&report.violations[0], |d| {
        d.contains("hash tile tile/0/000 differs from the hashes recomputed from the entry bundles at 1 of 256 positions")
    });

    // The same in the level-1 tile: found there, at the first entry under that node.
    let dir = copy_dir(p.dir.path());
    let path = dir.path().join("tile/1/000.p/1");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    let report = audit_dir(dir.path(), &p.manager).await;
    assert_eq!(report.kinds(), vec![("tile_hash", 1)]);
    assert_detail(&report.violations[0], |d| d.contains("tile/1/000.p/1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_bundle_stops_the_audit_with_a_named_fault() {
    let p = published();
    let dir = copy_dir(p.dir.path());
    let last = last_bundle(p.size);
    let path = dir.path().join(&last);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
    let report = audit_dir(dir.path(), &p.manager).await;
    assert_eq!(report.kinds(), vec![("tile_bundle", p.size)]);
    assert_detail(&report.violations[0], |d| d.contains("truncated"));
    // The bundle is refused whole: the entries of the bundles before it were judged; the
    // served root could not be compared.
    let read = report.tiles.as_ref().unwrap();
    assert_eq!(read.stopped_at, Some(257));
    assert_eq!(report.entries, 256);
    assert!(report.skipped.contains_key(&Skipped::CheckpointRoot));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tile_of_another_tree_size_is_found() {
    let p = published();
    // An earlier tree's partial bundle where the full one belongs: the first 17 entries,
    // byte for byte what a checkpoint of 17 entries published as `tile/entries/000.p/17`.
    let w = 17usize;
    let dir = copy_dir(p.dir.path());
    let entries = bundle(dir.path(), "tile/entries/000");
    std::fs::write(
        dir.path().join("tile/entries/000"),
        encode_bundle(entries[..w].iter().map(Vec::as_slice)).unwrap(),
    )
    .unwrap();
    let report = audit_dir(dir.path(), &p.manager).await;
    assert_eq!(report.kinds(), vec![("tile_bundle", 1)]);
    assert_detail(&report.violations[0], |d| {
        d.contains(&format!("holds {w} entries where its path says 256"))
    });
    assert_eq!(report.entries, 0);

    // The same with the level-0 hash tile (`tile/0/000.p/17`).
    let dir = copy_dir(p.dir.path());
    let path = dir.path().join("tile/0/000");
    let hashes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &hashes[..32 * w]).unwrap();
    let report = audit_dir(dir.path(), &p.manager).await;
    assert_eq!(report.kinds(), vec![("tile_hash", 1)]);
    assert_detail(&report.violations[0], |d| {
        d.contains(&format!(
            "is {} bytes, a tile of 256 hashes is 8192",
            32 * w
        ))
    });

    // A bundle at the wrong position: the second one where the first belongs would not
    // fit; entries of the last bundle moved one place.
    let dir = copy_dir(p.dir.path());
    let last = last_bundle(p.size);
    let mut entries = bundle(dir.path(), &last);
    entries.rotate_left(1);
    std::fs::write(
        dir.path().join(&last),
        encode_bundle(entries.iter().map(Vec::as_slice)).unwrap(),
    )
    .unwrap();
    let report = audit_dir(dir.path(), &p.manager).await;
    assert_eq!(report.kinds(), vec![("tile_bundle", 257)]);
    assert_detail(&report.violations[0], |d| {
        d.contains("a tile of another tree")
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_tile_of_another_log_is_found() {
    let p = published();
    let q = other();
    // Only the bundle: its entries are not the leaves the hash tile holds.
    let dir = copy_dir(p.dir.path());
    std::fs::copy(
        q.dir.path().join("tile/entries/000"),
        dir.path().join("tile/entries/000"),
    )
    .unwrap();
    let report = audit_dir(dir.path(), &p.manager).await;
    assert!(!report.is_clean());
    let kinds = report.kinds();
    assert!(kinds.contains(&("tile_hash", 1)), "{kinds:?}");
    assert!(kinds.contains(&("group", 1)), "{kinds:?}");

    // The bundle and its hash tile, consistent with each other: the level-1 tile above
    // them and the chain into the next bundle tell.
    let dir = copy_dir(p.dir.path());
    for t in ["tile/entries/000", "tile/0/000"] {
        std::fs::copy(q.dir.path().join(t), dir.path().join(t)).unwrap();
    }
    let report = audit_dir(dir.path(), &p.manager).await;
    let kinds = report.kinds();
    assert!(kinds.contains(&("tile_hash", 1)), "{kinds:?}");
    assert!(kinds.contains(&("chain", 257)), "{kinds:?}");
    let level1 = report
        .violations
        .iter()
        .find(|v| v.kind.as_str() == "tile_hash")
        .unwrap();
    assert_detail(level1, |d| d.contains("tile/1/000.p/1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_whose_root_is_not_the_entries_is_found() {
    let p = published();
    let m = &p.manager;
    let served = std::fs::read_to_string(p.dir.path().join("checkpoint")).unwrap();
    let cp = m.public_key().verify_checkpoint(&served).unwrap();

    // Signed by the manager, the right size, another root.
    let dir = copy_dir(p.dir.path());
    let mut root = cp.root;
    root[0] ^= 1;
    let forged = m.sign_checkpoint(&Checkpoint { root, ..cp.clone() });
    std::fs::write(dir.path().join("checkpoint"), forged).unwrap();
    let report = audit_dir(dir.path(), m).await;
    assert_eq!(report.kinds(), vec![("checkpoint_mismatch", p.size)]);
    assert_detail(&report.violations[0], |d| {
        d.starts_with("the served checkpoint signs root")
    });

    // The right root, signed by another key.
    let dir = copy_dir(p.dir.path());
    let forger = Manager::generate(ParamSet::Sha2_128f, &mut OsRng);
    let forged = forger.sign_checkpoint(&Checkpoint {
        origin: origin_for(m.public_key()),
        ..cp.clone()
    });
    std::fs::write(dir.path().join("checkpoint"), forged).unwrap();
    let report = audit_dir(dir.path(), m).await;
    assert_eq!(report.kinds(), vec![("checkpoint_signature", p.size)]);
    assert_detail(&report.violations[0], |d| {
        d.starts_with("the served checkpoint (size")
    });

    // A correct note for an earlier size whose partial tiles were never published: the
    // tiles it needs are missing, a typed HTTP error naming the URL.
    let dir = copy_dir(p.dir.path());
    let size = cp.size - 1;
    let leaves: Vec<_> = p.entries[..size as usize].iter().map(leaf_of).collect();
    let older = m.sign_checkpoint(&Checkpoint {
        size,
        root: merkle::root(&leaves),
        ..cp.clone()
    });
    std::fs::write(dir.path().join("checkpoint"), older).unwrap();
    let (url, _) = serve(dir.path().to_owned(), 0).await;
    match audit_tiles(&url, m, 0).await {
        Err(e @ Error::Client(_)) => {
            assert_eq!(e.kind(), "http_status");
            let text = e.to_string();
            assert!(
                text.contains("HTTP 404") && text.contains("/tile/"),
                "{text}"
            );
        }
        other => panic!("expected an HTTP error, got {other:?}"),
    }
}

/// Every checkpoint's root matches the entries and every hash tile matches the bundles when
/// compared, but the server then answers the proofs' reads of `tile/0/000` with another
/// log's tile (a split view: the tree it proves from is not the one the checkpoints sign).
/// Each proof from a checkpoint inside the first 256 entries reads that tile and fails to
/// verify (`checkpoint_consistency`, at the later checkpoint); each proof from a later one
/// reads only the level-1 and the partial level-0 tiles, and verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_served_otherwise_to_the_consistency_proofs_is_found() {
    let p = published();
    let q = other();
    let forked = std::fs::read(q.dir.path().join("tile/0/000")).unwrap();
    assert_ne!(
        forked,
        std::fs::read(p.dir.path().join("tile/0/000")).unwrap()
    );
    let (url, reads) = serve_two_ways(p.dir.path().to_owned(), "tile/0/000", forked).await;
    let report = audit_tiles(&url, &p.manager, 0).await.unwrap();
    eprintln!("{}", report.render());
    // Compared once as served first (it matched), read once more for the proofs.
    assert_eq!(reads.load(Ordering::SeqCst), 2);

    // The successive checkpoints the auditor proves between: the checkpoint entries up to
    // the served checkpoint, then the served one.
    let mut sizes: Vec<u64> = p.entries[..p.size as usize]
        .iter()
        .filter(|e| e.kind == "checkpoint")
        .map(|e| e.public["size"].as_u64().unwrap())
        .collect();
    sizes.push(p.size);
    let pairs: Vec<(u64, u64)> = sizes.windows(2).map(|w| (w[0], w[1])).collect();
    let expected: Vec<(&str, u64)> = pairs
        .iter()
        .filter(|(old, _)| *old < 256)
        .map(|&(_, new)| ("checkpoint_consistency", new))
        .collect();
    assert!(
        !expected.is_empty(),
        "a checkpoint inside the first tile: {sizes:?}"
    );
    assert!(
        pairs.iter().any(|(old, _)| *old >= 256),
        "a checkpoint past the first tile: {sizes:?}"
    );
    assert_eq!(report.kinds(), expected, "{}", report.render());
    for (v, (old, new)) in report
        .violations
        .iter()
        .zip(pairs.iter().filter(|(old, _)| *old < 256))
    {
        assert_detail(v, |d| {
            d.starts_with(&format!(
                "the consistency proof from the checkpoint of {old} entries (root "
            )) && d.contains(&format!(
                "to the one of {new} (root {}), computed from the served hash tiles, does not verify",
                hex::encode(merkle::root(
                    &p.entries[..*new as usize].iter().map(leaf_of).collect::<Vec<_>>()
                ))
            ))
        });
    }
    let s = &report.stats;
    assert_eq!(s.tree_roots, sizes.len() as u64);
    assert_eq!(
        s.consistency_proofs + report.violations.len() as u64,
        s.tree_roots - 1,
        "every pair proved or reported"
    );
    assert!(s.consistency_proofs >= 1);
    assert!(!report.skipped.contains_key(&Skipped::Consistency));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_failures_are_retried_and_persistent_ones_are_typed_errors() {
    let p = published();
    // Three 503s, then the files: retried with backoff, the audit completes.
    let (url, _) = serve(p.dir.path().to_owned(), 3).await;
    let report = audit_tiles(&url, &p.manager, 5).await.unwrap();
    assert!(report.is_clean(), "{}", report.render());

    // Always 503: the retries run out.
    let (url, _) = serve(p.dir.path().to_owned(), usize::MAX).await;
    match audit_tiles(&url, &p.manager, 1).await {
        Err(e) => assert_eq!(e.kind(), "retries_exhausted", "{e}"),
        Ok(r) => panic!("expected an error, got {}", r.render()),
    }
    // Nothing listening.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    match audit_tiles(&url, &p.manager, 0).await {
        Err(e) => assert_eq!(e.kind(), "unreachable", "{e}"),
        Ok(r) => panic!("expected an error, got {}", r.render()),
    }
    // Neither a URL nor a directory.
    match audit_tiles("/no/such/dir", &p.manager, 0).await {
        Err(e @ Error::Input { .. }) => assert!(e.to_string().contains("--tiles"), "{e}"),
        other => panic!("expected an argument error, got {other:?}"),
    }
    // A checkpoint that is not a note.
    let dir = copy_dir(p.dir.path());
    std::fs::write(dir.path().join("checkpoint"), "hello\n").unwrap();
    let (url, _) = serve(dir.path().to_owned(), 0).await;
    match audit_tiles(&url, &p.manager, 0).await {
        Err(e @ Error::Input { .. }) => {
            assert!(e.to_string().contains("not a checkpoint note"), "{e}")
        }
        other => panic!("expected an input error, got {other:?}"),
    }
}

/// The registry's own `/v1/log` is a tile base too; timed beside the feed on the same log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_serves_tiles_the_auditor_reads() {
    let r = logs::Registry::start().await;
    logs::populate_large(&r, 1000).await;
    r.settled().await;
    let t = Instant::now();
    let report = audit_tiles(&format!("{}/v1/log", r.url), &r.manager, 2)
        .await
        .unwrap();
    let tiles_took = t.elapsed();
    assert_eq!(report.kinds(), vec![], "{}", report.render());
    let s = &report.stats;
    assert_eq!(s.judged, 2);
    assert_eq!(s.consistency_proofs, s.tree_roots - 1);
    let read = report.tiles.clone().unwrap();
    let t = Instant::now();
    let feed = {
        let client =
            dgsp_manager::client::Client::new(&r.url, None, Duration::from_secs(30), 2).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<Entry>>(4);
        let bar = indicatif::ProgressBar::hidden();
        let consumer = tokio::task::spawn_blocking(move || {
            let mut a = Auditor::new(None);
            while let Some(page) = rx.blocking_recv() {
                for e in &page {
                    a.push(e);
                }
            }
            a.finish()
        });
        audit::source::fetch_registry(&client, &r.url, tx, &bar)
            .await
            .unwrap();
        consumer.await.unwrap()
    };
    let feed_took = t.elapsed();
    assert_eq!(feed.kinds(), vec![]);
    eprintln!(
        "registry tiles: {} entries in {} bundles and {} hash tiles ({} bytes) in {tiles_took:?}; the feed: {} entries in {feed_took:?}",
        report.entries, read.bundles, read.hash_tiles, read.bytes, feed.entries
    );
    r.finish().await;
}
