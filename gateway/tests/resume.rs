//! A gateway that refused a signed checkpoint for what it covers keeps the fault visible and
//! resumes once a later checkpoint covers the log consistently (issue 26, docs/gateway.md,
//! "Refused checkpoints").
//!
//! The log is the kind a registry with the revocation-fence race wrote: an honest first
//! snapshot and checkpoint; then snapshot 2 signed while Alice's revocation was committed (a
//! checkpoint names it although Alice's revocation is among its entries: `bad_checkpoint`),
//! and snapshot 3 built without Alice's zetas (its root lacks a revocation it covers:
//! `snapshot_mismatch`), named by a checkpoint too. A registry started on it publishes a
//! corrected snapshot 4 holding every revocation, and a checkpoint naming it, first thing.
//! Before issue 26 a gateway dropped everything pending at the first bad checkpoint and met
//! it again at the next poll, forever.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use dgsp_core::checkpoint::{origin_for, Checkpoint, SnapshotRef};
use dgsp_core::revocation::{RevocationSet, SignedSnapshot, SnapshotRecord};
use dgsp_core::{Manager, MemberId, ParamSet, Zeta};
use dgsp_gateway::anchor::Anchor;
use dgsp_registry::store::Store;
use dgsp_registry::writer::{Command, Outcome, Writer};
use dgsp_wire::events::Event;
use dgsp_wire::log::{now_ms, Entry};
use dgsp_wire::snapshot::snapshot_json;
use serde_json::Value;
use support::mock::{Log, MockRegistry, Note};
use support::{gateway, gateway_config, metric, wait_for, Gateway, Registry};

/// What [`write_lossy_log`] wrote.
struct Lossy {
    /// The log as the registry with the race left it (public parts).
    entries: Vec<Entry>,
    /// Alice's zetas: revoked in the log, missing from snapshots 2 and 3.
    alice: Vec<Zeta>,
    /// Every revoked zeta.
    revoked: Vec<Zeta>,
    /// The size of the honest checkpoint (snapshot 1).
    honest: u64,
}

fn submit(writer: &Writer, command: Command) -> Outcome {
    writer.submit_blocking(command, None).unwrap()
}

fn revoke(writer: &Writer, id: MemberId) -> (u64, Vec<Zeta>) {
    match submit(writer, Command::Revoke { id }) {
        Outcome::Revoked { seq, zetas, .. } => (
            seq,
            zetas
                .iter()
                .map(|z| Zeta(hex::decode(z).unwrap().try_into().unwrap()))
                .collect(),
        ),
        other => panic!("{other:?}"),
    }
}

/// Appends a signed snapshot and a checkpoint (signed `age_ms` ago) naming it; returns the
/// checkpoint's size.
fn publish(
    store: &Store,
    writer: &Writer,
    manager: &Manager,
    s: &SignedSnapshot,
    age_ms: u64,
) -> u64 {
    let append = |event| match submit(writer, Command::Append { event }) {
        Outcome::Appended { seq } => seq,
        other => panic!("{other:?}"),
    };
    append(Event::SnapshotPublished {
        snapshot: snapshot_json(s),
    });
    let head = store.head().unwrap();
    let cp = Checkpoint {
        origin: origin_for(manager.public_key()),
        size: head.seq,
        root: head.hash,
        time_unix_ms: Some(now_ms() - age_ms),
        snapshot: Some(SnapshotRef::of(&s.record)),
    };
    append(Event::Checkpoint {
        size: head.seq,
        head: hex::encode(head.hash),
        note: manager.sign_checkpoint(&cp),
    });
    head.seq
}

/// The log a registry with the race wrote (see the module documentation).
fn write_lossy_log(store: &Arc<Store>, manager: &Arc<Manager>) -> Lossy {
    let (writer, thread) =
        Writer::start(store.clone(), manager.clone(), Default::default()).unwrap();
    let names = ["alice", "bob", "carol", "dave"].map(String::from).to_vec();
    let Outcome::Joined { ids, .. } = submit(&writer, Command::Join { usernames: names }) else {
        panic!("not joined")
    };
    for id in &ids {
        submit(
            &writer,
            Command::Issue {
                id: *id,
                count: 2,
                wots_pk_digests: vec![],
            },
        );
    }
    let fingerprint = manager.public_key().fingerprint();
    let (dave_seq, dave) = revoke(&writer, ids[3]);
    let mut set = RevocationSet::from_zetas(dave.iter().copied());
    let s1 = manager.sign_snapshot(&SnapshotRecord::genesis(
        fingerprint,
        dave_seq,
        set.len(),
        set.root(),
        1,
    ));
    let honest = publish(store, &writer, manager, &s1, 4_000);

    let (bob_seq, bob) = revoke(&writer, ids[1]);
    let (_, alice) = revoke(&writer, ids[0]); // committed while snapshot 2 is signed
    set.insert(&bob);
    let s2 = manager.sign_snapshot(&s1.record.next(bob_seq, set.len(), set.root(), 2));
    publish(store, &writer, manager, &s2, 3_000);

    let (carol_seq, carol) = revoke(&writer, ids[2]);
    set.insert(&carol);
    let s3 = manager.sign_snapshot(&s2.record.next(carol_seq, set.len(), set.root(), 3));
    publish(store, &writer, manager, &s3, 2_000);
    drop(writer);
    thread.join().unwrap();

    let entries = support::public_log(store);
    let revoked = [&alice, &bob, &carol, &dave]
        .into_iter()
        .flatten()
        .copied()
        .collect();
    Lossy {
        entries,
        alice,
        revoked,
        honest,
    }
}

/// A registry started on the lossy log, once it has repaired it: snapshot 4 is logged and
/// its newest note names it. Returns the size of that note.
async fn lossy_registry() -> (Registry, Lossy, u64) {
    let (reg, lossy) = support::registry_on_log(
        ParamSet::Sha2_128f,
        Some(Duration::from_secs(1)),
        write_lossy_log,
    )
    .await;
    let size = wait_for("the registry to repair the log", || async {
        let entries = reg.store.entries_after(0, 1_000_000).unwrap();
        let s4 = entries.iter().find(|e| {
            e.kind == "snapshot_published" && e.public["snapshot"]["record"]["number"] == 4
        })?;
        let r = reg
            .client
            .get(format!("{}/v1/checkpoint", reg.url))
            .send()
            .await
            .ok()?;
        let note: Value = r.json().await.ok()?;
        note["size"].as_u64().filter(|size| *size >= s4.seq)
    })
    .await;
    (reg, lossy, size)
}

/// Whether the gateway answers `zeta` revoked.
async fn revoked(gw: &Gateway, zeta: &Zeta) -> bool {
    let (status, proof) = gw
        .get(&format!(
            "/v1/revocations/{}/proof",
            hex::encode(zeta.as_bytes())
        ))
        .await;
    assert_eq!(status, 200, "{proof}");
    proof["revoked"].as_bool().unwrap()
}

/// How many faults of `kind` the gateway has counted.
async fn faults(gw: &Gateway, kind: &str) -> f64 {
    let text = gw.metrics().await;
    metric(
        &text,
        &format!("dgsp_gateway_feed_faults_total{{kind=\"{kind}\"}}"),
    )
    .unwrap_or(0.0)
}

/// Waits until the gateway is ready with no fault in force at entry `size` or later, and
/// returns its `/readyz`.
async fn resumed(gw: &Gateway, size: u64) -> Value {
    wait_for(
        &format!("the gateway to resume at entry {size}"),
        || async {
            let (status, r) = gw.get("/readyz").await;
            (status == 200
                && r["status"] == "ok"
                && r["applied_seq"].as_u64().is_some_and(|s| s >= size))
            .then_some(r)
        },
    )
    .await
}

/// The refused checkpoints stay visible once the gateway has resumed: counted by kind, and
/// the last one in `/readyz`.
async fn assert_reported(gw: &Gateway, r: &Value) {
    assert!(r.get("fault").is_none(), "{r}");
    let last = &r["last_integrity_fault"];
    assert!(
        last["kind"] == "bad_checkpoint" || last["kind"] == "snapshot_mismatch",
        "{r}"
    );
    assert!(last["since_unix_ms"].as_u64().is_some(), "{r}");
    assert!(faults(gw, "bad_checkpoint").await >= 1.0);
    assert!(faults(gw, "snapshot_mismatch").await >= 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_following_a_repaired_registry_refuses_the_bad_checkpoints_and_applies_the_repair(
) {
    let (reg, lossy, size) = lossy_registry().await;
    let gw = reg.follower(|_| {}).await;
    let r = resumed(&gw, size).await;
    assert_reported(&gw, &r).await;
    // The corrected snapshot is in service and holds every revocation.
    assert_eq!(r["snapshot"]["number"], 4, "{r}");
    assert_eq!(r["snapshot"]["count"], lossy.revoked.len() as u64, "{r}");
    for z in &lossy.revoked {
        assert!(revoked(&gw, z).await, "{}", hex::encode(z.as_bytes()));
    }
    gw.shutdown().await;
    reg.shutdown().await;
}

/// The note a `checkpoint` entry carries, as a registry serves it at `/v1/checkpoint`.
fn served(log: &Log, e: &Entry) -> Note {
    let note = e.public["note"].as_str().unwrap().to_owned();
    let cp = log.manager.public_key().verify_checkpoint(&note).unwrap();
    Note {
        size: cp.size,
        head: hex::encode(cp.root),
        time_unix_ms: cp.time_unix_ms.unwrap(),
        note,
        witnessed: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_that_refused_checkpoints_keeps_the_fault_and_resumes_when_a_later_one_holds() {
    let (reg, lossy, _) = lossy_registry().await;
    let repaired = reg.public_log();
    let manager = reg.manager.clone();
    reg.shutdown().await;

    // The registry with the race: its log ends with the checkpoint naming snapshot 3, and so
    // does its newest note.
    let log = Log {
        entries: lossy.entries.clone(),
        manager: manager.clone(),
    };
    let mock = MockRegistry::start(log.entries.clone()).await;
    mock.note(Some(served(&log, log.entries.last().unwrap())));
    let dir = tempfile::tempdir().unwrap();
    let config = gateway_config(
        &mock.url,
        Anchor::Key(Box::new(manager.public_key().clone())),
        dir.path(),
    );
    let gw = gateway(config).await;

    // It applies the honest checkpoint, refuses the others, and serves the honest state,
    // degraded, with the refusal in force.
    let r = wait_for(
        "the gateway to refuse the checkpoint naming snapshot 3",
        || async {
            let (status, r) = gw.get("/readyz").await;
            (status == 200 && r["fault"]["kind"] == "snapshot_mismatch").then_some(r)
        },
    )
    .await;
    assert_eq!(r["status"], "degraded", "{r}");
    assert_eq!(r["applied_seq"].as_u64(), Some(lossy.honest), "{r}");
    assert_eq!(r["snapshot"]["number"], 1, "{r}");
    assert_eq!(
        r["last_integrity_fault"]["kind"], "snapshot_mismatch",
        "{r}"
    );
    assert_eq!(faults(&gw, "bad_checkpoint").await, 1.0);
    // Refused once, not at every poll: the entries stay pending, the note is not tried again.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(faults(&gw, "bad_checkpoint").await, 1.0);
    assert_eq!(faults(&gw, "snapshot_mismatch").await, 1.0);
    let (_, r) = gw.get("/readyz").await;
    assert_eq!(r["fault"]["kind"], "snapshot_mismatch", "{r}");
    assert!(!revoked(&gw, &lossy.alice[0]).await);

    // A passing fault (the feed failing for a moment) makes the follower read on from its
    // applied position and meet both refused checkpoints again: neither is counted again.
    mock.feed_status(Some(500));
    wait_for("the feed's passing fault", || async {
        (faults(&gw, "http_status").await >= 1.0).then_some(())
    })
    .await;
    mock.feed_status(None);
    wait_for("the refusal in force again", || async {
        let (_, r) = gw.get("/readyz").await;
        (r["fault"]["kind"] == "snapshot_mismatch").then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(faults(&gw, "bad_checkpoint").await, 1.0);
    assert_eq!(faults(&gw, "snapshot_mismatch").await, 1.0);

    // The registry repairs the log (a corrected snapshot and a checkpoint naming it): the
    // gateway resumes, the refusals stay reported.
    let full = Log {
        entries: repaired,
        manager,
    };
    let size = full.entries.len() as u64;
    mock.serve(full.entries.clone());
    mock.note(Some(full.note(size, now_ms())));
    let r = resumed(&gw, size).await;
    assert_reported(&gw, &r).await;
    assert_eq!(faults(&gw, "bad_checkpoint").await, 1.0);
    assert_eq!(r["snapshot"]["number"], 4, "{r}");
    for z in &lossy.revoked {
        assert!(revoked(&gw, z).await, "{}", hex::encode(z.as_bytes()));
    }
    gw.shutdown().await;
}
