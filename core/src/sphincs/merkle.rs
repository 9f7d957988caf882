//! Roots of Merkle trees from a leaf and its authentication path (PQClean `compute_root`),
//! for many independent trees at once: level by level, every tree's next node is one `H`
//! call, and the calls of one level go through the hash lanes together.

use super::address::Address;
use super::hash::{Hasher, NodeJob};

/// One tree to climb.
pub(crate) struct RootTask<'a> {
    /// The tree's address: layer, tree, type and key pair set; height and index are
    /// filled in per level.
    pub adrs: Address,
    /// Index of the leaf within its tree.
    pub idx: u32,
    /// Index offset of the tree's leaves (FORS trees `i * 2^a`; 0 for hypertree trees).
    pub offset: u32,
    /// Authentication path, `height * N` bytes, bottom first.
    pub auth: &'a [u8],
    /// The leaf on input, the root on output.
    pub node: [u8; 32],
}

/// Climbs every task from its leaf to its root, `height` levels. `jobs` is scratch space.
pub(crate) fn compute_roots(
    hasher: &Hasher,
    n: usize,
    height: usize,
    tasks: &mut [RootTask<'_>],
    jobs: &mut Vec<NodeJob>,
) {
    jobs.clear();
    jobs.resize(tasks.len(), NodeJob::default());
    for level in 0..height {
        for (t, j) in tasks.iter().zip(jobs.iter_mut()) {
            let auth = &t.auth[level * n..(level + 1) * n];
            // The node at this level is a right child when its index is odd.
            if (t.idx >> level) & 1 == 1 {
                j.input[..n].copy_from_slice(auth);
                j.input[n..2 * n].copy_from_slice(&t.node[..n]);
            } else {
                j.input[..n].copy_from_slice(&t.node[..n]);
                j.input[n..2 * n].copy_from_slice(auth);
            }
            let up = level as u32 + 1;
            j.adrs = t.adrs;
            j.adrs.word6 = up;
            j.adrs.word7 = (t.idx >> up) + (t.offset >> up);
        }
        hasher.h_nodes(n, jobs);
        for (t, j) in tasks.iter_mut().zip(jobs.iter()) {
            t.node = j.out;
        }
    }
}
