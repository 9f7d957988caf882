//! Merkle trees of one height built together, every level of all of them one pass of `H`
//! calls through the lanes, the levels kept for the authentication paths: the `k` FORS
//! trees of a signature, or the `d` trees of the hypertree layers.

use crate::sphincs::address::Address;
use crate::sphincs::hash::Hasher;

/// Trees of height `height` over `trees · 2^height` leaves.
pub(super) struct Forest {
    n: usize,
    height: usize,
    /// `levels[z]`: every tree's nodes at height `z`, tree after tree, `2^(height - z)` each,
    /// `N` bytes apiece (so two siblings are one `2N`-byte `H` input).
    levels: Vec<Vec<u8>>,
}

impl Forest {
    /// Builds the trees over `leaves` (`N` bytes each, tree after tree). Tree `t`'s nodes
    /// are hashed at `adrs[t]` (layer, tree, type and key pair set) with height `z` and
    /// index `(offsets[t] >> z) + j`, where `offsets[t]` is the index of its first leaf
    /// among all leaves of its kind (FORS tree `i`: `i · 2^a`; hypertree trees: 0).
    ///
    /// # Panics
    /// If `leaves` is not `(adrs.len() << height) · N` bytes or `offsets` not `adrs.len()`
    /// long (the signer's own arithmetic, never input).
    pub(super) fn build(
        hasher: &Hasher,
        n: usize,
        height: usize,
        leaves: Vec<u8>,
        adrs: &[Address],
        offsets: &[u32],
    ) -> Self {
        let trees = adrs.len();
        assert!(
            leaves.len() == (trees << height) * n && offsets.len() == trees,
            "a forest of {trees} trees of height {height} needs as many leaves and offsets"
        );
        let mut levels: Vec<Vec<u8>> = Vec::with_capacity(height + 1);
        levels.push(leaves);
        for z in 1..=height {
            let width = 1usize << (height - z);
            let below = &levels[z - 1];
            let mut level = vec![0u8; trees * width * n];
            hasher.h_each(
                n,
                trees * width,
                |i| {
                    let (t, j) = (i / width, i % width);
                    let mut a = adrs[t];
                    a.word6 = z as u32;
                    a.word7 = (offsets[t] >> z) + j as u32;
                    (a, &below[2 * i * n..(2 * i + 2) * n])
                },
                |i, y| level[i * n..(i + 1) * n].copy_from_slice(y),
            );
            levels.push(level);
        }
        Forest { n, height, levels }
    }

    /// The root of tree `t` (first `N` bytes).
    pub(super) fn root(&self, t: usize) -> [u8; 32] {
        let n = self.n;
        let mut r = [0u8; 32];
        r[..n].copy_from_slice(&self.levels[self.height][t * n..(t + 1) * n]);
        r
    }

    /// Writes the authentication path of leaf `leaf` of tree `t` (`height · N` bytes,
    /// bottom first) to `out`.
    pub(super) fn auth_path(&self, t: usize, leaf: u32, out: &mut [u8]) {
        let n = self.n;
        for (z, dst) in out.chunks_exact_mut(n).take(self.height).enumerate() {
            let width = 1usize << (self.height - z);
            let at = (t * width + ((leaf >> z) ^ 1) as usize) * n;
            dst.copy_from_slice(&self.levels[z][at..at + n]);
        }
    }
}
