//! Merkle trees of one height built together, every level of all of them one pass of `H`
//! calls through the lanes, the levels kept for the authentication paths: the `k` FORS
//! trees of a signature, or the `d` trees of the hypertree layers.

use crate::sphincs::address::Address;
use crate::sphincs::hash::{Hasher, NodeJob};

/// Trees of height `height` over `trees · 2^height` leaves.
pub(super) struct Forest {
    n: usize,
    height: usize,
    /// `levels[z]`: every tree's nodes at height `z`, tree after tree, `2^(height - z)` each.
    levels: Vec<Vec<[u8; 32]>>,
}

impl Forest {
    /// Builds the trees over `leaves` (tree after tree). Tree `t`'s nodes are hashed at
    /// `adrs[t]` (layer, tree, type and key pair set) with height `z` and index
    /// `(offsets[t] >> z) + j`, where `offsets[t]` is the index of its first leaf among all
    /// leaves of its kind (FORS tree `i`: `i · 2^a`; hypertree trees: 0).
    ///
    /// # Panics
    /// If `leaves` is not `adrs.len() << height` long or `offsets` not `adrs.len()` long
    /// (the signer's own arithmetic, never input).
    pub(super) fn build(
        hasher: &Hasher,
        n: usize,
        height: usize,
        leaves: Vec<[u8; 32]>,
        adrs: &[Address],
        offsets: &[u32],
    ) -> Self {
        let trees = adrs.len();
        assert!(
            leaves.len() == trees << height && offsets.len() == trees,
            "a forest of {trees} trees of height {height} needs as many leaves and offsets"
        );
        let mut levels = Vec::with_capacity(height + 1);
        levels.push(leaves);
        let mut jobs: Vec<NodeJob> = Vec::with_capacity(trees << height.saturating_sub(1));
        for z in 1..=height {
            let width = 1usize << (height - z);
            let below = &levels[z - 1];
            jobs.clear();
            for (t, (a, offset)) in adrs.iter().zip(offsets).enumerate() {
                let children = &below[t * 2 * width..(t + 1) * 2 * width];
                for (j, pair) in children.chunks_exact(2).enumerate() {
                    let mut job = NodeJob {
                        adrs: *a,
                        ..NodeJob::default()
                    };
                    job.adrs.word6 = z as u32;
                    job.adrs.word7 = (offset >> z) + j as u32;
                    job.input[..n].copy_from_slice(&pair[0][..n]);
                    job.input[n..2 * n].copy_from_slice(&pair[1][..n]);
                    jobs.push(job);
                }
            }
            hasher.h_nodes(n, &mut jobs);
            levels.push(jobs.iter().map(|j| j.out).collect());
        }
        Forest { n, height, levels }
    }

    /// The root of tree `t`.
    pub(super) fn root(&self, t: usize) -> [u8; 32] {
        self.levels[self.height][t]
    }

    /// Writes the authentication path of leaf `leaf` of tree `t` (`height · N` bytes,
    /// bottom first) to `out`.
    pub(super) fn auth_path(&self, t: usize, leaf: u32, out: &mut [u8]) {
        let n = self.n;
        for (z, dst) in out.chunks_exact_mut(n).take(self.height).enumerate() {
            let width = 1usize << (self.height - z);
            let sibling = ((leaf >> z) ^ 1) as usize;
            dst.copy_from_slice(&self.levels[z][t * width + sibling][..n]);
        }
    }
}
