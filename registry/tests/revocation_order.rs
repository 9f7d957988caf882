//! No revocation lost: a revocation is either refused or in the next signed snapshot,
//! whatever its caller does, and a log that already holds a checkpoint omitting one is
//! repaired on start.
//!
//! - The race of issue 26, made deterministic: a revoke whose caller goes away after it is
//!   queued (the HTTP handler's future dropped on a client disconnect) keeps the publisher
//!   out until it is durable, and lands in the next snapshot, which the next checkpoint
//!   names.
//! - A log written by a registry with that bug (a snapshot signed while a revocation was
//!   committed, later snapshots built without it, checkpoints naming them): the registry
//!   starts, serves no proof from the bad snapshot, publishes a corrected one first, and
//!   `dgsp-registry verify` names the bad checkpoint and says it was repaired.

use crate::support;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use dgsp_core::checkpoint::{origin_for, Checkpoint, SnapshotRef};
use dgsp_core::revocation::{RevocationSet, SnapshotRecord};
use dgsp_core::{Manager, MemberId, Zeta};
use dgsp_registry::publisher::{snapshot_json, PublisherConfig};
use dgsp_registry::server;
use dgsp_registry::store::Store;
use dgsp_registry::writer::{Command, Outcome, Writer};
use dgsp_wire::events::Event;
use reqwest::StatusCode;
use serde_json::Value;
use support::{get_json, polls};

const PASSPHRASE: &str = "revocation order test passphrase";
const TOKEN: &str = "revocation-order-admin-token";

/// A fresh sha2-128f group made by `dgsp-registry init` in `data`.
fn init(data: &Path) -> Arc<Manager> {
    support::init(data, PASSPHRASE);
    support::manager_key(data, PASSPHRASE)
}

async fn start(store: Arc<Store>, manager: Arc<Manager>, interval: Duration) -> server::Running {
    let config = server::Config {
        publisher: PublisherConfig {
            checkpoint_interval: interval,
            ..PublisherConfig::default()
        },
        ..support::config(TOKEN)
    };
    support::serve(store, manager, config).await
}

fn join_and_issue(writer: &Writer, names: &[&str]) -> Vec<MemberId> {
    let Outcome::Joined { ids, .. } = writer
        .submit_blocking(
            Command::Join {
                usernames: names.iter().map(|s| s.to_string()).collect(),
            },
            None,
        )
        .unwrap()
    else {
        panic!("not joined")
    };
    for id in &ids {
        writer
            .submit_blocking(
                Command::Issue {
                    id: *id,
                    count: 2,
                    wots_pk_digests: vec![],
                },
                None,
            )
            .unwrap();
    }
    ids
}

fn revoke(writer: &Writer, id: MemberId) -> (u64, Vec<String>) {
    match writer
        .submit_blocking(Command::Revoke { id }, None)
        .unwrap()
    {
        Outcome::Revoked { seq, zetas, .. } => (seq, zetas),
        other => panic!("{other:?}"),
    }
}

fn append(writer: &Writer, event: Event) -> u64 {
    match writer
        .submit_blocking(Command::Append { event }, None)
        .unwrap()
    {
        Outcome::Appended { seq } => seq,
        other => panic!("{other:?}"),
    }
}

fn zetas_of(hex_zetas: &[String]) -> Vec<Zeta> {
    hex_zetas
        .iter()
        .map(|z| Zeta(hex::decode(z).unwrap().try_into().unwrap()))
        .collect()
}

/// Polls `f` once; the first poll must leave it pending.
async fn poll_once<F: Future + Unpin>(f: &mut F) {
    std::future::poll_fn(|cx| {
        assert!(
            std::pin::Pin::new(&mut *f).poll(cx).is_pending(),
            "the command finished while commits are held"
        );
        Poll::Ready(())
    })
    .await
}

/// The revoke of issue 26, made deterministic: its caller is dropped after it is queued,
/// while the disk is held. The publisher must not get the fence until the revocation is
/// durable (with the fence released by the caller's future, it got it at once and signed
/// a snapshot without it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_whose_caller_goes_away_after_queueing_keeps_the_fence_until_durable() {
    let dir = tempfile::tempdir().unwrap();
    let manager = init(dir.path());
    let store = Arc::new(Store::open(&dir.path().join("db")).unwrap());
    let (writer, thread) =
        Writer::start(store.clone(), manager.clone(), Default::default()).unwrap();
    let w = writer.clone();
    let ids = tokio::task::spawn_blocking(move || join_and_issue(&w, &["alice"]))
        .await
        .unwrap();

    store.hold_commits();
    let mut revocation = Box::pin(writer.submit(Command::Revoke { id: ids[0] }, None));
    poll_once(&mut revocation).await;
    drop(revocation); // the client disconnected: axum drops the handler's future

    let early = tokio::time::timeout(Duration::from_millis(300), writer.fence_revocations()).await;
    assert!(
        early.is_err(),
        "the publisher got the fence while a queued revocation was not yet durable"
    );
    store.release_commits();
    let fence = tokio::time::timeout(Duration::from_secs(10), writer.fence_revocations())
        .await
        .expect("the fence once the revocation is durable");
    let head = store.head().unwrap();
    let last = store.entry(head.seq).unwrap().unwrap();
    assert_eq!(
        last.kind, "member_revoked",
        "the dropped revocation was committed"
    );
    drop(fence);
    drop(writer);
    tokio::task::spawn_blocking(move || thread.join().unwrap())
        .await
        .unwrap();
}

/// Waits until the publisher has caught up and is idle: the newest entry is its checkpoint
/// of every entry before it, and the round that appended it is over (it folds its own entry
/// under the fence, so nothing wakes it again before the next write; the cadence is long).
async fn caught_up(store: &Store, writer: &Writer) {
    for _ in 0..400 {
        let head = store.head().unwrap();
        let last = store.entry(head.seq).unwrap().unwrap();
        if last.kind == "checkpoint" && last.public["size"].as_u64() == Some(head.seq - 1) {
            drop(
                tokio::time::timeout(Duration::from_secs(10), writer.fence_revocations())
                    .await
                    .unwrap(),
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the publisher never checkpointed the setup");
}

/// The same race through a running registry: the dropped revocation is in the next signed
/// snapshot, the checkpoint names it, and its zetas are answered `revoked`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_whose_caller_goes_away_is_in_the_next_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let manager = init(dir.path());
    let store = Arc::new(Store::open(&dir.path().join("db")).unwrap());
    // No cadence: the publisher signs only after changes, so it is idle once it has caught up.
    let running = start(store.clone(), manager.clone(), Duration::from_secs(3600)).await;
    let writer = running.state.writer.clone();
    let w = writer.clone();
    let ids = tokio::task::spawn_blocking(move || join_and_issue(&w, &["alice", "bob"]))
        .await
        .unwrap();
    caught_up(&store, &writer).await;

    store.hold_commits();
    // Alice's revocation is queued (it holds its share of the fence), then its caller goes
    // away; Bob's is in flight on a connection that stays.
    let mut alice = Box::pin(writer.submit(Command::Revoke { id: ids[0] }, None));
    poll_once(&mut alice).await;
    let early = tokio::time::timeout(Duration::from_millis(200), writer.fence_revocations()).await;
    assert!(
        early.is_err(),
        "alice's revocation is not holding the fence"
    );
    drop(alice);
    let w = writer.clone();
    let bob_id = ids[1];
    let bob = tokio::spawn(async move { w.submit(Command::Revoke { id: bob_id }, None).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    store.release_commits();
    let Outcome::Revoked { seq: bob_seq, .. } = bob.await.unwrap().unwrap() else {
        panic!("bob not revoked")
    };

    // Every revocation in the log, with its zetas.
    let revoked: Vec<(u64, Vec<String>)> = store
        .entries_after(0, 10_000)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "member_revoked")
        .map(|e| {
            let zetas = e.public["zetas"]
                .as_array()
                .unwrap()
                .iter()
                .map(|z| z.as_str().unwrap().to_owned())
                .collect();
            (e.seq, zetas)
        })
        .collect();
    assert_eq!(revoked.len(), 2, "both revocations are in the log");
    let last_revocation = revoked.iter().map(|r| r.0).max().unwrap();
    assert!(last_revocation >= bob_seq);

    let client = reqwest::Client::new();
    let url = running.url();
    // A checkpoint covers the revocations.
    support::wait_covering(&client, &url, last_revocation, polls(200, 50)).await;
    drop(writer); // the writer thread ends with its last handle
    for (seq, zetas) in &revoked {
        for z in zetas {
            let (status, proof) =
                get_json(&client, format!("{url}/v1/revocations/{z}/proof"), None).await;
            assert!(status.is_success(), "{proof}");
            assert_eq!(
                proof["revoked"],
                Value::Bool(true),
                "zeta {z} of the revocation at entry {seq} is not in the signed snapshot"
            );
        }
    }
    running.shutdown().await.unwrap();
}

/// Writes the log a registry with the race wrote: snapshot 1 signed while Alice's
/// revocation was committed, and snapshot 2 built without it, each named by a checkpoint.
/// Returns every revoked zeta.
fn write_lossy_log(store: &Arc<Store>, manager: &Arc<Manager>) -> Vec<Zeta> {
    let (writer, thread) =
        Writer::start(store.clone(), manager.clone(), Default::default()).unwrap();
    let ids = join_and_issue(&writer, &["alice", "bob", "carol"]);
    let fingerprint = manager.public_key().fingerprint();
    let (bob_seq, bob) = revoke(&writer, ids[1]);
    let (_, alice) = revoke(&writer, ids[0]); // committed while snapshot 1 is signed
    let mut set = RevocationSet::from_zetas(zetas_of(&bob));
    let record = SnapshotRecord::genesis(fingerprint, bob_seq, set.len(), set.root(), 1);
    let first = manager.sign_snapshot(&record);
    append(
        &writer,
        Event::SnapshotPublished {
            snapshot: snapshot_json(&first),
        },
    );
    let checkpoint = |store: &Store, snapshot: &SnapshotRecord, time: u64| {
        let head = store.head().unwrap();
        let root = store.tree_root(head.seq).unwrap();
        let cp = Checkpoint {
            origin: origin_for(manager.public_key()),
            size: head.seq,
            root,
            time_unix_ms: Some(time),
            snapshot: Some(SnapshotRef::of(snapshot)),
        };
        Event::Checkpoint {
            size: head.seq,
            head: hex::encode(root),
            note: manager.sign_checkpoint(&cp),
        }
    };
    let now = dgsp_wire::log::now_ms();
    append(&writer, checkpoint(store, &first.record, now - 2_000));
    let (carol_seq, carol) = revoke(&writer, ids[2]);
    set.insert(&zetas_of(&carol));
    let record = first.record.next(carol_seq, set.len(), set.root(), 2);
    let second = manager.sign_snapshot(&record);
    append(
        &writer,
        Event::SnapshotPublished {
            snapshot: snapshot_json(&second),
        },
    );
    append(&writer, checkpoint(store, &second.record, now - 1_000));
    drop(writer);
    thread.join().unwrap();
    [alice, bob, carol]
        .iter()
        .flat_map(|z| zetas_of(z))
        .collect()
}

/// `dgsp-registry verify` on `data`: whether it passed, and what it printed.
fn verify(data: &Path) -> (bool, String) {
    let out = std::process::Command::new(support::BIN)
        .args(["verify", "--data"])
        .arg(data)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_holding_a_snapshot_that_lost_a_revocation_is_repaired_on_start() {
    let dir = tempfile::tempdir().unwrap();
    let manager = init(dir.path());
    let db = dir.path().join("db");
    let store = Arc::new(Store::open(&db).unwrap());
    let (s, m) = (store.clone(), manager.clone());
    let revoked = tokio::task::spawn_blocking(move || write_lossy_log(&s, &m))
        .await
        .unwrap();
    drop(store);

    // `verify` names the bad checkpoints and says the latest state does not yet hold.
    let (verified, text) = verify(dir.path());
    assert!(!verified, "verify passed a lossy log: {text}");
    assert!(text.contains("not in the snapshot it names"), "{text}");

    let store = Arc::new(Store::open(&db).unwrap());
    let running = start(store.clone(), manager.clone(), Duration::from_secs(1)).await;
    let client = reqwest::Client::new();
    let url = running.url();
    support::wait_readyz(&client, &url, StatusCode::OK, polls(200, 50)).await;
    for z in &revoked {
        let z = hex::encode(z.as_bytes());
        let (status, proof) =
            get_json(&client, format!("{url}/v1/revocations/{z}/proof"), None).await;
        assert!(status.is_success(), "{proof}");
        assert_eq!(proof["revoked"], Value::Bool(true), "zeta {z}: {proof}");
        assert_eq!(proof["count"].as_u64(), Some(revoked.len() as u64));
    }
    // The served checkpoint catches up with the log (all but the checkpoint entry itself).
    // Checkpoints are timed (every second here), so the head moves on while we look: read
    // both again until they meet, as a follower would, within 20 s.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (_, cp) = get_json(&client, format!("{url}/v1/checkpoint"), None).await;
        let head = store.head().unwrap();
        if cp["size"].as_u64().unwrap() >= head.seq - 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the served checkpoint never covered the log's head {}: {cp}",
            head.seq
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    running.shutdown().await.unwrap();
    drop(store);

    // Repaired: `verify` still names the bad checkpoints, and passes.
    let (verified, text) = verify(dir.path());
    assert!(verified, "{text}");
    assert!(text.contains("not in the snapshot it names"), "{text}");
    assert!(text.contains("repaired"), "{text}");
}
