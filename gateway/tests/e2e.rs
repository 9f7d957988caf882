//! End to end on loopback: one registry, two gateways (one pinned by key, one by
//! fingerprint). Signatures verify on both; after a revocation both answer `revoked` with an
//! inclusion proof that verifies offline; another member's fresh signature gets a
//! non-membership proof that verifies offline; judge agrees with the manager's opening; a
//! restarted gateway resumes from its replica.

use crate::support;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::revocation::{verify_revocation, Membership, RevocationProof};
use dgsp_core::{ManagerPublicKey, Zeta};
use dgsp_gateway::anchor::Anchor;
use dgsp_registry::publisher::snapshot_from_json;
use serde_json::{json, Value};
use support::{gateway, gateway_config, registry, Gateway};

/// Checks an answer's revocation proof offline: fetch the signed snapshot it names, check
/// the manager's signature on it and the proof against its root. Returns what it proves.
async fn offline(gw: &Gateway, group: &ManagerPublicKey, answer: &Value) -> Membership {
    let rev = &answer["revocation"];
    let n = rev["snapshot"]["number"]
        .as_u64()
        .expect("a snapshot number");
    let (status, snap) = gw.get(&format!("/v1/revocations/snapshots/{n}")).await;
    assert_eq!(status, 200);
    let snap = snapshot_from_json(&snap).expect("a signed snapshot");
    assert_eq!(B64.encode(snap.record.root), rev["snapshot"]["root"]);
    assert_eq!(snap.record.count, rev["snapshot"]["count"]);
    let zeta = Zeta::from_slice(&B64.decode(answer["zeta"].as_str().unwrap()).unwrap()).unwrap();
    let proof = RevocationProof::from_bytes(
        &B64.decode(rev["proof"]["encoded"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    let shown = verify_revocation(group, &snap, &zeta, &proof).expect("the proof verifies offline");
    // The signed checkpoint in the answer names exactly this snapshot.
    let note = answer["freshness"]["checkpoint"]["note"]
        .as_str()
        .expect("a checkpoint note");
    let cp = group
        .verify_checkpoint(note)
        .expect("the note verifies offline");
    assert!(cp.snapshot.expect("a snapshot").names(&snap.record));
    assert_eq!(
        answer["freshness"]["checkpoint"]["time_unix_ms"],
        cp.time_unix_ms.unwrap()
    );
    let kind = rev["proof"]["kind"].as_str().unwrap();
    assert_eq!(
        kind,
        match shown {
            Membership::Revoked => "inclusion",
            Membership::NotRevoked => "non_membership",
        }
    );
    shown
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_follow_one_registry_through_a_revocation_and_a_restart() {
    let reg = registry().await;
    let group = reg.manager.public_key().clone();
    let mut alice = reg.member("alice", 3).await;
    let mut bob = reg.member("bob", 4).await;

    let dir1 = tempfile::tempdir().unwrap();
    let dir2 = tempfile::tempdir().unwrap();
    let by_key = Anchor::Key(Box::new(group.clone()));
    let by_fingerprint = Anchor::from_fingerprint_hex(&hex::encode(group.fingerprint())).unwrap();
    let g1 = gateway(gateway_config(&reg.url, by_key.clone(), dir1.path())).await;
    let g2 = gateway(gateway_config(&reg.url, by_fingerprint, dir2.path())).await;

    let settled = reg.settled().await;
    g1.reach(settled).await;
    g2.reach(settled).await;

    // Alice's signature is valid on both, with a non-membership proof.
    let sig_a = alice.sign(b"order 1");
    for gw in [&g1, &g2] {
        let a = gw.verify(b"order 1", &sig_a).await;
        assert_eq!(
            (a["valid"].as_bool(), a["status"].as_str()),
            (Some(true), Some("ok")),
            "{a}"
        );
        assert_eq!(a["params"], "sha2-128f");
        assert_eq!(a["freshness"]["stale"], false);
        assert_eq!(offline(gw, &group, &a).await, Membership::NotRevoked);
        // The wrong message is an invalid signature.
        let bad = gw.verify(b"order 2", &sig_a).await;
        assert_eq!(
            (bad["valid"].as_bool(), bad["status"].as_str()),
            (Some(false), Some("invalid_signature"))
        );
    }

    // The manager opens it and judge agrees, on both gateways; a wrong id does not pass.
    let (id, pi) = reg.open(b"order 1", &sig_a).await;
    assert_eq!(id, alice.id);
    for gw in [&g1, &g2] {
        let body = json!({"message": B64.encode(b"order 1"), "signature": B64.encode(sig_a.to_bytes()), "id": id, "pi": pi});
        let (status, j) = gw.post("/v1/judge", &body).await;
        assert_eq!(status, 200);
        assert_eq!(j["correct"], true, "{j}");
        let body = json!({"message": B64.encode(b"order 1"), "signature": B64.encode(sig_a.to_bytes()), "id": bob.id, "pi": pi});
        let (_, j) = gw.post("/v1/judge", &body).await;
        assert_eq!(
            (j["correct"].as_bool(), j["opening_matches"].as_bool()),
            (Some(false), Some(false))
        );
    }

    // Revoke alice: both gateways answer revoked with an inclusion proof, for the old
    // signature and for one made with a certificate she never used.
    reg.revoke(alice.id).await;
    let settled = reg.settled().await;
    g1.reach(settled).await;
    g2.reach(settled).await;
    let sig_a2 = alice.sign(b"order 3");
    for gw in [&g1, &g2] {
        for (msg, sig) in [(&b"order 1"[..], &sig_a), (&b"order 3"[..], &sig_a2)] {
            let a = gw.verify(msg, sig).await;
            assert_eq!(
                (a["valid"].as_bool(), a["status"].as_str()),
                (Some(false), Some("revoked")),
                "{a}"
            );
            assert_eq!(offline(gw, &group, &a).await, Membership::Revoked);
        }
        // Bob's fresh signature is still good, with a non-membership proof.
        let sig_b = bob.sign(b"order 4");
        let a = gw.verify(b"order 4", &sig_b).await;
        assert_eq!(a["status"], "ok", "{a}");
        assert_eq!(a["revocation"]["snapshot"]["count"], 3);
        assert_eq!(offline(gw, &group, &a).await, Membership::NotRevoked);
        // The proof endpoint agrees.
        let (_, p) = gw
            .get(&format!(
                "/v1/revocations/{}/proof",
                hex::encode(sig_a.zeta().as_bytes())
            ))
            .await;
        assert_eq!(p["revoked"], true);
        assert_eq!(p["proof"]["kind"], "inclusion");
    }

    // A batch mixes every outcome, in order.
    let sig_b = bob.sign(b"batch");
    let items = json!({"items": [
        {"message": B64.encode(b"batch"), "signature": B64.encode(sig_b.to_bytes())},
        {"message": B64.encode(b"order 1"), "signature": B64.encode(sig_a.to_bytes())},
        {"message": B64.encode(b"other"), "signature": B64.encode(sig_b.to_bytes())},
        {"message": B64.encode(b"x"), "signature": B64.encode(b"not a signature")},
    ]});
    let (status, batch) = g1.post("/v1/verify/batch", &items).await;
    assert_eq!(status, 200, "{batch}");
    assert_eq!(
        support::statuses(&batch),
        ["ok", "revoked", "invalid_signature", "malformed"]
    );
    assert_eq!(
        (batch["ok"].as_u64(), batch["not_ok"].as_u64()),
        (Some(1), Some(3))
    );

    // Restart g1 on the same replica while the registry moves on: it resumes, catches up,
    // and serves the same snapshot history.
    let (_, before) = g1.get("/v1/revocations/snapshot").await;
    g1.shutdown().await;
    let carol = reg.member("carol", 1).await;
    reg.revoke(carol.id).await;
    let settled = reg.settled().await;
    let g1 = gateway(gateway_config(&reg.url, by_key, dir1.path())).await;
    let n_before = before["record"]["number"].as_u64().unwrap();
    let (status, old) = g1
        .get(&format!("/v1/revocations/snapshots/{n_before}"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(old, before, "the replica kept the snapshot it had");
    g1.reach(settled).await;
    let (_, ready) = g1.get("/readyz").await;
    assert_eq!(ready["status"], "ok", "{ready}");
    assert_eq!(ready["snapshot"]["count"], 4);
    assert_eq!(ready["lag_entries"], 0, "{ready}");
    let a = g1.verify(b"order 1", &sig_a).await;
    assert_eq!(a["status"], "revoked");
    assert_eq!(offline(&g1, &group, &a).await, Membership::Revoked);

    // A replica pinned to this group refuses another anchor.
    g1.shutdown().await;
    let other = dgsp_core::Manager::generate(dgsp_core::ParamSet::Sha2_128f, &mut rand_core::OsRng);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let wrong = gateway_config(
        &reg.url,
        Anchor::Key(Box::new(other.public_key().clone())),
        dir1.path(),
    );
    let err = dgsp_gateway::server::start(wrong, listener)
        .await
        .err()
        .expect("refused");
    assert!(err.to_string().contains("pinned to group"), "{err}");

    g2.shutdown().await;
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_pinned_to_another_group_applies_nothing() {
    let reg = registry().await;
    reg.settled().await;
    let other = dgsp_core::Manager::generate(dgsp_core::ParamSet::Sha2_128f, &mut rand_core::OsRng);
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(gateway_config(
        &reg.url,
        Anchor::Key(Box::new(other.public_key().clone())),
        dir.path(),
    ))
    .await;
    let (status, ready) = support::wait_for("a wrong_group fault", || async {
        let (s, r) = gw.get("/readyz").await;
        (r["fault"]["kind"] == "wrong_group").then_some((s, r))
    })
    .await;
    assert_eq!(status, 503, "{ready}");
    assert_eq!(ready["applied_seq"], 0);
    assert_eq!(ready["status"], "no_snapshot");
    // Fingerprint pinning refuses at start.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let cfg = gateway_config(
        &reg.url,
        Anchor::from_fingerprint_hex(&hex::encode(other.public_key().fingerprint())).unwrap(),
        tempfile::tempdir().unwrap().path(),
    );
    let err = dgsp_gateway::server::start(cfg, listener)
        .await
        .err()
        .expect("refused");
    assert!(
        err.to_string().contains("not the pinned fingerprint"),
        "{err}"
    );
    gw.shutdown().await;
    reg.shutdown().await;
}

/// A FIPS 205 group (spec section 7) end to end: the registry reports its standard, the
/// gateway follows its SLH-DSA-signed checkpoints and snapshots, verifies, proves offline and
/// answers `revoked` after a revocation; a signature of the round 3.1 twin set (same sizes)
/// is `wrong_group`, naming the family mismatch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fips205_group_end_to_end() {
    let params = dgsp_core::ParamSet::SlhDsaSha2_128f;
    let reg = support::registry_with(params).await;
    let group = reg.manager.public_key().clone();
    let info: Value = reg
        .client
        .get(format!("{}/v1/group", reg.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (info["params"].as_str(), info["standard"].as_str()),
        (Some("slh-dsa-sha2-128f"), Some("fips205"))
    );
    let mut alice = reg.member("alice", 2).await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(gateway_config(
        &reg.url,
        Anchor::Key(Box::new(group.clone())),
        dir.path(),
    ))
    .await;
    gw.reach(reg.settled().await).await;

    let sig = alice.sign(b"order 1");
    let a = gw.verify(b"order 1", &sig).await;
    assert_eq!(
        (a["status"].as_str(), a["params"].as_str()),
        (Some("ok"), Some("slh-dsa-sha2-128f")),
        "{a}"
    );
    assert_eq!(offline(&gw, &group, &a).await, Membership::NotRevoked);

    // The round 3.1 twin: same lengths, another family.
    let twin = support::registry_with(params.twin()).await;
    let mut mallory = twin.member("mallory", 1).await;
    let foreign = mallory.sign(b"order 1");
    let w = gw.verify(b"order 1", &foreign).await;
    assert_eq!(
        (w["status"].as_str(), w["params"].as_str()),
        (Some("wrong_group"), Some("sha2-128f")),
        "{w}"
    );
    let detail = w["detail"].as_str().unwrap();
    assert!(
        detail.contains("family mismatch") && detail.contains("FIPS 205"),
        "{detail}"
    );

    reg.revoke(alice.id).await;
    gw.reach(reg.settled().await).await;
    let r = gw.verify(b"order 1", &sig).await;
    assert_eq!(r["status"], "revoked", "{r}");
    assert_eq!(offline(&gw, &group, &r).await, Membership::Revoked);

    gw.shutdown().await;
    twin.shutdown().await;
    reg.shutdown().await;
}
