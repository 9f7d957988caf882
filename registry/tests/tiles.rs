//! The log as C2SP tlog-tiles, served by a running registry: the checkpoint's root is the
//! RFC 6962 root of the entries the feed serves, every tile holds exactly what the tree and
//! the feed say, caches are told the right lifetimes, uncovered tiles are refused, and an
//! independent client (Go, filippo.io/torchwood, `interop/tlogclient`) reads and verifies
//! the whole log against the checkpoint's root. Without witnesses, every checkpoint still
//! carries both signatures: `checkpoint.witnessed` is the same tree signed by the log key
//! the group key's statement (`GET /v1/log/key`) names, served and mirrored beside
//! `checkpoint`, and the mirror writes the statement as `key`.

use crate::support;

use std::process::Command;
use std::sync::Arc;

use dgsp_core::checkpoint::Checkpoint;
use dgsp_core::ManagerPublicKey;
use dgsp_registry::witnessing::LogKey;
use dgsp_wire::log::{now_ms, Entry};
use dgsp_wire::merkle;
use dgsp_wire::note::policy::Policy;
use dgsp_wire::note::signed_note::SignedNote;
use dgsp_wire::note::witnessed::verify_witnessed;
use dgsp_wire::tiles::{self, entry_bytes, leaf_of, Tile};
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::Registry;

const ADMIN: &str = "admin-token-for-tiles";

async fn all_entries(reg: &Registry) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    loop {
        let after = out.last().map_or(0, |e| e.seq);
        let url = format!("{}/v1/log/entries?after={after}&limit=1000", reg.url);
        let (status, page) = support::get_json(&reg.client, url, None).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let entries: Vec<Entry> = serde_json::from_value(page["entries"].clone()).unwrap();
        if entries.is_empty() {
            return out;
        }
        out.extend(entries);
    }
}

async fn get_bytes(
    reg: &Registry,
    path: &str,
) -> (StatusCode, reqwest::header::HeaderMap, Vec<u8>) {
    let r = reg
        .client
        .get(format!("{}/v1/log/{path}", reg.url))
        .send()
        .await
        .unwrap();
    let (status, headers) = (r.status(), r.headers().clone());
    (status, headers, r.bytes().await.unwrap().to_vec())
}

/// A new group (manager from `seed`) served with `config` and the group's log key
/// (generation 0), as `dgsp-registry serve` always has one, and no witnesses.
async fn start_with_log_key(seed: u64, config: dgsp_registry::server::Config) -> Registry {
    Registry::start_configured(seed, config, |manager, config| {
        let log_key = LogKey::derive(manager, 0, now_ms()).unwrap();
        config.publisher.log_key = Some(Arc::new(log_key));
    })
    .await
}

/// The log key the group key's statement at `GET /v1/log/key` names, as a policy of that
/// `log` line alone (`quorum none`).
async fn log_key_policy(reg: &Registry, group: &ManagerPublicKey) -> (String, Policy) {
    let (status, headers, body) = get_bytes(reg, "key").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    let statement = String::from_utf8(body).unwrap();
    let named = group.verify_log_key(&statement).unwrap();
    let policy = Policy::parse(&format!("log {}\nquorum none\n", named.vkey)).unwrap();
    (statement, policy)
}

/// Checks a witnessed note of a registry without witnesses: the log's signature alone,
/// valid under the log key of `policy`, timestamped now, over the tree of `cp`.
fn check_log_signed(witnessed: &str, policy: &Policy, cp: &Checkpoint) {
    let w = verify_witnessed(witnessed, policy, now_ms() / 1000, Some(60), 5)
        .unwrap_or_else(|e| panic!("the witnessed note does not verify: {e}\n{witnessed}"));
    assert_eq!(
        (w.origin.as_str(), w.size, w.root),
        (cp.origin.as_str(), cp.size, cp.root),
        "the witnessed note is of another tree than the group-signed one"
    );
    assert!(w.cosigners.is_empty(), "no witnesses, no cosignatures");
    let note = SignedNote::parse(witnessed).unwrap();
    assert_eq!(note.signatures.len(), 1, "the log's signature alone");
    assert_eq!(note.signatures[0].name, cp.origin);
}

/// Joins `n` members named `{prefix}-NNN` in one bulk request.
async fn bulk_join(reg: &Registry, prefix: &str, n: usize) {
    let names: Vec<String> = (0..n).map(|i| format!("{prefix}-{i:03}")).collect();
    let r = reg
        .client
        .post(format!("{}/admin/v1/members/bulk", reg.url))
        .bearer_auth(ADMIN)
        .json(&json!({ "usernames": names }))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
}

/// The independent tiles client (`interop/tlogclient`), built by its script; the test fails
/// (never skips) when it cannot be built.
fn go_client() -> Command {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/go-interop.sh");
    let built = Command::new("bash")
        .arg(script)
        .arg("build")
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "building the Go tiles client failed (it needs go and the Go module proxy): {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let path = String::from_utf8(built.stdout).unwrap();
    Command::new(path.trim().lines().last().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_serves_its_log_as_tiles_that_an_independent_client_verifies() {
    let reg = start_with_log_key(27, support::config(ADMIN)).await;
    // 300 joins and a revocation: past one full tile, so that level 1 exists.
    bulk_join(&reg, "member", 300).await;
    let r = reg
        .client
        .post(format!("{}/admin/v1/members/5/revoke", reg.url))
        .bearer_auth(ADMIN)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let head = reg.store.head().unwrap().seq;
    support::wait_covering(&reg.client, &reg.url, head, support::polls(600, 50)).await;

    // The checkpoint, as text, with a short cache lifetime; its root is the feed's tree.
    let (status, headers, note) = get_bytes(&reg, "checkpoint").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["cache-control"], "public, max-age=2");
    let note = String::from_utf8(note).unwrap();
    let cp = reg.manager.public_key().verify_checkpoint(&note).unwrap();
    // Without witnesses the witnessed note beside it carries the log key's signature
    // alone, over the same tree, under the key the group key's statement names.
    let (status, headers, witnessed) = get_bytes(&reg, "checkpoint.witnessed").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["cache-control"], "public, max-age=2");
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    let (_, policy) = log_key_policy(&reg, reg.manager.public_key()).await;
    check_log_signed(&String::from_utf8(witnessed).unwrap(), &policy, &cp);
    // And `/v1/checkpoint` carries it as `witnessed` (answers' evidence, followers).
    let url = format!("{}/v1/checkpoint", reg.url);
    let (status, served) = support::get_json(&reg.client, url, None).await;
    assert_eq!(status, StatusCode::OK, "{served}");
    let served_cp = reg
        .manager
        .public_key()
        .verify_checkpoint(served["note"].as_str().unwrap())
        .unwrap();
    check_log_signed(served["witnessed"].as_str().unwrap(), &policy, &served_cp);
    assert!(cp.size >= head, "covers {} of {head}", cp.size);
    let entries = all_entries(&reg).await;
    let covered = &entries[..cp.size as usize];
    let leaves: Vec<_> = covered.iter().map(leaf_of).collect();
    assert_eq!(
        cp.root,
        merkle::root(&leaves),
        "the note's root is the feed's tree"
    );
    assert_eq!(reg.store.tree_root(cp.size).unwrap(), cp.root);

    // Every tile of that size holds exactly the tree's hashes and the feed's entries.
    let mut levels = 0;
    for tile in tiles::tiles_for(0, cp.size) {
        let (status, headers, bytes) = get_bytes(&reg, &tile.path()).await;
        assert_eq!(status, StatusCode::OK, "{}", tile.path());
        assert_eq!(
            headers["cache-control"],
            "public, max-age=31536000, immutable"
        );
        let first = (tile.index * 256) as usize;
        let width = usize::from(tile.width);
        match tile.level {
            None => {
                let got = tiles::decode_bundle(&bytes, width).unwrap();
                for (i, e) in got.iter().enumerate() {
                    assert_eq!(*e, entry_bytes(&covered[first + i]).as_slice());
                }
            }
            Some(level) => {
                levels = levels.max(level);
                let got = tiles::decode_hash_tile(&bytes, width).unwrap();
                let tree = merkle::Leaves(&leaves);
                for (i, h) in got.iter().enumerate() {
                    let want = merkle::Nodes::node(&tree, level * 8, (first + i) as u64).unwrap();
                    assert_eq!(*h, want, "{} hash {i}", tile.path());
                }
            }
        }
    }
    assert_eq!(levels, 1, "a level-1 tile exists at {} entries", cp.size);

    // Tiles the newest checkpoint does not cover, and paths that are not tiles, are refused.
    let beyond = Tile {
        level: None,
        index: cp.size / 256,
        width: (cp.size % 256 + 1) as u16,
    };
    for path in [beyond.path(), "tile/0/1".into(), "tile/entries/../x".into()] {
        let (status, headers, _) = get_bytes(&reg, &path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(
            headers["content-type"], "application/problem+json",
            "{path}"
        );
    }

    // The independent client: every entry through torchwood's verified iterator, and
    // inclusion proofs of the first and last entries, against the checkpoint's root.
    let last = (cp.size - 1).to_string();
    let out = go_client()
        .args(["client", "--url", &format!("{}/v1/log", reg.url), "--all"])
        .args(["--index", "0", "--index", &last])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the Go client refused our tiles: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["size"], cp.size);
    assert_eq!(report["entries_read"], cp.size);
    assert_eq!(report["verified"].as_array().unwrap().len(), 2);
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tiles_are_published_to_a_directory_an_independent_client_verifies() {
    let out = tempfile::tempdir().unwrap();
    let tiles = dgsp_tilestore::LocalDir::open(out.path()).unwrap();
    let config = dgsp_registry::server::Config {
        tiles: Some(std::sync::Arc::new(tiles)),
        ..support::config(ADMIN)
    };
    let reg = start_with_log_key(28, config).await;
    bulk_join(&reg, "m", 260).await;
    let head = reg.store.head().unwrap().seq;
    support::wait_covering(&reg.client, &reg.url, head, support::polls(600, 50)).await;
    // The mirror follows the publisher: wait for the directory's checkpoint to cover it.
    let mut published = None;
    for _ in 0..600 {
        if let Ok(note) = std::fs::read_to_string(out.path().join("checkpoint")) {
            let cp = reg.manager.public_key().verify_checkpoint(&note).unwrap();
            if cp.size >= head {
                published = Some(cp);
                break;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let cp = published.expect("the mirror published a checkpoint covering the log");
    // Beside it, the statement naming the log key (`key`, as under `/v1/log/`) and the
    // witnessed note of the same tree, signed by that key alone (written after
    // `checkpoint`: read both again until they name the same tree).
    let group = reg.manager.public_key();
    let (statement, policy) = log_key_policy(&reg, group).await;
    let written = std::fs::read_to_string(out.path().join("key")).unwrap();
    assert_eq!(
        written, statement,
        "the mirror's key is the served statement"
    );
    let mut checked = false;
    for _ in 0..200 {
        let read = |name: &str| std::fs::read_to_string(out.path().join(name)).ok();
        if let (Some(note), Some(witnessed)) = (read("checkpoint"), read("checkpoint.witnessed")) {
            let c = group.verify_checkpoint(&note).unwrap();
            let w = verify_witnessed(&witnessed, &policy, now_ms() / 1000, None, 5).unwrap();
            if (w.size, w.root) == (c.size, c.root) {
                check_log_signed(&witnessed, &policy, &c);
                checked = true;
                break;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        checked,
        "no checkpoint.witnessed of the directory's checkpoint's tree"
    );
    for tile in tiles::tiles_for(0, cp.size) {
        let (status, _, served) = get_bytes(&reg, &tile.path()).await;
        assert_eq!(status, StatusCode::OK);
        let written = std::fs::read(out.path().join(tile.path())).unwrap();
        assert_eq!(written, served, "{} as written and as served", tile.path());
    }
    let dir = out.path().to_str().unwrap();
    let run = go_client()
        .args(["client", "--dir", dir, "--all", "--index", "7"])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // One changed byte in a published bundle is refused by the same client.
    let bundle = out.path().join("tile/entries/000");
    let mut bytes = std::fs::read(&bundle).unwrap();
    bytes[10] ^= 1;
    std::fs::write(&bundle, bytes).unwrap();
    let run = go_client()
        .args(["client", "--dir", dir, "--all"])
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(1),
        "a changed bundle byte is a failed check"
    );
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_whose_entries_do_not_fit_a_bundle_says_so_instead_of_serving_tiles() {
    use rand_core::SeedableRng;
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(dgsp_registry::store::Store::open(dir.path()).unwrap());
    let manager = std::sync::Arc::new(dgsp_core::Manager::generate(
        dgsp_core::ParamSet::Sha2_256f,
        &mut rand_chacha::ChaCha20Rng::seed_from_u64(29),
    ));
    store.create_group(manager.public_key(), 1).unwrap();
    let running = support::serve(store, manager, support::config(ADMIN)).await;
    // Started without a log key (an embedding; `dgsp-registry serve` always has one): no
    // witnessed note, and it says why.
    let r = reqwest::get(format!("{}/v1/log/checkpoint.witnessed", running.url()))
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let p: Value = r.json().await.unwrap();
    assert_eq!(p["type"], "urn:dgsp:problem:no-log-key", "{p}");
    let r = reqwest::get(format!("{}/v1/log/tile/0/000.p/1", running.url()))
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_IMPLEMENTED);
    let p: Value = r.json().await.unwrap();
    assert_eq!(p["type"], "urn:dgsp:problem:tiles-unavailable", "{p}");
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains("sha2-256f") && detail.contains("65535"),
        "{p}"
    );
    running.shutdown().await.unwrap();
}
