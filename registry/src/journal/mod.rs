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
//!
//! A segment is acknowledged only if the lease is still trusted after it landed
//! ([`Journal::append`]): otherwise the outcome is unknown and the writer halts. A registry
//! that takes over writes a segment of its own before it serves anything as fresh, at the
//! seq after all it read, so no predecessor can land one there. See docs/event-log.md,
//! "Fencing".

pub mod lease;
pub mod segment;

use std::sync::Arc;
use std::time::Duration;

use dgsp_tilestore::{Error as StoreError, TileStore};
use dgsp_wire::log::{ChainError, Entry, Hash, GENESIS_PREV};

use crate::store::{self, Store};
pub use lease::{JournalHead, Lease, LeaseError};
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
    /// The segment was written, but the lease could not be proven held afterwards: a
    /// successor may not have seen it, so the batch is not acknowledged.
    #[error(
        "journal segment {key} was written, but the write lease could not be proven held afterwards ({why}): the outcome is unknown, nothing is acknowledged"
    )]
    OutcomeUnknown {
        /// the segment's key
        key: String,
        /// why the lease was not proven
        why: LeaseError,
    },
    /// A journal head the lease records, that the journal in the bucket does not reach.
    #[error(
        "the lease records the journal's head at entry {recorded}, but the journal in the bucket {found}: segments were deleted or the bucket was rolled back; refusing to take over a shorter log"
    )]
    Truncated {
        /// the head the lease records
        recorded: u64,
        /// what the bucket holds instead
        found: String,
    },
    /// A journal head in the lease whose tag does not verify under this group's key.
    #[error("the journal head the lease records (entry {seq}) does not verify under this group's journal key: the lease object was altered")]
    ForgedHead {
        /// the seq it names
        seq: u64,
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
    /// `idem`, create-if-absent, each try bounded by the lease's request bound and retried
    /// for up to half the lease's time to live while the lease holds. `Ok` once the store
    /// holds it and the lease is still trusted by this process's clock.
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
        put_segment(self.tiles.as_ref(), &self.lease, key, bytes, self.retry_for).await
    }

    /// The journal head (`seq`, `hash`) with its tag, as the lease records it.
    pub fn head(&self, seq: u64, hash: &Hash) -> JournalHead {
        JournalHead {
            seq,
            hash: hex::encode(hash),
            tag: self.key.head_tag(seq, hash),
        }
    }

    /// From the writer thread (not a runtime thread): [`append`](Self::append), then
    /// `local` (the commit to the local store), then the journal's new head recorded for
    /// the next renewal. A local commit of a segment that landed is never wrong (the bucket
    /// holds it).
    pub fn append_then<T>(
        &self,
        entries: &[Entry],
        idem: &[(String, Vec<u8>)],
        local: impl FnOnce() -> Result<T, String>,
    ) -> Result<T, String> {
        let Some(last) = entries.last() else {
            return local();
        };
        let last = (last.seq, hash_of(last).map_err(|e| e.to_string())?);
        self.rt
            .block_on(self.append(entries, idem))
            .map_err(|e| format!("the journal: {e}"))?;
        let committed = local()?;
        self.lease.set_head(self.head(last.0, &last.1));
        Ok(committed)
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
            let name = segment_key(first.seq);
            let bytes = key.seal(&name, &chunk, &[]);
            put_segment(tiles, lease, name, bytes, lease.ttl() / 2).await?;
            store.put_journal_segment(first.seq)?;
            done.uploaded += chunk.len() as u64;
            next = last.seq;
        }
        done.journal_head = next;
    }
    Ok(done)
}

/// At a takeover, after [`catch_up`] with the lease: refuses a journal that ends before the
/// head the previous holder recorded in the lease (`replaced`, [`Lease::replaced`]), or
/// holds another entry there, and a recorded head whose tag does not verify. Then records
/// the journal's head, as this process found it, in its own lease.
pub fn check_head(
    key: &JournalKey,
    store: &Store,
    lease: &Lease,
    journal_head: u64,
) -> Result<(), JournalError> {
    if let Some(head) = lease.replaced().and_then(|r| r.head.as_ref()) {
        let hash: Hash = hex::decode(&head.hash)
            .ok()
            .and_then(|h| h.try_into().ok())
            .ok_or(JournalError::ForgedHead { seq: head.seq })?;
        if !key.head_tag_matches(head.seq, &hash, &head.tag) {
            return Err(JournalError::ForgedHead { seq: head.seq });
        }
        if journal_head < head.seq {
            return Err(JournalError::Truncated {
                recorded: head.seq,
                found: format!("ends at entry {journal_head}"),
            });
        }
        let mine = store.entry(head.seq)?.map(|e| e.hash);
        if mine.as_deref() != Some(head.hash.as_str()) {
            return Err(JournalError::Truncated {
                recorded: head.seq,
                found: format!("holds another entry {}", head.seq),
            });
        }
    }
    if journal_head > 0 {
        if let Some(e) = store.entry(journal_head)? {
            lease.set_head(JournalHead {
                seq: journal_head,
                tag: key.head_tag(journal_head, &hash_of(&e)?),
                hash: e.hash,
            });
        }
    }
    Ok(())
}

/// Creates the segment object `key` holding `bytes`, each try bounded by the lease's request
/// bound and retried for up to `retry_for` while the lease holds; `Ok` once the store holds
/// it and the lease is still trusted by this process's clock (it may have lapsed while the
/// write was in flight: then the outcome is unknown).
async fn put_segment(
    tiles: &dyn TileStore,
    lease: &Lease,
    key: String,
    bytes: dgsp_tilestore::Bytes,
    retry_for: Duration,
) -> Result<(), JournalError> {
    let started = tokio::time::Instant::now();
    let bound = lease.request_bound();
    let mut wait = Duration::from_millis(20);
    loop {
        lease.check()?;
        let tried = match tokio::time::timeout(bound, tiles.put_new(&key, bytes.clone())).await {
            Ok(Ok(_)) => break,
            Ok(Err(StoreError::Conflict { .. })) => return Err(JournalError::Superseded { key }),
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {bound:?}"),
        };
        if started.elapsed() + wait >= retry_for {
            return Err(JournalError::Unavailable {
                key,
                secs: started.elapsed().as_secs(),
                last: tried,
            });
        }
        tracing::warn!(%key, error = %tried, retry_in = ?wait, "writing a journal segment failed");
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(Duration::from_secs(1));
    }
    // After the durable step: the lease may have lapsed while the write was in flight.
    lease
        .check()
        .map_err(|why| JournalError::OutcomeUnknown { key, why })
}

fn hash_of(e: &Entry) -> Result<Hash, JournalError> {
    e.hash_bytes().map_err(|c| JournalError::BadSegment {
        key: segment_key(e.seq),
        reason: c.to_string(),
    })
}
