//! What the clients record: every write the registry acknowledged, with what it answered
//! (the invariants check them against the log), the replays answered otherwise, and counts.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// A write the registry acknowledged (answered 2xx), with what it said.
#[derive(Clone, Debug)]
pub enum Ack {
    /// `POST /admin/v1/members` or `/members/bulk`.
    Joined {
        /// assigned id
        id: u64,
        /// the username sent
        username: String,
    },
    /// `POST /admin/v1/members/{id}/certificates`.
    Issued {
        /// member
        id: u64,
        /// first counter
        first: u64,
        /// SHA3-256 (hex) of each key sent, in order
        digests: Vec<String>,
    },
    /// `POST /admin/v1/members/{id}/revoke`.
    Revoked {
        /// member
        id: u64,
        /// the revocation's entry
        seq: u64,
        /// its zetas (hex)
        zetas: Vec<String>,
    },
}

/// A member the clients may issue to or revoke.
#[derive(Clone, Debug)]
pub struct Member {
    /// id
    pub id: u64,
    /// `cid*` (base64) as the join answered it
    pub cid_star: String,
}

/// Counts of what the clients did.
#[derive(Default)]
pub struct Stats {
    /// Writes sent through the patient or the timing-out client (each logical write once).
    pub writes: AtomicU64,
    /// Of those, answered 2xx.
    pub acked: AtomicU64,
    /// Refused for good (4xx).
    pub refused: AtomicU64,
    /// Given up on (no 2xx before the deadline).
    pub abandoned: AtomicU64,
    /// Retries (same key) after a timeout, an error or a 5xx.
    pub retries: AtomicU64,
    /// Requests dropped right after sending.
    pub disconnects: AtomicU64,
    /// Disconnect races (revoke B kept open, revoke A dropped 0-2 ms later).
    pub races: AtomicU64,
    /// Acknowledged writes sent again with the same key to compare the answers.
    pub replays: AtomicU64,
}

/// An acknowledged write and when its answer arrived.
#[derive(Clone, Debug)]
pub struct Acked {
    /// Unix ms (the suite's clock) at which the 2xx answer was read.
    pub at_ms: u64,
    /// What was acknowledged.
    pub ack: Ack,
}

/// Everything the clients record.
#[derive(Default)]
pub struct Ledger {
    /// Acknowledged writes, in the order their answers were read.
    pub acks: Mutex<Vec<Acked>>,
    /// Keys answered twice with different answers: (key, first, second).
    pub replay_mismatches: Mutex<Vec<String>>,
    /// What happened.
    pub stats: Stats,
}

impl Ledger {
    /// Records an acknowledged write, answered now.
    pub fn ack(&self, ack: Ack) {
        let at_ms = dgsp_wire::log::now_ms();
        self.acks.lock().unwrap().push(Acked { at_ms, ack });
    }
}

/// One line: what the clients did.
impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        write!(
            f,
            "clients: {} writes, {} acknowledged, {} refused (4xx), {} abandoned, {} retries, {} dropped right after sending, {} disconnect races, {} replays",
            n(&self.writes),
            n(&self.acked),
            n(&self.refused),
            n(&self.abandoned),
            n(&self.retries),
            n(&self.disconnects),
            n(&self.races),
            n(&self.replays)
        )
    }
}
