//! The bounded verification pool: CPU-bound work (SPHINCS+ and WOTS+ checks) runs on its own
//! threads, never on the async runtime, and at most `capacity` jobs wait or run at once. A
//! request that would exceed that is refused at once ([`PoolError::Busy`], answered 503 with
//! Retry-After) so latency stays bounded under overload instead of growing with the queue.

use std::sync::Arc;

use tokio::sync::{oneshot, Semaphore};

/// Queue slots per worker when no capacity is configured.
pub const DEFAULT_SLOTS_PER_WORKER: usize = 64;

/// The worker count `workers` stands for (0: one per core).
pub fn resolve_workers(workers: usize) -> usize {
    if workers == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        workers
    }
}

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

/// A fixed set of worker threads with a bounded queue.
pub struct VerifyPool {
    threads: rayon::ThreadPool,
    slots: Arc<Semaphore>,
    capacity: usize,
}

impl VerifyPool {
    /// `workers` threads (0: one per core) and room for `capacity` queued or running jobs
    /// (0: [`DEFAULT_SLOTS_PER_WORKER`] per worker).
    pub fn new(workers: usize, capacity: usize) -> std::io::Result<Self> {
        let workers = resolve_workers(workers);
        let threads = rayon::ThreadPoolBuilder::new()
            .num_threads(workers)
            .thread_name(|i| format!("dgsp-verify-{i}"))
            .build()
            .map_err(std::io::Error::other)?;
        let capacity = match capacity {
            0 => DEFAULT_SLOTS_PER_WORKER * workers,
            n => n,
        };
        Ok(VerifyPool {
            threads,
            slots: Arc::new(Semaphore::new(capacity)),
            capacity,
        })
    }

    /// Worker threads.
    pub fn workers(&self) -> usize {
        self.threads.current_num_threads()
    }

    /// Jobs that may wait or run at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Jobs waiting or running now.
    pub fn in_flight(&self) -> usize {
        self.capacity - self.slots.available_permits()
    }

    /// Runs every job of `jobs` on the pool (in parallel), or none of them if they do not all
    /// fit. Results come back in order.
    pub async fn run_all<T, F>(&self, jobs: Vec<F>) -> Result<Vec<T>, PoolError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.run_weighted(jobs.into_iter().map(|j| (1, j)).collect())
            .await
    }

    /// Runs weighted jobs: a job `(w, f)` stands for `w` verifications (a chunk of a batch
    /// verified in one call) and holds `w` queue slots until it finishes. All of them run,
    /// or none if their slots do not all fit. Results come back in order.
    pub async fn run_weighted<T, F>(&self, jobs: Vec<(usize, F)>) -> Result<Vec<T>, PoolError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let total: usize = jobs.iter().map(|(w, _)| (*w).max(1)).sum();
        let n = u32::try_from(total).map_err(|_| PoolError::Busy)?;
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        let mut permit = self
            .slots
            .clone()
            .try_acquire_many_owned(n)
            .map_err(|_| PoolError::Busy)?;
        let mut waits = Vec::with_capacity(jobs.len());
        for (weight, job) in jobs {
            let (tx, rx) = oneshot::channel();
            // Each job's slots are released when that job finishes (not when all do).
            let slots = permit
                .split(weight.max(1))
                .expect("every job's slots were acquired");
            self.threads.spawn(move || {
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                drop(slots);
                if let Ok(v) = result {
                    let _ = tx.send(v);
                } else {
                    tracing::error!("a verification job panicked");
                }
            });
            waits.push(rx);
        }
        let mut out = Vec::with_capacity(waits.len());
        for rx in waits {
            out.push(rx.await.map_err(|_| PoolError::Crashed)?);
        }
        Ok(out)
    }

    /// Runs one job.
    pub async fn run<T, F>(&self, job: F) -> Result<T, PoolError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let mut v = self.run_all(vec![job]).await?;
        Ok(v.pop().expect("one result"))
    }
}
