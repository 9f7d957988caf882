//! The log's Merkle tree: RFC 6962 / RFC 9162 section 2.1, SHA-256.
//!
//! ```text
//! leaf hash   = SHA-256(0x00 || entry bytes)
//! node hash   = SHA-256(0x01 || left || right)
//! empty tree  = SHA-256("")
//! MTH(D[n])   = node(MTH(D[0:k]), MTH(D[k:n])), k the largest power of two below n
//! ```
//!
//! The entry bytes of the log's entries are [`crate::tiles::entry_bytes`]; a checkpoint's
//! root line is the MTH of the first `size` entries (`docs/format.md`, "The tree").
//!
//! Everything is computed from a [`Nodes`] source: the hash of a full, aligned subtree
//! (`level`, `index`) covers leaves `index * 2^level .. (index + 1) * 2^level`. [`Leaves`] is
//! the in-memory source over a slice of leaf hashes; the registry and the followers read
//! theirs from stored tiles (`crate::tiles::TileNodes`).

use sha2::{Digest, Sha256};

/// A 32-byte SHA-256 hash.
pub type Hash = [u8; 32];

/// The hash of the empty tree, `SHA-256("")`.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// `SHA-256(0x00 || data)`: the hash of a leaf.
pub fn leaf_hash(data: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(data);
    h.finalize().into()
}

/// `SHA-256(0x01 || left || right)`: the hash of an interior node.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// Why a proof or a tree read failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProofError {
    /// The index is not a leaf of a tree of that size, or the sizes are not in order.
    #[error("index {index} is out of range for a tree of {size} entries")]
    OutOfRange {
        /// leaf index or old size
        index: u64,
        /// tree size
        size: u64,
    },
    /// The proof has the wrong number of hashes for its index and sizes.
    #[error("the proof has the wrong length ({0} hashes)")]
    Length(usize),
    /// The proof does not lead to the given root.
    #[error("the proof does not lead to the root")]
    Mismatch,
    /// A node the computation needs is not available from the source.
    #[error("node at level {level}, index {index} is not available: {reason}")]
    Missing {
        /// subtree level
        level: u8,
        /// subtree index at that level
        index: u64,
        /// what the source said
        reason: String,
    },
}

/// A source of full, aligned subtree hashes.
pub trait Nodes {
    /// The hash of the subtree of `2^level` leaves starting at leaf `index << level`.
    fn node(&self, level: u8, index: u64) -> Result<Hash, ProofError>;
}

/// The in-memory source over leaf hashes (tests, small trees, a batch being built).
pub struct Leaves<'a>(pub &'a [Hash]);

impl Nodes for Leaves<'_> {
    fn node(&self, level: u8, index: u64) -> Result<Hash, ProofError> {
        let missing = || ProofError::Missing {
            level,
            index,
            reason: format!("{} leaves held", self.0.len()),
        };
        let width = 1u64.checked_shl(u32::from(level)).ok_or_else(missing)?;
        let start = index.checked_mul(width).ok_or_else(missing)?;
        let end = start.checked_add(width).ok_or_else(missing)?;
        if end > self.0.len() as u64 {
            return Err(missing());
        }
        Ok(subtree_of_slice(&self.0[start as usize..end as usize]))
    }
}

/// The root of a full subtree given all its leaf hashes (`leaves.len()` a power of two).
fn subtree_of_slice(leaves: &[Hash]) -> Hash {
    let mut level: Vec<Hash> = leaves.to_vec();
    while level.len() > 1 {
        level = level.chunks(2).map(|p| node_hash(&p[0], &p[1])).collect();
    }
    level[0]
}

/// The largest power of two strictly below `n` (`n >= 2`).
fn split(n: u64) -> u64 {
    1u64 << (63 - (n - 1).leading_zeros())
}

/// MTH of the `n` leaves starting at `start`; `start` is aligned to the largest power of two
/// not above `n`, as every range the RFC's recursion visits is.
fn range_hash(src: &impl Nodes, start: u64, n: u64) -> Result<Hash, ProofError> {
    if n.is_power_of_two() {
        let level = n.trailing_zeros() as u8;
        return src.node(level, start >> level);
    }
    let k = split(n);
    let left = range_hash(src, start, k)?;
    let right = range_hash(src, start + k, n - k)?;
    Ok(node_hash(&left, &right))
}

/// The root of the tree of the first `size` leaves.
pub fn root_at(src: &impl Nodes, size: u64) -> Result<Hash, ProofError> {
    if size == 0 {
        return Ok(empty_root());
    }
    range_hash(src, 0, size)
}

/// The root of a tree of these leaf hashes.
pub fn root(leaves: &[Hash]) -> Hash {
    root_at(&Leaves(leaves), leaves.len() as u64).expect("every node of held leaves exists")
}

/// The audit path of leaf `index` in the tree of the first `size` leaves (RFC 9162 2.1.3.1).
pub fn inclusion_proof_at(
    src: &impl Nodes,
    index: u64,
    size: u64,
) -> Result<Vec<Hash>, ProofError> {
    if index >= size {
        return Err(ProofError::OutOfRange { index, size });
    }
    let mut proof = Vec::new();
    path(src, index, 0, size, &mut proof)?;
    Ok(proof)
}

/// PATH(m, D[start..start+n]) appended bottom-up.
fn path(
    src: &impl Nodes,
    m: u64,
    start: u64,
    n: u64,
    out: &mut Vec<Hash>,
) -> Result<(), ProofError> {
    if n <= 1 {
        return Ok(());
    }
    let k = split(n);
    if m < k {
        path(src, m, start, k, out)?;
        out.push(range_hash(src, start + k, n - k)?);
    } else {
        path(src, m - k, start + k, n - k, out)?;
        out.push(range_hash(src, start, k)?);
    }
    Ok(())
}

/// The audit path of leaf `index` in the tree of all of `leaves`.
pub fn inclusion_proof(index: u64, leaves: &[Hash]) -> Vec<Hash> {
    inclusion_proof_at(&Leaves(leaves), index, leaves.len() as u64).unwrap_or_default()
}

/// Checks that `leaf` is leaf `index` of the tree of `size` leaves whose root is `root`
/// (RFC 9162 2.1.3.2).
pub fn verify_inclusion(
    leaf: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), ProofError> {
    if index >= size {
        return Err(ProofError::OutOfRange { index, size });
    }
    let (mut f, mut s) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if s == 0 {
            return Err(ProofError::Length(proof.len()));
        }
        if f & 1 == 1 || f == s {
            r = node_hash(p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err(ProofError::Length(proof.len()));
    }
    if r != *root {
        return Err(ProofError::Mismatch);
    }
    Ok(())
}

/// The consistency proof from the tree of `old_size` leaves to that of `new_size`
/// (RFC 9162 2.1.4.1); empty when `old_size` is 0 or equals `new_size`.
pub fn consistency_proof_at(
    src: &impl Nodes,
    old_size: u64,
    new_size: u64,
) -> Result<Vec<Hash>, ProofError> {
    if old_size > new_size {
        return Err(ProofError::OutOfRange {
            index: old_size,
            size: new_size,
        });
    }
    let mut proof = Vec::new();
    if old_size > 0 && old_size < new_size {
        subproof(src, old_size, 0, new_size, true, &mut proof)?;
    }
    Ok(proof)
}

/// SUBPROOF(m, D[start..start+n], b).
fn subproof(
    src: &impl Nodes,
    m: u64,
    start: u64,
    n: u64,
    whole: bool,
    out: &mut Vec<Hash>,
) -> Result<(), ProofError> {
    if m == n {
        if !whole {
            out.push(range_hash(src, start, n)?);
        }
        return Ok(());
    }
    let k = split(n);
    if m <= k {
        subproof(src, m, start, k, whole, out)?;
        out.push(range_hash(src, start + k, n - k)?);
    } else {
        subproof(src, m - k, start + k, n - k, false, out)?;
        out.push(range_hash(src, start, k)?);
    }
    Ok(())
}

/// The consistency proof from the first `old_size` of `leaves` to all of them.
pub fn consistency_proof(old_size: u64, leaves: &[Hash]) -> Vec<Hash> {
    consistency_proof_at(&Leaves(leaves), old_size, leaves.len() as u64).unwrap_or_default()
}

/// Checks that the tree of `new_size` leaves with root `new_root` extends the tree of
/// `old_size` leaves with root `old_root` (RFC 9162 2.1.4.2).
pub fn verify_consistency(
    old_size: u64,
    new_size: u64,
    old_root: &Hash,
    new_root: &Hash,
    proof: &[Hash],
) -> Result<(), ProofError> {
    if old_size > new_size {
        return Err(ProofError::OutOfRange {
            index: old_size,
            size: new_size,
        });
    }
    if old_size == new_size {
        if !proof.is_empty() {
            return Err(ProofError::Length(proof.len()));
        }
        return if old_root == new_root {
            Ok(())
        } else {
            Err(ProofError::Mismatch)
        };
    }
    if old_size == 0 {
        // Every tree extends the empty one; the proof is empty.
        return if proof.is_empty() {
            Ok(())
        } else {
            Err(ProofError::Length(proof.len()))
        };
    }
    let mut path: Vec<Hash> = Vec::with_capacity(proof.len() + 1);
    if old_size.is_power_of_two() {
        path.push(*old_root);
    }
    path.extend_from_slice(proof);
    let Some((first, rest)) = path.split_first() else {
        return Err(ProofError::Length(proof.len()));
    };
    let (mut f, mut s) = (old_size - 1, new_size - 1);
    while f & 1 == 1 {
        f >>= 1;
        s >>= 1;
    }
    let (mut fr, mut sr) = (*first, *first);
    for c in rest {
        if s == 0 {
            return Err(ProofError::Length(proof.len()));
        }
        if f & 1 == 1 || f == s {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err(ProofError::Length(proof.len()));
    }
    if fr != *old_root || sr != *new_root {
        return Err(ProofError::Mismatch);
    }
    Ok(())
}

/// The right edge of a tree: the roots of its full subtrees, largest first. Enough to append
/// leaves and compute the root without the rest of the tree (a follower's state between
/// checkpoints; a tile client's starting point).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frontier {
    size: u64,
    /// One hash per set bit of `size`, from the highest bit down.
    edge: Vec<Hash>,
}

impl Frontier {
    /// The frontier of the empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// The frontier of the tree of the first `size` leaves, read from `src`.
    pub fn at(src: &impl Nodes, size: u64) -> Result<Self, ProofError> {
        let mut edge = Vec::new();
        let mut start = 0u64;
        for bit in (0..64u8).rev() {
            if size & (1u64 << bit) != 0 {
                edge.push(src.node(bit, start >> bit)?);
                start += 1u64 << bit;
            }
        }
        Ok(Frontier { size, edge })
    }

    /// Number of leaves.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends one leaf hash.
    pub fn push(&mut self, leaf: Hash) {
        let mut h = leaf;
        let mut s = self.size;
        while s & 1 == 1 {
            let left = self.edge.pop().expect("one edge hash per set bit");
            h = node_hash(&left, &h);
            s >>= 1;
        }
        self.edge.push(h);
        self.size += 1;
    }

    /// The root of the tree.
    pub fn root(&self) -> Hash {
        let mut it = self.edge.iter().rev();
        let Some(last) = it.next() else {
            return empty_root();
        };
        it.fold(*last, |acc, left| node_hash(left, &acc))
    }

    /// The edge hashes, largest subtree first (one per set bit of the size).
    pub fn edge(&self) -> &[Hash] {
        &self.edge
    }

    /// A frontier from its size and edge hashes, checked for shape.
    pub fn from_parts(size: u64, edge: Vec<Hash>) -> Option<Self> {
        (edge.len() == size.count_ones() as usize).then_some(Frontier { size, edge })
    }
}

/// A whole tree in memory: every node of every level (two hashes per leaf). Roots and proofs
/// at any size in `O(log n)`; for auditors and tests that replay a log.
#[derive(Clone, Debug, Default)]
pub struct MemoryTree {
    /// `levels[l][i]`: the full subtree at level `l`, index `i`.
    levels: Vec<Vec<Hash>>,
}

impl MemoryTree {
    /// The empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of leaves.
    pub fn size(&self) -> u64 {
        self.levels.first().map_or(0, |l| l.len() as u64)
    }

    /// Appends a leaf hash.
    pub fn push(&mut self, leaf: Hash) {
        let mut h = leaf;
        let mut level = 0;
        loop {
            if self.levels.len() == level {
                self.levels.push(Vec::new());
            }
            self.levels[level].push(h);
            let row = &self.levels[level];
            if row.len() % 2 == 1 {
                break;
            }
            h = node_hash(&row[row.len() - 2], &row[row.len() - 1]);
            level += 1;
        }
    }

    /// The root of the first `size` leaves.
    pub fn root_at(&self, size: u64) -> Result<Hash, ProofError> {
        root_at(self, size)
    }

    /// The root of the whole tree.
    pub fn root(&self) -> Hash {
        self.root_at(self.size())
            .expect("every node of held leaves exists")
    }
}

impl Nodes for MemoryTree {
    fn node(&self, level: u8, index: u64) -> Result<Hash, ProofError> {
        self.levels
            .get(usize::from(level))
            .and_then(|row| row.get(usize::try_from(index).ok()?))
            .copied()
            .ok_or_else(|| ProofError::Missing {
                level,
                index,
                reason: format!("a tree of {} leaves", self.size()),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves(n: usize) -> Vec<Hash> {
        (0..n)
            .map(|i| leaf_hash(format!("entry {i}").as_bytes()))
            .collect()
    }

    /// MTH straight from the RFC's definition, as an oracle.
    fn mth(d: &[Hash]) -> Hash {
        match d.len() {
            0 => empty_root(),
            1 => d[0],
            n => {
                let k = split(n as u64) as usize;
                node_hash(&mth(&d[..k]), &mth(&d[k..]))
            }
        }
    }

    #[test]
    fn known_answers() {
        // RFC 6962 / certificate-transparency test vectors (empty tree, one leaf "").
        assert_eq!(
            hex::encode(empty_root()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex::encode(leaf_hash(b"")),
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
        );
    }

    #[test]
    fn roots_frontier_and_proofs_agree_for_every_small_size() {
        let all = leaves(70);
        let mut frontier = Frontier::new();
        let mut tree = MemoryTree::new();
        for leaf in &all {
            tree.push(*leaf);
        }
        for n in 0..=all.len() {
            let d = &all[..n];
            let r = root(d);
            assert_eq!(r, mth(d), "size {n}");
            assert_eq!(tree.root_at(n as u64).unwrap(), r, "memory tree at {n}");
            assert_eq!(
                inclusion_proof_at(&tree, n.saturating_sub(1) as u64, n as u64).ok(),
                (n > 0).then(|| inclusion_proof(n as u64 - 1, d))
            );
            assert_eq!(frontier.root(), r, "frontier at {n}");
            assert_eq!(Frontier::at(&Leaves(d), n as u64).unwrap(), frontier);
            for i in 0..n {
                let p = inclusion_proof(i as u64, d);
                verify_inclusion(&d[i], i as u64, n as u64, &p, &r).unwrap();
                let mut bad = p.clone();
                if let Some(h) = bad.first_mut() {
                    h[0] ^= 1;
                    assert!(verify_inclusion(&d[i], i as u64, n as u64, &bad, &r).is_err());
                }
                if n > 1 {
                    let j = (i as u64 + 1) % n as u64;
                    assert!(verify_inclusion(&d[i], j, n as u64, &p, &r).is_err());
                }
            }
            for m in 0..=n {
                let p = consistency_proof(m as u64, d);
                let old = root(&d[..m]);
                verify_consistency(m as u64, n as u64, &old, &r, &p)
                    .unwrap_or_else(|e| panic!("{m} -> {n}: {e}"));
                if m > 0 && m < n {
                    let mut bad = p.clone();
                    bad.last_mut().unwrap()[5] ^= 1;
                    assert!(verify_consistency(m as u64, n as u64, &old, &r, &bad).is_err());
                    let other = root(&all[1..m + 1]);
                    assert!(verify_consistency(m as u64, n as u64, &other, &r, &p).is_err());
                }
            }
            if n < all.len() {
                frontier.push(all[n]);
            }
        }
    }

    #[test]
    fn out_of_range_is_an_error_not_a_panic() {
        let d = leaves(5);
        assert!(inclusion_proof_at(&Leaves(&d), 5, 5).is_err());
        assert!(inclusion_proof_at(&Leaves(&d), 0, 6).is_err());
        assert!(consistency_proof_at(&Leaves(&d), 6, 5).is_err());
        assert!(verify_inclusion(&d[0], 3, 3, &[], &d[0]).is_err());
        assert!(verify_consistency(4, 3, &d[0], &d[0], &[]).is_err());
        assert!(Frontier::from_parts(3, vec![d[0]]).is_none());
    }
}
