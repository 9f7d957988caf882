//! The RocksDB store on disk: atomic commits, restart, chain verification, and a rebuild
//! that reproduces the live projections byte for byte.

use crate::support;

use dgsp_registry::store::{Head, Store};
use dgsp_wire::events::Event;
use dgsp_wire::log::Entry;
use support::chain::append;

fn zeta_hex(i: u64) -> String {
    hex::encode([i.to_be_bytes(), (!i).to_be_bytes()].concat())
}

fn history(store: &Store) -> Head {
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
    for round in 0..20u64 {
        let mut batch = Vec::new();
        for k in 0..5 {
            let id = round * 5 + k;
            batch.push(Event::MemberJoined {
                id,
                username: format!("user-{id}"),
            });
            batch.push(Event::CertificatesIssued {
                id,
                first: 0,
                count: 3,
                wots_pk_digests: vec!["aa".repeat(32); 3],
            });
        }
        if round % 4 == 3 {
            let id = round * 5;
            batch.push(Event::MemberRevoked {
                id,
                counter: 3,
                first: 0,
                zetas: (0..3).map(|c| zeta_hex(id * 10 + c)).collect(),
            });
        }
        append(store, &mut head, &batch);
    }
    head
}

#[test]
fn projections_follow_the_log_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let head = {
        let store = Store::open(dir.path()).unwrap();
        history(&store)
    };
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.head().unwrap(), head);
    assert_eq!(store.verify_chain().unwrap(), head);
    assert_eq!(store.count("members").unwrap(), 100);
    assert_eq!(store.count("revoked").unwrap(), 15);
    let m = store.member(15).unwrap().unwrap();
    assert!(!m.active);
    assert_eq!(m.counter, 3);
    assert!(store.member(16).unwrap().unwrap().active);
    assert_eq!(store.id_of("user-42").unwrap(), Some(42));
    assert_eq!(store.id_of("nobody").unwrap(), None);
    let z = dgsp_core::Zeta::from_slice(&hex::decode(zeta_hex(151)).unwrap()).unwrap();
    assert!(store.is_revoked(&z).unwrap());
    let z = dgsp_core::Zeta::from_slice(&hex::decode(zeta_hex(161)).unwrap()).unwrap();
    assert!(!store.is_revoked(&z).unwrap());
    let page = store.entries_after(10, 5).unwrap();
    assert_eq!(
        page.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![11, 12, 13, 14, 15]
    );
}

#[test]
fn the_write_ahead_log_is_bounded() {
    // Without the bound, families written with every batch (meta, head) keep every WAL
    // file alive: 7.4 GB of WAL while writing a 2^25-member log.
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    history(&store);
    assert_eq!(
        support::rocksdb::option(dir.path(), "max_total_wal_size"),
        Some(dgsp_registry::store::MAX_TOTAL_WAL_BYTES.to_string())
    );
}

#[test]
fn rebuild_gives_byte_identical_views() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    history(&store);
    let live = store.dump_views().unwrap();
    assert!(live.len() > 200);
    let replayed = store.rebuild(|_, _| {}).unwrap();
    assert_eq!(replayed, store.head().unwrap().seq);
    assert_eq!(store.dump_views().unwrap(), live);
}

#[test]
fn a_tampered_entry_breaks_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let head = history(&store);
    // A forged entry that does not link to the head.
    let bogus = Entry::seal(
        head.seq + 1,
        5,
        &Event::MemberJoined {
            id: 999,
            username: "x".into(),
        },
        &[7u8; 32],
    );
    store.commit(&[bogus], &[]).unwrap();
    assert!(store.verify_chain().is_err());
}
