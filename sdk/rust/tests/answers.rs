//! Gateway answers checked offline: a real group (keys, certificates, signatures, a signed
//! snapshot, a signed checkpoint), answers built the way a gateway builds them, and every
//! way an answer can lie: a tampered proof, a stale checkpoint, a checkpoint from the
//! future, a replayed snapshot, a revoked signer, another group.

mod support;

use dgsp_core::revocation::{RevocationSet, SignedSnapshot};
use dgsp_core::{Manager, ParamSet, Signature};
use dgsp_verifier::evidence::{
    CHECKPOINT_AGE, CHECKPOINT_SIGNATURE, DEFAULT_CLOCK_TOLERANCE_MS, FUTURE_CHECKPOINT,
    GATEWAY_STATUS, MIN_SNAPSHOT, REVOCATION_PROOF, SIGNATURE, SNAPSHOT_NAMED, SNAPSHOT_SIGNATURE,
};
use dgsp_verifier::wire::answer::{b64, Note, ProofRef, SnapshotRef, Status, VerifyAnswer};
use dgsp_verifier::wire::snapshot::snapshot_json;
use dgsp_verifier::{Error, Policy, TrustRoot};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use support::{Group, MSG, T};

fn fixture() -> Group {
    Group::new(ParamSet::Sha2_128f, 15)
}

fn policy() -> Policy {
    Policy::max_age_secs(300, T)
}

fn check(
    root: &TrustRoot,
    sig: &Signature,
    answer: &VerifyAnswer,
    snapshot: &SignedSnapshot,
    policy: &Policy,
) -> dgsp_verifier::AnswerReport {
    let json = serde_json::to_vec(answer).unwrap();
    let snap = serde_json::to_vec(&snapshot_json(snapshot)).unwrap();
    root.check_answer(MSG, &sig.to_bytes(), &json, Some(&snap), policy)
        .unwrap()
}

fn failed(report: &dgsp_verifier::AnswerReport) -> Vec<&'static str> {
    report
        .checks
        .0
        .iter()
        .filter(|c| !c.passed)
        .map(|c| c.check)
        .collect()
}

#[test]
fn an_honest_answer_passes_every_check_and_lies_fail_the_right_one() {
    let f = fixture();
    let root = f.root();
    let honest = f.answer(&f.alice);
    let report = check(&root, &f.alice, &honest, &f.s2, &policy());
    assert!(report.valid, "{:?}", report.first_failure());
    let names: Vec<_> = report.checks.0.iter().map(|c| c.check).collect();
    assert_eq!(
        names,
        [
            GATEWAY_STATUS,
            SIGNATURE,
            CHECKPOINT_SIGNATURE,
            CHECKPOINT_AGE,
            FUTURE_CHECKPOINT,
            SNAPSHOT_SIGNATURE,
            SNAPSHOT_NAMED,
            REVOCATION_PROOF
        ]
    );

    // A proof tampered with (its last byte flipped).
    let mut tampered = honest.clone();
    let proof = tampered
        .revocation
        .as_mut()
        .unwrap()
        .proof
        .as_mut()
        .unwrap();
    let mut bytes = base64_decode(&proof.encoded);
    *bytes.last_mut().unwrap() ^= 1;
    proof.encoded = b64(&bytes);
    let r = check(&root, &f.alice, &tampered, &f.s2, &policy());
    assert!(!r.valid);
    assert_eq!(failed(&r), [REVOCATION_PROOF]);

    // Another member's proof (a valid proof, for the wrong zeta).
    let mut swapped = honest.clone();
    swapped.revocation = f.answer(&f.bob).revocation;
    let r = check(&root, &f.alice, &swapped, &f.s2, &policy());
    assert!(failed(&r).contains(&REVOCATION_PROOF), "{r:?}");

    // Stale: the caller's clock is an hour past the checkpoint's signed time.
    let r = check(
        &root,
        &f.alice,
        &honest,
        &f.s2,
        &Policy::max_age_secs(300, T + 3_600_000),
    );
    assert_eq!(failed(&r), [CHECKPOINT_AGE]);

    // Replayed: an older snapshot served in place of the one the checkpoint names.
    let r = check(&root, &f.alice, &honest, &f.s1, &policy());
    assert_eq!(failed(&r), [SNAPSHOT_NAMED, REVOCATION_PROOF]);

    // A checkpoint that names the older snapshot, with a proof against it: fresh and
    // consistent, but below the caller's minimum snapshot.
    let mut old = honest.clone();
    old.freshness.checkpoint.as_mut().unwrap().note = Some(Note::new(f.note(&f.s1, T - 500)));
    old.revocation.as_mut().unwrap().snapshot = Some(SnapshotRef::of(&f.s1));
    old.revocation.as_mut().unwrap().proof = Some(ProofRef::of(
        &RevocationSet::from_zetas(std::iter::empty()).prove(f.alice.zeta()),
    ));
    let r = check(&root, &f.alice, &old, &f.s1, &policy());
    assert!(r.valid, "{:?}", r.first_failure());
    let pinned = Policy {
        min_snapshot: Some(2),
        ..policy()
    };
    let r = check(&root, &f.alice, &old, &f.s1, &pinned);
    assert_eq!(failed(&r), [MIN_SNAPSHOT]);

    // The gateway lying "ok" for a revoked signer: the proof says otherwise.
    let mut lie = f.answer(&f.bob);
    lie.valid = true;
    lie.status = Status::Ok;
    let r = check(&root, &f.bob, &lie, &f.s2, &policy());
    assert_eq!(failed(&r), [REVOCATION_PROOF]);

    // The honest answer for the revoked signer is negative, for two reasons.
    let r = check(&root, &f.bob, &f.answer(&f.bob), &f.s2, &policy());
    assert!(!r.valid);
    assert_eq!(r.gateway_status, "revoked");
    assert_eq!(failed(&r), [GATEWAY_STATUS, REVOCATION_PROOF]);

    // The answer of this group, checked under another group's key.
    let other = Manager::generate(ParamSet::Sha2_128f, &mut ChaCha20Rng::seed_from_u64(99));
    let wrong = TrustRoot::new(other.public_key().clone());
    let r = check(&wrong, &f.alice, &honest, &f.s2, &policy());
    assert!(!r.valid);
    assert!(
        failed(&r).starts_with(&[
            SIGNATURE,
            CHECKPOINT_SIGNATURE,
            CHECKPOINT_AGE,
            FUTURE_CHECKPOINT
        ]),
        "{r:?}"
    );

    // Another message.
    let json = serde_json::to_vec(&honest).unwrap();
    let snap = serde_json::to_vec(&snapshot_json(&f.s2)).unwrap();
    let r = root
        .check_answer(
            b"another",
            &f.alice.to_bytes(),
            &json,
            Some(&snap),
            &policy(),
        )
        .unwrap();
    assert_eq!(failed(&r), [SIGNATURE]);

    // No snapshot given: the snapshot checks cannot pass.
    let r = root
        .check_answer(MSG, &f.alice.to_bytes(), &json, None, &policy())
        .unwrap();
    assert_eq!(
        failed(&r),
        [SNAPSHOT_SIGNATURE, SNAPSHOT_NAMED, REVOCATION_PROOF]
    );
}

/// The answer for alice with its checkpoint note signed at `time`.
fn signed_at(f: &Group, time: u64) -> VerifyAnswer {
    let mut a = f.answer(&f.alice);
    let cp = a.freshness.checkpoint.as_mut().unwrap();
    cp.note = Some(Note::new(f.note(&f.s2, time)));
    cp.time_unix_ms = time;
    a
}

#[test]
fn a_checkpoint_from_the_future_is_refused_beyond_the_tolerance() {
    let f = fixture();
    let root = f.root();
    assert_eq!(policy().clock_tolerance_ms, DEFAULT_CLOCK_TOLERANCE_MS);
    assert_eq!(DEFAULT_CLOCK_TOLERANCE_MS, 5_000);

    // Signed ten minutes ahead of the caller's clock: its age is 0 by that clock, so the age
    // check holds, and the future check refuses it.
    let ahead = signed_at(&f, T + 600_000);
    let r = check(&root, &f.alice, &ahead, &f.s2, &policy());
    assert!(!r.valid);
    assert_eq!(failed(&r), [FUTURE_CHECKPOINT]);
    let why = &r.first_failure().unwrap().detail;
    assert!(why.contains("600.0 s ahead of this clock"), "{why}");
    let age = r
        .checks
        .0
        .iter()
        .find(|c| c.check == CHECKPOINT_AGE)
        .unwrap();
    assert!(age.detail.contains("ahead of this clock"), "{age:?}");

    // Within the tolerance (clocks a few seconds apart): accepted; exactly at the bound too.
    for skew in [1, 4_999, 5_000] {
        let r = check(&root, &f.alice, &signed_at(&f, T + skew), &f.s2, &policy());
        assert!(r.valid, "{skew}: {:?}", r.first_failure());
    }
    let r = check(&root, &f.alice, &signed_at(&f, T + 5_001), &f.s2, &policy());
    assert_eq!(failed(&r), [FUTURE_CHECKPOINT]);

    // The tolerance is the caller's: ten minutes ahead passes a tolerance of ten minutes, and
    // a tolerance of 0 refuses a note 1 ms ahead.
    let lax = policy().with_clock_tolerance_ms(600_000);
    assert!(check(&root, &f.alice, &ahead, &f.s2, &lax).valid);
    let strict = policy().with_clock_tolerance_ms(0);
    let r = check(&root, &f.alice, &signed_at(&f, T + 1), &f.s2, &strict);
    assert_eq!(failed(&r), [FUTURE_CHECKPOINT]);
    assert!(check(&root, &f.alice, &signed_at(&f, T), &f.s2, &strict).valid);
}

#[test]
fn unreadable_inputs_are_typed_errors_not_verdicts() {
    let f = fixture();
    let root = f.root();
    let json = serde_json::to_vec(&f.answer(&f.alice)).unwrap();
    assert!(matches!(
        root.check_answer(MSG, b"not a signature", &json, None, &policy()),
        Err(Error::Malformed {
            what: "signature",
            ..
        })
    ));
    assert!(matches!(
        root.check_answer(MSG, &f.alice.to_bytes(), b"{}", None, &policy()),
        Err(Error::Malformed { what: "answer", .. })
    ));
    assert!(matches!(
        TrustRoot::from_key_bytes(b"nope"),
        Err(Error::TrustRoot(_))
    ));
    assert!(root.verify_snapshot(b"{\"encoded\": \"AA==\"}").is_err());
}

#[test]
fn signatures_checkpoints_snapshots_and_openings_on_their_own() {
    let f = fixture();
    let root = f.root();
    let info = root.verify_signature(MSG, &f.alice.to_bytes()).unwrap();
    assert_eq!(info.params, "sha2-128f");
    assert_eq!(info.zeta, hex(f.alice.zeta().as_bytes()));
    // The base64 text form of a signature file is read too.
    let text = b64(&f.alice.to_bytes());
    root.verify_signature(MSG, text.as_bytes()).unwrap();
    assert!(matches!(
        root.verify_signature(b"other", &f.alice.to_bytes()),
        Err(Error::Signature(_))
    ));

    let cp = root.verify_checkpoint(&f.note(&f.s2, T)).unwrap();
    assert_eq!(
        (cp.size, cp.time_unix_ms, cp.snapshot_number),
        (10, Some(T), Some(2))
    );
    let mut forged = f.note(&f.s2, T);
    forged = forged.replacen("\n10\n", "\n11\n", 1);
    assert!(matches!(
        root.verify_checkpoint(&forged),
        Err(Error::BadSignedObject {
            what: "checkpoint",
            ..
        })
    ));

    let snap = serde_json::to_vec(&snapshot_json(&f.s2)).unwrap();
    assert_eq!(root.verify_snapshot(&snap).unwrap().record.number, 2);

    // Pinning a fingerprint.
    let key_file = format!("{}\n", b64(&f.manager.public_key().to_bytes()));
    TrustRoot::from_key_file_pinned(key_file.as_bytes(), &root.fingerprint()).unwrap();
    assert!(TrustRoot::from_key_file_pinned(key_file.as_bytes(), &"00".repeat(32)).is_err());

    // Judging the manager's opening.
    let opening = f.manager.open(MSG, &f.alice).unwrap();
    let pi = opening.pi.as_bytes().to_vec();
    let j = root
        .judge(MSG, &f.alice.to_bytes(), opening.id, &pi)
        .unwrap();
    assert!(j.correct && j.signature_valid && j.opening_matches, "{j:?}");
    let j = root
        .judge(MSG, &f.alice.to_bytes(), opening.id + 1, &pi)
        .unwrap();
    assert!(!j.correct && j.signature_valid && !j.opening_matches);
    let j = root
        .judge(MSG, &f.alice.to_bytes(), opening.id, hex(&pi).as_bytes())
        .unwrap();
    assert!(j.correct, "pi in hex is read too");
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
