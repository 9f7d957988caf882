//! The journal: with object storage configured, every batch the writer commits is first
//! written to the bucket as one immutable, encrypted segment, and only then committed to
//! RocksDB and acknowledged. The bucket is then the log's durable copy: a registry on an
//! empty disk, given the bucket and the manager key, rebuilds the whole log from it
//! ([`catch_up`]) and takes over once it holds the write lease ([`lease`]).
//!
//! Segments are named `private/journal/<first seq, 20 digits>` and created only if absent
//! (`If-None-Match: *`), so each seq is written once, by one registry, whatever the
//! leases say. Readers find them without listing: segment `n` ends at entry `m`, the next
//! one is named `m + 1`. The contents are private (usernames, openings' private parts,
//! idempotency answers): encrypted under a key derived from the manager key
//! ([`segment`]); keep the `private/` prefix out of what a CDN serves anyway.
//!
//! Batching is the writer's group commit: while one segment is being written, the next
//! requests queue, and the next segment carries all of them (up to
//! the writer's `MAX_GROUP` commands). See docs/event-log.md, "The journal".

pub mod lease;
pub mod segment;

use std::sync::Arc;
use std::time::Duration;

use dgsp_tilestore::{Error as StoreError, TileStore};
use dgsp_wire::log::{ChainError, Entry, Hash, GENESIS_PREV};

use crate::store::{self, Store};
pub use lease::{Lease, LeaseError};
pub use segment::{JournalKey, Segment, SegmentError};

/// Where the segments live in the store.
pub const PREFIX: &str = "private/journal/";

/// Most entries uploaded per segment when the journal is behind the local log.
const UPLOAD_CHUNK: usize = 1024;

/// The key of the segment whose first entry is `first`.
pub fn segment_key(first: u64) -> String {
    format!("{PREFIX}{first:020}")
}

/// Why the journal refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The lease does not allow writing.
    #[error(transparent)]
    Lease(#[from] LeaseError),
    /// Another registry wrote this segment: this one is no longer the writer.
    #[error(
        "journal segment {key} was written by another registry: this registry is no longer the group's writer"
    )]
    Superseded {
        /// the segment's key
        key: String,
    },
    /// The store did not take the segment in time; whether it holds it is unknown.
    #[error("the object store did not take journal segment {key} within {secs} s: {last}")]
    Unavailable {
        /// the segment's key
        key: String,
        /// how long it was retried
        secs: u64,
        /// the last error
        last: String,
    },
    /// A segment that is not what it must be.
    #[error("journal segment {key}: {reason}")]
    BadSegment {
        /// the segment's key
        key: String,
        /// what is wrong
        reason: String,
    },
    /// The local log and the journal hold different entries at the same seq.
    #[error(
        "the local log and the journal in the bucket differ at entry {seq}: this data directory holds another history; move it aside and start on an empty one to restore from the bucket"
    )]
    Diverged {
        /// the first seq that differs
        seq: u64,
    },
    /// A segment this data directory recorded as written is not in the bucket.
    #[error(
        "journal segment {key}, which this data directory recorded as written, is not in the bucket: wrong bucket or prefix?"
    )]
    Missing {
        /// the segment's key
        key: String,
    },
    /// The local database failed.
    #[error("local store: {0}")]
    Store(#[from] store::Error),
    /// The object store failed.
    #[error("object store: {0}")]
    Tiles(#[from] StoreError),
}

/// The writer's side of the journal.
pub struct Journal {
    tiles: Arc<dyn TileStore>,
    key: Arc<JournalKey>,
    lease: Arc<Lease>,
    rt: tokio::runtime::Handle,
    /// how long a segment write is retried before the writer halts
    retry_for: Duration,
}

impl Journal {
    /// The journal in `tiles`, written under `lease`; `rt` runs its I/O for the writer
    /// thread.
    pub fn new(
        tiles: Arc<dyn TileStore>,
        key: Arc<JournalKey>,
        lease: Arc<Lease>,
        rt: tokio::runtime::Handle,
    ) -> Journal {
        let retry_for = lease.ttl() / 2;
        Journal {
            tiles,
            key,
            lease,
            rt,
            retry_for,
        }
    }

    /// The lease the journal is written under.
    pub fn lease(&self) -> &Arc<Lease> {
        &self.lease
    }

    /// Writes one segment holding `entries` (consecutive, continuing the journal) and
    /// `idem`, create-if-absent, retrying what the store fails with for up to half the
    /// lease's time to live while the lease holds. `Ok` once the store holds it.
    pub async fn append(
        &self,
        entries: &[Entry],
        idem: &[(String, Vec<u8>)],
    ) -> Result<(), JournalError> {
        let Some(first) = entries.first().map(|e| e.seq) else {
            return Ok(());
        };
        let key = segment_key(first);
        let bytes = self.key.seal(&key, entries, idem);
        let started = tokio::time::Instant::now();
        let mut wait = Duration::from_millis(20);
        loop {
            self.lease.check()?;
            match self.tiles.put_new(&key, bytes.clone()).await {
                Ok(_) => return Ok(()),
                Err(StoreError::Conflict { .. }) => return Err(JournalError::Superseded { key }),
                Err(e) if started.elapsed() + wait < self.retry_for => {
                    tracing::warn!(%key, error = %e, retry_in = ?wait, "writing a journal segment failed");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(1));
                }
                Err(e) => {
                    return Err(JournalError::Unavailable {
                        key,
                        secs: started.elapsed().as_secs(),
                        last: e.to_string(),
                    })
                }
            }
        }
    }

    /// [`append`](Self::append) from the writer thread (not a runtime thread).
    pub fn append_blocking(
        &self,
        entries: &[Entry],
        idem: &[(String, Vec<u8>)],
    ) -> Result<(), JournalError> {
        self.rt.block_on(self.append(entries, idem))
    }
}

/// What [`catch_up`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CatchUp {
    /// entries read from the journal and committed locally
    pub restored: u64,
    /// local entries the journal lacked, written to it (only with a lease)
    pub uploaded: u64,
    /// seq of the last entry in the journal afterwards
    pub journal_head: u64,
}

/// Brings the local log and the journal together: reads every segment after the one the
/// local log last recorded, checks each entry's chain link, checks the entries the local
/// log already holds are the same, and commits the others locally (with their idempotency
/// answers). With `lease`, local entries the journal lacks (a group created by `init`, or
/// a registry that ran without a journal) are then written to it; without one (a standby),
/// they are left alone.
pub async fn catch_up(
    tiles: &dyn TileStore,
    key: &JournalKey,
    store: &Store,
    lease: Option<&Lease>,
) -> Result<CatchUp, JournalError> {
    let mut done = CatchUp::default();
    let recorded = store.journal_segment()?;
    let mut pos = recorded.unwrap_or(1);
    let mut prev: (u64, Hash) = match pos {
        1 => (0, GENESIS_PREV),
        p => {
            let e = store
                .entry(p - 1)?
                .ok_or(JournalError::Diverged { seq: p - 1 })?;
            (p - 1, hash_of(&e)?)
        }
    };
    loop {
        let name = segment_key(pos);
        let Some(obj) = tiles.get(&name).await? else {
            if recorded == Some(pos) {
                return Err(JournalError::Missing { key: name });
            }
            break;
        };
        let bad = |reason: String| JournalError::BadSegment {
            key: name.clone(),
            reason,
        };
        let seg = key
            .open(&name, pos, &obj.bytes)
            .map_err(|e| bad(e.to_string()))?;
        for e in &seg.entries {
            e.check(prev.0, &prev.1)
                .map_err(|c: ChainError| bad(c.to_string()))?;
            prev = (e.seq, hash_of(e)?);
        }
        let head = store.head()?.seq;
        for e in seg.entries.iter().take_while(|e| e.seq <= head) {
            let mine = store.entry(e.seq)?;
            if mine.as_ref().map(|m| &m.hash) != Some(&e.hash) {
                return Err(JournalError::Diverged { seq: e.seq });
            }
        }
        let new: Vec<Entry> = seg
            .entries
            .iter()
            .filter(|e| e.seq > head)
            .cloned()
            .collect();
        done.restored += new.len() as u64;
        // A segment the local log already holds and records needs no write (a standby
        // re-reads its last one at every look).
        if !new.is_empty() || store.journal_segment()? != Some(seg.first) {
            store.commit_journaled(&new, &seg.idem, seg.first)?;
        }
        pos = seg.last() + 1;
    }
    done.journal_head = pos - 1;
    let head = store.head()?.seq;
    if let (Some(lease), true) = (lease, head > done.journal_head) {
        let mut next = done.journal_head;
        while next < head {
            let chunk = store.entries_after(next, UPLOAD_CHUNK)?;
            let (Some(first), Some(last)) = (chunk.first(), chunk.last()) else {
                break;
            };
            lease.check()?;
            let name = segment_key(first.seq);
            match tiles.put_new(&name, key.seal(&name, &chunk, &[])).await {
                Ok(_) => {}
                Err(StoreError::Conflict { .. }) => {
                    return Err(JournalError::Superseded { key: name })
                }
                Err(e) => return Err(e.into()),
            }
            store.put_journal_segment(first.seq)?;
            done.uploaded += chunk.len() as u64;
            next = last.seq;
        }
        done.journal_head = next;
    }
    Ok(done)
}

fn hash_of(e: &Entry) -> Result<Hash, JournalError> {
    e.hash_bytes().map_err(|c| JournalError::BadSegment {
        key: segment_key(e.seq),
        reason: c.to_string(),
    })
}
