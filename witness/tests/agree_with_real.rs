//! Our witness server and the real witnesses (omniwitness, litewitness, started by
//! `scripts/witnesses.sh`) answer the same requests: the same statuses, except where the
//! real ones deviate from c2sp.org/tlog-witness (recorded below, as measured).
//! `DGSP_SKIP_WITNESSES=1` skips, saying so.

mod support;

use std::sync::Arc;

use dgsp_wire::merkle::{consistency_proof, empty_root, leaf_hash, root};
use dgsp_wire::note::{witnessed_note, CheckpointBody, MlDsaCosigner};
use dgsp_witness::protocol::{AddCheckpoint, MAX_REQUEST_BODY};
use dgsp_witness::server::{router, system_clock, KnownLogs, MemoryStore, Witness};
use dgsp_witness::test_server::TestWitnesses;
use support::{now, Log};

fn req(old: u64, proof: Vec<[u8; 32]>, note: &str) -> Vec<u8> {
    AddCheckpoint {
        old,
        proof,
        checkpoint: note.into(),
    }
    .encode()
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_witness_and_the_real_ones_agree_on_statuses() {
    let main = Log::unique("main");
    let fresh1 = Log::unique("fresh1");
    let fresh2 = Log::unique("fresh2");
    let stranger = Log::unique("stranger");
    let vkeys = [main.key.vkey(), fresh1.key.vkey(), fresh2.key.vkey()];
    let vkey_refs: Vec<&str> = vkeys.iter().map(String::as_str).collect();
    let Some(w) = TestWitnesses::start("our_witness_and_the_real_ones_agree", &vkey_refs) else {
        return;
    };

    let mut logs = KnownLogs::new();
    for l in [&main, &fresh1, &fresh2] {
        logs.add(l.key.verifier().clone()).unwrap();
    }
    let ours = Arc::new(Witness::new(
        MlDsaCosigner::from_seed("gw.example/witness", &[2; 32]).unwrap(),
        logs,
        Arc::new(MemoryStore::new()),
        system_clock(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ours_url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router(ours)).await.unwrap() });

    let l: Vec<[u8; 32]> = (0..8u8).map(|i| leaf_hash(&[b'a', i])).collect();
    let r = |n: usize| root(&l[..n]);
    let fork = [&l[..2], &[leaf_hash(b"fork")][..]].concat();
    let note3 = main.note(3, &r(3));
    let mut bad_sig = main.note(5, &r(5));
    bad_sig = bad_sig.replace(
        &bad_sig[bad_sig.len() - 20..bad_sig.len() - 1],
        "AAAAAAAAAAAAAAAAAAA",
    );
    let mut with_ext = CheckpointBody::plain(&main.origin, 6, r(6));
    with_ext.extensions.push("time 5".into());
    let ext_note = format!(
        "{}\n{}",
        with_ext.to_body(),
        main.key.cosign(&main.origin, 6, &r(6), now()).unwrap()
    );

    // (case, body, ours, omniwitness, litewitness): the statuses, the real witnesses' as
    // measured (omniwitness 2e1c6971d19e, litewitness v0.10.0). Where they differ from ours,
    // ours is the spec's: both Go witnesses accept `old 03` (the spec: "no leading zeroes");
    // omniwitness answers 500 for a bad or missing trusted signature and an unknown origin
    // (spec: 403, 404), cosigns a first checkpoint whatever the old size (spec: 409) and
    // refuses an oversized body with 400 (we: 413) and cosigns an ML-DSA-44 log signature
    // over a checkpoint with extension lines, which we and litewitness refuse with 403
    // (ML-DSA-44 does not sign them, nor does our cosignature; the spec allows them);
    // litewitness answers 403 for size 0 with a non-empty-tree root (spec: 422),
    // cosigns with a non-empty proof from old 0 (spec: 422), and answers 500 over its 10 KiB
    // limit.
    let cases: Vec<(&str, Vec<u8>, u16, u16, u16)> = vec![
        ("first, old 0", req(0, vec![], &note3), 200, 200, 200),
        ("old 0 again (409 3)", req(0, vec![], &note3), 409, 409, 409),
        (
            "cadence: same size and root",
            req(3, vec![], &note3),
            200,
            200,
            200,
        ),
        (
            "old > size",
            req(4, vec![], &main.note(3, &r(3))),
            400,
            400,
            400,
        ),
        (
            "old not canonical",
            format!("old 03\n\n{note3}").into_bytes(),
            400,
            200,
            200,
        ),
        (
            "proof line not base64",
            format!("old 3\n!!!!\n\n{note3}").into_bytes(),
            400,
            400,
            400,
        ),
        ("no blank line", b"old 3\n".to_vec(), 400, 400, 400),
        (
            "bad proof",
            req(3, vec![[1; 32]], &main.note(5, &r(5))),
            422,
            422,
            422,
        ),
        (
            "same size, other root",
            req(3, vec![], &main.note(3, &root(&fork))),
            422,
            422,
            422,
        ),
        (
            "a trusted key's signature fails",
            req(3, consistency_proof(3, &l[..5]), &bad_sig),
            403,
            500,
            403,
        ),
        (
            "only an untrusted key's signature",
            req(0, vec![], &{
                let line = stranger.key.cosign(&main.origin, 3, &r(3), now()).unwrap();
                witnessed_note(&main.origin, 3, &r(3), &line, &[])
            }),
            403,
            500,
            403,
        ),
        (
            "unknown origin",
            req(0, vec![], &stranger.note(1, &r(1))),
            404,
            500,
            404,
        ),
        (
            "ML-DSA-44 log signature with an extension line",
            req(3, consistency_proof(3, &l[..6]), &ext_note),
            403,
            200,
            403,
        ),
        (
            "size 0, not the empty root",
            req(0, vec![], &fresh1.note(0, &[7; 32])),
            422,
            422,
            403,
        ),
        (
            "size 0, empty root",
            req(0, vec![], &fresh1.note(0, &empty_root())),
            200,
            200,
            200,
        ),
        (
            "non-empty proof from old 0",
            req(0, vec![[1; 32]], &fresh1.note(4, &r(4))),
            422,
            422,
            200,
        ),
        (
            "old 2 on a log never cosigned",
            req(2, consistency_proof(2, &l[..4]), &fresh2.note(4, &r(4))),
            409,
            200,
            409,
        ),
        (
            "over 16 KiB",
            {
                let mut b = b"old 0\n\n".to_vec();
                b.resize(MAX_REQUEST_BODY + 100, b'a');
                b
            },
            413,
            400,
            500,
        ),
    ];

    let http = reqwest::Client::new();
    let targets = [
        ("ours", ours_url.as_str()),
        ("omniwitness", w.omni_url.as_str()),
        ("litewitness", w.lite_url.as_str()),
    ];
    let mut mismatches = Vec::new();
    eprintln!("{:<48} {:>5} {:>5} {:>5}", "case", "ours", "omni", "lite");
    for (case, body, want_ours, want_omni, want_lite) in &cases {
        let mut got = Vec::new();
        for (name, base) in &targets {
            let resp = http
                .post(format!("{base}/add-checkpoint"))
                .body(body.clone())
                .send()
                .await
                .unwrap_or_else(|e| panic!("{name}: {case}: {e}"));
            let status = resp.status().as_u16();
            let text = resp.text().await.unwrap_or_default();
            got.push((status, text));
        }
        eprintln!("{case:<48} {:>5} {:>5} {:>5}", got[0].0, got[1].0, got[2].0);
        for ((name, _), ((status, text), want)) in targets
            .iter()
            .zip(got.iter().zip([want_ours, want_omni, want_lite]))
        {
            if status != want {
                mismatches.push(format!(
                    "{case}: {name} answered {status} {text:?}, expected {want}"
                ));
            }
        }
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}
