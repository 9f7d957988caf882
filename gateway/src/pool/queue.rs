//! The pool's queue and its workers' loop: how signatures are gathered into engine batches.
//!
//! - A worker that comes free takes what is queued at once: its fair share of the queue
//!   (`ceil(queued / workers)`, so no worker hoards what another could start on when it
//!   comes free), at most [`MAX_CHUNK`] signatures, all of one group key, and verifies them
//!   with one batch call. Under load the queue holds what arrived
//!   while every worker was busy, so requests are coalesced without any waiting.
//! - Only when it finds fewer than [`FILL`] signatures **and every other worker is busy**
//!   (so never in a pool of one) may it wait for more, at most the configured coalescing
//!   wait. With a worker idle nothing waits: at low load a request is verified as soon as it
//!   arrives.
//! - Other jobs (judge) run one at a time, in queue order.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, OwnedSemaphorePermit};

use super::{Verdict, VerifyItem};

/// Most signatures verified in one engine call: enough to fill the hash lanes across
/// signatures (the engine works in chunks of 16), few enough that the signatures of one
/// batch request spread over the workers.
const MAX_CHUNK: usize = 16;

/// Below this many queued signatures a worker may wait (bounded) for more.
const FILL: usize = 4;

/// A queued signature and where its verdict goes.
pub(super) struct VerifyJob {
    pub item: VerifyItem,
    pub done: oneshot::Sender<Verdict>,
    /// The queue slot, released just before the verdict is sent.
    pub slot: OwnedSemaphorePermit,
}

/// Work for a worker.
pub(super) enum Job {
    Verify(VerifyJob),
    Task(Box<dyn FnOnce() + Send>),
}

struct State {
    jobs: VecDeque<Job>,
    /// Workers running a job now.
    running: usize,
    closed: bool,
}

/// How the workers have batched so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Signatures verified.
    pub verified: u64,
    /// Engine batch calls they took.
    pub engine_calls: u64,
    /// Coalescing waits begun (a worker waited for more signatures).
    pub waits: u64,
}

/// The shared queue.
pub(super) struct Queue {
    state: Mutex<State>,
    ready: Condvar,
    workers: usize,
    coalesce_wait: Duration,
    verified: AtomicU64,
    engine_calls: AtomicU64,
    waits: AtomicU64,
}

impl Queue {
    pub fn new(workers: usize, coalesce_wait: Duration) -> Self {
        Queue {
            state: Mutex::new(State {
                jobs: VecDeque::new(),
                running: 0,
                closed: false,
            }),
            ready: Condvar::new(),
            workers,
            coalesce_wait,
            verified: AtomicU64::new(0),
            engine_calls: AtomicU64::new(0),
            waits: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A worker never panics while holding the lock (jobs run unlocked), so poisoning
        // cannot leave the queue inconsistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn stats(&self) -> PoolStats {
        PoolStats {
            verified: self.verified.load(Ordering::Relaxed),
            engine_calls: self.engine_calls.load(Ordering::Relaxed),
            waits: self.waits.load(Ordering::Relaxed),
        }
    }

    /// Queues jobs (all under one lock, so a batch request's items stay together).
    pub fn push(&self, jobs: Vec<Job>) {
        let n = jobs.len();
        self.lock().jobs.extend(jobs);
        if n == 1 {
            self.ready.notify_one();
        } else {
            self.ready.notify_all();
        }
    }

    /// Lets the workers finish what is queued, then end.
    pub fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }

    /// A worker's loop.
    pub fn work(&self) {
        let mut st = self.lock();
        loop {
            if st.jobs.is_empty() {
                if st.closed {
                    return;
                }
                st = self.ready.wait(st).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            st = self.coalesce(st);
            let Some(work) = self.take(&mut st) else {
                continue;
            };
            st.running += 1;
            drop(st);
            self.run(work);
            st = self.lock();
            st.running -= 1;
        }
    }

    /// The bounded wait: only with few signatures queued, every other worker busy and a
    /// wait configured.
    fn coalesce<'a>(&'a self, mut st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        let wants_more = |st: &State| {
            should_wait(
                matches!(st.jobs.front(), Some(Job::Verify(_))),
                st.jobs.len(),
                st.running,
                self.workers,
            ) && !st.closed
        };
        if self.coalesce_wait.is_zero() || !wants_more(&st) {
            return st;
        }
        self.waits.fetch_add(1, Ordering::Relaxed);
        let deadline = Instant::now() + self.coalesce_wait;
        while wants_more(&st) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            st = self
                .ready
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        st
    }

    /// This worker's share of the queue: the next task, or the next signatures of one group
    /// key, `ceil(queued / workers)` of them and at most [`MAX_CHUNK`].
    fn take(&self, st: &mut State) -> Option<Work> {
        let share = st.jobs.len().div_ceil(self.workers).clamp(1, MAX_CHUNK);
        let first = match st.jobs.pop_front()? {
            Job::Task(t) => return Some(Work::Task(t)),
            Job::Verify(j) => j,
        };
        let mut chunk = Vec::with_capacity(share);
        chunk.push(first);
        while chunk.len() < share {
            let lead = &chunk[0].item.group;
            match st.jobs.front() {
                Some(Job::Verify(j))
                    if Arc::ptr_eq(&j.item.group, lead) || *j.item.group == **lead => {}
                _ => break,
            }
            if let Some(Job::Verify(j)) = st.jobs.pop_front() {
                chunk.push(j);
            }
        }
        Some(Work::Verify(chunk))
    }

    fn run(&self, work: Work) {
        match work {
            Work::Task(t) => {
                if catch_unwind(AssertUnwindSafe(t)).is_err() {
                    tracing::error!("a verification job panicked");
                }
            }
            Work::Verify(chunk) => {
                let n = chunk.len() as u64;
                let verdicts = catch_unwind(AssertUnwindSafe(|| {
                    let group = &chunk[0].item.group;
                    let items: Vec<(&[u8], &dgsp_core::Signature)> = chunk
                        .iter()
                        .map(|j| (j.item.message.as_slice(), &*j.item.sig))
                        .collect();
                    group.verify_batch_ignoring_revocation(&items)
                }));
                // Counted before any verdict is sent, so a caller that has its answers sees
                // them in the stats.
                self.verified.fetch_add(n, Ordering::Relaxed);
                self.engine_calls.fetch_add(1, Ordering::Relaxed);
                match verdicts {
                    Ok(verdicts) => {
                        for (job, v) in chunk.into_iter().zip(verdicts) {
                            let VerifyJob { done, slot, .. } = job;
                            // The slot is free before the request hears its verdict, so a
                            // client that sends its next request at once finds it free.
                            drop(slot);
                            // The request may have gone (client hung up): nothing to tell.
                            let _ = done.send(v);
                        }
                    }
                    // Dropping the senders answers every waiting request `Crashed`.
                    Err(_) => tracing::error!(signatures = n, "a verification batch panicked"),
                }
            }
        }
    }
}

/// Whether a free worker that finds `queued` jobs (the first a signature or not) while
/// `running` of the pool's `workers` are busy should wait to coalesce more: only with fewer
/// than [`FILL`] signatures and every *other* worker busy. A lone worker that is free means an
/// idle pool, where waiting would only add latency.
fn should_wait(front_is_verify: bool, queued: usize, running: usize, workers: usize) -> bool {
    front_is_verify && queued < FILL && workers > 1 && running + 1 >= workers
}

/// What a worker took.
enum Work {
    Task(Box<dyn FnOnce() + Send>),
    Verify(Vec<VerifyJob>),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task_job(log: Arc<Mutex<Vec<usize>>>, i: usize) -> Job {
        Job::Task(Box::new(move || log.lock().unwrap().push(i)))
    }

    #[test]
    fn tasks_run_in_order_on_one_worker_and_close_drains_the_queue() {
        let q = Arc::new(Queue::new(1, Duration::ZERO));
        let log = Arc::new(Mutex::new(Vec::new()));
        q.push((0..5).map(|i| task_job(log.clone(), i)).collect());
        q.close();
        let w = {
            let q = q.clone();
            std::thread::spawn(move || q.work())
        };
        w.join().unwrap();
        assert_eq!(*log.lock().unwrap(), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn only_a_busy_pool_waits_to_coalesce() {
        // Idle pools never wait: a pool of one, or another worker free.
        assert!(!should_wait(true, 1, 0, 1));
        assert!(!should_wait(true, 1, 0, 2));
        assert!(!should_wait(true, 1, 2, 4));
        // Every other worker busy and few signatures queued: wait.
        assert!(should_wait(true, 1, 1, 2));
        assert!(should_wait(true, FILL - 1, 3, 4));
        // Enough queued to fill the lanes, or a task first: go at once.
        assert!(!should_wait(true, FILL, 1, 2));
        assert!(!should_wait(false, 1, 1, 2));
    }

    #[test]
    fn a_panicking_task_does_not_kill_the_worker() {
        let q = Arc::new(Queue::new(1, Duration::ZERO));
        let log = Arc::new(Mutex::new(Vec::new()));
        q.push(vec![Job::Task(Box::new(|| panic!("boom")))]);
        q.push(vec![task_job(log.clone(), 7)]);
        q.close();
        let q2 = q.clone();
        std::thread::spawn(move || q2.work()).join().unwrap();
        assert_eq!(*log.lock().unwrap(), vec![7]);
    }
}
