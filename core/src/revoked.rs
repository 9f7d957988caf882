//! The revoked list: the set of zetas whose certificates were revoked. Public.
//!
//! [`InMemoryRevokedList`] is the reference implementation; the registry and gateway
//! provide RocksDB-backed ones.

use std::collections::HashSet;
use std::sync::RwLock;

use crate::error::StoreError;
use crate::values::Zeta;

/// A set of revoked zetas.
pub trait RevokedList: Send + Sync {
    /// Whether `zeta` is revoked.
    fn contains(&self, zeta: &Zeta) -> Result<bool, StoreError>;

    /// Adds zetas (idempotent: adding a zeta twice is not an error).
    fn insert(&self, zetas: &[Zeta]) -> Result<(), StoreError>;

    /// Number of revoked zetas.
    fn len(&self) -> Result<u64, StoreError>;

    /// Whether nothing has been revoked.
    fn is_empty(&self) -> Result<bool, StoreError> {
        Ok(self.len()? == 0)
    }
}

/// A revoked list in memory.
#[derive(Default)]
pub struct InMemoryRevokedList {
    set: RwLock<HashSet<Zeta>>,
}

impl InMemoryRevokedList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }
}

fn poisoned() -> StoreError {
    StoreError::Backend("in-memory revoked list lock poisoned".into())
}

impl RevokedList for InMemoryRevokedList {
    fn contains(&self, zeta: &Zeta) -> Result<bool, StoreError> {
        Ok(self.set.read().map_err(|_| poisoned())?.contains(zeta))
    }

    fn insert(&self, zetas: &[Zeta]) -> Result<(), StoreError> {
        self.set
            .write()
            .map_err(|_| poisoned())?
            .extend(zetas.iter().copied());
        Ok(())
    }

    fn len(&self) -> Result<u64, StoreError> {
        Ok(self.set.read().map_err(|_| poisoned())?.len() as u64)
    }
}
