//! `audit --tiles BASE`: the log read as C2SP tlog-tiles (`docs/format.md`, "Tiles") from a
//! registry's `/v1/log`, any static server or CDN over a published tile directory or bucket,
//! or a local directory.
//!
//! 1. The `checkpoint` note gives the size `N` to read (its signature is checked once entry
//!    1 has given the group key, with the other signatures).
//! 2. Every entry bundle of the tree of `N` entries, in order: each entry goes to the
//!    [`Auditor`] exactly as from the feed (so every rule of the module documentation
//!    applies: chain, openings judged, snapshots, every checkpoint entry's root against the
//!    tree of the entries). A bundle must decode to exactly the entries its path names, each
//!    a log entry at its own position, in its canonical bytes (`tile_bundle`); the first
//!    bundle that does not stops the audit there (the entries after it cannot be placed).
//! 3. Every hash tile of that tree (levels 0 and up) is compared with the hashes recomputed
//!    from the bundles' entry bytes (`tile_hash`: one violation per tile, at the first entry
//!    under the first differing hash; a higher tile differing only above a lower one already
//!    reported is not reported again).
//! 4. The served checkpoint is judged as a checkpoint entry would be: its root against the
//!    tree of the `N` entries read (`checkpoint_mismatch`), its signature and origin
//!    (`checkpoint_signature`), the snapshot it names (`checkpoint_uncovered`); each at
//!    entry `N`, the detail naming "the served checkpoint".
//! 5. Between each two successive checkpoints whose roots matched the tree (the checkpoint
//!    entries, then the served one), the RFC 6962 consistency proof is computed from the
//!    served hash tiles (`dgsp_wire::merkle::consistency_proof_at` over
//!    `dgsp_wire::tiles::TileNodes`) and verified against the two stated roots
//!    (`checkpoint_consistency`), as a witness would: a proof that would read a hash tile
//!    already reported is not computed (`skipped.consistency`).
//!
//! Memory: a few bundles in flight (each at most 256 entries of 65535 bytes), one
//! unfinished tile of hashes per tree level, the checkpoints (size and root) for step 5 and
//! a small cache of hash tiles for it; besides what the [`Auditor`] keeps. Requests: the
//! checkpoint, then for every 256 entries one bundle and one level-0 hash tile (fetched
//! [`AHEAD`] at a time), one tile per 65536 entries at level 1 and so on, and for step 5 the
//! hash tiles the proofs read (a few per checkpoint, cached). HTTP failures are retried with
//! backoff (`--retries`, `--timeout-secs`); one that persists (a missing tile, a server
//! down) ends the audit with a typed error naming the URL.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::PathBuf;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_wire::log::{Entry, Hash};
use dgsp_wire::merkle::{consistency_proof_at, leaf_hash, root, verify_consistency, ProofError};
use dgsp_wire::tiles::{
    decode_bundle, decode_hash_tile, entry_bytes, BundleError, Tile, TileNodes, TILE_HEIGHT,
    TILE_WIDTH,
};
use indicatif::ProgressBar;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use super::auditor::Auditor;
use super::report::{Report, TilesRead};
use super::violation::{Skipped, ViolationKind};
use crate::cli::HttpArgs;
use crate::client::{Client, ClientError};
use crate::error::Error;

/// Bundles (with their level-0 hash tiles) requested ahead of the one being read.
pub const AHEAD: usize = 4;
/// The largest entry bundle: 256 entries of 65535 bytes, each with its 2-byte length.
pub const MAX_BUNDLE: usize = TILE_WIDTH as usize * (2 + u16::MAX as usize);
/// The largest hash tile: 256 hashes.
pub const MAX_HASH_TILE: usize = TILE_WIDTH as usize * 32;
/// The largest checkpoint note read (the largest signature is under 70 KB of base64).
pub const MAX_NOTE: usize = 1 << 20;
/// Hash tiles kept for the consistency proofs.
const CACHE: usize = 64;

/// Where the tiles are: an http(s) base (`checkpoint` and `tile/...` under it) or a local
/// directory (a path, or a `file://` URL).
#[derive(Clone, Debug)]
pub enum TileBase {
    /// An http(s) base URL, read with retries.
    Http(Client),
    /// A directory holding the published layout.
    Dir(PathBuf),
}

impl TileBase {
    /// The base `spec` names: `http://` or `https://` URLs are read over HTTP with `http`'s
    /// timeout and retries; `file://PATH` or a plain path must be a directory.
    pub fn open(spec: &str, http: &HttpArgs) -> Result<TileBase, Error> {
        if spec.starts_with("http://") || spec.starts_with("https://") {
            let client = http.client(spec, None)?.with_max_answer(MAX_BUNDLE);
            return Ok(TileBase::Http(client));
        }
        let path = PathBuf::from(spec.strip_prefix("file://").unwrap_or(spec));
        if !path.is_dir() {
            return Err(Error::arg(
                "--tiles",
                format!(
                    "{spec}: neither an http(s) URL nor a directory (expected the base under which `checkpoint` and `tile/` are published)"
                ),
            ));
        }
        Ok(TileBase::Dir(path))
    }

    /// The base, for messages and the report.
    pub fn describe(&self) -> String {
        match self {
            TileBase::Http(c) => c.base().to_owned(),
            TileBase::Dir(p) => p.display().to_string(),
        }
    }
}

/// A request on its way.
enum Pending {
    Ready(Result<Vec<u8>, Error>),
    Task(JoinHandle<Result<Vec<u8>, ClientError>>),
}

/// Reads objects under the base, counting requests and bytes.
struct Fetcher {
    base: TileBase,
    rt: Handle,
    bytes: u64,
}

impl Fetcher {
    /// Starts reading `path` (at most `cap` bytes).
    fn start(&self, path: String, cap: usize) -> Pending {
        match &self.base {
            TileBase::Http(c) => {
                let c = c.clone();
                Pending::Task(
                    self.rt
                        .spawn(async move { c.get_bytes(&format!("/{path}")).await }),
                )
            }
            TileBase::Dir(dir) => Pending::Ready(read_capped(&dir.join(&path), cap)),
        }
    }

    /// Waits for a request started with [`start`](Self::start).
    fn finish(&mut self, p: Pending, cap: usize, path: &str) -> Result<Vec<u8>, Error> {
        let bytes = match p {
            Pending::Ready(r) => r?,
            Pending::Task(t) => self
                .rt
                .block_on(t)
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?,
        };
        if bytes.len() > cap {
            return Err(Error::Input {
                what: format!("{}/{path}", self.base.describe()),
                reason: format!(
                    "{} bytes, more than such an object can be ({cap})",
                    bytes.len()
                ),
            });
        }
        self.bytes += bytes.len() as u64;
        Ok(bytes)
    }

    fn get(&mut self, path: &str, cap: usize) -> Result<Vec<u8>, Error> {
        let p = self.start(path.to_owned(), cap);
        self.finish(p, cap, path)
    }
}

/// A local file of at most `cap` bytes (a larger one is refused unread).
pub(crate) fn read_capped(path: &std::path::Path, cap: usize) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(cap as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    Ok(bytes)
}

/// The size and root a checkpoint note's body states (its signature is not checked here).
pub fn note_size_root(note: &str) -> Result<(u64, Hash), String> {
    let mut lines = note.lines();
    let _origin = lines.next().ok_or("no origin line")?;
    let size = lines.next().ok_or("no size line")?;
    let size: u64 = size
        .parse()
        .ok()
        .filter(|n: &u64| n.to_string() == size)
        .ok_or_else(|| format!("the size line {size:?} is not a decimal number"))?;
    let root = lines.next().ok_or("no root line")?;
    let root: Hash = B64
        .decode(root)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| format!("the root line {root:?} is not 32 bytes of base64"))?;
    Ok((size, root))
}

/// The first entry (seq) under the node at tile level `level`, index `index`.
fn first_seq(level: u8, index: u64) -> u64 {
    index
        .checked_shl(u32::from(level) * u32::from(TILE_HEIGHT))
        .unwrap_or(u64::MAX)
        .saturating_add(1)
}

/// The hash tiles of a tree, recomputed from its leaves as they arrive and compared with
/// the served ones: one unfinished tile per level.
#[derive(Default)]
pub(crate) struct HashCheck {
    /// Per tile level: the recomputed hashes of its unfinished tile, each with whether a
    /// lower tile under it already differed from what was served.
    acc: Vec<Vec<(Hash, bool)>>,
    /// Per tile level: tiles finished.
    done: Vec<u64>,
    /// Tiles that differed (read no more for proofs).
    pub(crate) bad: BTreeSet<Tile>,
    /// Hash tiles compared.
    pub(crate) compared: u64,
}

impl HashCheck {
    /// Compares `served` (the bytes of `tile`) with `recomputed`; reports the first
    /// difference not explained by a lower tile. Returns whether any hash differs.
    fn compare(
        &mut self,
        tile: Tile,
        recomputed: &[(Hash, bool)],
        served: &[u8],
        out: &mut Auditor,
    ) -> bool {
        self.compared += 1;
        let level = tile.level.unwrap_or(0);
        let base = tile.index * TILE_WIDTH;
        let Some(hashes) = decode_hash_tile(served, recomputed.len()) else {
            self.bad.insert(tile);
            out.source_violation(
                first_seq(level, base),
                ViolationKind::TileHash,
                format!(
                    "hash tile {} is {} bytes, a tile of {} hashes is {}",
                    tile.path(),
                    served.len(),
                    recomputed.len(),
                    32 * recomputed.len()
                ),
            );
            return true;
        };
        let differ: Vec<usize> = (0..hashes.len())
            .filter(|&p| hashes[p] != recomputed[p].0)
            .collect();
        if differ.is_empty() {
            return false;
        }
        self.bad.insert(tile);
        if let Some(&p) = differ.iter().find(|&&p| !recomputed[p].1) {
            let node = base + p as u64;
            let first = first_seq(level, node);
            let last = first_seq(level, node + 1) - 1;
            out.source_violation(
                first,
                ViolationKind::TileHash,
                format!(
                    "hash tile {} differs from the hashes recomputed from the entry bundles at {} of {} positions, first at node {node} of tree level {} (entries {first}..={last}): served {}, recomputed {}",
                    tile.path(),
                    differ.len(),
                    hashes.len(),
                    level * TILE_HEIGHT,
                    hex::encode(hashes[p]),
                    hex::encode(recomputed[p].0),
                ),
            );
        }
        true
    }

    /// The leaves of bundle `index` (its entry bytes' hashes) against the served level-0
    /// tile; a full tile's root goes up to level 1.
    fn level0(
        &mut self,
        index: u64,
        leaves: &[Hash],
        served: &[u8],
        fetch: &mut dyn FnMut(Tile) -> Result<Vec<u8>, Error>,
        out: &mut Auditor,
    ) -> Result<(), Error> {
        let tile = Tile {
            level: Some(0),
            index,
            width: leaves.len() as u16,
        };
        let rec: Vec<(Hash, bool)> = leaves.iter().map(|h| (*h, false)).collect();
        let differs = self.compare(tile, &rec, served, out);
        if tile.is_full() {
            self.up(1, (root(leaves), differs), fetch, out)?;
        }
        Ok(())
    }

    /// Adds a recomputed node at tile level `level`; a full tile is fetched, compared and
    /// its root goes up.
    fn up(
        &mut self,
        level: u8,
        node: (Hash, bool),
        fetch: &mut dyn FnMut(Tile) -> Result<Vec<u8>, Error>,
        out: &mut Auditor,
    ) -> Result<(), Error> {
        let l = usize::from(level);
        if self.acc.len() <= l {
            self.acc.resize(l + 1, Vec::new());
            self.done.resize(l + 1, 0);
        }
        self.acc[l].push(node);
        if self.acc[l].len() as u64 == TILE_WIDTH {
            let tile = Tile {
                level: Some(level),
                index: self.done[l],
                width: TILE_WIDTH as u16,
            };
            let rec = std::mem::take(&mut self.acc[l]);
            self.done[l] += 1;
            let served = fetch(tile)?;
            let differs = self.compare(tile, &rec, &served, out);
            let hashes: Vec<Hash> = rec.iter().map(|(h, _)| *h).collect();
            let tainted = differs || rec.iter().any(|(_, t)| *t);
            self.up(level + 1, (root(&hashes), tainted), fetch, out)?;
        }
        Ok(())
    }

    /// Compares the partial tiles of levels 1 and up (once every leaf was added).
    fn finish(
        &mut self,
        fetch: &mut dyn FnMut(Tile) -> Result<Vec<u8>, Error>,
        out: &mut Auditor,
    ) -> Result<(), Error> {
        for l in 1..self.acc.len() {
            if self.acc[l].is_empty() {
                continue;
            }
            let rec = std::mem::take(&mut self.acc[l]);
            let tile = Tile {
                level: Some(l as u8),
                index: self.done[l],
                width: rec.len() as u16,
            };
            let served = fetch(tile)?;
            self.compare(tile, &rec, &served, out);
        }
        Ok(())
    }
}

/// The hash tile of the tree of `size` entries that holds tile-level node (`level`,
/// `index`): full, or the partial tile of that size.
pub(crate) fn tile_of(level: u8, index: u64, size: u64) -> Tile {
    let nodes = size
        .checked_shr(u32::from(level) * u32::from(TILE_HEIGHT))
        .unwrap_or(0);
    let t = index / TILE_WIDTH;
    let width = if t.saturating_add(1).saturating_mul(TILE_WIDTH) <= nodes {
        TILE_WIDTH
    } else {
        nodes % TILE_WIDTH
    };
    Tile {
        level: Some(level),
        index: t,
        width: width as u16,
    }
}

/// Entry bundle `index` of `width` entries: each entry, checked and pushed to `auditor`;
/// the leaves. `Err((seq, why))` at the first entry that cannot be placed (the entries
/// before it were pushed).
fn read_bundle(
    bytes: &[u8],
    index: u64,
    width: usize,
    auditor: &mut Auditor,
) -> Result<Vec<Hash>, (u64, String)> {
    let path = Tile {
        level: None,
        index,
        width: width as u16,
    }
    .path();
    let first = index * TILE_WIDTH + 1;
    let parts = decode_bundle(bytes, width).map_err(|e| {
        let at = match e {
            BundleError::Truncated(i) => first + i as u64,
            _ => first,
        };
        (at, format!("bundle {path} ({} bytes): {e}", bytes.len()))
    })?;
    let mut leaves = Vec::with_capacity(width);
    let mut noncanonical = None;
    for (i, raw) in parts.iter().enumerate() {
        let seq = first + i as u64;
        let e: Entry = serde_json::from_slice(raw).map_err(|e| {
            (
                seq,
                format!("bundle {path}: position {i} is not a log entry ({e})"),
            )
        })?;
        if e.seq != seq {
            return Err((
                seq,
                format!(
                    "bundle {path}: position {i} holds entry {} where entry {seq} belongs (a tile of another tree)",
                    e.seq
                ),
            ));
        }
        if noncanonical.is_none() && entry_bytes(&e) != *raw {
            noncanonical = Some(seq);
        }
        leaves.push(leaf_hash(raw));
        auditor.push(&e);
    }
    if let Some(seq) = noncanonical {
        auditor.source_violation(
            seq,
            ViolationKind::TileBundle,
            format!(
                "bundle {path}: entry {seq} is not in its canonical bytes (the canonical JSON of its public form, docs/format.md \"The tree\"): the tree's leaf is the hash of other bytes than the entry read"
            ),
        );
    }
    Ok(leaves)
}

/// Audits the tiles under `base` (the steps of the module documentation), on the calling
/// (blocking) thread; requests run on `rt`. `bar` counts entries.
pub fn audit(
    mut auditor: Auditor,
    base: TileBase,
    rt: Handle,
    bar: &ProgressBar,
) -> Result<Report, Error> {
    let mut f = Fetcher { base, rt, bytes: 0 };
    let described = f.base.describe();
    let note = f.get("checkpoint", MAX_NOTE)?;
    let note = String::from_utf8(note).map_err(|_| Error::Input {
        what: format!("{described}/checkpoint"),
        reason: "not a checkpoint note (not UTF-8 text)".into(),
    })?;
    let (size, stated_root) = note_size_root(&note).map_err(|why| Error::Input {
        what: format!("{described}/checkpoint"),
        reason: format!("not a checkpoint note: {why}"),
    })?;
    bar.set_length(size);
    auditor.keep_checkpoints();

    let mut hashes = HashCheck::default();
    let bundles = size.div_ceil(TILE_WIDTH);
    let width_of = |k: u64| (size - k * TILE_WIDTH).min(TILE_WIDTH) as u16;
    let mut queue: VecDeque<(u64, Pending, Pending)> = VecDeque::new();
    let mut next = 0u64;
    let mut read = 0u64;
    let mut stopped = None;
    while read < bundles {
        while next < bundles && queue.len() < AHEAD {
            let w = width_of(next);
            let b = Tile {
                level: None,
                index: next,
                width: w,
            };
            let h = Tile {
                level: Some(0),
                ..b
            };
            queue.push_back((
                next,
                f.start(b.path(), MAX_BUNDLE),
                f.start(h.path(), MAX_HASH_TILE),
            ));
            next += 1;
        }
        let Some((k, pb, ph)) = queue.pop_front() else {
            break;
        };
        let width = width_of(k);
        let bundle_path = Tile {
            level: None,
            index: k,
            width,
        }
        .path();
        let hash_path = Tile {
            level: Some(0),
            index: k,
            width,
        }
        .path();
        let bytes = f.finish(pb, MAX_BUNDLE, &bundle_path)?;
        match read_bundle(&bytes, k, usize::from(width), &mut auditor) {
            Ok(leaves) => {
                drop(bytes);
                let served = f.finish(ph, MAX_HASH_TILE, &hash_path)?;
                let mut fetch = |t: Tile| f.get(&t.path(), MAX_HASH_TILE);
                hashes.level0(k, &leaves, &served, &mut fetch, &mut auditor)?;
                bar.inc(u64::from(width));
                read += 1;
            }
            Err((seq, why)) => {
                auditor.source_violation(seq, ViolationKind::TileBundle, why);
                stopped = Some(auditor.entries() + 1);
                break;
            }
        }
    }
    for (_, pb, ph) in queue {
        for p in [pb, ph] {
            if let Pending::Task(t) = p {
                t.abort();
            }
        }
    }
    if stopped.is_none() {
        let mut fetch = |t: Tile| f.get(&t.path(), MAX_HASH_TILE);
        hashes.finish(&mut fetch, &mut auditor)?;
    }

    auditor.served_checkpoint(&note, size, stated_root);
    let seen = auditor.take_checkpoints();
    let mut cache: HashMap<Tile, Vec<Hash>> = HashMap::new();
    let mut fetched = 0u64;
    for pair in seen.windows(2) {
        let ((old, old_root), (new, new_root)) = (pair[0], pair[1]);
        if stopped.is_some() {
            auditor.source_skip(Skipped::Consistency);
            continue;
        }
        match consistency(old, new, size, &hashes.bad, &mut cache, &mut |t| {
            fetched += 1;
            f.get(&t.path(), MAX_HASH_TILE)
        })? {
            Proof::Skipped => auditor.source_skip(Skipped::Consistency),
            Proof::Computed(proof) => {
                match verify_consistency(old, new, &old_root, &new_root, &proof) {
                    Ok(()) => auditor.consistency_verified(),
                    Err(e) => auditor.source_violation(
                        new,
                        ViolationKind::CheckpointConsistency,
                        format!(
                            "the consistency proof from the checkpoint of {old} entries (root {}) to the one of {new} (root {}), computed from the served hash tiles, does not verify: {e}",
                            hex::encode(old_root),
                            hex::encode(new_root)
                        ),
                    ),
                }
            }
            Proof::Unreadable(why) => auditor.source_violation(
                new,
                ViolationKind::CheckpointConsistency,
                format!("the consistency proof from {old} to {new} entries cannot be computed from the served hash tiles: {why}"),
            ),
        }
    }
    let mut report = auditor.finish();
    report.tiles = Some(TilesRead {
        base: described,
        checkpoint_size: size,
        checkpoint_root: hex::encode(stated_root),
        bundles: read + u64::from(stopped.is_some()),
        hash_tiles: hashes.compared + fetched,
        bytes: f.bytes,
        stopped_at: stopped,
    });
    Ok(report)
}

/// A consistency proof from the served tiles.
enum Proof {
    /// It would read a tile already reported.
    Skipped,
    /// The proof.
    Computed(Vec<Hash>),
    /// A tile it reads is not what it was when compared (served differently).
    Unreadable(String),
}

/// The consistency proof from `old` to `new` entries, computed from the hash tiles of the
/// served tree of `size` entries: a first pass names the tile-level nodes it reads (they
/// depend only on the sizes), their tiles are read (cached), a second pass computes it.
fn consistency(
    old: u64,
    new: u64,
    size: u64,
    bad: &BTreeSet<Tile>,
    cache: &mut HashMap<Tile, Vec<Hash>>,
    fetch: &mut dyn FnMut(Tile) -> Result<Vec<u8>, Error>,
) -> Result<Proof, Error> {
    let needed = std::cell::RefCell::new(BTreeSet::new());
    let dry = TileNodes(|level: u8, index: u64| {
        needed.borrow_mut().insert(tile_of(level, index, size));
        Ok([0u8; 32])
    });
    if let Err(e) = consistency_proof_at(&dry, old, new) {
        return Ok(Proof::Unreadable(e.to_string()));
    }
    let needed = needed.into_inner();
    if needed.iter().any(|t| bad.contains(t)) {
        return Ok(Proof::Skipped);
    }
    if cache.len() + needed.len() > CACHE {
        cache.clear();
    }
    for t in needed {
        if cache.contains_key(&t) {
            continue;
        }
        let bytes = fetch(t)?;
        match decode_hash_tile(&bytes, usize::from(t.width)) {
            Some(h) => {
                cache.insert(t, h);
            }
            None => {
                return Ok(Proof::Unreadable(format!(
                    "{} is now {} bytes",
                    t.path(),
                    bytes.len()
                )))
            }
        }
    }
    let nodes = TileNodes(|level: u8, index: u64| {
        let t = tile_of(level, index, size);
        cache
            .get(&t)
            .and_then(|h| h.get((index % TILE_WIDTH) as usize))
            .copied()
            .ok_or(ProofError::Missing {
                level: level * TILE_HEIGHT,
                index,
                reason: format!("not in {}", t.path()),
            })
    });
    match consistency_proof_at(&nodes, old, new) {
        Ok(p) => Ok(Proof::Computed(p)),
        Err(e) => Ok(Proof::Unreadable(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dgsp_wire::merkle::{consistency_proof, MemoryTree};

    fn leaves(n: u64) -> Vec<Hash> {
        (0..n).map(|i| leaf_hash(&i.to_be_bytes())).collect()
    }

    /// The served hash tiles of the tree of `l`, as bytes by path.
    fn tiles(l: &[Hash]) -> HashMap<String, Vec<u8>> {
        let mut t = MemoryTree::new();
        for h in l {
            t.push(*h);
        }
        let size = l.len() as u64;
        dgsp_wire::tiles::tiles_for(0, size)
            .into_iter()
            .filter(|t| t.level.is_some())
            .map(|tile| {
                let level = tile.tree_level().unwrap();
                let bytes: Vec<u8> = (0..u64::from(tile.width))
                    .flat_map(|i| {
                        dgsp_wire::merkle::Nodes::node(&t, level, tile.index * 256 + i).unwrap()
                    })
                    .collect();
                (tile.path(), bytes)
            })
            .collect()
    }

    #[test]
    fn note_lines_are_read() {
        let note = format!("dgsp/ab\n300\n{}\ntime 5\n\n— x y\n", B64.encode([7u8; 32]));
        assert_eq!(note_size_root(&note), Ok((300, [7u8; 32])));
        assert!(note_size_root("o\n0300\nAA==\n").is_err());
        assert!(note_size_root("o\n3\nAA==\n").is_err());
        assert!(note_size_root("o\n").is_err());
    }

    #[test]
    fn tile_of_names_full_and_partial_tiles() {
        let t = tile_of(0, 5, 300);
        assert_eq!((t.index, t.width), (0, 256));
        let t = tile_of(0, 299, 300);
        assert_eq!((t.index, t.width), (1, 44));
        let t = tile_of(1, 0, 300);
        assert_eq!((t.index, t.width), (0, 1));
    }

    #[test]
    fn consistency_proofs_from_tiles_are_the_rfc_6962_ones() {
        for size in [1u64, 255, 256, 257, 600, 65_536 + 300] {
            let l = leaves(size);
            let served = tiles(&l);
            let mut cache = HashMap::new();
            let mut reads = 0;
            for old in [1, size / 3, size / 2 + 1, size - 1, size] {
                let mut fetch = |t: Tile| {
                    reads += 1;
                    Ok(served[&t.path()].clone())
                };
                let Proof::Computed(p) =
                    consistency(old, size, size, &BTreeSet::new(), &mut cache, &mut fetch).unwrap()
                else {
                    panic!("a proof of {old} -> {size}");
                };
                assert_eq!(p, consistency_proof(old, &l), "{old} -> {size}");
                verify_consistency(old, size, &root(&l[..old as usize]), &root(&l), &p).unwrap();
            }
            assert!(reads <= 5 * 8, "{reads} tile reads for {size}");
        }
    }

    #[test]
    fn a_proof_over_a_reported_tile_is_skipped() {
        let l = leaves(600);
        let served = tiles(&l);
        let bad: BTreeSet<Tile> = [tile_of(0, 300, 600)].into();
        let mut fetch = |t: Tile| Ok(served[&t.path()].clone());
        let got = consistency(300, 600, 600, &bad, &mut HashMap::new(), &mut fetch).unwrap();
        assert!(matches!(got, Proof::Skipped));
    }
}
