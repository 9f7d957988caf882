//! Where a witness keeps, per log origin, the tree it last cosigned ([`WitnessStore`]), and an
//! in-memory store for tests ([`MemoryStore`]).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// The tree a witness last cosigned for one origin: its size and RFC 6962 root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TreeHead {
    /// The tree size.
    pub size: u64,
    /// The RFC 6962 root of the first `size` entries.
    pub root: [u8; 32],
}

/// A store failed (I/O, corruption). The text is for the operator's log; it is never sent to
/// a client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("witness store: {0}")]
pub struct StoreError(pub String);

/// The witness's durable state: per origin, the [`TreeHead`] it last cosigned.
///
/// The contract, which [`Witness`](super::Witness) relies on for the spec's atomicity
/// ("checking the old size against the latest checkpoint and persisting the new checkpoint
/// must be performed atomically"):
///
/// - [`compare_and_set`](WitnessStore::compare_and_set) is **one atomic step** against
///   every other writer of the same store, in this process or any other: it writes `new`
///   only if the origin's value is exactly `expected` (`None`: no value), and says whether it
///   did. Two calls with the same `expected` and different `new` never both return `true`.
/// - It returns `Ok(true)` only once `new` is **durable** (survives a crash or power loss as
///   far as the store can promise: RocksDB, a synced write or a WAL the operator accepts);
///   the witness hands out the cosignature only after that.
/// - With `expected == Some(new)` (a resubmitted tree, the log's cadence) the store may
///   skip the write, but must still answer `true` only if the value is `new` at that moment.
/// - Only origins the witness is configured for are ever written (unknown origins are
///   answered 404 before the store is touched), so the store holds one small entry per
///   known log.
/// - Errors are errors (`Err`), never `Ok(false)`: `false` means "another writer got there
///   first".
pub trait WitnessStore: Send + Sync {
    /// The tree last cosigned for `origin`, `None` if never.
    fn get(&self, origin: &str) -> Result<Option<TreeHead>, StoreError>;

    /// Atomically: if `origin`'s value is `expected`, make it `new` (durably) and return
    /// `true`; otherwise change nothing and return `false`.
    fn compare_and_set(
        &self,
        origin: &str,
        expected: Option<TreeHead>,
        new: TreeHead,
    ) -> Result<bool, StoreError>;
}

/// A [`WitnessStore`] in memory (tests, or a witness whose state may be lost). Cloning is
/// not offered: share it with an `Arc`.
#[derive(Debug, Default)]
pub struct MemoryStore {
    heads: Mutex<HashMap<String, TreeHead>>,
    writes: Mutex<u64>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// How many times a value was written (a resubmitted tree is not written).
    pub fn writes(&self) -> u64 {
        *self.writes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl WitnessStore for MemoryStore {
    fn get(&self, origin: &str) -> Result<Option<TreeHead>, StoreError> {
        let heads = self.heads.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(heads.get(origin).copied())
    }

    fn compare_and_set(
        &self,
        origin: &str,
        expected: Option<TreeHead>,
        new: TreeHead,
    ) -> Result<bool, StoreError> {
        let mut heads = self.heads.lock().unwrap_or_else(PoisonError::into_inner);
        if heads.get(origin).copied() != expected {
            return Ok(false);
        }
        if expected != Some(new) {
            heads.insert(origin.to_owned(), new);
            *self.writes.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_and_set_is_compare_and_set() {
        let s = MemoryStore::new();
        let a = TreeHead {
            size: 1,
            root: [1; 32],
        };
        let b = TreeHead {
            size: 1,
            root: [2; 32],
        };
        assert_eq!(s.get("o"), Ok(None));
        assert_eq!(s.compare_and_set("o", Some(a), b), Ok(false));
        assert_eq!(s.compare_and_set("o", None, a), Ok(true));
        assert_eq!(s.compare_and_set("o", None, b), Ok(false));
        assert_eq!(s.get("o"), Ok(Some(a)));
        assert_eq!(s.compare_and_set("o", Some(a), a), Ok(true));
        assert_eq!(s.writes(), 1);
        assert_eq!(s.compare_and_set("o", Some(b), b), Ok(false));
        assert_eq!(s.get("other"), Ok(None));
    }
}
