//! The registry's RocksDB database: the log and its projections, written together.
//!
//! Column families:
//!
//! | CF | key | value | kind |
//! |---|---|---|---|
//! | `log` | be64(seq) | entry JSON (with private part) | source of truth |
//! | `members` | be64(id) | member view JSON | projection (PLM) |
//! | `names` | username | be64(id) | projection (PLM) |
//! | `revoked` | zeta (16 bytes) | be64(seq of the revocation) | projection (revoked list) |
//! | `snapshots` | be64(number) | signed snapshot JSON | projection |
//! | `tree` | tile level, be64(index) | 32-byte hash | projection: the Merkle tree's tile-level hashes (`store/tree.rs`) |
//! | `views` | name | value | projection counters, latest checkpoint entry, `position`, `tree_size` |
//! | `idem` | idempotency key | first answer | not a projection (kept on rebuild) |
//! | `meta` | name | value | not a projection: the newest signed checkpoint note, the rebuild marker, the journal's last segment (`store/journal.rs`) |
//!
//! [`Store::commit`] appends entries and applies every projection they touch in **one**
//! `WriteBatch` written with the WAL synced: after it returns, the events and their effects
//! are durable together, or (on error or crash) neither is. The same batch records the
//! projections' `position` (the seq of the last entry they reflect), so a reader can always
//! tell whether the projections are exactly the log: [`Store::projections_current`].
//!
//! [`Store::rebuild`] replays the log in chunks, each chunk's projections and position in one
//! synced batch, under a `rebuilding` marker: killed at any point, it resumes where it
//! stopped, and nothing serves the half-built projections meanwhile.

use std::collections::HashMap;
use std::path::Path;

use rocksdb::{
    ColumnFamilyDescriptor, Direction, IteratorMode, Options, WriteBatch, WriteOptions, DB,
};
use serde::{Deserialize, Serialize};

use dgsp_core::{MemberId, Zeta};
use dgsp_wire::events::{Event, EventError};
use dgsp_wire::log::{canonical, unhex, ChainError, Entry, Hash, GENESIS_PREV};

mod journal;
mod tree;

/// Column families that are projections of the log (dropped and replayed by a rebuild).
/// `views`, which holds the projections' position, comes first: once it is dropped, the
/// position reads 0 until the replay has written one.
pub const VIEW_CFS: [&str; 6] = ["views", "members", "names", "revoked", "snapshots", "tree"];
const ALL_CFS: [&str; 9] = [
    "log",
    "members",
    "names",
    "revoked",
    "snapshots",
    "tree",
    "views",
    "idem",
    "meta",
];
/// `views` key: be64 seq of the last entry the projections reflect.
const POSITION: &[u8] = b"position";
/// `meta` key: present while a rebuild is unfinished.
const REBUILDING: &[u8] = b"rebuilding";
/// `meta` key: the newest signed checkpoint ([`StoredNote`] JSON).
const LATEST_NOTE: &[u8] = b"latest_note";
/// Entries replayed per synced batch by [`Store::rebuild`].
const REBUILD_CHUNK: usize = 16_384;

/// Whether the projections can be served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProjectionState {
    /// They reflect exactly the log up to its head.
    Current,
    /// A rebuild was interrupted; it resumes after entry `position`.
    RebuildInterrupted {
        /// last entry the partial projections reflect
        position: u64,
        /// the log head
        head: u64,
    },
    /// They reflect a different prefix of the log (or none was recorded: a data directory
    /// written before positions existed).
    Behind {
        /// last entry they reflect (0 when unknown)
        position: u64,
        /// the log head
        head: u64,
    },
}

impl std::fmt::Display for ProjectionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProjectionState::Current => f.write_str("the projections are current"),
            ProjectionState::RebuildInterrupted { position, head } => {
                write!(f, "a rebuild was interrupted at entry {position} of {head}")
            }
            ProjectionState::Behind { position, head } => write!(
                f,
                "the projections reflect entry {position} but the log head is {head}"
            ),
        }
    }
}

pub use dgsp_wire::registry_api::StoredNote;

/// Store errors.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// RocksDB failed.
    #[error("rocksdb: {0}")]
    Db(#[from] rocksdb::Error),
    /// A stored value could not be decoded (corruption or a newer format).
    #[error("corrupt {what}: {reason}")]
    Corrupt {
        /// which record
        what: String,
        /// why
        reason: String,
    },
    /// An entry's event could not be read.
    #[error(transparent)]
    Event(#[from] EventError),
    /// The log's hash chain is broken.
    #[error(transparent)]
    Chain(#[from] ChainError),
}

/// A member as the PLM projection holds it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct MemberView {
    /// unique username
    pub username: String,
    /// false once revoked
    pub active: bool,
    /// certificates issued so far
    pub counter: u64,
    /// seq of the revocation entry, once revoked
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<u64>,
}

/// One stored projection record: `(column family, key, value)`.
pub type ViewRecord = (String, Vec<u8>, Vec<u8>);

/// The latest position of the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    /// seq of the last entry (0 for an empty log)
    pub seq: u64,
    /// its hash ([`GENESIS_PREV`] for an empty log)
    pub hash: Hash,
}

/// The registry database.
pub struct Store {
    db: DB,
    /// Writes until an injected failure (0: none planned).
    #[cfg(feature = "fault-injection")]
    fail_after: std::sync::atomic::AtomicU64,
    /// While set, commits wait before writing (fault injection: a slow disk).
    #[cfg(feature = "fault-injection")]
    commits_held: std::sync::atomic::AtomicBool,
}

fn be(n: u64) -> [u8; 8] {
    n.to_be_bytes()
}

/// The inverse of [`be`]: `None` unless exactly 8 bytes.
fn unbe(bytes: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(bytes).ok().map(u64::from_be_bytes)
}

fn corrupt(what: impl Into<String>, reason: impl ToString) -> Error {
    Error::Corrupt {
        what: what.into(),
        reason: reason.to_string(),
    }
}

/// The write-ahead log's bound (`max_total_wal_size`): past it, RocksDB flushes the column
/// families that keep the oldest WAL file alive.
pub const MAX_TOTAL_WAL_BYTES: u64 = 256 << 20;

impl Store {
    /// Opens (creating if needed) the database in `dir`.
    pub fn open(dir: &Path) -> Result<Store, Error> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.set_max_background_jobs(2);
        // Bounds the write-ahead log. A WAL file is deleted only when every column family
        // with data in it has flushed, and small families ("meta", "head") written with
        // every batch never fill a memtable: left to RocksDB's default (0: a limit derived
        // from all the families' memtables) the registry kept 7.4 GB of WAL after five
        // minutes of writing a 2^25-member log, all of it replayed on the next start. Past
        // this size the families holding the oldest WAL are flushed.
        opts.set_max_total_wal_size(MAX_TOTAL_WAL_BYTES);
        let cfs = ALL_CFS
            .iter()
            .map(|name| ColumnFamilyDescriptor::new(*name, Options::default()));
        let store = Store {
            db: DB::open_cf_descriptors(&opts, dir, cfs)?,
            #[cfg(feature = "fault-injection")]
            fail_after: Default::default(),
            #[cfg(feature = "fault-injection")]
            commits_held: Default::default(),
        };
        // A database written before the log was a tree gets its tree now (an unfinished
        // rebuild recomputes it anyway).
        let rebuilding = store.db.get_cf(store.cf("meta"), REBUILDING)?.is_some();
        let from = store.tree_size()?;
        if !rebuilding && from < store.position()? {
            let added = store.migrate_tree(|done, of| {
                tracing::info!(done, of, "computing the log's Merkle tree");
            })?;
            tracing::info!(from, added, "the log's Merkle tree is up to date");
        }
        Ok(store)
    }

    /// Opens the database in `dir` read-only (a backup's checkpoint: nothing is written to
    /// it); every write fails.
    pub fn open_read_only(dir: &Path) -> Result<Store, Error> {
        Ok(Store {
            db: DB::open_cf_for_read_only(&Options::default(), dir, ALL_CFS, false)?,
            #[cfg(feature = "fault-injection")]
            fail_after: Default::default(),
            #[cfg(feature = "fault-injection")]
            commits_held: Default::default(),
        })
    }

    /// Writes a RocksDB checkpoint of the whole database into `dir`, which must not exist:
    /// a consistent point in time (every committed batch or none of it), its table files
    /// hard-linked when `dir` is on the same file system (copied otherwise). Safe while
    /// the writer commits.
    pub fn checkpoint(&self, dir: &Path) -> Result<(), Error> {
        rocksdb::checkpoint::Checkpoint::new(&self.db)?.create_checkpoint(dir)?;
        Ok(())
    }

    fn cf(&self, name: &str) -> &rocksdb::ColumnFamily {
        self.db
            .cf_handle(name)
            .expect("every column family is created at open")
    }

    /// Writes entry 1, `group_created` for `group`, into an empty log (a new group).
    pub fn create_group(
        &self,
        group: &dgsp_core::ManagerPublicKey,
        time_ms: u64,
    ) -> Result<Entry, Error> {
        if self.head()?.seq != 0 {
            return Err(corrupt("log", "this data directory already holds a group"));
        }
        let entry = Entry::seal(1, time_ms, &Event::group_created(group), &GENESIS_PREV);
        self.commit(std::slice::from_ref(&entry), &[])?;
        Ok(entry)
    }

    /// The last entry's seq and hash.
    pub fn head(&self) -> Result<Head, Error> {
        let mut it = self.db.iterator_cf(self.cf("log"), IteratorMode::End);
        match it.next() {
            None => Ok(Head {
                seq: 0,
                hash: GENESIS_PREV,
            }),
            Some(item) => {
                let (_, v) = item?;
                let e = decode_entry(&v)?;
                Ok(Head {
                    seq: e.seq,
                    hash: e.hash_bytes()?,
                })
            }
        }
    }

    /// Entry `seq`, if present.
    pub fn entry(&self, seq: u64) -> Result<Option<Entry>, Error> {
        self.db
            .get_cf(self.cf("log"), be(seq))?
            .map(|v| decode_entry(&v))
            .transpose()
    }

    /// Up to `limit` entries with seq greater than `after`, in order (JSON decoded in
    /// parallel: replay and large feed pages are bound by decoding).
    pub fn entries_after(&self, after: u64, limit: usize) -> Result<Vec<Entry>, Error> {
        use rayon::prelude::*;
        let start = be(after.saturating_add(1));
        let raw: Vec<Box<[u8]>> = self
            .db
            .iterator_cf(
                self.cf("log"),
                IteratorMode::From(&start, Direction::Forward),
            )
            .take(limit)
            .map(|item| item.map(|(_, v)| v))
            .collect::<Result<_, _>>()?;
        raw.par_iter().map(|v| decode_entry(v)).collect()
    }

    /// The member with this id, if any.
    pub fn member(&self, id: MemberId) -> Result<Option<MemberView>, Error> {
        self.db
            .get_cf(self.cf("members"), be(id))?
            .map(|v| serde_json::from_slice(&v).map_err(|e| corrupt(format!("member {id}"), e)))
            .transpose()
    }

    /// Up to `limit` members with id at least `from`, in id order.
    pub fn members_from(
        &self,
        from: MemberId,
        limit: usize,
    ) -> Result<Vec<(MemberId, MemberView)>, Error> {
        let start = be(from);
        self.db
            .iterator_cf(
                self.cf("members"),
                IteratorMode::From(&start, Direction::Forward),
            )
            .take(limit)
            .map(|item| {
                let (k, v) = item?;
                let id = unbe(&k).ok_or_else(|| corrupt("members key", "not 8 bytes"))?;
                let m =
                    serde_json::from_slice(&v).map_err(|e| corrupt(format!("member {id}"), e))?;
                Ok((id, m))
            })
            .collect()
    }

    /// The id of the member with this username, if any.
    pub fn id_of(&self, username: &str) -> Result<Option<MemberId>, Error> {
        self.db
            .get_cf(self.cf("names"), username.as_bytes())?
            .map(|v| unbe(&v).ok_or_else(|| corrupt(format!("name {username}"), "not 8 bytes")))
            .transpose()
    }

    /// Whether `zeta` is revoked.
    pub fn is_revoked(&self, zeta: &Zeta) -> Result<bool, Error> {
        Ok(self
            .db
            .get_pinned_cf(self.cf("revoked"), zeta.as_bytes())?
            .is_some())
    }

    /// A projection counter (`members`, `revoked`), 0 if unset.
    /// (The `checkpoint` key of the same column family holds a seq, not a count.)
    pub fn count(&self, name: &str) -> Result<u64, Error> {
        Ok(self
            .db
            .get_cf(self.cf("views"), name.as_bytes())?
            .and_then(|v| unbe(&v))
            .unwrap_or(0))
    }

    /// The first answer recorded under an idempotency key.
    pub fn idempotent(&self, key: &str) -> Result<Option<Vec<u8>>, Error> {
        Ok(self.db.get_cf(self.cf("idem"), key.as_bytes())?)
    }

    /// Appends `entries` (already sealed, in order, continuing the head) and applies their
    /// projections, plus `idem` answers, in one synced `WriteBatch`.
    pub fn commit(&self, entries: &[Entry], idem: &[(String, Vec<u8>)]) -> Result<(), Error> {
        self.commit_batch(entries, idem, WriteBatch::default())
    }

    /// [`commit`](Self::commit) into `batch`, which may already hold other writes of the
    /// same atomic step (the journal's position, `store/journal.rs`).
    fn commit_batch(
        &self,
        entries: &[Entry],
        idem: &[(String, Vec<u8>)],
        mut batch: WriteBatch,
    ) -> Result<(), Error> {
        for e in entries {
            let bytes = serde_json::to_vec(e).expect("entries serialize");
            batch.put_cf(self.cf("log"), be(e.seq), bytes);
        }
        self.project_all(entries, &mut batch)?;
        if let Some(last) = entries.last() {
            batch.put_cf(self.cf("views"), POSITION, be(last.seq));
        }
        for (k, v) in idem {
            batch.put_cf(self.cf("idem"), k.as_bytes(), v);
        }
        self.fault_point()?;
        self.write_synced(batch)
    }

    fn write_synced(&self, batch: WriteBatch) -> Result<(), Error> {
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        self.db.write_opt(batch, &wo)?;
        Ok(())
    }

    /// The seq of the last entry the projections reflect (0 if none recorded).
    pub fn position(&self) -> Result<u64, Error> {
        Ok(self
            .db
            .get_cf(self.cf("views"), POSITION)?
            .and_then(|v| unbe(&v))
            .unwrap_or(0))
    }

    /// Whether the projections are exactly the log (what `serve` requires).
    pub fn projections(&self) -> Result<ProjectionState, Error> {
        let head = self.head()?.seq;
        let position = self.position()?;
        if self.db.get_cf(self.cf("meta"), REBUILDING)?.is_some() {
            return Ok(ProjectionState::RebuildInterrupted { position, head });
        }
        if position != head {
            return Ok(ProjectionState::Behind { position, head });
        }
        Ok(ProjectionState::Current)
    }

    /// `Ok` when the projections are current, else an error saying why and what to run.
    pub fn projections_current(&self) -> Result<(), Error> {
        match self.projections()? {
            ProjectionState::Current => Ok(()),
            other => Err(corrupt(
                "projections",
                format!("{other}: run 'dgsp-registry rebuild' (it resumes where it stopped)"),
            )),
        }
    }

    /// The newest signed checkpoint note, if one was stored.
    pub fn latest_note(&self) -> Result<Option<StoredNote>, Error> {
        self.db
            .get_cf(self.cf("meta"), LATEST_NOTE)?
            .map(|v| serde_json::from_slice(&v).map_err(|e| corrupt("latest checkpoint note", e)))
            .transpose()
    }

    /// Stores the newest signed checkpoint note, [`StoredNote`] JSON (synced).
    pub fn put_latest_note(&self, json: &[u8]) -> Result<(), Error> {
        self.fault_point()?;
        let mut batch = WriteBatch::default();
        batch.put_cf(self.cf("meta"), LATEST_NOTE, json);
        self.write_synced(batch)
    }

    /// Adds the effects of `entries` (in order) to `batch`: what each entry touches, then
    /// the member views and counters changed by all of them.
    fn project_all(&self, entries: &[Entry], batch: &mut WriteBatch) -> Result<(), Error> {
        let mut members = HashMap::new();
        let mut counts = HashMap::new();
        for e in entries {
            self.project(e, batch, &mut members, &mut counts)?;
        }
        for (id, view) in members {
            let json = serde_json::to_value(view).expect("member views serialize");
            batch.put_cf(self.cf("members"), be(id), canonical(&json));
        }
        for (name, n) in counts {
            batch.put_cf(self.cf("views"), name.as_bytes(), be(n));
        }
        self.project_tree(entries, batch)
    }

    /// Adds the effects of `entry` to `batch`. `members` and `counts` carry the state
    /// changed earlier in the same batch (reads fall through to the database).
    fn project(
        &self,
        entry: &Entry,
        batch: &mut WriteBatch,
        members: &mut HashMap<MemberId, MemberView>,
        counts: &mut HashMap<&'static str, u64>,
    ) -> Result<(), Error> {
        let mut bump = |name: &'static str, by: u64| -> Result<(), Error> {
            let cur = match counts.get(name) {
                Some(n) => *n,
                None => self.count(name)?,
            };
            counts.insert(name, cur + by);
            Ok(())
        };
        let view_of = |id: MemberId,
                       members: &mut HashMap<MemberId, MemberView>|
         -> Result<MemberView, Error> {
            match members.get(&id) {
                Some(v) => Ok(v.clone()),
                None => self.member(id)?.ok_or_else(|| {
                    corrupt(
                        format!("entry {}", entry.seq),
                        format!("unknown member {id}"),
                    )
                }),
            }
        };
        match entry.event()? {
            Event::GroupCreated { .. } | Event::SignatureOpened { .. } => {}
            Event::MemberJoined { id, username } => {
                batch.put_cf(self.cf("names"), username.as_bytes(), be(id));
                members.insert(
                    id,
                    MemberView {
                        username,
                        active: true,
                        counter: 0,
                        revoked_at: None,
                    },
                );
                bump("members", 1)?;
            }
            Event::CertificatesIssued {
                id, first, count, ..
            } => {
                let mut v = view_of(id, members)?;
                v.counter = v.counter.max(first + count);
                members.insert(id, v);
            }
            Event::MemberRevoked {
                id, first, zetas, ..
            } => {
                let mut v = view_of(id, members)?;
                v.active = false;
                // A revocation written in parts is dated by its first part.
                if first == 0 || v.revoked_at.is_none() {
                    v.revoked_at = Some(entry.seq);
                }
                members.insert(id, v);
                for z in &zetas {
                    let zeta: [u8; 16] = unhex(z).ok_or_else(|| {
                        corrupt(format!("entry {} zeta", entry.seq), "not 32 hex characters")
                    })?;
                    batch.put_cf(self.cf("revoked"), zeta, be(entry.seq));
                }
                bump("revoked", zetas.len() as u64)?;
            }
            Event::SnapshotPublished { snapshot } => {
                // Served in full (`snapshot_json`, with the detached signature), whichever
                // form the entry carries (`snapshot_entry_json` leaves the signature out).
                let signed =
                    dgsp_wire::snapshot::snapshot_from_json(&snapshot).ok_or_else(|| {
                        corrupt(format!("entry {}", entry.seq), "not a signed snapshot")
                    })?;
                let served = dgsp_wire::snapshot::snapshot_json(&signed);
                batch.put_cf(
                    self.cf("snapshots"),
                    be(signed.record.number),
                    canonical(&served),
                );
            }
            Event::Checkpoint { .. } => {
                batch.put_cf(self.cf("views"), b"checkpoint", be(entry.seq));
            }
        }
        Ok(())
    }

    /// Every revoked zeta with the seq of its revocation entry, in ascending zeta order.
    pub fn revoked_zetas_with_seq(&self) -> Result<Vec<(Zeta, u64)>, Error> {
        let mut out = Vec::new();
        for item in self.db.iterator_cf(self.cf("revoked"), IteratorMode::Start) {
            let (k, v) = item?;
            let zeta = Zeta::from_slice(&k).map_err(|e| corrupt("revoked zeta", e))?;
            let seq = unbe(&v).ok_or_else(|| corrupt("revoked zeta seq", "not 8 bytes"))?;
            out.push((zeta, seq));
        }
        Ok(out)
    }

    /// Snapshot `number` as published (JSON), if any.
    pub fn snapshot(&self, number: u64) -> Result<Option<serde_json::Value>, Error> {
        self.db
            .get_cf(self.cf("snapshots"), be(number))?
            .map(|v| {
                serde_json::from_slice(&v).map_err(|e| corrupt(format!("snapshot {number}"), e))
            })
            .transpose()
    }

    /// The latest published snapshot (JSON), if any.
    pub fn latest_snapshot(&self) -> Result<Option<serde_json::Value>, Error> {
        match self
            .db
            .iterator_cf(self.cf("snapshots"), IteratorMode::End)
            .next()
        {
            None => Ok(None),
            Some(item) => {
                let (_, v) = item?;
                Ok(Some(
                    serde_json::from_slice(&v).map_err(|e| corrupt("latest snapshot", e))?,
                ))
            }
        }
    }

    /// The entry holding the latest checkpoint, if any.
    pub fn latest_checkpoint(&self) -> Result<Option<Entry>, Error> {
        let Some(seq) = self
            .db
            .get_cf(self.cf("views"), b"checkpoint")?
            .and_then(|v| unbe(&v))
        else {
            return Ok(None);
        };
        self.entry(seq)
    }

    /// Verifies the whole chain (and every commitment) from seq 1; returns the head.
    pub fn verify_chain(&self) -> Result<Head, Error> {
        self.verify_chain_with(|_| {})
    }

    /// [`verify_chain`](Self::verify_chain), handing each entry to `each` once it is checked
    /// (one pass for callers that check more than the chain).
    pub fn verify_chain_with(&self, mut each: impl FnMut(&Entry)) -> Result<Head, Error> {
        let mut head = Head {
            seq: 0,
            hash: GENESIS_PREV,
        };
        for item in self.db.iterator_cf(self.cf("log"), IteratorMode::Start) {
            let e = decode_entry(&item?.1)?;
            e.check(head.seq, &head.hash)?;
            each(&e);
            head = Head {
                seq: e.seq,
                hash: e.hash_bytes()?,
            };
        }
        Ok(head)
    }

    /// Replays the log into fresh projections. Offline only (the registry stopped).
    ///
    /// Crash-safe and resumable: a `rebuilding` marker is stored first, the projections are
    /// dropped (`views`, holding the position, first), then each chunk of entries is
    /// projected in one synced batch together with the new position; the marker goes last.
    /// Run again after an interruption, it continues after the recorded position (or starts
    /// over if none was recorded yet); `progress(done, head)` is called after each chunk.
    /// Returns the number of entries replayed by this call.
    pub fn rebuild(&mut self, mut progress: impl FnMut(u64, u64)) -> Result<u64, Error> {
        let head = self.head()?.seq;
        let resuming = self.db.get_cf(self.cf("meta"), REBUILDING)?.is_some();
        let mut after = if resuming { self.position()? } else { 0 };
        if after == 0 {
            let mut marker = WriteBatch::default();
            marker.put_cf(self.cf("meta"), REBUILDING, be(head));
            self.write_synced(marker)?;
            for name in VIEW_CFS {
                if self.db.cf_handle(name).is_some() {
                    self.db.drop_cf(name)?;
                }
                self.db.create_cf(name, &Options::default())?;
            }
        }
        let mut replayed = 0;
        loop {
            let chunk = self.entries_after(after, REBUILD_CHUNK)?;
            let Some(last) = chunk.last() else { break };
            after = last.seq;
            let mut batch = WriteBatch::default();
            self.project_all(&chunk, &mut batch)?;
            batch.put_cf(self.cf("views"), POSITION, be(after));
            self.write_synced(batch)?;
            replayed += chunk.len() as u64;
            progress(after, head);
        }
        let mut done = WriteBatch::default();
        done.delete_cf(self.cf("meta"), REBUILDING);
        self.write_synced(done)?;
        Ok(replayed)
    }

    /// Makes the next `n`-th write (commit or note) fail, for fault-injection tests.
    #[cfg(feature = "fault-injection")]
    pub fn fail_write_after(&self, n: u64) {
        self.fail_after
            .store(n, std::sync::atomic::Ordering::SeqCst);
    }

    /// Holds every commit (and note write) before it writes, until
    /// [`release_commits`](Self::release_commits): a disk that stalls, for tests that need
    /// a command to sit queued or in flight in the writer.
    #[cfg(feature = "fault-injection")]
    pub fn hold_commits(&self) {
        self.commits_held
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Lets held commits proceed.
    #[cfg(feature = "fault-injection")]
    pub fn release_commits(&self) {
        self.commits_held
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }

    #[cfg(feature = "fault-injection")]
    fn fault_point(&self) -> Result<(), Error> {
        use std::sync::atomic::Ordering;
        while self.commits_held.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let left = self.fail_after.load(Ordering::SeqCst);
        if left == 0 {
            return Ok(());
        }
        self.fail_after.store(left - 1, Ordering::SeqCst);
        if left == 1 {
            return Err(corrupt(
                "injected fault",
                "the test asked this write to fail",
            ));
        }
        Ok(())
    }

    #[cfg(not(feature = "fault-injection"))]
    fn fault_point(&self) -> Result<(), Error> {
        Ok(())
    }

    /// Every key and value of the projections, in order: for comparing a rebuild with the
    /// live views byte for byte.
    pub fn dump_views(&self) -> Result<Vec<ViewRecord>, Error> {
        let mut out = Vec::new();
        for name in VIEW_CFS {
            for item in self.db.iterator_cf(self.cf(name), IteratorMode::Start) {
                let (k, v) = item?;
                out.push((name.to_owned(), k.to_vec(), v.to_vec()));
            }
        }
        Ok(out)
    }
}

fn decode_entry(bytes: &[u8]) -> Result<Entry, Error> {
    serde_json::from_slice(bytes).map_err(|e| corrupt("log entry", e))
}
