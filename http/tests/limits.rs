//! The shared plumbing over real HTTP on loopback: request metrics whose method labels come
//! from a fixed set whatever method a client sends, and per-route body limits answered 413
//! with problem+json naming the limit.

use std::sync::Arc;

use axum::extract::State;
use axum::middleware;
use axum::routing::{get, post};
use axum::Router;
use dgsp_http::metrics::Metrics;
use dgsp_http::problem::Body;
use dgsp_http::router::{finish, limit_body, REQUEST_TIMEOUT};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A router like the services': one GET, two JSON POSTs (one with a limit of its own),
/// request metrics around everything.
async fn serve() -> (std::net::SocketAddr, Arc<Metrics>) {
    let metrics = Arc::new(Metrics::default());
    let echo = |Body(v): Body<serde_json::Value>| async move { v.to_string() };
    let router = Router::new()
        .route("/thing", get(|| async { "thing" }))
        .route("/small", limit_body(post(echo), 64))
        .route("/large", post(echo));
    let app = finish(router, 1024, REQUEST_TIMEOUT).layer(middleware::from_fn_with_state(
        metrics.clone(),
        |State(m): State<Arc<Metrics>>, req: axum::extract::Request, next: middleware::Next| async move {
            m.observe(req, next).await
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, metrics)
}

/// Sends `request` as is on a new connection and reads the answer until the server closes.
async fn raw(addr: std::net::SocketAddr, request: &[u8]) -> String {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    // The server may close before reading everything sent; what it answered is what counts.
    let _ = tcp.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer).into_owned()
}

fn rendered(metrics: &Metrics) -> String {
    let mut out = String::new();
    metrics.render_requests("test", &mut out);
    out
}

#[tokio::test]
async fn a_custom_method_of_100_kb_is_counted_as_other_and_grows_nothing() {
    let (addr, metrics) = serve().await;
    let get = raw(
        addr,
        b"GET /thing HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert!(get.starts_with("HTTP/1.1 200"), "{get}");
    let before = rendered(&metrics);

    for letter in [b'A', b'B', b'C'] {
        let mut request = vec![letter; 100 * 1024];
        request.extend_from_slice(b" /thing HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
        let answer = raw(addr, &request).await;
        assert!(answer.starts_with("HTTP/1.1 405"), "{answer:.200}");
    }
    let after = rendered(&metrics);
    assert!(
        after.contains(
            "test_http_requests_total{method=\"OTHER\",route=\"/thing\",status=\"405\"} 3\n"
        ),
        "{after}"
    );
    // One series more (OTHER, 405) in each of the two metrics, whatever the methods were.
    assert_eq!(after.lines().count(), before.lines().count() + 2, "{after}");
    assert!(after.len() < before.len() + 400, "{after}");
    assert!(
        !after.contains("AAAA"),
        "a client's method reached the table"
    );

    // The methods HTTP defines keep their own label.
    let delete = raw(
        addr,
        b"DELETE /thing HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert!(delete.starts_with("HTTP/1.1 405"), "{delete}");
    assert!(rendered(&metrics).contains("method=\"DELETE\",route=\"/thing\",status=\"405\"} 1"));
}

fn post_json(path: &str, body: &str, chunked: bool) -> Vec<u8> {
    let framing = if chunked {
        format!(
            "transfer-encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
            body.len()
        )
    } else {
        format!("content-length: {}\r\n\r\n{body}", body.len())
    };
    format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\n{framing}"
    )
    .into_bytes()
}

fn problem_of(answer: &str) -> serde_json::Value {
    let body = answer.split_once("\r\n\r\n").unwrap().1;
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

#[tokio::test]
async fn a_route_limit_is_enforced_and_named_in_the_413() {
    let (addr, _) = serve().await;
    let fits = format!("\"{}\"", "a".repeat(60));
    let over = format!("\"{}\"", "a".repeat(100));
    for chunked in [false, true] {
        let ok = raw(addr, &post_json("/small", &fits, chunked)).await;
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        // Over the route's 64 bytes, well under the router's 1024: refused, naming 64,
        // whether the length was announced or only found while reading.
        let refused = raw(addr, &post_json("/small", &over, chunked)).await;
        assert!(refused.starts_with("HTTP/1.1 413"), "{refused}");
        assert!(
            refused.contains("content-type: application/problem+json"),
            "{refused}"
        );
        let p = problem_of(&refused);
        assert_eq!(p["type"], "urn:dgsp:problem:body-too-large", "{p}");
        assert!(
            p["detail"].as_str().unwrap().contains("limit of 64 bytes"),
            "{p}"
        );
        // A client that sends all of a far larger body before reading still gets the 413,
        // not a reset connection: the refused body is read and thrown away.
        let huge = format!("\"{}\"", "a".repeat(4 << 20));
        let refused = raw(addr, &post_json("/small", &huge, false)).await;
        assert!(refused.starts_with("HTTP/1.1 413"), "{refused:.200}");
        // The same body passes where the router's limit applies; a larger one names it.
        let ok = raw(addr, &post_json("/large", &over, chunked)).await;
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        let huge = format!("\"{}\"", "a".repeat(2000));
        let p = problem_of(&raw(addr, &post_json("/large", &huge, chunked)).await);
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .contains("limit of 1024 bytes"),
            "{p}"
        );
    }
}
