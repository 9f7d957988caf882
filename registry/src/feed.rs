//! Pages of the log feed (`GET /v1/log/entries`), bounded by entry count **and** by
//! serialized bytes.
//!
//! One entry can be large (a `member_revoked` entry lists every zeta of the member, 35 bytes
//! each), so a page of `limit` entries could exceed what a follower accepts (the gateway
//! refuses pages over 128 MiB). A page stops before the entry that would take its entries
//! past [`MAX_PAGE_BYTES`]; it always holds at least one entry when one exists, so a
//! follower always progresses (a single entry larger than the bound is served alone).
//!
//! Entries are read in small batches sized from the largest entry seen so far, so that the
//! entries decoded but not served stay few.

use rayon::prelude::*;

use crate::store::{Store, StoreError};

/// Most bytes of serialized entries in one page (unless its first entry alone is larger).
pub const MAX_PAGE_BYTES: usize = 16 << 20;

/// Entries read in the first batch, before any size is known.
const FIRST_BATCH: usize = 16;
/// Most entries read in one batch.
const MAX_BATCH: usize = 128;

/// A serialized feed page: the JSON of `{"entries": [...], "head_seq": N}`.
#[derive(Debug)]
pub struct Page {
    /// The response body.
    pub body: Vec<u8>,
    /// Entries in it.
    pub count: usize,
    /// Serialized bytes of its entries (the array elements, without separators).
    pub entry_bytes: usize,
}

/// The page of at most `limit` entries after `after`, whose entries serialize to at most
/// `max_bytes` together (at least one entry whatever its size). Private payloads are
/// dropped unless `private`. `head_seq` is read after the entries, so it is never behind
/// them.
pub fn page(
    store: &Store,
    after: u64,
    limit: usize,
    max_bytes: usize,
    private: bool,
) -> Result<Page, StoreError> {
    let mut body = b"{\"entries\":[".to_vec();
    let (mut count, mut entry_bytes, mut largest, mut cursor) = (0usize, 0usize, 0usize, after);
    'read: while count < limit {
        let want = max_bytes
            .saturating_sub(entry_bytes)
            .checked_div(largest)
            .unwrap_or(FIRST_BATCH)
            .clamp(1, MAX_BATCH)
            .min(limit - count);
        let mut batch = store.entries_after(cursor, want)?;
        let got = batch.len();
        if !private {
            for e in &mut batch {
                e.private = None;
            }
        }
        let serialized = batch
            .par_iter()
            .map(|e| {
                serde_json::to_vec(e).map_err(|err| StoreError::Corrupt {
                    what: format!("entry {}", e.seq),
                    reason: err.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        for (e, json) in batch.iter().zip(serialized) {
            if count > 0 && entry_bytes + json.len() > max_bytes {
                break 'read;
            }
            if count > 0 {
                body.push(b',');
            }
            body.extend_from_slice(&json);
            count += 1;
            entry_bytes += json.len();
            largest = largest.max(json.len());
            cursor = e.seq;
        }
        if got < want {
            break;
        }
    }
    let head_seq = store.head()?.seq;
    body.extend_from_slice(format!("],\"head_seq\":{head_seq}}}").as_bytes());
    Ok(Page {
        body,
        count,
        entry_bytes,
    })
}
