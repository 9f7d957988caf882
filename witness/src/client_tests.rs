//! The client and the submitter against a mock witness (wiremock).

use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;

const NOTE: &str =
    "example.com/log\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— example.com/log AAAA\n";

fn line(name: &str) -> String {
    format!("— {name} {}", STANDARD.encode([9u8; 76]))
}

fn client(server: &MockServer, timeout: Duration) -> WitnessClient {
    WitnessClient::new(
        "w",
        &format!("{}/prefix/", server.uri()),
        reqwest::Client::new(),
        timeout,
    )
    .unwrap()
}

fn req(old: u64) -> AddCheckpoint {
    AddCheckpoint {
        old,
        proof: Vec::new(),
        checkpoint: NOTE.into(),
    }
}

/// The proof "from `old`": one hash of `old`'s low byte, so the request shows which.
fn proof(old: u64) -> Result<Vec<[u8; 32]>, String> {
    Ok(vec![[old as u8; 32]])
}

async fn answer(template: ResponseTemplate) -> (MockServer, Result<Vec<String>, SubmitError>) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/prefix/add-checkpoint"))
        .respond_with(template)
        .mount(&server)
        .await;
    let r = client(&server, Duration::from_secs(5))
        .add_checkpoint(&req(0))
        .await;
    (server, r)
}

#[tokio::test]
async fn ok_with_two_lines() {
    let body = format!("{}\n{}\n", line("a.example/w"), line("a.example/w2"));
    let (server, r) = answer(ResponseTemplate::new(200).set_body_string(body)).await;
    assert_eq!(r, Ok(vec![line("a.example/w"), line("a.example/w2")]));
    let sent = server.received_requests().await.unwrap();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].body, req(0).encode().into_bytes());
}

#[tokio::test]
async fn statuses_map_to_errors() {
    let cases: [(u16, &str, SubmitError); 6] = [
        (
            400,
            "old > size",
            SubmitError::BadRequest("old > size".into()),
        ),
        (
            403,
            "invalid signature",
            SubmitError::Forbidden("invalid signature".into()),
        ),
        (
            404,
            "unknown log",
            SubmitError::NotFound("unknown log".into()),
        ),
        (
            422,
            "bad proof\n",
            SubmitError::Unprocessable("bad proof".into()),
        ),
        (
            500,
            "sql: no rows",
            SubmitError::Server {
                status: 500,
                body: "sql: no rows".into(),
            },
        ),
        (
            503,
            "",
            SubmitError::Server {
                status: 503,
                body: String::new(),
            },
        ),
    ];
    for (status, body, want) in cases {
        let (_server, r) = answer(ResponseTemplate::new(status).set_body_string(body)).await;
        assert_eq!(r, Err(want), "{status}");
    }
    let (_s, r) = answer(ResponseTemplate::new(302)).await;
    assert!(matches!(r, Err(SubmitError::BadAnswer(_))), "{r:?}");
    // A long error body is cut at MAX_ERROR_BODY.
    let (_s, r) = answer(ResponseTemplate::new(500).set_body_string("x".repeat(100_000))).await;
    let Err(SubmitError::Server { body, .. }) = r else {
        panic!("{r:?}")
    };
    assert_eq!(body.len(), MAX_ERROR_BODY);
}

#[tokio::test]
async fn conflict_and_bad_answers() {
    let (_s, r) = answer(ResponseTemplate::new(409).set_body_raw("7\n", "text/x.tlog.size")).await;
    assert_eq!(r, Err(SubmitError::Conflict { size: 7 }));
    let (_s, r) = answer(ResponseTemplate::new(409).set_body_string("seven\n")).await;
    assert!(matches!(r, Err(SubmitError::BadAnswer(_))), "{r:?}");
    let (_s, r) = answer(ResponseTemplate::new(200).set_body_string("")).await;
    assert!(matches!(r, Err(SubmitError::BadAnswer(_))), "{r:?}");
    let (_s, r) = answer(ResponseTemplate::new(200).set_body_string("— w AAAA\n")).await;
    assert!(matches!(r, Err(SubmitError::BadAnswer(_))), "{r:?}");
}

#[tokio::test]
async fn oversized_answer_is_not_read() {
    let huge = format!("{}\n", line("w")).repeat(20_000); // ≈ 2.3 MB
    let t = Instant::now();
    let (_s, r) = answer(ResponseTemplate::new(200).set_body_string(huge)).await;
    assert!(
        matches!(&r, Err(SubmitError::BadAnswer(e)) if e.contains("over")),
        "{r:?}"
    );
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn slow_witness_times_out() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(10)))
        .mount(&server)
        .await;
    let t = Instant::now();
    let r = client(&server, Duration::from_millis(300))
        .add_checkpoint(&req(0))
        .await;
    assert_eq!(r, Err(SubmitError::Timeout));
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

#[tokio::test]
async fn refused_connection_is_transport() {
    // (wiremock keeps a dropped server running for its pool: a port closed by hand instead.)
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let c = WitnessClient::new(
        "w",
        &format!("http://127.0.0.1:{port}"),
        reqwest::Client::new(),
        Duration::from_secs(5),
    )
    .unwrap();
    let r = c.add_checkpoint(&req(0)).await;
    assert!(matches!(r, Err(SubmitError::Transport(_))), "{r:?}");
}

#[test]
fn prefixes() {
    let c = |p: &str| WitnessClient::new("w", p, reqwest::Client::new(), Duration::from_secs(1));
    assert_eq!(
        c("https://w.example/a/").unwrap().endpoint().as_str(),
        "https://w.example/a/add-checkpoint"
    );
    assert_eq!(
        c("http://127.0.0.1:1").unwrap().endpoint().as_str(),
        "http://127.0.0.1:1/add-checkpoint"
    );
    assert!(c("ftp://w.example").is_err());
    assert!(c("not a url").is_err());
    assert!(c("https://w.example/?q=1").is_err());
}

#[tokio::test]
async fn submitter_retries_once_from_the_witness_size() {
    let server = MockServer::start().await;
    Mock::given(body_string_contains("old 0\n"))
        .respond_with(ResponseTemplate::new(409).set_body_raw("3\n", "text/x.tlog.size"))
        .mount(&server)
        .await;
    Mock::given(body_string_contains("old 3\n"))
        .respond_with(ResponseTemplate::new(200).set_body_string(format!("{}\n", line("w"))))
        .mount(&server)
        .await;
    Mock::given(body_string_contains("old 5\n"))
        .respond_with(ResponseTemplate::new(200).set_body_string(format!("{}\n", line("w"))))
        .mount(&server)
        .await;
    let mut s = Submitter::new(client(&server, Duration::from_secs(5)));
    assert_eq!(s.size(), 0);
    assert_eq!(s.cosign(5, NOTE, proof).await, Ok(vec![line("w")]));
    assert_eq!(s.size(), 5);
    let sent = server.received_requests().await.unwrap();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].body, req(0).encode().into_bytes());
    let retry = AddCheckpoint {
        old: 3,
        proof: vec![[3; 32]],
        checkpoint: NOTE.into(),
    };
    assert_eq!(sent[1].body, retry.encode().into_bytes());
    let st = s.status();
    assert_eq!(
        (st.consecutive_failures, st.last_error.as_deref()),
        (0, None)
    );
    assert!(st.last_success_unix.is_some());
    // The same size again (cadence): old 5, no proof, one request.
    assert!(s.cosign(5, NOTE, proof).await.is_ok());
    let sent = server.received_requests().await.unwrap();
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[2].body, req(5).encode().into_bytes());
}

#[tokio::test]
async fn submitter_witness_ahead_and_second_conflict() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(409).set_body_raw("9\n", "text/x.tlog.size"))
        .mount(&server)
        .await;
    let mut s = Submitter::new(client(&server, Duration::from_secs(5)));
    assert_eq!(
        s.cosign(5, NOTE, proof).await,
        Err(SubmitError::WitnessAhead { size: 9 })
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
    // Known ahead now: refused without a request.
    assert_eq!(
        s.cosign(5, NOTE, proof).await,
        Err(SubmitError::WitnessAhead { size: 9 })
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
    assert_eq!(s.status().consecutive_failures, 2);
    assert!(s.status().last_error.as_deref().unwrap().contains("size 9"));

    // A witness that answers 409 twice: two requests, then the conflict.
    let server = MockServer::start().await;
    Mock::given(body_string_contains("old 0\n"))
        .respond_with(ResponseTemplate::new(409).set_body_raw("2\n", "text/x.tlog.size"))
        .mount(&server)
        .await;
    Mock::given(body_string_contains("old 2\n"))
        .respond_with(ResponseTemplate::new(409).set_body_raw("4\n", "text/x.tlog.size"))
        .mount(&server)
        .await;
    let mut s = Submitter::new(client(&server, Duration::from_secs(5)));
    assert_eq!(
        s.cosign(5, NOTE, proof).await,
        Err(SubmitError::Conflict { size: 4 })
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn submitter_proof_failure_and_witness_errors() {
    let server = MockServer::start().await;
    Mock::given(body_string_contains("old 0\n"))
        .respond_with(ResponseTemplate::new(409).set_body_raw("3\n", "text/x.tlog.size"))
        .mount(&server)
        .await;
    let mut s = Submitter::new(client(&server, Duration::from_secs(5)));
    let r = s.cosign(5, NOTE, |_| Err("pruned".to_string())).await;
    assert_eq!(
        r,
        Err(SubmitError::Proof {
            old: 3,
            why: "pruned".into()
        })
    );
    let r = s.cosign(5, NOTE, |_| Ok(vec![[0; 32]; 64])).await;
    assert!(matches!(r, Err(SubmitError::Proof { old: 3, .. })), "{r:?}");
    assert_eq!(s.status().consecutive_failures, 2);

    let (server, _) = answer(ResponseTemplate::new(422).set_body_string("bad proof")).await;
    let mut s = Submitter::new(client(&server, Duration::from_secs(5)));
    assert_eq!(
        s.cosign(5, NOTE, proof).await,
        Err(SubmitError::Unprocessable("bad proof".into()))
    );
    assert_eq!(s.size(), 0);
    let json = serde_json::to_string(s.status()).unwrap();
    assert!(json.contains("\"consecutive_failures\":1"), "{json}");
}

/// A checkpoint note of `example.com/log` at size 5 (its log line is not checked here).
const SIGNED_NOTE: &str = "example.com/log\n5\nBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQ=\n\n— example.com/log AAAAAAAAAAAAAA==\n";

/// The submitter with the key of `w`, against a witness answering `body` to everything.
async fn judged(
    w: &dgsp_wire::note::MlDsaCosigner,
    body: String,
) -> (Submitter, Result<Vec<String>, SubmitError>) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string(body))
        .mount(&server)
        .await;
    let mut s = Submitter::with_key(
        client(&server, Duration::from_secs(5)),
        w.verifier().clone(),
    );
    let r = s.cosign(5, SIGNED_NOTE, proof).await;
    (s, r)
}

#[tokio::test]
async fn a_submitter_with_the_key_keeps_only_its_witness_line_that_verifies() {
    let w = dgsp_wire::note::MlDsaCosigner::from_seed("w.example", &[1; 32]).unwrap();
    let other = dgsp_wire::note::MlDsaCosigner::from_seed("other.example", &[2; 32]).unwrap();
    let root = [4u8; 32];
    let mine = w
        .cosign("example.com/log", 5, &root, 1_700_000_000)
        .unwrap();
    let newer = w
        .cosign("example.com/log", 5, &root, 1_700_000_001)
        .unwrap();
    let theirs = other
        .cosign("example.com/log", 5, &root, 1_700_000_000)
        .unwrap();
    let strip = |l: &str| l.trim_end_matches('\n').to_owned();

    // Its own lines among others': the newest of its own, alone.
    let (s, r) = judged(&w, format!("{theirs}{mine}{}\n{newer}", line("x"))).await;
    assert_eq!(r, Ok(vec![strip(&newer)]));
    assert_eq!(s.size(), 5);

    // Another witness's valid line, or junk, is no answer of this witness's.
    let (s, r) = judged(&w, theirs.clone()).await;
    assert!(
        matches!(&r, Err(SubmitError::BadAnswer(why)) if why.contains("no cosignature line under its key w.example+")),
        "{r:?}"
    );
    assert_eq!(s.size(), 0, "a bad answer is not a cosignature");
    assert_eq!(s.status().consecutive_failures, 1);
    assert!(s
        .status()
        .last_error
        .as_deref()
        .unwrap()
        .starts_with("bad answer: "));
    let junk: String = (0..16)
        .map(|i| format!("— junk{i} {}\n", STANDARD.encode(vec![i as u8; 2200])))
        .collect();
    assert!(junk.len() > 45_000);
    let (_, r) = judged(&w, junk).await;
    assert!(matches!(r, Err(SubmitError::BadAnswer(_))), "{r:?}");

    // A line under its name and key id that does not verify (a zero signature, or a
    // signature over another tree) fails the witness, even beside a good one.
    let mut blob = w.verifier().key_id.to_vec();
    blob.extend_from_slice(&[0u8; 8 + 2420]);
    let zero = format!("— w.example {}\n", STANDARD.encode(&blob));
    for body in [zero.clone(), format!("{mine}{zero}")] {
        let (_, r) = judged(&w, body).await;
        assert!(
            matches!(&r, Err(SubmitError::BadAnswer(why)) if why.contains("does not verify")),
            "{r:?}"
        );
    }
    let other_tree = w
        .cosign("example.com/log", 6, &root, 1_700_000_000)
        .unwrap();
    let (_, r) = judged(&w, other_tree).await;
    assert!(matches!(r, Err(SubmitError::BadAnswer(_))), "{r:?}");

    // Without the key, the lines come back as given (the caller judges them).
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string(theirs.clone()))
        .mount(&server)
        .await;
    let mut s = Submitter::new(client(&server, Duration::from_secs(5)));
    assert_eq!(
        s.cosign(5, SIGNED_NOTE, proof).await,
        Ok(vec![strip(&theirs)])
    );

    // A note that is not a checkpoint is the caller's error, not the witness's.
    let (mut s, _) = judged(&w, mine.clone()).await;
    let r = s.cosign(5, "not a note", proof).await;
    assert!(matches!(r, Err(SubmitError::Note(_))), "{r:?}");
}

#[tokio::test]
async fn a_refused_cosignature_is_the_witness_failure() {
    let w = dgsp_wire::note::MlDsaCosigner::from_seed("w.example", &[1; 32]).unwrap();
    let mine = w.cosign("example.com/log", 5, &[4; 32], 1).unwrap();
    let (mut s, r) = judged(&w, mine).await;
    assert!(r.is_ok());
    assert!(s.status().last_success_unix.is_some());
    s.refuse("dated 60 s ahead".into());
    let st = s.status();
    assert_eq!(st.last_error.as_deref(), Some("dated 60 s ahead"));
    assert_eq!(st.consecutive_failures, 1);
    // A refused answer is no success: the last success is the one before it (none), and
    // the size it cosigned stays (the witness holds it).
    assert_eq!(st.last_success_unix, None);
    assert_eq!(st.size, 5);
    // Refused twice with no answer between: both count.
    let again = w.cosign("example.com/log", 5, &[4; 32], 2).unwrap();
    let (mut s2, _) = judged(&w, again).await;
    s2.refuse("first".into());
    s2.refuse("second, with no answer between".into());
    assert_eq!(s2.status().consecutive_failures, 2);
}
