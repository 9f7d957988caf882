//! A database written before the log was a tree gets its tree on open (`Store::open`,
//! `Store::migrate_tree`, docs/format.md "The tree"): computed from the entries in synced
//! chunks of 16 384, each with the tree's new size, so that an interrupted migration
//! resumes where it stopped. Here, a log of two chunks and a bit is written through the
//! store, its tree removed with RocksDB directly (the `tree` column family dropped, the
//! `tree_size` key deleted), and the database reopened: the tree is back, byte for byte,
//! and its roots are those `dgsp_wire::merkle` computes from the entries' leaves. Then the
//! state an interrupted migration leaves (the tree of a prefix only: at a chunk boundary,
//! and in the middle of a tile) is made the same way, and the reopen resumes from there.

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::support;

use dgsp_registry::store::Store;
use dgsp_wire::events::Event;
use dgsp_wire::log::Hash;
use dgsp_wire::merkle;
use dgsp_wire::tiles::{entry_bytes, TILE_HEIGHT};
use support::chain::append;

/// `MIGRATE_CHUNK` of `registry/src/store/tree.rs`.
const CHUNK: u64 = 16_384;
/// Entries in the log: one full chunk, then part of a second.
const ENTRIES: u64 = CHUNK + 1_001;

/// A log of [`ENTRIES`] entries: the group, then joins, 1000 per commit.
fn write_log(store: &Store) {
    let mut head = store.head().unwrap();
    append(
        store,
        &mut head,
        &[Event::GroupCreated {
            params: dgsp_core::ParamSet::Sha2_128f,
            public_key: "AAAA".into(),
            fingerprint: "00".repeat(32),
        }],
    );
    let mut id = 0;
    while head.seq < ENTRIES {
        let n = (ENTRIES - head.seq).min(1_000);
        let batch: Vec<Event> = (0..n)
            .map(|k| Event::MemberJoined {
                id: id + k,
                username: format!("user-{}", id + k),
            })
            .collect();
        id += n;
        append(store, &mut head, &batch);
    }
    assert_eq!(head.seq, ENTRIES);
}

/// The leaves of every entry, from the entries' bytes (not from the store's tree).
fn leaves(store: &Store) -> Vec<Hash> {
    let entries = store.entries_after(0, ENTRIES as usize + 1).unwrap();
    assert_eq!(entries.len() as u64, ENTRIES);
    entries
        .iter()
        .map(|e| merkle::leaf_hash(&entry_bytes(e)))
        .collect()
}

/// Leaves the tree as a migration interrupted after its first `kept` entries does: the
/// nodes of subtrees wholly within them, and `tree_size` = `kept` (0: no tree at all, as
/// before the tree existed: the column family dropped).
fn cut_tree(dir: &Path, kept: u64) {
    let names = rocksdb::DB::list_cf(&rocksdb::Options::default(), dir).unwrap();
    let mut db = rocksdb::DB::open_cf(&rocksdb::Options::default(), dir, &names).unwrap();
    if kept == 0 {
        db.drop_cf("tree").unwrap();
        let views = db.cf_handle("views").unwrap();
        db.delete_cf(views, b"tree_size").unwrap();
    } else {
        let tree = db.cf_handle("tree").unwrap();
        let mut gone = 0;
        for item in db.iterator_cf(tree, rocksdb::IteratorMode::Start) {
            let (k, _) = item.unwrap();
            let (level, index) = (k[0], u64::from_be_bytes(k[1..9].try_into().unwrap()));
            let span = 1u64 << (u32::from(level) * u32::from(TILE_HEIGHT));
            if (index + 1) * span > kept {
                db.delete_cf(tree, &k).unwrap();
                gone += 1;
            }
        }
        assert!(gone > 0, "nothing beyond {kept} to remove");
        let views = db.cf_handle("views").unwrap();
        db.put_cf(views, b"tree_size", kept.to_be_bytes()).unwrap();
    }
    db.flush_wal(true).unwrap();
}

/// Opens the store, returning it with the `done` of each progress line the migration
/// logged ("computing the log's Merkle tree").
fn open_logged(dir: &Path) -> (Store, Vec<u64>) {
    #[derive(Clone)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().write(b)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Buf(Arc::new(Mutex::new(Vec::new())));
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let store = tracing::subscriber::with_default(subscriber, || Store::open(dir).unwrap());
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    let done = text
        .lines()
        .filter(|l| l.contains("computing the log's Merkle tree"))
        .map(|l| {
            let v = l.split("done=").nth(1).unwrap().split_whitespace().next();
            v.unwrap().parse().unwrap()
        })
        .collect();
    (store, done)
}

/// The tree's roots at sizes around the chunk and tile edges, against `merkle::root`.
fn check_roots(store: &Store, leaves: &[Hash]) {
    assert_eq!(store.tree_size().unwrap(), ENTRIES);
    for size in [
        1,
        255,
        256,
        257,
        1_000,
        CHUNK - 1,
        CHUNK,
        CHUNK + 1,
        ENTRIES,
    ] {
        assert_eq!(
            store.tree_root(size).unwrap(),
            merkle::root(&leaves[..size as usize]),
            "root at {size}"
        );
    }
}

#[test]
fn the_tree_is_computed_on_open_and_an_interrupted_migration_resumes() {
    let t0 = std::time::Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let (views, leaves) = {
        let store = Store::open(dir.path()).unwrap();
        write_log(&store);
        let leaves = leaves(&store);
        check_roots(&store, &leaves);
        (store.dump_views().unwrap(), leaves)
    };
    let written = t0.elapsed();

    // Before the tree: no `tree` column family, no `tree_size`.
    cut_tree(dir.path(), 0);
    {
        let names = rocksdb::DB::list_cf(&rocksdb::Options::default(), dir.path()).unwrap();
        assert!(!names.iter().any(|n| n == "tree"), "{names:?}");
    }
    let (store, done) = open_logged(dir.path());
    assert_eq!(done, [CHUNK, ENTRIES], "migrated in two synced chunks");
    check_roots(&store, &leaves);
    assert!(
        store.dump_views().unwrap() == views,
        "the migrated tree differs from the one written with the entries"
    );
    drop(store);

    // Interrupted after its first chunk (the chunk's record: tree_size = 16384), and in
    // the middle of a tile and of a chunk: each reopen resumes from there.
    for (kept, want) in [
        (CHUNK, vec![ENTRIES]),
        (1_000, vec![1_000 + CHUNK, ENTRIES]),
    ] {
        cut_tree(dir.path(), kept);
        let (store, done) = open_logged(dir.path());
        assert_eq!(done, want, "resumed after {kept}");
        check_roots(&store, &leaves);
        assert!(
            store.dump_views().unwrap() == views,
            "the tree resumed after {kept} differs from the one written with the entries"
        );
    }
    // Up to date: a further open computes nothing.
    let (_, done) = open_logged(dir.path());
    assert!(done.is_empty(), "{done:?}");
    eprintln!(
        "migration test: {ENTRIES} entries written in {written:?}; whole test {:?}",
        t0.elapsed()
    );
}
