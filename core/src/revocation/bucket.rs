//! One bucket: the revoked zetas sharing their first 12 bits, sorted, and the part of the
//! Merkle tree over their leaf hashes that is worth keeping.
//!
//! Storage is compact (issue 30, item 3): the zetas in an exact-size slice (16 bytes each)
//! and the bucket tree only from level [`BLOCK_BITS`] up, whose nodes are the roots of
//! blocks of [`BLOCK`] consecutive leaves (the last block may be shorter): about 1 byte per
//! zeta for those levels. Leaf hashes and the levels inside a block are recomputed when
//! needed: a proof recomputes its block (at most 64 leaf and 63 node hashes, eight at a
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

//!
//! **Versions sharing their zetas.** The zetas are a shared, immutable `base` and a small
//! sorted `extra` of zetas inserted since (disjoint from it): the bucket's zetas are their
//! merge. A clone of a bucket shares `base`; an insert into a bucket whose `base` is still
//! shared (the gateway serves one version of the set while it builds the next from a clone)
//! adds to `extra` and rebuilds only the stored tree levels, so a revocation that touches
//! every bucket costs the new version about 1 byte per zeta (its tree levels) and its new
//! zetas, not a copy of every zeta. An insert into an unshared bucket, or a
//! [compaction](Bucket::insert_sorted) the set allows, merges everything into a new `base`.

use std::sync::Arc;

use rayon::prelude::*;

use crate::values::Zeta;

use super::hasher::{Hash, EMPTY_BUCKET_ROOT};
use super::lanes::{leaf_hashes, parent_level};
use super::tree::Layers;

/// The lowest stored level of a bucket tree: nodes over [`BLOCK`] leaves.
pub(crate) const BLOCK_BITS: u32 = 6;
/// Leaves per block (`2^BLOCK_BITS`): a proof recomputes `2 · BLOCK - 1` hashes at most.
pub(crate) const BLOCK: usize = 1 << BLOCK_BITS;
/// Leaves hashed per rayon task when a bucket's blocks are rehashed (a multiple of
/// [`BLOCK`]): an insert touching few buckets still uses every core.
const PARALLEL_LEAVES: usize = 128 * BLOCK;

/// The zetas of one bucket, ascending (the merge of `base` and `extra`), and their tree
/// from level [`BLOCK_BITS`] up (leaf `i` of the full tree is `H(0x00 || zeta_i)`).
#[derive(Clone, Debug)]
pub(crate) struct Bucket {
    /// Strictly ascending, exactly sized; shared with the clones of this bucket.
    base: Arc<[Zeta]>,
    /// Strictly ascending, exactly sized, disjoint from `base`: zetas inserted while `base`
    /// was shared.
    extra: Box<[Zeta]>,
    /// The tree over the block roots: level [`BLOCK_BITS`] of the bucket tree and above.
    upper: Layers,
}

impl Default for Bucket {
    fn default() -> Self {
        Bucket {
            base: Arc::from(Vec::new()),
            extra: Box::default(),
            upper: Layers::default(),
        }
    }
}

/// The roots of the blocks of `zetas`, which must start at a block boundary of the bucket:
/// level [`BLOCK_BITS`] of the tree over their leaves (a shorter last block is collapsed to
/// its own root, which the shape carries up unchanged).
fn block_roots(zetas: &[Zeta]) -> Vec<Hash> {
    if zetas.len() >= 2 * PARALLEL_LEAVES {
        // Whole blocks per task (PARALLEL_LEAVES is a multiple of BLOCK), so each task's
        // roots are the roots of the same blocks.
        return zetas
            .par_chunks(PARALLEL_LEAVES)
            .map(block_roots)
            .collect::<Vec<_>>()
            .concat();
    }
    let mut level = leaf_hashes(zetas);
    for _ in 0..BLOCK_BITS {
        if level.len() <= 1 {
            break;
        }
        level = parent_level(&level);
    }
    level
}

/// The smallest `i` in `0..n` with `!below(i)` (`n` if none), for `below` true on a prefix.
fn first_not(n: usize, below: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The merge of two strictly ascending, disjoint slices, ascending.
pub(crate) struct Merged<'a> {
    a: &'a [Zeta],
    b: &'a [Zeta],
}

impl<'a> Iterator for Merged<'a> {
    type Item = &'a Zeta;

    fn next(&mut self) -> Option<&'a Zeta> {
        let take_a = match (self.a.first(), self.b.first()) {
            (Some(x), Some(y)) => x < y,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let side = if take_a { &mut self.a } else { &mut self.b };
        let (first, rest) = side.split_first()?;
        *side = rest;
        Some(first)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.a.len() + self.b.len();
        (n, Some(n))
    }
}

impl Bucket {
    /// Builds a bucket from strictly ascending zetas that all belong to it.
    pub(crate) fn from_sorted(zetas: &[Zeta]) -> Self {
        Self::from_base(zetas.into())
    }

    /// Builds a bucket over `base` (strictly ascending zetas that all belong to it).
    pub(crate) fn from_base(base: Arc<[Zeta]>) -> Self {
        let upper = Layers::new(block_roots(&base));
        Bucket {
            base,
            extra: Box::default(),
            upper,
        }
    }

    /// Number of zetas.
    pub(crate) fn len(&self) -> usize {
        self.base.len() + self.extra.len()
    }

    /// Zetas held in `extra` (inserted while the base was shared, not yet merged into it).
    pub(crate) fn extra_len(&self) -> usize {
        self.extra.len()
    }

    /// Zetas held in the shared base.
    pub(crate) fn base_len(&self) -> usize {
        self.base.len()
    }

    /// Whether the base is shared with another version of the bucket.
    pub(crate) fn base_shared(&self) -> bool {
        Arc::strong_count(&self.base) > 1
    }

    /// Whether `other` holds the same shared base (a version of the same bucket).
    #[cfg(test)]
    pub(crate) fn shares_base_with(&self, other: &Bucket) -> bool {
        Arc::ptr_eq(&self.base, &other.base)
    }

    /// The zetas, ascending.
    pub(crate) fn iter(&self) -> Merged<'_> {
        Merged {
            a: &self.base,
            b: &self.extra,
        }
    }

    /// The zetas from position `t` on (`t <= len`), ascending.
    fn iter_from(&self, t: usize) -> Merged<'_> {
        let (a, e) = self.split(t);
        Merged {
            a: self.base.get(a..).unwrap_or_default(),
            b: self.extra.get(e..).unwrap_or_default(),
        }
    }

    /// How many of the first `t` zetas (`t <= len`) are in `base` and how many in `extra`.
    fn split(&self, t: usize) -> (usize, usize) {
        let t = t.min(self.len());
        // The merged position of base[i] is i + (extra zetas below it): increasing in i.
        let a = first_not(self.base.len(), |i| {
            i + self.extra.partition_point(|x| *x < self.base[i]) < t
        });
        (a, t - a)
    }

    /// The zeta at position `i`, if `i < len`.
    pub(crate) fn get(&self, i: usize) -> Option<Zeta> {
        self.iter_from(i).next().copied()
    }

    /// The number of zetas below `zeta`.
    fn rank(&self, zeta: &Zeta) -> usize {
        self.base.partition_point(|z| z < zeta) + self.extra.partition_point(|z| z < zeta)
    }

    /// The bucket root; 32 zero bytes when empty.
    pub(crate) fn root(&self) -> Hash {
        self.upper.root().unwrap_or(EMPTY_BUCKET_ROOT)
    }

    /// `Ok(index)` of `zeta`, or `Err(index)` where it would be inserted.
    pub(crate) fn search(&self, zeta: &Zeta) -> Result<usize, usize> {
        let rank = self.rank(zeta);
        if self.base.binary_search(zeta).is_ok() || self.extra.binary_search(zeta).is_ok() {
            Ok(rank)
        } else {
            Err(rank)
        }
    }

    /// The proof hashes of the zeta at `index` in the bucket tree (the `rs_merkle` path,
    /// bottom-up): the siblings inside its block, recomputed from the block's zetas, then
    /// the path of the block root in the stored levels. Empty when `index` is out of range.
    pub(crate) fn path(&self, index: usize) -> Vec<Hash> {
        if index >= self.len() {
            return Vec::new();
        }
        let start = index & !(BLOCK - 1);
        let block: Vec<Zeta> = self.iter_from(start).take(BLOCK).copied().collect();
        let mut out = Vec::new();
        let mut level = leaf_hashes(&block);
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

    /// Heap bytes held (the shared base counted in full).
    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of_val::<[Zeta]>(&self.base)
            + std::mem::size_of_val::<[Zeta]>(&self.extra)
            + self.upper.heap_bytes()
    }

    /// Merges `new` (strictly ascending, none already present, all of this bucket) into the
    /// bucket and rehashes only from the block holding the first inserted position on (the
    /// blocks before it hold the same leaves at the same positions).
    ///
    /// Where the zetas go: with `compact`, or when no other version shares the base, every
    /// zeta is merged into a new base (the old one is freed, or stays with the versions that
    /// share it: a copy of the bucket); otherwise `new` is merged into `extra` only and the
    /// base stays shared.
    pub(crate) fn insert_sorted(&mut self, new: &[Zeta], compact: bool) {
        let Some(lowest) = new.first() else {
            return;
        };
        let first = self.rank(lowest);
        if compact || !self.base_shared() {
            let mut zetas = Vec::with_capacity(self.len() + new.len());
            zetas.extend(Merged {
                a: &self.base,
                b: &self.extra,
            });
            let old = zetas.split_off(first);
            zetas.extend(Merged { a: &old, b: new });
            // Drop the old base first when it is ours: one copy of the bucket at a time.
            self.base = Arc::from(Vec::new());
            self.extra = Box::default();
            self.base = Arc::from(zetas);
        } else {
            let mut extra = Vec::with_capacity(self.extra.len() + new.len());
            extra.extend(Merged {
                a: &self.extra,
                b: new,
            });
            self.extra = extra.into_boxed_slice();
        }
        let first_block = first >> BLOCK_BITS;
        let moved: Vec<Zeta> = self.iter_from(first_block << BLOCK_BITS).copied().collect();
        let roots = block_roots(&moved);
        drop(moved);
        self.upper.update_leaves(first_block, |leaves| {
            leaves.truncate(first_block);
            leaves.reserve_exact(roots.len());
            leaves.extend(roots);
        });
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
        assert!(bucket.iter().eq(all.iter()), "{what}");
        assert_eq!(bucket.len(), all.len(), "{what}");
        for (i, z) in all.iter().enumerate() {
            assert_eq!(bucket.get(i), Some(*z), "{what} i={i}");
            assert_eq!(bucket.search(z), Ok(i), "{what} i={i}");
        }
        assert_eq!(bucket.get(all.len()), None);
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
                bucket.insert_sorted(&new, false);
                let mut all = base.clone();
                all.extend(&new);
                all.sort();
                assert_same(&bucket, &all, &format!("n={n} pick={pick:?}"));
                // Memory: exactly the zetas, no spare capacity.
                assert_eq!(
                    std::mem::size_of_val::<[Zeta]>(&bucket.base),
                    16 * all.len()
                );
                assert_eq!(bucket.extra_len(), 0);
            }
        }
    }

    #[test]
    fn versions_share_their_base_and_each_answers_for_itself() {
        for n in [0, 1, 31, 32, 33, 100, 257] {
            let base = zetas(n, 500);
            let served = Bucket::from_sorted(&base);
            let mut versions = vec![(served.clone(), base.clone())];
            // A chain of versions, each built from a clone of the last, as the gateway does;
            // some inserts compact, most go to the side slice.
            for round in 0..6usize {
                let (last, last_all) = versions.last().cloned().unwrap();
                let mut next = last.clone();
                let new: Vec<Zeta> = zetas(n + 2, 100 + 37 * round as u64)
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| (i + round) % 3 == 0)
                    .map(|(_, z)| z)
                    .collect();
                next.insert_sorted(&new, round == 3);
                let mut all = last_all;
                all.extend(&new);
                all.sort();
                if round == 3 {
                    assert_eq!(next.extra_len(), 0, "n={n}: compacted");
                } else if n > 0 {
                    assert!(Arc::ptr_eq(&next.base, &last.base), "n={n}: base shared");
                }
                versions.push((next, all));
            }
            // Every version still shows exactly its own zetas, root and paths.
            for (k, (bucket, all)) in versions.iter().enumerate() {
                assert_same(bucket, all, &format!("n={n} version {k}"));
            }
            // The last version, once alone, merges into a base of its own.
            let (mut last, mut all) = versions.pop().unwrap();
            drop(versions);
            let more = zetas(n + 2, 999);
            last.insert_sorted(&more, false);
            all.extend(&more);
            all.sort();
            assert_eq!(last.extra_len(), 0);
            assert_same(&last, &all, &format!("n={n} alone"));
        }
    }
}
