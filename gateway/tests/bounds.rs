//! What a gateway holds for a client is bounded, over real HTTP on loopback: a single
//! verify or judge takes a body of one message and about twice the largest signature (413
//! naming the limit beyond it) while a batch keeps the larger limit, the request metrics do
//! not grow whatever method a client sends, and the data directory is created 0700 under
//! the usual umask of 022.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_gateway::api::body::{encode_binary, BINARY};
use dgsp_wire::limits::{signed_message_body_limit, DEFAULT_MAX_MESSAGE};
use serde_json::{json, Value};
use support::registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BIN: &str = env!("CARGO_BIN_EXE_dgsp-gateway");

fn names_limit(p: &Value, limit: usize) {
    assert_eq!(p["type"], "urn:dgsp:problem:body-too-large", "{p}");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("limit of {limit} bytes")),
        "{p}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_verify_takes_one_message_and_a_signature_and_a_batch_more() {
    let reg = registry().await;
    let mut alice = reg.member("alice", 2).await;
    let gw = reg.follower(|_| {}).await;
    gw.reach(reg.settled().await).await;
    let single = signed_message_body_limit(DEFAULT_MAX_MESSAGE);
    assert_eq!(gw.state().config.single_body_limit(), single);
    assert!(single < 2 << 20, "{single}");

    // The largest message a single verify takes, signed: verified, in JSON and binary.
    let message = vec![b'm'; DEFAULT_MAX_MESSAGE];
    let sig = alice.sign(&message);
    let a = gw.verify(&message, &sig).await;
    assert_eq!(a["status"], "ok", "{a}");
    let binary = encode_binary(&[(&message, &sig.to_bytes())], false);
    let (status, a) = gw.post_bytes("/v1/verify", BINARY, binary).await;
    assert_eq!((status, a["status"].as_str()), (200, Some("ok")), "{a}");

    // A message larger than the limit leaves: 413 naming the limit, for JSON, binary and
    // judge bodies alike (the binary form, without base64, takes a little more).
    let long = vec![b'm'; DEFAULT_MAX_MESSAGE + 512 * 1024];
    let long_sig = alice.sign(&long);
    let body = json!({"message": B64.encode(&long), "signature": B64.encode(long_sig.to_bytes())});
    let (status, p) = gw.post("/v1/verify", &body).await;
    assert_eq!(status, 413, "{p}");
    names_limit(&p, single);
    let binary = encode_binary(&[(&long, &long_sig.to_bytes())], false);
    let (status, p) = gw.post_bytes("/v1/verify", BINARY, binary).await;
    assert_eq!(status, 413, "{p}");
    names_limit(&p, single);
    let judge = json!({"message": B64.encode(&long), "signature": B64.encode(long_sig.to_bytes()), "id": 0, "pi": B64.encode([0u8; 16])});
    let (status, p) = gw.post("/v1/judge", &judge).await;
    assert_eq!(status, 413, "{p}");
    names_limit(&p, single);

    // The same signature in a batch: within the batch's 20 MiB, verified.
    let (status, a) = gw
        .post("/v1/verify/batch", &json!({ "items": [body] }))
        .await;
    assert_eq!(status, 200, "{a}");
    assert_eq!(a["results"][0]["status"], "ok", "{a}");

    gw.shutdown().await;
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_message_limit_and_the_body_limit_set_the_single_limit() {
    let reg = registry().await;
    let gw = reg
        .follower(|c| {
            c.api.max_message = 1000;
        })
        .await;
    let single = signed_message_body_limit(1000);
    assert_eq!(gw.state().config.single_body_limit(), single);
    let body = json!({"message": B64.encode(vec![0u8; 200_000]), "signature": "AAAA"});
    let (status, p) = gw.post("/v1/verify", &body).await;
    assert_eq!(status, 413, "{p}");
    names_limit(&p, single);
    gw.shutdown().await;
    // Never more than --max-body-bytes.
    let gw = reg.follower(|c| c.api.body_limit = 4096).await;
    assert_eq!(gw.state().config.single_body_limit(), 4096);
    let (status, p) = gw.post("/v1/verify", &body).await;
    assert_eq!(status, 413, "{p}");
    names_limit(&p, 4096);
    gw.shutdown().await;
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_method_of_100_kb_does_not_grow_the_metrics() {
    let reg = registry().await;
    let gw = reg.follower(|_| {}).await;
    let before = gw.metrics().await;
    for letter in ["P", "Q"] {
        let mut tcp = tokio::net::TcpStream::connect(gw.addr()).await.unwrap();
        let request = format!(
            "{} /v1/verify HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
            letter.repeat(100 * 1024)
        );
        tcp.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let _ = tcp.read_to_end(&mut answer).await;
        assert!(answer.starts_with(b"HTTP/1.1 405"));
    }
    let after = gw.metrics().await;
    assert!(
        after.contains("method=\"OTHER\",route=\"/v1/verify\",status=\"405\"} 2"),
        "{after}"
    );
    assert!(!after.contains("PPPP"));
    assert!(after.len() < before.len() + 2_000, "{}", after.len());
    gw.shutdown().await;
    reg.shutdown().await;
}

#[test]
fn the_data_directory_is_created_0700_under_umask_022() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("srv/gateway");
    // Nothing listens on the registry's port: the gateway creates its replica, then keeps
    // trying to reach the registry.
    let mut child = std::process::Command::new("sh")
        .args(["-c", "umask 022 && exec \"$@\"", "sh", BIN, "serve"])
        .args([
            "--registry",
            "http://127.0.0.1:9",
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--group-key", &"ab".repeat(32), "--workers", "1"])
        .arg("--data")
        .arg(&data)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let replica = data.join("replica");
    for _ in 0..200 {
        if replica.join("CURRENT").exists() || child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    child.wait().unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert!(replica.exists(), "the gateway created no replica");
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&tmp.path().join("srv")), 0o700);
}
