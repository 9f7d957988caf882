//! The group-commit writer over a real RocksDB store: concurrent requests, idempotency,
//! refusals that write nothing.

use std::collections::HashSet;
use std::sync::Arc;

use dgsp_core::{Manager, ParamSet};
use dgsp_registry::store::Store;
use dgsp_registry::writer::{Command, Outcome, WriteError, Writer};
use rand_chacha::rand_core::SeedableRng;

fn setup(dir: &std::path::Path) -> (Arc<Store>, Writer, Arc<Manager>) {
    let store = Arc::new(Store::open(dir).unwrap());
    let manager = Arc::new(Manager::generate(
        ParamSet::Sha2_128f,
        &mut rand_chacha::ChaCha20Rng::seed_from_u64(1),
    ));
    let (writer, _thread) = Writer::start(store.clone(), manager.clone()).unwrap();
    (store, writer, manager)
}

fn digests(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{i:064x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_joins_and_issuances_never_collide() {
    let dir = tempfile::tempdir().unwrap();
    let (store, writer, _) = setup(dir.path());
    let joins = (0..200).map(|i| {
        let w = writer.clone();
        tokio::spawn(async move {
            w.submit(
                Command::Join {
                    username: format!("u{i}"),
                },
                None,
            )
            .await
        })
    });
    let mut ids = HashSet::new();
    for j in joins {
        match j.await.unwrap().unwrap() {
            Outcome::Joined { id, .. } => assert!(ids.insert(id)),
            o => panic!("{o:?}"),
        }
    }
    assert_eq!(ids, (0..200).collect());

    // 100 concurrent issuances for one member: disjoint counter ranges.
    let issues = (0..100).map(|_| {
        let w = writer.clone();
        tokio::spawn(async move {
            w.submit(
                Command::Issue {
                    id: 7,
                    wots_pk_digests: digests(3),
                },
                None,
            )
            .await
        })
    });
    let mut firsts = Vec::new();
    for i in issues {
        match i.await.unwrap().unwrap() {
            Outcome::Reserved {
                first, count: 3, ..
            } => firsts.push(first),
            o => panic!("{o:?}"),
        }
    }
    firsts.sort_unstable();
    assert_eq!(firsts, (0..100).map(|k| 3 * k).collect::<Vec<_>>());
    assert_eq!(store.member(7).unwrap().unwrap().counter, 300);
    assert_eq!(store.verify_chain().unwrap().seq, 300);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_write_nothing_and_retries_return_the_first_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (store, writer, manager) = setup(dir.path());
    let first = writer
        .submit(
            Command::Join {
                username: "alice".into(),
            },
            Some("k1".into()),
        )
        .await
        .unwrap();
    let again = writer
        .submit(
            Command::Join {
                username: "alice".into(),
            },
            Some("k1".into()),
        )
        .await
        .unwrap();
    assert_eq!(first, again);
    let head = store.head().unwrap();
    assert!(matches!(
        writer
            .submit(
                Command::Join {
                    username: "alice".into()
                },
                None
            )
            .await,
        Err(WriteError::DuplicateUsername(_))
    ));
    assert!(matches!(
        writer
            .submit(
                Command::Issue {
                    id: 9,
                    wots_pk_digests: digests(1)
                },
                None
            )
            .await,
        Err(WriteError::UnknownMember(9))
    ));
    assert_eq!(store.head().unwrap(), head, "refusals append nothing");

    writer
        .submit(
            Command::Issue {
                id: 0,
                wots_pk_digests: digests(4),
            },
            None,
        )
        .await
        .unwrap();
    let r1 = writer
        .submit(Command::Revoke { id: 0 }, None)
        .await
        .unwrap();
    let Outcome::Revoked {
        zetas,
        already: false,
        seq,
        ..
    } = r1
    else {
        panic!("{r1:?}")
    };
    let expected: Vec<String> = manager
        .zetas(0, 0..4)
        .iter()
        .map(|z| hex::encode(z.as_bytes()))
        .collect();
    assert_eq!(zetas, expected);
    let head = store.head().unwrap();
    let r2 = writer
        .submit(Command::Revoke { id: 0 }, None)
        .await
        .unwrap();
    assert_eq!(
        r2,
        Outcome::Revoked {
            seq,
            id: 0,
            zetas,
            already: true
        }
    );
    assert_eq!(
        store.head().unwrap(),
        head,
        "revoking twice appends nothing"
    );
    assert!(matches!(
        writer
            .submit(
                Command::Issue {
                    id: 0,
                    wots_pk_digests: digests(1)
                },
                None
            )
            .await,
        Err(WriteError::Inactive(0))
    ));
    assert_eq!(store.count("revoked").unwrap(), 4);
}
