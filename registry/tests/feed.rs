//! Feed pages are bounded by bytes as well as by entry count: with `member_revoked` entries
//! of ~9 MB each, a page of `limit=1000` stops at 16 MiB, still holds at least one entry,
//! and paging by the last seq received covers the whole chain exactly once.

use crate::support;

use std::sync::Arc;

use dgsp_core::{Manager, ParamSet};
use dgsp_registry::feed::{self, MAX_PAGE_BYTES};
use dgsp_registry::store::Store;
use dgsp_registry::writer::Command;
use dgsp_wire::log::{Entry, GENESIS_PREV};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::Registry;

const ADMIN: &str = "admin-token-for-tests";
/// Certificates per revoked member: its revocation lists as many zetas (in parts of at most
/// `MAX_ZETAS_PER_ENTRY`), 35 bytes each (~12.6 MB), so the pages reach their byte bound.
const CERTS: u64 = 360_000;
const REVOKED_MEMBERS: u64 = 3;

/// Fetches one page; returns its entries, `head_seq` and body size.
async fn fetch(
    client: &reqwest::Client,
    url: &str,
    after: u64,
    token: Option<&str>,
) -> (Vec<Entry>, u64, usize) {
    let mut req = client.get(format!("{url}/v1/log/entries?after={after}&limit=1000"));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let r = req.send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "application/json");
    let body = r.bytes().await.unwrap();
    let v: Value = serde_json::from_slice(&body).unwrap();
    let entries: Vec<Entry> = serde_json::from_value(v["entries"].clone()).unwrap();
    (entries, v["head_seq"].as_u64().unwrap(), body.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_stop_at_16_mib_and_paging_covers_the_whole_log() {
    let reg = Registry::start(7, support::config(ADMIN)).await;
    let (url, client, store, running) = (&reg.url, &reg.client, &reg.store, &reg.running);

    // Members with many certificates (counters reserved through the writer: signing them
    // would only slow the test), then revoked over HTTP: large `member_revoked` entries,
    // with small entries between them.
    for m in 0..REVOKED_MEMBERS + 1 {
        let r = client
            .post(format!("{url}/admin/v1/members"))
            .bearer_auth(ADMIN)
            .json(&json!({ "username": format!("m{m}") }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    for id in 0..REVOKED_MEMBERS {
        support::reserve_certificates(&running.state.writer, id, CERTS).await;
        let r = client
            .post(format!("{url}/admin/v1/members/{id}/revoke"))
            .bearer_auth(ADMIN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
    }

    // Page through the feed as a follower does: `limit=1000`, from the last seq received.
    let mut after = 0;
    let mut prev_hash = GENESIS_PREV;
    let mut revoked_seen = 0;
    let mut cut_short = 0;
    loop {
        let (entries, head, bytes) = fetch(client, url, after, None).await;
        if after >= head {
            assert!(entries.is_empty());
            break;
        }
        assert!(
            !entries.is_empty(),
            "a page after {after} < head {head} is empty"
        );
        let serialized: usize = entries
            .iter()
            .map(|e| serde_json::to_vec(e).unwrap().len())
            .sum();
        assert!(
            serialized <= MAX_PAGE_BYTES || entries.len() == 1,
            "page after {after}: {serialized} bytes in {} entries",
            entries.len()
        );
        assert!(bytes <= MAX_PAGE_BYTES + 2_000, "page of {bytes} bytes");
        // Each revocation is written in parts that fit an entry bundle; count their zetas.
        revoked_seen += entries
            .iter()
            .filter(|e| e.kind == "member_revoked")
            .map(|e| e.public["zetas"].as_array().unwrap().len())
            .sum::<usize>();
        let last = entries.last().unwrap().seq;
        if let (true, Some(mut next)) = (entries.len() < 1000, store.entry(last + 1).unwrap()) {
            // Ended by the byte bound (and not by the head moving on meanwhile): the next
            // entry would not have fitted.
            next.private = None;
            if serialized + serde_json::to_vec(&next).unwrap().len() > MAX_PAGE_BYTES {
                cut_short += 1;
            }
        }
        for e in &entries {
            assert!(e.private.is_none());
            e.check(after, &prev_hash).unwrap();
            after = e.seq;
            prev_hash = e.hash_bytes().unwrap();
        }
    }
    assert_eq!(revoked_seen as u64, REVOKED_MEMBERS * CERTS);
    assert!(
        cut_short >= 2,
        "only {cut_short} pages ended at the byte bound"
    );
    assert_eq!(after, store.head().unwrap().seq);
    reg.shutdown().await;
}

#[test]
fn a_page_is_exactly_what_fits_and_never_empty() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let manager = Manager::generate(ParamSet::Sha2_128f, &mut ChaCha20Rng::seed_from_u64(8));
    store.create_group(manager.public_key(), 1).unwrap();
    let (writer, thread) = dgsp_registry::writer::Writer::start(
        Arc::new(store),
        Arc::new(manager),
        Default::default(),
    )
    .unwrap();
    let usernames = (0..100).map(|i| format!("user-{i}")).collect();
    writer
        .submit_blocking(Command::Join { usernames }, None)
        .unwrap();
    drop(writer);
    thread.join().unwrap();
    let store = Store::open(dir.path()).unwrap();

    let sizes: Vec<usize> = store
        .entries_after(0, 1000)
        .unwrap()
        .into_iter()
        .map(|mut e| {
            e.private = None;
            serde_json::to_vec(&e).unwrap().len()
        })
        .collect();
    assert_eq!(sizes.len(), 101);

    // One byte: still one entry (the feed always progresses).
    let p = feed::page(&store, 0, 1000, 1, false).unwrap();
    assert_eq!((p.count, p.entry_bytes), (1, sizes[0]));
    // Exactly the first 40 entries' bytes: those 40; one byte less: 39.
    let forty: usize = sizes[..40].iter().sum();
    assert_eq!(feed::page(&store, 0, 1000, forty, false).unwrap().count, 40);
    assert_eq!(
        feed::page(&store, 0, 1000, forty - 1, false).unwrap().count,
        39
    );
    // The count limit still applies; the body is the documented JSON.
    let p = feed::page(&store, 10, 7, MAX_PAGE_BYTES, false).unwrap();
    let v: Value = serde_json::from_slice(&p.body).unwrap();
    let seqs: Vec<u64> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (11..18).collect::<Vec<_>>());
    assert_eq!(v["head_seq"], 101);
    // Past the head: empty.
    let p = feed::page(&store, 101, 1000, MAX_PAGE_BYTES, false).unwrap();
    assert_eq!(p.count, 0);
    assert_eq!(
        serde_json::from_slice::<Value>(&p.body).unwrap(),
        json!({"entries": [], "head_seq": 101})
    );
    // The auditor view keeps the private parts, and counts them.
    let p = feed::page(&store, 0, 1000, MAX_PAGE_BYTES, true).unwrap();
    assert!(p.entry_bytes > sizes.iter().sum::<usize>());
    assert!(String::from_utf8(p.body).unwrap().contains("user-99"));
}
