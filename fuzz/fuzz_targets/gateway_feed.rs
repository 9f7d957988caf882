//! The registry's feed as the gateway's follower reads and checks it: feed pages
//! (`fetch::parse_page`), then every entry through the follower's checks in its order
//! (chain link and hash, entry 1 against the pinned group, checkpoint entries verified and
//! checked against their fields, the covered range applied whole by `apply::apply_range`:
//! the Merkle roots of the covering checkpoint and of the checkpoint entries in the range,
//! revoked zetas, snapshot JSON, signatures, succession, roots, the covering checkpoint);
//! `/v1/checkpoint` answers (`fetch::parse_checkpoint`, then what `on_registry_note` checks);
//! snapshot JSON (`snapshot_from_json`, as the follower, the replica and the CLI read it);
//! and single entries (the event upcast, every per-kind reader). The first byte picks:
//!
//! - 0: a feed page, checked as fetched (a mutation breaks the hash chain there);
//! - 1: a feed page whose `prev_hash`/`hash` are recomputed first, so the checks after the
//!   chain see the mutated contents, and what remains uncovered is applied under an
//!   unsigned checkpoint of its tree (only a signature stops it);
//! - 2: a `/v1/checkpoint` answer;
//! - 3: a signed snapshot's JSON;
//! - 4: one entry.
//!
//! Nothing may panic; everything is refused with a `Fault` or applied.
//!
//!   cargo +nightly fuzz run gateway_feed corpus/gateway_feed seeds/gateway_feed
//!
//! Seeds: `manager-cli/tests/fuzz_seeds.rs` (a whole small log of the fixed group).

#![no_main]

mod common;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use dgsp_core::checkpoint::{origin_for, Checkpoint};
use dgsp_core::revocation::{RevocationSet, SnapshotRecord};
use dgsp_gateway::follower::{apply, fetch, roots};
use dgsp_gateway::replica::Applied;
use dgsp_gateway::state::{Verified, View};
use dgsp_registry::api::public::Entries;
use dgsp_registry::publisher::{snapshot_from_json, snapshot_json};
use dgsp_wire::log::{unhex32, Entry, GENESIS_PREV};
use dgsp_wire::merkle::Frontier;
use libfuzzer_sys::fuzz_target;

fn genesis() -> &'static View {
    static VIEW: OnceLock<View> = OnceLock::new();
    VIEW.get_or_init(|| View {
        group: Arc::new(common::fixture().manager.public_key().clone()),
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
    })
}

/// An unsigned, untimed checkpoint of `range` applied on `view` (what a signed note would
/// say about it: the Merkle root of the view's tree and the range).
fn covering(view: &View, range: &[Entry]) -> Option<Arc<Verified>> {
    let mut tree = view.tree.clone();
    range.iter().for_each(|e| tree.push(roots::leaf_of(e)));
    let checkpoint = Checkpoint {
        origin: origin_for(&genesis().group),
        size: range.last()?.seq,
        root: tree.root(),
        time_unix_ms: None,
        snapshot: None,
    };
    Some(Arc::new(Verified::new(checkpoint, String::new())))
}

fn reseal(page: &mut Entries) {
    let mut prev = GENESIS_PREV;
    for e in &mut page.entries {
        e.prev_hash = hex::encode(prev);
        prev = e.compute_hash(&prev);
        e.hash = hex::encode(prev);
    }
}

/// The follower's `process` from an empty replica, without the I/O: chain-check and hold
/// each entry, apply what each checkpoint entry covers.
fn follow(page: Entries, apply_rest: bool) {
    let mut view = genesis().clone();
    let (mut prev_seq, mut prev_hash) = (0u64, GENESIS_PREV);
    let mut held: Vec<Entry> = Vec::new();
    let mut checkpoints: Vec<Checkpoint> = Vec::new();
    for e in page.entries {
        if e.check(prev_seq, &prev_hash).is_err() {
            return;
        }
        if (e.seq == 1 || e.kind == "group_created") && apply::check_group(&view, &e).is_err() {
            return;
        }
        prev_seq = e.seq;
        prev_hash = e.hash_bytes().unwrap_or_default();
        let is_checkpoint = e.kind == "checkpoint";
        held.push(e);
        if !is_checkpoint {
            continue;
        }
        let last = &held[held.len() - 1];
        let Ok(checked) = apply::check_checkpoint(&view, last) else {
            return;
        };
        let at = last.seq;
        if checkpoints
            .iter()
            .any(|h| apply::check_order(&checked.checkpoint, h).is_err())
        {
            return;
        }
        checkpoints.push(checked.checkpoint.clone());
        let size = checked.checkpoint.size;
        if size <= view.applied.seq {
            let _ = apply::check_covers(
                &checked.checkpoint,
                view.snapshot.as_deref(),
                view.unsnapshotted.values().min().copied(),
            );
            continue;
        }
        let covered = (size - view.applied.seq) as usize;
        match held.get(covered - 1) {
            Some(l) if l.seq == size => {}
            _ => return,
        }
        let range: Vec<Entry> = held.drain(..covered).collect();
        match apply::apply_range(&view, &range, Arc::new(checked), at) {
            Ok((update, next, _)) => {
                assert_eq!(
                    update.applied.seq, size,
                    "a range applies up to its checkpoint"
                );
                view = next;
            }
            Err(_) => return,
        }
    }
    if apply_rest {
        if let Some(cp) = covering(&view, &held) {
            let at = cp.checkpoint.size;
            let _ = apply::apply_range(&view, &held, cp, at);
        }
    }
}

/// What `on_registry_note` checks of a `/v1/checkpoint` answer, without the I/O.
fn registry_note(input: &[u8]) {
    let Ok(info) = fetch::parse_checkpoint(input) else {
        return;
    };
    let view = genesis();
    if info.note.lines().next().unwrap_or_default() != origin_for(&view.group) {
        return;
    }
    let Ok(cp) = apply::check_note(view, &info.note) else {
        return;
    };
    if cp.size != info.size || unhex32(&info.head) != Some(cp.root) {
        return;
    }
    let _ = apply::check_covers(&cp, None, None);
    let held = Checkpoint {
        origin: cp.origin.clone(),
        size: 1,
        root: [0; 32],
        time_unix_ms: Some(1),
        snapshot: None,
    };
    let _ = apply::check_order(&cp, &held);
}

fn snapshot(input: &[u8]) {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(input) else {
        return;
    };
    let Some(s) = snapshot_from_json(&value) else {
        return;
    };
    let again = snapshot_from_json(&snapshot_json(&s)).expect("a snapshot's JSON form reads back");
    assert_eq!(again.to_bytes(), s.to_bytes(), "the JSON form round-trips");
    let view = genesis();
    if s.verify(&view.group).is_ok() {
        let first = SnapshotRecord::genesis(view.group.fingerprint(), 0, 0, [0; 32], 0);
        let _ = first.check_successor(&s.record);
    }
}

/// One entry through every reader that does not need its neighbours.
fn entry(input: &[u8]) {
    let Ok(e) = serde_json::from_slice::<Entry>(input) else {
        return;
    };
    let _ = e.event();
    let _ = e.redacted().event();
    let _ = e.check(e.seq.saturating_sub(1), &GENESIS_PREV);
    let view = genesis();
    let _ = apply::check_group(view, &e);
    let _ = apply::revoked_zetas(&e);
    if let Ok(note) = apply::checkpoint_note(&e) {
        let _ = note.lines().count();
        if let Some(cp) = covering(view, std::slice::from_ref(&e)) {
            let _ = apply::check_checkpoint_entry(&e, &cp.checkpoint);
        }
    }
    if let Some(cp) = covering(view, std::slice::from_ref(&e)) {
        let at = e.seq;
        let _ = apply::apply_range(view, std::slice::from_ref(&e), cp, at);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    match selector % 5 {
        0 => {
            if let Ok(page) = fetch::parse_page(input) {
                follow(page, false);
            }
        }
        1 => {
            if let Ok(mut page) = fetch::parse_page(input) {
                reseal(&mut page);
                follow(page, true);
            }
        }
        2 => registry_note(input),
        3 => snapshot(input),
        _ => entry(input),
    }
});
