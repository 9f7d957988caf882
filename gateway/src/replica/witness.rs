//! The gateway's state as a witness (`--witness-key`, docs/gateway.md, "The gateway as a
//! witness"): per log origin, the tree it last cosigned, in the replica's `witness` column
//! family (key: the origin's UTF-8; value: `be64 size ‖ root (32)`).
//!
//! [`WitnessStore::compare_and_set`] reads, compares and writes under a mutex of the replica,
//! the write synced: RocksDB lets one process open the replica, so the mutex orders every
//! writer there is, and the cosignature is handed out only once the new tree is on disk.

use std::sync::PoisonError;

use dgsp_witness::server::{StoreError, TreeHead, WitnessStore};
use rocksdb::WriteOptions;

use super::{Replica, ReplicaError};

/// The column family.
const CF: &str = "witness";

fn encode(head: &TreeHead) -> [u8; 40] {
    let mut v = [0u8; 40];
    v[..8].copy_from_slice(&head.size.to_be_bytes());
    v[8..].copy_from_slice(&head.root);
    v
}

fn decode(origin: &str, bytes: &[u8]) -> Result<TreeHead, ReplicaError> {
    let v = <[u8; 40]>::try_from(bytes)
        .map_err(|_| ReplicaError::Corrupt(format!("the witness's tree for {origin:?}")))?;
    let (size, root) = v.split_at(8);
    Ok(TreeHead {
        size: u64::from_be_bytes(size.try_into().expect("8 bytes")),
        root: root.try_into().expect("32 bytes"),
    })
}

fn store_error(e: ReplicaError) -> StoreError {
    StoreError(e.to_string())
}

impl Replica {
    /// The tree this gateway last cosigned for `origin` as a witness, if any.
    pub fn witnessed_tree(&self, origin: &str) -> Result<Option<TreeHead>, ReplicaError> {
        self.db
            .get_cf(self.cf(CF), origin.as_bytes())?
            .map(|b| decode(origin, &b))
            .transpose()
    }
}

impl WitnessStore for Replica {
    fn get(&self, origin: &str) -> Result<Option<TreeHead>, StoreError> {
        self.witnessed_tree(origin).map_err(store_error)
    }

    fn compare_and_set(
        &self,
        origin: &str,
        expected: Option<TreeHead>,
        new: TreeHead,
    ) -> Result<bool, StoreError> {
        let _held = self
            .witness_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if self.witnessed_tree(origin).map_err(store_error)? != expected {
            return Ok(false);
        }
        if expected == Some(new) {
            return Ok(true);
        }
        let mut w = WriteOptions::default();
        w.set_sync(true);
        self.db
            .put_cf_opt(self.cf(CF), origin.as_bytes(), encode(&new), &w)
            .map_err(|e| store_error(e.into()))?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_and_set_is_atomic_synced_and_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (
            TreeHead {
                size: 3,
                root: [1; 32],
            },
            TreeHead {
                size: 3,
                root: [2; 32],
            },
        );
        {
            let r = Replica::open(dir.path()).unwrap();
            assert_eq!(r.get("o"), Ok(None));
            assert_eq!(r.compare_and_set("o", Some(a), b), Ok(false));
            assert_eq!(r.compare_and_set("o", None, a), Ok(true));
            assert_eq!(r.compare_and_set("o", None, b), Ok(false));
            assert_eq!(r.compare_and_set("o", Some(a), a), Ok(true));
            assert_eq!(r.get("other"), Ok(None));
        }
        let r = Replica::open(dir.path()).unwrap();
        assert_eq!(r.get("o"), Ok(Some(a)));
        // Many writers from the same expected tree: exactly one wins.
        let r = std::sync::Arc::new(r);
        let wins: usize = (0..8u8)
            .map(|i| {
                let r = r.clone();
                std::thread::spawn(move || {
                    let new = TreeHead {
                        size: 4,
                        root: [10 + i; 32],
                    };
                    usize::from(r.compare_and_set("o", Some(a), new).unwrap())
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .sum();
        assert_eq!(wins, 1);
        assert_eq!(r.get("o").unwrap().unwrap().size, 4);
        // A stored value of the wrong length is an error, never a tree.
        r.db.put_cf(r.cf(CF), b"bad", [0u8; 39]).unwrap();
        assert!(r.get("bad").is_err());
    }
}
