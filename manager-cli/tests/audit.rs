//! The auditor against logs written by the real registry: honest ones report nothing; for
//! each misbehaviour of a dishonest manager (who holds the secret key, so re-seals the
//! chain and re-signs what it can) the audit reports exactly that violation at its seq.

use crate::logs;
use crate::tamper;

use std::io::Write as _;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use dgsp_core::checkpoint::{origin_for, Checkpoint, SnapshotRef};
use dgsp_core::{Manager, MessageDigest, ParamSet, Pi, Signature, Zeta};
use dgsp_gateway::anchor::Anchor;
use dgsp_manager::audit::{self, Auditor, Report, Skipped, WarningKind};
use dgsp_manager::cli::{AuditArgs, HttpArgs};
use dgsp_manager::config::Config;
use dgsp_manager::output::Output;
use dgsp_manager::{exit, Error};
use dgsp_wire::events::Event;
use dgsp_wire::log::Entry;
use logs::Log;
use rand_core::{OsRng, RngCore};
use serde_json::Value;
use tamper::{ALL, NOTHING};

/// The small honest log, written once by a real registry and shared by the tests.
fn small() -> &'static Log {
    static SMALL: OnceLock<Log> = OnceLock::new();
    SMALL.get_or_init(|| logs::block_on(logs::small_log()))
}

fn audit_with(pin: Option<Anchor>, entries: &[Entry]) -> Report {
    let mut a = Auditor::new(pin);
    for e in entries {
        a.push(e);
    }
    a.finish()
}

fn audit(entries: &[Entry]) -> Report {
    audit_with(None, entries)
}

/// The `(kind, seq)` of every violation.
fn found(entries: &[Entry]) -> Vec<(&'static str, u64)> {
    let report = audit(entries);
    eprintln!("{}", report.render());
    report.kinds()
}

#[test]
fn the_honest_log_reports_nothing() {
    let log = small();
    let report = audit(&log.entries);
    assert_eq!(report.kinds(), vec![], "{}", report.render());
    assert!(report.warnings.is_empty(), "{}", report.render());
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    let s = &report.stats;
    assert_eq!((s.members, s.certificates, s.revocations), (4, 12, 3));
    assert_eq!((s.openings, s.judged, s.revoked_zetas), (3, 3, 7));
    assert!(s.snapshots >= 4 && s.checkpoints >= 4, "{s:?}");
    // The registry signs Merkle roots: every checkpoint's root is the tree's.
    assert_eq!((s.tree_roots, s.legacy_roots), (s.checkpoints, 0));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["stats"]["tree_roots"], Value::from(s.checkpoints));
    assert_eq!(json["stats"]["legacy_roots"], Value::from(0));
    assert!(
        report.render().contains(&format!(
            "{} Merkle tree roots, 0 legacy chain hashes",
            s.checkpoints
        )),
        "{}",
        report.render()
    );
    assert_eq!(report.entries, log.entries.len() as u64);
    let group = report.group.unwrap();
    assert_eq!(
        group.fingerprint,
        hex::encode(log.manager.public_key().fingerprint())
    );
    assert!(!group.pinned);
}

#[test]
fn a_wrong_opening_is_found() {
    let log = small();
    let mut entries = log.entries.clone();
    let k = tamper::nth(&entries, "signature_opened", 0, |_| true);
    let bob = tamper::id_of(&entries, "bob");
    // The manager blames bob for alice's signature.
    let Ok(Event::SignatureOpened {
        signature,
        message_digest,
        digest,
        pi,
        ..
    }) = tamper::at(&mut entries, k).event()
    else {
        panic!("an opening")
    };
    let blamed = Event::SignatureOpened {
        signature,
        message_digest,
        digest,
        id: bob,
        pi,
    };
    tamper::set_event(&mut entries, k, &blamed);
    tamper::reseal(&mut entries, k, &log.manager, ALL);
    assert_eq!(found(&entries), vec![("wrong_opening", k)]);
}

/// The opening event at `seq`, decoded.
fn opening_at(entries: &mut [Entry], seq: u64) -> (Signature, Event) {
    let ev = tamper::at(entries, seq).event().unwrap();
    let Event::SignatureOpened { signature, .. } = &ev else {
        panic!("an opening")
    };
    let sig = Signature::from_bytes(&B64.decode(signature).unwrap()).unwrap();
    (sig, ev)
}

/// `ev` (an opening) with its signature and DGSP digest replaced.
fn with_signature(ev: Event, sig: &Signature, digest: &MessageDigest) -> Event {
    let Event::SignatureOpened {
        message_digest,
        id,
        pi,
        ..
    } = ev
    else {
        panic!("an opening")
    };
    Event::SignatureOpened {
        signature: B64.encode(sig.to_bytes()),
        message_digest,
        digest: Some(hex::encode(digest.as_bytes())),
        id,
        pi,
    }
}

#[test]
fn an_opened_signature_that_does_not_verify_is_found() {
    let log = small();
    let k = tamper::nth(&log.entries, "signature_opened", 1, |_| true);
    let params = log.manager.params();

    // The manager "opens" a signature whose certificate signature (SPHINCS+) is forged: the
    // WOTS+ part, tau and the digest are the member's, so judge alone would pass.
    let mut entries = log.entries.clone();
    let (sig, ev) = opening_at(&mut entries, k);
    let (digest, id, pi) = match &ev {
        Event::SignatureOpened {
            digest: Some(d),
            id,
            pi,
            ..
        } => (
            MessageDigest::from_slice(params, &hex::decode(d).unwrap()).unwrap(),
            *id,
            Pi::from_slice(params, &hex::decode(pi).unwrap()).unwrap(),
        ),
        _ => panic!("a schema-2 opening"),
    };
    let mut bytes = sig.to_bytes();
    bytes[4 + params.wots_sig_len() + params.n() + 16 + 100] ^= 0x20;
    let forged = Signature::from_bytes(&bytes).unwrap();
    let group = log.manager.public_key();
    group.judge_digest(&digest, &forged, id, &pi).unwrap();
    assert!(group
        .verify_digest_ignoring_revocation(&digest, &forged)
        .is_err());
    tamper::set_event(&mut entries, k, &with_signature(ev, &forged, &digest));
    tamper::reseal(&mut entries, k, &log.manager, ALL);
    let report = audit(&entries);
    assert_eq!(
        report.kinds(),
        vec![("invalid_opened_signature", k)],
        "{}",
        report.render()
    );
    assert!(report.violations[0].detail.contains("does not verify"));
    assert_eq!(report.stats.judged, 3);

    // The logged digest swapped for another message's: the signature does not verify for
    // it (and judge would fail too): one violation, the invalid signature.
    let mut entries = log.entries.clone();
    let (sig, ev) = opening_at(&mut entries, k);
    let other = sig.message_digest(b"a message nobody signed");
    tamper::set_event(&mut entries, k, &with_signature(ev, &sig, &other));
    tamper::reseal(&mut entries, k, &log.manager, ALL);
    assert_eq!(found(&entries), vec![("invalid_opened_signature", k)]);
}

#[test]
fn a_dropped_revocation_zeta_is_found() {
    let log = small();
    let mut entries = log.entries.clone();
    let carol = tamper::id_of(&entries, "carol");
    let k = tamper::nth(
        &entries,
        "member_revoked",
        0,
        |e| matches!(e.event(), Ok(Event::MemberRevoked { id, .. }) if id == carol),
    );
    let Ok(Event::MemberRevoked {
        id,
        counter,
        first: 0,
        mut zetas,
    }) = tamper::at(&mut entries, k).event()
    else {
        panic!("a revocation")
    };
    // One certificate stays valid; the counter is lowered to match, and every later
    // snapshot is recomputed and re-signed over the smaller set.
    zetas.pop();
    let event = Event::MemberRevoked {
        id,
        counter: counter - 1,
        first: 0,
        zetas,
    };
    tamper::set_event(&mut entries, k, &event);
    tamper::reseal(&mut entries, k, &log.manager, ALL);
    assert_eq!(found(&entries), vec![("revocation_count", k)]);
}

#[test]
fn a_snapshot_whose_root_does_not_match_is_found() {
    let log = small();
    let mut entries = log.entries.clone();
    let k = tamper::nth(&entries, "snapshot_published", 0, |e| {
        tamper::snapshot_of(e).record.count > 0
    });
    let mut record = tamper::snapshot_of(tamper::at(&mut entries, k)).record;
    // Same count, but one revoked zeta swapped for another: that certificate stays valid
    // for anyone who trusts the snapshot.
    let mut zetas: Vec<Zeta> = tamper::set_up_to(&entries, record.log_seq)
        .iter()
        .copied()
        .collect();
    let mut other = [0u8; 16];
    OsRng.fill_bytes(&mut other);
    zetas[0] = Zeta(other);
    let fake = dgsp_core::revocation::RevocationSet::from_zetas(zetas);
    assert_eq!(fake.len(), record.count);
    record.root = fake.root();
    tamper::set_snapshot(&mut entries, k, &log.manager, &record);
    tamper::reseal(&mut entries, k, &log.manager, ALL);
    assert_eq!(found(&entries), vec![("snapshot_root", k)]);
}

#[test]
fn a_shrinking_snapshot_is_found() {
    let log = small();
    let mut entries = log.entries.clone();
    let snapshots: Vec<(u64, u64)> = entries
        .iter()
        .filter(|e| e.kind == "snapshot_published")
        .map(|e| (e.seq, tamper::snapshot_of(e).record.count))
        .collect();
    // The last snapshot (bob, carol and dave revoked) is replaced by one with the set of
    // the first non-empty snapshot (bob only): carol's certificates come back to life.
    let (k, _) = *snapshots.last().unwrap();
    let first = snapshots.iter().find(|(_, c)| *c > 0).unwrap().0;
    let earlier = tamper::snapshot_of(tamper::at(&mut entries, first)).record;
    let mut record = tamper::snapshot_of(tamper::at(&mut entries, k)).record;
    assert!(earlier.count < record.count);
    record.count = earlier.count;
    record.root = earlier.root;
    tamper::set_snapshot(&mut entries, k, &log.manager, &record);
    tamper::reseal(&mut entries, k, &log.manager, ALL);
    assert_eq!(found(&entries), vec![("snapshot_shrink", k)]);
}

#[test]
fn a_rewritten_entry_is_found_once() {
    let log = small();
    let bob = tamper::id_of(&log.entries, "bob");

    // Rewritten and not re-sealed: its hash no longer matches; the next entry still links
    // to the stated hash, so there is exactly one violation, at the rewritten entry.
    // Its public bytes are leaves of the tree, so every checkpoint covering it differs
    // from the log's tree: a consequence, counted as skipped, not found again.
    let mut entries = log.entries.clone();
    let k = tamper::nth(&entries, "signature_opened", 1, |_| true);
    tamper::at(&mut entries, k).public["id"] = Value::from(bob);
    let report = audit(&entries);
    assert_eq!(report.kinds(), vec![("chain", k)], "{}", report.render());
    let covering = entries
        .iter()
        .filter(|e| e.kind == "checkpoint" && e.public["size"].as_u64().unwrap() >= k)
        .count() as u64;
    assert!(covering > 0);
    assert_eq!(
        report.skipped.get(&Skipped::CheckpointRoot),
        Some(&covering)
    );
    assert_eq!(
        report.stats.tree_roots + covering,
        report.stats.checkpoints,
        "{:?}",
        report.stats
    );

    // Rewritten and re-hashed alone: the next entry's link breaks, one `chain` violation
    // there; the checkpoints covering the rewritten entry follow from it.
    let mut entries = log.entries.clone();
    let k = tamper::nth(&entries, "signature_opened", 0, |_| true);
    let e = tamper::at(&mut entries, k);
    e.time_ms += 1;
    e.hash = hex::encode(e.compute_hash(&dgsp_wire::log::unhex32(&e.prev_hash).unwrap()));
    let report = audit(&entries);
    assert_eq!(
        report.kinds(),
        vec![("chain", k + 1)],
        "{}",
        report.render()
    );
    assert!(report.skipped[&Skipped::CheckpointRoot] > 0);

    // A private payload rewritten under the same commitment: the public bytes, and so the
    // tree, are unchanged.
    let mut entries = log.entries.clone();
    let k = tamper::nth(&entries, "member_joined", 0, |_| true);
    let private = tamper::at(&mut entries, k).private.as_mut().unwrap();
    private.payload["username"] = Value::from("mallory");
    let report = audit(&entries);
    assert_eq!(report.kinds(), vec![("commitment", k)]);
    assert_eq!(report.stats.tree_roots, report.stats.checkpoints);
}

#[test]
fn a_rewritten_and_resealed_entry_is_found_at_the_checkpoint_covering_it() {
    let log = small();
    let mut entries = log.entries.clone();
    let dave = tamper::id_of(&entries, "dave");
    let k = tamper::nth(
        &entries,
        "member_joined",
        0,
        |e| matches!(e.event(), Ok(Event::MemberJoined { id, .. }) if id == dave),
    );
    // The manager renames dave and re-hashes the whole chain after it, but the checkpoints
    // it signed before stay what they were (gateways and auditors have seen them).
    let event = Event::MemberJoined {
        id: dave,
        username: "mallory".into(),
    };
    tamper::set_event(&mut entries, k, &event);
    tamper::reseal(&mut entries, k, &log.manager, NOTHING);
    let c = tamper::nth(&entries, "checkpoint", 0, |e| {
        e.public["size"].as_u64().unwrap() >= k
    });
    let later = entries
        .iter()
        .filter(|e| e.kind == "checkpoint" && e.seq > c)
        .count();
    assert!(later > 2, "several checkpoints follow, all differing");
    let report = audit(&entries);
    assert_eq!(report.kinds(), vec![("checkpoint_mismatch", c)]);
    // The finding names the checkpoint, its size, the root it signs and the log's.
    let cp = tamper::at(&mut entries, c).clone();
    let size = cp.public["size"].as_u64().unwrap();
    let signed = cp.public["head"].as_str().unwrap();
    let actual = hex::encode(tamper::tree_root(&entries, size));
    let previous = entries
        .iter()
        .filter(|e| e.kind == "checkpoint" && e.seq < c)
        .filter_map(|e| e.public["size"].as_u64())
        .max()
        .unwrap_or(0);
    assert!(previous < k && k <= size);
    assert_ne!(signed, actual);
    let detail = &report.violations[0].detail;
    for part in [
        format!("checkpoint entry {c} signs root {signed} for the first {size} entries"),
        format!("the log's tree has root {actual}"),
        format!(
            "an entry among {}..={size} was changed after it was checkpointed",
            previous + 1
        ),
        format!("({later} later checkpoints differ from the log as a consequence)"),
    ] {
        assert!(detail.contains(&part), "{part:?} not in {detail:?}");
    }
}

#[test]
fn a_changed_entry_is_found_at_the_first_checkpoint_even_when_later_ones_are_re_signed() {
    let log = small();
    let mut entries = log.entries.clone();
    // The checkpoint covering the last issuance, and the one before it.
    let k = tamper::nth(&entries, "certificates_issued", 3, |_| true);
    let c = tamper::nth(&entries, "checkpoint", 0, |e| {
        e.public["size"].as_u64().unwrap() >= k
    });
    let before = entries
        .iter()
        .filter(|e| e.kind == "checkpoint" && e.seq < c)
        .filter_map(|e| e.public["size"].as_u64())
        .max()
        .unwrap();
    assert!(before < k);
    let Ok(Event::CertificatesIssued {
        id,
        first,
        count,
        wots_pk_digests,
    }) = tamper::at(&mut entries, k).event()
    else {
        panic!("an issuance")
    };
    // One key digest swapped: the chain re-sealed, checkpoint c left as signed, every
    // checkpoint after it re-signed over the new tree (so they match again).
    let mut digests = wots_pk_digests;
    digests[0] = logs::random_hex(32);
    let event = Event::CertificatesIssued {
        id,
        first,
        count,
        wots_pk_digests: digests,
    };
    tamper::set_event(&mut entries, k, &event);
    tamper::reseal(&mut entries, k, &log.manager, NOTHING);
    tamper::reseal(&mut entries, c, &log.manager, ALL);
    let report = audit(&entries);
    assert_eq!(report.kinds(), vec![("checkpoint_mismatch", c)]);
    let detail = &report.violations[0].detail;
    // Localised after the last checkpoint that matched; no later one differs.
    assert!(
        detail.contains(&format!("among {}..=", before + 1)),
        "{detail}"
    );
    assert!(!detail.contains("later checkpoints"), "{detail}");
}

#[test]
fn a_note_with_the_root_of_another_size_is_refused() {
    let log = small();
    let mut entries = log.entries.clone();
    let c = tamper::nth(&entries, "checkpoint", 2, |_| true);
    let size = tamper::at(&mut entries, c).public["size"].as_u64().unwrap();
    assert!(size > 1);
    // Correctly signed, the entry stating what the note states, but its root is the tree's
    // of one entry fewer, or of the first entry only.
    for other in [size - 1, 1] {
        let mut entries = entries.clone();
        let root = tamper::tree_root(&entries, other);
        let note = log.manager.sign_checkpoint(&Checkpoint {
            origin: origin_for(log.manager.public_key()),
            size,
            root,
            time_unix_ms: Some(dgsp_wire::log::now_ms()),
            snapshot: tamper::newest_snapshot(&entries, size),
        });
        let e = tamper::at(&mut entries, c);
        e.public["head"] = Value::from(hex::encode(root));
        e.public["note"] = Value::from(note);
        tamper::reseal(&mut entries, c, &log.manager, ALL);
        let report = audit(&entries);
        assert_eq!(report.kinds(), vec![("checkpoint_mismatch", c)], "{other}");
        assert!(report.violations[0].detail.contains(&format!(
            "signs root {} for the first {size} entries",
            hex::encode(root)
        )));
    }
    // Appended at the head, with the root of an earlier size.
    let size = entries.last().unwrap().seq;
    let root = tamper::tree_root(&entries, size - 2);
    let k = tamper::append_checkpoint_of(&mut entries, &log.manager, size, root, None);
    assert_eq!(found(&entries), vec![("checkpoint_mismatch", k)]);
}

#[test]
fn notes_signed_before_the_tree_with_chain_roots_are_accepted() {
    let log = small();
    let legacy = tamper::Resign {
        snapshots: false,
        checkpoints: true,
        roots: tamper::Roots::LegacyChain,
    };
    // Every checkpoint re-signed over the chain hash of entry `size`, as registries did
    // before the tree.
    let mut entries = log.entries.clone();
    tamper::reseal(&mut entries, 0, &log.manager, legacy);
    let report = audit(&entries);
    assert_eq!(report.kinds(), vec![], "{}", report.render());
    let s = &report.stats;
    assert_eq!((s.tree_roots, s.legacy_roots), (0, s.checkpoints));
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);

    // A registry migrated mid-log: chain roots up to a checkpoint, tree roots after it.
    let c = tamper::nth(&entries, "checkpoint", 1, |_| true);
    tamper::reseal(&mut entries, c, &log.manager, ALL);
    let report = audit(&entries);
    assert_eq!(report.kinds(), vec![], "{}", report.render());
    let s = &report.stats;
    assert_eq!(s.legacy_roots, 2, "{s:?}");
    assert_eq!(s.tree_roots, s.checkpoints - 2, "{s:?}");

    // A legacy root is still compared: the chain hash of another entry is refused.
    let mut entries = log.entries.clone();
    tamper::reseal(&mut entries, 0, &log.manager, legacy);
    let size = entries.last().unwrap().seq;
    let wrong = tamper::root_of(&entries, size - 1, tamper::Roots::LegacyChain);
    let k = tamper::append_checkpoint_of(&mut entries, &log.manager, size, wrong, None);
    assert_eq!(found(&entries), vec![("checkpoint_mismatch", k)]);
}

#[test]
fn a_certificate_issued_after_revocation_is_found() {
    let log = small();
    let mut entries = log.entries.clone();
    let bob = tamper::id_of(&entries, "bob");
    let k = tamper::append(
        &mut entries,
        &Event::CertificatesIssued {
            id: bob,
            first: 2,
            count: 1,
            wots_pk_digests: vec![logs::random_hex(32)],
        },
    );
    tamper::append_checkpoint(&mut entries, &log.manager);
    assert_eq!(found(&entries), vec![("issued_to_revoked", k)]);
}

#[test]
fn a_reused_counter_is_found() {
    let log = small();
    let mut entries = log.entries.clone();
    let alice = tamper::id_of(&entries, "alice");
    let k = tamper::append(
        &mut entries,
        &Event::CertificatesIssued {
            id: alice,
            first: 1,
            count: 2,
            wots_pk_digests: vec![logs::random_hex(32), logs::random_hex(32)],
        },
    );
    tamper::append_checkpoint(&mut entries, &log.manager);
    assert_eq!(found(&entries), vec![("counter_reused", k)]);
}

/// The checkpoint of issue 26: signed by the manager over a revocation that the snapshot it
/// names does not hold (a registry whose revocation fence was released by a client that went
/// away). A later snapshot holding the revocation and a checkpoint naming it repair the log
/// for verifiers; the bad checkpoint stays a violation.
#[test]
fn a_checkpoint_naming_a_snapshot_without_a_revocation_it_covers_is_found() {
    let log = small();
    let m = &log.manager;
    let mut entries = log.entries.clone();
    let alice = tamper::id_of(&entries, "alice");
    let newest = entries
        .iter()
        .rfind(|e| e.kind == "snapshot_published")
        .map(tamper::snapshot_of)
        .unwrap();
    let r = tamper::append(
        &mut entries,
        &Event::MemberRevoked {
            id: alice,
            counter: 5,
            first: 0,
            zetas: (0..5).map(|_| logs::random_hex(16)).collect(),
        },
    );
    let named = Some(SnapshotRef::of(&newest.record));
    let k = tamper::append_checkpoint_naming(&mut entries, m, named);
    let report = audit(&entries);
    assert_eq!(report.kinds(), vec![("checkpoint_uncovered", k)]);
    let detail = &report.violations[0].detail;
    assert!(
        detail.contains(&format!("the revocation at entry {r} is among its entries")),
        "{detail}"
    );

    // Repaired: snapshot n + 1 holds alice's zetas, a checkpoint names it.
    let set = tamper::set_up_to(&entries, r);
    let record = newest
        .record
        .next(r, set.len(), set.root(), dgsp_wire::log::now_ms());
    let repair = m.sign_snapshot(&record);
    tamper::append(
        &mut entries,
        &Event::SnapshotPublished {
            snapshot: dgsp_wire::snapshot::snapshot_json(&repair),
        },
    );
    tamper::append_checkpoint(&mut entries, m);
    assert_eq!(found(&entries), vec![("checkpoint_uncovered", k)]);

    // Naming an older snapshot than the newest among its entries is the same violation.
    let mut entries = log.entries.clone();
    let older = tamper::nth(&entries, "snapshot_published", 0, |_| true);
    let older = Some(SnapshotRef::of(
        &tamper::snapshot_of(tamper::at(&mut entries, older)).record,
    ));
    let k = tamper::append_checkpoint_naming(&mut entries, m, older);
    assert_eq!(found(&entries), vec![("checkpoint_uncovered", k)]);
}

/// A member revoked before any certificate revokes no zeta: a checkpoint after it names the
/// snapshot in force, as the registry signs it (no snapshot is owed), and is no violation.
#[test]
fn a_revocation_of_no_certificate_needs_no_snapshot() {
    let log = small();
    let mut entries = log.entries.clone();
    let id = entries.iter().filter(|e| e.kind == "member_joined").count() as u64;
    tamper::append(
        &mut entries,
        &Event::MemberJoined {
            id,
            username: "dora".into(),
        },
    );
    tamper::append(
        &mut entries,
        &Event::MemberRevoked {
            id,
            counter: 0,
            first: 0,
            zetas: vec![],
        },
    );
    tamper::append_checkpoint(&mut entries, &log.manager);
    assert_eq!(found(&entries), vec![]);
}

#[test]
fn a_forged_checkpoint_signature_is_found() {
    let log = small();
    let mut entries = log.entries.clone();
    let k = tamper::nth(&entries, "checkpoint", 1, |_| true);
    let forger = Manager::generate(ParamSet::Sha2_128f, &mut OsRng);
    let e = tamper::at(&mut entries, k);
    let size = e.public["size"].as_u64().unwrap();
    let head = dgsp_wire::log::unhex32(e.public["head"].as_str().unwrap()).unwrap();
    let note = forger.sign_checkpoint(&Checkpoint {
        origin: origin_for(log.manager.public_key()),
        size,
        root: head,
        time_unix_ms: Some(dgsp_wire::log::now_ms()),
        snapshot: None,
    });
    e.public["note"] = Value::from(note);
    tamper::reseal(&mut entries, k, &log.manager, ALL);
    assert_eq!(found(&entries), vec![("checkpoint_signature", k)]);
}

#[test]
fn a_dropped_entry_is_one_sequence_violation() {
    let log = small();
    let mut entries = log.entries.clone();
    // An entry no checkpoint names as its head. (Every checkpoint covering the gap has a
    // root that the tree, whose positions are unknown from the gap on, cannot give: they
    // are counted as skipped, as checked below.)
    let heads: Vec<u64> = entries
        .iter()
        .filter_map(|e| e.public.get("size").and_then(Value::as_u64))
        .collect();
    // Nothing else depends on an opening or a checkpoint.
    let k = entries
        .iter()
        .find(|e| {
            (e.kind == "signature_opened" || e.kind == "checkpoint") && !heads.contains(&e.seq)
        })
        .unwrap()
        .seq;
    entries.remove((k - 1) as usize);
    let report = audit(&entries);
    assert_eq!(
        report.kinds(),
        vec![("sequence", k + 1)],
        "{}",
        report.render()
    );
    assert!(report.skipped[&Skipped::CheckpointRoot] > 0);

    // Dropping the entry a checkpoint is the head of is the same one finding.
    let mut entries = log.entries.clone();
    let k = heads
        .iter()
        .copied()
        .find(|&h| {
            let kind = &entries[(h - 1) as usize].kind;
            kind == "signature_opened" || kind == "checkpoint"
        })
        .unwrap();
    entries.remove((k - 1) as usize);
    assert_eq!(found(&entries), vec![("sequence", k + 1)]);
}

#[test]
fn a_version_1_opening_is_a_warning_not_a_violation() {
    let log = small();
    let mut entries = log.entries.clone();
    let k = tamper::nth(&entries, "signature_opened", 0, |_| true);
    let e = tamper::at(&mut entries, k);
    e.v = 1;
    e.public.as_object_mut().unwrap().remove("digest");
    tamper::reseal(&mut entries, k, &log.manager, ALL);
    let report = audit(&entries);
    assert_eq!(report.kinds(), vec![]);
    let warned: Vec<_> = report.warnings.iter().map(|w| (w.kind, w.seq)).collect();
    assert_eq!(warned, vec![(WarningKind::UnjudgeableOpening, Some(k))]);
    assert_eq!(report.stats.judged, 2);
}

#[test]
fn the_public_feed_skips_what_needs_private_parts() {
    let log = small();
    let public: Vec<Entry> = log.entries.iter().map(Entry::redacted).collect();
    let report = audit(&public);
    assert_eq!(report.kinds(), vec![]);
    assert!(report.skipped[&Skipped::Commitment] > 0);
    assert!(report.skipped[&Skipped::MemberChecks] > 0);
    // Public checks still run: a zeta dropped from the public part (snapshots not
    // re-signed) is caught at every snapshot that covers it: each is a separately signed
    // statement that disagrees with the log.
    let mut entries = log.entries.clone();
    let k = tamper::nth(&entries, "member_revoked", 0, |_| true);
    tamper::at(&mut entries, k).public["zetas"]
        .as_array_mut()
        .unwrap()
        .pop();
    tamper::reseal(
        &mut entries,
        k,
        &log.manager,
        tamper::Resign {
            snapshots: false,
            checkpoints: true,
            roots: tamper::Roots::Tree,
        },
    );
    let public: Vec<Entry> = entries.iter().map(Entry::redacted).collect();
    let covering: Vec<_> = entries
        .iter()
        .filter(|e| e.kind == "snapshot_published" && tamper::snapshot_of(e).record.log_seq >= k)
        .map(|e| ("snapshot_root", e.seq))
        .collect();
    assert!(!covering.is_empty());
    assert_eq!(audit(&public).kinds(), covering);
}

#[test]
fn the_group_is_checked_against_the_pin() {
    let log = small();
    let pk = log.manager.public_key().clone();
    let report = audit_with(Some(Anchor::Key(Box::new(pk.clone()))), &log.entries);
    assert_eq!(report.kinds(), vec![]);
    assert!(report.group.unwrap().pinned);
    let report = audit_with(Some(Anchor::Fingerprint(pk.fingerprint())), &log.entries);
    assert_eq!(report.kinds(), vec![]);
    let other = Manager::generate(ParamSet::Sha2_128f, &mut OsRng);
    let pin = Anchor::Fingerprint(other.public_key().fingerprint());
    assert_eq!(
        audit_with(Some(pin), &log.entries).kinds(),
        vec![("group", 1)]
    );
}

fn file_args(path: &std::path::Path) -> AuditArgs {
    AuditArgs {
        file: Some(path.to_owned()),
        registry: None,
        tiles: None,
        token: None,
        token_file: None,
        group_key: None,
        compare: Vec::new(),
        witness_policy: None,
        http: HttpArgs {
            timeout_secs: 5,
            retries: 0,
            ..HttpArgs::default()
        },
    }
}

fn write_jsonl(entries: &[Entry]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    for e in entries {
        serde_json::to_writer(&mut f, e).unwrap();
        f.write_all(b"\n").unwrap();
    }
    f.flush().unwrap();
    f
}

#[tokio::test(flavor = "multi_thread")]
async fn the_command_reads_an_export_file() {
    let log = small();
    let out = Output { json: true };
    let config = Config::default();
    let honest = write_jsonl(&log.entries);
    let code = audit::run(file_args(honest.path()), out, &config)
        .await
        .unwrap();
    assert_eq!(code, exit::OK);

    let mut entries = log.entries.clone();
    let k = tamper::nth(&entries, "checkpoint", 0, |_| true);
    tamper::at(&mut entries, k).time_ms += 1;
    let tampered = write_jsonl(&entries);
    let code = audit::run(file_args(tampered.path()), out, &config)
        .await
        .unwrap();
    assert_eq!(code, exit::REJECTED);

    let mut bad = write_jsonl(&log.entries[..3]);
    bad.write_all(b"\n{\"seq\": 4, \"oops\": true}\n").unwrap();
    bad.flush().unwrap();
    match audit::run(file_args(bad.path()), out, &config).await {
        Err(Error::Input { what, .. }) => assert!(what.ends_with("line 5"), "{what}"),
        other => panic!("expected a line-numbered input error, got {other:?}"),
    }
}

/// Thousands of events from the real registry, read back both from its store and through
/// its feed with the `audit` command: nothing to report.
#[tokio::test(flavor = "multi_thread")]
async fn a_large_honest_log_reports_nothing() {
    let started = Instant::now();
    let r = logs::Registry::start().await;
    logs::populate_large(&r, 5000).await;
    r.settled().await;
    let built = started.elapsed();

    let args = AuditArgs {
        file: None,
        registry: Some(r.url.clone()),
        tiles: None,
        token: Some(logs::AUDITOR.into()),
        token_file: None,
        group_key: Some(hex::encode(r.manager.public_key().fingerprint())),
        compare: Vec::new(),
        witness_policy: None,
        http: HttpArgs {
            timeout_secs: 30,
            retries: 2,
            ..HttpArgs::default()
        },
    };
    let t = Instant::now();
    let code = audit::run(args, Output { json: true }, &Config::default())
        .await
        .unwrap();
    let over_http = t.elapsed();
    assert_eq!(code, exit::OK);

    // The same log read as tiles from the registry's /v1/log.
    let t = Instant::now();
    let base = audit::tiles::TileBase::open(
        &format!("{}/v1/log", r.url),
        &HttpArgs {
            timeout_secs: 30,
            retries: 2,
            ..HttpArgs::default()
        },
    )
    .unwrap();
    let pin = Anchor::Key(Box::new(r.manager.public_key().clone()));
    let rt = tokio::runtime::Handle::current();
    let from_tiles = tokio::task::spawn_blocking(move || {
        audit::tiles::audit(
            Auditor::new(Some(pin)),
            base,
            rt,
            &indicatif::ProgressBar::hidden(),
        )
    })
    .await
    .unwrap()
    .unwrap();
    let over_tiles = t.elapsed();
    assert_eq!(from_tiles.kinds(), vec![], "{}", from_tiles.render());
    let read = from_tiles.tiles.clone().unwrap();
    assert_eq!(read.bundles, from_tiles.entries.div_ceil(256));
    assert_eq!(
        from_tiles.stats.consistency_proofs,
        from_tiles.stats.tree_roots - 1
    );

    let log = r.finish().await;
    let t = Instant::now();
    let report = tokio::task::spawn_blocking(move || audit(&log.entries))
        .await
        .unwrap();
    let in_memory = t.elapsed();
    assert_eq!(report.kinds(), vec![], "{}", report.render());
    assert!(report.warnings.is_empty(), "{}", report.render());
    assert!(report.entries > 10_000, "{}", report.entries);
    assert!(report.stats.snapshots >= 3 && report.stats.judged == 2);
    eprintln!(
        "large log: {} entries ({} checkpoints, {} snapshots); built in {built:?}, audited in {in_memory:?} in memory, {over_http:?} through the feed, {over_tiles:?} through the tiles ({} entries in {} bundles, {} hash tiles, {} bytes, {} consistency proofs)",
        report.entries, report.stats.checkpoints, report.stats.snapshots,
        from_tiles.entries, read.bundles, read.hash_tiles, read.bytes, from_tiles.stats.consistency_proofs
    );
    assert!(in_memory < Duration::from_secs(10));
}

/// The rules the misbehaviours above do not reach, each from one entry appended to (or
/// one edit of) the honest log: exactly one violation, of that kind, at that entry.
#[test]
fn every_other_rule_fires_alone() {
    let log = small();
    let m = &log.manager;
    let alice = tamper::id_of(&log.entries, "alice");
    let bob = tamper::id_of(&log.entries, "bob");
    let bob_zeta = log
        .entries
        .iter()
        .find_map(|e| match e.event() {
            Ok(Event::MemberRevoked { id, zetas, .. }) if id == bob => Some(zetas[0].clone()),
            _ => None,
        })
        .unwrap();
    let issue = |id, first, count, digests: usize| Event::CertificatesIssued {
        id,
        first,
        count,
        wots_pk_digests: (0..digests).map(|_| logs::random_hex(32)).collect(),
    };
    let cases: Vec<(&str, Event)> = vec![
        ("counter_gap", issue(alice, 9, 1, 1)),
        ("unknown_member", issue(999, 0, 1, 1)),
        ("issue_digests", issue(alice, 5, 2, 1)),
        (
            "duplicate_member",
            Event::MemberJoined {
                id: alice,
                username: "alice2".into(),
            },
        ),
        (
            "double_revocation",
            Event::MemberRevoked {
                id: bob,
                counter: 2,
                first: 0,
                zetas: vec![],
            },
        ),
        (
            "duplicate_zeta",
            Event::MemberRevoked {
                id: alice,
                counter: 5,
                first: 0,
                zetas: std::iter::once(bob_zeta)
                    .chain((0..4).map(|_| logs::random_hex(16)))
                    .collect(),
            },
        ),
        ("group", Event::group_created(m.public_key())),
        (
            "checkpoint_mismatch",
            Event::Checkpoint {
                size: log.entries.len() as u64 + 1,
                head: "00".repeat(32),
                note: m.sign_checkpoint(&Checkpoint {
                    origin: origin_for(m.public_key()),
                    size: log.entries.len() as u64 + 1,
                    root: [0; 32],
                    time_unix_ms: Some(dgsp_wire::log::now_ms()),
                    snapshot: None,
                }),
            },
        ),
        (
            "snapshot_succession",
            Event::SnapshotPublished {
                snapshot: log
                    .entries
                    .iter()
                    .rev()
                    .find(|e| e.kind == "snapshot_published")
                    .unwrap()
                    .public["snapshot"]
                    .clone(),
            },
        ),
    ];
    for (kind, event) in cases {
        let mut entries = log.entries.clone();
        let k = tamper::append(&mut entries, &event);
        assert_eq!(found(&entries), vec![(kind, k)], "{kind}");
    }

    // An unknown kind of entry.
    let mut entries = log.entries.clone();
    let k = tamper::append(&mut entries, &issue(alice, 5, 1, 1));
    let e = tamper::at(&mut entries, k);
    e.kind = "certificates_reissued".into();
    tamper::reseal(&mut entries, k, m, ALL);
    assert_eq!(found(&entries), vec![("malformed", k)]);

    // A snapshot signed by another key.
    let mut entries = log.entries.clone();
    let k = tamper::nth(&entries, "snapshot_published", 1, |_| true);
    let record = tamper::snapshot_of(tamper::at(&mut entries, k)).record;
    let forger = Manager::generate(ParamSet::Sha2_128f, &mut OsRng);
    tamper::set_snapshot(&mut entries, k, &forger, &record);
    tamper::reseal(&mut entries, k, m, ALL);
    assert_eq!(found(&entries), vec![("snapshot_signature", k)]);
}
