//! [`RevocationSet`]: the sorted set of revoked zetas in 4096 buckets, its root, inserts that
//! rehash only what changed, and proof generation.

use core::fmt;
use std::sync::Arc;

use rayon::prelude::*;

use crate::values::Zeta;

use super::bucket::Bucket;
use super::error::SetError;
use super::hasher::Hash;
use super::lanes::top_leaf_hashes;
use super::proof::{InclusionProof, LeafOpening, NonMembershipProof, RevocationProof};
use super::tree::Layers;
use super::{bucket_of, BUCKET_COUNT, TOP_DEPTH};

/// Top leaves hashed per rayon task.
const TOP_LEAVES_PER_TASK: usize = 512;
/// New zetas above which sorting them runs in parallel.
const PARALLEL_SORT: usize = 1 << 14;
/// Bytes freed at the end of the input of [`RevocationSet::from_sorted_vec`] before it is
/// shrunk (a `realloc` that, for a large vector, unmaps the freed pages in place).
const SHRINK_STEP: usize = 1 << 20;
/// A bucket whose base is shared with another version takes new zetas into its `extra`
/// until they would exceed `1 / EXTRA_SHARE` of the base; then an insert compacts it.
const EXTRA_SHARE: usize = 32;
/// An insert copies at most `1 / COMPACT_SHARE` of the set's zetas to compact buckets whose
/// base is shared (the largest `extra` relative to its base first); the others wait.
const COMPACT_SHARE: u64 = 16;

/// The committed set of revoked zetas (commitment format v1, `docs/revocation-proofs.md`).
///
/// Zetas are kept sorted in 4096 buckets by their first 12 bits; each bucket has a Merkle
/// tree over its leaves and a top tree commits to every bucket's root, start and count.
/// Insert-only: nothing is ever removed, so every later root still contains every zeta.
///
/// Memory is about 17 bytes per zeta: 16 for the zeta itself (each bucket's zetas in an
/// exact-size slice) and about 1 for the bucket-tree levels from 64-leaf blocks up; leaf
/// hashes and the levels inside a block are recomputed when a proof or an insert needs them
/// (a proof: at most 127 SHA3-256 permutations per opening, eight at a time, a few
/// microseconds). See [`memory_bytes`](Self::memory_bytes).
///
/// Cloning is cheap and copy-on-write: a clone shares every bucket with the original
/// (about 300 KiB of top tree and bucket pointers are copied, whatever the size), and an
/// [`insert`](Self::insert) into either copies only the tree levels of the buckets it
/// touches (about 1 byte per zeta of those buckets), while their zetas stay shared. A
/// service can therefore keep serving proofs from the signed set while it builds the next
/// one, even from a revocation that touches every bucket.
#[derive(Clone)]
pub struct RevocationSet {
    /// Exactly [`BUCKET_COUNT`] buckets, shared between clones until written.
    buckets: Vec<Arc<Bucket>>,
    /// `starts[b]` = number of zetas in buckets `< b`.
    starts: Vec<u64>,
    /// Tree over the [`BUCKET_COUNT`] top leaves.
    top: Layers,
    len: u64,
}

impl Default for RevocationSet {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for RevocationSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RevocationSet({} zetas, root ", self.len)?;
        for b in &self.root()[..8] {
            write!(f, "{b:02x}")?;
        }
        f.write_str("..)")
    }
}

impl FromIterator<Zeta> for RevocationSet {
    /// Sorts and deduplicates, then builds in parallel (see [`RevocationSet::from_zetas`]).
    fn from_iter<I: IntoIterator<Item = Zeta>>(iter: I) -> Self {
        Self::from_zetas(iter)
    }
}

impl RevocationSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::from_buckets((0..BUCKET_COUNT).map(|_| Arc::default()).collect())
    }

    /// Builds the set from strictly ascending zetas (buckets built in parallel).
    pub fn from_sorted(zetas: &[Zeta]) -> Result<Self, SetError> {
        if let Some(index) = zetas
            .par_windows(2)
            .position_first(|w| w[0] >= w[1])
            .map(|i| i + 1)
        {
            return Err(SetError::NotSorted { index });
        }
        Ok(Self::from_sorted_unchecked(zetas))
    }

    /// Builds the set from zetas in any order; duplicates are ignored.
    ///
    /// The zetas are collected into one vector (in place when `zetas` is a `Vec`'s
    /// iterator), sorted, and moved into the buckets from its end while the vector gives
    /// its memory back, so the build holds about one copy of the zetas at a time, not two
    /// (see [`from_sorted_vec`](Self::from_sorted_vec)).
    pub fn from_zetas<I: IntoIterator<Item = Zeta>>(zetas: I) -> Self {
        let mut v: Vec<Zeta> = zetas.into_iter().collect();
        v.par_sort_unstable();
        v.dedup();
        Self::from_sorted_vec_unchecked(v)
    }

    /// Builds the set from strictly ascending zetas it takes over: each bucket's zetas are
    /// copied off the end of `zetas`, which is shrunk as it goes (for a large vector the
    /// allocator gives the pages back), so the build peaks near one copy of the zetas
    /// rather than the two of [`from_sorted`](Self::from_sorted).
    pub fn from_sorted_vec(zetas: Vec<Zeta>) -> Result<Self, SetError> {
        if let Some(index) = zetas
            .par_windows(2)
            .position_first(|w| w[0] >= w[1])
            .map(|i| i + 1)
        {
            return Err(SetError::NotSorted { index });
        }
        Ok(Self::from_sorted_vec_unchecked(zetas))
    }

    /// Number of revoked zetas.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing is revoked.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The set root (the top-tree root); for the empty set, [`empty_root`](super::empty_root).
    pub fn root(&self) -> [u8; 32] {
        self.top.root().unwrap_or_else(super::empty_root)
    }

    /// Whether `zeta` is revoked.
    pub fn contains(&self, zeta: &Zeta) -> bool {
        self.locate(zeta).1.is_ok()
    }

    /// Global position of `zeta` in the sorted set, if revoked.
    pub fn position(&self, zeta: &Zeta) -> Option<u64> {
        let (b, found) = self.locate(zeta);
        Some(self.starts[b] + found.ok()? as u64)
    }

    /// All revoked zetas, ascending.
    pub fn iter(&self) -> impl Iterator<Item = &Zeta> + '_ {
        self.buckets.iter().flat_map(|b| b.iter())
    }

    /// Approximate heap memory held, in bytes (buckets shared with clones counted in full).
    pub fn memory_bytes(&self) -> usize {
        self.buckets
            .iter()
            .map(|b| b.heap_bytes() + std::mem::size_of::<Bucket>() + 16)
            .sum::<usize>()
            + self.starts.capacity() * 8
            + self.top.heap_bytes()
    }

    /// Adds `zetas` (any order; duplicates and already revoked ones are ignored) and updates
    /// the root. Returns how many were new.
    ///
    /// Storage: a touched bucket that no clone shares takes the new zetas into its own
    /// exactly sized slice. One still shared with a clone (the gateway's case: the served
    /// set stays alive while the next one is built from its clone) keeps sharing its zetas
    /// and takes the new ones into a small side slice of its own, so the new version costs
    /// its new zetas and its touched buckets' tree levels (about 1 byte per zeta), not a
    /// copy of them; when a side slice passes 1/32 of the shared zetas, the insert merges the
    /// bucket into a slice of its own (a copy), at most 1/16 of the set per insert.
    ///
    /// Only touched buckets are rehashed (in parallel when several are touched), each only
    /// from the 64-leaf block of its first new leaf on (every leaf right of it moved, so its
    /// leaf hashes and every node above are recomputed); then the top leaves from the first touched bucket on
    /// (their starts moved) and the top tree above them. A touched bucket still shared with a
    /// clone is copied first; untouched ones stay shared.
    pub fn insert(&mut self, zetas: &[Zeta]) -> usize {
        let mut new: Vec<Zeta> = zetas
            .iter()
            .filter(|z| !self.contains(z))
            .copied()
            .collect();
        if new.len() > PARALLEL_SORT {
            new.par_sort_unstable();
        } else {
            new.sort_unstable();
        }
        new.dedup();
        if new.is_empty() {
            return 0;
        }

        // Runs of new zetas per bucket (sorted input, so each bucket's run is contiguous).
        let mut runs: Vec<(usize, &[Zeta])> = Vec::new();
        let mut rest = &new[..];
        while let Some(z) = rest.first() {
            let b = bucket_of(z);
            let n = rest.partition_point(|x| bucket_of(x) == b);
            let (run, tail) = rest.split_at(n);
            runs.push((usize::from(b), run));
            rest = tail;
        }
        let first_bucket = runs.first().map_or(0, |r| r.0);

        let compact = self.to_compact(&runs);
        let mut work: Vec<(&mut Bucket, &[Zeta], bool)> = Vec::with_capacity(runs.len());
        let mut pending = runs.iter().zip(compact).peekable();
        for (b, bucket) in self.buckets.iter_mut().enumerate() {
            if let Some((&(_, run), compact)) = pending.next_if(|r| r.0 .0 == b) {
                work.push((Arc::make_mut(bucket), run, compact));
            }
        }
        if work.len() > 1 {
            work.into_par_iter()
                .for_each(|(bucket, run, compact)| bucket.insert_sorted(run, compact));
        } else {
            for (bucket, run, compact) in work {
                bucket.insert_sorted(run, compact);
            }
        }

        self.refresh_top_from(first_bucket);
        new.len()
    }

    /// Which of the touched buckets (`runs`, ascending) this insert compacts: those whose
    /// base another version shares and whose `extra` would pass `1 / EXTRA_SHARE` of it,
    /// the largest share first, while the zetas copied stay within `1 / COMPACT_SHARE` of
    /// the set. (A bucket whose base nobody else holds is always merged in place, for free.)
    fn to_compact(&self, runs: &[(usize, &[Zeta])]) -> Vec<bool> {
        let mut candidates: Vec<(usize, u128, usize)> = Vec::new();
        for (k, &(b, run)) in runs.iter().enumerate() {
            let bucket = &self.buckets[b];
            let shared = Arc::strong_count(bucket) > 1 || bucket.base_shared();
            let extra = bucket.extra_len() + run.len();
            if shared && extra * EXTRA_SHARE > bucket.base_len() {
                // extra / base as a fixed-point share, for the order.
                let share = ((extra as u128) << 32) / (bucket.base_len() as u128 + 1);
                candidates.push((k, share, bucket.len() + run.len()));
            }
        }
        candidates.sort_unstable_by_key(|c| std::cmp::Reverse(c.1));
        let mut budget = self.len / COMPACT_SHARE;
        let mut compact = vec![false; runs.len()];
        for (k, _, copied) in candidates {
            if copied as u64 <= budget {
                budget -= copied as u64;
                compact[k] = true;
            }
        }
        compact
    }

    /// A proof for `zeta`: inclusion if revoked, non-membership otherwise.
    pub fn prove(&self, zeta: &Zeta) -> RevocationProof {
        match self.locate(zeta) {
            (b, Ok(local)) => RevocationProof::Inclusion(InclusionProof {
                leaf: self.opening(b, local),
            }),
            (b, Err(i)) => RevocationProof::NonMembership(self.non_membership(b, i)),
        }
    }

    /// An inclusion proof for `zeta`, or `None` if it is not revoked.
    pub fn prove_inclusion(&self, zeta: &Zeta) -> Option<InclusionProof> {
        let (b, found) = self.locate(zeta);
        Some(InclusionProof {
            leaf: self.opening(b, found.ok()?),
        })
    }

    /// A non-membership proof for `zeta`, or `None` if it is revoked.
    pub fn prove_non_membership(&self, zeta: &Zeta) -> Option<NonMembershipProof> {
        let (b, found) = self.locate(zeta);
        Some(self.non_membership(b, found.err()?))
    }

    /// The bucket of `zeta` and [`Bucket::search`] in it: `Ok(local index)` if revoked,
    /// `Err(insertion index)` otherwise.
    fn locate(&self, zeta: &Zeta) -> (usize, Result<usize, usize>) {
        let b = usize::from(bucket_of(zeta));
        (b, self.buckets[b].search(zeta))
    }

    /// The neighbours of an absent zeta that would be inserted at index `i` of bucket `b`.
    fn non_membership(&self, b: usize, i: usize) -> NonMembershipProof {
        // Global positions: the absent zeta sits between `g - 1` and `g`. Binary search over
        // `starts` finds their buckets without scanning the empty buckets in between.
        let g = self.starts[b] + i as u64;
        let predecessor = g.checked_sub(1).map(|x| self.at_global(x));
        let successor = (g < self.len).then(|| self.at_global(g));
        NonMembershipProof {
            predecessor: predecessor.map(|(c, j)| self.opening(c, j)),
            successor: successor.map(|(c, j)| self.opening(c, j)),
        }
    }

    /// The bucket and local index of the zeta at global position `x` (`x < len`): the last
    /// bucket starting at or before `x` (any empty bucket after the one holding `x` starts
    /// after it).
    fn at_global(&self, x: u64) -> (usize, usize) {
        let c = self.starts.partition_point(|&s| s <= x) - 1;
        (c, (x - self.starts[c]) as usize)
    }

    /// The opening of zeta `local` of bucket `b` (both in range).
    fn opening(&self, b: usize, local: usize) -> LeafOpening {
        let bucket = &self.buckets[b];
        let mut top_path = [[0u8; 32]; TOP_DEPTH];
        for (slot, h) in top_path.iter_mut().zip(self.top.path(b)) {
            *slot = h;
        }
        LeafOpening {
            // `local < bucket.len()` at every call (a search hit, or a position below the
            // count); a zero zeta would only make a proof that fails to verify.
            zeta: bucket.get(local).unwrap_or(Zeta([0; 16])),
            bucket: b as u16,
            bucket_start: self.starts[b],
            bucket_count: bucket.len() as u64,
            local_index: local as u64,
            bucket_path: bucket.path(local),
            top_path,
        }
    }

    fn from_sorted_unchecked(zetas: &[Zeta]) -> Self {
        let bounds: Vec<usize> = (0..=BUCKET_COUNT)
            .map(|b| zetas.partition_point(|z| usize::from(bucket_of(z)) < b))
            .collect();
        let buckets = bounds
            .par_windows(2)
            .map(|w| Arc::new(Bucket::from_sorted(&zetas[w[0]..w[1]])))
            .collect();
        Self::from_buckets(buckets)
    }

    fn from_sorted_vec_unchecked(mut zetas: Vec<Zeta>) -> Self {
        let mut bases: Vec<Arc<[Zeta]>> = Vec::with_capacity(BUCKET_COUNT);
        for b in (0..BUCKET_COUNT).rev() {
            let start = zetas.partition_point(|z| usize::from(bucket_of(z)) < b);
            bases.push(Arc::from(zetas.get(start..).unwrap_or_default()));
            zetas.truncate(start);
            if (zetas.capacity() - zetas.len()) * std::mem::size_of::<Zeta>() >= SHRINK_STEP {
                zetas.shrink_to_fit();
            }
        }
        drop(zetas);
        bases.reverse();
        let buckets = bases
            .into_par_iter()
            .map(|base| Arc::new(Bucket::from_base(base)))
            .collect();
        Self::from_buckets(buckets)
    }

    fn from_buckets(buckets: Vec<Arc<Bucket>>) -> Self {
        let mut starts = Vec::with_capacity(BUCKET_COUNT);
        let mut len = 0u64;
        for bucket in &buckets {
            starts.push(len);
            len += bucket.len() as u64;
        }
        let leaves = (0..BUCKET_COUNT)
            .step_by(TOP_LEAVES_PER_TASK)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|from| top_leaves(from, from + TOP_LEAVES_PER_TASK, &starts, &buckets))
            .collect::<Vec<_>>()
            .concat();
        RevocationSet {
            buckets,
            starts,
            top: Layers::new(leaves),
            len,
        }
    }

    /// Recomputes starts, top leaves and the top tree for buckets `first..`.
    fn refresh_top_from(&mut self, first: usize) {
        let mut start = self.starts[first];
        for (slot, bucket) in self.starts[first..].iter_mut().zip(&self.buckets[first..]) {
            *slot = start;
            start += bucket.len() as u64;
        }
        self.len = start;
        let (buckets, starts) = (&self.buckets, &self.starts);
        self.top.update_leaves(first, |leaves| {
            leaves[first..]
                .par_chunks_mut(TOP_LEAVES_PER_TASK)
                .enumerate()
                .for_each(|(k, chunk)| {
                    let from = first + k * TOP_LEAVES_PER_TASK;
                    let fresh = top_leaves(from, from + chunk.len(), starts, buckets);
                    for (leaf, h) in chunk.iter_mut().zip(fresh) {
                        *leaf = h;
                    }
                });
        });
    }
}

/// The top leaves of buckets `from..to` (`to` clamped to the bucket count), hashed eight at
/// a time.
fn top_leaves(from: usize, to: usize, starts: &[u64], buckets: &[Arc<Bucket>]) -> Vec<Hash> {
    let to = to.min(buckets.len()).min(starts.len());
    let items: Vec<(u16, u64, u64, Hash)> = (from..to)
        .map(|b| {
            let bucket = &buckets[b];
            (b as u16, starts[b], bucket.len() as u64, bucket.root())
        })
        .collect();
    top_leaf_hashes(&items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_zetas(seed: u64, n: usize) -> Vec<Zeta> {
        // SplitMix64: enough for spread-out test zetas without a dev-dependency here.
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        (0..n)
            .map(|_| {
                let mut z = [0u8; 16];
                z[..8].copy_from_slice(&next().to_be_bytes());
                z[8..].copy_from_slice(&next().to_be_bytes());
                Zeta(z)
            })
            .collect()
    }

    #[test]
    fn from_sorted_vec_builds_what_from_sorted_builds() {
        for n in [0usize, 1, 2, 4095, 4096, 4097, 30_000] {
            let mut v = random_zetas(n as u64, n);
            v.sort_unstable();
            v.dedup();
            let a = RevocationSet::from_sorted(&v).unwrap();
            let b = RevocationSet::from_sorted_vec(v.clone()).unwrap();
            let c = RevocationSet::from_zetas(v.iter().rev().copied());
            assert_eq!((a.root(), a.len()), (b.root(), b.len()), "n={n}");
            assert_eq!((a.root(), a.len()), (c.root(), c.len()), "n={n}");
            assert!(a.iter().eq(b.iter()));
            if n > 2 {
                let mut bad = v.clone();
                bad.swap(1, 2);
                assert_eq!(
                    RevocationSet::from_sorted_vec(bad).unwrap_err(),
                    SetError::NotSorted { index: 2 }
                );
                let mut dup = v;
                dup[2] = dup[1];
                assert_eq!(
                    RevocationSet::from_sorted_vec(dup).unwrap_err(),
                    SetError::NotSorted { index: 2 }
                );
            }
        }
    }

    /// Zetas held by `next` that it does not share with `served`.
    fn unshared_zetas(next: &RevocationSet, served: &RevocationSet) -> usize {
        next.buckets
            .iter()
            .zip(&served.buckets)
            .map(|(n, s)| {
                if Arc::ptr_eq(n, s) {
                    0
                } else if n.shares_base_with(s) {
                    n.extra_len()
                } else {
                    n.len()
                }
            })
            .sum()
    }

    /// The gateway's way: the served set stays alive while the next one is built from its
    /// clone. A batch touching every bucket shares the zetas, each version answers for
    /// itself, and compaction copies at most 1/16 of the set per insert.
    #[test]
    fn versions_share_zetas_and_compaction_stays_within_its_budget() {
        let mut served = RevocationSet::from_zetas(random_zetas(1, 100_000));
        let mut all: Vec<Zeta> = served.iter().copied().collect();
        for round in 0..30u64 {
            let (root, len) = (served.root(), served.len());
            let probe = random_zetas(1000 + round, 1)[0];
            let before = served.prove(&probe).to_bytes();
            // A quarter of the buckets get a zeta (1024, about 1 % of the set: what one
            // member at the certificate cap is to 10^8 zetas), some rounds ten times more.
            let batch = if round % 10 == 9 { 10_240 } else { 1024 };
            let extra_before: usize = served.buckets.iter().map(|b| b.extra_len()).sum();
            let new = random_zetas(100 + round, batch);
            let mut next = served.clone();
            assert_eq!(next.insert(&new), batch);
            // What the new version holds of its own: the compacted buckets (at most 1/16 of
            // the set), the side slices (the old ones copied, with the new zetas).
            let copied = unshared_zetas(&next, &served);
            assert!(
                copied as u64 <= len / COMPACT_SHARE + (batch + extra_before) as u64,
                "round {round}: {copied} zetas not shared"
            );
            // The served set is untouched.
            assert_eq!((served.root(), served.len()), (root, len));
            assert_eq!(served.prove(&probe).to_bytes(), before);
            all.extend(&new);
            all.sort_unstable();
            assert!(next.iter().eq(all.iter()), "round {round}");
            if round % 8 == 0 {
                let bulk = RevocationSet::from_sorted(&all).unwrap();
                assert_eq!(next.root(), bulk.root(), "round {round}");
                for z in all.iter().step_by(997).chain(&new[..3]).chain([&probe]) {
                    assert_eq!(next.prove(z).to_bytes(), bulk.prove(z).to_bytes());
                    assert_eq!(next.position(z), bulk.position(z));
                }
            }
            served = next;
        }
        // Side slices stay bounded: at an inflow of f of the set per insert, compaction
        // (1/16 of the set per insert, buckets past 1/32 extra) holds them near 16 f.
        let extra: usize = served.buckets.iter().map(|b| b.extra_len()).sum();
        assert!(
            (extra as u64) * 4 < served.len(),
            "{extra} of {} zetas in side slices",
            served.len()
        );
        // Alone, the set merges every touched bucket into zetas of its own.
        let mut alone = served;
        let more = random_zetas(7, 4096);
        alone.insert(&more);
        for z in &more {
            assert_eq!(alone.buckets[usize::from(bucket_of(z))].extra_len(), 0);
        }
    }
}
