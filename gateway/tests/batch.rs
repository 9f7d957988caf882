//! `POST /v1/verify/batch` verifies its signatures in chunks, one batch call per pool job:
//! every item must still get exactly the answer `POST /v1/verify` gives it, in its place,
//! whatever the chunking (more items than workers, outcomes interleaved irregularly).

use crate::support;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};
use support::registry;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_batch_item_gets_the_single_verify_answer_in_its_place() {
    let reg = registry().await;
    let mut alice = reg.member("alice", 9).await;
    let mut mallory = reg.member("mallory", 2).await;
    let revoked_sig = mallory.sign(b"before");
    reg.revoke(mallory.id).await;
    // Three workers: 23 items are verified as several chunks of a few signatures each.
    let gw = reg
        .follower(|c| {
            c.workers = 3;
            c.api.max_batch = 64;
        })
        .await;

    let mut items: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for i in 0..9u8 {
        let msg = vec![b'm', i];
        let sig = alice.sign(&msg).to_bytes();
        match i % 4 {
            // valid
            0 | 3 => items.push((msg, sig.clone())),
            // wrong message
            1 => items.push((vec![b'x', i], sig.clone())),
            // tampered SPHINCS+ part (last byte)
            _ => {
                let mut t = sig.clone();
                *t.last_mut().unwrap() ^= 1;
                items.push((msg.clone(), t));
            }
        }
        // Every signature also appears valid, later in the batch.
        items.push((vec![b'm', i], sig));
        if i % 3 == 0 {
            items.push((b"before".to_vec(), revoked_sig.to_bytes()));
        }
        if i == 4 {
            items.push((b"x".to_vec(), b"not a signature".to_vec()));
        }
    }
    assert!(items.len() > 20, "{}", items.len());

    let body = json!({"items": items.iter().map(|(m, s)| json!({
        "message": B64.encode(m), "signature": B64.encode(s)
    })).collect::<Vec<Value>>()});
    let (status, batch) = gw.post("/v1/verify/batch", &body).await;
    assert_eq!(status, 200, "{batch}");
    let results = batch["results"].as_array().unwrap();
    assert_eq!(results.len(), items.len());
    let mut seen = std::collections::BTreeSet::new();
    for (i, ((m, s), got)) in items.iter().zip(results).enumerate() {
        let (code, single) = gw
            .post(
                "/v1/verify",
                &json!({"message": B64.encode(m), "signature": B64.encode(s)}),
            )
            .await;
        let want = if code == 422 {
            "malformed"
        } else {
            single["status"].as_str().unwrap()
        };
        assert_eq!(got["status"], want, "item {i}: {got} vs {single}");
        assert_eq!(got["valid"], want == "ok", "item {i}");
        seen.insert(want.to_owned());
    }
    let ok = results.iter().filter(|r| r["valid"] == true).count();
    assert_eq!(batch["ok"], ok);
    assert_eq!(batch["not_ok"], results.len() - ok);
    // Every outcome was in the mix.
    for s in ["ok", "invalid_signature", "revoked", "malformed"] {
        assert!(seen.contains(s), "no {s} item: {seen:?}");
    }
    // Stop both services before the process exits (RocksDB must not be torn down under
    // their running tasks).
    gw.shutdown().await;
    reg.shutdown().await;
}
