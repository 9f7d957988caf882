//! The largest revocation the registry writes: a member at the certificate limit
//! (`MAX_CERTIFICATES_PER_MEMBER`, 2^20) is revoked in `member_revoked` parts of at most
//! 1800 zetas (each fits a tile bundle) that a gateway reads and applies; one certificate more is refused at issuance
//! with a typed problem, so no revocation can outgrow what followers read. The entry is
//! larger than the registry's 16 MiB page bound, so the registry serves it alone and the
//! gateway, whose pages start with the entry it already holds, must read it without that
//! overlap (before that fix it reported the registry as serving nothing, forever).

use crate::support;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::CsrItem;
use dgsp_gateway::follower::MAX_PAGE_BYTES;
use dgsp_registry::writer::{Command, Outcome, MAX_CERTIFICATES_PER_MEMBER};
use rand_core::OsRng;
use serde_json::json;
use support::registry;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_at_the_certificate_limit_is_revoked_in_one_entry_a_gateway_applies() {
    let reg = registry().await;
    let mut alice = reg.member("alice", 2).await;
    let bob = reg.member("bob", 1).await;
    let before = alice.sign(b"signed before the revocation");
    let gw = reg.follower(|_| {}).await;

    // The rest of alice's counters, reserved straight through the writer: the revocation
    // entry depends only on her counter, and signing a million certificates over HTTP
    // would take most of an hour.
    let rest = MAX_CERTIFICATES_PER_MEMBER - 2;
    let reserved = reg
        .writer()
        .submit(
            Command::Issue {
                id: alice.id,
                count: rest,
                wots_pk_digests: vec![],
            },
            None,
        )
        .await
        .unwrap();
    assert!(matches!(reserved, Outcome::Reserved { first: 2, count, .. } if count == rest));

    // One certificate more is refused, typed and naming the field; nothing is reserved.
    let items: Vec<CsrItem> = alice.key.csr(1, &mut OsRng);
    let body = json!({
        "cid_star": alice.cid_star,
        "wots_pks": [B64.encode(items[0].wots_pk().as_bytes())],
    });
    let r = reg
        .client
        .post(format!(
            "{}/admin/v1/members/{}/certificates",
            reg.url, alice.id
        ))
        .bearer_auth(support::ADMIN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409);
    assert_eq!(r.headers()["content-type"], "application/problem+json");
    let p: serde_json::Value = r.json().await.unwrap();
    assert_eq!(p["type"], "urn:dgsp:problem:certificate-limit", "{p}");
    assert_eq!(p["field"], "wots_pks", "{p}");
    let (_, member) = {
        let r = reg
            .client
            .get(format!("{}/admin/v1/members/{}", reg.url, alice.id))
            .bearer_auth(support::ADMIN)
            .send()
            .await
            .unwrap();
        (r.status(), r.json::<serde_json::Value>().await.unwrap())
    };
    assert_eq!(
        member["certificates_issued"], MAX_CERTIFICATES_PER_MEMBER,
        "{member}"
    );

    // The revocation: one entry with every zeta, small enough for any follower's page.
    let zetas = reg.revoke(alice.id).await;
    assert_eq!(zetas.len() as u64, MAX_CERTIFICATES_PER_MEMBER);
    let entry = reg
        .store
        .entries_after(0, 1_000_000)
        .unwrap()
        .into_iter()
        .find(|e| e.kind == "member_revoked")
        .unwrap();
    let bytes = serde_json::to_vec(&entry).unwrap().len();
    assert!(
        bytes < MAX_PAGE_BYTES / 2,
        "a revocation at the limit is {bytes} bytes"
    );

    // The gateway applies it: alice's old signature is revoked, her last counter's zeta has
    // an inclusion proof, bob is untouched.
    let settled = reg.settled().await;
    gw.reach(settled).await;
    let a = gw.verify(b"signed before the revocation", &before).await;
    assert_eq!(
        (a["valid"].as_bool(), a["status"].as_str()),
        (Some(false), Some("revoked")),
        "{a}"
    );
    assert_eq!(
        a["revocation"]["snapshot"]["count"],
        MAX_CERTIFICATES_PER_MEMBER
    );
    let last = hex::encode(B64.decode(zetas.last().unwrap()).unwrap());
    let (status, p) = gw.get(&format!("/v1/revocations/{last}/proof")).await;
    assert_eq!((status, p["revoked"].as_bool()), (200, Some(true)), "{p}");
    let mut bob = bob;
    let sig = bob.sign(b"bob is fine");
    let a = gw.verify(b"bob is fine", &sig).await;
    assert_eq!(a["status"], "ok", "{a}");

    gw.shutdown().await;
    reg.shutdown().await;
}
