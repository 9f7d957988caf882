//! One bucket: the revoked zetas sharing their first 12 bits, sorted, and the Merkle tree
//! over their leaf hashes.

use crate::values::Zeta;

use super::hasher::{leaf_hash, Hash, EMPTY_BUCKET_ROOT};
use super::tree::Layers;

/// The zetas of one bucket, ascending, and their tree (leaf `i` is `H(0x00 || zetas[i])`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Bucket {
    zetas: Vec<Zeta>,
    tree: Layers,
}

impl Bucket {
    /// Builds a bucket from strictly ascending zetas that all belong to it.
    pub(crate) fn from_sorted(zetas: &[Zeta]) -> Self {
        let leaves = zetas.iter().map(|z| leaf_hash(&z.0)).collect();
        Bucket {
            zetas: zetas.to_vec(),
            tree: Layers::new(leaves),
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
        self.tree.root().unwrap_or(EMPTY_BUCKET_ROOT)
    }

    /// `Ok(index)` of `zeta`, or `Err(index)` where it would be inserted.
    pub(crate) fn search(&self, zeta: &Zeta) -> Result<usize, usize> {
        self.zetas.binary_search(zeta)
    }

    /// The proof hashes of the zeta at `index` in the bucket tree.
    pub(crate) fn path(&self, index: usize) -> Vec<Hash> {
        self.tree.path(index)
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.zetas.capacity() * std::mem::size_of::<Zeta>() + self.tree.heap_bytes()
    }

    /// Merges `new` (strictly ascending, none already present, all of this bucket) into the
    /// bucket and rehashes only the tree to the right of the first inserted position.
    pub(crate) fn insert_sorted(&mut self, new: &[Zeta]) {
        let Some(lowest) = new.first() else {
            return;
        };
        let first = self.zetas.partition_point(|z| z < lowest);
        let total = self.zetas.len() + new.len();
        let old_zetas = std::mem::take(&mut self.zetas);
        let mut zetas = Vec::with_capacity(total);
        zetas.extend_from_slice(&old_zetas[..first]);
        self.tree.update_leaves(first, |leaves| {
            let old_leaves = std::mem::take(leaves);
            let mut merged = Vec::with_capacity(total);
            merged.extend_from_slice(&old_leaves[..first]);
            let mut old = old_zetas[first..]
                .iter()
                .zip(&old_leaves[first..])
                .peekable();
            for z in new {
                while let Some((oz, ol)) = old.next_if(|(oz, _)| *oz < z) {
                    zetas.push(*oz);
                    merged.push(*ol);
                }
                zetas.push(*z);
                merged.push(leaf_hash(&z.0));
            }
            for (oz, ol) in old {
                zetas.push(*oz);
                merged.push(*ol);
            }
            *leaves = merged;
        });
        self.zetas = zetas;
    }
}
