//! Fail-stop state shared by the writer, the publisher and the API.
//!
//! When a commit fails, the outcome of the batch is unknown (RocksDB may or may not have
//! made it durable), and when the publisher stops, nothing signs snapshots or checkpoints any
//! more. In both cases the registry must not go on as if nothing happened: it *halts* — the
//! writer refuses every later command, `/readyz` answers 503 with the reason, and the
//! operator restarts it (a restart reads the log as it really is on disk). No write is ever
//! retried silently.

use std::sync::{Mutex, PoisonError};

/// Whether the registry has halted, and why.
#[derive(Debug, Default)]
pub struct Health {
    halted: Mutex<Option<String>>,
}

impl Health {
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
}
