//! The hash tiles of one signed tree size, each verified before it is used.
//!
//! [`TileTree::open`] reads the right-edge (partial) hash tile of every level at the
//! checkpoint's size; together they give the tree's root, which must be the one the
//! checkpoint signs ([`Fault::RootMismatch`]), so every hash they hold is verified. A full
//! tile read later ([`TileTree::tile`]) must hash to the node its parent tile holds
//! ([`Fault::TileMismatch`]), the parent verified first, up to a verified tile. An entry
//! bundle's leaves must be the verified level-0 tile's hashes ([`TileTree::entries`]).
//! So everything taken from the tiles is bound to the signed root, whatever served it.

use std::collections::HashMap;
use std::sync::Arc;

use dgsp_wire::log::{Entry, Hash};
use dgsp_wire::merkle::{self, leaf_hash, Frontier, ProofError};
use dgsp_wire::tiles::{decode_bundle, decode_hash_tile, Tile, TileNodes, TILE_WIDTH};

use super::client::TileClient;
use crate::follower::size::parsed_size;
use crate::follower::Fault;

/// Largest entry bundle read: 256 entries of at most 65535 bytes, each with its length.
pub const MAX_BUNDLE_BYTES: usize = 256 * (2 + 65535);

/// Nodes at tile level `level` of a tree of `size` leaves.
fn nodes_at(size: u64, level: u8) -> u64 {
    size.checked_shr(u32::from(level) * 8).unwrap_or(0)
}

/// Hash tile `index` at tile level `level` of a tree of `size` leaves, full or partial;
/// `None` if that tree has no such tile.
pub fn tile_of(size: u64, level: u8, index: u64) -> Option<Tile> {
    let n = nodes_at(size, level);
    let full = n / TILE_WIDTH;
    let width = if index < full {
        TILE_WIDTH as u16
    } else if index == full && !n.is_multiple_of(TILE_WIDTH) {
        (n % TILE_WIDTH) as u16
    } else {
        return None;
    };
    Some(Tile {
        level: Some(level),
        index,
        width,
    })
}

/// Verified hash tiles of the tree of `size` entries.
pub struct TileTree {
    size: u64,
    tiles: HashMap<(u8, u64), Arc<Vec<Hash>>>,
}

impl TileTree {
    /// Reads the right-edge tiles of a tree of `size` entries and checks that they give
    /// `root`.
    pub async fn open(client: &TileClient, size: u64, root: &Hash) -> Result<Self, Fault> {
        let mut tree = TileTree {
            size,
            tiles: HashMap::new(),
        };
        let mut level = 0u8;
        while nodes_at(size, level) > 0 {
            let n = nodes_at(size, level);
            if !n.is_multiple_of(TILE_WIDTH) {
                let t = tile_of(size, level, n / TILE_WIDTH).expect("the partial tile");
                let hashes = fetch_hash_tile(client, &t).await?;
                tree.tiles.insert((level, t.index), Arc::new(hashes));
            }
            level += 1;
        }
        let edge = tree.frontier_at(size)?;
        if edge.root() != *root {
            return Err(Fault::RootMismatch {
                size,
                detail: format!(
                    "the right-edge hash tiles give {}, the checkpoint signs {}",
                    hex::encode(edge.root()),
                    hex::encode(root)
                ),
            });
        }
        Ok(tree)
    }

    /// The tree size these tiles are of.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// A verified node at tile level `level`, index `index` (its tile already held).
    fn node(&self, level: u8, index: u64) -> Result<Hash, ProofError> {
        self.tiles
            .get(&(level, index / TILE_WIDTH))
            .and_then(|t| t.get((index % TILE_WIDTH) as usize))
            .copied()
            .ok_or_else(|| ProofError::Missing {
                level: level.saturating_mul(8),
                index,
                reason: "its hash tile is not read".into(),
            })
    }

    /// Hash tile `index` of tile level `level`, verified: read (with every parent not yet
    /// held) and checked against its parent's node, top down.
    pub async fn tile(
        &mut self,
        client: &TileClient,
        level: u8,
        index: u64,
    ) -> Result<Arc<Vec<Hash>>, Fault> {
        let mut chain = Vec::new();
        let (mut l, mut i) = (level, index);
        while !self.tiles.contains_key(&(l, i)) {
            let t = tile_of(self.size, l, i).ok_or_else(|| Fault::BadTile {
                path: format!("tile/{l}/{i}"),
                detail: format!("not a tile of a tree of {} entries", self.size),
            })?;
            // Every partial tile was read by `open`: a missing one is full.
            chain.push(t);
            l += 1;
            i /= TILE_WIDTH;
        }
        for t in chain.into_iter().rev() {
            let hashes = fetch_hash_tile(client, &t).await?;
            let l = t.level.expect("a hash tile");
            let parent = self.node(l + 1, t.index).map_err(|e| Fault::BadTile {
                path: t.path(),
                detail: e.to_string(),
            })?;
            // A full tile's root is its parent node one tile level up.
            let got = merkle::root(&hashes);
            if got != parent {
                return Err(Fault::TileMismatch {
                    path: t.path(),
                    detail: format!(
                        "its hashes give {}, the verified tile above holds {}",
                        hex::encode(got),
                        hex::encode(parent)
                    ),
                });
            }
            self.tiles.insert((l, t.index), Arc::new(hashes));
        }
        Ok(self.tiles[&(level, index)].clone())
    }

    /// Reads (and verifies) the tiles holding the right edge of the tree's first `size`
    /// entries.
    pub async fn read_edge(&mut self, client: &TileClient, size: u64) -> Result<(), Fault> {
        let mut level = 0u8;
        while nodes_at(size, level) > 0 {
            let n = nodes_at(size, level);
            if !n.is_multiple_of(TILE_WIDTH) {
                self.tile(client, level, n / TILE_WIDTH).await?;
            }
            level += 1;
        }
        Ok(())
    }

    /// The right edge of the first `size` entries (its tiles read: [`TileTree::read_edge`]).
    pub fn frontier_at(&self, size: u64) -> Result<Frontier, Fault> {
        Frontier::at(&TileNodes(|l, i| self.node(l, i)), size).map_err(|e| Fault::RootMismatch {
            size,
            detail: format!("the tree's edge at {size} entries: {e}"),
        })
    }

    /// The tile-level hashes of the right-edge tiles at `size` (what appending to a tree of
    /// `size` entries reads; its tiles read: [`TileTree::read_edge`]).
    pub fn edge_nodes(&self, size: u64) -> Result<Vec<(u8, u64, Hash)>, Fault> {
        let mut out = Vec::new();
        let mut level = 0u8;
        while nodes_at(size, level) > 0 {
            let n = nodes_at(size, level);
            for j in n - n % TILE_WIDTH..n {
                let h = self.node(level, j).map_err(|e| Fault::RootMismatch {
                    size,
                    detail: e.to_string(),
                })?;
                out.push((level, j, h));
            }
            level += 1;
        }
        Ok(out)
    }

    /// Entries `from..=to` (seqs, within the tree) from their bundles, each bundle's leaves
    /// checked against the verified level-0 hash tile first, as many as fit in `max_bytes`
    /// by their parsed size ([`parsed_size`]): the entries end before `to` when the next
    /// one would pass it (an entry that alone passes it is `pending_limit`).
    pub async fn entries(
        &mut self,
        client: &TileClient,
        from: u64,
        to: u64,
        max_bytes: usize,
    ) -> Result<Vec<Entry>, Fault> {
        if from == 0 || from > to || to > self.size {
            return Err(Fault::BadTile {
                path: "tile/entries".into(),
                detail: format!(
                    "entries {from}..={to} are not in a tree of {} entries",
                    self.size
                ),
            });
        }
        let mut out = Vec::new();
        let mut held = 0usize;
        for k in (from - 1) / TILE_WIDTH..=(to - 1) / TILE_WIDTH {
            let hashes = self.tile(client, 0, k).await?;
            let bundle = Tile {
                level: None,
                index: k,
                width: hashes.len() as u16,
            };
            let path = bundle.path();
            let bytes = client.get(&path, MAX_BUNDLE_BYTES).await?.bytes;
            let items = decode_bundle(&bytes, hashes.len()).map_err(|e| Fault::BadTile {
                path: path.clone(),
                detail: e.to_string(),
            })?;
            for (j, item) in items.iter().enumerate() {
                let seq = k * TILE_WIDTH + j as u64 + 1;
                if leaf_hash(item) != hashes[j] {
                    return Err(Fault::TileMismatch {
                        path,
                        detail: format!("entry {seq}'s leaf is not the one its hash tile holds"),
                    });
                }
                if seq < from || seq > to {
                    continue;
                }
                let e: Entry = serde_json::from_slice(item).map_err(|e| Fault::MalformedEntry {
                    seq,
                    detail: format!("in {path}: {e}"),
                })?;
                if e.seq != seq {
                    return Err(Fault::MalformedEntry {
                        seq,
                        detail: format!("in {path}, it says it is entry {}", e.seq),
                    });
                }
                let size = parsed_size(&e);
                if held.saturating_add(size) > max_bytes {
                    if out.is_empty() {
                        return Err(Fault::PendingLimit(format!(
                            "{size} bytes of entry {seq} parsed, over the {max_bytes} a step holds (--max-pending-bytes)"
                        )));
                    }
                    return Ok(out);
                }
                held += size;
                out.push(e);
            }
        }
        Ok(out)
    }

    /// Lets go of the full level-0 hash tiles of entries before entry `seq` (they are read
    /// again, and verified again, if asked for): what a follower applying many entries in
    /// steps holds stays bounded.
    pub fn forget_before(&mut self, seq: u64) {
        let keep_from = seq.saturating_sub(1) / TILE_WIDTH;
        self.tiles.retain(|&(level, index), tile| {
            level != 0 || index >= keep_from || tile.len() as u64 != TILE_WIDTH
        });
    }
}

/// A hash tile read and checked for length.
async fn fetch_hash_tile(client: &TileClient, t: &Tile) -> Result<Vec<Hash>, Fault> {
    let path = t.path();
    let width = usize::from(t.width);
    let bytes = client.get(&path, 32 * width).await?.bytes;
    decode_hash_tile(&bytes, width).ok_or_else(|| Fault::BadTile {
        path,
        detail: format!("{} bytes, not {} hashes", bytes.len(), width),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_of_a_size() {
        assert_eq!(tile_of(5, 0, 0).unwrap().path(), "tile/0/000.p/5");
        assert_eq!(tile_of(256, 0, 0).unwrap().path(), "tile/0/000");
        assert_eq!(tile_of(256, 1, 0).unwrap().path(), "tile/1/000.p/1");
        assert!(tile_of(256, 0, 1).is_none());
        assert!(tile_of(255, 1, 0).is_none());
        let t = tile_of(70_000, 0, 273).unwrap();
        assert_eq!((t.index, t.width), (273, 112));
    }
}
