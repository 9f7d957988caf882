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
use crate::state::View;

/// Applies `entries` (chain-checked, starting right after `view.applied`, ending at the size
/// of the checkpoint whose signed `note` covers them) on top of `view`.
pub fn apply_range(view: &View, entries: &[Entry], note: String) -> Result<(Update, View), Fault> {
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
    let next = View {
        group: view.group.clone(),
        applied: update.applied,
        checkpoint: Some(note.clone()),
        snapshot: latest,
        set: set.map_or_else(|| view.set.clone(), Arc::new),
        unsnapshotted: Arc::new(unsnapshotted.into_iter().collect::<HashMap<_, _>>()),
    };
    update.checkpoint = note;
    Ok((update, next))
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

/// Checks a checkpoint entry's note under the pinned key and that its fields agree with the
/// note. Returns the checkpoint and its note.
pub fn check_checkpoint(view: &View, e: &Entry) -> Result<(Checkpoint, String), Fault> {
    let bad = |detail: String| Fault::BadCheckpoint { seq: e.seq, detail };
    let note = e
        .public
        .get("note")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no note".into()))?;
    let cp = view
        .group
        .verify_checkpoint(note)
        .map_err(|err| bad(err.to_string()))?;
    if cp.origin != origin_for(&view.group) {
        return Err(bad(format!("origin {:?} is not this group's", cp.origin)));
    }
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
    Ok((cp, note.to_owned()))
}
