//! The witness logic, status by status, with exact bodies.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use dgsp_wire::merkle::{consistency_proof, empty_root, leaf_hash, root};
use dgsp_wire::note::{
    verify_signature_line, verify_witnessed, witnessed_note, CheckpointBody, KeyKind,
    MlDsaCosigner, Policy, SignatureLine, SignedNote, Vkey,
};

use super::*;
use crate::protocol::{AddCheckpoint, MAX_REQUEST_BODY};

const T0: u64 = 1_800_000_000;

fn leaves(n: u64, tag: u8) -> Vec<[u8; 32]> {
    (0..n)
        .map(|i| leaf_hash(&[tag, i as u8, (i >> 8) as u8]))
        .collect()
}

struct Log {
    origin: String,
    key: MlDsaCosigner,
}

impl Log {
    fn new(origin: &str, seed: u8) -> Log {
        Log {
            origin: origin.into(),
            key: MlDsaCosigner::from_seed(origin, &[seed; 32]).unwrap(),
        }
    }
    fn note(&self, size: u64, root: &[u8; 32]) -> String {
        let line = self.key.cosign(&self.origin, size, root, T0).unwrap();
        witnessed_note(&self.origin, size, root, &line, &[])
    }
}

struct Setup {
    log: Log,
    witness: Witness,
    store: Arc<MemoryStore>,
    clock: Arc<AtomicU64>,
}

fn setup() -> Setup {
    let log = Log::new("example.com/log", 1);
    let mut logs = KnownLogs::new();
    logs.add(log.key.verifier().clone()).unwrap();
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(AtomicU64::new(T0));
    let c = clock.clone();
    let key = MlDsaCosigner::from_seed("gw1.example/witness", &[9; 32]).unwrap();
    let witness = Witness::new(
        key,
        logs,
        store.clone(),
        Arc::new(move || c.load(Ordering::SeqCst)),
    );
    Setup {
        log,
        witness,
        store,
        clock,
    }
}

fn body(old: u64, proof: Vec<[u8; 32]>, note: &str) -> Vec<u8> {
    AddCheckpoint {
        old,
        proof,
        checkpoint: note.into(),
    }
    .encode()
    .into_bytes()
}

impl Setup {
    /// Submits the first `n` of `l` from `old` with the right proof.
    fn submit(&self, old: u64, l: &[[u8; 32]]) -> WitnessAnswer {
        let n = l.len() as u64;
        let proof = if old == 0 || old == n {
            vec![]
        } else {
            consistency_proof(old, l)
        };
        let r = root(l);
        self.witness
            .add_checkpoint(&body(old, proof, &self.log.note(n, &r)))
    }
}

fn assert_answer(a: &WitnessAnswer, status: u16, body: &str) {
    assert_eq!((a.status(), a.body().as_str()), (status, body), "{a:?}");
}

/// Checks a 200: one line, by the witness, over (origin, size, root), at `ts`.
fn check_cosigned(s: &Setup, a: &WitnessAnswer, size: u64, r: &[u8; 32], ts: u64) {
    let WitnessAnswer::Cosigned {
        lines, timestamp, ..
    } = a
    else {
        panic!("not cosigned: {a:?}");
    };
    assert_eq!(*timestamp, ts);
    assert_eq!(a.status(), 200);
    assert_eq!(a.content_type(), TEXT_PLAIN);
    assert_eq!(lines.matches('\n').count(), 1);
    assert!(lines.starts_with("\u{2014} gw1.example/witness ") && lines.ends_with('\n'));
    let line = SignatureLine::parse(lines.trim_end_matches('\n')).unwrap();
    let cp = CheckpointBody::plain(&s.log.origin, size, *r);
    let vkey = Vkey::parse(&s.witness.vkey()).unwrap();
    assert_eq!(verify_signature_line(&vkey, &cp, &line), Ok(ts));
    // The body a client gets parses with the protocol's own splitter.
    assert_eq!(
        crate::protocol::split_cosignatures(lines.as_bytes())
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn cosigns_grows_and_resubmits() {
    let s = setup();
    let l = leaves(8, 0);
    let a = s.submit(0, &l[..3]);
    check_cosigned(&s, &a, 3, &root(&l[..3]), T0);
    assert_eq!(
        s.witness.held(&s.log.origin).unwrap(),
        Some(TreeHead {
            size: 3,
            root: root(&l[..3])
        })
    );
    s.clock.store(T0 + 5, Ordering::SeqCst);
    check_cosigned(&s, &s.submit(3, &l[..8]), 8, &root(&l), T0 + 5);
    assert_eq!(s.store.writes(), 2);
    // Cadence: same size and root, fresh timestamp, nothing written.
    s.clock.store(T0 + 9, Ordering::SeqCst);
    check_cosigned(&s, &s.submit(8, &l), 8, &root(&l), T0 + 9);
    assert_eq!(s.store.writes(), 2);
    // The clock goes back: timestamps do not.
    s.clock.store(T0 + 1, Ordering::SeqCst);
    check_cosigned(&s, &s.submit(8, &l), 8, &root(&l), T0 + 9);
}

#[test]
fn the_cosignature_meets_a_policy_naming_the_witness() {
    let s = setup();
    let l = leaves(5, 0);
    let r = root(&l);
    let WitnessAnswer::Cosigned { lines, .. } = s.submit(0, &l) else {
        panic!()
    };
    let policy = Policy::parse(&format!(
        "log {}\nwitness gw1 {}\nquorum gw1\n",
        s.log.key.vkey(),
        s.witness.vkey()
    ))
    .unwrap();
    let log_line = s.log.key.cosign(&s.log.origin, 5, &r, T0).unwrap();
    let note = witnessed_note(&s.log.origin, 5, &r, &log_line, &[lines]);
    let w = verify_witnessed(&note, &policy, T0, Some(60), 10).unwrap();
    assert_eq!(w.cosigners, vec![("gw1".to_owned(), T0)]);
    let alone = witnessed_note(&s.log.origin, 5, &r, &log_line, &[]);
    assert!(verify_witnessed(&alone, &policy, T0, Some(60), 10).is_err());
}

#[test]
fn size_zero() {
    let s = setup();
    let a = s.submit(0, &[]);
    check_cosigned(&s, &a, 0, &empty_root(), T0);
    let other = s
        .witness
        .add_checkpoint(&body(0, vec![], &s.log.note(0, &[1; 32])));
    assert_answer(&other, 422, &format!("{NOT_EMPTY_ROOT}\n"));
    check_cosigned(&s, &s.submit(0, &leaves(2, 0)), 2, &root(&leaves(2, 0)), T0);
}

#[test]
fn conflicts_say_the_held_size() {
    let s = setup();
    let l = leaves(9, 0);
    // Never cosigned: old must be 0 (omniwitness cosigns a first checkpoint whatever old).
    let a = s.submit(4, &l[..5]);
    assert_answer(&a, 409, "0\n");
    assert_eq!(a.content_type(), "text/x.tlog.size");
    assert_eq!(s.submit(0, &l[..5]).status(), 200);
    assert_answer(&s.submit(0, &l), 409, "5\n");
    assert_answer(&s.submit(3, &l), 409, "5\n");
    assert_answer(&s.submit(6, &l), 409, "5\n");
    // old == size but not the held size.
    assert_answer(&s.submit(9, &l), 409, "5\n");
    assert_eq!(s.submit(5, &l).status(), 200);
    assert_eq!(s.store.writes(), 2);
}

#[test]
fn unprocessable() {
    let s = setup();
    let l = leaves(16, 0);
    assert_eq!(s.submit(0, &l[..4]).status(), 200);
    let r = root(&l[..10]);
    let note = s.log.note(10, &r);
    // A proof from size 0.
    let a = s
        .witness
        .add_checkpoint(&body(0, consistency_proof(4, &l[..10]), &note));
    assert_answer(&a, 409, "4\n");
    // A wrong proof, a truncated one, an empty one.
    let mut bad = consistency_proof(4, &l[..10]);
    bad[0][0] ^= 1;
    let bad_proof = format!("{BAD_PROOF}\n");
    assert_answer(
        &s.witness.add_checkpoint(&body(4, bad, &note)),
        422,
        &bad_proof,
    );
    let mut short = consistency_proof(4, &l[..10]);
    short.pop();
    assert_answer(
        &s.witness.add_checkpoint(&body(4, short, &note)),
        422,
        &bad_proof,
    );
    assert_answer(
        &s.witness.add_checkpoint(&body(4, vec![], &note)),
        422,
        &bad_proof,
    );
    // A proof that verifies from ANOTHER tree of size 4 (a split view): refused, since the
    // proof is checked from the held root.
    let fork = [&l[..3], &leaves(7, 1)[..]].concat();
    let fork_root = root(&fork);
    let fork_note = s.log.note(10, &fork_root);
    let fork_proof = consistency_proof(4, &fork);
    dgsp_wire::merkle::verify_consistency(4, 10, &root(&fork[..4]), &fork_root, &fork_proof)
        .unwrap();
    assert_answer(
        &s.witness.add_checkpoint(&body(4, fork_proof, &fork_note)),
        422,
        &bad_proof,
    );
    // Same size, another root; same size with a proof.
    let other = s
        .witness
        .add_checkpoint(&body(4, vec![], &s.log.note(4, &root(&fork[..4]))));
    assert_answer(&other, 422, &format!("{OTHER_ROOT}\n"));
    let with_proof =
        s.witness
            .add_checkpoint(&body(4, vec![[0; 32]], &s.log.note(4, &root(&l[..4]))));
    assert_answer(&with_proof, 422, &bad_proof);
    assert_eq!(s.store.writes(), 1);

    // A non-empty proof with old 0 on a log never cosigned.
    let t = setup();
    let a = t
        .witness
        .add_checkpoint(&body(0, vec![[0; 32]], &t.log.note(3, &root(&l[..3]))));
    assert_answer(&a, 422, &format!("{PROOF_FROM_ZERO}\n"));
    assert_eq!(t.store.writes(), 0);
}

#[test]
fn signatures() {
    let s = setup();
    let l = leaves(3, 0);
    let r = root(&l);
    let stranger = Log::new("example.com/log", 2); // same origin, untrusted key
                                                   // Only an unknown key's line: 403; with the trusted line too: 200.
    let a = s
        .witness
        .add_checkpoint(&body(0, vec![], &stranger.note(3, &r)));
    assert_answer(&a, 403, &format!("{NO_TRUSTED_SIGNATURE}\n"));
    let both = format!(
        "{}{}",
        stranger.note(3, &r),
        s.log.key.cosign(&s.log.origin, 3, &r, T0).unwrap()
    );
    assert_eq!(
        s.witness.add_checkpoint(&body(0, vec![], &both)).status(),
        200
    );

    // A trusted key's line over another root, or altered: 403, even beside a valid one.
    let t = setup();
    let wrong_line = t.log.key.cosign(&t.log.origin, 3, &[7; 32], T0).unwrap();
    let bad = witnessed_note(&t.log.origin, 3, &r, &wrong_line, &[]);
    let bad_sig = format!("{BAD_TRUSTED_SIGNATURE}\n");
    assert_answer(
        &t.witness.add_checkpoint(&body(0, vec![], &bad)),
        403,
        &bad_sig,
    );
    let good_and_bad = format!("{}{wrong_line}", t.log.note(3, &r));
    assert_answer(
        &t.witness.add_checkpoint(&body(0, vec![], &good_and_bad)),
        403,
        &bad_sig,
    );
    let mut n = SignedNote::parse(&t.log.note(3, &r)).unwrap();
    n.signatures[0].sig[100] ^= 1;
    assert_answer(
        &t.witness.add_checkpoint(&body(0, vec![], &n.to_text())),
        403,
        &bad_sig,
    );
    // No signature line at all: 403 for a known origin, 404 for another.
    let bare = format!("{}\n", CheckpointBody::plain(&t.log.origin, 3, r).to_body());
    assert_answer(
        &t.witness.add_checkpoint(&body(0, vec![], &bare)),
        403,
        &format!("{NO_TRUSTED_SIGNATURE}\n"),
    );
    let bare = format!("{}\n", CheckpointBody::plain("x.example/o", 3, r).to_body());
    assert_answer(
        &t.witness.add_checkpoint(&body(0, vec![], &bare)),
        404,
        "unknown origin\n",
    );
    assert_eq!(t.store.writes(), 0);
    // The 403 comes before the 409 and the 400 (no state is disclosed to an unsigned request).
    assert_answer(
        &s.witness
            .add_checkpoint(&body(1, vec![], &stranger.note(3, &r))),
        403,
        &format!("{NO_TRUSTED_SIGNATURE}\n"),
    );
}

#[test]
fn unknown_origin_is_404() {
    let s = setup();
    let other = Log::new("example.com/other", 1);
    let a = s
        .witness
        .add_checkpoint(&body(0, vec![], &other.note(1, &[1; 32])));
    assert_answer(&a, 404, "unknown origin\n");
    assert_eq!(a.kind(), "unknown_origin");
    assert_eq!(s.store.writes(), 0);
}

#[test]
fn ed25519_logs_and_extension_lines() {
    use ed25519_dalek::Signer as _;
    let sk = ed25519_dalek::SigningKey::from_bytes(&[5; 32]);
    let vkey = Vkey::new(
        "ed.example/log",
        KeyKind::Ed25519(sk.verifying_key().to_bytes()),
    )
    .unwrap();
    let s = setup();
    let mut logs = s.witness.logs().clone();
    logs.add(vkey.clone()).unwrap();
    let w = Witness::new(
        MlDsaCosigner::from_seed("gw1.example/witness", &[9; 32]).unwrap(),
        logs,
        s.store.clone(),
        Arc::new(|| T0),
    );
    let l = leaves(2, 0);
    let mut cp = CheckpointBody::plain("ed.example/log", 2, root(&l));
    cp.extensions.push("time 5".into());
    let sign = |cp: &CheckpointBody| {
        SignedNote {
            body: cp.to_body(),
            signatures: vec![SignatureLine {
                name: vkey.name.clone(),
                key_id: vkey.key_id,
                sig: sk.sign(cp.to_body().as_bytes()).to_bytes().to_vec(),
            }],
        }
        .to_text()
    };
    // Ed25519 (0x01) over the whole body, extension lines included: 200.
    let note = sign(&cp);
    assert_eq!(w.add_checkpoint(&body(0, vec![], &note)).status(), 200);
    // The same signature on the body with its extension line changed: 403.
    let mut changed = SignedNote::parse(&note).unwrap();
    changed.body = changed.body.replace("time 5", "time 6");
    assert_answer(
        &w.add_checkpoint(&body(2, vec![], &changed.to_text())),
        403,
        &format!("{BAD_TRUSTED_SIGNATURE}\n"),
    );
    // An ML-DSA-44 log signature does not sign extension lines, nor does this witness's
    // ML-DSA-44 cosignature (omniwitness accepts these; litewitness refuses them): 403, and
    // nothing is stored or served for monitoring.
    let r = root(&l);
    let line = s.log.key.cosign(&s.log.origin, 2, &r, T0).unwrap();
    let mut ext = CheckpointBody::plain(&s.log.origin, 2, r);
    ext.extensions.push("snapshot 1".into());
    let note = format!("{}\n{line}", ext.to_body());
    let held = w.held(&s.log.origin).unwrap();
    assert_answer(
        &w.add_checkpoint(&body(0, vec![], &note)),
        403,
        &format!("{UNSIGNED_EXTENSIONS}\n"),
    );
    assert_eq!(w.held(&s.log.origin).unwrap(), held);
    assert_eq!(w.latest_checkpoint(&origin_hash(&s.log.origin)), None);
    // Without the extension line, the same tree is cosigned.
    let plain = format!(
        "{}\n{line}",
        CheckpointBody::plain(&s.log.origin, 2, r).to_body()
    );
    assert_eq!(w.add_checkpoint(&body(0, vec![], &plain)).status(), 200);
}

#[test]
fn malformed_requests_are_400() {
    let s = setup();
    let l = leaves(3, 0);
    let r = root(&l);
    let note = s.log.note(3, &r);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            b"".to_vec(),
            "malformed request: first line is not `old <size>`\n",
        ),
        (
            format!("old 01\n\n{note}").into_bytes(),
            "malformed request: not a canonical decimal size: \"01\"\n",
        ),
        (
            format!("old 0\nAAAA\n\n{note}").into_bytes(),
            "malformed request: proof line 0 is not a base64 32-byte hash\n",
        ),
        (
            format!("old 0\n{note}").into_bytes(),
            "malformed request: proof line 0 is not a base64 32-byte hash\n",
        ),
        (
            b"old 0\n\nexample.com/log\n".to_vec(),
            "malformed checkpoint note: malformed note: no blank line\n",
        ),
        (
            format!("old 0\n\n{note}\n").into_bytes(),
            "malformed checkpoint note: malformed note: signature line\n",
        ),
        (
            b"old 0\n\nno newline".to_vec(),
            "malformed request: the checkpoint note is empty or does not end in a newline\n",
        ),
        (
            format!("old 0\n\n{}", note.replace("\n3\n", "\n03\n")).into_bytes(),
            "malformed checkpoint: malformed checkpoint body: size line\n",
        ),
        (
            format!("old 0\n\n{}", note.replacen('\n', "\r\n", 1)).into_bytes(),
            "malformed checkpoint note: malformed note: control character\n",
        ),
        (
            b"old 0\n\n\xff\n".to_vec(),
            "malformed request: body is not UTF-8\n",
        ),
        (
            body(4, vec![], &note),
            "old size 4 is larger than the checkpoint's size 3\n",
        ),
    ];
    for (b, want) in cases {
        let a = s.witness.add_checkpoint(&b);
        assert_answer(&a, 400, want);
    }
    let big = vec![b'a'; MAX_REQUEST_BODY + 1];
    assert_answer(
        &s.witness.add_checkpoint(&big),
        413,
        "request body over 16384 bytes\n",
    );
    assert_eq!(s.store.writes(), 0);
}

/// A store that fails, or that another process writes to between `get` and
/// `compare_and_set`.
struct Racy {
    inner: MemoryStore,
    fail: bool,
    /// Written into `inner` just before the next compare-and-set.
    sneak: Mutex<Vec<TreeHead>>,
}

impl WitnessStore for Racy {
    fn get(&self, origin: &str) -> Result<Option<TreeHead>, StoreError> {
        if self.fail {
            return Err(StoreError("disk on fire".into()));
        }
        self.inner.get(origin)
    }
    fn compare_and_set(
        &self,
        origin: &str,
        expected: Option<TreeHead>,
        new: TreeHead,
    ) -> Result<bool, StoreError> {
        if let Some(h) = self.sneak.lock().unwrap().pop() {
            let cur = self.inner.get(origin)?;
            assert!(self.inner.compare_and_set(origin, cur, h)?);
        }
        self.inner.compare_and_set(origin, expected, new)
    }
}

fn witness_on(store: Arc<dyn WitnessStore>, log: &Log) -> Witness {
    let mut logs = KnownLogs::new();
    logs.add(log.key.verifier().clone()).unwrap();
    Witness::new(
        MlDsaCosigner::from_seed("gw1.example/witness", &[9; 32]).unwrap(),
        logs,
        store,
        Arc::new(|| T0),
    )
}

#[test]
fn store_failures_and_lost_races() {
    let log = Log::new("example.com/log", 1);
    let l = leaves(6, 0);
    let failing = Arc::new(Racy {
        inner: MemoryStore::new(),
        fail: true,
        sneak: Mutex::new(vec![]),
    });
    let w = witness_on(failing, &log);
    let a = w.add_checkpoint(&body(0, vec![], &log.note(3, &root(&l[..3]))));
    assert_answer(&a, 500, "internal error\n");
    assert_eq!(
        a,
        WitnessAnswer::Internal("witness store: disk on fire".into())
    );

    // Another writer stores size 5 between our read and our compare-and-set: we re-read and
    // answer 409 with its size, without cosigning.
    let racy = Arc::new(Racy {
        inner: MemoryStore::new(),
        fail: false,
        sneak: Mutex::new(vec![TreeHead {
            size: 5,
            root: root(&l[..5]),
        }]),
    });
    let w = witness_on(racy.clone(), &log);
    let a = w.add_checkpoint(&body(0, vec![], &log.note(3, &root(&l[..3]))));
    assert_answer(&a, 409, "5\n");
    // The other writer stored the very tree we were about to: the re-read sees size 3, and
    // the request's old 0 is no longer the held size (409, as the spec's order has it).
    let racy = Arc::new(Racy {
        inner: MemoryStore::new(),
        fail: false,
        sneak: Mutex::new(vec![TreeHead {
            size: 3,
            root: root(&l[..3]),
        }]),
    });
    let w = witness_on(racy, &log);
    let a = w.add_checkpoint(&body(0, vec![], &log.note(3, &root(&l[..3]))));
    assert_answer(&a, 409, "3\n");
}

#[test]
fn a_zero_clock_is_500_and_writes_nothing() {
    let log = Log::new("example.com/log", 1);
    let store = Arc::new(MemoryStore::new());
    let mut logs = KnownLogs::new();
    logs.add(log.key.verifier().clone()).unwrap();
    let w = Witness::new(
        MlDsaCosigner::from_seed("gw1.example/witness", &[9; 32]).unwrap(),
        logs,
        store.clone(),
        Arc::new(|| 0),
    );
    let a = w.add_checkpoint(&body(0, vec![], &log.note(1, &[1; 32])));
    assert_eq!(a.status(), 500);
    assert_eq!(store.writes(), 0);
}

#[test]
fn concurrent_requests_one_root_wins() {
    let s = Arc::new(setup());
    let a = leaves(10, 0);
    let b = [&a[..4], &leaves(6, 1)[..]].concat();
    assert_eq!(s.submit(0, &a[..4]).status(), 200);
    let bodies: Vec<Vec<u8>> = [&a, &b]
        .iter()
        .map(|l| body(4, consistency_proof(4, l), &s.log.note(10, &root(l))))
        .collect();
    let answers: Vec<WitnessAnswer> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..50)
            .map(|i| {
                let (s, b) = (&s, &bodies[i % 2]);
                scope.spawn(move || s.witness.add_checkpoint(b))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let won: Vec<_> = answers.iter().filter(|a| a.status() == 200).collect();
    assert_eq!(won.len(), 1, "{answers:?}");
    assert!(answers
        .iter()
        .all(|a| a.status() == 200 || *a == WitnessAnswer::Conflict { size: 10 }));
    let held = s.witness.held(&s.log.origin).unwrap().unwrap();
    assert!(held.root == root(&a) || held.root == root(&b));
    assert_eq!(s.store.writes(), 2);
}

#[test]
fn known_logs() {
    let log = Log::new("example.com/log", 1);
    let mut logs = KnownLogs::new();
    logs.add(log.key.verifier().clone()).unwrap();
    logs.add(log.key.verifier().clone()).unwrap();
    logs.add(Log::new("example.com/log", 2).key.verifier().clone())
        .unwrap();
    assert_eq!(logs.keys("example.com/log").len(), 2);
    assert!(logs.keys("nope").is_empty());
    let long = MlDsaCosigner::from_seed(&"o".repeat(255), &[1; 32]).unwrap();
    assert!(logs.add(long.verifier().clone()).is_ok());
    let mut v = long.verifier().clone();
    v.name = "o".repeat(256);
    assert!(matches!(logs.add(v), Err(KnownLogsError::OriginTooLong(_))));
    let policy = Policy::parse(&format!(
        "log {}\nwitness w {}\nquorum w\n",
        log.key.vkey(),
        MlDsaCosigner::from_seed("w", &[3; 32]).unwrap().vkey()
    ))
    .unwrap();
    let from = KnownLogs::from_policy(&policy).unwrap();
    assert_eq!(from.origins().collect::<Vec<_>>(), vec!["example.com/log"]);
}

/// Mutated and random bodies: never a panic, never a 200 for an altered note, only the
/// protocol's statuses.
#[test]
fn fuzzed_bodies_never_panic() {
    let s = setup();
    let l = leaves(7, 0);
    assert_eq!(s.submit(0, &l[..3]).status(), 200);
    let good = body(3, consistency_proof(3, &l), &s.log.note(7, &root(&l)));
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..400 {
        let mut b = good.clone();
        match i % 4 {
            0 => {
                let at = (next() as usize) % b.len();
                b[at] ^= 1 << (next() % 8);
            }
            1 => {
                let at = (next() as usize) % b.len();
                b.truncate(at);
            }
            2 => {
                let at = (next() as usize) % b.len();
                b.insert(at, (next() % 256) as u8);
            }
            _ => b = (0..(next() % 300)).map(|_| (next() % 128) as u8).collect(),
        }
        let a = s.witness.add_checkpoint(&b);
        assert!(
            [400, 403, 404, 409, 422].contains(&a.status()),
            "{i}: {a:?}"
        );
    }
    assert_eq!(s.witness.add_checkpoint(&good).status(), 200);
    // 63 proof hashes (the most) of garbage: bounded work, a 409 now that 7 is held.
    let long = body(3, vec![[1; 32]; 63], &s.log.note(7, &root(&l)));
    assert_answer(&s.witness.add_checkpoint(&long), 409, "7\n");
    let long = body(7, vec![[1; 32]; 63], &s.log.note(7, &root(&l)));
    assert_answer(
        &s.witness.add_checkpoint(&long),
        422,
        &format!("{BAD_PROOF}\n"),
    );
}

#[test]
fn the_latest_cosigned_checkpoint_is_served_with_both_signatures() {
    let s = setup();
    let hash = origin_hash(&s.log.origin);
    assert_eq!(hash.len(), 64);
    // printf %s example.com/log | sha256sum
    assert_eq!(
        hash,
        "4d3203c8f35cdf600e475f55fede6081a703d3d322f208865fca2ec4f0e030f8"
    );
    // Nothing cosigned yet; an unknown hash; another spelling of a known one.
    assert_eq!(s.witness.latest_checkpoint(&hash), None);
    assert_eq!(s.witness.latest_checkpoint(&"0".repeat(64)), None);
    assert_eq!(s.witness.latest_checkpoint(&hash.to_uppercase()), None);

    let l = leaves(7, 0);
    s.submit(0, &l[..3]);
    s.clock.store(T0 + 5, Ordering::SeqCst);
    let WitnessAnswer::Cosigned { lines, .. } = s.submit(3, &l) else {
        panic!()
    };
    let note = s.witness.latest_checkpoint(&hash).unwrap();
    // The checkpoint, the log's line as submitted, the cosignature as handed out.
    let r = root(&l);
    let log_line = s.log.key.cosign(&s.log.origin, 7, &r, T0).unwrap();
    assert_eq!(
        note,
        witnessed_note(
            &s.log.origin,
            7,
            &r,
            &log_line,
            std::slice::from_ref(&lines)
        )
    );
    let policy = Policy::parse(&format!(
        "log {}\nwitness gw1 {}\nquorum gw1\n",
        s.log.key.vkey(),
        s.witness.vkey()
    ))
    .unwrap();
    let w = verify_witnessed(&note, &policy, T0 + 5, None, 10).unwrap();
    assert_eq!((w.size, w.root), (7, r));
    assert_eq!(w.cosigners, vec![("gw1".to_owned(), T0 + 5)]);

    // Refused submissions change nothing; a resubmission of the same tree later does.
    let other = leaves(7, 1);
    assert_eq!(s.submit(7, &other).status(), 422);
    assert_eq!(s.witness.latest_checkpoint(&hash).unwrap(), note);
    s.clock.store(T0 + 9, Ordering::SeqCst);
    assert_eq!(s.submit(7, &l).status(), 200);
    let again = s.witness.latest_checkpoint(&hash).unwrap();
    assert_eq!(
        verify_witnessed(&again, &policy, T0 + 9, None, 10)
            .unwrap()
            .cosigners,
        vec![("gw1".to_owned(), T0 + 9)]
    );
}

#[tokio::test]
async fn the_router_serves_the_monitoring_get() {
    let s = setup();
    let hash = origin_hash(&s.log.origin);
    s.submit(0, &leaves(4, 0));
    let note = s.witness.latest_checkpoint(&hash).unwrap();
    let app = axum::Router::new().nest("/witness", router(Arc::new(s.witness)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/witness", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let get = |path: String| async move {
        let r = reqwest::get(path).await.unwrap();
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        (status, headers, r.text().await.unwrap())
    };
    let (status, headers, body) = get(format!("{url}/{hash}/checkpoint")).await;
    assert_eq!((status, body.as_str()), (200, note.as_str()));
    assert_eq!(headers["content-type"], TEXT_PLAIN);
    assert_eq!(headers["cache-control"], "no-store");
    let (status, _, body) = get(format!("{url}/{}/checkpoint", "ab".repeat(32))).await;
    assert_eq!(status, 404);
    assert!(body.starts_with("no checkpoint cosigned"), "{body}");
    // The submission endpoint is still there beside it.
    let r = reqwest::Client::new()
        .post(format!("{url}/add-checkpoint"))
        .body("old 0\n")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
}
