//! A Merkle tree kept layer by layer, with exactly `rs_merkle`'s shape, roots and proofs,
//! that can recompute only the part to the right of a changed leaf.
//!
//! `rs_merkle::MerkleTree` cannot replace a leaf in the middle (it only appends), keeps a
//! second copy of the tree in its history and stores every node with its index (40 bytes):
//! inserting into a sorted bucket would mean rebuilding it from scratch at twice the memory.
//! This type stores 32 bytes per node (levels at their exact size) and, when leaves from
//! position `p` on change, rehashes only the nodes at or right of `p` on each level, eight
//! at a time (`lanes.rs`). A bucket keeps one over its 64-leaf block roots (`bucket.rs`),
//! the set one over its 4096 top leaves. The tests in `core/tests/revocation.rs`
//! check its roots and proof hashes against `rs_merkle::MerkleTree` leaf by leaf.
//!
//! Shape (the `rs_merkle` rules): level 0 is the leaves; node `j` of the next level is
//! `H(0x01 || left || right)` of nodes `2j` and `2j + 1`, or node `2j` itself, unchanged, when
//! it is the last node of an odd-length level; the root is the single node of the top level.
//! An empty tree has no root; one leaf is its own root.

use rayon::prelude::*;

use super::hasher::Hash;
use super::lanes::parent_nodes;

/// Parent nodes to compute on one level before the work is split across threads (and the
/// size of each thread's part).
const PARALLEL_NODES: usize = 2048;

/// A Merkle tree stored as its levels, leaves first, root last.
#[derive(Clone, Debug)]
pub(crate) struct Layers {
    /// Invariant: at least one level; every level but the last has more than one node.
    levels: Vec<Vec<Hash>>,
}

impl Default for Layers {
    fn default() -> Self {
        Layers {
            levels: vec![Vec::new()],
        }
    }
}

impl Layers {
    /// Builds the tree over `leaves`.
    pub(crate) fn new(leaves: Vec<Hash>) -> Self {
        let mut tree = Layers {
            levels: vec![leaves],
        };
        tree.rebuild_from(0);
        tree
    }

    /// The root, `None` for an empty tree.
    pub(crate) fn root(&self) -> Option<Hash> {
        self.levels.last().and_then(|l| l.first()).copied()
    }

    /// Lets `edit` change the leaves (it may also append some), then rehashes what depends on
    /// leaves at positions `>= first_changed`. Leaves before `first_changed` must be unchanged.
    pub(crate) fn update_leaves(
        &mut self,
        first_changed: usize,
        edit: impl FnOnce(&mut Vec<Hash>),
    ) {
        if let Some(leaves) = self.levels.first_mut() {
            edit(leaves);
        }
        self.rebuild_from(first_changed);
    }

    /// The `rs_merkle` proof hashes of leaf `index`, bottom-up: on each level below the root,
    /// the sibling of the current node if it exists (none for a carried odd last node).
    pub(crate) fn path(&self, index: usize) -> Vec<Hash> {
        let below_root = self.levels.len().saturating_sub(1);
        let mut out = Vec::with_capacity(below_root);
        let mut i = index;
        for level in &self.levels[..below_root] {
            if let Some(sibling) = level.get(i ^ 1) {
                out.push(*sibling);
            }
            i >>= 1;
        }
        out
    }

    /// Heap bytes held (capacity, not length).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.levels.capacity() * std::mem::size_of::<Vec<Hash>>()
            + self
                .levels
                .iter()
                .map(|l| l.capacity() * std::mem::size_of::<Hash>())
                .sum::<usize>()
    }

    /// Recomputes every level above the leaves, keeping the nodes that depend only on leaves
    /// before `first_changed` (node `j` of level `l` covers leaves `[j·2^l, (j+1)·2^l)`, so
    /// nodes `j < first_changed >> l` are unchanged).
    fn rebuild_from(&mut self, first_changed: usize) {
        let mut first = first_changed;
        let mut level = 0;
        while self.levels[level].len() > 1 {
            let parent_len = self.levels[level].len().div_ceil(2);
            first /= 2;
            if self.levels.len() == level + 1 {
                self.levels.push(Vec::new());
            }
            let (lower, upper) = self.levels.split_at_mut(level + 1);
            let (child, parent) = (&lower[level], &mut upper[0]);
            parent.truncate(first.min(parent_len));
            let from = parent.len();
            parent.reserve_exact(parent_len - from);
            if parent_len - from >= PARALLEL_NODES {
                let parts: Vec<Vec<Hash>> = (from..parent_len)
                    .step_by(PARALLEL_NODES)
                    .collect::<Vec<_>>()
                    .into_par_iter()
                    .map(|s| parent_nodes(child, s, s + PARALLEL_NODES))
                    .collect();
                for part in parts {
                    parent.extend(part);
                }
            } else {
                parent.extend(parent_nodes(child, from, parent_len));
            }
            level += 1;
        }
        self.levels.truncate(level + 1);
    }
}
