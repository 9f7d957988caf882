//! Witness policies in the trust root (issue 28): how a root with a policy is built and
//! refused, and what the witness checks of an answer say (the verdicts of every case are in
//! the conformance vectors; here, the words and the order of the checks).

mod support;

use dgsp_core::ParamSet;
use dgsp_verifier::evidence::{WITNESSED_CHECKPOINT, WITNESS_QUORUM};
use dgsp_verifier::wire::answer::VerifyAnswer;
use dgsp_verifier::wire::snapshot::snapshot_json;
use dgsp_verifier::{AnswerReport, Error, Policy, TrustRoot};
use support::{witnesses, Group, MSG, ROOT, SIZE, T, T_S};

fn check(root: &TrustRoot, f: &Group, answer: &VerifyAnswer, policy: &Policy) -> AnswerReport {
    let json = serde_json::to_vec(answer).unwrap();
    let snap = serde_json::to_vec(&snapshot_json(&f.s2)).unwrap();
    root.check_answer(MSG, &f.alice.to_bytes(), &json, Some(&snap), policy)
        .unwrap()
}

fn detail<'a>(r: &'a AnswerReport, name: &str) -> (bool, &'a str) {
    let c = r.checks.0.iter().find(|c| c.check == name).unwrap();
    (c.passed, &c.detail)
}

#[test]
fn a_root_with_a_policy_checks_the_witnesses_and_says_so() {
    let f = Group::new(ParamSet::Sha2_128f, 15);
    let [w1, w2, _, _] = witnesses();
    let root = f
        .root()
        .with_witness_policy(&f.witness_policy(), Some(&f.log_key_statement()))
        .unwrap();
    assert_eq!(root.witness_policy().unwrap().witnesses().len(), 3);
    let cosigs = [
        f.cosign(&w1, SIZE, &ROOT, T_S - 2),
        f.cosign(&w2, SIZE, &ROOT, T_S - 400),
    ];
    let answer = f.answer_witnessed(&f.alice, Some(f.witnessed(SIZE, &ROOT, T_S - 1, &cosigs)));

    // Within 300 s, w2's cosignature is too old: the quorum fails, naming w2.
    let r = check(&root, &f, &answer, &Policy::max_age_secs(300, T));
    assert!(r.witnesses_checked && !r.valid);
    let names: Vec<_> = r.checks.0.iter().map(|c| c.check).collect();
    assert_eq!(
        names,
        [
            "gateway_status",
            "signature",
            "checkpoint_signature",
            "checkpoint_age",
            "future_checkpoint",
            WITNESSED_CHECKPOINT,
            WITNESS_QUORUM,
            "snapshot_signature",
            "snapshot_named",
            "revocation_proof"
        ]
    );
    let (ok, words) = detail(&r, WITNESSED_CHECKPOINT);
    assert!(ok, "{words}");
    assert!(
        words.contains("1 s ago") && words.contains("same origin"),
        "{words}"
    );
    let (ok, words) = detail(&r, WITNESS_QUORUM);
    assert!(!ok);
    assert!(
        words.contains("counted w1")
            && words.contains("older than 300 s")
            && words.ends_with(": w2"),
        "{words}"
    );

    // A caller who accepts 500 s counts both.
    let r = check(&root, &f, &answer, &Policy::max_age_secs(500, T));
    assert!(r.valid, "{:?}", r.first_failure());
    let (_, words) = detail(&r, WITNESS_QUORUM);
    assert_eq!(
        words,
        "quorum two-of-three met by w1 (2 s ago), w2 (400 s ago) (cosignatures no older than 500 s)"
    );

    // Without a policy: no witness check, and the report says so.
    let r = check(&f.root(), &f, &answer, &Policy::max_age_secs(300, T));
    assert!(r.valid && !r.witnesses_checked);
    assert!(r.checks.0.iter().all(|c| !c.check.starts_with("witness")));
}

#[test]
fn a_bad_cosignature_is_named() {
    let f = Group::new(ParamSet::Sha2_128f, 15);
    let [w1, w2, w3, _] = witnesses();
    let root = f
        .root()
        .with_witness_policy(&f.witness_policy(), None)
        .unwrap();
    let cosigs = [
        f.cosign(&w1, SIZE, &ROOT, T_S),
        f.cosign(&w2, SIZE - 1, &[1; 32], T_S - 100),
        f.cosign(&w3, SIZE, &ROOT, T_S),
    ];
    let answer = f.answer_witnessed(&f.alice, Some(f.witnessed(SIZE, &ROOT, T_S, &cosigs)));
    let r = check(&root, &f, &answer, &Policy::max_age_secs(300, T));
    let (ok, words) = detail(&r, WITNESS_QUORUM);
    assert!(
        !ok && words.contains("witness w2 does not verify"),
        "{words}"
    );
}

#[test]
fn the_policy_must_name_the_groups_log_key() {
    let f = Group::new(ParamSet::Sha2_128f, 15);
    let other = Group::new(ParamSet::Sha2_128f, 17);
    let policy = f.witness_policy();
    let statement = f.log_key_statement();
    let trust_root = |e: Error| match e {
        Error::TrustRoot(d) => d,
        e => panic!("{e:?}"),
    };

    // A line that does not parse: the error names it.
    let bad = policy.replace("group two-of-three 2", "group two-of-three 4");
    let e = trust_root(f.root().with_witness_policy(&bad, None).unwrap_err());
    assert!(e.contains("policy line 6: bad threshold"), "{e}");

    // Another group's policy: no log line for this origin.
    let e = trust_root(
        f.root()
            .with_witness_policy(&other.witness_policy(), None)
            .unwrap_err(),
    );
    assert!(e.contains("no log line for this group's origin"), "{e}");

    // A policy whose log key of this origin is not the one the statement names: refused.
    let mixed = other.witness_policy().replace(&other.log_key().vkey(), &{
        dgsp_verifier::wire::note::MlDsaCosigner::from_seed(other.log_key().name(), &[3; 32])
            .unwrap()
            .vkey()
    });
    let e = trust_root(
        other
            .root()
            .with_witness_policy(&mixed, Some(&other.log_key_statement()))
            .unwrap_err(),
    );
    assert!(
        e.contains("is not the key the group's log-key statement names"),
        "{e}"
    );

    // Another group's statement does not verify under this key.
    assert!(matches!(
        f.root()
            .with_witness_policy(&policy, Some(&other.log_key_statement())),
        Err(Error::BadSignedObject {
            what: "log-key statement",
            ..
        })
    ));

    // The log line, from the statement alone.
    let line = f.root().log_line_from_statement(&statement).unwrap();
    assert_eq!(line, format!("log {}\n", f.log_key().vkey()));
    assert!(policy.contains(&line));
}
