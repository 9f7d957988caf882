//! Certificate signing jobs: cancelled when nobody waits for them, shared by concurrent
//! retries, and remembered for a while so that a retry does not sign again.
//!
//! The writer makes issuance idempotent at the level of the log: a retry with the same
//! `Idempotency-Key` gets the same reserved counter range. Signing that range (up to 1024
//! SPHINCS+ signatures) is the slow part, and this module keeps it from being done twice
//! or for nobody:
//!
//! - **Cancellation.** A job signs its keys in chunks (each chunk in parallel on the rayon
//!   pool) and, between chunks, stops if no request is waiting for it any more (the client
//!   went away or the request timed out: the handler's future was dropped).
//! - **Sharing.** A job is named by member, first counter and the keys it certifies. A
//!   request for a job that is running attaches to it instead of starting another; a
//!   cancelled job that has not yet reached its next check is picked up again.
//! - **Keeping.** When the request may be retried (it carries an idempotency key), a finished
//!   job's certificates are kept in memory for [`IssuanceConfig::retention`] (bounded by
//!   [`IssuanceConfig::kept_bytes`], oldest dropped first) and a retry is answered from
//!   them, byte for byte. A cancelled job keeps what it had signed (always a prefix of the
//!   keys) and the next attempt continues from there, so retries of an issuance that takes
//!   longer than the request timeout make progress instead of starting over.
//!
//! What is kept is only a cache: after a restart or once dropped, a retry signs the same
//! keys for the same counters again (same zetas, fresh SPHINCS+ randomness).

use std::collections::{HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use dgsp_core::{Manager, MemberId, WotsPk};
use sha3::{Digest, Sha3_256};
use tokio::sync::watch;

/// Encoded certificates (kind-3 encoding), in counter order.
pub type Certified = Arc<Vec<Vec<u8>>>;

/// Why certificates could not be produced.
#[derive(Clone, Debug, thiserror::Error)]
pub enum IssuanceError {
    /// The signing code panicked; nothing was answered or kept.
    #[error("certificate signing failed: {0}")]
    Failed(String),
    /// The job was dropped without an answer (the runtime is shutting down).
    #[error("certificate signing stopped before it finished")]
    Stopped,
}

/// Settings of the issuance jobs.
#[derive(Clone, Debug)]
pub struct IssuanceConfig {
    /// Certificates signed (in parallel) between two checks for cancellation.
    pub chunk: usize,
    /// How long finished or partly signed certificates are kept for retries.
    pub retention: Duration,
    /// Most bytes of certificates kept for retries (the oldest are dropped first).
    pub kept_bytes: usize,
}

impl Default for IssuanceConfig {
    /// Chunks of four certificates per rayon thread (8 to 256): short enough to stop soon
    /// after a cancellation, long enough to keep every thread busy. Ten minutes, 256 MiB.
    fn default() -> Self {
        IssuanceConfig {
            chunk: (4 * rayon::current_num_threads()).clamp(8, 256),
            retention: Duration::from_secs(600),
            kept_bytes: 256 << 20,
        }
    }
}

/// One issuance to sign: a reserved counter range and the keys to certify.
#[derive(Debug)]
pub struct Job {
    /// Member id.
    pub id: MemberId,
    /// Counter of the first certificate (the writer reserved `first..first + len`).
    pub first: u64,
    /// WOTS+ public keys, in counter order.
    pub wots_pks: Vec<WotsPk>,
    /// Whether the same range can be asked for again (the request carries an idempotency
    /// key): only then are the certificates kept for retries.
    pub retryable: bool,
}

/// Counters of the issuance jobs (for the metrics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IssuanceStats {
    /// Signing jobs started.
    pub jobs_started: u64,
    /// Jobs stopped before the end because no request waited for them any more.
    pub jobs_cancelled: u64,
    /// Jobs started from the certificates a cancelled attempt had signed.
    pub jobs_resumed: u64,
    /// Requests that attached to a running job instead of starting one.
    pub served_in_flight: u64,
    /// Requests answered from kept certificates, without signing.
    pub served_kept: u64,
    /// Certificates signed.
    pub certificates_signed: u64,
    /// Jobs signing now.
    pub jobs_running: u64,
    /// Bytes of certificates kept for retries now.
    pub kept_bytes: u64,
}

/// Names a job: the same member, range and keys is the same job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct JobKey {
    id: MemberId,
    first: u64,
    keys: [u8; 32],
}

impl JobKey {
    fn of(job: &Job) -> JobKey {
        let mut h = Sha3_256::new();
        h.update((job.wots_pks.len() as u64).to_be_bytes());
        for pk in &job.wots_pks {
            h.update(pk.as_bytes());
        }
        JobKey {
            id: job.id,
            first: job.first,
            keys: h.finalize().into(),
        }
    }
}

type JobResult = Result<Certified, IssuanceError>;

/// A running job as its waiters see it.
struct Running {
    key: JobKey,
    retryable: bool,
    /// Requests waiting for the result. Raised only under the state lock; the decision to
    /// stop (seeing zero) is taken under the same lock.
    waiters: AtomicUsize,
    done: watch::Sender<Option<JobResult>>,
}

#[derive(Default)]
struct Counters {
    jobs_started: AtomicU64,
    jobs_cancelled: AtomicU64,
    jobs_resumed: AtomicU64,
    served_in_flight: AtomicU64,
    served_kept: AtomicU64,
    certificates_signed: AtomicU64,
}

struct State {
    running: HashMap<JobKey, Arc<Running>>,
    kept: Kept,
}

struct Inner {
    manager: Arc<Manager>,
    chunk: usize,
    state: Mutex<State>,
    counters: Counters,
}

impl Inner {
    /// The state; a panic elsewhere while holding the lock leaves it consistent (every
    /// critical section is a few map operations), so a poisoned lock is used as is.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The issuance jobs of one registry; cheap to clone.
#[derive(Clone)]
pub struct Issuer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Issuer({:?})", self.stats())
    }
}

/// Holds one waiter's place on a job; dropping it (the request went away) lets the job
/// stop at its next check once nobody else waits.
struct Waiting(Arc<Running>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.waiters.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Issuer {
    /// Jobs signing with `manager`'s key.
    pub fn new(manager: Arc<Manager>, config: IssuanceConfig) -> Issuer {
        Issuer {
            inner: Arc::new(Inner {
                manager,
                chunk: config.chunk.max(1),
                state: Mutex::new(State {
                    running: HashMap::new(),
                    kept: Kept::new(config.retention, config.kept_bytes),
                }),
                counters: Counters::default(),
            }),
        }
    }

    /// The certificates of `job`: kept ones, those of the same job already running, or
    /// freshly signed. If this future is dropped and no other request waits for the job,
    /// signing stops at the next chunk.
    pub async fn certify(&self, job: Job) -> Result<Certified, IssuanceError> {
        let key = JobKey::of(&job);
        let (_waiting, mut done) = {
            let mut state = self.inner.lock();
            let c = &self.inner.counters;
            if let Some(certs) = state.kept.complete(&key, Instant::now()) {
                c.served_kept.fetch_add(1, Ordering::Relaxed);
                return Ok(certs);
            }
            if let Some(running) = state.running.get(&key) {
                running.waiters.fetch_add(1, Ordering::AcqRel);
                c.served_in_flight.fetch_add(1, Ordering::Relaxed);
                (Waiting(running.clone()), running.done.subscribe())
            } else {
                let signed = if job.retryable {
                    state.kept.take_partial(&key, Instant::now())
                } else {
                    None
                };
                if signed.is_some() {
                    c.jobs_resumed.fetch_add(1, Ordering::Relaxed);
                }
                c.jobs_started.fetch_add(1, Ordering::Relaxed);
                let (done, rx) = watch::channel(None);
                let running = Arc::new(Running {
                    key,
                    retryable: job.retryable,
                    waiters: AtomicUsize::new(1),
                    done,
                });
                state.running.insert(key, running.clone());
                let inner = self.inner.clone();
                let task = running.clone();
                tokio::task::spawn_blocking(move || {
                    inner.run(&task, job, signed.unwrap_or_default());
                });
                (Waiting(running), rx)
            }
        };
        let result = done
            .wait_for(Option::is_some)
            .await
            .map_err(|_| IssuanceError::Stopped)?;
        result.clone().unwrap_or(Err(IssuanceError::Stopped))
    }

    /// The counters and current sizes.
    pub fn stats(&self) -> IssuanceStats {
        let c = &self.inner.counters;
        let (jobs_running, kept_bytes) = {
            let state = self.inner.lock();
            (state.running.len() as u64, state.kept.bytes as u64)
        };
        IssuanceStats {
            jobs_started: c.jobs_started.load(Ordering::Relaxed),
            jobs_cancelled: c.jobs_cancelled.load(Ordering::Relaxed),
            jobs_resumed: c.jobs_resumed.load(Ordering::Relaxed),
            served_in_flight: c.served_in_flight.load(Ordering::Relaxed),
            served_kept: c.served_kept.load(Ordering::Relaxed),
            certificates_signed: c.certificates_signed.load(Ordering::Relaxed),
            jobs_running,
            kept_bytes,
        }
    }
}

impl Inner {
    /// Runs a job on a blocking thread to its end: answered, cancelled or failed.
    fn run(&self, running: &Arc<Running>, job: Job, signed: Vec<Vec<u8>>) {
        let outcome = catch_unwind(AssertUnwindSafe(|| self.sign(running, &job, signed)));
        let result = match outcome {
            Ok(Some(certs)) => Ok(Arc::new(certs)),
            // Cancelled: `sign` removed the job and kept its prefix; nobody waits.
            Ok(None) => return,
            Err(panic) => Err(IssuanceError::Failed(panic_message(&panic))),
        };
        {
            let mut state = self.lock();
            if state
                .running
                .get(&running.key)
                .is_some_and(|r| Arc::ptr_eq(r, running))
            {
                state.running.remove(&running.key);
            }
            if let (Ok(certs), true) = (&result, running.retryable) {
                state
                    .kept
                    .put(running.key, certs.clone(), true, Instant::now());
            }
        }
        running.done.send_replace(Some(result));
    }

    /// Signs the keys after the `signed` prefix, a chunk at a time. `None` if it stopped
    /// because nobody waits any more.
    fn sign(&self, running: &Running, job: &Job, mut signed: Vec<Vec<u8>>) -> Option<Vec<Vec<u8>>> {
        signed.reserve_exact(job.wots_pks.len().saturating_sub(signed.len()));
        while signed.len() < job.wots_pks.len() {
            if running.waiters.load(Ordering::Acquire) == 0 && self.stop(running, &signed) {
                return None;
            }
            let start = signed.len();
            let end = (start + self.chunk).min(job.wots_pks.len());
            let certs =
                self.manager
                    .certify(job.id, job.first + start as u64, &job.wots_pks[start..end]);
            self.counters
                .certificates_signed
                .fetch_add(certs.len() as u64, Ordering::Relaxed);
            signed.extend(certs.iter().map(|c| c.to_bytes()));
        }
        Some(signed)
    }

    /// Under the lock: stops the job if still nobody waits (keeping what it signed when
    /// the request can be retried). False if a request attached meanwhile.
    fn stop(&self, running: &Running, signed: &[Vec<u8>]) -> bool {
        let mut state = self.lock();
        if running.waiters.load(Ordering::Acquire) != 0 {
            return false;
        }
        state.running.remove(&running.key);
        if running.retryable && !signed.is_empty() {
            state.kept.put(
                running.key,
                Arc::new(signed.to_vec()),
                false,
                Instant::now(),
            );
        }
        self.counters.jobs_cancelled.fetch_add(1, Ordering::Relaxed);
        true
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_owned())
}

/// Certificates kept for retries: by job, expiring after `retention`, at most `max_bytes`
/// in all (the oldest dropped first).
struct Kept {
    retention: Duration,
    max_bytes: usize,
    bytes: usize,
    entries: HashMap<JobKey, KeptEntry>,
    /// Insertion order (which is expiry order): `(generation, key)`; an item whose
    /// generation is no longer the entry's is stale and skipped.
    order: VecDeque<(u64, JobKey)>,
    generation: u64,
}

struct KeptEntry {
    certs: Certified,
    complete: bool,
    bytes: usize,
    at: Instant,
    generation: u64,
}

impl Kept {
    fn new(retention: Duration, max_bytes: usize) -> Kept {
        Kept {
            retention,
            max_bytes,
            bytes: 0,
            entries: HashMap::new(),
            order: VecDeque::new(),
            generation: 0,
        }
    }

    /// The certificates of a finished job, if kept.
    fn complete(&mut self, key: &JobKey, now: Instant) -> Option<Certified> {
        self.expire(now);
        self.entries
            .get(key)
            .filter(|e| e.complete)
            .map(|e| e.certs.clone())
    }

    /// Takes the prefix a cancelled job signed, if kept.
    fn take_partial(&mut self, key: &JobKey, now: Instant) -> Option<Vec<Vec<u8>>> {
        self.expire(now);
        if self.entries.get(key).is_none_or(|e| e.complete) {
            return None;
        }
        let e = self.remove(key)?;
        Some(Arc::try_unwrap(e.certs).unwrap_or_else(|shared| shared.as_ref().clone()))
    }

    /// Keeps `certs` for `key` (replacing what was kept for it), unless larger than the
    /// whole budget; drops the oldest entries until within it.
    fn put(&mut self, key: JobKey, certs: Certified, complete: bool, now: Instant) {
        self.expire(now);
        self.remove(&key);
        let bytes = certs.iter().map(|c| c.len()).sum::<usize>() + 64;
        if bytes > self.max_bytes {
            return;
        }
        self.generation += 1;
        self.entries.insert(
            key,
            KeptEntry {
                certs,
                complete,
                bytes,
                at: now,
                generation: self.generation,
            },
        );
        self.order.push_back((self.generation, key));
        self.bytes += bytes;
        while self.bytes > self.max_bytes {
            let Some((generation, key)) = self.order.pop_front() else {
                break;
            };
            if self
                .entries
                .get(&key)
                .is_some_and(|e| e.generation == generation)
            {
                self.remove(&key);
            }
        }
    }

    fn remove(&mut self, key: &JobKey) -> Option<KeptEntry> {
        let e = self.entries.remove(key)?;
        self.bytes -= e.bytes;
        Some(e)
    }

    /// Drops entries older than the retention, and stale order items at the front.
    fn expire(&mut self, now: Instant) {
        while let Some(&(generation, key)) = self.order.front() {
            match self.entries.get(&key) {
                Some(e) if e.generation == generation => {
                    if now.duration_since(e.at) < self.retention {
                        break;
                    }
                    self.remove(&key);
                }
                _ => {}
            }
            self.order.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u64) -> JobKey {
        JobKey {
            id: n,
            first: 0,
            keys: [0; 32],
        }
    }

    fn certs(n: usize, len: usize) -> Certified {
        Arc::new(vec![vec![7u8; len]; n])
    }

    /// Polls `issuer`'s stats until `ok` (a hang after 60 s fails the test).
    async fn until(issuer: &Issuer, ok: impl Fn(&IssuanceStats) -> bool) -> IssuanceStats {
        for _ in 0..60_000 {
            let stats = issuer.stats();
            if ok(&stats) {
                return stats;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("stats never satisfied the condition: {:?}", issuer.stats());
    }

    /// An attempt abandoned and retried after its job stopped resumes from the kept prefix;
    /// one retried at once joins the job before it stops; either way no certificate is
    /// signed twice and the final answer covers the right counters.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn abandoned_attempts_never_sign_a_certificate_twice() {
        use dgsp_core::{Certificate, ParamSet};
        use rand_chacha::rand_core::SeedableRng;
        let params = ParamSet::Sha2_128f;
        let manager = Arc::new(Manager::generate(
            params,
            &mut rand_chacha::ChaCha20Rng::seed_from_u64(1),
        ));
        let config = IssuanceConfig {
            chunk: 4,
            ..IssuanceConfig::default()
        };
        let issuer = Issuer::new(manager.clone(), config);
        let pks: Vec<WotsPk> = (0..256u16)
            .map(|k| WotsPk::from_slice(params, &[k.to_le_bytes(); 8].concat()).unwrap())
            .collect();
        let attempt = || {
            let (issuer, wots_pks) = (issuer.clone(), pks.clone());
            tokio::spawn(async move {
                let job = Job {
                    id: 3,
                    first: 10,
                    wots_pks,
                    retryable: true,
                };
                issuer.certify(job).await
            })
        };

        // Abandoned once signing is under way; the job stops and keeps its prefix.
        let first = attempt();
        until(&issuer, |s| s.certificates_signed > 0).await;
        first.abort();
        let stopped = until(&issuer, |s| s.jobs_running == 0).await;
        assert_eq!(stopped.jobs_cancelled, 1);
        assert!(stopped.kept_bytes > 0);

        // The retry resumes; abandoned in turn and retried at once.
        let second = attempt();
        let resumed = until(&issuer, |s| {
            s.certificates_signed > stopped.certificates_signed
        })
        .await;
        assert_eq!(resumed.jobs_resumed, 1);
        second.abort();
        let certs = attempt().await.unwrap().unwrap();

        let stats = issuer.stats();
        assert_eq!(stats.certificates_signed, 256, "{stats:?}");
        assert_eq!(stats.jobs_running, 0);
        let zetas = manager.zetas(3, 10..266);
        assert_eq!(certs.len(), 256);
        for (cert, zeta) in certs.iter().zip(&zetas) {
            assert_eq!(Certificate::from_bytes(cert).unwrap().zeta(), zeta);
        }
        // Served again from what is kept, the same bytes.
        assert_eq!(attempt().await.unwrap().unwrap(), certs);
        assert_eq!(issuer.stats().served_kept, 1);
    }

    #[test]
    fn kept_entries_expire_after_the_retention() {
        let mut kept = Kept::new(Duration::from_secs(10), 1 << 20);
        let t0 = Instant::now();
        kept.put(key(1), certs(2, 100), true, t0);
        assert!(kept
            .complete(&key(1), t0 + Duration::from_secs(9))
            .is_some());
        assert!(kept
            .complete(&key(1), t0 + Duration::from_secs(10))
            .is_none());
        assert_eq!((kept.bytes, kept.entries.len()), (0, 0));
    }

    #[test]
    fn kept_bytes_are_bounded_oldest_dropped_first() {
        let mut kept = Kept::new(Duration::from_secs(600), 1000);
        let t0 = Instant::now();
        for n in 0..5 {
            kept.put(key(n), certs(1, 300), true, t0);
        }
        // 364 bytes each: two fit.
        assert!(kept.bytes <= 1000);
        assert!(kept.complete(&key(4), t0).is_some());
        assert!(kept.complete(&key(3), t0).is_some());
        assert!(kept.complete(&key(2), t0).is_none());
        // Larger than the whole budget: not kept, nothing else dropped.
        kept.put(key(9), certs(1, 2000), true, t0);
        assert!(kept.complete(&key(9), t0).is_none());
        assert!(kept.complete(&key(4), t0).is_some());
    }

    #[test]
    fn a_partial_entry_is_taken_once_and_never_served_as_complete() {
        let mut kept = Kept::new(Duration::from_secs(600), 1 << 20);
        let t0 = Instant::now();
        kept.put(key(1), certs(3, 10), false, t0);
        assert!(kept.complete(&key(1), t0).is_none());
        assert_eq!(kept.take_partial(&key(1), t0).map(|p| p.len()), Some(3));
        assert!(kept.take_partial(&key(1), t0).is_none());
        assert_eq!(kept.bytes, 0);
        // Replacing and re-putting leaves stale order items that expiry skips.
        kept.put(key(2), certs(1, 10), false, t0);
        kept.put(key(2), certs(2, 10), true, t0);
        assert_eq!(kept.complete(&key(2), t0).map(|c| c.len()), Some(2));
        assert!(kept
            .complete(&key(2), t0 + Duration::from_secs(600))
            .is_none());
        assert!(kept.order.is_empty());
    }
}
