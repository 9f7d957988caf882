//! The group-commit writer over a real RocksDB store: concurrent requests, idempotency,
//! refusals that write nothing.

use std::collections::HashSet;
use std::sync::Arc;

use dgsp_core::{Manager, ParamSet};
use dgsp_registry::store::Store;
use dgsp_registry::writer::{Command, Idempotency, Outcome, WriteError, Writer};
use rand_chacha::rand_core::SeedableRng;

type Setup = (
    Arc<Store>,
    Writer,
    Arc<Manager>,
    std::thread::JoinHandle<()>,
);

fn setup(dir: &std::path::Path) -> Setup {
    let store = Arc::new(Store::open(dir).unwrap());
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    let manager = Arc::new(Manager::generate(ParamSet::Sha2_128f, &mut rng));
    let (writer, thread) =
        Writer::start(store.clone(), manager.clone(), Default::default()).unwrap();
    (store, writer, manager, thread)
}

/// Drops the last writer handle and waits for the thread, so RocksDB closes before exit.
async fn stop(writer: Writer, thread: std::thread::JoinHandle<()>) {
    drop(writer);
    tokio::task::spawn_blocking(move || thread.join().unwrap())
        .await
        .unwrap();
}

fn digests(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{i:064x}")).collect()
}

fn join(names: &[&str]) -> Command {
    Command::Join {
        usernames: names.iter().map(|s| s.to_string()).collect(),
    }
}

/// Reserve `count` counters for member `id`, with as many key digests.
fn issue(id: u64, count: u64) -> Command {
    Command::Issue {
        id,
        count,
        wots_pk_digests: digests(count as usize),
    }
}

fn key(fingerprint: &str) -> Option<Idempotency> {
    Some(Idempotency {
        key: "k1".into(),
        fingerprint: fingerprint.into(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_joins_and_issuances_never_collide() {
    let dir = tempfile::tempdir().unwrap();
    let (store, writer, _, thread) = setup(dir.path());
    let joins = (0..200).map(|i| {
        let w = writer.clone();
        tokio::spawn(async move { w.submit(join(&[&format!("u{i}")]), None).await })
    });
    let mut ids = HashSet::new();
    for j in joins {
        match j.await.unwrap().unwrap() {
            Outcome::Joined { ids: new, .. } => assert!(ids.insert(new[0])),
            o => panic!("{o:?}"),
        }
    }
    assert_eq!(ids, (0..200).collect());

    // 100 concurrent issuances for one member: disjoint counter ranges.
    let issues = (0..100).map(|_| {
        let w = writer.clone();
        let cmd = issue(7, 3);
        tokio::spawn(async move { w.submit(cmd, None).await })
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
    stop(writer, thread).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_write_nothing_and_retries_return_the_first_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (store, writer, manager, thread) = setup(dir.path());
    let first = writer.submit(join(&["alice"]), key("a")).await.unwrap();
    let again = writer.submit(join(&["alice"]), key("a")).await.unwrap();
    assert_eq!(first, again);
    let head = store.head().unwrap();
    let reused = writer.submit(join(&["bob"]), key("b")).await;
    assert!(matches!(reused, Err(WriteError::IdempotencyMismatch(_))));
    let dup = writer.submit(join(&["alice"]), None).await;
    assert!(matches!(dup, Err(WriteError::DuplicateUsername(_))));
    // A bulk join is all or nothing.
    let bulk = writer.submit(join(&["carol", "alice"]), None).await;
    assert!(matches!(bulk, Err(WriteError::DuplicateUsername(_))));
    let twice = writer.submit(join(&["dave", "dave"]), None).await;
    assert!(matches!(twice, Err(WriteError::DuplicateUsername(_))));
    assert_eq!(store.id_of("carol").unwrap(), None);
    let unknown = issue(9, 1);
    assert!(matches!(
        writer.submit(unknown, None).await,
        Err(WriteError::UnknownMember(9))
    ));
    assert_eq!(store.head().unwrap(), head, "refusals append nothing");

    writer.submit(issue(0, 4), None).await.unwrap();
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
    let late = issue(0, 1);
    assert!(matches!(
        writer.submit(late, None).await,
        Err(WriteError::Inactive(0))
    ));
    assert_eq!(store.count("revoked").unwrap(), 4);
    stop(writer, thread).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issuance_stops_at_the_certificate_limit_and_writes_nothing_past_it() {
    use dgsp_registry::writer::MAX_CERTIFICATES_PER_MEMBER as MAX;
    let dir = tempfile::tempdir().unwrap();
    let (store, writer, _manager, thread) = setup(dir.path());
    writer.submit(join(&["alice"]), None).await.unwrap();
    let bulk = |count| Command::Issue {
        id: 0,
        count,
        wots_pk_digests: vec![],
    };
    writer.submit(bulk(MAX - 1), None).await.unwrap();
    let head = store.head().unwrap();
    let over = writer.submit(bulk(2), None).await;
    assert!(
        matches!(
            over,
            Err(WriteError::CertificateLimit { id: 0, issued, requested: 2 }) if issued == MAX - 1
        ),
        "{over:?}"
    );
    let huge = writer.submit(bulk(u64::MAX), None).await;
    assert!(
        matches!(huge, Err(WriteError::CounterOverflow(0))),
        "{huge:?}"
    );
    assert_eq!(store.head().unwrap(), head, "refusals append nothing");
    let last = writer.submit(bulk(1), None).await.unwrap();
    assert!(matches!(last, Outcome::Reserved { first, count: 1, .. } if first == MAX - 1));
    let more = writer.submit(bulk(1), None).await;
    assert!(matches!(more, Err(WriteError::CertificateLimit { .. })));
    assert_eq!(store.member(0).unwrap().unwrap().counter, MAX);
    stop(writer, thread).await;
}
