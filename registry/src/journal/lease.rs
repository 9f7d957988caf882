//! The write lease: at most one registry writes a group's journal.
//!
//! The lease is one object, `private/lease`, changed only by compare-and-swap
//! ([`Precondition::Absent`] to create it, [`Precondition::Matches`] to renew or take it):
//! of two registries racing for it, one wins. The holder renews it every quarter of its
//! time to live (`ttl`) and trusts it only for four fifths of `ttl` after the moment it
//! *sent* its last successful renewal; a standby takes it only after it has watched the
//! object stay unchanged for `ttl` plus a fifth, measured on its own monotonic clock. No
//! wall clock is compared between machines: a holder that stopped renewing has stopped
//! trusting its lease before any standby takes it, as long as the two clocks tick at
//! about the same rate.
//!
//! The lease is not the only fence: journal segments are created only if absent and named
//! by the seq of their first entry, so a writer that lost the lease without noticing can
//! never replace what its successor wrote (`super::Journal::append`). And a writer proves
//! the lease again after every segment it writes ([`Lease::confirm`]): the object still names
//! it, so any takeover comes after the segment landed, and the successor's catch-up reads
//! it. That proof uses no clock, so it holds for a process that was paused with its clock
//! (docs/event-log.md, "Fencing").
//!
//! Every request to the store is bounded by [`Lease::request_bound`] (a fifth of `ttl`), and
//! a renewal is also cut off when the lease's trust runs out: a renewal that hangs loses to
//! the deadline instead of holding the registry in a state it cannot prove.
//!
//! The record carries the journal's head as of the last renewal ([`JournalHead`]),
//! authenticated under the journal key: a standby that takes over refuses a journal that
//! ends before it (segments deleted from the bucket).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use dgsp_tilestore::{Bytes, Error as StoreError, Precondition, TileStore, Version};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

/// The lease object's key.
pub const LEASE_KEY: &str = "private/lease";

/// Why the lease cannot be relied on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LeaseError {
    /// Another registry holds the lease now.
    #[error("the write lease was taken by another registry ({0}); this one stopped writing")]
    Lost(String),
    /// No renewal succeeded for too long (the object store did not answer).
    #[error(
        "the write lease could not be renewed for {0:?} (the object store did not answer); writes stopped so that a standby can take over safely"
    )]
    Expired(Duration),
    /// The lease was given up at shutdown.
    #[error("the write lease was released (the registry is stopping)")]
    Released,
    /// The lease could not be proven held just now (the store did not answer in time).
    #[error("the write lease could not be proven held: {0}")]
    Unproven(String),
}

/// The journal's head as a holder last recorded it in the lease: the seq and hash of the
/// last entry of the last segment it confirmed, and a tag under the journal key
/// (`super::JournalKey::head_tag`), so that nobody without the manager key can forge one.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct JournalHead {
    /// seq of the last entry the journal holds
    pub seq: u64,
    /// its hash, hex
    pub hash: String,
    /// the tag, hex
    pub tag: String,
}

/// The lease object.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Record {
    /// random id of the holding process
    pub holder: String,
    /// host name of the holder, for operators
    pub host: String,
    /// process id of the holder, for operators
    pub pid: u32,
    /// how long the holder promises to renew within, milliseconds
    pub ttl_ms: u64,
    /// renewals so far (every renewal changes the object)
    pub beat: u64,
    /// given up at a clean shutdown: a standby takes it at once
    pub released: bool,
    /// the journal's head at the last renewal (absent before the first segment)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<JournalHead>,
}

impl Record {
    fn describe(&self) -> String {
        format!("holder {} on {} pid {}", self.holder, self.host, self.pid)
    }
}

struct Held {
    version: Version,
    record: Record,
    /// until when this process trusts the lease
    valid_until: Instant,
    /// set once the lease is known lost or released
    gone: Option<LeaseError>,
}

/// A lease this process holds.
pub struct Lease {
    tiles: Arc<dyn TileStore>,
    ttl: Duration,
    held: Mutex<Held>,
    /// the record this process replaced when it took the lease (`None`: it created it)
    replaced: Option<Record>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease").field("ttl", &self.ttl).finish()
    }
}

fn trusted_for(ttl: Duration) -> Duration {
    ttl * 4 / 5
}

/// The longest one request to the store may take for a lease of `ttl`: a fifth of it, so
/// that a write, the proof after it and a renewal all fit well inside the trusted time.
pub fn request_bound(ttl: Duration) -> Duration {
    (ttl / 5).max(Duration::from_millis(10))
}

/// `fut`, or a timeout error once `bound` has passed.
async fn bounded<T>(
    bound: Duration,
    what: &str,
    fut: impl std::future::Future<Output = Result<T, StoreError>>,
) -> Result<T, String> {
    match tokio::time::timeout(bound, fut).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err(format!("{what}: no answer within {bound:?}")),
    }
}

/// How long a standby watches an unchanged lease stating `ttl` before taking it.
pub fn takeover_after(ttl: Duration) -> Duration {
    ttl + ttl / 5
}

fn encode(r: &Record) -> Bytes {
    Bytes::from(serde_json::to_vec(r).expect("lease records serialize"))
}

impl Lease {
    /// Waits until this process holds the lease of `tiles`, stating `ttl`. While another
    /// holder's lease is live, calls `between` after every look (a standby catches up
    /// there) and logs who holds it. Errors of the store are logged and retried; every
    /// request is bounded by [`request_bound`].
    pub async fn acquire<F, Fut>(
        tiles: Arc<dyn TileStore>,
        ttl: Duration,
        mut between: F,
    ) -> Arc<Lease>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let mut id = [0u8; 16];
        rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut id);
        let mine = Record {
            holder: hex::encode(id),
            host: hostname(),
            pid: std::process::id(),
            ttl_ms: ttl.as_millis() as u64,
            beat: 0,
            released: false,
            head: None,
        };
        let bound = request_bound(ttl);
        let poll = (ttl / 4).clamp(Duration::from_millis(50), Duration::from_secs(2));
        // The version last seen and since when (this process's monotonic clock).
        let mut seen: Option<(Version, Instant)> = None;
        let mut said = None;
        loop {
            let take = match bounded(bound, "reading the lease", tiles.get(LEASE_KEY)).await {
                Err(e) => {
                    tracing::warn!(error = %e, "reading the write lease failed; retrying");
                    None
                }
                Ok(None) => Some((Precondition::Absent, None)),
                Ok(Some(obj)) => {
                    let other: Option<Record> = serde_json::from_slice(&obj.bytes).ok();
                    let stated = other
                        .as_ref()
                        .map(|r| Duration::from_millis(r.ttl_ms))
                        .unwrap_or(ttl);
                    let now = Instant::now();
                    match (&seen, &other) {
                        (_, Some(r)) if r.released => {
                            Some((Precondition::Matches(obj.version), other.clone()))
                        }
                        (Some((v, since)), _)
                            if *v == obj.version
                                && now.duration_since(*since) >= takeover_after(stated) =>
                        {
                            tracing::warn!(
                                holder = other.as_ref().map(Record::describe).unwrap_or_default(),
                                "the write lease was not renewed in time: taking it over"
                            );
                            Some((Precondition::Matches(obj.version), other.clone()))
                        }
                        (Some((v, _)), _) if *v == obj.version => None,
                        _ => {
                            let who = other.as_ref().map(Record::describe);
                            if said != who {
                                tracing::info!(
                                    holder = who.clone().unwrap_or_else(|| "unreadable".into()),
                                    "standing by: another registry holds the write lease"
                                );
                                said = who;
                            }
                            seen = Some((obj.version, now));
                            None
                        }
                    }
                }
            };
            if let Some((pre, replaced)) = take {
                let sent = Instant::now();
                let bytes = encode(&mine);
                match bounded(
                    bound,
                    "taking the lease",
                    put_confirmed(tiles.as_ref(), bytes, pre, &mine),
                )
                .await
                {
                    Ok(Put::Wrote(version)) => {
                        tracing::info!(holder = %mine.holder, ?ttl, "holding the write lease");
                        return Arc::new(Lease {
                            tiles,
                            ttl,
                            held: Mutex::new(Held {
                                version,
                                record: mine,
                                valid_until: sent + trusted_for(ttl),
                                gone: None,
                            }),
                            replaced,
                        });
                    }
                    // Another registry won the race (ours is a fresh holder id: never `Ours`).
                    Ok(Put::Ours(..) | Put::Other) => seen = None,
                    Err(e) => tracing::warn!(error = %e, "taking the write lease failed; retrying"),
                }
            }
            between().await;
            tokio::time::sleep(poll).await;
        }
    }

    /// `Ok` while this process may write: it holds the lease and last renewed it recently
    /// enough, by its own monotonic clock.
    pub fn check(&self) -> Result<(), LeaseError> {
        let h = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(gone) = &h.gone {
            return Err(gone.clone());
        }
        let now = Instant::now();
        if now > h.valid_until {
            return Err(LeaseError::Expired(
                now.duration_since(h.valid_until) + trusted_for(self.ttl),
            ));
        }
        Ok(())
    }

    /// Proves, with no clock, that no other registry has taken the lease: reads the object
    /// and finds this holder's record in it. Whatever this process wrote to the store
    /// before the call began is then seen by any later holder's catch-up (a takeover is a
    /// write of the lease, after this read). `Lost` when another holds it (remembered);
    /// `Unproven` when no read, each bounded by [`request_bound`], was answered before
    /// the lease's trusted time ran out.
    pub async fn confirm(&self) -> Result<(), LeaseError> {
        let holder = self.holder();
        let bound = request_bound(self.ttl);
        let mut wait = Duration::from_millis(10);
        loop {
            // A read that fails is tried again while the lease is trusted: a proof read
            // later proves as much.
            if let Err(e) = self.check() {
                return Err(match e {
                    LeaseError::Expired(_) => LeaseError::Unproven(e.to_string()),
                    other => other,
                });
            }
            match bounded(bound, "reading the lease", self.tiles.get(LEASE_KEY)).await {
                Ok(Some(o)) => {
                    return match serde_json::from_slice::<Record>(&o.bytes) {
                        Ok(r) if r.holder == holder && !r.released => Ok(()),
                        Ok(r) => Err(self.lose(r.describe())),
                        Err(_) => Err(self.lose("unreadable lease".into())),
                    }
                }
                Ok(None) => return Err(self.lose("lease deleted".into())),
                Err(e) => {
                    tracing::warn!(error = %e, "proving the write lease failed; retrying");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(bound);
                }
            }
        }
    }

    fn holder(&self) -> String {
        let h = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        h.record.holder.clone()
    }

    /// Marks the lease lost to `who` and returns the error.
    fn lose(&self, who: String) -> LeaseError {
        let lost = LeaseError::Lost(who);
        let mut h = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if h.gone.is_none() {
            h.gone = Some(lost.clone());
        }
        lost
    }

    /// The time to live this lease states.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The longest one request to the store may take under this lease.
    pub fn request_bound(&self) -> Duration {
        request_bound(self.ttl)
    }

    /// The record this process replaced when it took the lease: a previous holder's, with
    /// the journal head it recorded (`None` when the lease did not exist).
    pub fn replaced(&self) -> Option<&Record> {
        self.replaced.as_ref()
    }

    /// Records `head` as the journal's head; the next renewal writes it.
    pub fn set_head(&self, head: JournalHead) {
        let mut h = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if h.record.head.as_ref().is_none_or(|old| old.seq <= head.seq) {
            h.record.head = Some(head);
        }
    }

    /// Renews the lease once. `Err(Lost)` when another registry holds it now; a store
    /// that does not answer (within [`request_bound`], and before the trusted time runs
    /// out) is an `Ok` that extends nothing (see [`check`](Self::check)).
    pub async fn renew(&self) -> Result<(), LeaseError> {
        let (version, record, until) = {
            let mut h = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(gone) = &h.gone {
                return Err(gone.clone());
            }
            h.record.beat += 1;
            (h.version.clone(), h.record.clone(), h.valid_until)
        };
        let sent = Instant::now();
        // Raced against the deadline, so a renewal that hangs loses to expiry; one sent
        // after it still learns whether the lease was lost.
        let left = until.saturating_duration_since(sent);
        let bound = match left.is_zero() {
            true => request_bound(self.ttl),
            false => request_bound(self.ttl).min(left),
        };
        let put = put_confirmed(
            self.tiles.as_ref(),
            encode(&record),
            Precondition::Matches(version),
            &record,
        );
        match bounded(bound, "renewing the lease", put).await {
            Ok(Put::Wrote(v)) => {
                let mut h = self.held.lock().unwrap_or_else(PoisonError::into_inner);
                h.version = v;
                h.valid_until = h.valid_until.max(sent + trusted_for(self.ttl));
                Ok(())
            }
            Ok(Put::Ours(v, stored)) => {
                // An earlier renewal of ours, cut off by its bound, landed after all: hold
                // its version, but extend nothing (when it landed is unknown).
                let mut h = self.held.lock().unwrap_or_else(PoisonError::into_inner);
                h.version = v;
                h.record.beat = h.record.beat.max(stored.beat);
                tracing::warn!("an earlier renewal of the write lease landed late; renewing again");
                Ok(())
            }
            Ok(Put::Other) => {
                let who = match bounded(
                    request_bound(self.ttl),
                    "reading the lease",
                    self.tiles.get(LEASE_KEY),
                )
                .await
                {
                    Ok(Some(o)) => serde_json::from_slice::<Record>(&o.bytes)
                        .map(|r| r.describe())
                        .unwrap_or_else(|_| "unreadable lease".into()),
                    Ok(None) => "lease deleted".into(),
                    Err(e) => format!("unknown: {e}"),
                };
                Err(self.lose(who))
            }
            Err(e) => {
                tracing::warn!(error = %e, "renewing the write lease failed; retrying");
                Ok(())
            }
        }
    }

    /// Renews every quarter of the time to live until the lease is lost, or no renewal
    /// succeeded for longer than it is trusted, then returns why.
    pub async fn keep(self: Arc<Self>) -> LeaseError {
        match self.keep_until(std::future::pending()).await {
            Some(e) => e,
            None => unreachable!("a pending future never completes"),
        }
    }

    /// [`keep`](Self::keep) until `stop` completes: `None` then. `stop` is only heeded
    /// between renewals, never during one, so the version this process holds is the one in
    /// the store and [`release`](Self::release) can give it up (a renewal cancelled after
    /// its write landed would leave a version the release no longer matches, and a standby
    /// waiting out the whole time to live).
    pub async fn keep_until(
        self: Arc<Self>,
        stop: impl std::future::Future<Output = ()>,
    ) -> Option<LeaseError> {
        tokio::pin!(stop);
        loop {
            tokio::select! {
                () = tokio::time::sleep(self.ttl / 4) => {}
                () = &mut stop => return None,
            }
            if let Err(e) = self.renew().await {
                return Some(e);
            }
            if let Err(e) = self.check() {
                return Some(e);
            }
        }
    }

    /// Gives the lease up (clean shutdown): a standby takes it at once. Nothing may be
    /// written after this.
    pub async fn release(&self) {
        let (version, mut record) = {
            let mut h = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            if h.gone.is_some() {
                return;
            }
            h.gone = Some(LeaseError::Released);
            (h.version.clone(), h.record.clone())
        };
        record.released = true;
        record.beat += 1;
        let put = put_confirmed(
            self.tiles.as_ref(),
            encode(&record),
            Precondition::Matches(version),
            &record,
        );
        match bounded(request_bound(self.ttl), "releasing the lease", put).await {
            Ok(Put::Wrote(_)) => tracing::info!("released the write lease"),
            Ok(Put::Ours(..)) => {
                tracing::warn!("an earlier renewal landed late: the write lease is left to expire")
            }
            Ok(Put::Other) => tracing::warn!("the write lease was no longer ours at release"),
            Err(e) => {
                tracing::warn!(error = %e, "releasing the write lease failed; a standby takes it once it expires")
            }
        }
    }
}

impl crate::health::Fence for Lease {
    fn check(&self) -> Result<(), String> {
        Lease::check(self).map_err(|e| e.to_string())
    }

    fn prove(
        &self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + '_>> {
        Box::pin(async move { self.confirm().await.map_err(|e| e.to_string()) })
    }
}

/// What a compare-and-swap of the lease did.
enum Put {
    /// The object holds exactly these bytes now (written by this call, or by an earlier
    /// try of it whose answer was lost: S3 then reports a failed precondition for a write
    /// that happened).
    Wrote(Version),
    /// The object holds another record of the same holder: an earlier write of this
    /// process (cut off by its bound) landed after all.
    Ours(Version, Record),
    /// Another holder's record, or no object.
    Other,
}

async fn put_confirmed(
    tiles: &dyn TileStore,
    bytes: Bytes,
    pre: Precondition,
    mine: &Record,
) -> Result<Put, StoreError> {
    match tiles.put_if(LEASE_KEY, bytes.clone(), pre).await {
        Ok(v) => Ok(Put::Wrote(v)),
        Err(StoreError::PreconditionFailed { .. }) => match tiles.get(LEASE_KEY).await? {
            Some(o) if o.bytes == bytes => Ok(Put::Wrote(o.version)),
            Some(o) => match serde_json::from_slice::<Record>(&o.bytes) {
                Ok(r) if r.holder == mine.holder && !r.released => Ok(Put::Ours(o.version, r)),
                _ => Ok(Put::Other),
            },
            None => Ok(Put::Other),
        },
        Err(e) => Err(e),
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dgsp_tilestore::LocalDir;

    fn store(dir: &std::path::Path) -> Arc<dyn TileStore> {
        Arc::new(LocalDir::open(dir).unwrap())
    }

    #[tokio::test]
    async fn a_standby_waits_until_the_holder_stops_renewing() {
        let dir = tempfile::tempdir().unwrap();
        let ttl = Duration::from_millis(400);
        let first = Lease::acquire(store(dir.path()), ttl, || async {}).await;
        first.check().unwrap();
        let keeper = tokio::spawn(first.clone().keep());
        // While the holder renews, the standby does not get it.
        let standby = tokio::spawn(Lease::acquire(store(dir.path()), ttl, || async {}));
        tokio::time::sleep(ttl * 3).await;
        assert!(
            !standby.is_finished(),
            "took a lease that was being renewed"
        );
        first.check().unwrap();
        // The holder stops renewing (as if killed): the standby takes it after ttl + ttl/5,
        // by which time the holder no longer trusts its own.
        keeper.abort();
        let stopped = Instant::now();
        let second = tokio::time::timeout(ttl * 10, standby)
            .await
            .expect("the standby took over")
            .unwrap();
        assert!(stopped.elapsed() >= ttl, "took over too early");
        second.check().unwrap();
        assert!(
            matches!(first.check(), Err(LeaseError::Expired(_))),
            "the old holder still trusted its lease after the takeover"
        );
        // The old holder's next renewal finds it lost, naming the new holder.
        match first.renew().await {
            Err(LeaseError::Lost(who)) => assert!(who.contains("holder"), "{who}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(first.check(), Err(LeaseError::Lost(_))));
    }

    #[tokio::test]
    async fn a_released_lease_is_taken_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let ttl = Duration::from_secs(30);
        let first = Lease::acquire(store(dir.path()), ttl, || async {}).await;
        first.release().await;
        assert_eq!(first.check(), Err(LeaseError::Released));
        let started = Instant::now();
        let second = tokio::time::timeout(
            Duration::from_secs(5),
            Lease::acquire(store(dir.path()), ttl, || async {}),
        )
        .await
        .expect("a released lease is taken without waiting for its ttl");
        second.check().unwrap();
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn of_two_racing_registries_one_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let ttl = Duration::from_secs(30);
        let a = tokio::spawn(Lease::acquire(store(dir.path()), ttl, || async {}));
        let b = tokio::spawn(Lease::acquire(store(dir.path()), ttl, || async {}));
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            usize::from(a.is_finished()) + usize::from(b.is_finished()),
            1,
            "exactly one of two racing registries holds the lease"
        );
        a.abort();
        b.abort();
    }
}
