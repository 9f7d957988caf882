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
//! | `views` | name | value | projection counters and latest checkpoint |
//! | `idem` | idempotency key | first answer | not a projection (kept on rebuild) |
//!
//! [`Store::commit`] appends entries and applies every projection they touch in **one**
//! `WriteBatch` written with the WAL synced: after it returns, the events and their effects
//! are durable together, or (on error or crash) neither is.

use std::collections::HashMap;
use std::path::Path;

use rocksdb::{
    ColumnFamilyDescriptor, Direction, IteratorMode, Options, WriteBatch, WriteOptions, DB,
};
use serde::{Deserialize, Serialize};

use crate::events::{Event, EventError};
use crate::log::{canonical, unhex, ChainError, Entry, Hash, GENESIS_PREV};
use dgsp_core::{MemberId, Zeta};

/// Column families that are projections of the log (dropped and replayed by a rebuild).
pub const VIEW_CFS: [&str; 5] = ["members", "names", "revoked", "snapshots", "views"];
const ALL_CFS: [&str; 7] = [
    "log",
    "members",
    "names",
    "revoked",
    "snapshots",
    "views",
    "idem",
];

/// Store errors.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
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
}

fn be(n: u64) -> [u8; 8] {
    n.to_be_bytes()
}

/// The inverse of [`be`]: `None` unless exactly 8 bytes.
fn unbe(bytes: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(bytes).ok().map(u64::from_be_bytes)
}

fn corrupt(what: impl Into<String>, reason: impl ToString) -> StoreError {
    StoreError::Corrupt {
        what: what.into(),
        reason: reason.to_string(),
    }
}

impl Store {
    /// Opens (creating if needed) the database in `dir`.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.set_max_background_jobs(2);
        let cfs = ALL_CFS
            .iter()
            .map(|name| ColumnFamilyDescriptor::new(*name, Options::default()));
        Ok(Store {
            db: DB::open_cf_descriptors(&opts, dir, cfs)?,
        })
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
    ) -> Result<Entry, StoreError> {
        if self.head()?.seq != 0 {
            return Err(corrupt("log", "this data directory already holds a group"));
        }
        let entry = Entry::seal(1, time_ms, &Event::group_created(group), &GENESIS_PREV);
        self.commit(std::slice::from_ref(&entry), &[])?;
        Ok(entry)
    }

    /// The last entry's seq and hash.
    pub fn head(&self) -> Result<Head, StoreError> {
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
    pub fn entry(&self, seq: u64) -> Result<Option<Entry>, StoreError> {
        self.db
            .get_cf(self.cf("log"), be(seq))?
            .map(|v| decode_entry(&v))
            .transpose()
    }

    /// Up to `limit` entries with seq greater than `after`, in order (JSON decoded in
    /// parallel: replay and large feed pages are bound by decoding).
    pub fn entries_after(&self, after: u64, limit: usize) -> Result<Vec<Entry>, StoreError> {
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
    pub fn member(&self, id: MemberId) -> Result<Option<MemberView>, StoreError> {
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
    ) -> Result<Vec<(MemberId, MemberView)>, StoreError> {
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
    pub fn id_of(&self, username: &str) -> Result<Option<MemberId>, StoreError> {
        self.db
            .get_cf(self.cf("names"), username.as_bytes())?
            .map(|v| unbe(&v).ok_or_else(|| corrupt(format!("name {username}"), "not 8 bytes")))
            .transpose()
    }

    /// Whether `zeta` is revoked.
    pub fn is_revoked(&self, zeta: &Zeta) -> Result<bool, StoreError> {
        Ok(self
            .db
            .get_pinned_cf(self.cf("revoked"), zeta.as_bytes())?
            .is_some())
    }

    /// A projection counter (`members`, `revoked`), 0 if unset.
    /// (The `checkpoint` key of the same column family holds a seq, not a count.)
    pub fn count(&self, name: &str) -> Result<u64, StoreError> {
        Ok(self
            .db
            .get_cf(self.cf("views"), name.as_bytes())?
            .and_then(|v| unbe(&v))
            .unwrap_or(0))
    }

    /// The first answer recorded under an idempotency key.
    pub fn idempotent(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.db.get_cf(self.cf("idem"), key.as_bytes())?)
    }

    /// Appends `entries` (already sealed, in order, continuing the head) and applies their
    /// projections, plus `idem` answers, in one synced `WriteBatch`.
    pub fn commit(&self, entries: &[Entry], idem: &[(String, Vec<u8>)]) -> Result<(), StoreError> {
        let mut batch = WriteBatch::default();
        for e in entries {
            let bytes = serde_json::to_vec(e).expect("entries serialize");
            batch.put_cf(self.cf("log"), be(e.seq), bytes);
        }
        self.project_all(entries, &mut batch)?;
        for (k, v) in idem {
            batch.put_cf(self.cf("idem"), k.as_bytes(), v);
        }
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        self.db.write_opt(batch, &wo)?;
        Ok(())
    }

    /// Adds the effects of `entries` (in order) to `batch`: what each entry touches, then
    /// the member views and counters changed by all of them.
    fn project_all(&self, entries: &[Entry], batch: &mut WriteBatch) -> Result<(), StoreError> {
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
        Ok(())
    }

    /// Adds the effects of `entry` to `batch`. `members` and `counts` carry the state
    /// changed earlier in the same batch (reads fall through to the database).
    fn project(
        &self,
        entry: &Entry,
        batch: &mut WriteBatch,
        members: &mut HashMap<MemberId, MemberView>,
        counts: &mut HashMap<&'static str, u64>,
    ) -> Result<(), StoreError> {
        let mut bump = |name: &'static str, by: u64| -> Result<(), StoreError> {
            let cur = match counts.get(name) {
                Some(n) => *n,
                None => self.count(name)?,
            };
            counts.insert(name, cur + by);
            Ok(())
        };
        let view_of = |id: MemberId,
                       members: &mut HashMap<MemberId, MemberView>|
         -> Result<MemberView, StoreError> {
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
            Event::MemberRevoked { id, zetas, .. } => {
                let mut v = view_of(id, members)?;
                v.active = false;
                v.revoked_at = Some(entry.seq);
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
                let number = snapshot
                    .get("record")
                    .and_then(|r| r.get("number"))
                    .and_then(|n| n.as_u64())
                    .unwrap_or(0);
                batch.put_cf(self.cf("snapshots"), be(number), canonical(&snapshot));
            }
            Event::Checkpoint { .. } => {
                batch.put_cf(self.cf("views"), b"checkpoint", be(entry.seq));
            }
        }
        Ok(())
    }

    /// Every revoked zeta, in ascending order.
    pub fn revoked_zetas(&self) -> Result<Vec<Zeta>, StoreError> {
        let mut out = Vec::new();
        for item in self.db.iterator_cf(self.cf("revoked"), IteratorMode::Start) {
            let (k, _) = item?;
            out.push(Zeta::from_slice(&k).map_err(|e| corrupt("revoked zeta", e))?);
        }
        Ok(out)
    }

    /// Snapshot `number` as published (JSON), if any.
    pub fn snapshot(&self, number: u64) -> Result<Option<serde_json::Value>, StoreError> {
        self.db
            .get_cf(self.cf("snapshots"), be(number))?
            .map(|v| {
                serde_json::from_slice(&v).map_err(|e| corrupt(format!("snapshot {number}"), e))
            })
            .transpose()
    }

    /// The latest published snapshot (JSON), if any.
    pub fn latest_snapshot(&self) -> Result<Option<serde_json::Value>, StoreError> {
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
    pub fn latest_checkpoint(&self) -> Result<Option<Entry>, StoreError> {
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
    pub fn verify_chain(&self) -> Result<Head, StoreError> {
        let mut head = Head {
            seq: 0,
            hash: GENESIS_PREV,
        };
        for item in self.db.iterator_cf(self.cf("log"), IteratorMode::Start) {
            let e = decode_entry(&item?.1)?;
            e.check(head.seq, &head.hash)?;
            head = Head {
                seq: e.seq,
                hash: e.hash_bytes()?,
            };
        }
        Ok(head)
    }

    /// Drops every projection and replays the log into fresh ones. Offline only.
    pub fn rebuild(&mut self) -> Result<u64, StoreError> {
        for name in VIEW_CFS {
            self.db.drop_cf(name)?;
            self.db.create_cf(name, &Options::default())?;
        }
        let mut replayed = 0;
        let mut after = 0;
        loop {
            let chunk = self.entries_after(after, 16_384)?;
            let Some(last) = chunk.last() else { break };
            after = last.seq;
            let mut batch = WriteBatch::default();
            self.project_all(&chunk, &mut batch)?;
            self.db.write(batch)?;
            replayed += chunk.len() as u64;
        }
        self.db.flush_wal(true)?;
        Ok(replayed)
    }

    /// Every key and value of the projections, in order: for comparing a rebuild with the
    /// live views byte for byte.
    pub fn dump_views(&self) -> Result<Vec<ViewRecord>, StoreError> {
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

fn decode_entry(bytes: &[u8]) -> Result<Entry, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| corrupt("log entry", e))
}
