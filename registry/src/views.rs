//! The core's [`Plm`] and [`RevokedList`] traits over the registry's RocksDB projections.
//!
//! Reads come from the projections; every change goes through the writer as a log entry,
//! so code written against the traits (e.g. [`dgsp_core::Manager::issue`] and
//! [`dgsp_core::Manager::revoke`]) runs unchanged on the event-sourced store. The trait
//! methods block: call them from threads, not from inside an async runtime.

use std::sync::Arc;

use dgsp_core::{
    Deactivation, MemberId, MemberRecord, Plm, RevokedList, StoreError as CoreError, Zeta,
};

use crate::store::Store;
use crate::writer::{Command, Outcome, WriteError, Writer};

fn backend(e: impl std::error::Error + Send + Sync + 'static) -> CoreError {
    CoreError::Backend(Box::new(e))
}

fn unexpected(outcome: Outcome) -> CoreError {
    backend(std::io::Error::other(format!(
        "unexpected outcome {outcome:?}"
    )))
}

fn from_write(e: WriteError) -> CoreError {
    match e {
        WriteError::DuplicateUsername(u) => CoreError::DuplicateUsername(u),
        WriteError::UnknownMember(id) => CoreError::UnknownMember(id),
        WriteError::Inactive(id) => CoreError::Inactive(id),
        WriteError::CounterOverflow(id) => CoreError::CounterOverflow(id),
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
    fn add_member(&self, username: &str) -> Result<MemberId, CoreError> {
        let cmd = Command::Join {
            usernames: vec![username.to_owned()],
        };
        match self.writer.submit_blocking(cmd, None).map_err(from_write)? {
            Outcome::Joined { ids, .. } => Ok(ids[0]),
            other => Err(unexpected(other)),
        }
    }

    fn member(&self, id: MemberId) -> Result<Option<MemberRecord>, CoreError> {
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

    fn id_of(&self, username: &str) -> Result<Option<MemberId>, CoreError> {
        self.store.id_of(username).map_err(backend)
    }

    fn len(&self) -> Result<u64, CoreError> {
        self.store.count("members").map_err(backend)
    }

    fn reserve_counters(&self, id: MemberId, count: u64) -> Result<u64, CoreError> {
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

    fn deactivate(&self, id: MemberId) -> Result<Deactivation, CoreError> {
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
    fn contains(&self, zeta: &Zeta) -> Result<bool, CoreError> {
        self.store.is_revoked(zeta).map_err(backend)
    }

    fn insert(&self, zetas: &[Zeta]) -> Result<(), CoreError> {
        for z in zetas {
            if !self.contains(z)? {
                return Err(backend(std::io::Error::other(format!(
                    "zeta {z:?} is not covered by a revocation entry; revoke the member instead"
                ))));
            }
        }
        Ok(())
    }

    fn len(&self) -> Result<u64, CoreError> {
        self.store.count("revoked").map_err(backend)
    }
}
