//! Editing an honest log as a dishonest manager would: it holds the secret key, so after a
//! change it can re-seal the chain and re-sign snapshots and checkpoints.
#![allow(dead_code)]

use dgsp_core::checkpoint::{origin_for, Checkpoint, SnapshotRef};
use dgsp_core::revocation::{RevocationSet, SnapshotRecord};
use dgsp_core::{Manager, Zeta};
use dgsp_gateway::follower::apply::revoked_zetas;
use dgsp_registry::publisher::{snapshot_from_json, snapshot_json};
use dgsp_wire::events::Event;
use dgsp_wire::log::{unhex32, Entry, GENESIS_PREV};
use dgsp_wire::merkle;
use dgsp_wire::tiles::leaf_of;
use serde_json::{json, Value};

/// What to re-sign after the changed entry.
#[derive(Clone, Copy)]
pub struct Resign {
    /// recompute every later snapshot from the log's revocations and re-sign the chain
    pub snapshots: bool,
    /// re-sign every later checkpoint over the new entries
    pub checkpoints: bool,
    /// what the re-signed checkpoints' root line holds
    pub roots: Roots,
}

/// What a checkpoint's root line commits to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Roots {
    /// The RFC 6962 Merkle root of the first `size` entries (what the registry signs).
    Tree,
    /// The chain hash of entry `size` (notes signed before the log was a tree).
    LegacyChain,
}

/// Re-sign everything after the change.
pub const ALL: Resign = Resign {
    snapshots: true,
    checkpoints: true,
    roots: Roots::Tree,
};
/// Re-sign nothing: the checkpoints already published stay as they were.
pub const NOTHING: Resign = Resign {
    snapshots: false,
    checkpoints: false,
    roots: Roots::Tree,
};

/// The Merkle root of the first `size` entries (leaves: their public bytes).
pub fn tree_root(entries: &[Entry], size: u64) -> [u8; 32] {
    let leaves: Vec<[u8; 32]> = entries[..size as usize].iter().map(leaf_of).collect();
    merkle::root(&leaves)
}

/// The root line of a checkpoint of the first `size` entries, of kind `roots`.
pub fn root_of(entries: &[Entry], size: u64, roots: Roots) -> [u8; 32] {
    match roots {
        Roots::Tree => tree_root(entries, size),
        Roots::LegacyChain => unhex32(&entries[(size - 1) as usize].hash).unwrap(),
    }
}

/// The seq of the `n`-th (from 0) entry of `kind` that satisfies `pred`.
pub fn nth(entries: &[Entry], kind: &str, n: usize, pred: impl Fn(&Entry) -> bool) -> u64 {
    entries
        .iter()
        .filter(|e| e.kind == kind && pred(e))
        .nth(n)
        .unwrap_or_else(|| panic!("no {kind} #{n}"))
        .seq
}

/// The entry at `seq`.
pub fn at(entries: &mut [Entry], seq: u64) -> &mut Entry {
    &mut entries[(seq - 1) as usize]
}

/// The id of the member who joined as `username`.
pub fn id_of(entries: &[Entry], username: &str) -> u64 {
    entries
        .iter()
        .find_map(|e| match e.event() {
            Ok(Event::MemberJoined { id, username: u }) if u == username => Some(id),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{username} never joined"))
}

/// The signed snapshot an entry carries.
pub fn snapshot_of(e: &Entry) -> dgsp_core::revocation::SignedSnapshot {
    snapshot_from_json(&e.public["snapshot"]).expect("a snapshot entry")
}

/// Replaces the event of entry `seq` (new salt and commitment; same seq and time).
pub fn set_event(entries: &mut [Entry], seq: u64, event: &Event) {
    let e = at(entries, seq);
    let prev = unhex32(&e.prev_hash).unwrap();
    *e = Entry::seal(e.seq, e.time_ms, event, &prev);
}

/// Replaces the signed snapshot of entry `seq` by `record` signed by `manager`.
pub fn set_snapshot(entries: &mut [Entry], seq: u64, manager: &Manager, record: &SnapshotRecord) {
    let signed = manager.sign_snapshot(record);
    at(entries, seq).public = json!({"snapshot": snapshot_json(&signed)});
}

fn zetas_of(e: &Entry) -> Vec<Zeta> {
    revoked_zetas(e).unwrap()
}

/// The set of zetas revoked at entries `<= log_seq`.
pub fn set_up_to(entries: &[Entry], log_seq: u64) -> RevocationSet {
    RevocationSet::from_zetas(
        entries
            .iter()
            .filter(|e| e.kind == "member_revoked" && e.seq <= log_seq)
            .flat_map(zetas_of),
    )
}

/// The newest snapshot among the first `size` entries, as a checkpoint names it.
pub fn newest_snapshot(entries: &[Entry], size: u64) -> Option<SnapshotRef> {
    entries[..size as usize]
        .iter()
        .rfind(|e| e.kind == "snapshot_published")
        .map(|e| SnapshotRef::of(&snapshot_of(e).record))
}

/// Re-seals the chain from entry `from` on (every entry `>= from` re-linked and
/// re-hashed), re-signing what `resign` says among the entries after `from`.
pub fn reseal(entries: &mut [Entry], from: u64, manager: &Manager, resign: Resign) {
    let mut prev = GENESIS_PREV;
    let mut prev_record: Option<SnapshotRecord> = None;
    for i in 0..entries.len() {
        let seq = entries[i].seq;
        if seq > from && entries[i].kind == "snapshot_published" && resign.snapshots {
            let old = snapshot_of(&entries[i]).record;
            let set = set_up_to(entries, old.log_seq);
            let record = match &prev_record {
                Some(p) => p.next(old.log_seq, set.len(), set.root(), old.time_unix_ms),
                None => SnapshotRecord::genesis(
                    old.group,
                    old.log_seq,
                    set.len(),
                    set.root(),
                    old.time_unix_ms,
                ),
            };
            set_snapshot(entries, seq, manager, &record);
        }
        if seq > from && entries[i].kind == "checkpoint" && resign.checkpoints {
            let size = entries[i].public["size"].as_u64().unwrap();
            // Entries before this one are re-sealed already (size < seq).
            let root = root_of(entries, size, resign.roots);
            // Naming the newest snapshot it covers (already re-signed), as the registry does.
            let snapshot = newest_snapshot(entries, size);
            let note = manager.sign_checkpoint(&Checkpoint {
                origin: origin_for(manager.public_key()),
                size,
                root,
                time_unix_ms: Some(dgsp_wire::log::now_ms()),
                snapshot,
            });
            let e = &mut entries[i];
            e.public["head"] = Value::from(hex::encode(root));
            e.public["note"] = Value::from(note);
        }
        if entries[i].kind == "snapshot_published" {
            prev_record = Some(snapshot_of(&entries[i]).record);
        }
        let e = &mut entries[i];
        if seq >= from {
            e.prev_hash = hex::encode(prev);
            e.hash = hex::encode(e.compute_hash(&prev));
        }
        prev = unhex32(&e.hash).unwrap();
    }
}

/// Appends `event` as a new entry.
pub fn append(entries: &mut Vec<Entry>, event: &Event) -> u64 {
    let last = entries.last().unwrap();
    let e = Entry::seal(
        last.seq + 1,
        last.time_ms + 1,
        event,
        &unhex32(&last.hash).unwrap(),
    );
    let seq = e.seq;
    entries.push(e);
    seq
}

/// Appends a checkpoint of the current head, signed by `manager`, naming the newest
/// snapshot (as the registry does).
pub fn append_checkpoint(entries: &mut Vec<Entry>, manager: &Manager) -> u64 {
    let newest = entries
        .iter()
        .rfind(|e| e.kind == "snapshot_published")
        .map(|e| SnapshotRef::of(&snapshot_of(e).record));
    append_checkpoint_naming(entries, manager, newest)
}

/// Appends a checkpoint of the current head (its Merkle root), signed by `manager`, naming
/// `snapshot`.
pub fn append_checkpoint_naming(
    entries: &mut Vec<Entry>,
    manager: &Manager,
    snapshot: Option<SnapshotRef>,
) -> u64 {
    let size = entries.last().unwrap().seq;
    append_checkpoint_of(entries, manager, size, tree_root(entries, size), snapshot)
}

/// Appends a checkpoint of the first `size` entries with the root line `root`, signed by
/// `manager`, naming `snapshot` (the entry states the same size and root as the note).
pub fn append_checkpoint_of(
    entries: &mut Vec<Entry>,
    manager: &Manager,
    size: u64,
    root: [u8; 32],
    snapshot: Option<SnapshotRef>,
) -> u64 {
    let note = manager.sign_checkpoint(&Checkpoint {
        origin: origin_for(manager.public_key()),
        size,
        root,
        time_unix_ms: Some(dgsp_wire::log::now_ms()),
        snapshot,
    });
    append(
        entries,
        &Event::Checkpoint {
            size,
            head: hex::encode(root),
            note,
        },
    )
}
