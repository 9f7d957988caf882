//! One bucket: the revoked zetas sharing their first 12 bits, sorted, and the part of the
//! Merkle tree over their leaf hashes that is worth keeping.
//!
//! Storage is compact (issue 30, item 3): the zetas in an exact-size slice (16 bytes each)
//! and the bucket tree only from level [`BLOCK_BITS`] up, whose nodes are the roots of
//! blocks of [`BLOCK`] consecutive leaves (the last block may be shorter): about 2 bytes per
//! zeta for those levels. Leaf hashes and the levels inside a block are recomputed when
//! needed: a proof recomputes its block (at most 32 leaf and 31 node hashes, eight at a
//! time), an insert the blocks from its first changed position on.
//!
//! Why the block roots are the tree's level-[`BLOCK_BITS`] nodes: in the `rs_merkle` shape
//! (see `tree.rs`), node `j` of level `l` covers leaves `[j·2^l, (j+1)·2^l)`, and whether a
//! node below level `l` is an unpaired last node depends only on the parity of its level's
//! length, `ceil(n / 2^k)` for the bucket, which has the parity of `ceil(m / 2^k)` for the
//! last block of `m` leaves (they differ by a multiple of `2^(l-k)`, even for `k < l`). So
//! the tree over one block's leaves has the same nodes as the bucket tree restricted to it,
//! its root is the level-`l` node (a block that collapses to one node below level `l` is
//! carried up unchanged in both), and the levels above are the tree over the block roots.
//! The tests below check roots and every path against the full tree
//! ([`Layers`] over all leaf hashes, the storage before this one) for every size up to
//! several blocks, and `core/tests/revocation.rs` pins the proof bytes and checks them
//! against `rs_merkle`.

use crate::values::Zeta;

use super::hasher::{Hash, EMPTY_BUCKET_ROOT};
use super::lanes::{leaf_hashes, parent_level};
use super::tree::Layers;

/// The lowest stored level of a bucket tree: nodes over [`BLOCK`] leaves.
pub(crate) const BLOCK_BITS: u32 = 5;
/// Leaves per block (`2^BLOCK_BITS`): a proof recomputes `2 · BLOCK - 1` hashes at most.
pub(crate) const BLOCK: usize = 1 << BLOCK_BITS;

/// The zetas of one bucket, ascending, and their tree from level [`BLOCK_BITS`] up (leaf `i`
/// of the full tree is `H(0x00 || zetas[i])`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Bucket {
    /// Exactly the zetas, no spare capacity.
    zetas: Box<[Zeta]>,
    /// The tree over the block roots: level [`BLOCK_BITS`] of the bucket tree and above.
    upper: Layers,
}

/// The roots of the blocks of `zetas`, which must start at a block boundary of the bucket:
/// level [`BLOCK_BITS`] of the tree over their leaves (a shorter last block is collapsed to
/// its own root, which the shape carries up unchanged).
fn block_roots(zetas: &[Zeta]) -> Vec<Hash> {
    let mut level = leaf_hashes(zetas);
    for _ in 0..BLOCK_BITS {
        if level.len() <= 1 {
            break;
        }
        level = parent_level(&level);
    }
    level
}

impl Bucket {
    /// Builds a bucket from strictly ascending zetas that all belong to it.
    pub(crate) fn from_sorted(zetas: &[Zeta]) -> Self {
        Bucket {
            zetas: zetas.into(),
            upper: Layers::new(block_roots(zetas)),
        }
    }

    /// Number of zetas.
    pub(crate) fn len(&self) -> usize {
        self.zetas.len()
    }

    /// The zetas, ascending.
    pub(crate) fn zetas(&self) -> &[Zeta] {
        &self.zetas
    }

    /// The bucket root; 32 zero bytes when empty.
    pub(crate) fn root(&self) -> Hash {
        self.upper.root().unwrap_or(EMPTY_BUCKET_ROOT)
    }

    /// `Ok(index)` of `zeta`, or `Err(index)` where it would be inserted.
    pub(crate) fn search(&self, zeta: &Zeta) -> Result<usize, usize> {
        self.zetas.binary_search(zeta)
    }

    /// The proof hashes of the zeta at `index` in the bucket tree (the `rs_merkle` path,
    /// bottom-up): the siblings inside its block, recomputed from the block's zetas, then
    /// the path of the block root in the stored levels. Empty when `index` is out of range.
    pub(crate) fn path(&self, index: usize) -> Vec<Hash> {
        let start = index & !(BLOCK - 1);
        let end = (start + BLOCK).min(self.zetas.len());
        let Some(block) = self.zetas.get(start..end).filter(|_| index < end) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut level = leaf_hashes(block);
        let mut i = index - start;
        while level.len() > 1 {
            if let Some(sibling) = level.get(i ^ 1) {
                out.push(*sibling);
            }
            level = parent_level(&level);
            i >>= 1;
        }
        out.extend(self.upper.path(index >> BLOCK_BITS));
        out
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of_val::<[Zeta]>(&self.zetas) + self.upper.heap_bytes()
    }

    /// Merges `new` (strictly ascending, none already present, all of this bucket) into the
    /// bucket and rehashes only from the block holding the first inserted position on (the
    /// blocks before it hold the same leaves at the same positions).
    pub(crate) fn insert_sorted(&mut self, new: &[Zeta]) {
        let Some(lowest) = new.first() else {
            return;
        };
        let first = self.zetas.partition_point(|z| z < lowest);
        let mut zetas = Vec::with_capacity(self.zetas.len() + new.len());
        zetas.extend_from_slice(&self.zetas[..first]);
        let mut old = self.zetas[first..].iter().peekable();
        for z in new {
            while let Some(oz) = old.next_if(|oz| *oz < z) {
                zetas.push(*oz);
            }
            zetas.push(*z);
        }
        zetas.extend(old);
        // Exact capacity: `with_capacity` above, filled to it.
        let zetas = zetas.into_boxed_slice();
        let first_block = first >> BLOCK_BITS;
        let roots = block_roots(zetas.get(first_block << BLOCK_BITS..).unwrap_or_default());
        self.upper.update_leaves(first_block, |leaves| {
            leaves.truncate(first_block);
            leaves.reserve_exact(roots.len());
            leaves.extend(roots);
        });
        self.zetas = zetas;
    }
}

#[cfg(test)]
mod tests {
    use super::super::hasher::leaf_hash;
    use super::*;

    /// `n` ascending zetas of bucket 0x123, spaced so that inserts fit between them.
    fn zetas(n: usize, offset: u64) -> Vec<Zeta> {
        (0..n as u64)
            .map(|i| {
                let mut z = [0u8; 16];
                z[0] = 0x12;
                z[1] = 0x30;
                z[8..].copy_from_slice(&(i * 1000 + offset).to_be_bytes());
                Zeta(z)
            })
            .collect()
    }

    /// The storage before compaction: every leaf hash and every level.
    fn full(zetas: &[Zeta]) -> Layers {
        Layers::new(zetas.iter().map(|z| leaf_hash(&z.0)).collect())
    }

    fn assert_same(bucket: &Bucket, all: &[Zeta], what: &str) {
        let tree = full(all);
        assert_eq!(bucket.zetas(), all, "{what}");
        assert_eq!(
            bucket.root(),
            tree.root().unwrap_or(EMPTY_BUCKET_ROOT),
            "{what}"
        );
        for i in 0..all.len() {
            assert_eq!(bucket.path(i), tree.path(i), "{what} i={i}");
        }
        assert!(bucket.path(all.len()).is_empty());
    }

    #[test]
    fn roots_and_paths_equal_the_full_tree_for_every_size() {
        for n in (0..=4 * BLOCK + 3).chain([8 * BLOCK - 1, 8 * BLOCK, 8 * BLOCK + 1, 1000]) {
            let z = zetas(n, 0);
            assert_same(&Bucket::from_sorted(&z), &z, &format!("n={n}"));
        }
    }

    #[test]
    fn inserts_equal_the_full_tree_at_the_start_middle_and_end() {
        for n in [0, 1, 2, 31, 32, 33, 64, 65, 200] {
            let base = zetas(n, 500);
            // Before everything, inside the first block, in a later block, after everything,
            // and a run across blocks.
            let picks: Vec<Vec<usize>> = vec![
                vec![0],
                vec![1],
                vec![n / 2],
                vec![n],
                vec![0, 3, n / 3, n / 2, n],
                (0..=n).step_by(7).collect(),
            ];
            for pick in picks {
                let mut bucket = Bucket::from_sorted(&base);
                let new: Vec<Zeta> = zetas(n + 1, 0)
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| pick.contains(i))
                    .map(|(_, z)| z)
                    .collect();
                bucket.insert_sorted(&new);
                let mut all = base.clone();
                all.extend(&new);
                all.sort();
                assert_same(&bucket, &all, &format!("n={n} pick={pick:?}"));
                // Memory: exactly the zetas, no spare capacity.
                assert_eq!(std::mem::size_of_val::<[Zeta]>(&bucket.zetas), 16 * all.len());
            }
        }
    }
}
