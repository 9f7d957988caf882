//! The private member list (PLM): the manager's record of members, whether they are
//! active, and how many certificates each has been issued.
//!
//! Implementations must make [`Plm::reserve_counters`] and [`Plm::deactivate`] atomic with
//! respect to each other: two issuances never share a counter value, and no counter is
//! reserved after a member was deactivated. [`InMemoryPlm`] is the reference implementation;
//! the registry provides one over RocksDB.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::StoreError;
use crate::MemberId;

/// One member's entry in the PLM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberRecord {
    /// The member's username (unique in the group).
    pub username: String,
    /// `false` once revoked; never becomes `true` again.
    pub active: bool,
    /// Certificates issued so far: the next certificate gets this counter value.
    pub counter: u64,
}

/// What [`Plm::deactivate`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deactivation {
    /// The member's counter at deactivation: counters `0..counter` were issued.
    pub counter: u64,
    /// `true` if the member was already inactive (the call changed nothing).
    pub was_inactive: bool,
}

/// The private member list.
pub trait Plm: Send + Sync {
    /// Adds a member with the next sequential id (from 0); refuses a duplicate username.
    fn add_member(&self, username: &str) -> Result<MemberId, StoreError>;

    /// The member with this id, or `None` if there is none.
    fn member(&self, id: MemberId) -> Result<Option<MemberRecord>, StoreError>;

    /// The id of the member with this username, or `None`.
    fn id_of(&self, username: &str) -> Result<Option<MemberId>, StoreError>;

    /// Whether a member with this id exists.
    fn exists(&self, id: MemberId) -> Result<bool, StoreError> {
        Ok(self.member(id)?.is_some())
    }

    /// Number of members ever joined (active or not).
    fn len(&self) -> Result<u64, StoreError>;

    /// Whether the group has no members.
    fn is_empty(&self) -> Result<bool, StoreError> {
        Ok(self.len()? == 0)
    }

    /// Atomically reserves `count` counter values for an active member and returns the
    /// first; the member's counter grows by `count`. Fails without change for an unknown
    /// or inactive member or on overflow.
    fn reserve_counters(&self, id: MemberId, count: u64) -> Result<u64, StoreError>;

    /// Atomically marks the member inactive for good and returns its final counter.
    /// Deactivating an inactive member is not an error (`was_inactive` says so).
    fn deactivate(&self, id: MemberId) -> Result<Deactivation, StoreError>;
}

/// One member as stored: the username is shared with the name index (one allocation).
struct Stored {
    username: Arc<str>,
    active: bool,
    counter: u64,
}

impl Stored {
    fn record(&self) -> MemberRecord {
        MemberRecord {
            username: self.username.to_string(),
            active: self.active,
            counter: self.counter,
        }
    }
}

#[derive(Default)]
struct Members {
    records: Vec<Stored>,
    by_name: HashMap<Arc<str>, MemberId>,
}

/// A PLM in memory, behind one mutex.
#[derive(Default)]
pub struct InMemoryPlm {
    inner: Mutex<Members>,
}

impl InMemoryPlm {
    /// An empty PLM.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Members>, StoreError> {
        self.inner
            .lock()
            .map_err(|_| StoreError::Backend("in-memory PLM lock poisoned".into()))
    }
}

impl Plm for InMemoryPlm {
    fn add_member(&self, username: &str) -> Result<MemberId, StoreError> {
        let mut m = self.lock()?;
        let id = m.records.len() as MemberId;
        let name: Arc<str> = Arc::from(username);
        match m.by_name.entry(Arc::clone(&name)) {
            Entry::Occupied(_) => return Err(StoreError::DuplicateUsername(username.to_owned())),
            Entry::Vacant(v) => v.insert(id),
        };
        m.records.push(Stored {
            username: name,
            active: true,
            counter: 0,
        });
        Ok(id)
    }

    fn member(&self, id: MemberId) -> Result<Option<MemberRecord>, StoreError> {
        let m = self.lock()?;
        Ok(usize::try_from(id)
            .ok()
            .and_then(|i| m.records.get(i).map(Stored::record)))
    }

    fn id_of(&self, username: &str) -> Result<Option<MemberId>, StoreError> {
        Ok(self.lock()?.by_name.get(username).copied())
    }

    fn len(&self) -> Result<u64, StoreError> {
        Ok(self.lock()?.records.len() as u64)
    }

    fn reserve_counters(&self, id: MemberId, count: u64) -> Result<u64, StoreError> {
        let mut m = self.lock()?;
        let rec = usize::try_from(id)
            .ok()
            .and_then(|i| m.records.get_mut(i))
            .ok_or(StoreError::UnknownMember(id))?;
        if !rec.active {
            return Err(StoreError::Inactive(id));
        }
        let start = rec.counter;
        rec.counter = start
            .checked_add(count)
            .ok_or(StoreError::CounterOverflow(id))?;
        Ok(start)
    }

    fn deactivate(&self, id: MemberId) -> Result<Deactivation, StoreError> {
        let mut m = self.lock()?;
        let rec = usize::try_from(id)
            .ok()
            .and_then(|i| m.records.get_mut(i))
            .ok_or(StoreError::UnknownMember(id))?;
        let was_inactive = !rec.active;
        rec.active = false;
        Ok(Deactivation {
            counter: rec.counter,
            was_inactive,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_sequential_and_usernames_unique() {
        let plm = InMemoryPlm::new();
        assert_eq!(plm.add_member("alice").unwrap(), 0);
        assert_eq!(plm.add_member("bob").unwrap(), 1);
        assert!(matches!(
            plm.add_member("alice"),
            Err(StoreError::DuplicateUsername(_))
        ));
        assert_eq!(plm.id_of("bob").unwrap(), Some(1));
        assert!(plm.exists(1).unwrap());
        assert!(!plm.exists(2).unwrap());
        assert_eq!(plm.len().unwrap(), 2);
    }

    // Threads: not in wasm32-wasip1 (the WebAssembly run leaves this test out).
    #[cfg(not(target_family = "wasm"))]
    #[test]
    fn concurrent_reservations_never_overlap() {
        let plm = InMemoryPlm::new();
        let id = plm.add_member("carol").unwrap();
        let mut starts: Vec<u64> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        (0..50)
                            .map(|_| plm.reserve_counters(id, 3).unwrap())
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        starts.sort_unstable();
        assert_eq!(starts, (0..400).map(|k| 3 * k).collect::<Vec<_>>());
        assert_eq!(plm.member(id).unwrap().unwrap().counter, 1200);
    }

    #[test]
    fn deactivation_is_final_and_blocks_reservations() {
        let plm = InMemoryPlm::new();
        let id = plm.add_member("dave").unwrap();
        plm.reserve_counters(id, 5).unwrap();
        let d = plm.deactivate(id).unwrap();
        assert_eq!(
            d,
            Deactivation {
                counter: 5,
                was_inactive: false
            }
        );
        assert!(matches!(
            plm.reserve_counters(id, 1),
            Err(StoreError::Inactive(_))
        ));
        assert!(plm.deactivate(id).unwrap().was_inactive);
        assert!(matches!(
            plm.deactivate(99),
            Err(StoreError::UnknownMember(99))
        ));
        assert!(matches!(
            plm.reserve_counters(0, u64::MAX),
            Err(StoreError::Inactive(0))
        ));
    }
}
