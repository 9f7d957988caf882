//! The registry with in-process witnesses on loopback (`dgsp_witness::test_server::
//! LoopbackWitness`): one bad witness costs only its own vote, a quorum of many ML-DSA-44
//! witnesses still publishes a note within the signed-note limits, and a witness whose
//! cosignature is dated by a clock that moved on during the round is counted. No Go, no
//! real delays: the slow witness steps the clock the registry reads.

use crate::support;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use dgsp_http::clock::{Clock, OffsetClock, SystemClock};
use dgsp_registry::publisher::PublisherConfig;
use dgsp_registry::server;
use dgsp_registry::witnessing::{LogKey, Witnesses};
use dgsp_wire::log::now_ms;
use dgsp_wire::note::policy::Policy;
use dgsp_wire::note::signed_note::{SignedNote, MAX_NOTE_BYTES, MAX_SIGNATURES};
use dgsp_wire::note::vkey::Vkey;
use dgsp_wire::note::witnessed::verify_witnessed;
use dgsp_witness::server::{system_clock, KnownLogs, UnixClock};
use dgsp_witness::test_server::{LoopbackAnswer, LoopbackWitness};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use reqwest::StatusCode;
use serde_json::Value;

const TOKEN: &str = "witnesses-loopback-admin-token";

/// A registry of a fresh group whose witnesses are given by `policy` (from the log key's
/// vkey), its witnesses' clock `clock`, started; with the log key's `KnownLogs`.
struct Setup {
    dir: tempfile::TempDir,
    store: Arc<dgsp_registry::store::Store>,
    manager: Arc<dgsp_core::Manager>,
    log_key: LogKey,
    logs: KnownLogs,
}

fn setup(seed: u64) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let (store, manager) = support::group(&dir.path().join("db"), seed, now_ms());
    let log_key = LogKey::derive(&manager, 0, now_ms()).unwrap();
    let mut logs = KnownLogs::new();
    logs.add(Vkey::parse(&log_key.vkey()).unwrap()).unwrap();
    Setup {
        dir,
        store,
        manager,
        log_key,
        logs,
    }
}

impl Setup {
    /// Serves the group with `policy_text`'s witnesses, their answers judged by `clock`.
    async fn serve(self, policy_text: &str, clock: Arc<dyn Clock>) -> Served {
        let w = Witnesses::new(
            Arc::new(self.log_key),
            policy_text,
            Duration::from_secs(10),
            clock,
        )
        .unwrap();
        let config = server::Config {
            publisher: PublisherConfig {
                checkpoint_interval: Duration::from_secs(1),
                witnesses: Some(Arc::new(w)),
                ..PublisherConfig::default()
            },
            ..support::config(TOKEN)
        };
        let running = support::serve(self.store, self.manager, config).await;
        Served {
            url: running.url(),
            running,
            client: reqwest::Client::new(),
            policy: Policy::parse(policy_text).unwrap(),
            _dir: self.dir,
        }
    }
}

struct Served {
    running: server::Running,
    url: String,
    client: reqwest::Client,
    policy: Policy,
    _dir: tempfile::TempDir,
}

impl Served {
    /// The first witnessed checkpoint served (within a generous deadline), its witnessed
    /// note verified with the policy at `now_s`; returns the note and who counted.
    async fn first_witnessed(&self, now_s: impl Fn() -> u64) -> (String, BTreeSet<String>) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let r = self
                .client
                .get(format!("{}/v1/checkpoint", self.url))
                .send()
                .await
                .unwrap();
            if r.status() == StatusCode::OK {
                let v: Value = r.json().await.unwrap();
                if let Some(note) = v["witnessed"].as_str() {
                    let w = verify_witnessed(note, &self.policy, now_s(), None, 5)
                        .unwrap_or_else(|e| panic!("the published note: {e}\n{note}"));
                    let names = w.cosigners.into_iter().map(|(n, _)| n).collect();
                    return (note.to_owned(), names);
                }
            }
            let (_, ready) = support::readyz(&self.client, &self.url).await;
            assert!(
                Instant::now() < deadline,
                "no witnessed checkpoint published; /readyz: {ready}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn metrics(&self) -> String {
        support::get_text(&self.client, format!("{}/metrics", self.url)).await
    }
}

fn honest() -> LoopbackAnswer {
    LoopbackAnswer::Honest(system_clock())
}

/// `any` of an honest witness `h` and a bad one `e` answering `bad(h's vkey, e's vkey)`:
/// a checkpoint is published, cosigned by `h` alone; `/readyz` and `/metrics` name `e` as
/// failing.
async fn one_bad_witness(seed: u64, bad: impl Fn(&Vkey, &Vkey) -> String) {
    let s = setup(seed);
    let h = LoopbackWitness::start("h.example", [1; 32], s.logs.clone(), honest()).await;
    let h_key = Vkey::parse(&h.vkey).unwrap();
    let e_key = dgsp_wire::note::MlDsaCosigner::from_seed("e.example", &[2; 32])
        .unwrap()
        .verifier()
        .clone();
    let body = bad(&h_key, &e_key);
    let e = LoopbackWitness::start(
        "e.example",
        [2; 32],
        s.logs.clone(),
        LoopbackAnswer::Fixed(body),
    )
    .await;
    let policy = format!(
        "log {}\nwitness h {} {}\nwitness e {} {}\ngroup one any h e\nquorum one\n",
        s.log_key.vkey(),
        h.vkey,
        h.url,
        e.vkey,
        e.url
    );
    let served = s.serve(&policy, Arc::new(SystemClock)).await;
    let (_, cosigners) = served.first_witnessed(|| now_ms() / 1000).await;
    assert_eq!(cosigners, BTreeSet::from(["h".to_owned()]));

    let (status, ready) = support::readyz(&served.client, &served.url).await;
    assert_eq!(status, StatusCode::OK, "{ready}");
    assert!(
        ready.contains("h answers") && ready.contains("e failing") && ready.contains("bad answer"),
        "{ready}"
    );
    let metrics = served.metrics().await;
    assert!(
        metrics.contains("dgsp_registry_witness_up{witness=\"h\"} 1")
            && metrics.contains("dgsp_registry_witness_up{witness=\"e\"} 0"),
        "{metrics}"
    );
    served.running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_line_under_the_honest_witness_key_costs_only_the_forger() {
    // e answers a line under h's name and key id with a zero signature.
    one_bad_witness(431, |h, _| {
        let mut blob = h.key_id.to_vec();
        blob.extend_from_slice(&[0u8; 8 + 2420]);
        format!("— {} {}\n", h.name, STANDARD.encode(blob))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_answer_costs_only_the_witness_that_gave_it() {
    // e answers 16 lines of 3000 random bytes (well-formed lines, under its own name),
    // together over the 64 KiB a note may have beside h's cosignature.
    one_bad_witness(432, |_, e| {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        (0..16)
            .map(|_| {
                let mut bytes = vec![0u8; 3000];
                rng.fill_bytes(&mut bytes);
                format!("— {} {}\n", e.name, STANDARD.encode(bytes))
            })
            .collect()
    })
    .await;
}

/// `n` honest ML-DSA-44 witnesses under "any one of them": a note is published, within the
/// signed-note limits, carrying as many cosignatures as fit.
async fn many_witnesses(n: usize, seed: u64) {
    let s = setup(seed);
    let mut witnesses = Vec::new();
    for i in 0..n {
        let name = format!("w{i:02}.example");
        witnesses
            .push(LoopbackWitness::start(&name, [i as u8 + 1; 32], s.logs.clone(), honest()).await);
    }
    let mut policy = format!("log {}\n", s.log_key.vkey());
    let mut group = "group one any".to_owned();
    for (i, w) in witnesses.iter().enumerate() {
        policy.push_str(&format!("witness w{i:02} {} {}\n", w.vkey, w.url));
        group.push_str(&format!(" w{i:02}"));
    }
    policy.push_str(&format!("{group}\nquorum one\n"));
    let served = s.serve(&policy, Arc::new(SystemClock)).await;
    let (note, cosigners) = served.first_witnessed(|| now_ms() / 1000).await;
    let parsed = SignedNote::parse(&note).unwrap();
    assert!(note.len() <= MAX_NOTE_BYTES, "{} bytes", note.len());
    assert!(parsed.signatures.len() <= MAX_SIGNATURES);
    // Every answering witness's cosignature is 3.3 KB: 19 fit beside the log's line.
    assert_eq!(cosigners.len(), 19, "{cosigners:?}");
    assert_eq!(parsed.signatures.len(), 20);
    // The others answered too, and are reported as answering.
    let (status, ready) = support::readyz(&served.client, &served.url).await;
    assert_eq!(status, StatusCode::OK, "{ready}");
    assert!(!ready.contains("failing"), "{ready}");
    served.running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_ml_dsa_witnesses_publish_a_note_within_the_limits() {
    many_witnesses(20, 433).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_five_ml_dsa_witnesses_under_one_of_25_publish() {
    many_witnesses(25, 434).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_witness_that_answers_after_the_tolerance_within_its_timeout_counts() {
    // The registry's witness clock moves 6 s on while the witness works (more than the
    // 5 s a cosignature may be ahead), and the witness dates its cosignature by it: as if
    // it had answered 6 s after the round began, within its 10 s timeout.
    let s = setup(435);
    let clock = OffsetClock::new(0);
    let steps = Arc::new(AtomicI64::new(0));
    let slow: UnixClock = {
        let (clock, steps) = (clock.clone(), steps.clone());
        Arc::new(move || {
            let offset = (steps.fetch_add(1, Ordering::SeqCst) + 1) * 6_000;
            clock.set_offset_ms(offset);
            clock.now_ms() / 1000
        })
    };
    let w = LoopbackWitness::start(
        "slow.example",
        [3; 32],
        s.logs.clone(),
        LoopbackAnswer::Honest(slow),
    )
    .await;
    let policy = format!(
        "log {}\nwitness slow {} {}\nquorum slow\n",
        s.log_key.vkey(),
        w.vkey,
        w.url
    );
    let served = s.serve(&policy, clock.clone()).await;
    let (_, cosigners) = served.first_witnessed(|| clock.now_ms() / 1000).await;
    assert_eq!(cosigners, BTreeSet::from(["slow".to_owned()]));
    assert!(steps.load(Ordering::SeqCst) >= 1);
    served.running.shutdown().await.unwrap();
}
