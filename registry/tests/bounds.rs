//! Everything the registry holds for a client is bounded, over real HTTP on loopback: the
//! bytes of feed pages in flight across concurrent requests (beyond them, smaller pages,
//! then 503 `feed-busy` with `Retry-After`), each write route's body limit (sized to what it
//! carries, 413 naming it), the request metrics whatever method a client sends, readiness
//! once the newest signed note is older than twice the cadence, and data directories
//! created 0700 under the usual umask of 022.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command as Process;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::MAX_N;
use dgsp_http::clock::OffsetClock;
use dgsp_registry::api::admin::{
    ISSUE_BODY_LIMIT, JOIN_BODY_LIMIT, OPEN_BODY_LIMIT, SMALL_BODY_LIMIT,
};
use dgsp_registry::publisher::PublisherConfig;
use dgsp_registry::server;
use dgsp_wire::limits::{DEFAULT_MAX_MESSAGE, LARGEST_SIGNATURE};
use dgsp_wire::registry_api::MAX_ISSUE;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{polls, Registry};
use tokio::io::AsyncWriteExt;

const ADMIN: &str = "admin-token-for-bounds-tests";

async fn start(feed_bytes_in_flight: usize, publisher: PublisherConfig) -> Registry {
    let config = server::Config {
        publisher,
        feed_bytes_in_flight,
        ..support::config(ADMIN)
    };
    Registry::start(11, config).await
}

/// (Named apart from `http`'s `post`, which takes JSON: both extend the shared `Registry`.)
impl Registry {
    async fn post_text(&self, path: &str, body: String) -> (StatusCode, Value) {
        let r = self
            .client
            .post(format!("{}{path}", self.url))
            .bearer_auth(ADMIN)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        (status, r.json().await.unwrap_or(Value::Null))
    }
}

/// Opens a connection, sends a GET for `path` and reads nothing: the answer stays with the
/// server for as long as the connection is open (it is larger than the socket buffers).
async fn stalled_get(url: &str, path: &str) -> tokio::net::TcpStream {
    let addr = url.trim_start_matches("http://");
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    tcp
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..600 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

/// Certificates of the revoked member: its `member_revoked` entries are ~18 MB in all, more
/// than a page and than any socket buffer on loopback.
const CERTS: u64 = 520_000;
const MIB: usize = 1 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feed_pages_in_flight_are_bounded_across_concurrent_requests() {
    let reg = start(40 * MIB, PublisherConfig::default()).await;
    let (status, _) = reg
        .post_text("/admin/v1/members", json!({"username": "big"}).to_string())
        .await;
    assert_eq!(status, StatusCode::CREATED);
    support::reserve_certificates(&reg.running.state.writer, 0, CERTS).await;
    let (status, revoked) = reg
        .post_text("/admin/v1/members/0/revoke", "{}".into())
        .await;
    assert_eq!(status, StatusCode::OK);
    let seq = revoked["seq"].as_u64().unwrap();
    // The revocation is written in parts of at most MAX_ZETAS_PER_ENTRY zetas (each entry
    // fits an entry bundle): a page of them reaches the 16 MiB page bound.
    let big_page = format!("/v1/log/entries?after={}&limit=1000", seq - 1);
    let feed = &reg.running.state.feed;
    assert_eq!(feed.in_flight(), 0);
    let get = |path: &str| {
        let request = reg.client.get(format!("{}{path}", reg.url));
        async move { request.send().await.unwrap() }
    };

    // Two clients that never read hold their ~16 MiB pages: 32 of the 40 MiB. The rest is
    // taken here, reservation by reservation, until not even the smallest is left (a page
    // smaller than the socket buffers would be sent whole and give its share back at once,
    // so stalled clients cannot hold it).
    let a = stalled_get(&reg.url, &big_page).await;
    let b = stalled_get(&reg.url, &big_page).await;
    wait_until("two large pages in flight", || feed.in_flight() > 30 * MIB).await;
    let mut last = 0;
    wait_until("the two pages built", || {
        let now = feed.in_flight();
        std::mem::replace(&mut last, now) == now
    })
    .await;
    let mut taken = Vec::new();
    while let Ok(r) = feed.reserve(40 * MIB) {
        taken.push(r);
    }
    let held = feed.in_flight();
    assert!(held <= 40 * MIB, "{held}");

    // A large page does not fit: 503 feed-busy with Retry-After, as problem+json.
    let r = get(&big_page).await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.headers()["content-type"], "application/problem+json");
    assert_eq!(r.headers()["retry-after"], "1");
    let p: Value = r.json().await.unwrap();
    assert_eq!(p["type"], "urn:dgsp:problem:feed-busy", "{p}");
    assert!(p["detail"].as_str().unwrap().contains("41943040"), "{p}");
    assert_eq!(feed.in_flight(), held, "the refused page holds nothing");

    // What was taken here goes back, and a small page fits in what is left and gives it
    // back once sent.
    drop(taken);
    wait_until("the taken shares back", || feed.in_flight() < 33 * MIB).await;
    let held = feed.in_flight();
    let r = get("/v1/log/entries?after=0&limit=3").await;
    assert_eq!(r.status(), StatusCode::OK);
    let small: Value = r.json().await.unwrap();
    assert_eq!(small["entries"].as_array().unwrap().len(), 3);
    wait_until("the small page's share back", || feed.in_flight() == held).await;

    // The stalled clients go away: their pages are dropped and the budget is whole again.
    drop((a, b));
    wait_until("the budget to empty", || feed.in_flight() == 0).await;
    let r = get(&big_page).await;
    assert_eq!(r.status(), StatusCode::OK);
    let page: Value = r.json().await.unwrap();
    let parts = page["entries"].as_array().unwrap();
    assert_eq!(
        parts[0]["public"]["zetas"].as_array().unwrap().len(),
        dgsp_wire::events::MAX_ZETAS_PER_ENTRY
    );
    let served: usize = parts
        .iter()
        .map(|e| e["public"]["zetas"].as_array().unwrap().len())
        .sum();
    assert!(
        served < CERTS as usize && served > 15 * MIB / 35,
        "a page of {} parts ({served} zetas) ends at the page bound",
        parts.len()
    );
    wait_until("the budget to empty", || feed.in_flight() == 0).await;
    reg.shutdown().await;
}

/// A body of `{"<field>": "AAA…"}` one byte longer than `limit` is refused: 413, naming the
/// limit.
async fn refuses_one_byte_more(reg: &Registry, path: &str, field: &str, limit: usize) {
    let (prefix, suffix) = (format!("{{\"{field}\": \""), "\"}");
    let fill = limit + 1 - prefix.len() - suffix.len();
    let (status, p) = reg
        .post_text(path, format!("{prefix}{}{suffix}", "A".repeat(fill)))
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
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
async fn each_write_route_has_a_body_limit_sized_to_what_it_carries() {
    let reg = start(
        dgsp_registry::feed::DEFAULT_BYTES_IN_FLIGHT,
        PublisherConfig::default(),
    )
    .await;
    let (status, _) = reg
        .post_text(
            "/admin/v1/members",
            json!({"username": "alice"}).to_string(),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);

    // The largest body each route carries fits its limit (and is refused for what it says,
    // not for its size); one byte more than the limit is 413 naming the limit.
    let username = "\\u0041".repeat(128);
    let join = format!("{{\"username\": \"{username}\"}}");
    assert!(join.len() <= JOIN_BODY_LIMIT);
    let (status, p) = reg.post_text("/admin/v1/members", join).await;
    assert_eq!(status, StatusCode::CREATED, "{p}");
    refuses_one_byte_more(&reg, "/admin/v1/members", "username", JOIN_BODY_LIMIT).await;

    let key = B64.encode([7u8; MAX_N]);
    let issue = json!({"cid_star": key, "wots_pks": vec![key.clone(); MAX_ISSUE]}).to_string();
    assert!(issue.len() * 2 <= ISSUE_BODY_LIMIT, "{}", issue.len());
    let (status, p) = reg
        .post_text("/admin/v1/members/0/certificates", issue)
        .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a 32-byte cid* in a 128f group: {p}"
    );
    assert_eq!(p["field"], "cid_star", "{p}");
    let path = "/admin/v1/members/0/certificates";
    refuses_one_byte_more(&reg, path, "cid_star", ISSUE_BODY_LIMIT).await;

    let open = json!({
        "message": B64.encode(vec![1u8; DEFAULT_MAX_MESSAGE]),
        "signature": B64.encode(vec![2u8; LARGEST_SIGNATURE]),
    })
    .to_string();
    let (status, p) = reg.post_text("/admin/v1/open", open).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "not a signature: {p}");
    assert_eq!(p["field"], "signature", "{p}");
    refuses_one_byte_more(&reg, "/admin/v1/open", "message", OPEN_BODY_LIMIT).await;

    refuses_one_byte_more(&reg, "/admin/v1/backup", "name", SMALL_BODY_LIMIT).await;

    // A bulk join keeps the configured limit (4 MiB by default): 10,000 long usernames fit.
    let names: Vec<String> = (0..10_000).map(|i| format!("{i:0>120}")).collect();
    let bulk = json!({ "usernames": names }).to_string();
    assert!(bulk.len() > 1 << 20);
    let (status, p) = reg.post_text("/admin/v1/members/bulk", bulk).await;
    assert_eq!(status, StatusCode::CREATED, "{p}");
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_method_of_100_kb_does_not_grow_the_metrics() {
    let reg = start(
        dgsp_registry::feed::DEFAULT_BYTES_IN_FLIGHT,
        PublisherConfig::default(),
    )
    .await;
    let metrics = || support::get_text(&reg.client, format!("{}/metrics", reg.url));
    let before = metrics().await;
    let addr = reg.url.trim_start_matches("http://").to_owned();
    for letter in ["X", "Y"] {
        let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let request = format!(
            "{} /v1/group HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
            letter.repeat(100 * 1024)
        );
        tcp.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut tcp, &mut answer).await;
        assert!(answer.starts_with(b"HTTP/1.1 405"));
    }
    let after = metrics().await;
    assert!(
        after.contains("method=\"OTHER\",route=\"/v1/group\",status=\"405\"} 2"),
        "{after}"
    );
    assert!(!after.contains("XXXX"));
    assert!(after.len() < before.len() + 2_000, "{}", after.len());
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_ready_once_the_newest_note_is_older_than_twice_the_cadence() {
    let clock = OffsetClock::new(0);
    let hour = Duration::from_secs(3600);
    let reg = start(
        dgsp_registry::feed::DEFAULT_BYTES_IN_FLIGHT,
        PublisherConfig {
            checkpoint_interval: hour,
            clock: clock.clone(),
            ..PublisherConfig::default()
        },
    )
    .await;
    // Ready from the start; the first note is signed at once.
    let signed = |_, body: &str| body.contains("checkpoint of");
    support::wait_readyz_until(&reg.client, &reg.url, polls(500, 20), "a note", signed).await;
    let (status, text) = reg.readyz().await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(text.contains("checkpoint of"), "{text}");

    // Two hours and a minute later by the registry's clock, with nothing signed since (the
    // cadence is an hour and nothing is written): a publisher that stopped signing.
    clock.set_offset_ms(2 * 3600 * 1000 + 60_000);
    let (status, text) = reg.readyz().await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{text}");
    let p: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(p["type"], "urn:dgsp:problem:checkpoint-overdue", "{p}");
    assert!(p["detail"].as_str().unwrap().contains("3600 s"), "{p}");

    // Just under twice the cadence is still ready.
    clock.set_offset_ms(2 * 3600 * 1000 - 60_000);
    assert_eq!(reg.readyz().await.0, StatusCode::OK);
    clock.set_offset_ms(0);
    assert_eq!(reg.readyz().await.0, StatusCode::OK);
    reg.shutdown().await;
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// Runs the registry binary under `umask 022`, as most service managers and shells leave it.
fn run_with_umask_022(args: &[&str]) {
    support::succeeds(
        Process::new("sh")
            .args(["-c", "umask 022 && exec \"$@\"", "sh", support::BIN])
            .args(args)
            .env("DGSP_KEY_PASSPHRASE", "bounds test passphrase")
            .env("RUST_LOG", "warn"),
    );
}

#[test]
fn data_and_backup_directories_are_created_0700_under_umask_022() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("srv/registry");
    let data_arg = data.to_str().unwrap();
    run_with_umask_022(&["init", "--params", "sha2-128f", "--data", data_arg]);
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&tmp.path().join("srv")), 0o700);
    // RocksDB's own files follow the umask: the directory above them is what keeps them
    // private.
    let db_file = std::fs::read_dir(data.join("db"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("MANIFEST")
        })
        .unwrap();
    assert_eq!(mode(&db_file) & 0o044, 0o044, "{}", db_file.display());

    let backup = tmp.path().join("backups/nightly/b1");
    run_with_umask_022(&[
        "backup",
        "--data",
        data_arg,
        "--to",
        backup.to_str().unwrap(),
    ]);
    for p in [
        tmp.path().join("backups"),
        backup.parent().unwrap().into(),
        backup,
    ] {
        assert_eq!(mode(&p), 0o700, "{}", p.display());
    }
}
