//! The witness server over real HTTP on loopback: our own `Submitter` (as the registry uses
//! it against omniwitness and litewitness) talks to it, and raw requests check the statuses,
//! headers and limits the router adds.

mod support;

use std::sync::Arc;
use std::time::Duration;

use dgsp_wire::merkle::{consistency_proof, leaf_hash, root};
use dgsp_wire::note::{
    verify_signature_line, witnessed_note, CheckpointBody, MlDsaCosigner, SignatureLine, Vkey,
};
use dgsp_witness::protocol::{AddCheckpoint, MAX_REQUEST_BODY};
use dgsp_witness::server::{
    router, system_clock, KnownLogs, MemoryStore, Witness, BAD_TRUSTED_SIGNATURE, OTHER_ROOT,
};
use dgsp_witness::{SubmitError, Submitter, WitnessClient};
use support::now;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ORIGIN: &str = "dgsp/00112233445566778899aabbccddeeff";

fn leaves(n: u64, tag: u8) -> Vec<[u8; 32]> {
    (0..n).map(|i| leaf_hash(&[tag, i as u8])).collect()
}

struct Server {
    /// The submission prefix, `http://127.0.0.1:PORT/witness`.
    prefix: String,
    addr: std::net::SocketAddr,
    log: MlDsaCosigner,
    witness_vkey: Vkey,
}

impl Server {
    async fn start() -> Server {
        let log = MlDsaCosigner::from_seed(ORIGIN, &[1; 32]).unwrap();
        let mut logs = KnownLogs::new();
        logs.add(log.verifier().clone()).unwrap();
        let key = MlDsaCosigner::from_seed("gw.example/witness", &[2; 32]).unwrap();
        let witness_vkey = key.verifier().clone();
        let witness = Arc::new(Witness::new(
            key,
            logs,
            Arc::new(MemoryStore::new()),
            system_clock(),
        ));
        let app = axum::Router::new().nest("/witness", router(witness));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Server {
            prefix: format!("http://{addr}/witness"),
            addr,
            log,
            witness_vkey,
        }
    }

    fn note(&self, size: u64, root: &[u8; 32]) -> String {
        let line = self.log.cosign(ORIGIN, size, root, now()).unwrap();
        witnessed_note(ORIGIN, size, root, &line, &[])
    }

    fn submitter(&self) -> Submitter {
        Submitter::new(
            WitnessClient::new(
                "gw",
                &self.prefix,
                reqwest::Client::new(),
                Duration::from_secs(10),
            )
            .unwrap(),
        )
    }

    fn check(&self, lines: &[String], size: u64, root: &[u8; 32]) {
        assert_eq!(lines.len(), 1);
        let line = SignatureLine::parse(&lines[0]).unwrap();
        let cp = CheckpointBody::plain(ORIGIN, size, *root);
        let ts = verify_signature_line(&self.witness_vkey, &cp, &line).unwrap();
        assert!(ts != 0 && ts.abs_diff(now()) < 60, "{ts}");
    }

    async fn raw(&self, request: &[u8]) -> String {
        let mut s = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        s.write_all(request).await.unwrap();
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
        String::from_utf8_lossy(&out).into_owned()
    }
}

fn proof_fn(l: &[[u8; 32]]) -> impl Fn(u64) -> Result<Vec<[u8; 32]>, String> + '_ {
    move |old| Ok(consistency_proof(old, l))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_submitter_resynchronises_through_409_as_with_the_real_witnesses() {
    let srv = Server::start().await;
    let l = leaves(12, 0);

    // A fresh submitter: old 0 → 200.
    let mut a = srv.submitter();
    let r3 = root(&l[..3]);
    let lines = a
        .cosign(3, &srv.note(3, &r3), proof_fn(&l[..3]))
        .await
        .unwrap();
    srv.check(&lines, 3, &r3);
    assert_eq!(a.size(), 3);

    // Another fresh submitter for size 7: old 0 → 409 "3" → retry with the proof from 3 → 200.
    let mut b = srv.submitter();
    let r7 = root(&l[..7]);
    let lines = b
        .cosign(7, &srv.note(7, &r7), proof_fn(&l[..7]))
        .await
        .unwrap();
    srv.check(&lines, 7, &r7);
    assert_eq!(b.size(), 7);

    // `a` still believes 3: 409 "7" → retry from 7 with no proof (same size: cadence) → 200.
    let lines = a
        .cosign(7, &srv.note(7, &r7), proof_fn(&l[..7]))
        .await
        .unwrap();
    srv.check(&lines, 7, &r7);

    // A fresh submitter with a smaller tree learns the witness is ahead.
    let mut c = srv.submitter();
    let r5 = root(&l[..5]);
    let e = c
        .cosign(5, &srv.note(5, &r5), proof_fn(&l[..5]))
        .await
        .unwrap_err();
    assert_eq!(e, SubmitError::WitnessAhead { size: 7 });

    // Another root at size 7 (a split view): 422, with the body.
    let fork = [&l[..6], &leaves(1, 9)[..]].concat();
    let e = b
        .cosign(7, &srv.note(7, &root(&fork)), proof_fn(&fork))
        .await
        .unwrap_err();
    assert_eq!(e, SubmitError::Unprocessable(OTHER_ROOT.into()));

    // An unknown origin: 404 (omniwitness: 500); a bad log signature: 403 (omniwitness: 500).
    let stranger = MlDsaCosigner::from_seed("other.example/log", &[3; 32]).unwrap();
    let note = witnessed_note(
        "other.example/log",
        1,
        &[1; 32],
        &stranger
            .cosign("other.example/log", 1, &[1; 32], now())
            .unwrap(),
        &[],
    );
    let e = srv.submitter().cosign(1, &note, |_| Ok(vec![])).await;
    assert_eq!(e, Err(SubmitError::NotFound("unknown origin".into())));
    let wrong = srv.log.cosign(ORIGIN, 12, &[1; 32], now()).unwrap();
    let note = witnessed_note(ORIGIN, 12, &root(&l), &wrong, &[]);
    let e = b.cosign(12, &note, proof_fn(&l)).await;
    assert_eq!(e, Err(SubmitError::Forbidden(BAD_TRUSTED_SIGNATURE.into())));

    // Growth continues from 7.
    let r12 = root(&l);
    let lines = b
        .cosign(12, &srv.note(12, &r12), proof_fn(&l))
        .await
        .unwrap();
    srv.check(&lines, 12, &r12);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statuses_headers_and_limits_over_http() {
    let srv = Server::start().await;
    let http = reqwest::Client::new();
    let url = format!("{}/add-checkpoint", srv.prefix);
    let l = leaves(4, 0);
    let r = root(&l);
    let body = |old: u64, size: u64| {
        AddCheckpoint {
            old,
            proof: vec![],
            checkpoint: srv.note(size, &root(&l[..size as usize])),
        }
        .encode()
    };
    let resp = http.post(&url).body(body(0, 4)).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
    let text = resp.text().await.unwrap();
    srv.check(&[text.trim_end().to_owned()], 4, &r);

    let resp = http.post(&url).body(body(0, 4)).send().await.unwrap();
    assert_eq!(resp.status(), 409);
    assert_eq!(resp.headers()["content-type"], "text/x.tlog.size");
    assert_eq!(resp.text().await.unwrap(), "4\n");

    let resp = http.post(&url).body(body(4, 3)).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(
        resp.text().await.unwrap(),
        "old size 4 is larger than the checkpoint's size 3\n"
    );

    // Over 16 KiB: 413, with Content-Length and chunked alike.
    let big = vec![b'a'; MAX_REQUEST_BODY + 1];
    let resp = http.post(&url).body(big).send().await.unwrap();
    assert_eq!(resp.status(), 413);
    assert_eq!(
        resp.text().await.unwrap(),
        "request body over 16384 bytes\n"
    );
    let mut chunked =
        b"POST /witness/add-checkpoint HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            .to_vec();
    for _ in 0..5 {
        chunked.extend_from_slice(b"1000\r\n");
        chunked.extend_from_slice(&[b'a'; 0x1000]);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let answer = srv.raw(&chunked).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.ends_with("request body over 16384 bytes\n"),
        "{answer}"
    );
    // Exactly 16 KiB is read (and judged: here a malformed request).
    let resp = http
        .post(&url)
        .body(vec![b'a'; MAX_REQUEST_BODY])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);

    // Other methods and paths.
    assert_eq!(http.get(&url).send().await.unwrap().status(), 405);
    let other = format!("http://{}/add-checkpoint", srv.addr);
    assert_eq!(http.post(&other).send().await.unwrap().status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_requests_for_two_roots_one_wins() {
    let srv = Arc::new(Server::start().await);
    let a = leaves(10, 0);
    let b = [&a[..4], &leaves(6, 1)[..]].concat();
    let first = AddCheckpoint {
        old: 0,
        proof: vec![],
        checkpoint: srv.note(4, &root(&a[..4])),
    };
    let http = reqwest::Client::new();
    let url = format!("{}/add-checkpoint", srv.prefix);
    let resp = http.post(&url).body(first.encode()).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let bodies: Vec<String> = [&a, &b]
        .iter()
        .map(|l| {
            AddCheckpoint {
                old: 4,
                proof: consistency_proof(4, l),
                checkpoint: srv.note(10, &root(l)),
            }
            .encode()
        })
        .collect();
    let mut tasks = Vec::new();
    for i in 0..50 {
        let (http, url, body) = (http.clone(), url.clone(), bodies[i % 2].clone());
        tasks.push(tokio::spawn(async move {
            let resp = http.post(&url).body(body).send().await.unwrap();
            let status = resp.status().as_u16();
            (i % 2, status, resp.text().await.unwrap())
        }));
    }
    let mut won = Vec::new();
    for t in tasks {
        let (which, status, text) = t.await.unwrap();
        match status {
            200 => won.push((which, text)),
            409 => assert_eq!(text, "10\n"),
            other => panic!("{other}: {text}"),
        }
    }
    assert_eq!(won.len(), 1, "{won:?}");
    let (which, text) = &won[0];
    let winner = if *which == 0 { root(&a) } else { root(&b) };
    srv.check(&[text.trim_end().to_owned()], 10, &winner);
    // The loser's root is refused from now on.
    let loser = &bodies[1 - which];
    let resp = http.post(&url).body(loser.clone()).send().await.unwrap();
    assert_eq!(resp.status(), 409);
    let loser_same_size = AddCheckpoint {
        old: 10,
        proof: vec![],
        checkpoint: srv.note(10, &if *which == 0 { root(&b) } else { root(&a) }),
    };
    let resp = http
        .post(&url)
        .body(loser_same_size.encode())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 422);
}
