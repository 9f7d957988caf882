//! The compact binary body (`application/vnd.dgsp.verify`) gets the answers and errors the
//! JSON body gets, and concurrent single verifies are coalesced into engine batches without
//! changing any answer.

use crate::support;

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_gateway::api::body::{encode_binary, BINARY};
use serde_json::{json, Value};
use support::{post_bytes, registry, statuses};

/// An answer without what differs from one request to the next (the state's age), at the
/// top and in every batch result.
fn stable(mut v: Value) -> Value {
    if let Some(f) = v.get_mut("freshness").and_then(Value::as_object_mut) {
        f.remove("age_ms");
    }
    if let Some(results) = v.get_mut("results").and_then(Value::as_array_mut) {
        for r in results {
            if let Some(f) = r.get_mut("freshness").and_then(Value::as_object_mut) {
                f.remove("age_ms");
            }
        }
    }
    v
}

/// Asserts two answers are equal without printing ~25 KB checkpoint notes on failure.
fn same(what: &str, a: (u16, Value), b: (u16, Value)) {
    let (a, b) = ((a.0, stable(a.1)), (b.0, stable(b.1)));
    assert!(
        a == b,
        "{what}: binary {} / JSON {} answers differ",
        a.0,
        b.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_bodies_get_the_json_answers_and_errors() {
    let reg = registry().await;
    let mut alice = reg.member("alice", 3).await;
    let mut mallory = reg.member("mallory", 1).await;
    let revoked = (b"before".to_vec(), mallory.sign(b"before").to_bytes());
    reg.revoke(mallory.id).await;
    let gw = reg.follower(|c| c.api.max_batch = 8).await;
    let good = (b"hello".to_vec(), alice.sign(b"hello").to_bytes());
    let mut tampered = (b"bye".to_vec(), alice.sign(b"bye").to_bytes());
    *tampered.1.last_mut().unwrap() ^= 1;
    let items = [good.clone(), revoked, tampered, (b"x".to_vec(), vec![1, 2])];
    let (single, batch) = ("/v1/verify", "/v1/verify/batch");

    for (m, s) in &items {
        let j = json!({"message": B64.encode(m), "signature": B64.encode(s)});
        let (js, jv) = gw
            .post_bytes(single, "application/json", j.to_string().into())
            .await;
        let (bs, bv) = gw
            .post_bytes(single, BINARY, encode_binary(&[(m, s)], false))
            .await;
        same("single", (bs, bv), (js, jv));
    }
    let pairs: Vec<(&[u8], &[u8])> = items.iter().map(|(m, s)| (&m[..], &s[..])).collect();
    let j = json!({"items": items.iter().map(|(m, s)| json!({
        "message": B64.encode(m), "signature": B64.encode(s)})).collect::<Vec<_>>()});
    let (js, jv) = gw
        .post_bytes(batch, "application/json", j.to_string().into())
        .await;
    let (bs, bv) = gw
        .post_bytes(batch, BINARY, encode_binary(&pairs, true))
        .await;
    assert_eq!(js, 200);
    same("batch", (bs, bv.clone()), (js, jv));
    assert_eq!(
        statuses(&bv),
        ["ok", "revoked", "invalid_signature", "malformed"]
    );

    // Errors: truncated, too many items, wrong media type.
    let mut cut = encode_binary(&pairs, true);
    cut.truncate(cut.len() - 1);
    let (s, p) = gw.post_bytes(batch, BINARY, cut).await;
    assert_eq!((s, p["field"].as_str()), (400, Some("items[3].signature")));
    let nine: Vec<(&[u8], &[u8])> = (0..9).map(|_| pairs[0]).collect();
    let (s, p) = gw
        .post_bytes(batch, BINARY, encode_binary(&nine, true))
        .await;
    assert_eq!((s, p["field"].as_str()), (422, Some("items")));
    let (s, p) = gw.post_bytes(single, "text/plain", b"x".to_vec()).await;
    assert_eq!(
        (s, p["type"].as_str()),
        (415, Some("urn:dgsp:problem:unsupported-media-type"))
    );
    let (s, p) = gw
        .post_bytes(single, BINARY, encode_binary(&[(b"m", b"junk")], false))
        .await;
    assert_eq!((s, p["field"].as_str()), (422, Some("signature")));

    gw.shutdown().await;
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_singles_are_coalesced_and_keep_their_answers() {
    let reg = registry().await;
    let mut alice = reg.member("alice", 24).await;
    // One worker (a coalescing wait never applies to a pool of one): while it verifies, the
    // next requests queue up and are taken together.
    let gw = reg
        .follower(|c| {
            c.workers = 1;
            c.coalesce_wait = Duration::from_micros(500);
        })
        .await;
    let url = format!("{}/v1/verify", gw.url);
    let mut sent = Vec::new();
    for i in 0..24u8 {
        let msg = vec![b'c', i];
        let mut sig = alice.sign(&msg).to_bytes();
        let want_ok = i % 3 != 0;
        if !want_ok {
            let mid = sig.len() / 2;
            sig[mid] ^= 0x40;
        }
        sent.push((msg, sig, want_ok));
    }
    let before = gw.state().pool.stats();
    let answers = futures_join(sent.iter().map(|(m, s, _)| {
        let (client, url) = (gw.client.clone(), url.clone());
        let body = encode_binary(&[(m, s)], false);
        async move { post_bytes(&client, &url, BINARY, body).await }
    }))
    .await;
    for ((_, _, want_ok), (status, a)) in sent.iter().zip(&answers) {
        assert_eq!(*status, 200, "{a}");
        assert_eq!(a["valid"], *want_ok, "{a}");
    }
    let after = gw.state().pool.stats();
    let verified = after.verified - before.verified;
    let calls = after.engine_calls - before.engine_calls;
    assert_eq!(verified, 24);
    assert!(
        calls < verified,
        "24 concurrent requests on one worker took {calls} engine calls: nothing was coalesced"
    );
    gw.shutdown().await;
    reg.shutdown().await;
}

/// Runs the futures concurrently (each on its own task) and collects their outputs in order.
async fn futures_join<F>(futs: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futs.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}
