//! Conformance cases for [`verify_witnessed`] (issue 28): quorum met, one short, a
//! cosignature over another tree, a witness not in the policy, a stale witness, a replayed
//! old cosignature, and every error.

use ed25519_dalek::Signer as _;

use super::*;
use crate::note::cosignature::{ed25519_cosigned_message, MlDsaCosigner};
use crate::note::signed_note::SignatureLine;
use crate::note::vkey::{KeyKind, Vkey};

const ORIGIN: &str = "dgsp/00112233445566778899aabbccddeeff";
const NOW: u64 = 1_800_000_000;
const ROOT: [u8; 32] = [0x5a; 32];
const SIZE: u64 = 9;

struct Fixture {
    log: MlDsaCosigner,
    w1: MlDsaCosigner,
    w2: MlDsaCosigner,
    /// Not in the policy.
    w4: MlDsaCosigner,
    /// An Ed25519 (0x04) witness, w3.
    ed: ed25519_dalek::SigningKey,
    ed_vkey: Vkey,
    policy: Policy,
}

fn fixture(group: &str) -> Fixture {
    let log = MlDsaCosigner::from_seed(ORIGIN, &[1; 32]).unwrap();
    let w1 = MlDsaCosigner::from_seed("w1.example", &[2; 32]).unwrap();
    let w2 = MlDsaCosigner::from_seed("w2.example", &[3; 32]).unwrap();
    let w4 = MlDsaCosigner::from_seed("w4.example", &[4; 32]).unwrap();
    let ed = ed25519_dalek::SigningKey::from_bytes(&[5; 32]);
    let ed_vkey = Vkey::new(
        "w3.example",
        KeyKind::Ed25519Cosignature(ed.verifying_key().to_bytes()),
    )
    .unwrap();
    let policy = Policy::parse(&format!(
        "log {}\nwitness w1 {} http://w1\nwitness w2 {}\nwitness w3 {}\n{group}\n",
        log.vkey(),
        w1.vkey(),
        w2.vkey(),
        ed_vkey
    ))
    .unwrap();
    Fixture {
        log,
        w1,
        w2,
        w4,
        ed,
        ed_vkey,
        policy,
    }
}

fn two_of_three() -> Fixture {
    fixture("group g 2 w1 w2 w3\nquorum g")
}

impl Fixture {
    fn log_line(&self, size: u64, root: &[u8; 32], ts: u64) -> String {
        self.log.cosign(ORIGIN, size, root, ts).unwrap()
    }

    fn ed_line(&self, size: u64, root: &[u8; 32], ts: u64) -> String {
        let body = CheckpointBody::plain(ORIGIN, size, *root).to_body();
        let mut sig = ts.to_be_bytes().to_vec();
        sig.extend_from_slice(
            &self
                .ed
                .sign(&ed25519_cosigned_message(ts, &body))
                .to_bytes(),
        );
        SignatureLine {
            name: self.ed_vkey.name.clone(),
            key_id: self.ed_vkey.key_id,
            sig,
        }
        .to_line()
    }

    fn note(&self, cosignatures: &[String]) -> String {
        witnessed_note(
            ORIGIN,
            SIZE,
            &ROOT,
            &self.log_line(SIZE, &ROOT, NOW - 5),
            cosignatures,
        )
    }

    fn verify(&self, note: &str, max_age_s: Option<u64>) -> Result<Witnessed, WitnessedError> {
        verify_witnessed(note, &self.policy, NOW, max_age_s, 10)
    }
}

fn cosign(w: &MlDsaCosigner, ts: u64) -> String {
    w.cosign(ORIGIN, SIZE, &ROOT, ts).unwrap()
}

#[test]
fn note_layout() {
    let n = witnessed_note(
        "o",
        3,
        &[0; 32],
        "\u{2014} o AAAAAAA=",
        &["\u{2014} w BBBBBBB=\n".into()],
    );
    assert_eq!(
        n,
        "o\n3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n\
         \u{2014} o AAAAAAA=\n\u{2014} w BBBBBBB=\n"
    );
}

#[test]
fn quorum_met() {
    let f = two_of_three();
    let note = f.note(&[cosign(&f.w1, NOW - 3), cosign(&f.w2, NOW - 2)]);
    let w = f.verify(&note, Some(60)).unwrap();
    assert_eq!(
        w,
        Witnessed {
            origin: ORIGIN.into(),
            size: SIZE,
            root: ROOT,
            log_timestamp: NOW - 5,
            cosigners: vec![("w1".into(), NOW - 3), ("w2".into(), NOW - 2)],
        }
    );
    // The Ed25519 witness counts too.
    let note = f.note(&[cosign(&f.w1, NOW - 3), f.ed_line(SIZE, &ROOT, NOW - 1)]);
    let w = f.verify(&note, Some(60)).unwrap();
    assert_eq!(
        w.cosigners,
        vec![("w1".into(), NOW - 3), ("w3".into(), NOW - 1)]
    );
}

#[test]
fn one_short() {
    let f = two_of_three();
    let note = f.note(&[cosign(&f.w1, NOW - 3)]);
    assert_eq!(
        f.verify(&note, Some(60)),
        Err(WitnessedError::QuorumNotMet {
            have: vec!["w1".into()],
            stale: vec![],
        })
    );
    // The same witness twice is still one witness.
    let note = f.note(&[cosign(&f.w1, NOW - 3), cosign(&f.w1, NOW - 2)]);
    assert!(matches!(
        f.verify(&note, Some(60)),
        Err(WitnessedError::QuorumNotMet { .. })
    ));
}

#[test]
fn cosignature_over_another_tree_is_refused() {
    let f = two_of_three();
    let other_root = f.w2.cosign(ORIGIN, SIZE, &[0x5b; 32], NOW - 2).unwrap();
    let note = f.note(&[cosign(&f.w1, NOW - 3), other_root]);
    assert_eq!(
        f.verify(&note, Some(60)),
        Err(WitnessedError::BadCosignature {
            witness: "w2".into()
        })
    );
    let other_ed = f.ed_line(SIZE, &[0x5b; 32], NOW - 2);
    let note = f.note(&[cosign(&f.w1, NOW - 3), other_ed]);
    assert_eq!(
        f.verify(&note, Some(60)),
        Err(WitnessedError::BadCosignature {
            witness: "w3".into()
        })
    );
}

#[test]
fn replayed_old_cosignature_is_refused() {
    let f = two_of_three();
    // w2 cosigned the tree at size 5; that line is spliced onto the size-9 note.
    let old = f.w2.cosign(ORIGIN, 5, &[0x11; 32], NOW - 100).unwrap();
    let note = f.note(&[cosign(&f.w1, NOW - 3), old]);
    assert_eq!(
        f.verify(&note, None),
        Err(WitnessedError::BadCosignature {
            witness: "w2".into()
        })
    );
}

#[test]
fn witness_not_in_policy_is_ignored() {
    let f = two_of_three();
    let note = f.note(&[cosign(&f.w1, NOW - 3), cosign(&f.w4, NOW - 2)]);
    assert_eq!(
        f.verify(&note, Some(60)),
        Err(WitnessedError::QuorumNotMet {
            have: vec!["w1".into()],
            stale: vec![],
        })
    );
    // Even a bad line by an unknown key is ignored.
    let bad_unknown = f.w4.cosign(ORIGIN, SIZE, &[0; 32], NOW - 2).unwrap();
    let note = f.note(&[cosign(&f.w1, NOW - 3), cosign(&f.w2, NOW - 3), bad_unknown]);
    assert!(f.verify(&note, Some(60)).is_ok());
}

#[test]
fn stale_and_future_witnesses_do_not_count() {
    let f = two_of_three();
    let note = f.note(&[cosign(&f.w1, NOW - 3), cosign(&f.w2, NOW - 61)]);
    assert_eq!(
        f.verify(&note, Some(60)),
        Err(WitnessedError::QuorumNotMet {
            have: vec!["w1".into()],
            stale: vec!["w2".into()],
        })
    );
    // Without a maximum age the old cosignature counts.
    assert!(f.verify(&note, None).is_ok());
    // At the limits: exactly max_age old, exactly tolerance ahead.
    let edge = f.note(&[cosign(&f.w1, NOW - 60), cosign(&f.w2, NOW + 10)]);
    assert!(f.verify(&edge, Some(60)).is_ok());
    let ahead = f.note(&[cosign(&f.w1, NOW - 3), cosign(&f.w2, NOW + 11)]);
    assert_eq!(
        f.verify(&ahead, None),
        Err(WitnessedError::QuorumNotMet {
            have: vec!["w1".into()],
            stale: vec!["w2".into()],
        })
    );
    // A fresh line from a witness with a stale one too: counted, not named stale.
    let both = f.note(&[cosign(&f.w2, NOW - 100), cosign(&f.w2, NOW - 1)]);
    assert_eq!(
        f.verify(&both, Some(60)),
        Err(WitnessedError::QuorumNotMet {
            have: vec!["w2".into()],
            stale: vec![],
        })
    );
}

#[test]
fn log_signature_errors() {
    let f = two_of_three();
    let w = [cosign(&f.w1, NOW - 3), cosign(&f.w2, NOW - 2)];
    let no_log = witnessed_note(ORIGIN, SIZE, &ROOT, &w[0], &w[1..]);
    assert_eq!(f.verify(&no_log, None), Err(WitnessedError::NoLogSignature));

    let bad = witnessed_note(ORIGIN, SIZE, &ROOT, &f.log_line(SIZE, &[0; 32], NOW), &w);
    assert_eq!(f.verify(&bad, None), Err(WitnessedError::BadLogSignature));

    let stale = witnessed_note(ORIGIN, SIZE, &ROOT, &f.log_line(SIZE, &ROOT, NOW - 61), &w);
    assert_eq!(
        f.verify(&stale, Some(60)),
        Err(WitnessedError::StaleLogSignature { age_s: 61 })
    );
    assert!(f.verify(&stale, None).is_ok());
    let future = witnessed_note(ORIGIN, SIZE, &ROOT, &f.log_line(SIZE, &ROOT, NOW + 11), &w);
    assert_eq!(
        f.verify(&future, None),
        Err(WitnessedError::FutureLogSignature { ahead_s: 11 })
    );

    let other = MlDsaCosigner::from_seed("dgsp/other", &[1; 32]).unwrap();
    let line = other.cosign("dgsp/other", SIZE, &ROOT, NOW).unwrap();
    let unknown = witnessed_note("dgsp/other", SIZE, &ROOT, &line, &[]);
    assert_eq!(
        f.verify(&unknown, None),
        Err(WitnessedError::UnknownOrigin("dgsp/other".into()))
    );
}

#[test]
fn malformed_notes() {
    let f = two_of_three();
    let good = f.note(&[cosign(&f.w1, NOW - 3), cosign(&f.w2, NOW - 2)]);
    let with_ext = good.replacen("\n\n", "\ntime 5\n\n", 1);
    for bad in [
        "garbage".to_owned(),
        with_ext,
        good.replacen("\n9\n", "\n09\n", 1),
    ] {
        assert!(
            matches!(f.verify(&bad, None), Err(WitnessedError::Malformed(_))),
            "{bad:.60}"
        );
    }
}

#[test]
fn quorum_none_needs_only_the_log() {
    let f = fixture("quorum none");
    let note = f.note(&[]);
    let w = f.verify(&note, Some(60)).unwrap();
    assert!(w.cosigners.is_empty());
}

#[test]
fn ed25519_log_signature() {
    let sk = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let vkey = Vkey::new(ORIGIN, KeyKind::Ed25519(sk.verifying_key().to_bytes())).unwrap();
    let policy = Policy::parse(&format!("log {vkey}\nquorum none\n")).unwrap();
    let body = CheckpointBody::plain(ORIGIN, SIZE, ROOT).to_body();
    let line = SignatureLine {
        name: ORIGIN.into(),
        key_id: vkey.key_id,
        sig: sk.sign(body.as_bytes()).to_bytes().to_vec(),
    }
    .to_line();
    let note = witnessed_note(ORIGIN, SIZE, &ROOT, &line, &[]);
    let w = verify_witnessed(&note, &policy, NOW, None, 10).unwrap();
    assert_eq!(w.log_timestamp, 0);
    // No timestamp: no freshness statement, so a maximum age refuses it.
    assert!(matches!(
        verify_witnessed(&note, &policy, NOW, Some(60), 10),
        Err(WitnessedError::StaleLogSignature { .. })
    ));
}
