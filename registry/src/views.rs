//! The core's [`Plm`] and [`RevokedList`] traits over the registry's RocksDB projections.
//!
//! Reads come from the projections; every change goes through the writer as a log entry,
//! so code written against the traits (e.g. [`dgsp_core::Manager::issue`] and
//! [`dgsp_core::Manager::revoke`]) runs unchanged on the event-sourced store. The trait
//! methods block: call them from threads, not from inside an async runtime.

use std::sync::Arc;

use dgsp_core::{Deactivation, MemberId, MemberRecord, Plm, RevokedList, StoreError, Zeta};

use crate::store::Store;
use crate::writer::{Command, Outcome, WriteError, Writer};

fn backend(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Backend(Box::new(e))
}

fn unexpected(outcome: Outcome) -> StoreError {
    backend(std::io::Error::other(format!(
        "unexpected outcome {outcome:?}"
    )))
}

fn from_write(e: WriteError) -> StoreError {
    match e {
        WriteError::DuplicateUsername(u) => StoreError::DuplicateUsername(u),
        WriteError::UnknownMember(id) => StoreError::UnknownMember(id),
        WriteError::Inactive(id) => StoreError::Inactive(id),
        WriteError::CounterOverflow(id) => StoreError::CounterOverflow(id),
        other => backend(other),
    }
}

/// The private member list, event-sourced.
pub struct RegistryPlm {
    store: Arc<Store>,
    writer: Writer,
}

impl RegistryPlm {
    /// Over `store`, writing through `writer`.
    pub fn new(store: Arc<Store>, writer: Writer) -> Self {
        RegistryPlm { store, writer }
    }
}

impl Plm for RegistryPlm {
    fn add_member(&self, username: &str) -> Result<MemberId, StoreError> {
        let cmd = Command::Join {
            usernames: vec![username.to_owned()],
        };
        match self.writer.submit_blocking(cmd, None).map_err(from_write)? {
            Outcome::Joined { ids, .. } => Ok(ids[0]),
            other => Err(unexpected(other)),
        }
    }

    fn member(&self, id: MemberId) -> Result<Option<MemberRecord>, StoreError> {
        Ok(self
            .store
            .member(id)
            .map_err(backend)?
            .map(|m| MemberRecord {
                username: m.username,
                active: m.active,
                counter: m.counter,
            }))
    }

    fn id_of(&self, username: &str) -> Result<Option<MemberId>, StoreError> {
        self.store.id_of(username).map_err(backend)
    }

    fn len(&self) -> Result<u64, StoreError> {
        self.store.count("members").map_err(backend)
    }

    fn reserve_counters(&self, id: MemberId, count: u64) -> Result<u64, StoreError> {
        let cmd = Command::Issue {
            id,
            count,
            wots_pk_digests: Vec::new(),
        };
        match self.writer.submit_blocking(cmd, None).map_err(from_write)? {
            Outcome::Reserved { first, .. } => Ok(first),
            other => Err(unexpected(other)),
        }
    }

    fn deactivate(&self, id: MemberId) -> Result<Deactivation, StoreError> {
        match self
            .writer
            .submit_blocking(Command::Revoke { id }, None)
            .map_err(from_write)?
        {
            Outcome::Revoked { zetas, already, .. } => Ok(Deactivation {
                counter: zetas.len() as u64,
                was_inactive: already,
            }),
            other => Err(unexpected(other)),
        }
    }
}

/// The revoked list, event-sourced: zetas enter it only through a revocation entry (which
/// [`RegistryPlm::deactivate`] writes), so [`insert`](RevokedList::insert) only confirms
/// that they are there.
pub struct RegistryRevokedList {
    store: Arc<Store>,
}

impl RegistryRevokedList {
    /// Over `store`.
    pub fn new(store: Arc<Store>) -> Self {
        RegistryRevokedList { store }
    }
}

impl RevokedList for RegistryRevokedList {
    fn contains(&self, zeta: &Zeta) -> Result<bool, StoreError> {
        self.store.is_revoked(zeta).map_err(backend)
    }

    fn insert(&self, zetas: &[Zeta]) -> Result<(), StoreError> {
        for z in zetas {
            if !self.contains(z)? {
                return Err(backend(std::io::Error::other(format!(
                    "zeta {z:?} is not covered by a revocation entry; revoke the member instead"
                ))));
            }
        }
        Ok(())
    }

    fn len(&self) -> Result<u64, StoreError> {
        self.store.count("revoked").map_err(backend)
    }
}
