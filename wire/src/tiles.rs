//! The log as C2SP `tlog-tiles` (<https://c2sp.org/tlog-tiles>): what a tile holds, where it
//! lives, and the exact bytes of an entry.
//!
//! - **Entry bytes**: the canonical JSON ([`crate::log::canonical`]) of the entry as the
//!   public feed serves it (its private part dropped). The tree's leaf is
//!   `SHA-256(0x00 || entry bytes)` ([`crate::merkle::leaf_hash`]). An entry is at most
//!   [`MAX_ENTRY_BYTES`] (65535) bytes: the bundle's length prefix is a `uint16`.
//! - **Hash tiles** `tile/<L>/<N>[.p/<W>]`: tile `N` of level `L` holds the hashes of the
//!   tree's nodes at level `8 L`, indices `256 N .. 256 N + W` (32 bytes each, in order).
//! - **Entry bundles** `tile/entries/<N>[.p/<W>]`: entries `256 N .. 256 N + W`, each as a
//!   big-endian `uint16` length and the entry bytes.
//! - A tile is full (`W` = 256, no `.p/` suffix) or partial; partial tiles are published only
//!   at checkpointed sizes. Full tiles never change.
//! - `N` is written as 3-digit groups, every group but the last with an `x` prefix:
//!   1234067 is `x001/x234/067`.

use crate::log::{canonical, Entry};
use crate::merkle::{leaf_hash, node_hash, Hash, Nodes, ProofError};

/// Hashes (or entries) in a full tile.
pub const TILE_WIDTH: u64 = 256;
/// The tree levels one tile level spans.
pub const TILE_HEIGHT: u8 = 8;
/// The largest entry a bundle can carry (a `uint16` length).
pub const MAX_ENTRY_BYTES: usize = u16::MAX as usize;

/// The bytes of `entry` in the tree and in the bundles: the canonical JSON of its public form.
pub fn entry_bytes(entry: &Entry) -> Vec<u8> {
    let public = entry.redacted();
    let v = serde_json::to_value(&public).expect("an entry serializes");
    canonical(&v)
}

/// The tree's leaf for `entry`: `SHA-256(0x00 || entry bytes)`.
pub fn leaf_of(entry: &Entry) -> Hash {
    leaf_hash(&entry_bytes(entry))
}

/// The key under which a store keeps the tree node at level `8 * tile_level`, index
/// `index` (the registry's and the gateway's `tree` column families): `[tile level] ||
/// be64(index)`, so that a tile's hashes are adjacent.
pub fn node_key(tile_level: u8, index: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = tile_level;
    k[1..].copy_from_slice(&index.to_be_bytes());
    k
}

/// A stored node hash as read from a store under [`node_key`]: `read` is the store's answer
/// (`Ok(None)`: not stored). Anything but 32 stored bytes is [`ProofError::Missing`], naming
/// why.
pub fn stored_node<B: AsRef<[u8]>, E: std::fmt::Display>(
    tile_level: u8,
    index: u64,
    read: Result<Option<B>, E>,
) -> Result<Hash, ProofError> {
    let missing = |reason: String| ProofError::Missing {
        level: tile_level.saturating_mul(TILE_HEIGHT),
        index,
        reason,
    };
    match read {
        Ok(Some(v)) => <Hash>::try_from(v.as_ref())
            .map_err(|_| missing(format!("a stored hash of {} bytes", v.as_ref().len()))),
        Ok(None) => Err(missing("not stored".into())),
        Err(e) => Err(missing(format!("the store: {e}"))),
    }
}

/// How long a cache may serve the checkpoint without asking again (seconds). Short: a
/// verifier judges freshness by the note's signed time, and a cache adds its age to it.
pub const CHECKPOINT_MAX_AGE_SECS: u32 = 2;
/// `Cache-Control` of the checkpoint notes (`checkpoint`, `checkpoint.witnessed`): fresh
/// for [`CHECKPOINT_MAX_AGE_SECS`].
pub const CHECKPOINT_CACHE_CONTROL: &str = "public, max-age=2";
/// `Cache-Control` of every tile (hash tiles, entry bundles, full or partial) and snapshot
/// bundle: published once, at a checkpointed size, its bytes never change.
pub const TILE_CACHE_CONTROL: &str = "public, max-age=31536000, immutable";
/// `Cache-Control` of everything else in a tile store: the journal and the lease under
/// `private/` (never to be served, let alone cached), and any key not named above.
pub const PRIVATE_CACHE_CONTROL: &str = "no-store";

/// The `Cache-Control` of the object at `key` (relative to the log's prefix), the one
/// definition for the registry's `/v1/log/` and for what its tile mirror writes to S3:
/// [`CHECKPOINT_CACHE_CONTROL`] for `checkpoint` and `checkpoint.witnessed`,
/// [`TILE_CACHE_CONTROL`] under `tile/` and `snapshot/`, [`PRIVATE_CACHE_CONTROL`] for the
/// rest (`private/journal/...`, `private/lease`, unknown keys: nothing unknown is cached).
pub fn cache_control(key: &str) -> &'static str {
    match key {
        "checkpoint" | "checkpoint.witnessed" => CHECKPOINT_CACHE_CONTROL,
        _ if key.starts_with("tile/") || key.starts_with("snapshot/") => TILE_CACHE_CONTROL,
        _ => PRIVATE_CACHE_CONTROL,
    }
}

/// One tile's place: level (`None` for an entry bundle), index and width (1..=256).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tile {
    /// Tile level (hash tiles), or `None` for an entry bundle.
    pub level: Option<u8>,
    /// Tile index at that level.
    pub index: u64,
    /// Number of hashes (or entries) it holds: 256 when full.
    pub width: u16,
}

/// A tile path that is not one.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("not a tile path: {0}")]
pub struct BadPath(pub String);

impl Tile {
    /// Whether it is full.
    pub fn is_full(&self) -> bool {
        u64::from(self.width) == TILE_WIDTH
    }

    /// Its path under the log's prefix, e.g. `tile/0/x001/234.p/5`, `tile/entries/000`.
    pub fn path(&self) -> String {
        let level = match self.level {
            Some(l) => l.to_string(),
            None => "entries".to_owned(),
        };
        let mut p = format!("tile/{level}/{}", encode_index(self.index));
        if !self.is_full() {
            p.push_str(&format!(".p/{}", self.width));
        }
        p
    }

    /// Parses a path made by [`Tile::path`] (exactly: no other spelling is accepted, so one
    /// tile has one path).
    pub fn parse(path: &str) -> Result<Tile, BadPath> {
        let bad = || BadPath(path.chars().take(200).collect());
        let rest = path.strip_prefix("tile/").ok_or_else(bad)?;
        let (level, rest) = rest.split_once('/').ok_or_else(bad)?;
        let level = if level == "entries" {
            None
        } else {
            let l: u8 = level.parse().map_err(|_| bad())?;
            if l.to_string() != level || l > 63 {
                return Err(bad());
            }
            Some(l)
        };
        let (index_part, width) = match rest.split_once(".p/") {
            Some((i, w)) => {
                let width: u16 = w.parse().map_err(|_| bad())?;
                if width == 0 || u64::from(width) >= TILE_WIDTH || width.to_string() != w {
                    return Err(bad());
                }
                (i, width)
            }
            None => (rest, TILE_WIDTH as u16),
        };
        let index = decode_index(index_part).ok_or_else(bad)?;
        let tile = Tile {
            level,
            index,
            width,
        };
        if tile.path() != path {
            return Err(bad());
        }
        Ok(tile)
    }

    /// The number of entries a tile's contents span: it exists in every tree of at least that
    /// many entries. `None` if that is beyond any tree.
    pub fn extent(&self) -> Option<u64> {
        let nodes = self
            .index
            .checked_mul(TILE_WIDTH)?
            .checked_add(u64::from(self.width))?;
        let shift = u32::from(self.level.unwrap_or(0)) * u32::from(TILE_HEIGHT);
        let leaves = nodes.checked_shl(shift)?;
        (leaves >> shift == nodes).then_some(leaves)
    }

    /// The tree level of the hashes a hash tile holds (`8 L`).
    pub fn tree_level(&self) -> Option<u8> {
        self.level.map(|l| l * TILE_HEIGHT)
    }
}

/// `N` as 3-digit groups, `x`-prefixed but the last.
pub fn encode_index(mut n: u64) -> String {
    let mut groups = vec![format!("{:03}", n % 1000)];
    n /= 1000;
    while n > 0 {
        groups.push(format!("x{:03}", n % 1000));
        n /= 1000;
    }
    groups.reverse();
    groups.join("/")
}

fn decode_index(s: &str) -> Option<u64> {
    let parts: Vec<&str> = s.split('/').collect();
    let (last, groups) = parts.split_last()?;
    let mut n: u64 = 0;
    for g in groups {
        let digits = g.strip_prefix('x')?;
        n = n.checked_mul(1000)?.checked_add(three_digits(digits)?)?;
    }
    n.checked_mul(1000)?.checked_add(three_digits(last)?)
}

fn three_digits(s: &str) -> Option<u64> {
    (s.len() == 3 && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
}

/// Every tile of a tree of `size` entries (hash tiles of every level, and entry bundles):
/// full tiles and, at each level, the one partial tile if any. `from_size` limits it to the
/// tiles that are new or changed since a tree of `from_size` entries.
pub fn tiles_for(from_size: u64, size: u64) -> Vec<Tile> {
    let mut out = Vec::new();
    let mut level = 0u8;
    loop {
        let shift = u32::from(level) * u32::from(TILE_HEIGHT);
        let nodes = size.checked_shr(shift).unwrap_or(0);
        if nodes == 0 {
            break;
        }
        let old_nodes = from_size.checked_shr(shift).unwrap_or(0);
        let first = old_nodes / TILE_WIDTH;
        let full = nodes / TILE_WIDTH;
        for index in first..full {
            let tile = |level| Tile {
                level,
                index,
                width: TILE_WIDTH as u16,
            };
            out.push(tile(Some(level)));
            if level == 0 {
                out.push(tile(None));
            }
        }
        let rem = (nodes % TILE_WIDTH) as u16;
        if rem > 0 && nodes > old_nodes {
            let tile = |level| Tile {
                level,
                index: full,
                width: rem,
            };
            out.push(tile(Some(level)));
            if level == 0 {
                out.push(tile(None));
            }
        }
        level += 1;
    }
    out
}

/// An entry bundle from entry bytes (each at most [`MAX_ENTRY_BYTES`]).
pub fn encode_bundle<'a>(
    entries: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<u8>, BundleError> {
    let mut out = Vec::new();
    for (i, e) in entries.into_iter().enumerate() {
        let len = u16::try_from(e.len()).map_err(|_| BundleError::TooLong {
            position: i,
            len: e.len(),
        })?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(e);
    }
    Ok(out)
}

/// Why a bundle is malformed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BundleError {
    /// An entry is too long for a bundle.
    #[error("entry {position} of the bundle is {len} bytes, over the 65535 a bundle can carry")]
    TooLong {
        /// position in the bundle
        position: usize,
        /// its length
        len: usize,
    },
    /// The bundle ends inside an entry.
    #[error("the bundle is truncated inside entry {0}")]
    Truncated(usize),
    /// It holds a different number of entries than its path says.
    #[error("the bundle holds {found} entries where its path says {expected}")]
    Count {
        /// by the path
        expected: usize,
        /// found
        found: usize,
    },
}

/// The entries of a bundle that must hold exactly `width` of them.
pub fn decode_bundle(bytes: &[u8], width: usize) -> Result<Vec<&[u8]>, BundleError> {
    let mut out = Vec::with_capacity(width.min(256));
    let mut rest = bytes;
    while !rest.is_empty() {
        if out.len() == width {
            return Err(BundleError::Count {
                expected: width,
                found: width + 1,
            });
        }
        let [a, b, tail @ ..] = rest else {
            return Err(BundleError::Truncated(out.len()));
        };
        let len = usize::from(u16::from_be_bytes([*a, *b]));
        if tail.len() < len {
            return Err(BundleError::Truncated(out.len()));
        }
        out.push(&tail[..len]);
        rest = &tail[len..];
    }
    if out.len() != width {
        return Err(BundleError::Count {
            expected: width,
            found: out.len(),
        });
    }
    Ok(out)
}

/// The hashes of a hash tile, checked for length (`32 * width` bytes).
pub fn decode_hash_tile(bytes: &[u8], width: usize) -> Option<Vec<Hash>> {
    if bytes.len() != 32 * width {
        return None;
    }
    Some(
        bytes
            .chunks_exact(32)
            .map(|c| c.try_into().expect("32 bytes"))
            .collect(),
    )
}

/// A [`Nodes`] source over stored tile-level hashes: `get(L, i)` is the tree node at level
/// `8 L`, index `i` (what hash tile `L` holds). Nodes between tile levels are computed from
/// the (at most 128) tile hashes under them.
pub struct TileNodes<F>(pub F);

impl<F> Nodes for TileNodes<F>
where
    F: Fn(u8, u64) -> Result<Hash, ProofError>,
{
    fn node(&self, level: u8, index: u64) -> Result<Hash, ProofError> {
        let tile_level = level / TILE_HEIGHT;
        let below = level % TILE_HEIGHT;
        if below == 0 {
            return (self.0)(tile_level, index);
        }
        let count = 1u64 << below;
        let first = index << below;
        let mut row = Vec::with_capacity(count as usize);
        for i in 0..count {
            row.push((self.0)(tile_level, first + i)?);
        }
        while row.len() > 1 {
            row = row.chunks(2).map(|p| node_hash(&p[0], &p[1])).collect();
        }
        Ok(row[0])
    }
}

/// The tile-level hashes completed by appending `new_leaves` to a tree of `old_size` leaves:
/// `(tile level, index, hash)`, the leaves themselves first (level 0). `get` reads stored
/// tile-level hashes of the old tree; the hashes made here are consulted first.
pub fn append_hashes(
    old_size: u64,
    new_leaves: &[Hash],
    get: impl Fn(u8, u64) -> Result<Hash, ProofError>,
) -> Result<Vec<(u8, u64, Hash)>, ProofError> {
    use std::collections::HashMap;
    let mut made: HashMap<(u8, u64), Hash> = HashMap::new();
    let mut out = Vec::new();
    for (i, leaf) in new_leaves.iter().enumerate() {
        let idx = old_size + i as u64;
        made.insert((0, idx), *leaf);
        out.push((0u8, idx, *leaf));
        let mut level = 0u8;
        let mut n = idx + 1; // number of nodes at this tile level after the append
        while n.is_multiple_of(TILE_WIDTH) {
            let parent = n / TILE_WIDTH - 1;
            let mut row = Vec::with_capacity(TILE_WIDTH as usize);
            for j in parent * TILE_WIDTH..n {
                row.push(match made.get(&(level, j)) {
                    Some(h) => *h,
                    None => get(level, j)?,
                });
            }
            while row.len() > 1 {
                row = row.chunks(2).map(|p| node_hash(&p[0], &p[1])).collect();
            }
            level += 1;
            made.insert((level, parent), row[0]);
            out.push((level, parent, row[0]));
            n = parent + 1;
        }
    }
    Ok(out)
}

/// An entry kind of a parameter set that cannot fit an entry bundle.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("a `{kind}` entry of a {params} group can be {bytes} bytes, over the {MAX_ENTRY_BYTES} an entry bundle carries")]
pub struct TooLarge {
    /// The parameter set's name.
    pub params: &'static str,
    /// The entry kind.
    pub kind: &'static str,
    /// Its largest size in bytes.
    pub bytes: usize,
}

/// Whether every entry a group of `params` can write fits an entry bundle, so that its log
/// can be served as tiles. Every kind but three is small whatever the set (usernames and
/// counters, or revocations in parts: [`crate::events::Event::revocation`]); the three that
/// carry a SPHINCS+ signature are measured here at their largest (largest seq, time, size,
/// counters; signatures of their full length): `signature_opened`, `snapshot_published`
/// ([`crate::snapshot::snapshot_entry_json`]) and `checkpoint`. The sets with the largest
/// signatures (the 256f ones) do not fit.
pub fn check_params(params: dgsp_core::ParamSet) -> Result<(), TooLarge> {
    use crate::events::Event;
    use base64::Engine;
    use dgsp_core::checkpoint::{note, Checkpoint, SnapshotRef};
    use dgsp_core::revocation::{SignedSnapshot, SnapshotRecord};
    let b64 = |n: usize| base64::engine::general_purpose::STANDARD.encode(vec![0u8; n]);
    let hex = |n: usize| "0".repeat(2 * n);
    let spx = params.spx_sig_len();
    let record = SnapshotRecord {
        group: [0; 32],
        number: u64::MAX,
        log_seq: u64::MAX,
        count: u64::MAX,
        root: [0; 32],
        prev_hash: [0; 32],
        time_unix_ms: u64::MAX,
    };
    let snapshot = SignedSnapshot {
        record,
        signature: vec![0; spx],
    };
    let cp = Checkpoint {
        origin: format!("dgsp/{}", hex(16)),
        size: u64::MAX,
        root: [0; 32],
        time_unix_ms: Some(u64::MAX),
        snapshot: Some(SnapshotRef {
            number: u64::MAX,
            hash: [0; 32],
        }),
    };
    let largest = [
        Event::SignatureOpened {
            signature: b64(dgsp_core::Signature::encoded_len(params)),
            message_digest: hex(32),
            digest: Some(hex(params.n())),
            id: u64::MAX,
            pi: hex(params.n()),
        },
        Event::SnapshotPublished {
            snapshot: crate::snapshot::snapshot_entry_json(&snapshot),
        },
        Event::Checkpoint {
            size: u64::MAX,
            head: hex(32),
            note: note(&cp, &[0; 4], &vec![0; spx]),
        },
    ];
    for event in &largest {
        let e = Entry::seal_with_salt(u64::MAX, u64::MAX, event, &[0xff; 32], [0; 16]);
        let bytes = entry_bytes(&e).len();
        if bytes > MAX_ENTRY_BYTES {
            return Err(TooLarge {
                params: params.name(),
                kind: event.kind(),
                bytes,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle::{leaf_hash, root, root_at, Leaves};
    use std::collections::HashMap;

    #[test]
    fn cache_control_by_key() {
        assert_eq!(
            CHECKPOINT_CACHE_CONTROL,
            format!("public, max-age={CHECKPOINT_MAX_AGE_SECS}")
        );
        for (key, want) in [
            ("checkpoint", CHECKPOINT_CACHE_CONTROL),
            ("checkpoint.witnessed", CHECKPOINT_CACHE_CONTROL),
            ("tile/0/x001/234.p/5", TILE_CACHE_CONTROL),
            ("tile/entries/000", TILE_CACHE_CONTROL),
            ("snapshot/3", TILE_CACHE_CONTROL),
            ("private/lease", PRIVATE_CACHE_CONTROL),
            (
                "private/journal/00000000000000000001",
                PRIVATE_CACHE_CONTROL,
            ),
            ("checkpoint2", PRIVATE_CACHE_CONTROL),
            ("tiles", PRIVATE_CACHE_CONTROL),
        ] {
            assert_eq!(cache_control(key), want, "{key}");
        }
    }

    #[test]
    fn paths_round_trip_and_are_unique() {
        let cases = [
            (Some(0), 0, 256, "tile/0/000"),
            (Some(1), 1234067, 256, "tile/1/x001/x234/067"),
            (None, 5, 17, "tile/entries/005.p/17"),
            (Some(2), 1000, 3, "tile/2/x001/000.p/3"),
        ];
        for (level, index, width, path) in cases {
            let t = Tile {
                level,
                index,
                width,
            };
            assert_eq!(t.path(), path);
            assert_eq!(Tile::parse(path).unwrap(), t);
        }
        for bad in [
            "tile/0/1",
            "tile/0/x000",
            "tile/00/000",
            "tile/0/001.p/256",
            "tile/0/001.p/0",
            "tile/0/001.p/05",
            "tile/0/x000/001",
            "tile/0/../001",
            "tile/entries/1234",
            "tiles/0/000",
        ] {
            assert!(Tile::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_set_but_the_256f_ones_fits_a_bundle() {
        for params in dgsp_core::ParamSet::ALL {
            let fits = check_params(params);
            let is_256f = params.n() == 32 && params.is_fast();
            assert_eq!(fits.is_err(), is_256f, "{}: {fits:?}", params.name());
            if let Err(e) = fits {
                assert!(e.bytes > MAX_ENTRY_BYTES, "{e}");
            }
        }
    }

    #[test]
    fn extents() {
        let t = |level, index, width| Tile {
            level,
            index,
            width,
        };
        assert_eq!(t(None, 0, 5).extent(), Some(5));
        assert_eq!(t(Some(0), 2, 256).extent(), Some(768));
        assert_eq!(t(Some(1), 0, 1).extent(), Some(256));
        assert_eq!(t(Some(2), 1, 3).extent(), Some((256 + 3) << 16));
        assert_eq!(t(Some(7), u64::MAX / 256, 256).extent(), None);
        for tile in tiles_for(0, 70_000) {
            assert!(tile.extent().unwrap() <= 70_000, "{}", tile.path());
        }
    }

    #[test]
    fn tiles_for_sizes() {
        let paths = |a, b| tiles_for(a, b).iter().map(Tile::path).collect::<Vec<_>>();
        assert!(paths(0, 0).is_empty());
        assert_eq!(paths(0, 5), ["tile/0/000.p/5", "tile/entries/000.p/5"]);
        assert_eq!(
            paths(0, 256),
            ["tile/0/000", "tile/entries/000", "tile/1/000.p/1"]
        );
        assert_eq!(
            paths(256, 513),
            [
                "tile/0/001",
                "tile/entries/001",
                "tile/0/002.p/1",
                "tile/entries/002.p/1",
                "tile/1/000.p/2"
            ]
        );
        assert!(paths(513, 513).is_empty());
    }

    #[test]
    fn bundles_round_trip_and_refuse_damage() {
        let entries: Vec<Vec<u8>> = vec![b"a".to_vec(), vec![], vec![7; 300]];
        let b = encode_bundle(entries.iter().map(Vec::as_slice)).unwrap();
        let back = decode_bundle(&b, 3).unwrap();
        assert_eq!(back, entries.iter().map(Vec::as_slice).collect::<Vec<_>>());
        assert_eq!(
            decode_bundle(&b[..b.len() - 1], 3),
            Err(BundleError::Truncated(2))
        );
        assert!(decode_bundle(&b, 2).is_err());
        assert!(decode_bundle(&b, 4).is_err());
        let big = vec![0u8; MAX_ENTRY_BYTES + 1];
        assert!(encode_bundle([big.as_slice()]).is_err());
    }

    #[test]
    fn stored_tile_hashes_give_the_same_tree() {
        let leaves: Vec<Hash> = (0..70_000u32)
            .map(|i| leaf_hash(&i.to_be_bytes()))
            .collect();
        let mut stored: HashMap<(u8, u64), Hash> = HashMap::new();
        let mut size = 0u64;
        for chunk in [1usize, 254, 1, 300, 65_000, 4_444] {
            let new = &leaves[size as usize..size as usize + chunk];
            let made = append_hashes(size, new, |l, i| {
                stored.get(&(l, i)).copied().ok_or(ProofError::Missing {
                    level: l,
                    index: i,
                    reason: "not stored".into(),
                })
            })
            .unwrap();
            for (l, i, h) in made {
                assert!(stored.insert((l, i), h).is_none(), "written once");
            }
            size += chunk as u64;
            let src = TileNodes(|l: u8, i: u64| {
                stored.get(&(l, i)).copied().ok_or(ProofError::Missing {
                    level: l,
                    index: i,
                    reason: "not stored".into(),
                })
            });
            assert_eq!(root_at(&src, size).unwrap(), root(&leaves[..size as usize]));
            assert_eq!(
                root_at(&src, size.saturating_sub(3)).unwrap(),
                root_at(&Leaves(&leaves), size.saturating_sub(3)).unwrap()
            );
        }
        assert!(stored.contains_key(&(2, 0)), "a level-2 tile hash at 65536");
    }
}
