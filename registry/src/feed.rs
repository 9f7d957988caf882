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
//!
//! Across requests, the bytes of pages in flight (built, or sent to a client that reads
//! slowly) are bounded by a [`Budget`]: a page is built within what the budget has left
//! (a smaller page when it is nearly spent, at least [`MIN_RESERVATION`]), holds its bytes
//! until its last byte is handed to the connection, and a request that finds the budget
//! spent is refused (503 with `Retry-After`) rather than buffered. At most [`BUILDS`] pages
//! are built at once, so the entries decoded but not yet counted stay few too.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Bytes;
use http_body::{Frame, SizeHint};
use rayon::prelude::*;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::store::{self, Store};

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
) -> Result<Page, store::Error> {
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
                serde_json::to_vec(e).map_err(|err| store::Error::Corrupt {
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

/// Default bound on the bytes of feed pages in flight across all requests: four full pages,
/// or one entry at the certificate cap (~37 MB) and a full page beside it.
pub const DEFAULT_BYTES_IN_FLIGHT: usize = 64 << 20;

/// The least [`Budget`] a registry accepts: an entry of a member at the certificate cap
/// (`writer::MAX_CERTIFICATES_PER_MEMBER`, ~37 MB) is served alone and counts whole, so a
/// smaller budget could never serve it and every follower would stop there.
pub const MIN_BYTES_IN_FLIGHT: usize = 48 << 20;

/// The smallest page reservation: below it the request is refused. Small enough that a
/// follower at the head (a page of one or two entries) is served while large pages hold
/// nearly all of the budget.
pub const MIN_RESERVATION: usize = 64 << 10;

/// Pages built at once (each on a blocking thread, serializing in parallel); more requests
/// wait their turn.
pub const BUILDS: usize = 4;

/// Budget units are KiB, so that a budget of any size fits the semaphore's `u32` counts.
const UNIT: usize = 1024;

fn units(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(UNIT)).unwrap_or(u32::MAX)
}

/// The bytes of feed pages in flight, across requests, and the page builds under way.
#[derive(Debug)]
pub struct Budget {
    bytes: Arc<Semaphore>,
    total: usize,
    builds: Arc<Semaphore>,
}

/// Why a page could not be reserved: the budget is spent (the caller answers 503).
#[derive(Debug, thiserror::Error)]
#[error("{in_flight} of the {total} bytes the feed may hold in flight are taken{}", needed.map(|n| format!("; this page needs {n}")).unwrap_or_default())]
pub struct Busy {
    /// Bytes held by other pages now.
    pub in_flight: usize,
    /// The budget.
    pub total: usize,
    /// The size of the page built, when it was an entry larger than its reservation.
    pub needed: Option<usize>,
}

/// Part of the budget, held by one page.
#[derive(Debug)]
pub struct Reservation {
    permit: OwnedSemaphorePermit,
}

impl Reservation {
    /// Bytes reserved.
    pub fn bytes(&self) -> usize {
        self.permit.num_permits() * UNIT
    }
}

impl Budget {
    /// A budget of `total` bytes in flight (at least [`MIN_RESERVATION`]).
    pub fn new(total: usize) -> Self {
        let total = total.clamp(MIN_RESERVATION, u32::MAX as usize * UNIT);
        Budget {
            bytes: Arc::new(Semaphore::new(units(total) as usize)),
            total,
            builds: Arc::new(Semaphore::new(BUILDS)),
        }
    }

    /// The budget, in bytes.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Bytes held by pages now.
    pub fn in_flight(&self) -> usize {
        self.total
            .saturating_sub(self.bytes.available_permits() * UNIT)
    }

    /// Waits for a turn to build a page (at most [`BUILDS`] at once). The turn is owned so
    /// that the build holds it, not the request: a client that goes away while its page is
    /// built does not free the turn (or the page's reservation) before the build ends.
    pub async fn build_turn(&self) -> OwnedSemaphorePermit {
        // Never closed: the semaphore lives as long as the budget.
        loop {
            if let Ok(p) = self.builds.clone().acquire_owned().await {
                return p;
            }
        }
    }

    /// Reserves room for a page of at most `want` bytes: `want` when the budget has it, else
    /// the largest halving of it down to [`MIN_RESERVATION`] that it has; [`Busy`] when not
    /// even that is left.
    pub fn reserve(&self, want: usize) -> Result<Reservation, Busy> {
        let mut size = want.clamp(MIN_RESERVATION, self.total);
        loop {
            if let Ok(permit) = self.bytes.clone().try_acquire_many_owned(units(size)) {
                return Ok(Reservation { permit });
            }
            if size <= MIN_RESERVATION {
                return Err(self.busy(None));
            }
            size = (size / 2).max(MIN_RESERVATION);
        }
    }

    /// Fits `reservation` to a built page of `len` bytes: what the page does not use goes
    /// back to the budget; a page larger than its reservation (a single entry larger than
    /// the reservation, which a page always holds) takes the rest from the budget, or is
    /// [`Busy`] (and its reservation is returned) when the budget does not have it.
    pub fn fit(&self, mut reservation: Reservation, len: usize) -> Result<Reservation, Busy> {
        let (held, needed) = (reservation.permit.num_permits(), units(len) as usize);
        if needed <= held {
            drop(reservation.permit.split(held - needed));
            return Ok(reservation);
        }
        let extra = u32::try_from(needed - held).unwrap_or(u32::MAX);
        match self.bytes.clone().try_acquire_many_owned(extra) {
            Ok(more) => {
                reservation.permit.merge(more);
                Ok(reservation)
            }
            Err(_) => {
                drop(reservation);
                Err(self.busy(Some(len)))
            }
        }
    }

    fn busy(&self, needed: Option<usize>) -> Busy {
        Busy {
            in_flight: self.in_flight(),
            total: self.total,
            needed,
        }
    }
}

/// Chunks a held page is handed to the connection in: the reservation is released only
/// when the last one is taken, which the server does once the earlier ones are written.
const CHUNK: usize = 64 << 10;

/// A page's body that holds its reservation until its last byte is handed to the
/// connection (or the client goes away).
#[derive(Debug)]
pub struct HeldBody {
    rest: Bytes,
    reservation: Option<Reservation>,
}

impl HeldBody {
    /// `body`, holding `reservation` while it is sent.
    pub fn new(body: Vec<u8>, reservation: Reservation) -> Self {
        HeldBody {
            rest: Bytes::from(body),
            reservation: Some(reservation),
        }
    }
}

impl http_body::Body for HeldBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.rest.is_empty() {
            self.reservation = None;
            return Poll::Ready(None);
        }
        let n = self.rest.len().min(CHUNK);
        let chunk = self.rest.split_to(n);
        if self.rest.is_empty() {
            self.reservation = None;
        }
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.rest.len() as u64)
    }
}
