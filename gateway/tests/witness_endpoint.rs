//! The gateway as a witness (`--witness-key`, docs/gateway.md, "The gateway as a witness"):
//! `POST /witness/add-checkpoint` over real loopback HTTP, driven by `dgsp_witness`'s own
//! client and submitter. Checkpoints of the group's log signed with its ML-DSA-44 log key
//! (the key the registry's `GET /v1/log/key` names) are cosigned, and the cosignature
//! verifies under the gateway's witness vkey; a grown tree is cosigned with its consistency
//! proof; another root at the held size is 422; a stale old size is 409 with the held size,
//! also after a restart (the state is kept in its own directory); a gateway without a witness key
//! answers 404. Then two gateways are a registry's witnesses under a 2-of-2 policy: its
//! published checkpoints carry both gateways' cosignatures, and a gateway that demands that
//! policy is fresh as of them: independent gateways witnessing each other's view.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use dgsp_core::checkpoint::origin_for;
use dgsp_core::Manager;
use dgsp_gateway::anchor::Anchor;
use dgsp_gateway::server as gw;
use dgsp_gateway::witness::WitnessPolicy;
use dgsp_gateway::witnessing::{WitnessConfig, WitnessKey};
use dgsp_registry::publisher::PublisherConfig;
use dgsp_registry::witnessing::{LogKey, Witnesses};
use dgsp_wire::log::now_ms;
use dgsp_wire::merkle::{consistency_proof, leaf_hash, root};
use dgsp_wire::note::cosignature::{verify_signature_line, MlDsaCosigner};
use dgsp_wire::note::witnessed::{verify_witnessed, witnessed_note};
use dgsp_wire::note::{CheckpointBody, Policy, SignatureLine, Vkey};
use dgsp_witness::client::{SubmitError, Submitter, WitnessClient};
use dgsp_witness::protocol::AddCheckpoint;
use support::{gateway, gateway_config, metric, wait_for, Gateway, Registry};

/// The group's log: its origin, its key, and leaves to build trees from.
struct TestLog {
    origin: String,
    key: MlDsaCosigner,
    leaves: Vec<[u8; 32]>,
}

impl TestLog {
    fn of(manager: &Manager) -> TestLog {
        let origin = origin_for(manager.public_key());
        let key = MlDsaCosigner::from_seed(&origin, &manager.log_key_seed(0)).unwrap();
        let leaves = (0..16u32).map(|i| leaf_hash(&i.to_be_bytes())).collect();
        TestLog {
            origin,
            key,
            leaves,
        }
    }

    fn root(&self, size: u64) -> [u8; 32] {
        root(&self.leaves[..size as usize])
    }

    /// The checkpoint note of `size` entries with `root`, signed by the log key.
    fn note(&self, size: u64, root: &[u8; 32]) -> String {
        let line = self.key.cosign(&self.origin, size, root, now_s()).unwrap();
        witnessed_note(&self.origin, size, root, &line, &[])
    }

    fn proof(&self, size: u64) -> impl Fn(u64) -> Result<Vec<[u8; 32]>, String> + '_ {
        move |old| Ok(consistency_proof(old, &self.leaves[..size as usize]))
    }
}

fn now_s() -> u64 {
    now_ms() / 1000
}

fn client(gw: &Gateway, name: &str) -> WitnessClient {
    WitnessClient::new(
        name,
        &format!("{}/witness", gw.url),
        reqwest::Client::new(),
        Duration::from_secs(10),
    )
    .unwrap()
}

/// Checks that `lines` are exactly one cosignature by `vkey` of `(size, root)`.
fn check_cosigned(lines: &[String], vkey: &str, log: &TestLog, size: u64, root: &[u8; 32]) {
    assert_eq!(lines.len(), 1, "{lines:?}");
    let vkey = Vkey::parse(vkey).unwrap();
    let line = SignatureLine::parse(&lines[0]).unwrap();
    let cp = CheckpointBody::plain(&log.origin, size, *root);
    let ts = verify_signature_line(&vkey, &cp, &line).unwrap();
    assert!(ts.abs_diff(now_s()) < 60, "timestamp {ts}");
}

fn config_in(reg: &Registry, dir: &std::path::Path, key: Option<&WitnessKey>) -> gw::Config {
    let mut c = gateway_config(
        &reg.feed_url,
        Anchor::Key(Box::new(reg.manager.public_key().clone())),
        dir,
    );
    c.witness = key.map(|key| WitnessConfig {
        key: key.clone(),
        logs: Default::default(),
        state: dir.join("witness-state"),
        init_state: true,
    });
    c
}

/// Waits until the gateway's witness cosigns (it has learned the log key).
async fn witness_ready(gw: &Gateway) -> serde_json::Value {
    wait_for("the gateway's witness to learn the log key", || async {
        let w = gw.get("/readyz").await.1["witness"].clone();
        (w["ready"] == true).then_some(w)
    })
    .await
}

/// A registry that serves its log-key statement (`GET /v1/log/key`) and signs a checkpoint
/// every second.
async fn registry_with_log_key() -> Registry {
    support::registry_publishing(Box::new(|manager: &Arc<Manager>| PublisherConfig {
        checkpoint_interval: Duration::from_secs(1),
        log_key: Some(Arc::new(LogKey::derive(manager, 0, now_ms()).unwrap())),
        ..PublisherConfig::default()
    }))
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_cosigns_its_groups_log_and_keeps_its_state_across_restarts() {
    let reg = registry_with_log_key().await;
    let log = TestLog::of(&reg.manager);
    let key = WitnessKey::generate("gw1.test.invalid").unwrap();
    let vkey = key.vkey().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(config_in(&reg, dir.path(), Some(&key))).await;

    // The log key comes from the registry's statement: until then 503, then ready.
    let report = witness_ready(&gw).await;
    assert_eq!(report["name"], "gw1.test.invalid");
    assert_eq!(report["vkey"], vkey.as_str());
    assert_eq!(report["prefix"], "/witness");
    assert_eq!(report["logs"][0]["origin"], log.origin.as_str());
    assert_eq!(report["logs"][0]["size"], 0);

    // First: size 3 from old 0.
    let mut sub = Submitter::new(client(&gw, "gw1"));
    let (r3, r5) = (log.root(3), log.root(5));
    let lines = sub
        .cosign(3, &log.note(3, &r3), log.proof(3))
        .await
        .unwrap();
    check_cosigned(&lines, &vkey, &log, 3, &r3);

    // Grown to 5, with the consistency proof from 3.
    let lines = sub
        .cosign(5, &log.note(5, &r5), log.proof(5))
        .await
        .unwrap();
    check_cosigned(&lines, &vkey, &log, 5, &r5);

    // A fork: another root at size 5.
    let other = root(&[leaf_hash(b"other"); 5]);
    let fork = AddCheckpoint {
        old: 5,
        proof: Vec::new(),
        checkpoint: log.note(5, &other),
    };
    let c = client(&gw, "gw1");
    assert!(
        matches!(
            c.add_checkpoint(&fork).await,
            Err(SubmitError::Unprocessable(_))
        ),
        "a fork was not refused with 422"
    );
    // A stale old size: 409 with the held size.
    let stale = AddCheckpoint {
        old: 3,
        proof: consistency_proof(3, &log.leaves[..6]),
        checkpoint: log.note(6, &log.root(6)),
    };
    assert_eq!(
        c.add_checkpoint(&stale).await,
        Err(SubmitError::Conflict { size: 5 })
    );
    // Signed by another key: 403. An unknown origin: 404.
    let stranger = MlDsaCosigner::from_seed(&log.origin, &[7; 32]).unwrap();
    let line = stranger
        .cosign(&log.origin, 6, &log.root(6), now_s())
        .unwrap();
    let forged = AddCheckpoint {
        old: 5,
        proof: consistency_proof(5, &log.leaves[..6]),
        checkpoint: witnessed_note(&log.origin, 6, &log.root(6), &line, &[]),
    };
    assert!(matches!(
        c.add_checkpoint(&forged).await,
        Err(SubmitError::Forbidden(_))
    ));
    let elsewhere = MlDsaCosigner::from_seed("other.example/log", &[8; 32]).unwrap();
    let line = elsewhere
        .cosign("other.example/log", 1, &r3, now_s())
        .unwrap();
    let unknown = AddCheckpoint {
        old: 0,
        proof: Vec::new(),
        checkpoint: witnessed_note("other.example/log", 1, &r3, &line, &[]),
    };
    assert!(matches!(
        c.add_checkpoint(&unknown).await,
        Err(SubmitError::NotFound(_))
    ));
    // Over 16 KiB: 413 (the client calls it a bad answer).
    let big = reqwest::Client::new()
        .post(format!("{}/witness/add-checkpoint", gw.url))
        .body(vec![b'x'; 17 << 10])
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), 413);

    let metrics = gw.metrics().await;
    for (status, answer, n) in [
        ("200", "cosigned", 2.0),
        ("409", "conflict", 1.0),
        ("422", "unprocessable", 1.0),
        ("403", "forbidden", 1.0),
        ("404", "unknown_origin", 1.0),
        ("413", "too_large", 1.0),
    ] {
        let name = format!(
            "dgsp_gateway_witness_answers_total{{status=\"{status}\",answer=\"{answer}\"}}"
        );
        assert_eq!(metric(&metrics, &name), Some(n), "{name}\n{metrics}");
    }
    assert_eq!(metric(&metrics, "dgsp_gateway_witness_ready"), Some(1.0));
    let size = format!("dgsp_gateway_witness_size{{origin=\"{}\"}}", log.origin);
    assert_eq!(metric(&metrics, &size), Some(5.0), "{metrics}");
    let (_, ready) = gw.get("/readyz").await;
    assert_eq!(ready["witness"]["logs"][0]["size"], 5, "{ready}");
    assert_eq!(
        ready["witness"]["logs"][0]["root"],
        hex::encode(r5).as_str(),
        "{ready}"
    );
    gw.shutdown().await;

    // Restarted without a witness key: no endpoint (404, problem+json).
    let plain = gateway(config_in(&reg, dir.path(), None)).await;
    let (code, body) = plain
        .post_bytes(
            "/witness/add-checkpoint",
            "text/plain",
            stale.encode().into(),
        )
        .await;
    assert_eq!(code, 404, "{body}");
    assert!(plain.get("/readyz").await.1.get("witness").is_none());
    plain.shutdown().await;

    // Restarted with it: the state was kept (409 with the held size), and a fresh
    // submitter resynchronises through the 409 and extends the tree.
    let gw = gateway(config_in(&reg, dir.path(), Some(&key))).await;
    witness_ready(&gw).await;
    let c = client(&gw, "gw1");
    assert_eq!(
        c.add_checkpoint(&stale).await,
        Err(SubmitError::Conflict { size: 5 })
    );
    assert!(matches!(
        c.add_checkpoint(&fork).await,
        Err(SubmitError::Unprocessable(_))
    ));
    let mut fresh = Submitter::new(client(&gw, "gw1"));
    let r7 = log.root(7);
    let lines = fresh
        .cosign(7, &log.note(7, &r7), log.proof(7))
        .await
        .unwrap();
    check_cosigned(&lines, &vkey, &log, 7, &r7);
    gw.shutdown().await;
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_are_a_registrys_witnesses_under_a_two_of_two_policy() {
    // The gateways' listeners first: the registry's policy names their URLs.
    let (l1, l2) = (
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
    );
    let (k1, k2) = (
        WitnessKey::generate("gw1.test.invalid").unwrap(),
        WitnessKey::generate("gw2.test.invalid").unwrap(),
    );
    let lines = format!(
        "witness gw1 {} http://{}/witness\nwitness gw2 {} http://{}/witness\ngroup both all gw1 gw2\nquorum both\n",
        k1.vkey().unwrap(),
        l1.local_addr().unwrap(),
        k2.vkey().unwrap(),
        l2.local_addr().unwrap()
    );
    let policy_lines = lines.clone();
    let reg = support::registry_publishing(Box::new(move |manager: &Arc<Manager>| {
        let log_key = Arc::new(LogKey::derive(manager, 0, now_ms()).unwrap());
        let policy = format!("log {}\n{policy_lines}", log_key.vkey());
        let witnesses = Witnesses::new(
            log_key,
            &policy,
            Duration::from_secs(2),
            Arc::new(dgsp_http::clock::SystemClock),
        )
        .unwrap();
        PublisherConfig {
            checkpoint_interval: Duration::from_secs(1),
            witnesses: Some(Arc::new(witnesses)),
            ..PublisherConfig::default()
        }
    }))
    .await;
    let log = TestLog::of(&reg.manager);
    let policy_text = format!("log {}\n{lines}", log.key.vkey());
    let policy = Policy::parse(&policy_text).unwrap();

    // gw1 demands the 2-of-2 policy (and takes the log key from its log line); gw2 learns
    // the log key from the registry's statement.
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut c1 = config_in(&reg, d1.path(), Some(&k1));
    c1.api.max_staleness = Duration::from_secs(30);
    c1.witness_policy = Some(Arc::new(WitnessPolicy::parse(&policy_text).unwrap()));
    let gw1 = gw::start(c1, l1).await.unwrap();
    let gw2 = gw::start(config_in(&reg, d2.path(), Some(&k2)), l2)
        .await
        .unwrap();

    // The registry publishes a checkpoint cosigned by both gateways.
    let http = reqwest::Client::new();
    let served = wait_for("a checkpoint cosigned by both gateways", || async {
        let v: serde_json::Value = http
            .get(format!("{}/v1/checkpoint", reg.url))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        v["witnessed"].is_string().then_some(v)
    })
    .await;
    let w = verify_witnessed(
        served["witnessed"].as_str().unwrap(),
        &policy,
        now_s(),
        Some(60),
        10,
    )
    .unwrap();
    let mut names: Vec<&str> = w.cosigners.iter().map(|(n, _)| n.as_str()).collect();
    names.sort();
    assert_eq!(names, ["gw1", "gw2"]);

    // gw1, which demands that quorum, is fresh as of such a checkpoint.
    let g1 = Gateway::wrap(gw1);
    let ready = wait_for(
        "gw1 ready on a checkpoint both gateways cosigned",
        || async {
            let (code, r) = g1.get("/readyz").await;
            (code == 200 && r["witnessed"]["cosigners"].as_array()?.len() == 2).then_some(r)
        },
    )
    .await;
    assert_eq!(ready["witness"]["ready"], true, "{ready}");
    assert!(ready["witness"]["logs"][0]["size"].as_u64().unwrap() >= w.size);
    // The registry keeps publishing: the gateways cosign the growing log.
    reg.member("alice", 1).await;
    let grown = reg.settled().await;
    wait_for("a witnessed checkpoint covering the join", || async {
        let v: serde_json::Value = http
            .get(format!("{}/v1/checkpoint", reg.url))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        (v["witnessed"].is_string() && v["size"].as_u64()? >= grown).then_some(())
    })
    .await;
    let g2 = Gateway::wrap(gw2);
    let m2 = g2.metrics().await;
    assert!(
        metric(
            &m2,
            "dgsp_gateway_witness_answers_total{status=\"200\",answer=\"cosigned\"}"
        )
        .unwrap()
            >= 2.0,
        "{m2}"
    );
    g1.shutdown().await;
    g2.shutdown().await;
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_log_key_the_witness_answers_503_and_says_so() {
    // This registry serves no log-key statement (404): the witness cannot learn the key.
    let reg = support::registry().await;
    let key = WitnessKey::generate("gw1.test.invalid").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(config_in(&reg, dir.path(), Some(&key))).await;
    let r = reqwest::Client::new()
        .post(format!("{}/witness/add-checkpoint", gw.url))
        .body("old 0\n\n")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "5");
    let (_, ready) = gw.get("/readyz").await;
    assert_eq!(ready["witness"]["ready"], false, "{ready}");
    assert_eq!(ready["witness"]["vkey"], key.vkey().unwrap().as_str());
    let metrics = gw.metrics().await;
    assert_eq!(metric(&metrics, "dgsp_gateway_witness_ready"), Some(0.0));
    assert_eq!(
        metric(
            &metrics,
            "dgsp_gateway_witness_answers_total{status=\"503\",answer=\"not_ready\"}"
        ),
        Some(1.0)
    );
    gw.shutdown().await;
    reg.shutdown().await;
}

/// A registry whose `GET /v1/log/key` serves the statement `statement(manager)` makes in
/// place of its own (it still signs with its generation-0 log key).
async fn registry_serving_statement(
    statement: impl FnOnce(&Manager) -> String + Send + 'static,
) -> Registry {
    support::registry_publishing(Box::new(move |manager: &Arc<Manager>| {
        let mut log_key = LogKey::derive(manager, 0, now_ms()).unwrap();
        log_key.statement = statement(manager);
        PublisherConfig {
            checkpoint_interval: Duration::from_secs(1),
            log_key: Some(Arc::new(log_key)),
            ..PublisherConfig::default()
        }
    }))
    .await
}

/// Waits until the witness's 503 names why it refused the registry's statement (its body
/// is what a registry's witness client reports as this witness's failure), and checks it
/// still does not cosign.
async fn refused_naming(gw: &Gateway, manager: &Manager, why: &str) {
    let log = TestLog::of(manager);
    let req = AddCheckpoint {
        old: 0,
        proof: Vec::new(),
        checkpoint: log.note(1, &log.root(1)),
    };
    let body = wait_for(
        "the witness to name why it refused the statement",
        || async {
            match client(gw, "gw").add_checkpoint(&req).await {
                Err(SubmitError::Server { status: 503, body }) if body.contains(why) => Some(body),
                _ => None,
            }
        },
    )
    .await;
    assert!(
        body.starts_with("this witness does not know its log's key yet ("),
        "{body}"
    );
    let (_, ready) = gw.get("/readyz").await;
    assert_eq!(ready["witness"]["ready"], false, "{ready}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_key_statement_is_checked_against_the_pinned_group_and_its_origin() {
    use dgsp_core::log_key::LogKeyStatement;
    use dgsp_core::ParamSet;
    let key = WitnessKey::generate("gw1.test.invalid").unwrap();
    let other = Arc::new(Manager::generate(
        ParamSet::Sha2_128f,
        &mut rand_core::OsRng,
    ));

    // Signed by another group key, naming this group's origin and log key: refused.
    let by_other = other.clone();
    let reg = registry_serving_statement(move |m| {
        by_other
            .sign_log_key(&LogKeyStatement {
                origin: origin_for(m.public_key()),
                vkey: TestLog::of(m).key.vkey(),
                generation: 0,
                time_unix_ms: now_ms(),
            })
            .unwrap()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(config_in(&reg, dir.path(), Some(&key))).await;
    refused_naming(&gw, &reg.manager, "no signature by this group's key").await;
    gw.shutdown().await;
    reg.shutdown().await;

    // Signed by the group key, naming a key under another origin than the group's log
    // (its checkpoints are signed under the origin): refused.
    let elsewhere = MlDsaCosigner::from_seed("other.example/log", &[3; 32]).unwrap();
    let reg = registry_serving_statement(move |m| {
        m.sign_log_key(&LogKeyStatement {
            origin: origin_for(m.public_key()),
            vkey: elsewhere.vkey(),
            generation: 0,
            time_unix_ms: now_ms(),
        })
        .unwrap()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(config_in(&reg, dir.path(), Some(&key))).await;
    refused_naming(&gw, &reg.manager, "not under the log's origin").await;
    gw.shutdown().await;
    reg.shutdown().await;

    // Another group's own statement (another origin): refused.
    let theirs = other.clone();
    let reg = registry_serving_statement(move |_| {
        LogKey::derive(&theirs, 0, now_ms()).unwrap().statement
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(config_in(&reg, dir.path(), Some(&key))).await;
    refused_naming(&gw, &reg.manager, "not this group's").await;
    gw.shutdown().await;
    reg.shutdown().await;

    // The group's own statement: accepted, and kept in the witness state.
    let reg = registry_with_log_key().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(config_in(&reg, dir.path(), Some(&key))).await;
    witness_ready(&gw).await;
    let served = reg
        .client
        .get(format!("{}/v1/log/key", reg.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let kept = std::fs::read_to_string(dir.path().join("witness-state/log-key")).unwrap();
    assert_eq!(kept, served);
    gw.shutdown().await;
    reg.shutdown().await;
}
