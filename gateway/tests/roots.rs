//! Checkpoint roots are the RFC 6962 Merkle roots of the entries they cover, checked by the
//! gateway against the tree it keeps of what it applied, against a registry played by
//! wiremock over a real, honestly signed log: a note whose root is the chain hash of another
//! size, or the root of the right size over a log with one entry changed, is a `fork`
//! naming the root, the size and both hashes the gateway computed; a legacy note whose root
//! is the chain hash of its size is accepted; a checkpoint entry naming a size already
//! applied is checked against the replica's tree; a restart checks the stored note's root;
//! and a replica from before the tree is refused at start with what to do. And the tree a
//! gateway keeps of a real registry's log is the registry's, and the RFC's, at every size.

use crate::support;

use dgsp_core::checkpoint::{origin_for, Checkpoint};
use dgsp_gateway::anchor::Anchor;
use dgsp_gateway::replica::Replica;
use dgsp_gateway::server as gw;
use dgsp_registry::writer::Command;
use dgsp_wire::log::{unhex32, Entry, Hash};
use dgsp_wire::merkle::root;
use dgsp_wire::tiles::leaf_of;
use serde_json::json;
use support::mock::{padded, relink, Log, MockRegistry, Note};
use support::signed_time::{fault, fresh_time, group, honest_log, later};
use support::{gateway, gateway_config, registry, wait_for, Gateway};

/// The Merkle root of the first `size` entries.
fn tree_root(entries: &[Entry], size: u64) -> Hash {
    let leaves: Vec<Hash> = entries[..size as usize].iter().map(leaf_of).collect();
    root(&leaves)
}

/// The chain hash of entry `seq`.
fn chain(entries: &[Entry], seq: u64) -> Hash {
    unhex32(&entries[seq as usize - 1].hash).unwrap()
}

/// A note of `size` entries of `log` signed with `root` at `time` (untimed: `None`), naming
/// the snapshot an honest note would.
fn note_with_root(log: &Log, size: u64, root: Hash, time: Option<u64>) -> Note {
    let note = log.manager.sign_checkpoint(&Checkpoint {
        origin: origin_for(log.manager.public_key()),
        size,
        root,
        time_unix_ms: time,
        snapshot: time.and(log.snapshot_in(size)),
    });
    Note {
        size,
        head: hex::encode(root),
        time_unix_ms: time.unwrap_or(0),
        note,
        witnessed: None,
    }
}

/// `log` with a `checkpoint` entry appended that carries `note` (relinked).
fn with_checkpoint_entry(log: &Log, note: &Note) -> Log {
    let mut entries = log.entries.clone();
    let mut e = entries
        .iter()
        .rfind(|e| e.kind == "checkpoint")
        .unwrap()
        .clone();
    e.public = json!({"size": note.size, "head": note.head, "note": note.note});
    entries.push(e);
    relink(&mut entries, log.entries.len());
    Log {
        entries,
        manager: log.manager.clone(),
    }
}

/// Waits for a `fork` fault whose detail names `root`; checks that it also names the size
/// and both hashes of the entries served, and returns the detail.
async fn fork_naming(gw: &Gateway, root: &Hash, entries: &[Entry], size: u64) -> String {
    let (_, r) = fault(gw, "fork", &hex::encode(root)).await;
    assert_eq!(r["fault"]["seq"], size, "{r}");
    let detail = r["fault"]["detail"].as_str().unwrap().to_owned();
    for named in [
        format!("of {size} entries"),
        hex::encode(tree_root(entries, size)),
        hex::encode(chain(entries, size)),
    ] {
        assert!(detail.contains(&named), "{named} not in {detail}");
    }
    detail
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoint_roots_are_the_merkle_roots_of_the_entries_served() {
    let (log, mut alice) = honest_log().await;
    let n = log.entries.len() as u64;
    let mock = MockRegistry::start(log.entries.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let config = gateway_config(&mock.url, Anchor::Key(Box::new(group(&log))), dir.path());
    // The real registry's own checkpoint entries sign Merkle roots: applied.
    let gw = gateway(config.clone()).await;
    gw.reach(n - 1).await;

    // a. A note of all n entries whose root is the chain hash of entry n - 1: a fork.
    let t = later(&log, 0);
    let other_size = chain(&log.entries, n - 1);
    mock.note(Some(note_with_root(&log, n, other_size, Some(t))));
    fork_naming(&gw, &other_size, &log.entries, n).await;
    assert_eq!(gw.applied().await, n - 1);

    // b. The Merkle root of n entries of a log with entry 3 changed: a fork.
    let mut changed = log.entries.clone();
    changed[2].public["changed"] = json!(true);
    relink(&mut changed, 2);
    let changed_root = tree_root(&changed, n);
    mock.note(Some(note_with_root(
        &log,
        n,
        changed_root,
        Some(later(&log, t)),
    )));
    fork_naming(&gw, &changed_root, &log.entries, n).await;
    assert_eq!(gw.applied().await, n - 1);

    // c. A legacy note, its root the chain hash of entry n: applied, fresh as of it.
    let t_legacy = later(&log, t);
    mock.note(Some(note_with_root(
        &log,
        n,
        chain(&log.entries, n),
        Some(t_legacy),
    )));
    wait_for("the legacy note to be applied", || async {
        (fresh_time(&gw).await == t_legacy).then_some(())
    })
    .await;
    assert_eq!(gw.applied().await, n);

    // d. A Merkle note of the applied size: confirms it (checked against the view's tree).
    let t_merkle = later(&log, t_legacy);
    mock.note(Some(log.note(n, t_merkle)));
    wait_for("the Merkle note to confirm the state", || async {
        (fresh_time(&gw).await == t_merkle).then_some(())
    })
    .await;

    // e. A later note of the applied size whose root is another size's chain hash: a fork,
    //    and freshness stays.
    mock.note(Some(note_with_root(
        &log,
        n,
        other_size,
        Some(later(&log, t_merkle)),
    )));
    let detail = fork_naming(&gw, &other_size, &log.entries, n).await;
    assert!(detail.contains("a signed checkpoint"), "{detail}");
    assert_eq!((fresh_time(&gw).await, gw.applied().await), (t_merkle, n));
    mock.note(None);

    // f. A checkpoint entry naming a size already applied (n - 3, untimed) with the chain
    //    hash of entry n - 4: a fork, checked against the replica's tree.
    let grown = Log {
        entries: padded(&log.entries, 1, 10),
        manager: log.manager.clone(),
    };
    let wrong = chain(&log.entries, n - 4);
    let bad = with_checkpoint_entry(&grown, &note_with_root(&grown, n - 3, wrong, None));
    mock.serve(bad.entries.clone());
    let detail = fork_naming(&gw, &wrong, &log.entries, n - 3).await;
    assert!(detail.contains("a signed checkpoint of"), "{detail}");
    assert_eq!(gw.applied().await, n);
    //    The same entry with the right root: nothing to refuse, and a note of the longer
    //    log applies it all.
    let good_root = tree_root(&log.entries, n - 3);
    let good = with_checkpoint_entry(&grown, &note_with_root(&grown, n - 3, good_root, None));
    mock.serve(good.entries.clone());
    let size = good.entries.len() as u64;
    let t_grown = later(&log, t_merkle + 1_000);
    mock.note(Some(good.note(size, t_grown)));
    gw.reach(size).await;
    assert_eq!(fresh_time(&gw).await, t_grown);
    let sig = alice.sign(b"m");
    assert_eq!(gw.verify(b"m", &sig).await["status"], "ok");
    gw.shutdown().await;

    // g. Restarted: the stored note's root is checked against the stored tree, and holds.
    let gw = gateway(config.clone()).await;
    assert_eq!((gw.applied().await, fresh_time(&gw).await), (size, t_grown));
    gw.shutdown().await;

    // h. A stored note of the applied size with another size's chain hash as its root: the
    //    replica refuses to store it, and one written anyway (a replica tampered with) stops
    //    the gateway from starting.
    let wrong = chain(&good.entries, size - 1);
    let bad = note_with_root(&good, size, wrong, Some(later(&log, t_grown)));
    let signed = group(&log).verify_checkpoint(&bad.note).unwrap();
    {
        let replica = Replica::open(&dir.path().join("replica")).unwrap();
        let err = replica.confirm(&bad.note, &signed).unwrap_err();
        assert!(err.to_string().contains(&hex::encode(wrong)), "{err}");
    }
    let meta = |f: &dyn Fn(&rocksdb::DB, &rocksdb::ColumnFamily)| {
        let cfs = ["meta", "hashes", "zetas", "snapshots", "tree", "witness"];
        let path = dir.path().join("replica");
        let db = rocksdb::DB::open_cf(&rocksdb::Options::default(), path, cfs).unwrap();
        f(&db, db.cf_handle("meta").unwrap());
    };
    meta(&|db, cf| db.put_cf(cf, b"checkpoint", bad.note.as_bytes()).unwrap());
    let err = start(&config).await.unwrap_err();
    assert!(err.contains("not of the applied entries"), "{err}");
    assert!(err.contains(&hex::encode(wrong)), "{err}");

    // i. A stored legacy note (the chain hash of the applied entry): stored, resumed from.
    let t_stored = later(&log, t_grown);
    let legacy = note_with_root(&good, size, chain(&good.entries, size), Some(t_stored));
    {
        let replica = Replica::open(&dir.path().join("replica")).unwrap();
        let signed = group(&log).verify_checkpoint(&legacy.note).unwrap();
        replica.confirm(&legacy.note, &signed).unwrap();
    }
    mock.note(None);
    let gw = gateway(config.clone()).await;
    assert_eq!(
        (gw.applied().await, fresh_time(&gw).await),
        (size, t_stored)
    );
    gw.shutdown().await;

    // j. A replica from before the tree (its tree size gone): refused, saying what to do.
    meta(&|db, cf| db.delete_cf(cf, b"tree_size").unwrap());
    let err = start(&config).await.unwrap_err();
    assert!(err.contains("cannot be migrated"), "{err}");
    assert!(err.contains(&dir.path().display().to_string()), "{err}");
}

/// Starts a gateway with `config`, returning the start error's text.
async fn start(config: &gw::Config) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    match gw::start(config.clone(), listener).await {
        Ok(running) => {
            running.shutdown().await.unwrap();
            Ok(())
        }
        Err(e) => Err(e.to_string()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tree_a_gateway_keeps_is_the_registrys_at_every_size() {
    let reg = registry().await;
    // Joins in batches: over three hash tiles of entries, applied in several ranges.
    for batch in 0..8 {
        let usernames = (0..100).map(|i| format!("m{batch}-{i}")).collect();
        reg.writer()
            .submit(Command::Join { usernames }, None)
            .await
            .unwrap();
    }
    let gw = reg.follower(|_| {}).await;
    let applied = gw.applied().await;
    assert!(applied > 3 * 256, "{applied}");
    let leaves: Vec<Hash> = reg.public_log().iter().map(leaf_of).collect();
    let replica = &gw.state().replica;
    assert_eq!(replica.tree_size().unwrap(), applied);
    for size in 0..=applied {
        let want = root(&leaves[..size as usize]);
        assert_eq!(replica.root_at(size).unwrap(), want, "size {size}");
        assert_eq!(reg.store.tree_root(size).unwrap(), want, "size {size}");
    }
    assert!(replica.root_at(applied + 1).is_err());
    gw.shutdown().await;
    reg.shutdown().await;
}
