//! Turning a checkpointed range of chain-checked entries into the next [`View`], or refusing
//! it whole. Pure: no I/O, so every rule is testable on its own.
//!
//! Rules, per entry kind (everything else is carried by the chain only; entry 1 is checked
//! against the pinned group by [`check_group`] as soon as it is fetched):
//! - `member_revoked` adds its public zetas, revoked from that seq on;
//! - `snapshot_published` must verify under the pinned key, name the group, directly extend
//!   the previous snapshot (number + 1, `prev_hash`, count and `log_seq` not going back), and
//!   its root and count must equal the set rebuilt from every revocation with
//!   `seq <= log_seq`.
//!
//! And for the checkpoint that covers the range ([`check_covers`]): a timed checkpoint must
//! name the latest snapshot among its entries, and that snapshot must hold every revocation
//! among them (the registry's guarantee, docs/checkpoints.md), so an answer checked against
//! the view's snapshot is checked against the snapshot the checkpoint names.

use std::collections::HashMap;
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::checkpoint::{origin_for, Checkpoint};
use dgsp_core::revocation::SignedSnapshot;
use dgsp_core::Zeta;
use dgsp_registry::log::{unhex, unhex32, Entry};
use dgsp_registry::publisher::snapshot_from_json;
use serde_json::Value;

use super::Fault;
use crate::replica::{Applied, Update};
use crate::state::{Verified, View};

/// Applies `entries` (chain-checked, starting right after `view.applied`, ending at the size
/// of `checkpoint`, which covers them) on top of `view`. Faults about the checkpoint itself
/// are reported at `at` (its log entry, or the entry it covers for a note from
/// `/v1/checkpoint`).
pub fn apply_range(
    view: &View,
    entries: &[Entry],
    checkpoint: Arc<Verified>,
    at: u64,
) -> Result<(Update, View), Fault> {
    let group = &view.group;
    let mut set = None;
    let mut unsnapshotted: Vec<(Zeta, u64)> =
        view.unsnapshotted.iter().map(|(z, s)| (*z, *s)).collect();
    let mut latest = view.snapshot.clone();
    let mut update = Update::default();
    for e in entries {
        let hash = e.hash_bytes().map_err(|err| Fault::Chain {
            seq: e.seq,
            detail: err.to_string(),
        })?;
        update.hashes.push((e.seq, hash));
        match e.kind.as_str() {
            "member_revoked" => {
                for zeta in revoked_zetas(e)? {
                    unsnapshotted.push((zeta, e.seq));
                    update.revocations.push((zeta, e.seq));
                }
            }
            "snapshot_published" => {
                let s = parse_snapshot(e)?;
                let bad = |detail: String| Fault::BadSnapshot { seq: e.seq, detail };
                s.verify(group).map_err(|err| bad(err.to_string()))?;
                match &latest {
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
                if s.record.log_seq >= e.seq {
                    return Err(bad(format!(
                        "it claims to cover entry {} but is entry {}",
                        s.record.log_seq, e.seq
                    )));
                }
                let working = set.get_or_insert_with(|| (*view.set).clone());
                let (now, later): (Vec<_>, Vec<_>) = unsnapshotted
                    .into_iter()
                    .partition(|(_, seq)| *seq <= s.record.log_seq);
                unsnapshotted = later;
                let zetas: Vec<Zeta> = now.into_iter().map(|(z, _)| z).collect();
                working.insert(&zetas);
                if working.root() != s.record.root || working.len() != s.record.count {
                    return Err(Fault::SnapshotMismatch {
                        seq: e.seq,
                        detail: format!(
                            "snapshot {} claims {} zetas, the log's revocations up to entry {} give {} (roots {})",
                            s.record.number,
                            s.record.count,
                            s.record.log_seq,
                            working.len(),
                            if working.root() == s.record.root { "equal" } else { "differ" }
                        ),
                    });
                }
                let s = Arc::new(s);
                update.snapshots.push(s.clone());
                latest = Some(s);
            }
            _ => {}
        }
    }
    let last = entries
        .last()
        .ok_or_else(|| Fault::MalformedPage("empty range".into()))?;
    update.applied = Applied {
        seq: last.seq,
        hash: update.hashes.last().map(|(_, h)| *h).unwrap_or_default(),
        time_ms: last.time_ms,
    };
    check_covers(
        &checkpoint.checkpoint,
        latest.as_deref(),
        unsnapshotted.iter().map(|(_, seq)| *seq).min(),
    )
    .map_err(|detail| Fault::BadCheckpoint { seq: at, detail })?;
    update.checkpoint = checkpoint.note.to_string();
    let next = View {
        group: view.group.clone(),
        applied: update.applied,
        checkpoint: Some(checkpoint),
        snapshot: latest,
        set: set.map_or_else(|| view.set.clone(), Arc::new),
        unsnapshotted: Arc::new(unsnapshotted.into_iter().collect::<HashMap<_, _>>()),
    };
    Ok((update, next))
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

/// Verifies a checkpoint note under the pinned key and checks its origin.
pub fn check_note(view: &View, note: &str) -> Result<Checkpoint, String> {
    let cp = view
        .group
        .verify_checkpoint(note)
        .map_err(|err| err.to_string())?;
    if cp.origin != origin_for(&view.group) {
        return Err(format!("origin {:?} is not this group's", cp.origin));
    }
    Ok(cp)
}

/// Entry 1, and only entry 1, is `group_created`, and it names the pinned key.
pub fn check_group(view: &View, e: &Entry) -> Result<(), Fault> {
    if (e.seq == 1) != (e.kind == "group_created") {
        return Err(Fault::MalformedEntry {
            seq: e.seq,
            detail: "entry 1, and only entry 1, is group_created".into(),
        });
    }
    let pk = &view.group;
    let field = |k: &str| e.public.get(k).and_then(Value::as_str).unwrap_or_default();
    if field("fingerprint") != hex::encode(pk.fingerprint())
        || field("public_key") != B64.encode(pk.to_bytes())
    {
        return Err(Fault::WrongGroup(format!(
            "entry 1 names group {}, this gateway is pinned to {}",
            field("fingerprint"),
            hex::encode(pk.fingerprint())
        )));
    }
    Ok(())
}

/// The zetas a `member_revoked` entry publishes (its public `zetas`, each 32 hex
/// characters); the auditor reads them with the same rule.
pub fn revoked_zetas(e: &Entry) -> Result<Vec<Zeta>, Fault> {
    let malformed = |detail: &str| Fault::MalformedEntry {
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

fn parse_snapshot(e: &Entry) -> Result<SignedSnapshot, Fault> {
    e.public
        .get("snapshot")
        .and_then(snapshot_from_json)
        .ok_or_else(|| Fault::MalformedEntry {
            seq: e.seq,
            detail: "snapshot_published does not carry a decodable signed snapshot".into(),
        })
}

/// The note a `checkpoint` entry carries.
pub fn checkpoint_note(e: &Entry) -> Result<&str, Fault> {
    e.public
        .get("note")
        .and_then(Value::as_str)
        .ok_or_else(|| Fault::BadCheckpoint {
            seq: e.seq,
            detail: "no note".into(),
        })
}

/// A `checkpoint` entry's `size` and `head` must be its note's, and it must come after the
/// entries it covers.
pub fn check_checkpoint_entry(e: &Entry, cp: &Checkpoint) -> Result<(), Fault> {
    let bad = |detail: String| Fault::BadCheckpoint { seq: e.seq, detail };
    let size = e.public.get("size").and_then(Value::as_u64);
    let head = e
        .public
        .get("head")
        .and_then(Value::as_str)
        .and_then(unhex32);
    if size != Some(cp.size) || head != Some(cp.head) {
        return Err(bad(
            "the entry's size or head differs from its signed note".into()
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

/// Checks a checkpoint entry's note under the pinned key and that its fields agree with the
/// note. Returns the verified note.
pub fn check_checkpoint(view: &View, e: &Entry) -> Result<Verified, Fault> {
    let note = checkpoint_note(e)?;
    let cp =
        check_note(view, note).map_err(|detail| Fault::BadCheckpoint { seq: e.seq, detail })?;
    check_checkpoint_entry(e, &cp)?;
    Ok(Verified::new(cp, note.to_owned()))
}

/// Two timed checkpoints of one log must agree: the later one (by signed time) covers at
/// least as many entries, and two with the same time are the same checkpoint. Anything else
/// means someone replays or forks signed state; untimed (legacy) notes are not compared.
pub fn check_order(new: &Checkpoint, held: &Checkpoint) -> Result<(), Fault> {
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
        return Err(Fault::ReplayedCheckpoint(format!(
            "a checkpoint of {} entries signed at {t_new} contradicts the one of {} entries signed at {t_held}",
            new.size, held.size
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp(size: u64, time: Option<u64>) -> Checkpoint {
        Checkpoint {
            origin: "dgsp/00".into(),
            size,
            head: [size as u8; 32],
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
            if let Err(f) = got {
                assert_eq!(f.kind(), "replayed_checkpoint");
            }
        }
        assert!(check_order(&cp(1, Some(5)), &cp(9, None)).is_ok());
    }

    #[test]
    fn a_timed_checkpoint_names_the_latest_snapshot_holding_every_revocation() {
        let m = dgsp_core::Manager::generate(dgsp_core::ParamSet::Sha2_128f, &mut rand_core::OsRng);
        let fp = m.public_key().fingerprint();
        let set = dgsp_core::revocation::RevocationSet::from_zetas(std::iter::empty());
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
    }
}
