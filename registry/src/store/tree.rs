//! The log's Merkle tree as a projection (`tree` column family): the tile-level hashes of
//! C2SP tlog-tiles (tree levels 0, 8, 16, ...), keyed `[tile level][be64 index]`, and the
//! tree's size (`views` key `tree_size`), written in the same batch as the entries.
//!
//! Roots and proofs at any size come from these hashes ([`dgsp_wire::tiles::TileNodes`]);
//! tiles and bundles are read straight from them and from the log. A database written
//! before the tree existed is migrated on open ([`Store::migrate_tree`]): resumable,
//! chunk by chunk, each chunk synced with the tree's new size.

use rocksdb::WriteBatch;

use dgsp_wire::log::{Entry, Hash};
use dgsp_wire::merkle::{self, ProofError};
use dgsp_wire::tiles::{self, entry_bytes, leaf_of, node_key, TileNodes, TILE_WIDTH};

use super::{be, corrupt, unbe, Error, Store};

/// `views` key: be64 number of entries the tree holds.
pub(super) const TREE_SIZE: &[u8] = b"tree_size";
/// `meta` key: how far the tile mirror got: be64 size, then the note it published.
const TILES_PUBLISHED: &[u8] = b"tiles_published";
/// Entries hashed per synced batch by [`Store::migrate_tree`].
const MIGRATE_CHUNK: usize = 16_384;

impl Store {
    /// Number of entries the tree holds.
    pub fn tree_size(&self) -> Result<u64, Error> {
        Ok(self
            .db
            .get_cf(self.cf("views"), TREE_SIZE)?
            .and_then(|v| unbe(&v))
            .unwrap_or(0))
    }

    /// The stored hash of the tree node at level `8 * tile_level`, index `index`.
    pub fn tree_hash(&self, tile_level: u8, index: u64) -> Result<Hash, ProofError> {
        let read = self.db.get_cf(self.cf("tree"), node_key(tile_level, index));
        tiles::stored_node(tile_level, index, read)
    }

    fn nodes(&self) -> TileNodes<impl Fn(u8, u64) -> Result<Hash, ProofError> + '_> {
        TileNodes(move |l, i| self.tree_hash(l, i))
    }

    fn within_tree(&self, size: u64) -> Result<(), Error> {
        let held = self.tree_size()?;
        if size > held {
            return Err(corrupt(
                "tree",
                format!("asked for a tree of {size} entries; it holds {held}"),
            ));
        }
        Ok(())
    }

    /// The root of the tree of the first `size` entries.
    pub fn tree_root(&self, size: u64) -> Result<Hash, Error> {
        self.within_tree(size)?;
        merkle::root_at(&self.nodes(), size).map_err(|e| corrupt("tree", e))
    }

    /// The inclusion proof of entry `seq` (leaf `seq - 1`) in the tree of `size` entries.
    pub fn inclusion_proof(&self, seq: u64, size: u64) -> Result<Vec<Hash>, Error> {
        self.within_tree(size)?;
        let index = seq
            .checked_sub(1)
            .ok_or_else(|| corrupt("tree", "entries count from 1"))?;
        merkle::inclusion_proof_at(&self.nodes(), index, size).map_err(|e| corrupt("tree", e))
    }

    /// The consistency proof from the tree of `old_size` entries to that of `new_size`.
    pub fn consistency_proof(&self, old_size: u64, new_size: u64) -> Result<Vec<Hash>, Error> {
        self.within_tree(new_size)?;
        merkle::consistency_proof_at(&self.nodes(), old_size, new_size)
            .map_err(|e| corrupt("tree", e))
    }

    /// The bytes of a tile (a hash tile or an entry bundle) of a tree of at least its
    /// extent; the caller checks that the tile is one published at a checkpointed size.
    pub fn tile(&self, tile: &tiles::Tile) -> Result<Vec<u8>, Error> {
        let extent = tile
            .extent()
            .ok_or_else(|| corrupt("tile", "beyond any tree"))?;
        self.within_tree(extent)?;
        let first = tile.index * TILE_WIDTH;
        let width = u64::from(tile.width);
        match tile.level {
            Some(level) => {
                let mut out = Vec::with_capacity(32 * width as usize);
                for i in first..first + width {
                    out.extend_from_slice(
                        &self.tree_hash(level, i).map_err(|e| corrupt("tile", e))?,
                    );
                }
                Ok(out)
            }
            None => {
                let entries = self.entries_after(first, width as usize)?;
                if entries.len() as u64 != width {
                    return Err(corrupt("tile", "the log is shorter than the bundle"));
                }
                let bytes: Vec<Vec<u8>> = entries.iter().map(entry_bytes).collect();
                tiles::encode_bundle(bytes.iter().map(Vec::as_slice))
                    .map_err(|e| corrupt("tile", e))
            }
        }
    }

    /// How far the tile mirror got: the size and note of the last checkpoint whose tiles
    /// and note it published (`crate::mirror`).
    pub fn tiles_published(&self) -> Result<Option<(u64, String)>, Error> {
        let Some(v) = self.db.get_cf(self.cf("meta"), TILES_PUBLISHED)? else {
            return Ok(None);
        };
        let bad = || corrupt("tiles_published", "not a size and a note");
        let size = v.get(..8).and_then(unbe).ok_or_else(bad)?;
        let note = String::from_utf8(v[8..].to_vec()).map_err(|_| bad())?;
        Ok(Some((size, note)))
    }

    /// Records how far the tile mirror got (synced).
    pub fn put_tiles_published(&self, size: u64, note: &str) -> Result<(), Error> {
        let mut v = be(size).to_vec();
        v.extend_from_slice(note.as_bytes());
        let mut batch = WriteBatch::default();
        batch.put_cf(self.cf("meta"), TILES_PUBLISHED, v);
        self.write_synced(batch)
    }

    /// Adds the tree's new hashes for `entries` (which continue the tree) to `batch`, with
    /// the tree's new size.
    pub(super) fn project_tree(
        &self,
        entries: &[Entry],
        batch: &mut WriteBatch,
    ) -> Result<(), Error> {
        let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
            return Ok(());
        };
        let old = self.tree_size()?;
        if first.seq != old + 1 {
            return Err(corrupt(
                "tree",
                format!("it holds {old} entries; entry {} cannot follow", first.seq),
            ));
        }
        let leaves: Vec<Hash> = entries.iter().map(leaf_of).collect();
        let made = tiles::append_hashes(old, &leaves, |l, i| self.tree_hash(l, i))
            .map_err(|e| corrupt("tree", e))?;
        for (l, i, h) in made {
            batch.put_cf(self.cf("tree"), node_key(l, i), h);
        }
        batch.put_cf(self.cf("views"), TREE_SIZE, be(last.seq));
        Ok(())
    }

    /// Brings the tree up to the log's projections (a database written before the tree
    /// existed): entries hashed in synced chunks, each with the tree's new size, so an
    /// interrupted migration resumes. `progress(done, of)` after each chunk. Returns the
    /// number of entries added.
    pub fn migrate_tree(&self, mut progress: impl FnMut(u64, u64)) -> Result<u64, Error> {
        let target = self.position()?;
        let mut done = 0;
        loop {
            let size = self.tree_size()?;
            if size >= target {
                return Ok(done);
            }
            let chunk = self.entries_after(size, MIGRATE_CHUNK.min((target - size) as usize))?;
            if chunk.is_empty() {
                return Err(corrupt(
                    "tree",
                    format!("the log ends at {size} but the projections reflect {target}"),
                ));
            }
            let mut batch = WriteBatch::default();
            self.project_tree(&chunk, &mut batch)?;
            self.write_synced(batch)?;
            done += chunk.len() as u64;
            progress(size + chunk.len() as u64, target);
        }
    }
}
