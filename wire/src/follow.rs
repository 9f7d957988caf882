//! The rules a follower (a gateway, an auditor, an SDK) applies to a checkpointed range of
//! chain-checked log entries before it trusts anything in it. Pure: no I/O, so every rule is
//! testable on its own; the gateway's `follower::apply` strings them together over its view.
//!
//! Per entry kind (everything else is carried by the chain only):
//! - entry 1, and only entry 1, is `group_created`, naming the pinned key
//!   ([`check_group`]);
//! - `member_revoked` publishes its zetas ([`revoked_zetas`]), revoked from that seq on;
//! - `snapshot_published` must verify under the pinned key, directly extend the previous
//!   snapshot (number + 1, `prev_hash`, count and `log_seq` not going back), cover only
//!   entries before itself ([`check_snapshot`]), and its root and count must equal the set
//!   rebuilt from every revocation with `seq <= log_seq` ([`check_snapshot_root`]);
//! - `checkpoint` entries carry a note signed under the pinned key with this group's origin
//!   whose size and head are the entry's ([`check_checkpoint_entry`]).
//!
//! For the checkpoint that covers the range ([`check_covers`]): a timed checkpoint must name
//! the latest snapshot among its entries, and that snapshot must hold every revocation
//! among them (the registry's guarantee, docs/checkpoints.md). Two timed checkpoints of one
//! log must agree ([`check_order`]).

use dgsp_core::checkpoint::{origin_for, Checkpoint};
use dgsp_core::revocation::{RevocationSet, SignedSnapshot};
use dgsp_core::{ManagerPublicKey, Zeta};
use serde_json::Value;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use crate::log::{unhex, unhex32, Entry, Hash};
use crate::snapshot::snapshot_from_json;

/// A rule a range broke. Each names the entry at fault where there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// An entry that does not have its kind's shape.
    #[error("entry {seq} is malformed: {detail}")]
    MalformedEntry {
        /// entry
        seq: u64,
        /// what is wrong
        detail: String,
    },
    /// The log is not the pinned group's.
    #[error("the log is not the pinned group's: {0}")]
    WrongGroup(String),
    /// A snapshot that does not verify or does not extend the previous one.
    #[error("entry {seq}: bad snapshot: {detail}")]
    BadSnapshot {
        /// entry
        seq: u64,
        /// what is wrong
        detail: String,
    },
    /// A snapshot whose root or count is not the log's revocations.
    #[error("entry {seq}: the snapshot does not match the log: {detail}")]
    SnapshotMismatch {
        /// entry
        seq: u64,
        /// what differs
        detail: String,
    },
    /// A checkpoint that does not verify or does not agree with the entries it covers.
    #[error("entry {seq}: bad checkpoint: {detail}")]
    BadCheckpoint {
        /// entry (or the entry a note from `/v1/checkpoint` covers)
        seq: u64,
        /// what is wrong
        detail: String,
    },
    /// Two signed checkpoints that contradict each other (a replay or a fork).
    #[error("replayed or forked checkpoint: {0}")]
    ReplayedCheckpoint(String),
}

/// The group public key a `group_created` entry carries (its public `public_key`, standard
/// base64), undecodable or absent: `None`.
pub fn group_key(e: &Entry) -> Option<ManagerPublicKey> {
    e.public
        .get("public_key")
        .and_then(Value::as_str)
        .and_then(|s| B64.decode(s).ok())
        .and_then(|b| ManagerPublicKey::from_bytes(&b).ok())
}

/// Entry 1, and only entry 1, is `group_created`, and it names `group`.
pub fn check_group(group: &ManagerPublicKey, e: &Entry) -> Result<(), RuleError> {
    if (e.seq == 1) != (e.kind == "group_created") {
        return Err(RuleError::MalformedEntry {
            seq: e.seq,
            detail: "entry 1, and only entry 1, is group_created".into(),
        });
    }
    if e.seq != 1 {
        return Ok(());
    }
    let field = |k: &str| e.public.get(k).and_then(Value::as_str).unwrap_or_default();
    if field("fingerprint") != hex::encode(group.fingerprint())
        || field("public_key") != B64.encode(group.to_bytes())
    {
        return Err(RuleError::WrongGroup(format!(
            "entry 1 names group {}, the pinned group is {}",
            field("fingerprint"),
            hex::encode(group.fingerprint())
        )));
    }
    Ok(())
}

/// The zetas a `member_revoked` entry publishes (its public `zetas`, each 32 hex
/// characters).
pub fn revoked_zetas(e: &Entry) -> Result<Vec<Zeta>, RuleError> {
    let malformed = |detail: &str| RuleError::MalformedEntry {
        seq: e.seq,
        detail: detail.into(),
    };
    let list = e
        .public
        .get("zetas")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("member_revoked has no zetas list"))?;
    list.iter()
        .map(|z| {
            z.as_str()
                .and_then(unhex::<16>)
                .map(Zeta)
                .ok_or_else(|| malformed("a zeta is not 32 hex characters"))
        })
        .collect()
}

/// The signed snapshot a `snapshot_published` entry carries (not yet verified).
pub fn parse_snapshot(e: &Entry) -> Result<SignedSnapshot, RuleError> {
    e.public
        .get("snapshot")
        .and_then(snapshot_from_json)
        .ok_or_else(|| RuleError::MalformedEntry {
            seq: e.seq,
            detail: "snapshot_published does not carry a decodable signed snapshot".into(),
        })
}

/// A snapshot published at entry `seq` after `previous`: it verifies under `group`,
/// directly extends `previous` (or is number 1), and covers only entries before itself.
pub fn check_snapshot(
    group: &ManagerPublicKey,
    previous: Option<&SignedSnapshot>,
    s: &SignedSnapshot,
    seq: u64,
) -> Result<(), RuleError> {
    let bad = |detail: String| RuleError::BadSnapshot { seq, detail };
    s.verify(group).map_err(|err| bad(err.to_string()))?;
    match previous {
        Some(prev) => prev
            .record
            .check_successor(&s.record)
            .map_err(|err| bad(err.to_string()))?,
        None if s.record.number != 1 => {
            return Err(bad(format!(
                "the first snapshot is number {}, not 1",
                s.record.number
            )))
        }
        None => {}
    }
    if s.record.log_seq >= seq {
        return Err(bad(format!(
            "it claims to cover entry {} but is entry {seq}",
            s.record.log_seq
        )));
    }
    Ok(())
}

/// The snapshot published at entry `seq` has the root and count of `set`, the set rebuilt
/// from every revocation it covers.
pub fn check_snapshot_root(
    s: &SignedSnapshot,
    set: &RevocationSet,
    seq: u64,
) -> Result<(), RuleError> {
    if set.root() != s.record.root || set.len() != s.record.count {
        return Err(RuleError::SnapshotMismatch {
            seq,
            detail: format!(
                "snapshot {} claims {} zetas, the log's revocations up to entry {} give {} (roots {})",
                s.record.number,
                s.record.count,
                s.record.log_seq,
                set.len(),
                if set.root() == s.record.root { "equal" } else { "differ" }
            ),
        });
    }
    Ok(())
}

/// A timed checkpoint of a state whose latest snapshot is `snapshot` and whose first
/// revocation not in it is at `first_unsnapshotted` must name that snapshot (number and
/// record hash), and there must be no such revocation. Legacy (untimed) notes say nothing
/// about snapshots and pass.
pub fn check_covers(
    cp: &Checkpoint,
    snapshot: Option<&SignedSnapshot>,
    first_unsnapshotted: Option<u64>,
) -> Result<(), String> {
    if cp.time_unix_ms.is_none() {
        return Ok(());
    }
    match (&cp.snapshot, snapshot) {
        (None, None) => {}
        (Some(named), Some(s)) if named.names(&s.record) => {}
        (Some(named), Some(s)) => {
            return Err(format!(
                "it names snapshot {}, but the latest snapshot among its entries is snapshot {}{}",
                named.number,
                s.record.number,
                if named.number == s.record.number {
                    " with another record hash"
                } else {
                    ""
                }
            ))
        }
        (Some(named), None) => {
            return Err(format!(
                "it names snapshot {}, but there is no snapshot among its entries",
                named.number
            ))
        }
        (None, Some(s)) => {
            return Err(format!(
                "it names no snapshot, but snapshot {} is among its entries",
                s.record.number
            ))
        }
    }
    match first_unsnapshotted {
        Some(seq) => Err(format!(
            "the revocation at entry {seq} is among its entries but not in the snapshot it names"
        )),
        None => Ok(()),
    }
}

/// Verifies a checkpoint note under `group` and checks that its origin is the group's.
pub fn check_note(group: &ManagerPublicKey, note: &str) -> Result<Checkpoint, String> {
    let cp = group
        .verify_checkpoint(note)
        .map_err(|err| err.to_string())?;
    if cp.origin != origin_for(group) {
        return Err(format!("origin {:?} is not this group's", cp.origin));
    }
    Ok(cp)
}

/// The note a `checkpoint` entry carries.
pub fn checkpoint_note(e: &Entry) -> Result<&str, RuleError> {
    e.public
        .get("note")
        .and_then(Value::as_str)
        .ok_or_else(|| RuleError::BadCheckpoint {
            seq: e.seq,
            detail: "no note".into(),
        })
}

/// What a `checkpoint` entry states in its public fields, each `None` when missing or
/// malformed: `size` and `head` (the note's root line, hex; the name is older than the tree).
pub fn stated_checkpoint(e: &Entry) -> (Option<u64>, Option<Hash>) {
    let size = e.public.get("size").and_then(Value::as_u64);
    let head = e
        .public
        .get("head")
        .and_then(Value::as_str)
        .and_then(unhex32);
    (size, head)
}

/// A `checkpoint` entry's `size` and `head` must be its note's, and it must come after the
/// entries it covers.
pub fn check_checkpoint_entry(e: &Entry, cp: &Checkpoint) -> Result<(), RuleError> {
    let bad = |detail: String| RuleError::BadCheckpoint { seq: e.seq, detail };
    let (size, head) = stated_checkpoint(e);
    if size != Some(cp.size) || head != Some(cp.root) {
        return Err(bad(
            "the entry's size or head differs from its signed note's size or root".into(),
        ));
    }
    if cp.size >= e.seq {
        return Err(bad(format!(
            "it covers {} entries but is entry {}",
            cp.size, e.seq
        )));
    }
    Ok(())
}

/// A `checkpoint` entry's note, verified under `group`, with the entry agreeing with it:
/// the checkpoint and the note's text.
pub fn check_checkpoint<'e>(
    group: &ManagerPublicKey,
    e: &'e Entry,
) -> Result<(Checkpoint, &'e str), RuleError> {
    let note = checkpoint_note(e)?;
    let cp = check_note(group, note)
        .map_err(|detail| RuleError::BadCheckpoint { seq: e.seq, detail })?;
    check_checkpoint_entry(e, &cp)?;
    Ok((cp, note))
}

/// What a checkpoint's root line commits to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootKind {
    /// The RFC 6962 Merkle tree root of the first `size` entries: what the registry signs.
    Tree,
    /// The hash-chain hash of entry `size`: notes signed before the log was a tree
    /// (`docs/format.md`, "The tree"). Both bind exactly the first `size` entries.
    LegacyChain,
}

/// A checkpoint's root line must be the tree root of the first `size` entries (`tree_root`)
/// or, in a note signed before the tree, the chain hash of entry `size` (`chain_hash`, when
/// the follower holds it; `None` for size 0).
pub fn check_root(
    cp: &Checkpoint,
    tree_root: &Hash,
    chain_hash: Option<&Hash>,
) -> Result<RootKind, String> {
    if cp.root == *tree_root {
        Ok(RootKind::Tree)
    } else if chain_hash == Some(&cp.root) {
        Ok(RootKind::LegacyChain)
    } else {
        Err(format!(
            "its root {} is not the root of the first {} entries ({})",
            hex::encode(cp.root),
            cp.size,
            hex::encode(tree_root)
        ))
    }
}

/// Two timed checkpoints of one log must agree: the later one (by signed time) covers at
/// least as many entries, and two with the same time are the same checkpoint. Anything else
/// means someone replays or forks signed state; untimed (legacy) notes are not compared.
pub fn check_order(new: &Checkpoint, held: &Checkpoint) -> Result<(), RuleError> {
    let (Some(t_new), Some(t_held)) = (new.time_unix_ms, held.time_unix_ms) else {
        return Ok(());
    };
    let contradiction = if t_new == t_held {
        new != held
    } else if t_new < t_held {
        new.size > held.size
    } else {
        new.size < held.size
    };
    if contradiction {
        return Err(RuleError::ReplayedCheckpoint(format!(
            "a checkpoint of {} entries signed at {t_new} contradicts the one of {} entries signed at {t_held}",
            new.size, held.size
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    fn cp(size: u64, time: Option<u64>) -> Checkpoint {
        Checkpoint {
            origin: "dgsp/00".into(),
            size,
            root: [size as u8; 32],
            time_unix_ms: time,
            snapshot: None,
        }
    }

    #[test]
    fn later_checkpoints_never_cover_less_and_equal_times_are_one_checkpoint() {
        let held = cp(10, Some(1_000));
        for (new, ok) in [
            (cp(10, Some(1_000)), true),
            (cp(12, Some(1_001)), true),
            (cp(10, Some(1_001)), true),
            (cp(8, Some(999)), true),
            (cp(10, Some(999)), true),
            (cp(9, Some(1_001)), false),
            (cp(11, Some(999)), false),
            (cp(11, Some(1_000)), false),
            (cp(3, None), true),
        ] {
            let got = check_order(&new, &held);
            assert_eq!(got.is_ok(), ok, "{new:?}: {got:?}");
            if let Err(e) = got {
                assert!(matches!(e, RuleError::ReplayedCheckpoint(_)));
            }
        }
        assert!(check_order(&cp(1, Some(5)), &cp(9, None)).is_ok());
    }

    #[test]
    fn a_timed_checkpoint_names_the_latest_snapshot_holding_every_revocation() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        let m = dgsp_core::Manager::generate(dgsp_core::ParamSet::Sha2_128f, &mut rng);
        let fp = m.public_key().fingerprint();
        let set = RevocationSet::from_zetas(std::iter::empty());
        let first = dgsp_core::revocation::SnapshotRecord::genesis(fp, 3, 0, set.root(), 1);
        let s1 = m.sign_snapshot(&first);
        let s2 = m.sign_snapshot(&first.next(5, 0, set.root(), 2));
        let named = |s: &SignedSnapshot| Checkpoint {
            snapshot: Some(dgsp_core::checkpoint::SnapshotRef::of(&s.record)),
            ..cp(6, Some(10))
        };
        assert!(check_covers(&named(&s2), Some(&s2), None).is_ok());
        assert!(check_covers(&cp(6, Some(10)), None, None).is_ok());
        let older = check_covers(&named(&s1), Some(&s2), None).unwrap_err();
        assert!(older.contains("names snapshot 1"), "{older}");
        assert!(check_covers(&cp(6, Some(10)), Some(&s2), None).is_err());
        assert!(check_covers(&named(&s2), None, None).is_err());
        let missing = check_covers(&named(&s2), Some(&s2), Some(6)).unwrap_err();
        assert!(missing.contains("entry 6"), "{missing}");
        // Legacy notes say nothing about snapshots.
        assert!(check_covers(&cp(6, None), Some(&s2), Some(6)).is_ok());

        // Snapshot rules: verifies, extends, covers only earlier entries, matches the set.
        check_snapshot(m.public_key(), None, &s1, 4).unwrap();
        check_snapshot(m.public_key(), Some(&s1), &s2, 6).unwrap();
        assert!(matches!(
            check_snapshot(m.public_key(), None, &s2, 6),
            Err(RuleError::BadSnapshot { seq: 6, .. })
        ));
        assert!(check_snapshot(m.public_key(), None, &s1, 3).is_err());
        let other = dgsp_core::Manager::generate(dgsp_core::ParamSet::Sha2_128f, &mut rng);
        assert!(check_snapshot(other.public_key(), None, &s1, 4).is_err());
        check_snapshot_root(&s1, &set, 4).unwrap();
        let one = RevocationSet::from_zetas([Zeta([1; 16])]);
        assert!(matches!(
            check_snapshot_root(&s1, &one, 4),
            Err(RuleError::SnapshotMismatch { seq: 4, .. })
        ));
    }
}
