//! The gateway's witness keeps its state with its key, apart from the replica
//! (`--witness-state`): a gateway that lost its replica (a new pod, a wiped `--data`) still
//! refuses to cosign from `old 0` what it cosigned before; one whose state is missing
//! refuses to start unless told to make one (`--witness-init-state`), which starts from the
//! trees the replica holds (what earlier gateways kept there). And it refuses extension
//! lines on ML-DSA-44 log notes, which neither signature covers.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use dgsp_core::checkpoint::origin_for;
use dgsp_core::Manager;
use dgsp_gateway::anchor::Anchor;
use dgsp_gateway::replica::Replica;
use dgsp_gateway::server as gw;
use dgsp_gateway::witnessing::{WitnessConfig, WitnessKey};
use dgsp_registry::publisher::PublisherConfig;
use dgsp_registry::witnessing::LogKey;
use dgsp_wire::log::now_ms;
use dgsp_wire::merkle::{leaf_hash, root};
use dgsp_wire::note::cosignature::MlDsaCosigner;
use dgsp_wire::note::witnessed::witnessed_note;
use dgsp_wire::note::CheckpointBody;
use dgsp_witness::client::{SubmitError, Submitter, WitnessClient};
use dgsp_witness::protocol::AddCheckpoint;
use dgsp_witness::server::{TreeHead, WitnessStore};
use support::{gateway, gateway_config, wait_for, Gateway, Registry};

async fn registry_with_log_key() -> Registry {
    support::registry_publishing(Box::new(|manager: &Arc<Manager>| PublisherConfig {
        checkpoint_interval: Duration::from_secs(1),
        log_key: Some(Arc::new(LogKey::derive(manager, 0, now_ms()).unwrap())),
        ..PublisherConfig::default()
    }))
    .await
}

/// A gateway of `reg` with its data in `data` and its witness's state in `state`.
fn config(
    reg: &Registry,
    data: &std::path::Path,
    key: &WitnessKey,
    state: &std::path::Path,
    init_state: bool,
) -> gw::Config {
    let mut c = gateway_config(
        &reg.feed_url,
        Anchor::Key(Box::new(reg.manager.public_key().clone())),
        data,
    );
    c.witness = Some(WitnessConfig {
        key: key.clone(),
        logs: Default::default(),
        state: state.to_owned(),
        init_state,
    });
    c
}

async fn witness_ready(gw: &Gateway) {
    wait_for("the gateway's witness to learn the log key", || async {
        (gw.get("/readyz").await.1["witness"]["ready"] == true).then_some(())
    })
    .await;
}

fn client(gw: &Gateway) -> WitnessClient {
    WitnessClient::new(
        "gw",
        &format!("{}/witness", gw.url),
        reqwest::Client::new(),
        Duration::from_secs(10),
    )
    .unwrap()
}

/// The group's log key and a tree of `size` leaves: its root and its note, signed.
fn note(manager: &Manager, size: u64, tag: &[u8]) -> ([u8; 32], String) {
    let origin = origin_for(manager.public_key());
    let key = MlDsaCosigner::from_seed(&origin, &manager.log_key_seed(0)).unwrap();
    let leaves: Vec<[u8; 32]> = (0..size)
        .map(|i| leaf_hash(&[tag, &i.to_be_bytes()].concat()))
        .collect();
    let r = root(&leaves);
    let line = key.cosign(&origin, size, &r, now_ms() / 1000).unwrap();
    (r, witnessed_note(&origin, size, &r, &line, &[]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_witness_state_survives_the_loss_of_the_replica() {
    let reg = registry_with_log_key().await;
    let key = WitnessKey::generate("gw1.test.invalid").unwrap();
    let keep = tempfile::tempdir().unwrap();
    let state = keep.path().join("witness.key.state");
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());

    // First start: a new key, its state made.
    let gw1 = gateway(config(&reg, d1.path(), &key, &state, true)).await;
    witness_ready(&gw1).await;
    let (r3, n3) = note(&reg.manager, 3, b"a");
    let mut sub = Submitter::new(client(&gw1));
    sub.cosign(3, &n3, |_| Ok(Vec::new())).await.unwrap();

    // Extension lines on an ML-DSA-44 note: neither signature covers them, refused.
    let origin = origin_for(reg.manager.public_key());
    let log = MlDsaCosigner::from_seed(&origin, &reg.manager.log_key_seed(0)).unwrap();
    let mut ext = CheckpointBody::plain(&origin, 3, r3);
    ext.extensions.push("note the log never signed".into());
    let line = log.cosign(&origin, 3, &r3, now_ms() / 1000).unwrap();
    let with_ext = AddCheckpoint {
        old: 3,
        proof: Vec::new(),
        checkpoint: format!("{}\n{line}", ext.to_body()),
    };
    let r = client(&gw1).add_checkpoint(&with_ext).await;
    assert!(matches!(r, Err(SubmitError::Forbidden(_))), "{r:?}");
    gw1.shutdown().await;

    // The replica is lost (another data directory); the state is kept: what was cosigned
    // is still held, so `old 0` is 409 with its size and another tree of size 3 is 422.
    let gw2 = gateway(config(&reg, d2.path(), &key, &state, false)).await;
    witness_ready(&gw2).await;
    let (_, other) = note(&reg.manager, 3, b"fork");
    let from_zero = AddCheckpoint {
        old: 0,
        proof: Vec::new(),
        checkpoint: other.clone(),
    };
    assert_eq!(
        client(&gw2).add_checkpoint(&from_zero).await,
        Err(SubmitError::Conflict { size: 3 })
    );
    let fork = AddCheckpoint {
        old: 3,
        proof: Vec::new(),
        checkpoint: other,
    };
    assert!(matches!(
        client(&gw2).add_checkpoint(&fork).await,
        Err(SubmitError::Unprocessable(_))
    ));
    let (_, ready) = gw2.get("/readyz").await;
    assert_eq!(ready["witness"]["logs"][0]["size"], 3, "{ready}");
    gw2.shutdown().await;
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_witness_without_its_state_starts_only_when_told_and_from_the_replica() {
    let reg = registry_with_log_key().await;
    let key = WitnessKey::generate("gw1.test.invalid").unwrap();
    let keep = tempfile::tempdir().unwrap();
    let state = keep.path().join("state");
    let data = tempfile::tempdir().unwrap();

    // No state, not told: refused, naming the flags.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let err = gw::start(config(&reg, data.path(), &key, &state, false), listener)
        .await
        .err()
        .expect("a witness without its state must not start")
        .to_string();
    assert!(
        err.contains("--witness-state") && err.contains("--witness-init-state"),
        "{err}"
    );
    assert!(!state.exists());

    // The replica holds a tree an earlier gateway cosigned (its `witness` column family):
    // told to make a state, the witness starts from it, not from nothing.
    let origin = origin_for(reg.manager.public_key());
    let held = TreeHead {
        size: 4,
        root: [7; 32],
    };
    {
        let replica = Replica::open(&data.path().join("replica")).unwrap();
        assert_eq!(replica.compare_and_set(&origin, None, held), Ok(true));
    }
    let gw = gateway(config(&reg, data.path(), &key, &state, true)).await;
    witness_ready(&gw).await;
    let (_, n) = note(&reg.manager, 5, b"b");
    let from_zero = AddCheckpoint {
        old: 0,
        proof: Vec::new(),
        checkpoint: n,
    };
    assert_eq!(
        client(&gw).add_checkpoint(&from_zero).await,
        Err(SubmitError::Conflict { size: 4 })
    );
    gw.shutdown().await;
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_witness_keeps_its_log_key_statement_and_never_takes_an_older_generation() {
    use dgsp_core::log_key::LogKeyStatement;
    // The registry serves generation 0.
    let reg = registry_with_log_key().await;
    let m = reg.manager.clone();
    let origin = origin_for(m.public_key());
    let key = WitnessKey::generate("gw1.test.invalid").unwrap();
    let keep = tempfile::tempdir().unwrap();
    let state = keep.path().join("state");
    let data = tempfile::tempdir().unwrap();
    let gen1 = MlDsaCosigner::from_seed(&origin, &m.log_key_seed(1)).unwrap();
    let statement = |vkey: String, generation: u64| {
        m.sign_log_key(&LogKeyStatement {
            origin: origin.clone(),
            vkey,
            generation,
            time_unix_ms: now_ms(),
        })
        .unwrap()
    };
    // The state already holds the group's statement of generation 1 (the registry was at
    // generation 1 when this witness last learned its key): generation 0 is a retired
    // key's statement, refused.
    dgsp_witness::server::DirStore::create(&state, &[])
        .unwrap()
        .keep_log_key_statement(&statement(gen1.vkey(), 1))
        .unwrap();
    let gw = gateway(config(&reg, data.path(), &key, &state, false)).await;
    let (_, n) = note(&m, 1, b"a");
    let req = AddCheckpoint {
        old: 0,
        proof: Vec::new(),
        checkpoint: n,
    };
    let body = wait_for("the witness to refuse generation 0", || async {
        match client(&gw).add_checkpoint(&req).await {
            Err(SubmitError::Server { status: 503, body }) if body.contains("generation") => {
                Some(body)
            }
            _ => None,
        }
    })
    .await;
    assert!(
        body.contains("generation 0, older than generation 1"),
        "{body}"
    );
    let (_, ready) = gw.get("/readyz").await;
    assert_eq!(ready["witness"]["ready"], false, "{ready}");
    gw.shutdown().await;

    // A state holding another key for generation 0 than the registry's: refused too.
    let other = MlDsaCosigner::from_seed(&origin, &[7; 32]).unwrap();
    std::fs::write(state.join("log-key"), statement(other.vkey(), 0)).unwrap();
    let gw = gateway(config(&reg, data.path(), &key, &state, false)).await;
    wait_for(
        "the witness to refuse another key of generation 0",
        || async {
            match client(&gw).add_checkpoint(&req).await {
                Err(SubmitError::Server { status: 503, body })
                    if body.contains("another key for generation 0") =>
                {
                    Some(())
                }
                _ => None,
            }
        },
    )
    .await;
    gw.shutdown().await;

    // A kept statement that does not verify under the group key refuses the start.
    std::fs::write(state.join("log-key"), "not a statement\n").unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let err = gw::start(config(&reg, data.path(), &key, &state, false), listener)
        .await
        .err()
        .expect("a damaged kept statement must not start")
        .to_string();
    assert!(
        err.contains("--witness-state") && err.contains("log-key"),
        "{err}"
    );

    // An older statement of the same generation (each registry signs its own at its
    // start) names the same key: taken, and the newer one stays kept.
    let gen0 = MlDsaCosigner::from_seed(&origin, &m.log_key_seed(0)).unwrap();
    let newer = statement(gen0.vkey(), 0);
    std::fs::write(state.join("log-key"), &newer).unwrap();
    let gw = gateway(config(&reg, data.path(), &key, &state, false)).await;
    witness_ready(&gw).await;
    assert_eq!(
        std::fs::read_to_string(state.join("log-key")).unwrap(),
        newer
    );
    gw.shutdown().await;
    reg.shutdown().await;
}
