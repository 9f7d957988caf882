//! The gateway's own RocksDB replica of what it has verified and applied.
//!
//! Column families:
//!
//! | cf          | key                 | value                                         |
//! |-------------|---------------------|-----------------------------------------------|
//! | `meta`      | `group`             | the pinned group public key encoding          |
//! | `meta`      | `applied`           | `be64 seq ‖ hash (32) ‖ be64 time_ms`         |
//! | `meta`      | `checkpoint`        | the newest signed note that covers `applied` exactly (its size is `applied`, its root the tree's root there, or in a legacy note `applied`'s hash); its signed time is the gateway's freshness |
//! | `meta`      | `checkpoint_witnessed` | with a witness policy: the witnessed note of the same tree as `checkpoint` (absent otherwise, and in replicas written before witnessing) |
//! | `meta`      | `tree_size`         | be64 entries in the tree (always `applied`'s seq) |
//! | `meta`      | `tiles_base`        | started from tiles: `be64 log_seq ‖ be64 snapshot number` of the snapshot bundle it started from; no entry hash, tree hash or snapshot before them is held ([`Replica::commit_bootstrap`]) |
//! | `hashes`    | `be64 seq`          | the entry's hash (fork detection)             |
//! | `tree`      | `[tile level] ‖ be64 index` | the Merkle tree's tile-level hashes ([`tree`]) |
//! | `zetas`     | zeta (16 bytes)     | `be64 seq` of the revocation entry            |
//! | `snapshots` | `be64 number`       | the signed snapshot, in the registry's JSON form |
//! | `witness`   | origin (UTF-8)      | as a witness (`--witness-key`): `be64 size ‖ root (32)` of the tree last cosigned for that log ([`witness`]) |
//!
//! Everything one checkpoint makes applicable is written in one synced `WriteBatch`
//! ([`Replica::commit`]), the tree's new hashes and the checkpoint note included, so after a
//! crash the replica is exactly some verified prefix of the log (and its tree), as fresh as
//! the note that covers it, and the follower resumes from it. A newer note covering the same
//! position replaces the stored one on its own ([`Replica::confirm`]).

mod tree;
pub mod witness;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dgsp_core::checkpoint::Checkpoint;
use dgsp_core::revocation::SignedSnapshot;
use dgsp_core::{ManagerPublicKey, Zeta};
use dgsp_wire::follow::check_root;
use dgsp_wire::log::Hash;
use dgsp_wire::merkle::Frontier;
use dgsp_wire::snapshot::{snapshot_from_json, snapshot_json};
use rocksdb::{ColumnFamilyDescriptor, IteratorMode, Options, WriteBatch, WriteOptions, DB};
use serde_json::Value;

const CFS: [&str; 6] = ["meta", "hashes", "zetas", "snapshots", "tree", "witness"];

/// `meta` key: the witnessed note of the checkpoint in `checkpoint`, when it has one.
const CHECKPOINT_WITNESSED: &[u8] = b"checkpoint_witnessed";

/// `meta` key: where a replica started from tiles begins ([`Replica::tiles_base`]).
const TILES_BASE: &[u8] = b"tiles_base";

/// The start of a replica bootstrapped from tiles ([`Replica::commit_bootstrap`]).
#[derive(Clone, Debug, Default)]
pub struct Base {
    /// Entries the base tree holds: the snapshot's `log_seq`.
    pub size: u64,
    /// The hash of entry `size` (its chain hash).
    pub hash: Hash,
    /// The snapshot number the replica starts from.
    pub snapshot: u64,
    /// The tile-level hashes of the tree's right-edge tiles at `size` (`(tile level,
    /// index, hash)`): what appending to it reads.
    pub nodes: Vec<(u8, u64, Hash)>,
}

/// A replica failure (the disk, or data this build cannot read).
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    /// RocksDB failed.
    #[error("replica database: {0}")]
    Db(#[from] rocksdb::Error),
    /// Stored bytes are not what this build wrote.
    #[error("replica data is corrupt: {0}")]
    Corrupt(String),
    /// What is about to be written does not continue what is stored (nothing was written).
    #[error("replica update refused: {0}")]
    Inconsistent(String),
    /// A replica written by a gateway from before the log's Merkle tree: it holds the
    /// applied entries' hashes but not the entries, so the tree cannot be rebuilt from it.
    #[error(
        "the replica in {} was written by a gateway from before checkpoints signed the log's Merkle tree: it has applied {applied} entries but holds only their hashes, not the entries the tree is built from, so it cannot be migrated. Stop the gateway, move that directory away (or start with another, empty --data directory), and start again: the gateway replays the registry's feed from entry 1",
        path.display()
    )]
    BeforeTree {
        /// The replica directory.
        path: PathBuf,
        /// Entries it had applied.
        applied: u64,
    },
}

/// The last applied entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Its seq (0: nothing applied).
    pub seq: u64,
    /// Its hash (zeros when nothing is applied).
    pub hash: Hash,
    /// When the registry appended it (Unix ms).
    pub time_ms: u64,
}

/// What a newly verified range adds, written atomically.
#[derive(Debug, Default)]
pub struct Update {
    /// `(seq, hash)` of every entry in the range.
    pub hashes: Vec<(u64, Hash)>,
    /// The Merkle tree leaf of every entry in the range, in order.
    pub leaves: Vec<Hash>,
    /// The right edge of the tree of every entry applied, the range included (its size is
    /// `applied.seq`): what the checkpoint was checked against.
    pub tree: Frontier,
    /// The new last applied entry.
    pub applied: Applied,
    /// Revoked zetas with the seq of their revocation entry.
    pub revocations: Vec<(Zeta, u64)>,
    /// New signed snapshots, in order.
    pub snapshots: Vec<Arc<SignedSnapshot>>,
    /// The signed note of the checkpoint that covers the range (its size is `applied`'s
    /// seq, its root `tree`'s).
    pub checkpoint: String,
    /// The witnessed note of the same tree, if it has one (stored beside it; none deletes
    /// the stored one).
    pub witnessed: Option<String>,
}

/// Everything needed to resume.
pub struct Loaded {
    /// The pinned group, if one was pinned.
    pub group: Option<ManagerPublicKey>,
    /// The last applied entry.
    pub applied: Applied,
    /// The signed note of the checkpoint covering it.
    pub checkpoint: Option<String>,
    /// The witnessed note of the same tree, if one was stored with it.
    pub witnessed: Option<String>,
    /// The revoked zetas the latest snapshot covers (their revocation's seq at most its
    /// `log_seq`), strictly ascending: the input of the revoked set, 16 bytes each.
    pub covered: Vec<Zeta>,
    /// The other revoked zetas applied (none without a snapshot covers them), with their
    /// revocation's seq, ascending.
    pub later: Vec<(Zeta, u64)>,
    /// The latest verified snapshot.
    pub snapshot: Option<SignedSnapshot>,
    /// The right edge of the Merkle tree of the applied entries (its size is `applied`'s seq).
    pub tree: Frontier,
}

/// The replica database.
pub struct Replica {
    db: DB,
    path: PathBuf,
    /// Serialises the witness state's compare-and-set ([`witness`]).
    witness_lock: std::sync::Mutex<()>,
    /// Declared after `db`, so dropped after it: set once the database is closed.
    closed: Closed,
}

/// Set when the replica that owns it is dropped, after its database has closed (fields
/// drop in declaration order): what [`Replica::closed`] hands out.
struct Closed(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Drop for Closed {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The write-ahead log's bound (`max_total_wal_size`).
pub const MAX_TOTAL_WAL_BYTES: u64 = 256 << 20;

impl Replica {
    /// Opens (creating if needed) the replica in `path`.
    pub fn open(path: &Path) -> Result<Self, ReplicaError> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        // Bounds the write-ahead log (as the registry's store does): families written with
        // every batch but rarely filling a memtable would otherwise keep WAL files alive
        // by the gigabyte under RocksDB's default.
        opts.set_max_total_wal_size(MAX_TOTAL_WAL_BYTES);
        let cfs = CFS
            .iter()
            .map(|n| ColumnFamilyDescriptor::new(*n, Options::default()));
        Ok(Replica {
            db: DB::open_cf_descriptors(&opts, path, cfs)?,
            path: path.to_path_buf(),
            witness_lock: std::sync::Mutex::new(()),
            closed: Closed(Default::default()),
        })
    }

    /// A flag that turns true once this replica is dropped and its database closed (its
    /// lock released): what a clean shutdown waits for before it returns, since a blocking
    /// task a dropped request left running may hold the replica a moment longer.
    pub fn closed(&self) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
        self.closed.0.clone()
    }

    fn cf(&self, name: &str) -> &rocksdb::ColumnFamily {
        self.db
            .cf_handle(name)
            .expect("column families are created at open")
    }

    /// Pins the group (first start).
    pub fn pin_group(&self, pk: &ManagerPublicKey) -> Result<(), ReplicaError> {
        let mut w = WriteOptions::default();
        w.set_sync(true);
        self.db
            .put_cf_opt(self.cf("meta"), b"group", pk.to_bytes(), &w)?;
        Ok(())
    }

    /// Loads the state to resume from. The tree must hold exactly the applied entries; a
    /// replica from before the tree is refused ([`ReplicaError::BeforeTree`]).
    pub fn load(&self) -> Result<Loaded, ReplicaError> {
        let meta = self.cf("meta");
        let group = self
            .db
            .get_cf(meta, b"group")?
            .map(|b| {
                ManagerPublicKey::from_bytes(&b)
                    .map_err(|e| ReplicaError::Corrupt(format!("pinned group key: {e}")))
            })
            .transpose()?;
        let applied = self.applied()?;
        let checkpoint = self
            .db
            .get_cf(meta, b"checkpoint")?
            .map(|b| {
                String::from_utf8(b).map_err(|_| ReplicaError::Corrupt("checkpoint note".into()))
            })
            .transpose()?;
        let witnessed = self
            .db
            .get_cf(meta, CHECKPOINT_WITNESSED)?
            .map(|b| {
                String::from_utf8(b)
                    .map_err(|_| ReplicaError::Corrupt("witnessed checkpoint note".into()))
            })
            .transpose()?;
        let snapshot = match self
            .db
            .iterator_cf(self.cf("snapshots"), IteratorMode::End)
            .next()
        {
            None => None,
            Some(item) => {
                let (_, v) = item?;
                Some(decode_snapshot(&v)?)
            }
        };
        // Split while reading (the column is in zeta order), so the start holds each zeta
        // once, 16 bytes, rather than every (zeta, seq) pair beside the set built from them.
        let cut = snapshot.as_ref().map(|s| s.record.log_seq);
        let (mut covered, mut later) = (Vec::new(), Vec::new());
        for item in self.db.iterator_cf(self.cf("zetas"), IteratorMode::Start) {
            let (k, v) = item?;
            let zeta =
                Zeta::from_slice(&k).map_err(|_| ReplicaError::Corrupt("zeta key".into()))?;
            let seq = <[u8; 8]>::try_from(&v[..])
                .map_err(|_| ReplicaError::Corrupt("zeta seq".into()))?;
            let seq = u64::from_be_bytes(seq);
            if cut.is_some_and(|cut| seq <= cut) {
                covered.push(zeta);
            } else {
                later.push((zeta, seq));
            }
        }
        covered.shrink_to_fit();
        let tree = match self.stored_tree_size()? {
            None if applied.seq > 0 => {
                return Err(ReplicaError::BeforeTree {
                    path: self.path.clone(),
                    applied: applied.seq,
                })
            }
            Some(size) if size != applied.seq => {
                return Err(ReplicaError::Corrupt(format!(
                    "the tree holds {size} entries, {} are applied",
                    applied.seq
                )))
            }
            _ => self.frontier(applied.seq)?,
        };
        Ok(Loaded {
            group,
            applied,
            checkpoint,
            witnessed,
            covered,
            later,
            snapshot,
            tree,
        })
    }

    /// The applied position.
    fn applied(&self) -> Result<Applied, ReplicaError> {
        match self.db.get_cf(self.cf("meta"), b"applied")? {
            None => Ok(Applied::default()),
            Some(b) if b.len() == 48 => Ok(Applied {
                seq: u64::from_be_bytes(b[..8].try_into().expect("8 bytes")),
                hash: b[8..40].try_into().expect("32 bytes"),
                time_ms: u64::from_be_bytes(b[40..].try_into().expect("8 bytes")),
            }),
            Some(_) => Err(ReplicaError::Corrupt("applied position".into())),
        }
    }

    /// The hash of applied entry `seq`, if it is applied.
    pub fn hash_at(&self, seq: u64) -> Result<Option<Hash>, ReplicaError> {
        match self.db.get_cf(self.cf("hashes"), seq.to_be_bytes())? {
            None => Ok(None),
            Some(b) => b
                .as_slice()
                .try_into()
                .map(Some)
                .map_err(|_| ReplicaError::Corrupt(format!("hash of entry {seq}"))),
        }
    }

    /// Snapshot number `n` in the registry's JSON form, if applied.
    pub fn snapshot_json(&self, n: u64) -> Result<Option<Value>, ReplicaError> {
        self.db
            .get_cf(self.cf("snapshots"), n.to_be_bytes())?
            .map(|b| {
                serde_json::from_slice(&b)
                    .map_err(|e| ReplicaError::Corrupt(format!("snapshot {n}: {e}")))
            })
            .transpose()
    }

    /// Writes a verified range in one synced batch: its entries' hashes, the tree's new
    /// hashes, zetas, snapshots, the applied position and the note. Refused whole (nothing
    /// written) when the range does not continue the stored tree or does not give the
    /// tree the update was verified against.
    pub fn commit(&self, u: &Update) -> Result<(), ReplicaError> {
        let mut b = WriteBatch::default();
        let first = u.applied.seq.checked_sub(u.leaves.len() as u64);
        let continues = u.hashes.len() == u.leaves.len()
            && u.hashes
                .iter()
                .zip(first.unwrap_or(0) + 1..)
                .all(|((s, _), n)| *s == n);
        let Some(old_size) = first.filter(|_| continues) else {
            return Err(ReplicaError::Inconsistent(format!(
                "a range of {} hashes and {} leaves does not end at entry {}",
                u.hashes.len(),
                u.leaves.len(),
                u.applied.seq
            )));
        };
        self.append_tree(&mut b, old_size, &u.leaves, &u.tree)?;
        self.put_update(&mut b, u);
        let mut w = WriteOptions::default();
        w.set_sync(true);
        self.db.write_opt(b, &w)?;
        Ok(())
    }

    /// Adds to `b` what every applied range writes beside the tree: entry hashes, zetas,
    /// snapshots, the applied position and the note.
    fn put_update(&self, b: &mut WriteBatch, u: &Update) {
        for (seq, hash) in &u.hashes {
            b.put_cf(self.cf("hashes"), seq.to_be_bytes(), hash);
        }
        for (zeta, seq) in &u.revocations {
            b.put_cf(self.cf("zetas"), zeta.as_bytes(), seq.to_be_bytes());
        }
        for s in &u.snapshots {
            let json = serde_json::to_vec(&snapshot_json(s)).expect("JSON values serialize");
            b.put_cf(self.cf("snapshots"), s.record.number.to_be_bytes(), json);
        }
        let mut applied = Vec::with_capacity(48);
        applied.extend_from_slice(&u.applied.seq.to_be_bytes());
        applied.extend_from_slice(&u.applied.hash);
        applied.extend_from_slice(&u.applied.time_ms.to_be_bytes());
        b.put_cf(self.cf("meta"), b"applied", applied);
        b.put_cf(self.cf("meta"), b"checkpoint", u.checkpoint.as_bytes());
        self.put_witnessed(b, u.witnessed.as_deref());
    }

    /// Adds to `b` the witnessed note of the stored checkpoint, or its removal.
    fn put_witnessed(&self, b: &mut WriteBatch, witnessed: Option<&str>) {
        match witnessed {
            Some(w) => b.put_cf(self.cf("meta"), CHECKPOINT_WITNESSED, w.as_bytes()),
            None => b.delete_cf(self.cf("meta"), CHECKPOINT_WITNESSED),
        }
    }

    /// Writes the state a gateway starts from the tiles with, in one synced batch, into an
    /// empty replica: the tree's `base` (its size, the snapshot's `log_seq`, and the
    /// tile-level hashes of the right-edge tiles at that size, read from verified hash
    /// tiles), the hash of entry `base.size`, and `u`, which applies the entries after it
    /// (its revocations: the snapshot's zetas, recorded at `base.size`). Refused whole
    /// (nothing written) when the replica is not empty or the update does not give the
    /// tree it was verified against.
    pub fn commit_bootstrap(&self, base: &Base, u: &Update) -> Result<(), ReplicaError> {
        if self.applied()?.seq != 0 || self.tree_size()? != 0 {
            return Err(ReplicaError::Inconsistent(
                "a bootstrap from tiles needs an empty replica".into(),
            ));
        }
        let continues = u.hashes.len() == u.leaves.len()
            && u.applied.seq == base.size + u.leaves.len() as u64
            && u.hashes
                .iter()
                .zip(base.size + 1..)
                .all(|((s, _), n)| *s == n);
        if !continues {
            return Err(ReplicaError::Inconsistent(format!(
                "a range of {} entries does not continue the base of {} entries to entry {}",
                u.leaves.len(),
                base.size,
                u.applied.seq
            )));
        }
        let nodes: std::collections::HashMap<(u8, u64), Hash> =
            base.nodes.iter().map(|(l, i, h)| ((*l, *i), *h)).collect();
        let get = |l: u8, i: u64| {
            nodes
                .get(&(l, i))
                .copied()
                .ok_or_else(|| dgsp_wire::merkle::ProofError::Missing {
                    level: l.saturating_mul(8),
                    index: i,
                    reason: "not in the bootstrap's base".into(),
                })
        };
        // The base must itself be the right edge of a tree of `base.size` entries.
        Frontier::at(&dgsp_wire::tiles::TileNodes(get), base.size)
            .map_err(|e| ReplicaError::Inconsistent(format!("the bootstrap's base: {e}")))?;
        let mut b = WriteBatch::default();
        for (l, i, h) in &base.nodes {
            b.put_cf(self.cf("tree"), dgsp_wire::tiles::node_key(*l, *i), h);
        }
        self.append_tree_over(&mut b, base.size, base.size, &u.leaves, &u.tree, &get)?;
        if base.size > 0 {
            b.put_cf(self.cf("hashes"), base.size.to_be_bytes(), base.hash);
        }
        let mut tiles_base = Vec::with_capacity(16);
        tiles_base.extend_from_slice(&base.size.to_be_bytes());
        tiles_base.extend_from_slice(&base.snapshot.to_be_bytes());
        b.put_cf(self.cf("meta"), TILES_BASE, tiles_base);
        self.put_update(&mut b, u);
        let mut w = WriteOptions::default();
        w.set_sync(true);
        self.db.write_opt(b, &w)?;
        Ok(())
    }

    /// Where a replica started from tiles begins: `(log_seq, snapshot number)` of the
    /// snapshot bundle it started from; `None` for a replica that replayed the log.
    pub fn tiles_base(&self) -> Result<Option<(u64, u64)>, ReplicaError> {
        match self.db.get_cf(self.cf("meta"), TILES_BASE)? {
            None => Ok(None),
            Some(b) if b.len() == 16 => Ok(Some((
                u64::from_be_bytes(b[..8].try_into().expect("8 bytes")),
                u64::from_be_bytes(b[8..].try_into().expect("8 bytes")),
            ))),
            Some(_) => Err(ReplicaError::Corrupt("tiles base".into())),
        }
    }

    /// Stores a newer signed note covering the position already applied (nothing else
    /// changes), synced. `checkpoint` is what the note signs (verified by the caller): it
    /// must be of exactly the applied entries, its root the tree's there (or, in a legacy
    /// note, the applied entry's hash), or nothing is written.
    pub fn confirm(&self, note: &str, checkpoint: &Checkpoint) -> Result<(), ReplicaError> {
        self.confirm_witnessed(note, None, checkpoint)
    }

    /// [`confirm`](Self::confirm), storing `witnessed` (the witnessed note of the same
    /// tree, verified by the caller) beside the note in the same synced write.
    pub fn confirm_witnessed(
        &self,
        note: &str,
        witnessed: Option<&str>,
        checkpoint: &Checkpoint,
    ) -> Result<(), ReplicaError> {
        let applied = self.applied()?;
        if checkpoint.size != applied.seq {
            return Err(ReplicaError::Inconsistent(format!(
                "a note of {} entries does not cover the {} applied",
                checkpoint.size, applied.seq
            )));
        }
        let chain = (applied.seq > 0).then_some(&applied.hash);
        check_root(checkpoint, &self.root_at(applied.seq)?, chain)
            .map_err(|why| ReplicaError::Inconsistent(format!("the note to store: {why}")))?;
        let mut b = WriteBatch::default();
        b.put_cf(self.cf("meta"), b"checkpoint", note.as_bytes());
        self.put_witnessed(&mut b, witnessed);
        let mut w = WriteOptions::default();
        w.set_sync(true);
        self.db.write_opt(b, &w)?;
        Ok(())
    }
}

fn decode_snapshot(bytes: &[u8]) -> Result<SignedSnapshot, ReplicaError> {
    serde_json::from_slice::<Value>(bytes)
        .ok()
        .as_ref()
        .and_then(snapshot_from_json)
        .ok_or_else(|| ReplicaError::Corrupt("stored snapshot".into()))
}

// The registry's tests' reader of RocksDB's OPTIONS file, shared rather than copied.
#[cfg(test)]
#[path = "../../../registry/tests/support/rocksdb.rs"]
mod rocksdb_options;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_write_ahead_log_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let _replica = Replica::open(dir.path()).unwrap();
        assert_eq!(
            rocksdb_options::option(dir.path(), "max_total_wal_size"),
            Some(MAX_TOTAL_WAL_BYTES.to_string())
        );
    }
}
