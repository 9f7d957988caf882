//! A misbehaving registry, played by wiremock over a real, honestly signed log: the gateway
//! must apply none of the bad data, keep serving its last verified state, report the fault
//! in `/readyz` and `/metrics`, and pick up again once the feed is honest.
//!
//! The honest log comes from a real registry, grown in stages that each end with a signed
//! checkpoint. The mock serves a prefix of it (one stage further than the gateway has
//! applied), honestly or not: HTTP 500s, answers slower than the gateway's timeout, truncated
//! pages, an edited entry that no longer chains, a snapshot with a bad signature, a properly
//! signed snapshot that drops a revoked zeta, a rewritten history (fork), forged checkpoints
//! and a shortened log (rollback). Every tampered log that should chain is re-hashed and its
//! checkpoints re-signed by the group manager, so only the intended defect is left.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::checkpoint::{origin_for, Checkpoint, SnapshotRef};
use dgsp_core::revocation::{RevocationSet, SignedSnapshot};
use dgsp_core::{Manager, Signature, Zeta};
use dgsp_gateway::anchor::Anchor;
use dgsp_registry::api::public::Entries;
use dgsp_registry::publisher::{snapshot_from_json, snapshot_json};
use dgsp_wire::log::{unhex32, Entry, GENESIS_PREV};
use serde_json::{json, Value};
use support::{gateway, gateway_config, wait_for, Gateway};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The gateway's per-request timeout in this test, and how long a slow answer takes.
const TIMEOUT: Duration = Duration::from_millis(500);
const SLOW: Duration = Duration::from_secs(2);

/// How the mock registry answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// The page, as JSON.
    Honest,
    /// HTTP 500.
    Error,
    /// The page, after longer than the gateway waits.
    Slow,
    /// The first half of the page's JSON.
    Truncated,
    /// The page, claiming a head 100 entries past the last entry it serves.
    AheadHead,
}

struct FeedState {
    entries: Vec<Entry>,
    mode: Mode,
    /// Requests answered.
    requests: u64,
}

/// The mock registry's feed: what it serves now, and how.
#[derive(Clone)]
struct Feed(Arc<Mutex<FeedState>>);

impl Feed {
    fn new(entries: Vec<Entry>) -> Self {
        Feed(Arc::new(Mutex::new(FeedState {
            entries,
            mode: Mode::Honest,
            requests: 0,
        })))
    }

    /// Serves `entries` from now on, in `mode` (both change at once).
    fn serve(&self, entries: Vec<Entry>, mode: Mode) {
        let mut state = self.0.lock().unwrap();
        state.entries = entries;
        state.mode = mode;
    }

    /// Requests answered so far.
    fn requests(&self) -> u64 {
        self.0.lock().unwrap().requests
    }
}

impl Respond for Feed {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.0.lock().unwrap();
        state.requests += 1;
        let param = |name: &str| {
            request
                .url
                .query_pairs()
                .find(|(k, _)| k == name)
                .and_then(|(_, v)| v.parse::<u64>().ok())
        };
        let after = param("after").unwrap_or(0);
        let limit = param("limit").unwrap_or(100) as usize;
        if state.mode == Mode::Error {
            return ResponseTemplate::new(500).set_body_string("internal error");
        }
        let page = Entries {
            entries: state
                .entries
                .iter()
                .filter(|e| e.seq > after)
                .take(limit)
                .cloned()
                .collect(),
            head_seq: state.entries.last().map_or(0, |e| e.seq)
                + if state.mode == Mode::AheadHead {
                    100
                } else {
                    0
                },
        };
        let mut body = serde_json::to_vec(&page).unwrap();
        if state.mode == Mode::Truncated {
            body.truncate(body.len() / 2);
        }
        let r = ResponseTemplate::new(200).set_body_raw(body, "application/json");
        if state.mode == Mode::Slow {
            r.set_delay(SLOW)
        } else {
            r
        }
    }
}

/// Re-links entries from index `from` on (each `prev_hash` and `hash` recomputed) and, with
/// a `signer`, rewrites every checkpoint from there with a note it signs for `origin` over
/// the new head. Entries must be the whole log from seq 1 (index = seq - 1).
fn rechain(entries: &mut [Entry], from: usize, signer: Option<&Manager>, origin: &str) {
    let mut prev = match from {
        0 => GENESIS_PREV,
        i => unhex32(&entries[i - 1].hash).unwrap(),
    };
    for i in from..entries.len() {
        assert_eq!(entries[i].seq, i as u64 + 1);
        if let (Some(m), "checkpoint") = (signer, entries[i].kind.as_str()) {
            let size = entries[i].public["size"].as_u64().unwrap();
            let head = unhex32(&entries[size as usize - 1].hash).unwrap();
            let snapshot = entries[..size as usize]
                .iter()
                .rfind(|e| e.kind == "snapshot_published")
                .map(|e| SnapshotRef::of(&snapshot_of(e).record));
            let note = m.sign_checkpoint(&Checkpoint {
                origin: origin.to_owned(),
                size,
                root: head,
                time_unix_ms: Some(dgsp_wire::log::now_ms()),
                snapshot,
            });
            entries[i].public = json!({"size": size, "head": hex::encode(head), "note": note});
        }
        let hash = entries[i].compute_hash(&prev);
        entries[i].prev_hash = hex::encode(prev);
        entries[i].hash = hex::encode(hash);
        prev = hash;
    }
}

/// The signed snapshot an entry carries.
fn snapshot_of(e: &Entry) -> SignedSnapshot {
    assert_eq!(e.kind, "snapshot_published");
    snapshot_from_json(&e.public["snapshot"]).unwrap()
}

/// Index of the first entry of `kind` in `entries[from..]`.
fn first_of(entries: &[Entry], from: usize, kind: &str) -> usize {
    from + entries[from..]
        .iter()
        .position(|e| e.kind == kind)
        .unwrap_or_else(|| panic!("no {kind} entry after index {from}"))
}

fn zeta_hex(sig: &Signature) -> String {
    hex::encode(sig.zeta().as_bytes())
}

async fn readyz(gw: &Gateway) -> (u16, Value) {
    gw.get("/readyz").await
}

async fn metrics(gw: &Gateway) -> String {
    let r = gw
        .client
        .get(format!("{}/metrics", gw.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.text().await.unwrap()
}

/// A metric's value (the line `name value`), 0 if absent.
fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .map_or(0, |v| v.trim().parse().unwrap())
}

fn faults_total(text: &str, kind: &str) -> u64 {
    metric(
        text,
        &format!("dgsp_gateway_feed_faults_total{{kind=\"{kind}\"}}"),
    )
}

/// What the gateway serves: applied seq, snapshot number and count.
async fn served(gw: &Gateway) -> (u64, u64, u64) {
    let (_, r) = readyz(gw).await;
    (
        r["applied_seq"].as_u64().unwrap(),
        r["snapshot"]["number"].as_u64().unwrap_or(0),
        r["snapshot"]["count"].as_u64().unwrap_or(0),
    )
}

/// Revocation status of a member's signature as the gateway answers it.
async fn status_of(gw: &Gateway, msg: &[u8], sig: &Signature) -> String {
    gw.verify(msg, sig).await["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Waits until the gateway has refused the feed with a `kind` fault three more times; checks that it is degraded (still ready), that metrics flag it, and that the
/// state served is `before`. Returns the `/readyz` fault.
async fn refused(gw: &Gateway, kind: &str, before: (u64, u64, u64)) -> Value {
    let seen = faults_total(&metrics(gw).await, kind);
    refused_until(gw, kind, before, seen + 3).await
}

/// As [`refused`], once `kind` faults number `total`.
async fn refused_until(gw: &Gateway, kind: &str, before: (u64, u64, u64), total: u64) -> Value {
    wait_for(&format!("{total} {kind} faults"), || async {
        let m = metrics(gw).await;
        (faults_total(&m, kind) >= total).then_some(())
    })
    .await;
    // (Tolerates a stray timeout on a loaded machine: the feed is bad on every poll.)
    let (status, r) = wait_for(&format!("{kind} in /readyz"), || async {
        let (status, r) = readyz(gw).await;
        (r["fault"]["kind"] == kind).then_some((status, r))
    })
    .await;
    assert_eq!(
        status, 200,
        "a feed fault alone keeps the gateway ready: {r}"
    );
    assert_eq!(r["status"], "degraded", "{r}");
    assert!(r["fault"]["detail"].as_str().is_some_and(|d| !d.is_empty()));
    let m = metrics(gw).await;
    assert_eq!(metric(&m, "dgsp_gateway_feed_fault"), 1, "{m}");
    assert_eq!(metric(&m, "dgsp_gateway_ready"), 1);
    assert_eq!(
        served(gw).await,
        before,
        "the gateway applied something from a refused feed ({kind})"
    );
    r["fault"].clone()
}

/// Waits until the gateway has applied exactly `seq` with no fault in force.
async fn recovered(gw: &Gateway, seq: u64) -> (u64, u64, u64) {
    let r = wait_for(&format!("recovery at entry {seq}"), || async {
        let (status, r) = readyz(gw).await;
        (status == 200 && r["status"] == "ok" && r["applied_seq"] == seq).then_some(r)
    })
    .await;
    assert!(r.get("fault").is_none(), "{r}");
    let m = metrics(gw).await;
    assert_eq!(metric(&m, "dgsp_gateway_feed_fault"), 0, "{m}");
    served(gw).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_misbehaving_registry_is_refused_and_the_last_verified_state_served() {
    // An honest log, grown in stages; `cut[k]` is the prefix that ends with the checkpoint
    // covering stage k, `size[k]` the entry that checkpoint covers.
    let reg = support::registry().await;
    let manager = reg.manager.clone();
    let group = manager.public_key().clone();
    let origin = origin_for(&group);
    let mut alice = reg.member("alice", 2).await;
    let mut bob = reg.member("bob", 2).await;
    let mut carol = reg.member("carol", 2).await;
    let mut dave = reg.member("dave", 2).await;
    let mut erin = reg.member("erin", 2).await;
    let mut sizes = vec![reg.settled().await]; // 0: members, snapshot 1 (empty)
    reg.revoke(alice.id).await;
    sizes.push(reg.settled().await); // 1: alice revoked
    reg.member("grace", 1).await;
    sizes.push(reg.settled().await); // 2: a join
    reg.member("heidi", 1).await;
    sizes.push(reg.settled().await); // 3: a join
    reg.revoke(bob.id).await;
    sizes.push(reg.settled().await); // 4: bob revoked
    reg.revoke(carol.id).await;
    sizes.push(reg.settled().await); // 5: carol revoked
    reg.revoke(dave.id).await;
    sizes.push(reg.settled().await); // 6: dave revoked
    reg.member("ivan", 1).await;
    sizes.push(reg.settled().await); // 7: a join
    reg.revoke(erin.id).await;
    sizes.push(reg.settled().await); // 8: erin revoked
    let log = reg.public_log();
    reg.shutdown().await;
    let cut: Vec<usize> = sizes
        .iter()
        .map(|s| {
            log.iter()
                .position(|e| e.kind == "checkpoint" && e.public["size"] == *s)
                .unwrap()
                + 1
        })
        .collect();
    let stage = |k: usize| log[..cut[k]].to_vec();
    let (sig_a, sig_b, sig_c, sig_d, sig_e) = (
        alice.sign(b"a"),
        bob.sign(b"b"),
        carol.sign(b"c"),
        dave.sign(b"d"),
        erin.sign(b"e"),
    );

    // The mock registry, honest at stage 0; a gateway pinned to the group's key.
    let server = MockServer::start().await;
    let feed = Feed::new(stage(0));
    Mock::given(method("GET"))
        .and(path("/v1/log/entries"))
        .respond_with(feed.clone())
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = gateway_config(
        &server.uri(),
        Anchor::Key(Box::new(group.clone())),
        dir.path(),
    );
    config.follow.timeout = TIMEOUT;
    // The log was signed before the test began and the mock signs nothing new: freshness is
    // not what this test is about.
    config.api.max_staleness = Duration::from_secs(3600);
    let gw = gateway(config).await;
    let mut state = recovered(&gw, sizes[0]).await;
    assert_eq!((state.1, state.2), (1, 0), "snapshot 1, empty");
    assert_eq!(status_of(&gw, b"a", &sig_a).await, "ok");

    // 1. HTTP 500s, then honest again with alice's revocation.
    feed.serve(stage(1), Mode::Error);
    let f = refused(&gw, "http_status", state).await;
    assert!(f["detail"].as_str().unwrap().contains("500"), "{f}");
    assert_eq!(status_of(&gw, b"a", &sig_a).await, "ok");
    feed.serve(stage(1), Mode::Honest);
    state = recovered(&gw, sizes[1]).await;
    assert_eq!((state.1, state.2), (2, 2));
    assert_eq!(status_of(&gw, b"a", &sig_a).await, "revoked");

    // 2. Answers slower than the timeout.
    feed.serve(stage(2), Mode::Slow);
    refused(&gw, "unreachable", state).await;
    feed.serve(stage(2), Mode::Honest);
    state = recovered(&gw, sizes[2]).await;

    // 3. Truncated pages.
    feed.serve(stage(3), Mode::Truncated);
    refused(&gw, "malformed_page", state).await;
    feed.serve(stage(3), Mode::Honest);
    state = recovered(&gw, sizes[3]).await;

    // 4. Bob's revocation edited (one zeta hidden) without resealing: the chain breaks there
    //    and nothing from it on is applied.
    let mut bad = stage(4);
    let i = first_of(&bad, cut[3], "member_revoked");
    bad[i].public["zetas"].as_array_mut().unwrap().pop();
    feed.serve(bad.clone(), Mode::Honest);
    let f = refused(&gw, "chain", state).await;
    assert_eq!(f["seq"], bad[i].seq, "{f}");
    assert_eq!(status_of(&gw, b"b", &sig_b).await, "ok");
    feed.serve(stage(4), Mode::Honest);
    state = recovered(&gw, sizes[4]).await;
    assert_eq!((state.1, state.2), (3, 4));
    assert_eq!(status_of(&gw, b"b", &sig_b).await, "revoked");

    // 5. Carol's snapshot with a bad signature, in a log that chains and whose checkpoint
    //    the manager signed.
    let mut bad = stage(5);
    let i = first_of(&bad, cut[4], "snapshot_published");
    let mut snap = snapshot_of(&bad[i]);
    snap.signature[100] ^= 1;
    assert!(snap.verify(&group).is_err());
    bad[i].public["snapshot"] = snapshot_json(&snap);
    rechain(&mut bad, i, Some(&manager), &origin);
    feed.serve(bad.clone(), Mode::Honest);
    let f = refused(&gw, "bad_snapshot", state).await;
    assert_eq!(f["seq"], bad[i].seq, "{f}");
    assert_eq!(status_of(&gw, b"c", &sig_c).await, "ok");
    feed.serve(stage(5), Mode::Honest);
    state = recovered(&gw, sizes[5]).await;
    assert_eq!((state.1, state.2), (4, 6));
    assert_eq!(status_of(&gw, b"c", &sig_c).await, "revoked");

    // 6. Dave's snapshot, properly signed by the manager and succeeding the last one, but
    //    its root and count leave out alice's zeta (revoked and applied long ago).
    let mut bad = stage(6);
    let i = first_of(&bad, cut[5], "snapshot_published");
    let honest = snapshot_of(&bad[i]);
    let prev = snapshot_of(&bad[first_of(&bad, cut[4], "snapshot_published")]);
    let dropped = zeta_hex(&sig_a);
    let kept: Vec<Zeta> = bad
        .iter()
        .filter(|e| e.kind == "member_revoked" && e.seq <= honest.record.log_seq)
        .flat_map(|e| e.public["zetas"].as_array().unwrap().clone())
        .map(|z| z.as_str().unwrap().to_owned())
        .filter(|z| *z != dropped)
        .map(|z| Zeta::from_slice(&hex::decode(z).unwrap()).unwrap())
        .collect();
    let set = RevocationSet::from_zetas(kept);
    assert_eq!(set.len(), honest.record.count - 1);
    let forged = manager.sign_snapshot(&prev.record.next(
        honest.record.log_seq,
        set.len(),
        set.root(),
        honest.record.time_unix_ms,
    ));
    forged.verify(&group).unwrap();
    prev.record.check_successor(&forged.record).unwrap();
    bad[i].public["snapshot"] = snapshot_json(&forged);
    rechain(&mut bad, i, Some(&manager), &origin);
    let seen = faults_total(&metrics(&gw).await, "snapshot_mismatch");
    feed.serve(bad.clone(), Mode::Honest);
    // The checkpoint naming it is signed by the manager: refused once and not tried again
    // (the entries stay pending for a later checkpoint to cover consistently), the fault
    // in force until one does.
    let f = refused_until(&gw, "snapshot_mismatch", state, seen + 1).await;
    assert_eq!(f["seq"], bad[i].seq, "{f}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let m = metrics(&gw).await;
    assert_eq!(faults_total(&m, "snapshot_mismatch"), seen + 1, "{m}");
    let (_, ready) = readyz(&gw).await;
    assert_eq!(ready["snapshot"]["number"], 4, "{ready}");
    let a = gw.verify(b"a", &sig_a).await;
    assert_eq!(a["status"], "revoked", "{a}");
    assert_eq!(a["revocation"]["proof"]["kind"], "inclusion", "{a}");
    let (_, p) = gw.get(&format!("/v1/revocations/{dropped}/proof")).await;
    assert_eq!(p["revoked"], true, "{p}");
    assert_eq!(status_of(&gw, b"d", &sig_d).await, "ok");
    feed.serve(stage(6), Mode::Honest);
    state = recovered(&gw, sizes[6]).await;
    assert_eq!((state.1, state.2), (5, 8));
    assert_eq!(status_of(&gw, b"d", &sig_d).await, "revoked");

    // 7. A fork: the registry rewrites dave's (applied) revocation to hide a zeta, re-links
    //    everything after it and has the manager re-sign the checkpoints; the log also grows.
    let mut bad = stage(7);
    let i = first_of(&bad, cut[5], "member_revoked");
    assert!(bad[i].seq <= sizes[6]);
    let hidden = zeta_hex(&sig_d);
    bad[i].public["zetas"]
        .as_array_mut()
        .unwrap()
        .retain(|z| *z != hidden);
    rechain(&mut bad, i, Some(&manager), &origin);
    feed.serve(bad, Mode::Honest);
    let f = refused(&gw, "fork", state).await;
    let at = f["seq"].as_u64().unwrap();
    assert!((sizes[6]..=sizes[6] + 1).contains(&at), "{f}");
    let (_, p) = gw.get(&format!("/v1/revocations/{hidden}/proof")).await;
    assert_eq!(p["revoked"], true, "{p}");
    assert_eq!(status_of(&gw, b"d", &sig_d).await, "revoked");
    feed.serve(stage(7), Mode::Honest);
    state = recovered(&gw, sizes[7]).await;

    // 8. Erin's range with a forged checkpoint: first a note signed by another manager key
    //    (for this group's origin), then the manager's note with a signature byte flipped.
    let other = Manager::generate(dgsp_core::ParamSet::Sha2_128f, &mut rand_core::OsRng);
    let mut bad = stage(8);
    let i = first_of(&bad, cut[7], "checkpoint");
    rechain(&mut bad, i, Some(&other), &origin);
    feed.serve(bad.clone(), Mode::Honest);
    let f = refused(&gw, "bad_checkpoint", state).await;
    assert_eq!(f["seq"], bad[i].seq, "{f}");
    assert!(
        f["detail"].as_str().unwrap().contains("no signature"),
        "{f}"
    );
    assert_eq!(status_of(&gw, b"e", &sig_e).await, "ok");

    let mut bad = stage(8);
    let note = bad[i].public["note"].as_str().unwrap().to_owned();
    let (body, line) = note.trim_end().rsplit_once(' ').unwrap();
    let mut blob = B64.decode(line).unwrap();
    blob[40] ^= 1;
    bad[i].public["note"] = json!(format!("{body} {}\n", B64.encode(blob)));
    assert!(group
        .verify_checkpoint(bad[i].public["note"].as_str().unwrap())
        .is_err());
    rechain(&mut bad, i, None, &origin);
    feed.serve(bad.clone(), Mode::Honest);
    wait_for("a bad checkpoint signature to be reported", || async {
        let (_, r) = readyz(&gw).await;
        r["fault"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("does not verify"))
            .then_some(())
    })
    .await;
    let f = refused(&gw, "bad_checkpoint", state).await;
    assert_eq!(f["seq"], bad[i].seq, "{f}");
    assert_eq!(status_of(&gw, b"e", &sig_e).await, "ok");
    feed.serve(stage(8), Mode::Honest);
    state = recovered(&gw, sizes[8]).await;
    assert_eq!((state.1, state.2), (6, 10));
    assert_eq!(status_of(&gw, b"e", &sig_e).await, "revoked");

    // 9. A rollback: the registry serves an older, shorter log.
    feed.serve(stage(7), Mode::Honest);
    refused(&gw, "rollback", state).await;
    feed.serve(stage(8), Mode::Honest);
    assert_eq!(recovered(&gw, sizes[8]).await, state);

    // Every kind was counted (a checkpoint refused for what it covers, once).
    let m = metrics(&gw).await;
    assert!(faults_total(&m, "snapshot_mismatch") >= 1, "{m}");
    for kind in [
        "http_status",
        "unreachable",
        "malformed_page",
        "chain",
        "bad_snapshot",
        "fork",
        "bad_checkpoint",
        "rollback",
    ] {
        assert!(faults_total(&m, kind) >= 3, "{kind}: {m}");
    }
    gw.shutdown().await;
}

/// A registry whose `head_seq` runs ahead of the entries it serves (lying, or a stale page
/// behind a newer head) must not make the gateway poll it flat out: it should be refused
/// like any other bad page, with backoff, and reported (`malformed_page`). Regression: the
/// follower used to treat such a page as "more to fetch" and poll again with no pause and
/// no fault (about 20 000 requests a second on loopback).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_the_feed_never_reaches_is_a_fault_not_a_busy_loop() {
    let reg = support::registry().await;
    let group = reg.manager.public_key().clone();
    let size = reg.settled().await;
    let log = reg.public_log();
    reg.shutdown().await;
    let server = MockServer::builder()
        .disable_request_recording()
        .start()
        .await;
    let feed = Feed::new(log.clone());
    Mock::given(method("GET"))
        .and(path("/v1/log/entries"))
        .respond_with(feed.clone())
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = gateway_config(&server.uri(), Anchor::Key(Box::new(group)), dir.path());
    config.api.max_staleness = Duration::from_secs(3600);
    let gw = gateway(config).await;
    let state = recovered(&gw, size).await;
    let before = feed.requests();
    feed.serve(log, Mode::AheadHead);
    // Fail without panicking while the gateway runs, so it still shuts down cleanly.
    let outcome = wait_for("a fault for the head the feed never reaches", || async {
        let (_, r) = readyz(&gw).await;
        let polls = feed.requests() - before;
        if polls >= 1000 {
            return Some(Err(format!(
                "{polls} polls without a pause or a fault: {r}"
            )));
        }
        r.get("fault").cloned().map(Ok)
    })
    .await;
    let after = served(&gw).await;
    gw.shutdown().await;
    outcome.unwrap();
    assert_eq!(after, state);
}
