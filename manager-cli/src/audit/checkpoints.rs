//! Checkpoints against the log: the root a checkpoint states must be the RFC 6962 Merkle
//! root of the first `size` entries as replayed ([`Tree`]) or, in a note signed before the
//! log was a tree, the chain hash of entry `size` (the followers' rule,
//! `dgsp_wire::follow::check_root`). Its signature is checked elsewhere (`crypto.rs`, which
//! also checks that the note states the entry's size and root).
//!
//! A root that differs means an entry among the first `size` was changed after the manager
//! signed the checkpoint, somewhere between the last checkpoint that matched and this one's
//! size (the earlier root binds every entry up to its size), or the root was never this
//! log's. Every later checkpoint then differs too (its tree holds the changed leaf): each
//! such mismatch follows from the first one, so they are folded into the first violation
//! (its detail counts them) rather than reported again. A checkpoint that matches ends the
//! divergence; a mismatch after that is reported anew.
//!
//! A mismatch at or past an entry the chain already reported altered or out of sequence
//! ([`Chain::suspect_from`]) is no new finding: the leaf there is not the one that was
//! checkpointed, so every root covering it differs. It is counted as skipped
//! ([`Skipped::CheckpointRoot`]). (A change hidden behind it is then not localised; the
//! audit already fails.)
//!
//! Consecutive checkpoints must be consistent (the later tree extends the earlier one).
//! With the whole tree in memory that follows from each root matching the tree at its
//! size. The checkpoints whose root matched the tree are kept in order ([`Checkpoints::take_seen`])
//! for a source that can prove more: the tiles source (`super::tiles`) computes the RFC 6962
//! consistency proof between each two successive ones from the served hash tiles and verifies
//! it against their stated roots, as a witness would.
//!
//! The served checkpoint of a tile source ([`Checkpoints::check_served`]) is judged like a
//! checkpoint entry, except that it is no entry: it may cover every entry read.

use dgsp_core::checkpoint::Checkpoint;
use dgsp_wire::follow::{check_root, RootKind};
use serde_json::Value;

use dgsp_wire::log::{unhex32, Entry, Hash};

use super::chain::Chain;
use super::findings::Findings;
use super::tree::Tree;
use super::violation::{Skipped, ViolationKind};

/// The parts of a checkpoint entry.
pub(crate) struct Stated {
    pub(crate) size: u64,
    /// The entry's `head` field: the note's root line (the name is kept for compatibility).
    pub(crate) root: [u8; 32],
    pub(crate) note: String,
}

/// Reads a checkpoint entry's public fields.
pub(crate) fn parse(e: &Entry) -> Result<Stated, String> {
    let size = e
        .public
        .get("size")
        .and_then(Value::as_u64)
        .ok_or("checkpoint without a numeric size")?;
    let root = e
        .public
        .get("head")
        .and_then(Value::as_str)
        .and_then(unhex32)
        .ok_or("checkpoint without a 64-hex head (its root)")?;
    let note = e
        .public
        .get("note")
        .and_then(Value::as_str)
        .ok_or("checkpoint without a note")?
        .to_owned();
    Ok(Stated { size, root, note })
}

/// How many checkpoints matched the log, by what their root commits to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RootCounts {
    /// Roots that are the Merkle root of their size.
    pub(crate) tree: u64,
    /// Roots that are the chain hash of entry `size` (notes signed before the tree).
    pub(crate) legacy: u64,
}

/// What the checkpoints have shown so far.
#[derive(Default)]
pub(crate) struct Checkpoints {
    /// The entries' Merkle tree.
    tree: Tree,
    /// The largest size checkpointed.
    pub(crate) last_size: u64,
    /// Checkpoints whose root matched, by kind.
    pub(crate) roots: RootCounts,
    /// The size of the last checkpoint that matched the log.
    last_good: u64,
    /// The open divergence: index of its violation and how many later mismatches it
    /// explains.
    divergence: Option<(usize, u64)>,
    /// Every divergence closed or open, for the final details.
    folded: Vec<(usize, u64)>,
    /// Checkpoints whose root is the tree's, in order, not yet taken by the source.
    seen: Vec<(u64, Hash)>,
    /// Whether a source takes them (else none is kept).
    pub(crate) keep_seen: bool,
}

impl Checkpoints {
    /// Adds entry `e` to the tree (every entry, in order, before its own checks).
    pub(crate) fn entry(&mut self, e: &Entry) {
        self.tree.push(e);
    }

    /// Checks checkpoint entry `seq` against the tree and the chain; returns whether it
    /// matches (then what it names can be checked against the entries it covers).
    pub(crate) fn check(
        &mut self,
        seq: u64,
        cp: &Stated,
        chain: &Chain,
        out: &mut Findings,
    ) -> bool {
        if cp.size >= seq {
            out.violation(
                seq,
                ViolationKind::CheckpointMismatch,
                format!("it covers {} entries but is entry {seq}", cp.size),
            );
            return false;
        }
        self.compare(seq, &format!("checkpoint entry {seq}"), cp, chain, out)
    }

    /// Checks the checkpoint a tile source serves (size and root from its note) against the
    /// tree of the entries read; a violation is reported at entry `size` (the last it
    /// covers). Returns whether it matches.
    pub(crate) fn check_served(&mut self, cp: &Stated, chain: &Chain, out: &mut Findings) -> bool {
        self.compare(cp.size, "the served checkpoint", cp, chain, out)
    }

    /// The rules common to an entry and the served checkpoint: it does not go back, and its
    /// root is the tree's (or a legacy chain hash).
    fn compare(
        &mut self,
        seq: u64,
        what: &str,
        cp: &Stated,
        chain: &Chain,
        out: &mut Findings,
    ) -> bool {
        if cp.size < self.last_size {
            out.violation(
                seq,
                ViolationKind::CheckpointMismatch,
                format!(
                    "{what} covers {} entries, an earlier checkpoint covered {}",
                    cp.size, self.last_size
                ),
            );
            return false;
        }
        self.last_size = cp.size;
        let explained = chain.suspect_from().is_some_and(|s| s <= cp.size);
        let Some(tree_root) = self.tree.root_at(cp.size) else {
            // Past a gap in the sequence (already a violation), or past what was read:
            // nothing to compare with.
            out.skip(Skipped::CheckpointRoot);
            return false;
        };
        match judge(cp, &tree_root, chain) {
            Ok(kind) => {
                match kind {
                    RootKind::Tree => {
                        self.roots.tree += 1;
                        if self.keep_seen {
                            self.seen.push((cp.size, cp.root));
                        }
                    }
                    RootKind::LegacyChain => self.roots.legacy += 1,
                }
                self.last_good = cp.size;
                if let Some(d) = self.divergence.take() {
                    self.folded.push(d);
                }
                true
            }
            Err(_) if explained => {
                out.skip(Skipped::CheckpointRoot);
                false
            }
            Err(_) => {
                match &mut self.divergence {
                    Some((_, later)) => *later += 1,
                    None => {
                        let i = out.violation(
                            seq,
                            ViolationKind::CheckpointMismatch,
                            format!(
                                "{what} signs root {} for the first {} entries, the log's tree has root {}: an entry among {}..={} was changed after it was checkpointed, or the root was never this log's",
                                hex::encode(cp.root),
                                cp.size,
                                hex::encode(tree_root),
                                self.last_good + 1,
                                cp.size
                            ),
                        );
                        self.divergence = Some((i, 0));
                    }
                }
                false
            }
        }
    }

    /// The checkpoints whose root matched the tree (size, root) since the last call, in
    /// order.
    pub(crate) fn take_seen(&mut self) -> Vec<(u64, Hash)> {
        std::mem::take(&mut self.seen)
    }

    /// Adds to each divergence's detail how many later checkpoints it explains.
    pub(crate) fn close(&mut self, out: &mut Findings) {
        self.folded.extend(self.divergence.take());
        for (i, later) in self.folded.drain(..) {
            if later > 0 {
                if let Some(v) = out.violations.get_mut(i) {
                    v.detail.push_str(&format!(
                        " ({later} later checkpoints differ from the log as a consequence)"
                    ));
                }
            }
        }
    }
}

/// The followers' rule on the stated root (the note states the same, or `crypto.rs`
/// reports it): the tree root of `size`, or the legacy chain hash of entry `size`.
fn judge(cp: &Stated, tree_root: &[u8; 32], chain: &Chain) -> Result<RootKind, String> {
    let stated = Checkpoint {
        origin: String::new(),
        size: cp.size,
        root: cp.root,
        time_unix_ms: None,
        snapshot: None,
    };
    check_root(&stated, tree_root, chain.hash_of(cp.size))
}
