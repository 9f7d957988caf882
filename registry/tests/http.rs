//! The registry over real HTTP on loopback: a member's whole flow through the admin API,
//! and the bad-input table (each refusal is problem+json and leaves the log unchanged).

use crate::support;

use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::revocation::{verify_revocation, Membership, RevocationProof};
use dgsp_core::{Certificate, CidStar, InMemoryRevokedList, Manager, MemberKey, ParamSet};
use dgsp_registry::api;
use dgsp_registry::server;
use dgsp_registry::store::Store;
use dgsp_wire::events::Event;
use dgsp_wire::log::{Entry, GENESIS_PREV};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{polls, Registry};

const ADMIN: &str = "admin-token-for-tests";
const AUDITOR: &str = "auditor-token-for-tests";

async fn start(body_limit: usize) -> Registry {
    let config = server::Config {
        auditor_token: Some(AUDITOR.into()),
        body_limit,
        ..support::config(ADMIN)
    };
    Registry::start(3, config).await
}

impl Registry {
    async fn get(&self, path: &str, token: Option<&str>) -> Value {
        support::get_json(&self.client, format!("{}{path}", self.url), token)
            .await
            .1
    }

    /// Whether `zeta` is revoked, by a proof from the registry checked offline against the
    /// signed snapshot it names (waits for a snapshot that covers a revocation).
    async fn revocation_status(&self, zeta: [u8; 16]) -> Membership {
        let group = self.manager.public_key();
        let url = format!("{}/v1/revocations/{}/proof", self.url, hex::encode(zeta));
        for _ in 0..100 {
            let r = self.client.get(&url).send().await.unwrap();
            if r.status() == StatusCode::SERVICE_UNAVAILABLE {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                continue;
            }
            let a: Value = r.json().await.unwrap();
            let n = a["snapshot_number"].as_u64().unwrap();
            let snap = self
                .get(&format!("/v1/revocations/snapshots/{n}"), None)
                .await;
            let snap = dgsp_registry::publisher::snapshot_from_json(&snap).unwrap();
            let proof =
                RevocationProof::from_bytes(&B64.decode(a["proof"].as_str().unwrap()).unwrap())
                    .unwrap();
            let m = verify_revocation(group, &snap, &dgsp_core::Zeta(zeta), &proof).unwrap();
            if snap.record.count > 0 {
                return m;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("no snapshot covering the revocation");
    }

    /// The last entry that records an operator or member action (the publisher's own
    /// snapshot and checkpoint entries, appended concurrently, do not count).
    fn last_action(&self) -> u64 {
        self.store
            .entries_after(0, 100_000)
            .unwrap()
            .iter()
            .filter(|e| e.kind != "snapshot_published" && e.kind != "checkpoint")
            .map(|e| e.seq)
            .max()
            .unwrap_or(0)
    }

    async fn post(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        let r = self
            .client
            .post(format!("{}{path}", self.url))
            .bearer_auth(ADMIN)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        if status.is_client_error() || status.is_server_error() {
            assert_eq!(
                r.headers()["content-type"],
                "application/problem+json",
                "{path}"
            );
        }
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn raw(&self, path: &str, body: &'static str) -> (StatusCode, Value) {
        let r = self
            .client
            .post(format!("{}{path}", self.url))
            .bearer_auth(ADMIN)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        (r.status(), r.json().await.unwrap_or(Value::Null))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_joins_gets_certificates_signs_and_is_opened_and_revoked() {
    let reg = start(api::DEFAULT_BODY_LIMIT).await;
    let params = ParamSet::Sha2_128f;
    let (status, joined) = reg
        .post("/admin/v1/members", &json!({"username": "alice"}))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let id = joined["id"].as_u64().unwrap();
    let cid_star = CidStar::from_slice(
        params,
        &B64.decode(joined["cid_star"].as_str().unwrap()).unwrap(),
    )
    .unwrap();

    let member = MemberKey::generate(params, id, cid_star, &mut ChaCha20Rng::seed_from_u64(9));
    let items = member.csr(3, &mut ChaCha20Rng::seed_from_u64(10));
    let pks: Vec<String> = items
        .iter()
        .map(|i| B64.encode(i.wots_pk().as_bytes()))
        .collect();
    let body = json!({"cid_star": joined["cid_star"], "wots_pks": pks});
    let (status, issued) = reg
        .post(&format!("/admin/v1/members/{id}/certificates"), &body)
        .await;
    assert_eq!(status, StatusCode::OK, "{issued}");
    let certs: Vec<Certificate> = issued["certificates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Certificate::from_bytes(&B64.decode(c.as_str().unwrap()).unwrap()).unwrap())
        .collect();
    let key = member
        .import(
            reg.manager.public_key(),
            items.into_iter().nth(2).unwrap(),
            &certs[2],
        )
        .unwrap();
    let sig = key.sign(b"invoice 42");
    reg.manager
        .public_key()
        .verify(b"invoice 42", &sig, &InMemoryRevokedList::new())
        .unwrap();

    let body =
        json!({"message": B64.encode(b"invoice 42"), "signature": B64.encode(sig.to_bytes())});
    let (status, opened) = reg.post("/admin/v1/open", &body).await;
    assert_eq!(status, StatusCode::OK, "{opened}");
    assert_eq!(
        (
            opened["id"].as_u64(),
            opened["username"].as_str(),
            opened["counter"].as_u64()
        ),
        (Some(id), Some("alice"), Some(2))
    );
    let pi =
        dgsp_core::Pi::from_slice(params, &B64.decode(opened["pi"].as_str().unwrap()).unwrap())
            .unwrap();
    reg.manager
        .public_key()
        .judge(b"invoice 42", &sig, id, &pi)
        .unwrap();

    // The logged opening carries the DGSP digest: judged from the log alone.
    let logged = reg
        .store
        .entry(opened["seq"].as_u64().unwrap())
        .unwrap()
        .unwrap();
    let Event::SignatureOpened {
        digest: Some(d), ..
    } = logged.event().unwrap()
    else {
        panic!("not an opening with a digest: {logged:?}")
    };
    let d = dgsp_core::MessageDigest::from_slice(params, &hex::decode(d).unwrap()).unwrap();
    reg.manager
        .public_key()
        .judge_digest(&d, &sig, id, &pi)
        .unwrap();

    // Member list and lookup by username.
    reg.post("/admin/v1/members", &json!({"username": "bob"}))
        .await;
    let page = reg.get("/admin/v1/members?limit=1", Some(ADMIN)).await;
    assert_eq!(page["members"][0]["username"], "alice");
    assert_eq!(page["next"], json!(id + 1));
    let page = reg
        .get(&format!("/admin/v1/members?from={}", id + 1), Some(ADMIN))
        .await;
    assert_eq!(page["members"][0]["username"], "bob");
    assert_eq!(page["next"], Value::Null);
    let found = reg.get("/admin/v1/members?username=bob", Some(ADMIN)).await;
    assert_eq!(found["members"][0]["id"], json!(id + 1));
    let none = reg.get("/admin/v1/members?username=zed", Some(ADMIN)).await;
    assert_eq!(none["members"], json!([]));

    let (status, revoked) = reg
        .post(&format!("/admin/v1/members/{id}/revoke"), &json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(revoked["zetas"].as_array().unwrap().len(), 3);
    assert!(reg.store.is_revoked(sig.zeta()).unwrap());

    // A proof from the registry verifies offline against the signed snapshot.
    assert_eq!(
        reg.revocation_status(sig.zeta().0).await,
        Membership::Revoked
    );
    assert_eq!(
        reg.revocation_status([0x5a; 16]).await,
        Membership::NotRevoked
    );
    // The publisher signs checkpoints after the writes, asynchronously: wait (bounded) for
    // one that covers the five entries so far.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let cp = reg.get("/v1/checkpoint", None).await;
        let checkpoint = reg
            .manager
            .public_key()
            .verify_checkpoint(cp["note"].as_str().unwrap())
            .unwrap();
        if checkpoint.size >= 5 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no checkpoint covers 5 entries after 30 s: {cp}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    // The public feed hides usernames; the auditor token reveals them; the chain verifies.
    let public = reg.get("/v1/log/entries", None).await;
    assert!(!public.to_string().contains("alice"));
    let audited = reg.get("/v1/log/entries", Some(AUDITOR)).await;
    assert!(audited.to_string().contains("alice"));
    let entries: Vec<Entry> = serde_json::from_value(public["entries"].clone()).unwrap();
    let mut prev = (0, GENESIS_PREV);
    for e in &entries {
        e.check(prev.0, &prev.1).unwrap();
        prev = (e.seq, e.hash_bytes().unwrap());
    }
    assert!(prev.0 >= reg.last_action(), "the feed covers every action");
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_with_problem_json_and_changes_nothing() {
    let reg = start(64 * 1024).await;
    let (_, alice) = reg
        .post("/admin/v1/members", &json!({"username": "alice"}))
        .await;
    let (_, bob) = reg
        .post("/admin/v1/members", &json!({"username": "bob"}))
        .await;
    let pk16 = B64.encode([7u8; 16]);
    let issue = |cid: &Value| json!({"cid_star": cid, "wots_pks": [pk16]});
    reg.post("/admin/v1/members/0/revoke", &json!({})).await;
    let head = reg.last_action();

    let cases: Vec<(&str, Value, StatusCode, Option<&str>)> = vec![
        (
            "/admin/v1/members",
            json!({"username": "alice"}),
            StatusCode::CONFLICT,
            Some("username"),
        ),
        (
            "/admin/v1/members",
            json!({"username": ""}),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("username"),
        ),
        (
            "/admin/v1/members",
            json!({"name": "x"}),
            StatusCode::BAD_REQUEST,
            None,
        ),
        (
            "/admin/v1/members/bulk",
            json!({"usernames": ["carol", "bob"]}),
            StatusCode::CONFLICT,
            Some("username"),
        ),
        (
            "/admin/v1/members/bulk",
            json!({"usernames": ["ok", "\u{7}"]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("usernames[1]"),
        ),
        (
            "/admin/v1/members/99/certificates",
            issue(&bob["cid_star"]),
            StatusCode::FORBIDDEN,
            Some("cid_star"),
        ),
        (
            "/admin/v1/members/1/certificates",
            issue(&alice["cid_star"]),
            StatusCode::FORBIDDEN,
            Some("cid_star"),
        ),
        (
            "/admin/v1/members/0/certificates",
            issue(&alice["cid_star"]),
            StatusCode::CONFLICT,
            None,
        ),
        (
            "/admin/v1/members/1/certificates",
            json!({"cid_star": "***", "wots_pks": [pk16]}),
            StatusCode::BAD_REQUEST,
            Some("cid_star"),
        ),
        (
            "/admin/v1/members/1/certificates",
            json!({"cid_star": bob["cid_star"], "wots_pks": ["AAAA"]}),
            StatusCode::BAD_REQUEST,
            Some("wots_pks[0]"),
        ),
        (
            "/admin/v1/members/1/certificates",
            json!({"cid_star": bob["cid_star"], "wots_pks": []}),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("wots_pks"),
        ),
        (
            "/admin/v1/members/x/certificates",
            issue(&bob["cid_star"]),
            StatusCode::BAD_REQUEST,
            Some("id"),
        ),
        (
            "/admin/v1/members/99/revoke",
            json!({}),
            StatusCode::NOT_FOUND,
            None,
        ),
        (
            "/admin/v1/open",
            json!({"message": "aGk=", "signature": "AAAA"}),
            StatusCode::BAD_REQUEST,
            Some("signature"),
        ),
        (
            "/admin/v1/open",
            json!({"message": "%%", "signature": "AAAA"}),
            StatusCode::BAD_REQUEST,
            Some("message"),
        ),
    ];
    for (path, body, status, field) in cases {
        let (got, problem) = reg.post(path, &body).await;
        assert_eq!(got, status, "{path} {body}: {problem}");
        assert_eq!(problem["status"], status.as_u16());
        assert!(problem["type"]
            .as_str()
            .unwrap()
            .starts_with("urn:dgsp:problem:"));
        if let Some(f) = field {
            assert_eq!(problem["field"], f, "{path} {body}: {problem}");
        }
    }
    let (status, p) = reg.raw("/admin/v1/members", "{\"username\": ").await;
    assert_eq!(
        (status, p["type"].as_str()),
        (
            StatusCode::BAD_REQUEST,
            Some("urn:dgsp:problem:malformed-json")
        )
    );
    let big = format!(
        "{{\"usernames\": [{}]}}",
        vec!["\"abcdefgh\""; 10_000].join(",")
    );
    let r = reg
        .client
        .post(format!("{}/admin/v1/members/bulk", reg.url))
        .bearer_auth(ADMIN)
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let r = reg
        .client
        .post(format!("{}/admin/v1/members", reg.url))
        .json(&json!({"username": "eve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = reg
        .client
        .post(format!("{}/admin/v1/members", reg.url))
        .bearer_auth("wrong-token-wrong-token")
        .json(&json!({"username": "eve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    assert_eq!(reg.last_action(), head, "no refusal appended anything");
    // Revoking twice is idempotent: same answer, nothing appended.
    let (status, again) = reg.post("/admin/v1/members/0/revoke", &json!({})).await;
    assert_eq!(
        (status, again["already_revoked"].as_bool()),
        (StatusCode::OK, Some(true))
    );
    assert_eq!(reg.last_action(), head);
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotency_key_returns_the_first_answer() {
    let reg = start(api::DEFAULT_BODY_LIMIT).await;
    let send = |name: &'static str, key: &'static str| {
        reg.client
            .post(format!("{}/admin/v1/members", reg.url))
            .bearer_auth(ADMIN)
            .header("idempotency-key", key)
            .json(&json!({"username": name}))
            .send()
    };
    let a: Value = send("zoe", "req-1").await.unwrap().json().await.unwrap();
    let b: Value = send("zoe", "req-1").await.unwrap().json().await.unwrap();
    assert_eq!(a, b);
    let head = reg.last_action();
    let c = send("yan", "req-1").await.unwrap();
    assert_eq!(c.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(reg.last_action(), head);
    reg.shutdown().await;
}

/// A registry that stopped after a write but before checkpointing it signs that checkpoint
/// on restart, without waiting for new traffic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_checkpoints_what_the_last_run_left_unsigned() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    let manager = Arc::new(Manager::generate(
        ParamSet::Sha2_128f,
        &mut ChaCha20Rng::seed_from_u64(8),
    ));
    let events = [
        Event::group_created(manager.public_key()),
        // What the previous run checkpointed: entry 1 only.
        Event::Checkpoint {
            size: 1,
            head: "00".repeat(32),
            note: String::new(),
        },
        Event::MemberJoined {
            id: 0,
            username: "late".into(),
        },
    ];
    let mut prev = GENESIS_PREV;
    let entries: Vec<Entry> = events
        .iter()
        .enumerate()
        .map(|(k, e)| {
            let entry = Entry::seal(k as u64 + 1, 1, e, &prev);
            prev = entry.hash_bytes().unwrap();
            entry
        })
        .collect();
    store.commit(&entries, &[]).unwrap();

    let running = support::serve(store, manager.clone(), support::config(ADMIN)).await;
    let client = reqwest::Client::new();
    // The join at seq 3 is checkpointed.
    let cp = support::wait_covering(&client, &running.url(), 3, polls(200, 10)).await;
    manager
        .public_key()
        .verify_checkpoint(cp["note"].as_str().unwrap())
        .unwrap();
    running.shutdown().await.unwrap();
}

/// Whether operation `method path` of the OpenAPI document `doc` lists `status`, and the
/// media type it documents for it.
fn documented(doc: &Value, method: &str, path: &str, status: u16) -> Option<Vec<String>> {
    let resp = &doc["paths"][path][method]["responses"][status.to_string()];
    resp.is_object().then(|| {
        resp["content"]
            .as_object()
            .map(|c| c.keys().cloned().collect())
            .unwrap_or_default()
    })
}

/// Found by schemathesis (scripts/api-check.sh): refusals the shared layers make (no admin
/// token 401, no JSON content type 415, unparsable body 400, unparsable path id 400, empty key
/// list 422) were answered with statuses the document did not list, every problem was
/// documented as application/json, and the query parameters of the member list and the log
/// feed were documented as (required) path parameters, so no client or fuzzer sent them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_is_documented_in_the_openapi_document() {
    let reg = start(64 * 1024).await;
    let doc: Value = serde_json::from_str(&api::openapi::document()).unwrap();
    let problem_ref = "#/components/schemas/Problem";
    let mut probes = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            // Problems are problem+json; path parameters are in the path.
            for (status, resp) in op["responses"].as_object().unwrap() {
                for (media, content) in resp["content"].as_object().into_iter().flatten() {
                    if content["schema"]["$ref"] == problem_ref {
                        assert_eq!(
                            media, "application/problem+json",
                            "{method} {path} {status}"
                        );
                    }
                }
            }
            for p in op["parameters"].as_array().into_iter().flatten() {
                if p["in"] == "path" {
                    let name = p["name"].as_str().unwrap();
                    assert!(
                        path.contains(&format!("{{{name}}}")),
                        "{method} {path}: {name}"
                    );
                }
            }
            let concrete = path
                .replace("{id}", "0")
                .replace("{n}", "1")
                .replace("{zeta}", &"0".repeat(32));
            let url = format!("{}{concrete}", reg.url);
            let m = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let mut cases: Vec<(&str, reqwest::RequestBuilder, u16)> = Vec::new();
            if op["security"].is_array() {
                cases.push(("no token", reg.client.request(m.clone(), &url), 401));
            }
            if op["requestBody"].is_object() {
                let with_token = || reg.client.request(m.clone(), &url).bearer_auth(ADMIN);
                cases.push(("no content type", with_token().body("{}"), 415));
                cases.push((
                    "not JSON",
                    with_token()
                        .header("content-type", "application/json")
                        .body("\0"),
                    400,
                ));
            }
            if path.contains("{id}") || path.contains("{n}") {
                let bad = format!(
                    "{}{}",
                    reg.url,
                    path.replace("{id}", "x").replace("{n}", "x")
                );
                let request = reg.client.request(m.clone(), bad).bearer_auth(ADMIN);
                let request = if op["requestBody"].is_object() {
                    request.json(&json!({}))
                } else {
                    request
                };
                cases.push(("unparsable path number", request, 400));
            }
            for (what, request, status) in cases {
                let r = request.send().await.unwrap();
                assert_eq!(r.status().as_u16(), status, "{method} {path}: {what}");
                let media = documented(&doc, method, path, status)
                    .unwrap_or_else(|| panic!("{method} {path} ({what}): {status} undocumented"));
                assert_eq!(
                    media,
                    ["application/problem+json"],
                    "{method} {path} {status}"
                );
                assert_eq!(r.headers()["content-type"], "application/problem+json");
                if status == 401 {
                    assert_eq!(r.headers()["www-authenticate"], "Bearer");
                }
                probes += 1;
            }
        }
    }
    assert!(probes >= 19, "{probes} probes");

    // Specific refusals schemathesis met.
    let (status, _) = reg
        .post(
            "/admin/v1/members/0/certificates",
            &json!({"cid_star": "", "wots_pks": []}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let issue = "/admin/v1/members/{id}/certificates";
    assert!(documented(&doc, "post", issue, 422).is_some());
    // The feed's query parameters are query parameters, optional, and a bad one is a 400.
    for (path, name) in [("/v1/log/entries", "limit"), ("/admin/v1/members", "limit")] {
        let params = doc["paths"][path]["get"]["parameters"].as_array().unwrap();
        let p = params.iter().find(|p| p["name"] == name).unwrap();
        assert_eq!((&p["in"], &p["required"]), (&json!("query"), &json!(false)));
        let r = reg
            .client
            .get(format!("{}{path}?{name}=0", reg.url))
            .bearer_auth(ADMIN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{path}");
        assert!(documented(&doc, "get", path, 400).is_some());
    }
    reg.shutdown().await;
}
