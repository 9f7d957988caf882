//! The bounded verification pool: CPU-bound work (SPHINCS+ and WOTS+ checks) runs on its own
//! threads, never on the async runtime, and at most `capacity` verifications wait or run at
//! once. A request that would exceed that is refused at once ([`PoolError::Busy`], answered
//! 503 with Retry-After) so latency stays bounded under overload instead of growing with the
//! queue.
//!
//! Verifications are queued one signature at a time, whatever request they came from, and a
//! worker takes several at once and checks them with one engine batch call
//! (`ManagerPublicKey::verify_batch_ignoring_revocation`): concurrent single verify requests
//! are coalesced exactly like the items of a batch request ([`queue`]). A worker never waits
//! for more work while it could be verifying, except for the bounded coalescing wait of
//! [`PoolConfig::coalesce_wait`], and only while every other worker is busy.

mod queue;

use std::sync::Arc;
use std::time::Duration;

use dgsp_core::{Error as CoreError, ManagerPublicKey, Signature, WotsPk};
use tokio::sync::{oneshot, Semaphore};

pub use queue::PoolStats;
use queue::{Job, Queue, VerifyJob};

/// Queue slots per worker when no capacity is configured.
pub const DEFAULT_SLOTS_PER_WORKER: usize = 64;

/// Why a job did not produce a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// The queue is full: retry later.
    #[error("the verification queue is full")]
    Busy,
    /// The job panicked (a bug; the worker survives and the panic is logged).
    #[error("a verification job failed unexpectedly")]
    Crashed,
}

/// How the pool is sized and how it coalesces.
#[derive(Clone, Debug)]
pub struct PoolConfig {
    /// Worker threads (at least 1).
    pub workers: usize,
    /// Verifications that may wait or run at once (at least 1; the server's default is
    /// [`DEFAULT_SLOTS_PER_WORKER`] per worker).
    pub capacity: usize,
    /// How long a worker that finds fewer than a lane-filling number of signatures queued
    /// may wait for more, and only while every other worker is busy (zero: never wait;
    /// what is queued when a worker comes free is still verified together).
    pub coalesce_wait: Duration,
}

/// One signature to verify under a group key, revocation aside (the caller checked it).
pub struct VerifyItem {
    /// The group key (shared: items of one group are batched together).
    pub group: Arc<ManagerPublicKey>,
    /// The signed message.
    pub message: Vec<u8>,
    /// The signature.
    pub sig: Box<Signature>,
}

/// The verdict on one [`VerifyItem`].
pub type Verdict = Result<WotsPk, CoreError>;

/// A fixed set of worker threads with a bounded queue.
pub struct VerifyPool {
    queue: Arc<Queue>,
    threads: Vec<std::thread::JoinHandle<()>>,
    slots: Arc<Semaphore>,
    capacity: usize,
}

impl VerifyPool {
    /// Starts `config.workers` threads named `dgsp-verify-N`.
    pub fn new(config: &PoolConfig) -> std::io::Result<Self> {
        let workers = config.workers.max(1);
        let capacity = config.capacity.max(1);
        let queue = Arc::new(Queue::new(workers, config.coalesce_wait));
        let mut threads = Vec::with_capacity(workers);
        for i in 0..workers {
            let q = queue.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("dgsp-verify-{i}"))
                .spawn(move || q.work());
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => {
                    queue.close();
                    return Err(e);
                }
            }
        }
        Ok(VerifyPool {
            queue,
            threads,
            slots: Arc::new(Semaphore::new(capacity)),
            capacity,
        })
    }

    /// Worker threads.
    pub fn workers(&self) -> usize {
        self.threads.len()
    }

    /// Verifications that may wait or run at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Verifications waiting or running now.
    pub fn in_flight(&self) -> usize {
        self.capacity - self.slots.available_permits()
    }

    /// How the workers have been batching.
    pub fn stats(&self) -> PoolStats {
        self.queue.stats()
    }

    /// Verifies every item (in parallel, coalesced with whatever else is queued), or none of
    /// them if they do not all fit in the queue. Verdicts come back in order.
    pub async fn verify(&self, items: Vec<VerifyItem>) -> Result<Vec<Verdict>, PoolError> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let n = u32::try_from(items.len()).map_err(|_| PoolError::Busy)?;
        let mut permit = self
            .slots
            .clone()
            .try_acquire_many_owned(n)
            .map_err(|_| PoolError::Busy)?;
        let mut waits = Vec::with_capacity(items.len());
        let mut jobs = Vec::with_capacity(items.len());
        for item in items {
            let (tx, rx) = oneshot::channel();
            // Each item's slot is released when that item is done (not when all are).
            let slot = permit.split(1).expect("one slot per item was acquired");
            jobs.push(Job::Verify(VerifyJob {
                item,
                done: tx,
                slot,
            }));
            waits.push(rx);
        }
        self.queue.push(jobs);
        let mut out = Vec::with_capacity(waits.len());
        for rx in waits {
            out.push(rx.await.map_err(|_| PoolError::Crashed)?);
        }
        Ok(out)
    }

    /// Runs one job (any CPU-bound work, e.g. a judge) on a worker; it takes one slot.
    pub async fn run<T, F>(&self, job: F) -> Result<T, PoolError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let slot = self
            .slots
            .clone()
            .try_acquire_owned()
            .map_err(|_| PoolError::Busy)?;
        let (tx, rx) = oneshot::channel();
        self.queue.push(vec![Job::Task(Box::new(move || {
            let out = job();
            // Free the slot before the caller hears the result.
            drop(slot);
            let _ = tx.send(out);
        }))]);
        rx.await.map_err(|_| PoolError::Crashed)
    }
}

impl Drop for VerifyPool {
    /// Stops the workers once the queue is empty and waits for them.
    fn drop(&mut self) {
        self.queue.close();
        for t in self.threads.drain(..) {
            if t.join().is_err() {
                tracing::error!("a verification worker ended by panic");
            }
        }
    }
}
