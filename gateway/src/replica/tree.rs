//! The replica's Merkle tree of the applied entries (RFC 6962, the tree the registry's
//! checkpoints sign): the tile-level hashes of C2SP tlog-tiles (tree levels 0, 8, 16, ...) in
//! the `tree` column family, keyed `[tile level][be64 index]` as the registry keys its own,
//! and the tree's size (`meta` key `tree_size`). Both are written in the batch that applies
//! a range ([`Replica::commit`]), so the tree is always exactly the applied entries.
//!
//! Roots of any applied size come from these hashes ([`dgsp_wire::tiles::TileNodes`]); the
//! view keeps the right edge of the applied tree ([`Frontier`]) so that the hot path (a
//! newer note of the applied size, the next range) reads nothing.
//!
//! A replica written before the tree holds the entries' chain hashes but not the entries,
//! so it cannot be migrated: [`Replica::load`] refuses it ([`ReplicaError::BeforeTree`]).

use dgsp_wire::log::Hash;
use dgsp_wire::merkle::{self, Frontier, ProofError};
use dgsp_wire::tiles::{self, node_key, TileNodes};
use rocksdb::WriteBatch;

use super::{Replica, ReplicaError};

/// `meta` key: be64 number of entries the tree holds (always the applied position).
pub(super) const TREE_SIZE: &[u8] = b"tree_size";

impl Replica {
    /// The stored tree size: `None` for a replica written before the tree.
    pub(super) fn stored_tree_size(&self) -> Result<Option<u64>, ReplicaError> {
        match self.db.get_cf(self.cf("meta"), TREE_SIZE)? {
            None => Ok(None),
            Some(b) => <[u8; 8]>::try_from(b.as_slice())
                .map(|b| Some(u64::from_be_bytes(b)))
                .map_err(|_| ReplicaError::Corrupt("tree size".into())),
        }
    }

    /// Number of entries the tree holds (0 for an empty replica).
    pub fn tree_size(&self) -> Result<u64, ReplicaError> {
        Ok(self.stored_tree_size()?.unwrap_or(0))
    }

    /// The stored hash of the tree node at level `8 * tile_level`, index `index`.
    fn tree_hash(&self, tile_level: u8, index: u64) -> Result<Hash, ProofError> {
        let read = self.db.get_cf(self.cf("tree"), node_key(tile_level, index));
        tiles::stored_node(tile_level, index, read)
    }

    fn nodes(&self) -> TileNodes<impl Fn(u8, u64) -> Result<Hash, ProofError> + '_> {
        TileNodes(move |l, i| self.tree_hash(l, i))
    }

    fn within_tree(&self, size: u64) -> Result<(), ReplicaError> {
        let held = self.tree_size()?;
        if size > held {
            return Err(ReplicaError::Corrupt(format!(
                "asked for the tree of {size} entries; the replica's tree holds {held}"
            )));
        }
        Ok(())
    }

    /// The Merkle root of the first `size` applied entries.
    pub fn root_at(&self, size: u64) -> Result<Hash, ReplicaError> {
        self.within_tree(size)?;
        merkle::root_at(&self.nodes(), size)
            .map_err(|e| ReplicaError::Corrupt(format!("tree of {size} entries: {e}")))
    }

    /// The right edge of the tree of the first `size` applied entries.
    pub fn frontier(&self, size: u64) -> Result<Frontier, ReplicaError> {
        self.within_tree(size)?;
        Frontier::at(&self.nodes(), size)
            .map_err(|e| ReplicaError::Corrupt(format!("tree of {size} entries: {e}")))
    }

    /// Adds to `batch` the tile-level hashes that appending `leaves` to the stored tree
    /// completes, and the tree's new size. The stored tree must hold exactly `old_size`
    /// entries, and the appended tree must have the right edge `expected` (the one the
    /// follower computed in memory and checked the checkpoint against): checked before
    /// anything is written, in every build, so the stored tree never drifts from what was
    /// verified.
    pub(super) fn append_tree(
        &self,
        batch: &mut WriteBatch,
        old_size: u64,
        leaves: &[Hash],
        expected: &Frontier,
    ) -> Result<(), ReplicaError> {
        let held = self.tree_size()?;
        self.append_tree_over(batch, held, old_size, leaves, expected, &|l, i| {
            self.tree_hash(l, i)
        })
    }

    /// [`Replica::append_tree`] over a tree of `held` entries whose stored hashes `get`
    /// reads (a bootstrap's base, not yet written, or the stored tree).
    pub(super) fn append_tree_over(
        &self,
        batch: &mut WriteBatch,
        held: u64,
        old_size: u64,
        leaves: &[Hash],
        expected: &Frontier,
        get: &dyn Fn(u8, u64) -> Result<Hash, ProofError>,
    ) -> Result<(), ReplicaError> {
        let new_size = old_size + leaves.len() as u64;
        if held != old_size || expected.size() != new_size {
            return Err(ReplicaError::Inconsistent(format!(
                "the tree holds {held} entries; appending {} leaves after entry {old_size} cannot give a tree of {}",
                leaves.len(),
                expected.size()
            )));
        }
        let made = tiles::append_hashes(old_size, leaves, get)
            .map_err(|e| ReplicaError::Corrupt(format!("tree of {old_size} entries: {e}")))?;
        let lookup: std::collections::HashMap<(u8, u64), Hash> =
            made.iter().map(|(l, i, h)| ((*l, *i), *h)).collect();
        let after = TileNodes(|l, i| match lookup.get(&(l, i)) {
            Some(h) => Ok(*h),
            None => get(l, i),
        });
        let edge = Frontier::at(&after, new_size)
            .map_err(|e| ReplicaError::Corrupt(format!("tree of {new_size} entries: {e}")))?;
        if edge != *expected {
            return Err(ReplicaError::Inconsistent(format!(
                "the stored tree of {new_size} entries has root {}, the verified one {}",
                hex::encode(edge.root()),
                hex::encode(expected.root())
            )));
        }
        for (l, i, h) in made {
            batch.put_cf(self.cf("tree"), node_key(l, i), h);
        }
        batch.put_cf(self.cf("meta"), TREE_SIZE, new_size.to_be_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Applied, Update};
    use super::*;
    use dgsp_wire::merkle::{leaf_hash, root};

    fn leaves(n: u64) -> Vec<Hash> {
        (0..n).map(|i| leaf_hash(&i.to_be_bytes())).collect()
    }

    /// The update applying `leaves[from..to]` (entry hashes stand-ins; no note checks here).
    fn update(all: &[Hash], from: usize, to: usize) -> Update {
        let mut tree = Frontier::new();
        all[..to].iter().for_each(|l| tree.push(*l));
        Update {
            hashes: (from..to).map(|i| (i as u64 + 1, all[i])).collect(),
            leaves: all[from..to].to_vec(),
            tree,
            applied: Applied {
                seq: to as u64,
                hash: all[to - 1],
                time_ms: 1,
            },
            checkpoint: format!("note {to}"),
            ..Update::default()
        }
    }

    #[test]
    fn the_stored_tree_gives_the_root_of_every_applied_size() {
        let dir = tempfile::tempdir().unwrap();
        let r = Replica::open(dir.path()).unwrap();
        // Ranges of uneven lengths across the first three hash tiles' edges (256, 512, 768).
        let all = leaves(1031);
        let mut at = 0;
        for len in [1usize, 6, 249, 1, 255, 2, 256, 30, 31] {
            r.commit(&update(&all, at, at + len)).unwrap();
            at += len;
        }
        r.commit(&update(&all, at, all.len())).unwrap();
        assert_eq!(r.tree_size().unwrap(), 1031);
        for size in 0..=1031u64 {
            let want = root(&all[..size as usize]);
            assert_eq!(r.root_at(size).unwrap(), want, "size {size}");
            assert_eq!(r.frontier(size).unwrap().root(), want, "size {size}");
        }
        assert!(r.root_at(1032).is_err());
        // Reopened, the loaded edge is the applied tree's.
        drop(r);
        let r = Replica::open(dir.path()).unwrap();
        let loaded = r.load().unwrap();
        assert_eq!(loaded.tree.size(), 1031);
        assert_eq!(loaded.tree.root(), root(&all));
    }

    #[test]
    fn an_update_that_does_not_continue_the_tree_is_refused_whole() {
        let dir = tempfile::tempdir().unwrap();
        let r = Replica::open(dir.path()).unwrap();
        let all = leaves(40);
        r.commit(&update(&all, 0, 10)).unwrap();
        // Verified against another tree (one leaf differs): nothing written.
        let mut u = update(&all, 10, 20);
        u.leaves[3] = leaf_hash(b"another entry");
        let err = r.commit(&u).unwrap_err();
        assert!(matches!(err, ReplicaError::Inconsistent(_)), "{err}");
        // A range that skips entries, or restarts before the tree's end: refused too.
        for (from, to) in [(11, 20), (5, 20)] {
            let err = r.commit(&update(&all, from, to)).unwrap_err();
            assert!(matches!(err, ReplicaError::Inconsistent(_)), "{err}");
        }
        let loaded = r.load().unwrap();
        assert_eq!((loaded.applied.seq, loaded.tree.size()), (10, 10));
        // A note to store must be of the applied entries: the tree root there, or (legacy)
        // the applied entry's hash; nothing else is written.
        let cp = |size: u64, root: Hash| dgsp_core::checkpoint::Checkpoint {
            origin: "o".into(),
            size,
            root,
            time_unix_ms: Some(2),
            snapshot: None,
        };
        r.confirm("merkle", &cp(10, root(&all[..10]))).unwrap();
        r.confirm("legacy", &cp(10, all[9])).unwrap();
        for (size, root) in [(10, root(&all[..9])), (10, all[8]), (9, root(&all[..9]))] {
            let err = r.confirm("wrong", &cp(size, root)).unwrap_err();
            assert!(matches!(err, ReplicaError::Inconsistent(_)), "{err}");
        }
        assert_eq!(r.load().unwrap().checkpoint.as_deref(), Some("legacy"));
        assert!(r.hash_at(11).unwrap().is_none());
        r.commit(&update(&all, 10, 40)).unwrap();
        assert_eq!(r.root_at(40).unwrap(), root(&all));
    }

    #[test]
    fn a_replica_from_before_the_tree_is_refused_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let r = Replica::open(dir.path()).unwrap();
        // Empty, with or without the size: an empty tree.
        assert_eq!(r.load().unwrap().tree.size(), 0);
        r.commit(&update(&leaves(3), 0, 3)).unwrap();
        // What a gateway before the tree left: the position, no tree.
        r.db.delete_cf(r.cf("meta"), TREE_SIZE).unwrap();
        let err = r.load().err().unwrap();
        assert!(
            matches!(err, ReplicaError::BeforeTree { applied: 3, .. }),
            "{err}"
        );
        let text = err.to_string();
        assert!(text.contains(&dir.path().display().to_string()), "{text}");
        assert!(
            text.contains("replays the registry's feed from entry 1"),
            "{text}"
        );
        // A tree of another size than the position is corrupt, not migrated.
        r.db.put_cf(r.cf("meta"), TREE_SIZE, 2u64.to_be_bytes())
            .unwrap();
        assert!(matches!(r.load().err().unwrap(), ReplicaError::Corrupt(_)));
    }
}
