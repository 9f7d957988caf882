//! A gateway with a witness policy (`--witness-policy`, docs/witnesses.md, "Gateways"),
//! against a registry played by wiremock over a real, honestly signed log: the test signs
//! the cadence notes, the group's ML-DSA-44 log key signs their witnessed notes, and two
//! test witnesses cosign them. Answers are fresh only as of a checkpoint the policy's
//! quorum cosigned, within the maximum age by the registry's time and the witnesses'; a note
//! one cosignature short, cosigned over another tree, cosigned by a witness outside the
//! policy, of another tree than its SPHINCS+ note, or without a witnessed note is refused
//! with a named fault; the evidence survives a restart; a policy whose log key is not the
//! one the registry's statement names does not start.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use dgsp_core::checkpoint::origin_for;
use dgsp_core::log_key::LogKeyStatement;
use dgsp_core::{Manager, ParamSet};
use dgsp_gateway::anchor::Anchor;
use dgsp_gateway::server as gw;
use dgsp_gateway::witness::WitnessPolicy;
use dgsp_wire::log::{now_ms, unhex32};
use dgsp_wire::note::cosignature::MlDsaCosigner;
use dgsp_wire::note::witnessed::witnessed_note;
use rand_core::OsRng;
use support::mock::{Log, MockRegistry, Note};
use support::signed_time::{fault, fresh_time, group, honest_log, later};
use support::{gateway, gateway_config, metric, wait_for, Gateway};

/// The staleness bound of these gateways.
const MAX_AGE: Duration = Duration::from_secs(6);

/// The group's log key (generation `generation`) and two test witnesses in the policy, and
/// one that is not.
struct Keys {
    origin: String,
    log_key: MlDsaCosigner,
    w1: MlDsaCosigner,
    w2: MlDsaCosigner,
    outsider: MlDsaCosigner,
}

impl Keys {
    fn new(log: &Log) -> Keys {
        let origin = origin_for(log.manager.public_key());
        let seed = log.manager.log_key_seed(0);
        Keys {
            log_key: MlDsaCosigner::from_seed(&origin, &seed).unwrap(),
            origin,
            w1: MlDsaCosigner::from_seed("w1.test.invalid", &[1; 32]).unwrap(),
            w2: MlDsaCosigner::from_seed("w2.test.invalid", &[2; 32]).unwrap(),
            outsider: MlDsaCosigner::from_seed("w3.test.invalid", &[3; 32]).unwrap(),
        }
    }

    /// The 2-of-2 policy naming `log_vkey` as the log's key.
    fn policy_for(&self, log_vkey: &str) -> String {
        format!(
            "# test policy\nlog {log_vkey}\nwitness w1 {}\nwitness w2 {}\ngroup both all w1 w2\nquorum both\n",
            self.w1.vkey(),
            self.w2.vkey()
        )
    }

    fn policy(&self) -> String {
        self.policy_for(&self.log_key.vkey())
    }

    /// The group key's statement naming log key `generation`.
    fn statement(&self, log: &Log, generation: u64) -> String {
        let seed = log.manager.log_key_seed(generation);
        let key = MlDsaCosigner::from_seed(&self.origin, &seed).unwrap();
        log.manager
            .sign_log_key(&LogKeyStatement {
                origin: self.origin.clone(),
                vkey: key.vkey(),
                generation,
                time_unix_ms: now_ms(),
            })
            .unwrap()
    }

    /// The witnessed note of `size` entries with `root`, signed by the log key now and
    /// cosigned by each of `cosigners` at its time (Unix seconds) over `(size, root)`.
    fn witnessed(&self, size: u64, root: &[u8; 32], cosigners: &[(&MlDsaCosigner, u64)]) -> String {
        let log_line = self
            .log_key
            .cosign(&self.origin, size, root, now_s())
            .unwrap();
        let lines: Vec<String> = cosigners
            .iter()
            .map(|(c, t)| c.cosign(&self.origin, size, root, *t).unwrap())
            .collect();
        witnessed_note(&self.origin, size, root, &log_line, &lines)
    }

    /// `note` with the witnessed note of its tree, cosigned by `cosigners`.
    fn witness(&self, note: Note, cosigners: &[(&MlDsaCosigner, u64)]) -> Note {
        let root = unhex32(&note.head).unwrap();
        Note {
            witnessed: Some(self.witnessed(note.size, &root, cosigners)),
            ..note
        }
    }
}

fn now_s() -> u64 {
    now_ms() / 1000
}

fn config(mock: &MockRegistry, log: &Log, dir: &std::path::Path, policy: &str) -> gw::Config {
    let mut c = gateway_config(&mock.url, Anchor::Key(Box::new(group(log))), dir);
    c.api.max_staleness = MAX_AGE;
    c.witness_policy = Some(Arc::new(WitnessPolicy::parse(policy).unwrap()));
    c
}

/// The witnessed note the gateway's answers are fresh as of, if any.
async fn witnessed_of(gw: &Gateway) -> Option<String> {
    gw.get("/v1/group").await.1["freshness"]["checkpoint"]["witnessed"]
        .as_str()
        .map(str::to_owned)
}

async fn readyz_status(gw: &Gateway) -> (u16, String) {
    let (code, r) = gw.get("/readyz").await;
    (code, r["status"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_are_fresh_only_as_of_a_checkpoint_the_quorum_cosigned() {
    let (log, mut alice) = honest_log().await;
    let keys = Keys::new(&log);
    let size = log.entries.len() as u64;
    let mock = MockRegistry::start(log.entries.clone()).await;
    mock.log_key(Some(keys.statement(&log, 0)));
    let dir = tempfile::tempdir().unwrap();
    let config = config(&mock, &log, dir.path(), &keys.policy());

    // No note at /v1/checkpoint: the feed's checkpoint entries (which carry no witnessed
    // note) apply what they cover, but the state is not fresh as of any of them.
    let gw = gateway(config.clone()).await;
    gw.reach(size - 1).await;
    assert_eq!(readyz_status(&gw).await, (503, "stale".to_owned()));
    assert_eq!(witnessed_of(&gw).await, None);
    let (code, p) = gw.get("/v1/checkpoint").await;
    assert_eq!(
        (code, p["title"].as_str()),
        (503, Some("No checkpoint applied yet")),
        "{p}"
    );

    // a. The quorum (w1, w2) cosigned, and a witness outside the policy too: applied, fresh,
    //    and the answer carries the witnessed note.
    let t1 = later(&log, 0);
    let n1 = keys.witness(
        log.note(size, t1),
        &[
            (&keys.w1, now_s()),
            (&keys.outsider, now_s()),
            (&keys.w2, now_s()),
        ],
    );
    mock.note(Some(n1.clone()));
    wait_for("freshness as of the witnessed note", || async {
        (fresh_time(&gw).await == t1).then_some(())
    })
    .await;
    let sig = alice.sign(b"m");
    let a = gw.verify(b"m", &sig).await;
    assert_eq!(
        (a["status"].as_str(), a["freshness"]["stale"].as_bool()),
        (Some("ok"), Some(false)),
        "{a}"
    );
    let cp = &a["freshness"]["checkpoint"];
    assert_eq!(cp["witnessed"].as_str(), n1.witnessed.as_deref(), "{a}");
    assert_eq!(cp["note"].as_str(), Some(n1.note.as_str()));
    // Batch items carry neither note, the batch's freshness both.
    let b = gw.verify_batch(b"m", &[&sig]).await;
    assert_eq!(
        b["freshness"]["checkpoint"]["witnessed"].as_str(),
        n1.witnessed.as_deref()
    );
    assert!(
        b["results"][0]["freshness"]["checkpoint"]
            .get("witnessed")
            .is_none(),
        "{b}"
    );
    // Published for comparison with other gateways, in the registry's form.
    let (code, c) = gw.get("/v1/checkpoint").await;
    assert_eq!(code, 200, "{c}");
    assert_eq!(
        (
            c["size"].as_u64(),
            c["head"].as_str(),
            c["time_unix_ms"].as_u64()
        ),
        (Some(size), Some(n1.head.as_str()), Some(t1))
    );
    assert_eq!(
        (c["note"].as_str(), c["witnessed"].as_str()),
        (Some(n1.note.as_str()), n1.witnessed.as_deref())
    );
    assert_eq!(readyz_status(&gw).await, (200, "ok".to_owned()));
    let (_, r) = gw.get("/readyz").await;
    let mut names: Vec<&str> = r["witnessed"]["cosigners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["w1", "w2"], "the outsider is not counted: {r}");
    assert!(
        r["witnessed"]["quorum_time_unix_s"].as_u64().is_some(),
        "{r}"
    );

    // b. w1 and a witness outside the policy: the outsider does not count, the quorum is not
    //    met. Refused, named; freshness stays.
    let t2 = later(&log, t1);
    mock.note(Some(keys.witness(
        log.note(size, t2),
        &[(&keys.w1, now_s()), (&keys.outsider, now_s())],
    )));
    let (_, r) = fault(&gw, "witness_quorum", "quorum not met").await;
    assert_eq!(r["fault"]["seq"], size, "{r}");
    assert!(
        !r["fault"]["detail"].as_str().unwrap().contains("w3"),
        "{r}"
    );
    assert_eq!(fresh_time(&gw).await, t1);

    // c. w2's cosignature is over another tree: refused, naming w2.
    let t3 = later(&log, t2);
    let mut n3 = keys.witness(log.note(size, t3), &[(&keys.w1, now_s())]);
    let other = [7u8; 32];
    let forged = keys.w2.cosign(&keys.origin, size, &other, now_s()).unwrap();
    n3.witnessed = n3.witnessed.map(|w| format!("{w}{forged}"));
    mock.note(Some(n3));
    fault(&gw, "bad_witnessed_checkpoint", "\"w2\" does not verify").await;
    assert_eq!(fresh_time(&gw).await, t1);

    // d. A witnessed note with a full quorum, but of another tree than the SPHINCS+ note.
    let t4 = later(&log, t3);
    let other_tree = keys.witness(
        log.note(size - 1, t4),
        &[(&keys.w1, now_s()), (&keys.w2, now_s())],
    );
    mock.note(Some(Note {
        witnessed: other_tree.witnessed,
        ..log.note(size, t4)
    }));
    fault(&gw, "bad_witnessed_checkpoint", "another tree").await;
    assert_eq!(fresh_time(&gw).await, t1);

    // e. No witnessed note at all.
    mock.note(Some(log.note(size, later(&log, t4))));
    fault(&gw, "unwitnessed_checkpoint", "no witnessed note").await;
    let m = gw.metrics().await;
    for kind in [
        "witness_quorum",
        "bad_witnessed_checkpoint",
        "unwitnessed_checkpoint",
    ] {
        let n = metric(
            &m,
            &format!("dgsp_gateway_feed_faults_total{{kind=\"{kind}\"}}"),
        );
        assert!(n.unwrap_or(0.0) >= 1.0, "{kind}: {m}");
    }

    // f. One cosignature short, from now on: refused, and once the last witnessed
    //    checkpoint is older than the bound, the answers are stale.
    let t5 = later(&log, t4);
    mock.note(Some(
        keys.witness(log.note(size, t5), &[(&keys.w2, now_s())]),
    ));
    fault(&gw, "witness_quorum", "quorum not met").await;
    wait_for("the state to go stale", || async {
        (readyz_status(&gw).await == (503, "stale".to_owned())).then_some(())
    })
    .await;
    let sig2 = alice.sign(b"m2");
    let a = gw.verify(b"m2", &sig2).await;
    assert_eq!(
        (a["status"].as_str(), a["valid"].as_bool()),
        (Some("stale"), Some(false)),
        "{a}"
    );
    assert_eq!(a["freshness"]["checkpoint"]["time_unix_ms"], t1, "{a}");

    // g. A full quorum, the registry's time fresh, but w2 cosigned 4 s ago (within the
    //    6 s bound when it arrives): applied, then stale once w2's cosignature is older
    //    than the bound, though the registry signed its note moments ago.
    let t6 = later(&log, t5);
    let n6 = keys.witness(
        log.note(size, t6),
        &[(&keys.w1, now_s()), (&keys.w2, now_s() - 4)],
    );
    mock.note(Some(n6.clone()));
    wait_for("the note with the older cosignature applied", || async {
        (fresh_time(&gw).await == t6).then_some(())
    })
    .await;
    wait_for("stale by the witness's timestamp", || async {
        (readyz_status(&gw).await == (503, "stale".to_owned())).then_some(())
    })
    .await;
    let (_, g) = gw.get("/v1/group").await;
    let f = &g["freshness"];
    assert!(
        now_ms() - t6 < MAX_AGE.as_millis() as u64,
        "the registry's time is still fresh: {f}"
    );
    assert_eq!(f["stale"], true, "{f}");
    assert!(
        f["age_ms"].as_u64().unwrap() > MAX_AGE.as_millis() as u64,
        "{f}"
    );
    assert_eq!(
        f["checkpoint"]["witnessed"].as_str(),
        n6.witnessed.as_deref()
    );

    // h. A fresh quorum: fresh again.
    let t7 = later(&log, t6);
    let n7 = keys.witness(
        log.note(size, t7),
        &[(&keys.w1, now_s()), (&keys.w2, now_s())],
    );
    mock.note(Some(n7.clone()));
    wait_for("fresh again", || async {
        (readyz_status(&gw).await == (200, "ok".to_owned())).then_some(())
    })
    .await;
    gw.shutdown().await;

    // i. Restarted with the registry serving no note: the witnessed evidence comes back
    //    from the replica.
    mock.note(None);
    let gw = gateway(config.clone()).await;
    assert_eq!(fresh_time(&gw).await, t7);
    assert_eq!(witnessed_of(&gw).await.as_deref(), n7.witnessed.as_deref());
    let (code, c) = gw.get("/v1/checkpoint").await;
    assert_eq!(
        (code, c["witnessed"].as_str()),
        (200, n7.witnessed.as_deref()),
        "{c}"
    );
    gw.shutdown().await;

    // j. The same replica without a policy: as before witnessing (no witnessed note in
    //    answers, fresh as of the signed note alone).
    let mut plain = config.clone();
    plain.witness_policy = None;
    let gw = gateway(plain).await;
    assert_eq!(fresh_time(&gw).await, t7);
    assert_eq!(witnessed_of(&gw).await, None);
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_that_does_not_name_the_registrys_log_key_does_not_start() {
    let (log, _) = honest_log().await;
    let keys = Keys::new(&log);
    let mock = MockRegistry::start(log.entries.clone()).await;
    let start = |policy: String| {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(&mock, &log, dir.path(), &policy);
        c.resolve_attempts = 1;
        async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let r = gw::start(c, listener).await;
            drop(dir);
            match r {
                Ok(running) => {
                    running.shutdown().await.unwrap();
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            }
        }
    };

    // The registry's statement names generation 1; the policy names generation 0.
    mock.log_key(Some(keys.statement(&log, 1)));
    let err = start(keys.policy()).await.unwrap_err();
    assert!(
        err.contains("is not the key this gateway's witness policy names"),
        "{err}"
    );
    assert!(err.contains("generation 1"), "{err}");

    // A statement signed by another group's key.
    let other = Manager::generate(ParamSet::Sha2_128f, &mut OsRng);
    let forged = other
        .sign_log_key(&LogKeyStatement {
            origin: keys.origin.clone(),
            vkey: keys.log_key.vkey(),
            generation: 0,
            time_unix_ms: now_ms(),
        })
        .unwrap();
    mock.log_key(Some(forged));
    let err = start(keys.policy()).await.unwrap_err();
    assert!(err.contains("log-key statement"), "{err}");

    // A policy for another group's log.
    let other_origin = origin_for(other.public_key());
    let other_key = MlDsaCosigner::from_seed(&other_origin, &other.log_key_seed(0)).unwrap();
    mock.log_key(Some(keys.statement(&log, 0)));
    let err = start(keys.policy_for(&other_key.vkey())).await.unwrap_err();
    assert!(err.contains("no log line for this group's log"), "{err}");

    // A registry without a log key.
    mock.log_key(None);
    let err = start(keys.policy()).await.unwrap_err();
    assert!(err.contains("serves no log key"), "{err}");

    // Following the tiles, no registry statement is read: the policy's log line is the log
    // key (a registry serving none does not stop it).
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&mock, &log, dir.path(), &keys.policy());
    c.tiles = Some(dgsp_gateway::tiles::TilesConfig::new(&mock.url));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let running = gw::start(c, listener).await.unwrap();
    running.shutdown().await.unwrap();
    // A policy for another group's log is still refused.
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&mock, &log, dir.path(), &keys.policy_for(&other_key.vkey()));
    c.tiles = Some(dgsp_gateway::tiles::TilesConfig::new(&mock.url));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let err = gw::start(c, listener).await.err().unwrap().to_string();
    assert!(err.contains("no log line for this group's log"), "{err}");

    // The right statement: it starts.
    mock.log_key(Some(keys.statement(&log, 0)));
    start(keys.policy()).await.unwrap();
}
