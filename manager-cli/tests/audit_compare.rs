//! `dgsp-manager audit --compare`: fabricated `/v1/checkpoint` answers (notes signed by a
//! real manager key, witnessed notes by its derived ML-DSA-44 log key and a witness), served
//! from small servers on loopback, with a real tile directory as the log source. Two views
//! of one tree report nothing; two views that fork (the same size with two roots, or a
//! larger tree that does not extend the smaller) are a `split_view` carrying both notes,
//! and exit 3; an unreachable URL, a witnessed note of another tree and a bad log signature
//! are findings of their own, never a split. A witness is one more view
//! (`--compare witness:PREFIX`): a gateway run as a witness (`--witness-key`) serves the
//! newest checkpoint it cosigned at `GET PREFIX/<hex SHA-256(origin)>/checkpoint`; the same
//! tree elsewhere is consistent with it, another root at its size is a `split_view` with
//! the witness's note as evidence.

use crate::support;

use std::path::Path;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use dgsp_core::checkpoint::{origin_for, Checkpoint};
use dgsp_core::log_key::LogKeyStatement;
use dgsp_core::{Manager, ParamSet};
use dgsp_manager::audit::compare::{self, CompareReport};
use dgsp_manager::audit::{self};
use dgsp_manager::cli::{AuditArgs, HttpArgs};
use dgsp_manager::config::Config;
use dgsp_manager::exit;
use dgsp_manager::output::Output;
use dgsp_wire::log::Hash;
use dgsp_wire::merkle::{leaf_hash, MemoryTree, Nodes};
use dgsp_wire::note::cosignature::MlDsaCosigner;
use dgsp_wire::note::witnessed_note;
use dgsp_wire::tiles::tiles_for;
use rand_core::OsRng;

fn manager() -> &'static Manager {
    static M: OnceLock<Manager> = OnceLock::new();
    M.get_or_init(|| Manager::generate(ParamSet::Sha2_128f, &mut OsRng))
}

fn origin() -> String {
    origin_for(manager().public_key())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A tree of `n` leaves named `tag` (two tags make two histories).
fn tree(tags: &[&str]) -> MemoryTree {
    let mut t = MemoryTree::new();
    for (i, tag) in tags.iter().enumerate() {
        t.push(leaf_hash(format!("{tag}{i}").as_bytes()));
    }
    t
}

fn history_a() -> MemoryTree {
    tree(&["a"; 8])
}

/// Shares the first 3 entries with A, then differs.
fn history_b() -> MemoryTree {
    tree(&["a", "a", "a", "b", "b", "b", "b", "b"])
}

/// The group's signed note over `(size, root)`.
fn note(size: u64, root: Hash) -> String {
    manager().sign_checkpoint(&Checkpoint {
        origin: origin(),
        size,
        root,
        time_unix_ms: Some(now_ms()),
        snapshot: None,
    })
}

/// The group's log key (generation 0).
fn log_key() -> MlDsaCosigner {
    MlDsaCosigner::from_seed(&origin(), &manager().log_key_seed(0)).unwrap()
}

/// The test witness.
fn witness() -> MlDsaCosigner {
    MlDsaCosigner::from_seed("w1.example", &[7u8; 32]).unwrap()
}

/// The witnessed note over `(size, root)`: the log's line and the witness's.
fn witnessed(size: u64, root: Hash) -> String {
    let ts = now_ms() / 1000;
    let o = origin();
    let log_line = log_key().cosign(&o, size, &root, ts).unwrap();
    let w = witness().cosign(&o, size, &root, ts).unwrap();
    witnessed_note(&o, size, &root, &log_line, &[w])
}

/// A policy: the group's log key, the witness, quorum of it.
fn policy_file() -> tempfile::NamedTempFile {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        f.path(),
        format!(
            "log {}\nwitness w1 {}\nquorum w1\n",
            log_key().vkey(),
            witness().vkey()
        ),
    )
    .unwrap();
    f
}

/// What a registry or gateway serves at `/v1/checkpoint`.
struct View {
    note: String,
    witnessed: Option<String>,
    log_key: Option<String>,
}

fn view(t: &MemoryTree, size: u64, with_witnessed: bool) -> View {
    let root = t.root_at(size).unwrap();
    View {
        note: note(size, root),
        witnessed: with_witnessed.then(|| witnessed(size, root)),
        log_key: None,
    }
}

/// Serves `v` on loopback; returns its base URL.
async fn serve(v: View) -> String {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    use axum::routing::get;
    let (size, _) = dgsp_manager::audit::tiles::note_size_root(&v.note).unwrap();
    let mut body = serde_json::json!({
        "size": size,
        "head": "00".repeat(32),
        "time_unix_ms": now_ms(),
        "note": v.note,
    });
    if let Some(w) = v.witnessed {
        body["witnessed"] = w.into();
    }
    let log_key = v.log_key;
    let app = axum::Router::new()
        .route(
            "/v1/checkpoint",
            get(move || async move { axum::Json(body) }),
        )
        .route(
            "/v1/log/key",
            get(move || async move {
                match log_key {
                    Some(k) => k.into_response(),
                    None => StatusCode::NOT_FOUND.into_response(),
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// A published tile directory of the first `size` entries of `t` (hash tiles and the
/// signed `checkpoint`).
fn tile_dir(t: &MemoryTree, size: u64) -> tempfile::TempDir {
    tile_dir_with(t, size, &note(size, t.root_at(size).unwrap()))
}

/// [`tile_dir`] with `checkpoint` as the directory's checkpoint note.
fn tile_dir_with(t: &MemoryTree, size: u64, checkpoint: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for tile in tiles_for(0, size) {
        let Some(level) = tile.tree_level() else {
            continue;
        };
        let bytes: Vec<u8> = (0..u64::from(tile.width))
            .flat_map(|i| t.node(level, tile.index * 256 + i).unwrap())
            .collect();
        let path = dir.path().join(tile.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    std::fs::write(dir.path().join("checkpoint"), checkpoint).unwrap();
    dir
}

/// The group key, written as a key file.
fn key_file() -> tempfile::NamedTempFile {
    let f = tempfile::NamedTempFile::new().unwrap();
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(manager().public_key().to_bytes());
    std::fs::write(f.path(), b64).unwrap();
    f
}

fn args(urls: &[String], tiles: Option<&Path>, policy: Option<&Path>, key: &Path) -> AuditArgs {
    AuditArgs {
        file: None,
        registry: None,
        tiles: tiles.map(|p| p.display().to_string()),
        token: None,
        token_file: None,
        group_key: Some(key.display().to_string()),
        compare: urls.to_vec(),
        witness_policy: policy.map(Path::to_owned),
        http: HttpArgs {
            timeout_secs: 5,
            retries: 0,
            ..HttpArgs::default()
        },
    }
}

async fn compare(
    urls: &[String],
    tiles: Option<&Path>,
    policy: Option<&Path>,
) -> (CompareReport, i32) {
    let key = key_file();
    let a = args(urls, tiles, policy, key.path());
    let report = compare::compare(&a, &Config::default()).await.unwrap();
    eprintln!("{}", report.render());
    let code = audit::run(
        args(urls, tiles, policy, key.path()),
        Output { json: true },
        &Config::default(),
    )
    .await
    .unwrap();
    (report, code)
}

/// The split-view findings, as (urls, notes of the evidence).
fn splits(r: &CompareReport) -> Vec<(Vec<String>, Vec<String>)> {
    r.findings
        .iter()
        .filter(|f| f.kind.as_str() == "split_view")
        .map(|f| {
            (
                f.urls.clone(),
                f.evidence.iter().map(|e| e.note.clone()).collect(),
            )
        })
        .collect()
}

#[tokio::test]
async fn two_views_of_one_tree_are_consistent() {
    let a = history_a();
    let v5 = view(&a, 5, true);
    let v8 = view(&a, 8, true);
    let g1 = serve(v5).await;
    let g2 = serve(v8).await;
    let tiles = tile_dir(&a, 8);
    let policy = policy_file();
    let (r, code) = compare(&[g1, g2], Some(tiles.path()), Some(policy.path())).await;
    assert!(r.is_clean(), "{:?}", r.findings);
    assert_eq!(code, exit::OK);
    // Two views and the log source: three pairs, two needing proofs (5→8 twice), one same size.
    assert_eq!((r.pairs, r.consistent), (3, 3));
    assert_eq!(r.consistency_proofs, 2);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    for v in r.views.iter().filter(|v| !v.log_source) {
        assert!(v.log_signature_checked);
        assert_eq!(v.cosigners.len(), 1);
        assert_eq!(v.cosigners[0].name, "w1");
    }
}

#[tokio::test]
async fn the_same_size_with_two_roots_is_a_split_view_with_both_notes() {
    let (a, b) = (history_a(), history_b());
    let va = view(&a, 5, false);
    let vb = view(&b, 5, false);
    let (na, nb) = (va.note.clone(), vb.note.clone());
    let g1 = serve(va).await;
    let g2 = serve(vb).await;
    // No log source: the same size needs none.
    let (r, code) = compare(&[g1.clone(), g2.clone()], None, None).await;
    assert_eq!(code, exit::REJECTED);
    assert_eq!(
        splits(&r),
        vec![(vec![g1, g2], vec![na.clone(), nb.clone()])]
    );
    assert_eq!(r.kinds(), ["split_view"]);
    // The JSON report carries both notes verbatim.
    let json = serde_json::to_value(&r).unwrap();
    let ev = &json["findings"][0]["evidence"];
    assert_eq!(ev[0]["note"], na.as_str());
    assert_eq!(ev[1]["note"], nb.as_str());
}

#[tokio::test]
async fn a_larger_tree_that_does_not_extend_the_smaller_is_a_split_view() {
    let (a, b) = (history_a(), history_b());
    let va = view(&a, 5, true);
    let vb = view(&b, 8, true);
    let (na, nb) = (va.note.clone(), vb.note.clone());
    let g1 = serve(va).await;
    let g2 = serve(vb).await;
    let policy = policy_file();

    // The registry's tiles hold history B: the tree of size 8 is known, and it is not an
    // extension of G1's 5.
    let tiles_b = tile_dir(&b, 8);
    let (r, code) = compare(
        &[g1.clone(), g2.clone()],
        Some(tiles_b.path()),
        Some(policy.path()),
    )
    .await;
    assert_eq!(code, exit::REJECTED);
    let found = splits(&r);
    assert!(
        found.contains(&(vec![g1.clone(), g2.clone()], vec![na.clone(), nb.clone()])),
        "{found:?}"
    );
    // Both sides were cosigned by w1: the finding names it.
    let f = r
        .findings
        .iter()
        .find(|f| f.urls == [g1.clone(), g2.clone()])
        .unwrap();
    assert!(
        f.detail
            .contains("cosigned both trees (they equivocated): w1"),
        "{}",
        f.detail
    );
    // And G1 against the log source's own checkpoint.
    let src = tiles_b.path().display().to_string();
    assert!(
        found
            .iter()
            .any(|(u, _)| *u == vec![g1.clone(), src.clone()]),
        "{found:?}"
    );
    assert!(
        r.kinds().iter().all(|k| *k == "split_view"),
        "{:?}",
        r.kinds()
    );

    // The registry's tiles hold history A: G2's 8 is not in them, so the pair G1/G2 cannot
    // be decided from them, but G2 and the log source (A at 8) are split.
    let tiles_a = tile_dir(&a, 8);
    let (r, code) = compare(
        &[g1.clone(), g2.clone()],
        Some(tiles_a.path()),
        Some(policy.path()),
    )
    .await;
    assert_eq!(code, exit::REJECTED);
    let found = splits(&r);
    let src = tiles_a.path().display().to_string();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, vec![g2.clone(), src]);
    assert_eq!(found[0].1[0], nb);
    assert!(
        r.warnings.iter().any(|w| w.kind == "undecided"),
        "{:?}",
        r.warnings
    );
}

#[tokio::test]
async fn unreachable_and_bad_witnessed_views_are_findings_not_splits() {
    let a = history_a();
    let good = serve(view(&a, 8, true)).await;
    // A witnessed note of another tree than the view's signed note.
    let mut other = view(&a, 6, true);
    other.witnessed = Some(witnessed(5, a.root_at(5).unwrap()));
    let other = serve(other).await;
    // A port nobody listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let tiles = tile_dir(&a, 8);
    let policy = policy_file();
    let (r, code) = compare(
        &[good.clone(), other.clone(), closed.clone()],
        Some(tiles.path()),
        Some(policy.path()),
    )
    .await;
    assert_eq!(code, exit::REJECTED);
    let mut kinds = r.kinds();
    kinds.sort_unstable();
    assert_eq!(kinds, ["unreachable", "witnessed_mismatch"]);
    assert_eq!(
        r.findings
            .iter()
            .find(|f| f.kind.as_str() == "unreachable")
            .unwrap()
            .urls,
        [closed]
    );
    assert_eq!(
        r.findings
            .iter()
            .find(|f| f.kind.as_str() == "witnessed_mismatch")
            .unwrap()
            .urls,
        [other]
    );
    // The two verified views and the source are consistent.
    assert_eq!((r.pairs, r.consistent), (3, 3));
}

#[tokio::test]
async fn without_a_policy_the_log_key_comes_from_the_group_statement() {
    let a = history_a();
    let statement = manager()
        .sign_log_key(&LogKeyStatement {
            origin: origin(),
            vkey: log_key().vkey(),
            generation: 0,
            time_unix_ms: now_ms(),
        })
        .unwrap();
    let mut registry = view(&a, 8, true);
    registry.log_key = Some(statement);
    let registry = serve(registry).await;
    // A gateway whose witnessed note is signed by another key under the log's name.
    let root = a.root_at(8).unwrap();
    let forged = MlDsaCosigner::from_seed(&origin(), &[9u8; 32]).unwrap();
    let line = forged.cosign(&origin(), 8, &root, now_ms() / 1000).unwrap();
    let mut gw = view(&a, 8, false);
    gw.witnessed = Some(witnessed_note(&origin(), 8, &root, &line, &[]));
    let gw = serve(gw).await;
    let (r, code) = compare(&[registry, gw.clone()], None, None).await;
    assert_eq!(code, exit::REJECTED);
    assert_eq!(r.kinds(), ["witnessed_signature"]);
    assert_eq!(r.findings[0].urls, [gw]);
    assert!(r.views[0].log_signature_checked);
    assert_eq!((r.pairs, r.consistent), (1, 1));
}

/// A registry signing with its log key (what the gateway's witness learns from its
/// `GET /v1/log/key`), and a gateway acting as a witness of its log (`--witness-key`),
/// ready to cosign.
async fn registry_and_witness_gateway(
    dir: &Path,
) -> (
    support::Registry,
    support::Gateway,
    dgsp_gateway::witnessing::WitnessKey,
) {
    use std::sync::Arc;
    use std::time::Duration;
    let reg = support::registry_publishing(Box::new(|manager: &Arc<Manager>| {
        dgsp_registry::publisher::PublisherConfig {
            checkpoint_interval: Duration::from_secs(1),
            log_key: Some(Arc::new(
                dgsp_registry::witnessing::LogKey::derive(manager, 0, now_ms()).unwrap(),
            )),
            ..dgsp_registry::publisher::PublisherConfig::default()
        }
    }))
    .await;
    let key = dgsp_gateway::witnessing::WitnessKey::generate("gw.test.invalid").unwrap();
    let mut c = support::gateway_config(
        &reg.feed_url,
        dgsp_gateway::anchor::Anchor::Key(Box::new(reg.manager.public_key().clone())),
        dir,
    );
    c.witness = Some(dgsp_gateway::witnessing::WitnessConfig {
        key: key.clone(),
        logs: Default::default(),
        state: dir.join("witness-state"),
        init_state: true,
    });
    let gw = support::gateway(c).await;
    support::wait_for("the gateway's witness to learn the log key", || async {
        let w = gw.get("/readyz").await.1["witness"].clone();
        (w["ready"] == true).then_some(w)
    })
    .await;
    (reg, gw, key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_acting_as_a_witness_is_one_more_view() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, gw, wkey) = registry_and_witness_gateway(dir.path()).await;
    let m: &Manager = &reg.manager;
    let origin = origin_for(m.public_key());
    let log = MlDsaCosigner::from_seed(&origin, &m.log_key_seed(0)).unwrap();
    let signed = |size: u64, root: Hash| {
        m.sign_checkpoint(&Checkpoint {
            origin: origin.clone(),
            size,
            root,
            time_unix_ms: Some(now_ms()),
            snapshot: None,
        })
    };
    let log_line =
        |size: u64, root: &Hash| log.cosign(&origin, size, root, now_ms() / 1000).unwrap();
    let (a, b) = (history_a(), history_b());
    let (ra, rb) = (a.root_at(5).unwrap(), b.root_at(5).unwrap());
    let prefix = format!("{}/witness", gw.url);

    // Nothing cosigned yet: the monitoring read says so (404).
    let hash = dgsp_witness::server::origin_hash(&origin);
    let r = reqwest::get(format!("{prefix}/{hash}/checkpoint"))
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);

    // The witness cosigns history A at size 5, and refuses B at size 5 (422).
    let submit = |old: u64, size: u64, root: Hash| {
        let body = dgsp_witness::protocol::AddCheckpoint {
            old,
            proof: Vec::new(),
            checkpoint: witnessed_note(&origin, size, &root, &log_line(size, &root), &[]),
        }
        .encode();
        let url = format!("{prefix}/add-checkpoint");
        async move {
            let r = reqwest::Client::new()
                .post(url)
                .body(body)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let (status, cosig) = submit(0, 5, ra).await;
    assert_eq!(status, 200, "{cosig}");
    let served = reqwest::get(format!("{prefix}/{hash}/checkpoint"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(served.ends_with(&cosig), "{served}");
    let witness_view = format!("witness:{prefix}");

    // The group key and the policy: the log key, the gateway witness; quorum none, so that a
    // view the witness never cosigned still verifies (its log signature is checked).
    let key = tempfile::NamedTempFile::new().unwrap();
    use base64::Engine;
    std::fs::write(
        key.path(),
        base64::engine::general_purpose::STANDARD.encode(m.public_key().to_bytes()),
    )
    .unwrap();
    let policy = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        policy.path(),
        format!(
            "log {}\nwitness gw {}\nquorum none\n",
            log.vkey(),
            wkey.vkey().unwrap()
        ),
    )
    .unwrap();
    let tiles = tile_dir_with(&a, 8, &signed(8, a.root_at(8).unwrap()));
    let run = |urls: Vec<String>, policy: Option<&Path>| {
        let a = args(&urls, Some(tiles.path()), policy, key.path());
        async move { compare::compare(&a, &Config::default()).await }
    };

    // A gateway serving history A at 5, cosigned by the witness: consistent with the
    // witness's own view and the log source's (A at 8).
    let ga = serve(View {
        note: signed(5, ra),
        witnessed: Some(witnessed_note(
            &origin,
            5,
            &ra,
            &log_line(5, &ra),
            &[cosig.trim_end().to_owned()],
        )),
        log_key: None,
    })
    .await;
    let r = run(vec![ga.clone(), witness_view.clone()], Some(policy.path()))
        .await
        .unwrap();
    eprintln!("{}", r.render());
    assert!(r.is_clean(), "{:?}", r.findings);
    assert_eq!((r.pairs, r.consistent), (3, 3));
    let w = r.views.iter().find(|v| v.witness).unwrap();
    assert_eq!(
        (w.url.as_str(), w.size, w.verified, w.log_signature_checked),
        (witness_view.as_str(), Some(5), true, true)
    );
    assert_eq!(w.cosigners[0].name, "gw");
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["views"][1]["witness"], true);
    assert!(json["views"][0].get("witness").is_none());

    // A gateway serving history B at 5 (signed by the log, never cosigned): split from
    // the witness's view, both notes as evidence; exit 3.
    let (status, why) = submit(5, 5, rb).await;
    assert_eq!(status, 422, "{why}");
    let gb_note = signed(5, rb);
    let gb = serve(View {
        note: gb_note.clone(),
        witnessed: Some(witnessed_note(&origin, 5, &rb, &log_line(5, &rb), &[])),
        log_key: None,
    })
    .await;
    let r = run(vec![gb.clone(), witness_view.clone()], Some(policy.path()))
        .await
        .unwrap();
    eprintln!("{}", r.render());
    let split = r
        .findings
        .iter()
        .find(|f| f.kind.as_str() == "split_view" && f.urls == [gb.clone(), witness_view.clone()])
        .unwrap_or_else(|| panic!("{:?}", r.findings));
    assert_eq!(split.evidence[0].note, gb_note);
    assert_eq!(split.evidence[1].note, served);
    assert!(
        split.detail.contains("two trees of size 5"),
        "{}",
        split.detail
    );
    let key_path = key.path().to_owned();
    let code = audit::run(
        args(
            &[gb.clone(), witness_view.clone()],
            Some(tiles.path()),
            Some(policy.path()),
            &key_path,
        ),
        Output { json: true },
        &Config::default(),
    )
    .await
    .unwrap();
    assert_eq!(code, exit::REJECTED);

    // A prefix that serves no witness is unreachable, not a split; a witness view needs the
    // policy that names the witness's key.
    let nowhere = format!("witness:{}/nope", gw.url);
    let r = run(vec![ga.clone(), nowhere.clone()], Some(policy.path()))
        .await
        .unwrap();
    assert_eq!(r.kinds(), ["unreachable"]);
    assert_eq!(r.findings[0].urls, [nowhere]);
    assert!(run(vec![ga, witness_view], None).await.is_err());
    drop(reg);
}
