//! The HTTP client against a misbehaving server (wiremock): what is retried, what is not,
//! and what the user is told.

use std::time::Duration;

use dgsp_manager::client::{Backoff, Client, ClientError};
use serde_json::{json, Value};
use wiremock::matchers::{header_exists, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

fn client(server: &MockServer, retries: u32) -> Client {
    Client::new(
        &server.uri(),
        Some("tok".into()),
        Duration::from_millis(500),
        retries,
    )
    .unwrap()
    .with_backoff(Backoff {
        base: Duration::from_millis(5),
        max: Duration::from_millis(50),
    })
}

fn problem(status: u16, detail: &str, field: Option<&str>) -> ResponseTemplate {
    let mut body = json!({"type": "invalid-field", "title": "Invalid field", "status": status, "detail": detail});
    if let Some(f) = field {
        body["field"] = json!(f);
    }
    ResponseTemplate::new(status).set_body_raw(
        serde_json::to_vec(&body).unwrap(),
        "application/problem+json",
    )
}

#[tokio::test]
async fn busy_then_success_is_retried_with_the_same_idempotency_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/admin/v1/members"))
        .respond_with(problem(503, "writer busy", None).append_header("Retry-After", "0"))
        .up_to_n_times(2)
        .expect(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/admin/v1/members"))
        .and(header_exists("idempotency-key"))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 7})))
        .expect(1)
        .mount(&server)
        .await;
    let got: Value = client(&server, 3)
        .post_json("/admin/v1/members", &json!({"username": "a"}))
        .await
        .unwrap();
    assert_eq!(got["id"], 7);
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 3);
    let keys: Vec<_> = requests
        .iter()
        .map(|r: &Request| r.headers.get("idempotency-key").unwrap().clone())
        .collect();
    assert!(
        keys.iter().all(|k| *k == keys[0]),
        "one key for every attempt: {keys:?}"
    );
    assert_eq!(
        requests[0].headers.get("authorization").unwrap(),
        "Bearer tok"
    );
}

#[tokio::test]
async fn timeouts_and_429_are_retried_too() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/group"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(2)))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v1/group"))
        .respond_with(ResponseTemplate::new(429))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v1/group"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"head_seq": 4})))
        .mount(&server)
        .await;
    let got: Value = client(&server, 3).get_json("/v1/group", &[]).await.unwrap();
    assert_eq!(got["head_seq"], 4);
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn the_retry_budget_runs_out_with_the_servers_last_word() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(problem(503, "snapshot not yet published", None))
        .mount(&server)
        .await;
    let err = client(&server, 2)
        .get_json::<Value>("/v1/revocations/snapshot", &[])
        .await
        .unwrap_err();
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
    match &err {
        ClientError::RetriesExhausted {
            attempts,
            status,
            detail,
            ..
        } => {
            assert_eq!((*attempts, *status), (3, 503));
            assert_eq!(detail, "snapshot not yet published");
        }
        other => panic!("expected RetriesExhausted, got {other:?}"),
    }
    assert_eq!(err.kind(), "retries_exhausted");
}

#[tokio::test]
async fn a_4xx_is_not_retried_and_carries_the_servers_detail_and_field() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(problem(422, "not 16 bytes of base64", Some("wots_pks[3]")))
        .expect(1)
        .mount(&server)
        .await;
    let err = client(&server, 5)
        .post_json::<_, Value>("/admin/v1/members/1/certificates", &json!({}))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("not 16 bytes of base64"), "{text}");
    assert!(text.contains("wots_pks[3]"), "{text}");
    assert!(
        matches!(err, ClientError::Problem { status: 422, ref field, .. } if field.as_deref() == Some("wots_pks[3]"))
    );
    assert_eq!(err.kind(), "refused");
}

#[tokio::test]
async fn malformed_replies_are_named_not_trusted() {
    let server = MockServer::start().await;
    // A success whose body is cut short.
    Mock::given(path("/truncated"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw("{\"head_seq\": 4", "application/json"),
        )
        .mount(&server)
        .await;
    // A success with the wrong shape for the type asked for.
    Mock::given(path("/shape"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"head_seq": "four"})))
        .mount(&server)
        .await;
    // An error that is not problem+json (a proxy's HTML page).
    Mock::given(path("/html"))
        .respond_with(ResponseTemplate::new(404).set_body_raw("<html>nope</html>", "text/html"))
        .mount(&server)
        .await;
    let c = client(&server, 1);
    let err = c.get_json::<Value>("/truncated", &[]).await.unwrap_err();
    assert!(matches!(err, ClientError::Malformed { .. }), "{err:?}");
    assert!(
        err.to_string().contains("head_seq"),
        "shows the body: {err}"
    );
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Group {
        head_seq: u64,
    }
    let err = c.get_json::<Group>("/shape", &[]).await.unwrap_err();
    assert!(matches!(err, ClientError::Malformed { .. }), "{err:?}");
    let err = c.get_json::<Value>("/html", &[]).await.unwrap_err();
    assert!(
        matches!(err, ClientError::Status { status: 404, ref body, .. } if body.contains("nope")),
        "{err:?}"
    );
    // Nothing here was retried.
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn nobody_listening_is_unreachable_after_the_retries() {
    // Bind and drop: a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let c = Client::new(
        &format!("http://127.0.0.1:{port}"),
        None,
        Duration::from_millis(300),
        2,
    )
    .unwrap()
    .with_backoff(Backoff {
        base: Duration::from_millis(5),
        max: Duration::from_millis(20),
    });
    let err = c.get_json::<Value>("/v1/group", &[]).await.unwrap_err();
    assert!(
        matches!(err, ClientError::Unreachable { attempts: 3, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("cannot connect"), "{err}");
}

#[test]
fn unusable_urls_are_refused_up_front() {
    for bad in ["localhost:7300", "ftp://x", "http://", "not a url"] {
        let err = Client::new(bad, None, Duration::from_secs(1), 0).unwrap_err();
        assert_eq!(err.kind(), "bad_url", "{bad}");
    }
    // https is supported (rustls).
    Client::new("https://registry.example", None, Duration::from_secs(1), 0).unwrap();
}
