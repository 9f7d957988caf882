//! Seed corpora of the fuzz targets `gateway_feed`, `request_bodies` and `cli_files`
//! (fuzz/, docs/fuzzing.md), from this crate because it is the one that depends on all
//! three libraries. Each test builds one valid input per selector of its target (the
//! selector as first byte), checks that it gets through the very functions the target
//! calls, as far as a valid input goes, and with `DGSP_FUZZ_SEEDS=DIR` (relative to the
//! repository root) writes them to `DIR/<target>/`:
//!
//!   DGSP_FUZZ_SEEDS=fuzz/seeds cargo test -p dgsp-manager --test integration fuzz_seeds::
//!
//! The fixed group and member are those of `fuzz/fuzz_targets/common/mod.rs` (same recipe,
//! same generator seed), so the signed entries, notes and snapshots verify in the targets.

use std::collections::HashMap;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Body as HttpBody;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::checkpoint::{origin_for, Checkpoint, SnapshotRef};
use dgsp_core::revocation::{RevocationSet, SignedSnapshot, SnapshotRecord};
use dgsp_core::{Certificate, CidStar, CsrItem, Manager, MemberKey, ParamSet, Signature, Zeta};
use dgsp_gateway::api::body::{encode_binary, VerifyBody, BINARY};
use dgsp_gateway::api::model::{
    CheckpointEvidence, Freshness, JudgeRequest, Note, ProofRef, Revocation, Status, VerifyAnswer,
};
use dgsp_gateway::api::verify::{decode_item, Item, JudgeDecode};
use dgsp_gateway::follower::{apply, fetch};
use dgsp_gateway::replica::Applied;
use dgsp_gateway::state::View;
use dgsp_manager::audit::{source, Auditor};
use dgsp_manager::documents::{self, CertificatesFile, CsrFile, JoinFile};
use dgsp_manager::evidence::{self, Checks, Policy};
use dgsp_manager::wallet::journal::{self, Journal};
use dgsp_manager::wallet::payload::Payload;
use dgsp_manager::wallet::{envelope, import, Paths, Wallet};
use dgsp_manager::{member, verifier};
use dgsp_registry::api::admin::{self, MemberQuery};
use dgsp_registry::api::problem::{Body, Params};
use dgsp_registry::api::public::{Entries, Page};
use dgsp_registry::keyfile::KdfParams;
use dgsp_registry::publisher::{snapshot_from_json, snapshot_json};
use dgsp_registry::store::StoredNote;
use dgsp_wire::events::Event;
use dgsp_wire::log::{Entry, GENESIS_PREV};
use dgsp_wire::merkle::{self, Frontier};
use dgsp_wire::registry_api::{
    BackupRequest, BulkJoinRequest, IssueRequest, JoinRequest, OpenRequest,
};
use dgsp_wire::tiles::leaf_of;
use indicatif::ProgressBar;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::json;
use sha3::{Digest, Sha3_256};
use zeroize::Zeroizing;

// The fixture of fuzz/fuzz_targets/common/mod.rs and cli_files.rs.
const SEED: u64 = 1717;
const PARAMS: ParamSet = ParamSet::SlhDsaSha2_128f;
const MEMBER: u64 = 3;
const FUZZ_KDF: KdfParams = KdfParams {
    m_kib: 8,
    t: 1,
    p: 1,
};
const PASSPHRASE: &[u8] = b"fuzzing passphrase";
const JOURNAL_ID: [u8; 16] = [0x1d; 16];
const JOURNAL_KEY: [u8; 32] = [7; 32];
const MESSAGE: &[u8] = b"fuzzed evidence";
const TIME: u64 = 1_795_000_000_000;

struct Fixture {
    manager: Manager,
    member: MemberKey,
    items: Vec<CsrItem>,
    /// The certificates of both one-time keys (counters 0 and 1).
    certificates: Vec<Certificate>,
    /// `MESSAGE` signed with the first.
    signature: Signature,
}

fn fixture() -> Fixture {
    let mut rng = ChaCha20Rng::seed_from_u64(SEED);
    let manager = Manager::generate(PARAMS, &mut rng);
    let cid_star = CidStar::from_slice(PARAMS, manager.cid_star(MEMBER).as_bytes()).unwrap();
    let member = MemberKey::generate(PARAMS, MEMBER, cid_star, &mut rng);
    let items = member.csr(2, &mut rng);
    let pks: Vec<_> = items.iter().map(|i| *i.wots_pk()).collect();
    let certificates = manager.certify(MEMBER, 0, &pks);
    let item = CsrItem::from_seed(&member, items[0].wots_seed().clone());
    let signature = member
        .import(manager.public_key(), item, &certificates[0])
        .unwrap()
        .sign(MESSAGE);
    Fixture {
        manager,
        member,
        items,
        certificates,
        signature,
    }
}

fn b64(bytes: &[u8]) -> String {
    B64.encode(bytes)
}

/// Pretty JSON of a document, as the CLI writes it.
fn pretty<T: serde::Serialize>(doc: &T) -> Vec<u8> {
    let mut v = serde_json::to_vec_pretty(doc).unwrap();
    v.push(b'\n');
    v
}

fn seed(selector: u8, bytes: &[u8]) -> Vec<u8> {
    [&[selector][..], bytes].concat()
}

/// Writes the seeds when `DGSP_FUZZ_SEEDS` is set.
fn write(target: &str, seeds: &[(&str, Vec<u8>)]) {
    let Some(dir) = std::env::var_os("DGSP_FUZZ_SEEDS") else {
        return;
    };
    let mut dir = PathBuf::from(dir);
    if dir.is_relative() {
        dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir);
    }
    let dir = dir.join(target);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in seeds {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// A small log of the group: created, a member joins, gets two certificates, is revoked,
/// a signature is opened, snapshot 1 holds the revocation, a timed checkpoint covers it
/// all and names the snapshot. Entries keep their private parts (as exported).
fn log(f: &Fixture) -> Vec<Entry> {
    let pk = f.manager.public_key();
    let zetas: Vec<Zeta> = f.certificates.iter().map(|c| *c.zeta()).collect();
    let set = RevocationSet::from_zetas(zetas.iter().copied());
    let record = SnapshotRecord::genesis(pk.fingerprint(), 5, set.len(), set.root(), TIME);
    let opening = f.manager.open(MESSAGE, &f.signature).unwrap();
    let events = [
        Event::group_created(pk),
        Event::MemberJoined {
            id: MEMBER,
            username: "alice".into(),
        },
        Event::CertificatesIssued {
            id: MEMBER,
            first: 0,
            count: 2,
            wots_pk_digests: f
                .items
                .iter()
                .map(|i| hex::encode(Sha3_256::digest(i.wots_pk().as_bytes())))
                .collect(),
        },
        Event::MemberRevoked {
            id: MEMBER,
            counter: 2,
            first: 0,
            zetas: zetas.iter().map(|z| hex::encode(z.as_bytes())).collect(),
        },
        Event::SignatureOpened {
            signature: b64(&f.signature.to_bytes()),
            message_digest: hex::encode(Sha3_256::digest(MESSAGE)),
            digest: Some(hex::encode(f.signature.message_digest(MESSAGE).as_bytes())),
            id: opening.id,
            pi: hex::encode(opening.pi.as_bytes()),
        },
        Event::SnapshotPublished {
            snapshot: snapshot_json(&f.manager.sign_snapshot(&record)),
        },
    ];
    let mut entries: Vec<Entry> = Vec::new();
    let mut prev = GENESIS_PREV;
    for (i, event) in events.iter().enumerate() {
        let e = Entry::seal(i as u64 + 1, TIME + i as u64, event, &prev);
        prev = e.hash_bytes().unwrap();
        entries.push(e);
    }
    // The registry's note: the Merkle root of the six entries.
    let leaves: Vec<_> = entries.iter().map(leaf_of).collect();
    let root = merkle::root(&leaves);
    let note = f.manager.sign_checkpoint(&Checkpoint {
        origin: origin_for(pk),
        size: 6,
        root,
        time_unix_ms: Some(TIME + 10),
        snapshot: Some(SnapshotRef::of(&record)),
    });
    let checkpoint = Event::Checkpoint {
        size: 6,
        head: hex::encode(root),
        note,
    };
    entries.push(Entry::seal(7, TIME + 10, &checkpoint, &prev));
    entries
}

fn genesis(f: &Fixture) -> View {
    View {
        group: Arc::new(f.manager.public_key().clone()),
        applied: Applied {
            seq: 0,
            hash: GENESIS_PREV,
            time_ms: 0,
        },
        checkpoint: None,
        snapshot: None,
        set: Arc::new(RevocationSet::from_zetas(std::iter::empty())),
        unsnapshotted: Arc::new(HashMap::new()),
        tree: Frontier::new(),
        witness_policy: None,
    }
}

#[test]
fn gateway_feed_seeds() {
    let f = fixture();
    let entries = log(&f);
    let page = Entries {
        entries: entries.iter().map(Entry::redacted).collect(),
        head_seq: 7,
    };
    let page = serde_json::to_vec(&page).unwrap();
    let cp = &entries[6];
    let answer = StoredNote {
        size: 6,
        head: entries[6].public["head"].as_str().unwrap().to_owned(),
        time_unix_ms: TIME + 10,
        note: apply::checkpoint_note(cp).unwrap().to_owned(),
        witnessed: None,
    };
    let answer = serde_json::to_vec(&answer).unwrap();
    let snapshot = serde_json::to_vec(&entries[5].public["snapshot"]).unwrap();
    let entry = serde_json::to_vec(&entries[3]).unwrap();

    // As the follower takes them: the chain, entry 1, the checkpoint, the covered range.
    let view = genesis(&f);
    let parsed = fetch::parse_page(&page).unwrap();
    let mut prev = (0, GENESIS_PREV);
    for e in &parsed.entries {
        e.check(prev.0, &prev.1).unwrap();
        prev = (e.seq, e.hash_bytes().unwrap());
    }
    apply::check_group(&view, &parsed.entries[0]).unwrap();
    let verified = apply::check_checkpoint(&view, &parsed.entries[6]).unwrap();
    let (update, next, _) =
        apply::apply_range(&view, &parsed.entries[..6], Arc::new(verified), 7).unwrap();
    assert_eq!((update.revocations.len(), update.snapshots.len()), (2, 1));
    assert_eq!(next.applied.seq, 6);
    let info = fetch::parse_checkpoint(&answer).unwrap();
    assert_eq!(
        apply::check_note(&view, &info.note).unwrap().size,
        info.size
    );
    let s = snapshot_from_json(&serde_json::from_slice(&snapshot).unwrap()).unwrap();
    s.verify(f.manager.public_key()).unwrap();
    let e: Entry = serde_json::from_slice(&entry).unwrap();
    e.event().unwrap();

    write(
        "gateway_feed",
        &[
            ("page", seed(0, &page)),
            ("page-resealed", seed(1, &page)),
            ("checkpoint-answer", seed(2, &answer)),
            ("snapshot", seed(3, &snapshot)),
            ("entry-revocation", seed(4, &entry)),
        ],
    );
}

fn request(content_type: &str, body: &[u8]) -> Request {
    Request::builder()
        .method("POST")
        .uri("/")
        .header(CONTENT_TYPE, content_type)
        .body(HttpBody::from(body.to_vec()))
        .unwrap()
}

async fn json<T: serde::de::DeserializeOwned>(body: &[u8]) -> T {
    match Body::<T>::from_request(request("application/json", body), &()).await {
        Ok(Body(v)) => v,
        Err(p) => panic!("{}: {p:?}", String::from_utf8_lossy(body)),
    }
}

async fn verify_items(content_type: &str, body: &[u8], batch: bool) -> usize {
    let b = VerifyBody::from_request(request(content_type, body), &())
        .await
        .unwrap_or_else(|p| panic!("{p:?}"));
    let items = if batch {
        b.batch(256).unwrap_or_else(|p| panic!("{p:?}"))
    } else {
        vec![b.single().unwrap_or_else(|p| panic!("{p:?}"))]
    };
    for item in &items {
        let decoded = decode_item(String::new, item).unwrap_or_else(|p| panic!("{p:?}"));
        assert!(matches!(decoded, Item::Ready { .. }));
    }
    items.len()
}

/// A request body as a client sends it (compact JSON).
fn to_json(body: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec(body).unwrap()
}

#[tokio::test]
async fn request_body_seeds() {
    let f = fixture();
    let sig = f.signature.to_bytes();
    let opening = f.manager.open(MESSAGE, &f.signature).unwrap();
    let cid_star = f.member.cid_star();
    let item = json!({"message": b64(MESSAGE), "signature": b64(&sig)});
    let bodies: Vec<(&str, u8, Vec<u8>)> = vec![
        (
            "join",
            0,
            to_json(&JoinRequest {
                username: "alice".into(),
            }),
        ),
        (
            "join-bulk",
            1,
            to_json(&BulkJoinRequest {
                usernames: vec!["alice".into(), "bob".into()],
            }),
        ),
        (
            "issue",
            2,
            to_json(&IssueRequest {
                cid_star: b64(cid_star.as_bytes()),
                wots_pks: f.items.iter().map(|i| b64(i.wots_pk().as_bytes())).collect(),
            }),
        ),
        (
            "open",
            3,
            to_json(&OpenRequest {
                message: b64(MESSAGE),
                signature: b64(&sig),
            }),
        ),
        (
            "backup",
            4,
            to_json(&BackupRequest {
                name: Some("nightly-1".into()),
            }),
        ),
        ("query", 5, b"limit=10&from=2".to_vec()),
        ("query-feed", 5, b"after=6&limit=100".to_vec()),
        ("verify-json", 6, item.to_string().into_bytes()),
        (
            "batch-json",
            7,
            json!({"items": [item, item]}).to_string().into_bytes(),
        ),
        (
            "verify-binary",
            8,
            encode_binary(&[(MESSAGE, &sig)], false),
        ),
        (
            "batch-binary",
            9,
            encode_binary(&[(MESSAGE, &sig), (b"", &sig)], true),
        ),
        (
            "judge",
            10,
            json!({"message": b64(MESSAGE), "signature": b64(&sig), "id": MEMBER, "pi": b64(opening.pi.as_bytes())})
                .to_string()
                .into_bytes(),
        ),
        (
            "zeta",
            11,
            hex::encode(f.signature.zeta().as_bytes()).into_bytes(),
        ),
    ];

    for (name, selector, body) in &bodies {
        match selector {
            0 => admin::check_join(&json::<JoinRequest>(body).await).unwrap(),
            1 => admin::check_bulk_join(&json::<BulkJoinRequest>(body).await).unwrap(),
            2 => assert_eq!(
                admin::decode_issue(&json::<IssueRequest>(body).await, PARAMS)
                    .unwrap()
                    .1
                    .len(),
                2
            ),
            3 => {
                admin::decode_open(&json::<OpenRequest>(body).await).unwrap();
            }
            4 => admin::check_backup(&json::<BackupRequest>(body).await).unwrap(),
            5 => {
                let text = std::str::from_utf8(body).unwrap();
                let req = Request::builder()
                    .uri(format!("/?{text}"))
                    .body(())
                    .unwrap();
                let (mut parts, ()) = req.into_parts();
                assert!(Params::<Page>::from_request_parts(&mut parts, &())
                    .await
                    .is_ok());
                if *name == "query" {
                    assert!(Params::<MemberQuery>::from_request_parts(&mut parts, &())
                        .await
                        .is_ok());
                }
            }
            6 => assert_eq!(verify_items("application/json", body, false).await, 1),
            7 => assert_eq!(verify_items("application/json", body, true).await, 2),
            8 => assert_eq!(verify_items(BINARY, body, false).await, 1),
            9 => assert_eq!(verify_items(BINARY, body, true).await, 2),
            10 => {
                json::<JudgeRequest>(body).await.decode(PARAMS).unwrap();
            }
            _ => assert!(dgsp_gateway::api::revocations::parse_zeta(
                std::str::from_utf8(body).unwrap()
            )
            .is_some()),
        }
    }
    let seeds: Vec<(&str, Vec<u8>)> = bodies
        .iter()
        .map(|(name, selector, body)| (*name, seed(*selector, body)))
        .collect();
    write("request_bodies", &seeds);
}

#[test]
fn cli_file_seeds() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("file");
    let pk = f.manager.public_key();
    let cid_star = f.member.cid_star();
    let pks: Vec<String> = f
        .items
        .iter()
        .map(|i| b64(i.wots_pk().as_bytes()))
        .collect();

    let join = pretty(&JoinFile {
        format: documents::JOIN_FORMAT.into(),
        id: MEMBER,
        username: "alice".into(),
        cid_star: b64(cid_star.as_bytes()),
        group_public_key: b64(&pk.to_bytes()),
        fingerprint: hex::encode(pk.fingerprint()),
    });
    let file: JoinFile = documents::parse(&path, &join, documents::JOIN_FORMAT).unwrap();
    member::decode_join(&path, &file).unwrap();

    let csr = pretty(&CsrFile {
        format: documents::CSR_FORMAT.into(),
        params: PARAMS,
        id: MEMBER,
        cid_star: b64(cid_star.as_bytes()),
        wots_pks: pks.clone(),
    });
    documents::parse::<CsrFile>(&path, &csr, documents::CSR_FORMAT).unwrap();

    let certificates = pretty(&CertificatesFile {
        format: documents::CERTIFICATES_FORMAT.into(),
        id: MEMBER,
        first_counter: 0,
        wots_pks: pks,
        certificates: f.certificates.iter().map(|c| b64(&c.to_bytes())).collect(),
    });
    let file: CertificatesFile =
        documents::parse(&path, &certificates, documents::CERTIFICATES_FORMAT).unwrap();
    assert_eq!(
        import::decode(&path, &file, MEMBER, PARAMS).unwrap().len(),
        2
    );

    let signature = documents::signature_text(&f.signature).into_bytes();
    documents::parse_signature(&path, signature.clone()).unwrap();

    let group_key = format!("{}\n", b64(&pk.to_bytes())).into_bytes();
    assert_eq!(
        &dgsp_gateway::anchor::parse_key_file(&group_key).unwrap(),
        pk
    );

    // Snapshot 1, empty, and the proof that the signature's zeta is not in it.
    let empty = RevocationSet::from_zetas(std::iter::empty());
    let record = SnapshotRecord::genesis(pk.fingerprint(), 1, 0, empty.root(), TIME);
    let snapshot: SignedSnapshot = f.manager.sign_snapshot(&record);
    let snapshot_file = serde_json::to_vec_pretty(&snapshot_json(&snapshot)).unwrap();
    verifier::parse_snapshot_file(&snapshot_file)
        .unwrap()
        .verify(pk)
        .unwrap();
    let proof = ProofRef::of(&empty.prove(f.signature.zeta()));
    let proof_file = serde_json::to_vec_pretty(&json!({"revocation": {"proof": proof}})).unwrap();
    let p = verifier::parse_proof_file(&proof_file).unwrap();
    dgsp_core::revocation::verify_revocation(pk, &snapshot, f.signature.zeta(), &p).unwrap();

    // A wallet at the cheap cost: both keys pending, the first certified.
    let paths = Paths::new(dir.path().join("wallet.json"));
    let w = Wallet::create(paths.clone(), &f.member, pk, PASSPHRASE, FUZZ_KDF).unwrap();
    {
        let mut locked = w.lock(|| {}).unwrap();
        locked.add_pending(&f.items);
        locked.payload.slots[0].certificate = Some(f.certificates[0].clone());
        locked.save().unwrap();
    }
    let wallet = std::fs::read(&paths.wallet).unwrap();
    let env = envelope::parse(&paths.wallet, &wallet).unwrap();
    assert_eq!(env.kdf, FUZZ_KDF);
    let keys = envelope::derive(&paths.wallet, &env, PASSPHRASE).unwrap();
    let payload = envelope::open(&paths.wallet, &env, &keys).unwrap();
    assert_eq!(Payload::decode(&payload).unwrap().slots.len(), 2);

    // A journal with two records under the fixed id and key.
    let journal_path = dir.path().join("journal");
    journal::create(&journal_path, &JOURNAL_ID).unwrap();
    let mut j = Journal::read(&journal_path, &JOURNAL_ID, &JOURNAL_KEY).unwrap();
    j.append(&JOURNAL_KEY, 0).unwrap();
    j.append(&JOURNAL_KEY, 1).unwrap();
    let journal_bytes = std::fs::read(&journal_path).unwrap();
    let j = Journal::parse(
        &journal_path,
        Zeroizing::new(journal_bytes.clone()),
        &JOURNAL_ID,
        &JOURNAL_KEY,
    )
    .unwrap();
    assert_eq!((j.records, j.torn.is_none()), (2, true));

    // A gateway's answer whose evidence all checks out.
    let note = f.manager.sign_checkpoint(&Checkpoint {
        origin: origin_for(pk),
        size: 1,
        root: [1; 32],
        time_unix_ms: Some(TIME + 1),
        snapshot: Some(SnapshotRef::of(&record)),
    });
    let answer = VerifyAnswer {
        valid: true,
        status: Status::Ok,
        params: PARAMS.name().into(),
        zeta: Some(b64(f.signature.zeta().as_bytes())),
        revocation: Some(Revocation {
            revoked: false,
            pending_snapshot: false,
            snapshot: Some(dgsp_gateway::api::model::SnapshotRef::of(&snapshot)),
            proof: Some(proof),
        }),
        freshness: Freshness {
            applied_seq: 1,
            checkpoint: Some(CheckpointEvidence {
                size: 1,
                time_unix_ms: TIME + 1,
                snapshot_number: Some(1),
                note: Some(Note::new(note)),
                witnessed: None,
            }),
            age_ms: Some(999),
            max_staleness_ms: 60_000,
            stale: false,
        },
        detail: None,
    };
    let answer = serde_json::to_vec_pretty(&answer).unwrap();
    let parsed: VerifyAnswer = serde_json::from_slice(&answer).unwrap();
    let policy = Policy {
        max_age_ms: 3_600_000,
        clock_tolerance_ms: evidence::DEFAULT_CLOCK_TOLERANCE_MS,
        min_snapshot: Some(1),
        now_unix_ms: TIME + 1_000,
    };
    let mut checks = Checks::default();
    let cp =
        evidence::check_answer(pk, MESSAGE, &f.signature, &parsed, &policy, &mut checks).unwrap();
    evidence::check_snapshot(
        pk,
        &f.signature,
        &parsed,
        &cp,
        Ok(snapshot.clone()),
        &policy,
        &mut checks,
    );
    assert!(checks.all_passed(), "{checks:?}");

    // The log as `operator log export` writes it (JSON Lines, private parts kept).
    let mut export = Vec::new();
    for e in log(&f) {
        serde_json::to_writer(&mut export, &e).unwrap();
        export.push(b'\n');
    }
    let mut auditor = Auditor::new(None);
    source::read_lines(
        &mut auditor,
        &path,
        Cursor::new(&export),
        &ProgressBar::hidden(),
    )
    .unwrap();
    assert_eq!(auditor.entries(), 7);
    let _ = auditor.finish().render();

    write(
        "cli_files",
        &[
            ("join", seed(0, &join)),
            ("csr", seed(1, &csr)),
            ("certificates", seed(2, &certificates)),
            ("signature", seed(3, &signature)),
            ("group-key", seed(4, &group_key)),
            ("snapshot", seed(5, &snapshot_file)),
            ("proof", seed(6, &proof_file)),
            ("wallet", seed(7, &wallet)),
            ("wallet-payload", seed(8, &payload)),
            ("journal", seed(9, &journal_bytes)),
            ("verify-answer", seed(10, &answer)),
            ("log-export", seed(11, &export)),
        ],
    );
}
