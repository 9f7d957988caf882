//! Malformed input of every field gets a 4xx `application/problem+json` answer naming the
//! field, never a 500; and load beyond the queue is shed with 503 + Retry-After.

use crate::support;

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};
use support::registry;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_malformed_field_is_a_4xx_problem_naming_it() {
    let reg = registry().await;
    let mut alice = reg.member("alice", 2).await;
    let gw = reg
        .follower(|c| {
            c.api.max_batch = 4;
            c.api.body_limit = 64 * 1024;
        })
        .await;

    let sig = B64.encode(alice.sign(b"m").to_bytes());
    let msg = B64.encode(b"m");
    // sha2-128f values are 16 bytes.
    let good_pi = B64.encode([0u8; 16]);

    // (path, body, expected status, expected field)
    let big = "A".repeat(70 * 1024);
    let cases: Vec<(&str, Value, u16, Option<&str>)> = vec![
        (
            "/v1/verify",
            json!({"signature": sig}),
            400,
            Some("message"),
        ),
        (
            "/v1/verify",
            json!({"message": msg}),
            400,
            Some("signature"),
        ),
        (
            "/v1/verify",
            json!({"message": "not base64!", "signature": sig}),
            400,
            Some("message"),
        ),
        (
            "/v1/verify",
            json!({"message": msg, "signature": "%%%"}),
            400,
            Some("signature"),
        ),
        (
            "/v1/verify",
            json!({"message": msg, "signature": B64.encode(b"short")}),
            422,
            Some("signature"),
        ),
        (
            "/v1/verify",
            json!({"message": 5, "signature": sig}),
            400,
            Some("message"),
        ),
        (
            "/v1/verify",
            json!({"message": msg, "signature": sig, "extra": 1}),
            400,
            Some("extra"),
        ),
        ("/v1/verify", json!([1, 2]), 400, None),
        (
            "/v1/verify",
            json!({"message": big, "signature": sig}),
            413,
            None,
        ),
        ("/v1/verify/batch", json!({"items": []}), 422, Some("items")),
        (
            "/v1/verify/batch",
            json!({"items": vec![json!({"message": msg, "signature": "AAAA"}); 5]}),
            422,
            Some("items"),
        ),
        (
            "/v1/verify/batch",
            json!({"items": [{"message": msg, "signature": sig}, {"message": msg, "signature": "***"}]}),
            400,
            Some("items[1].signature"),
        ),
        (
            "/v1/verify/batch",
            json!({"items": [{"message": "@", "signature": sig}]}),
            400,
            Some("items[0].message"),
        ),
        (
            "/v1/verify/batch",
            json!({"items": "x"}),
            400,
            Some("items"),
        ),
        (
            "/v1/judge",
            json!({"message": msg, "signature": sig, "id": 0}),
            400,
            Some("pi"),
        ),
        (
            "/v1/judge",
            json!({"message": msg, "signature": sig, "id": -1, "pi": good_pi}),
            400,
            Some("id"),
        ),
        (
            "/v1/judge",
            json!({"message": msg, "signature": sig, "id": "zero", "pi": good_pi}),
            400,
            Some("id"),
        ),
        (
            "/v1/judge",
            json!({"message": msg, "signature": sig, "id": 0, "pi": "!"}),
            400,
            Some("pi"),
        ),
        (
            "/v1/judge",
            json!({"message": msg, "signature": sig, "id": 0, "pi": B64.encode([1u8; 3])}),
            422,
            Some("pi"),
        ),
        (
            "/v1/judge",
            json!({"message": msg, "signature": B64.encode(b"x"), "id": 0, "pi": good_pi}),
            422,
            Some("signature"),
        ),
        (
            "/v1/judge",
            json!({"message": "?", "signature": sig, "id": 0, "pi": good_pi}),
            400,
            Some("message"),
        ),
    ];
    for (i, (path, body, status, field)) in cases.iter().enumerate() {
        let (got, problem) = gw.post(path, body).await;
        assert_eq!(got, *status, "case {i} {path}: {problem}");
        assert!(
            problem["type"]
                .as_str()
                .unwrap()
                .starts_with("urn:dgsp:problem:"),
            "{problem}"
        );
        if let Some(f) = field {
            assert_eq!(
                problem["field"].as_str(),
                Some(*f),
                "case {i} {path}: {problem}"
            );
        }
    }

    // Not JSON at all, and the wrong content type.
    for (ctype, body, status) in [
        ("application/json", "{not json", 400),
        ("text/plain", "{}", 415),
    ] {
        let r = gw
            .client
            .post(format!("{}/v1/verify", gw.url))
            .header("content-type", ctype)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), status);
        assert_eq!(r.headers()["content-type"], "application/problem+json");
    }

    // Path parameters, unknown routes and methods.
    for (path, status, field) in [
        ("/v1/revocations/zz/proof", 400, Some("zeta")),
        (
            "/v1/revocations/00112233445566778899aabbccddeeff00/proof",
            400,
            Some("zeta"),
        ),
        ("/v1/revocations/snapshots/abc", 400, Some("n")),
        ("/v1/revocations/snapshots/0", 400, Some("n")),
        ("/v1/revocations/snapshots/99", 404, None),
        ("/v1/nothing", 404, None),
        ("/v1/verify", 405, None),
    ] {
        let r = gw
            .client
            .get(format!("{}{path}", gw.url))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), status, "{path}");
        assert_eq!(
            r.headers()["content-type"],
            "application/problem+json",
            "{path}"
        );
        let p: Value = r.json().await.unwrap();
        if let Some(f) = field {
            assert_eq!(p["field"].as_str(), Some(f), "{path}: {p}");
        }
    }
    // Both zeta spellings work.
    let zeta = [7u8; 16];
    for spelling in [
        hex::encode(zeta),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(zeta),
    ] {
        let (status, p) = gw.get(&format!("/v1/revocations/{spelling}/proof")).await;
        assert_eq!(status, 200, "{p}");
        assert_eq!(p["revoked"], false);
        assert_eq!(p["proof"]["kind"], "non_membership");
    }

    // Nothing above reached the verification counters as a 5xx.
    let metrics = gw
        .client
        .get(format!("{}/metrics", gw.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!metrics.contains("status=\"500\""), "{metrics}");
    gw.shutdown().await;
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_beyond_the_queue_is_shed_with_503_and_retry_after() {
    let reg = registry().await;
    let mut alice = reg.member("alice", 1).await;

    // A batch limit larger than the whole queue could never be met: refused at start-up.
    let dir = tempfile::tempdir().unwrap();
    let mut config = support::gateway_config(
        &reg.url,
        dgsp_gateway::anchor::Anchor::Key(Box::new(reg.manager.public_key().clone())),
        dir.path(),
    );
    (config.workers, config.queue, config.api.max_batch) = (1, 2, 64);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let err = dgsp_gateway::server::start(config, listener)
        .await
        .err()
        .expect("--max-batch 64 with --queue 2 is refused");
    assert!(
        err.to_string()
            .contains("--max-batch 64 is larger than --queue 2"),
        "{err}"
    );

    let gw = reg
        .follower(|c| {
            c.workers = 1;
            c.queue = 2;
            c.api.max_batch = 2;
        })
        .await;
    let sig = B64.encode(alice.sign(b"m").to_bytes());
    let item = json!({"message": B64.encode(b"m"), "signature": sig});

    // Many concurrent single verifies against a queue of 2: some are shed, all others ok.
    let mut tasks = Vec::new();
    for _ in 0..40 {
        let client = gw.client.clone();
        let url = format!("{}/v1/verify", gw.url);
        let body = item.clone();
        tasks.push(tokio::spawn(async move {
            let r = client.post(url).json(&body).send().await.unwrap();
            r.status().as_u16()
        }));
    }
    let mut codes = Vec::new();
    for t in tasks {
        codes.push(t.await.unwrap());
    }
    assert!(codes.iter().all(|c| *c == 200 || *c == 503), "{codes:?}");
    assert!(codes.contains(&200), "{codes:?}");
    assert!(codes.contains(&503), "nothing was shed: {codes:?}");
    let shed = codes.iter().filter(|c| **c == 503).count();
    let metrics = gw
        .client
        .get(format!("{}/metrics", gw.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(&format!("dgsp_gateway_shed_total {shed}")),
        "{metrics}"
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    gw.shutdown().await;
    reg.shutdown().await;
}

/// Found by schemathesis (scripts/api-check.sh): a body without `Content-Type:
/// application/json` is refused 415, which no operation documented, and `/v1/judge` did not
/// document the 413 of an over-limit body. Every refusal of the shared layers must be a
/// status the document lists for the operation, as `application/problem+json`, and every
/// 503 problem carries the documented `Retry-After`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_is_documented_in_the_openapi_document() {
    let reg = registry().await;
    let gw = reg.follower(|c| c.api.body_limit = 64 * 1024).await;
    let doc: Value = serde_json::from_str(&dgsp_gateway::api::openapi::document()).unwrap();
    let big = format!("{{\"message\": \"{}\"}}", "A".repeat(70 * 1024));
    let mut probes = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            for (status, resp) in op["responses"].as_object().unwrap() {
                for (media, content) in resp["content"].as_object().into_iter().flatten() {
                    if content["schema"]["$ref"] == "#/components/schemas/Problem" {
                        assert_eq!(
                            media, "application/problem+json",
                            "{method} {path} {status}"
                        );
                        if status == "503" {
                            assert!(resp["headers"]["Retry-After"].is_object(), "{path}");
                        }
                    }
                }
            }
            // The JSON operations (the witness's add-checkpoint takes the C2SP text body and
            // answers in text, as the protocol says: tests/witness_endpoint.rs).
            if !op["requestBody"]["content"]["application/json"].is_object() {
                continue;
            }
            let url = format!("{}{path}", gw.url);
            let post = || gw.client.post(&url);
            for (what, request, status) in [
                ("no content type", post().body("{}"), 415),
                (
                    "not JSON",
                    post().header("content-type", "application/json").body("\0"),
                    400,
                ),
                (
                    "over the limit",
                    post()
                        .header("content-type", "application/json")
                        .body(big.clone()),
                    413,
                ),
            ] {
                let r = request.send().await.unwrap();
                assert_eq!(r.status().as_u16(), status, "{path}: {what}");
                assert_eq!(r.headers()["content-type"], "application/problem+json");
                let documented = &op["responses"][status.to_string()]["content"];
                assert!(
                    documented["application/problem+json"].is_object(),
                    "{path} ({what}): {status} undocumented"
                );
                probes += 1;
            }
        }
    }
    assert_eq!(probes, 9, "verify, batch and judge, three refusals each");
    gw.shutdown().await;
    reg.shutdown().await;
}
