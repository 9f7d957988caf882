//! Fail-stop state shared by the writer, the publisher and the API, and the fence that
//! says whether this registry may act as the group's writer now.
//!
//! When a commit fails, the outcome of the batch is unknown (RocksDB may or may not have
//! made it durable), and when the publisher stops, nothing signs snapshots or checkpoints any
//! more. In both cases the registry must not go on as if nothing happened: it *halts* — the
//! writer refuses every later command, `/readyz` answers 503 with the reason, and the
//! operator restarts it (a restart reads the log as it really is on disk). No write is ever
//! retried silently.
//!
//! With a journal the registry is the writer only while it holds the write lease
//! ([`Fence`], implemented by `crate::journal::Lease`) and once its first segment since it
//! took the lease has landed and the checkpoint it carries is served ([`Health::claim`]):
//! that segment takes the seq after everything it read from the journal, so a predecessor
//! that still believes it holds the lease can no longer write there, and what was served
//! before it (a note stored by an earlier run) is never served as fresh. Until both hold it signs no checkpoint and serves none
//! as fresh, and `/readyz` fails, even before the halt that the lease's loss leads to.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Whether this process may act as the group's writer now.
pub trait Fence: Send + Sync {
    /// `Ok` while it may, by what this process knows without asking anyone (its clock).
    fn check(&self) -> Result<(), String>;

    /// `Ok` once proven by asking the store that no other process has taken over.
    fn prove(&self) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>>;
}

/// Whether the registry has halted, and why; and its fence, if it has one.
#[derive(Default)]
pub struct Health {
    halted: Mutex<Option<String>>,
    fence: Option<Arc<dyn Fence>>,
    /// set once this process's first journal segment landed
    claimed: AtomicBool,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health")
            .field("halted", &self.halted())
            .field("fenced", &self.fence.is_some())
            .finish()
    }
}

impl Health {
    /// A registry that is the writer only while `fence` holds.
    pub fn fenced(fence: Arc<dyn Fence>) -> Health {
        Health {
            halted: Mutex::new(None),
            fence: Some(fence),
            claimed: AtomicBool::new(false),
        }
    }

    /// Records that this process's first checkpoint since it took the lease is in the
    /// journal and served (the publisher).
    pub fn claim(&self) {
        self.claimed.store(true, Ordering::SeqCst);
    }

    /// Whether this process may serve as fresh without a first write of its own: without
    /// a fence, always; with one, once [`claim`](Self::claim)ed.
    pub fn claimed(&self) -> bool {
        self.fence.is_none() || self.claimed.load(Ordering::SeqCst)
    }

    /// Halts the registry (the first reason is kept; later ones are only logged).
    pub fn halt(&self, reason: impl Into<String>) {
        let reason = reason.into();
        let mut h = self.halted.lock().unwrap_or_else(PoisonError::into_inner);
        if h.is_none() {
            tracing::error!(%reason, "registry halted: writes are refused until it is restarted");
            *h = Some(reason);
        } else {
            tracing::error!(%reason, "further failure after the halt");
        }
    }

    /// The reason the registry halted, if it has.
    pub fn halted(&self) -> Option<String> {
        self.halted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `Ok` while the fence holds by this process's own knowledge and this process has
    /// claimed the journal (always, without a fence).
    pub fn fence(&self) -> Result<(), String> {
        let Some(f) = &self.fence else { return Ok(()) };
        f.check()?;
        if !self.claimed() {
            return Err(
                "this registry's first journal segment since it took the lease has not landed yet"
                    .into(),
            );
        }
        Ok(())
    }

    /// `Ok` while the lease holds by this process's own knowledge, claimed or not.
    pub fn lease_holds(&self) -> Result<(), String> {
        self.fence.as_ref().map_or(Ok(()), |f| f.check())
    }

    /// `Ok` once the fence is proven by the store (at once, without one).
    pub async fn prove_fence(&self) -> Result<(), String> {
        match &self.fence {
            Some(f) => f.prove().await,
            None => Ok(()),
        }
    }
}
