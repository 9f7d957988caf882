//! Load that records what the registry acknowledged: clients that join, sometimes issue
//! two certificates and sometimes revoke, until the registry stops answering (killed,
//! halted). The crash and takeover tests check afterwards that every acknowledged write is
//! in the log.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde_json::{json, Value};

/// What the registry acknowledged (answered with success).
#[derive(Default)]
pub struct Acked {
    /// username -> member id
    pub joined: HashMap<String, u64>,
    /// member -> highest first_counter + count acknowledged
    pub issued: HashMap<u64, u64>,
    /// revoked members
    pub revoked: Vec<u64>,
}

/// An admin POST's JSON answer when it succeeded; `None` when the registry died or refused.
pub async fn post_ok(
    client: &reqwest::Client,
    token: &str,
    url: String,
    body: Option<&Value>,
) -> Option<Value> {
    let mut request = client.post(url).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(body);
    }
    let r = request.send().await.ok()?;
    if !r.status().is_success() {
        return None;
    }
    r.json().await.ok()
}

/// Joins `{tag}-0`, `{tag}-1`, ... at `base`; after each join, with probability 1/2 issues
/// two certificates and with 1/4 revokes (drawn from `seed`). Returns at the first write
/// not acknowledged.
pub async fn client_loop(
    client: reqwest::Client,
    base: String,
    token: &'static str,
    tag: String,
    seed: u64,
    acked: Arc<Mutex<Acked>>,
) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    for i in 0.. {
        let name = format!("{tag}-{i}");
        let url = format!("{base}/admin/v1/members");
        let Some(v) = post_ok(&client, token, url, Some(&json!({ "username": name }))).await else {
            return;
        };
        let id = v["id"].as_u64().unwrap();
        acked.lock().unwrap().joined.insert(name, id);
        if rng.next_u32() % 2 == 0 {
            let pks: Vec<String> = (0..2).map(|k| B64.encode([(i as u8) ^ k; 16])).collect();
            let body = json!({"cid_star": v["cid_star"], "wots_pks": pks});
            let url = format!("{base}/admin/v1/members/{id}/certificates");
            let Some(v) = post_ok(&client, token, url, Some(&body)).await else {
                return;
            };
            let end = v["first_counter"].as_u64().unwrap() + 2;
            acked.lock().unwrap().issued.insert(id, end);
        }
        if rng.next_u32() % 4 == 0 {
            let url = format!("{base}/admin/v1/members/{id}/revoke");
            if post_ok(&client, token, url, None).await.is_none() {
                return;
            }
            acked.lock().unwrap().revoked.push(id);
        }
    }
}
