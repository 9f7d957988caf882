//! Checkpoint roots against the Merkle tree of the entries they cover. Pure: the applied
//! tree comes in as its right edge ([`Frontier`]), roots of earlier sizes from the caller.
//!
//! A checkpoint's root must be the RFC 6962 root of its first `size` entries, whose leaves
//! are the entries' public bytes ([`leaf_of`]), or, in a note signed before the log was a
//! tree, the chain hash of entry `size` ([`follow::check_root`], [`RootKind::LegacyChain`]).
//! Anything else means the signed checkpoint is not of the entries served here: a `fork`,
//! named with the size, the root signed and both hashes this gateway computed.

use dgsp_core::checkpoint::Checkpoint;
use dgsp_wire::follow::{self, RootKind};
use dgsp_wire::log::{Entry, Hash};
use dgsp_wire::merkle::Frontier;

use super::Fault;

/// The tree's leaf for `entry`: the hash of its public bytes, exactly what the feed serves
/// (a private part, if one were served, is not in them).
pub use dgsp_wire::tiles::leaf_of;

/// `cp`'s root against the tree root of its size and the chain hash of entry `size` (`None`
/// for size 0). `what` names the checkpoint in the fault.
pub fn check(
    what: &str,
    cp: &Checkpoint,
    tree_root: &Hash,
    chain: Option<&Hash>,
) -> Result<RootKind, Fault> {
    follow::check_root(cp, tree_root, chain).map_err(|why| Fault::Fork {
        seq: cp.size,
        detail: format!(
            "{what} of {} entries is not of the entries served here: {why}; entry {}'s chain hash is {}",
            cp.size,
            cp.size,
            chain.map_or_else(|| "none".to_owned(), hex::encode),
        ),
    })
}

/// What a `checkpoint` entry claims (its public `size` and `head`, which the follower
/// checked against its verified note when it was fetched), as a checkpoint to check the
/// root of.
pub fn claim(e: &Entry) -> Result<Checkpoint, Fault> {
    match follow::stated_checkpoint(e) {
        (Some(size), Some(root)) if size < e.seq => Ok(Checkpoint {
            origin: String::new(),
            size,
            root,
            time_unix_ms: None,
            snapshot: None,
        }),
        _ => Err(Fault::MalformedEntry {
            seq: e.seq,
            detail: "a checkpoint entry without a size below its own seq and a head".into(),
        }),
    }
}

/// The `checkpoint` entries of `entries` naming a size before `applied` (their roots are
/// checked against the replica's tree): `(entry seq, claim)`.
pub fn earlier(entries: &[Entry], applied: u64) -> Result<Vec<(u64, Checkpoint)>, Fault> {
    let mut out = Vec::new();
    for e in entries.iter().filter(|e| e.kind == "checkpoint") {
        let cp = claim(e)?;
        if cp.size < applied {
            out.push((e.seq, cp));
        }
    }
    Ok(out)
}

/// The tree of a range: the leaves of `entries` (chain-checked, right after the `applied`
/// entries whose tree is `tree` and whose last hash is `applied_hash`) and the right edge
/// after them. Checks on the way the root of every `checkpoint` entry of the range naming a
/// size from `applied` on, and at the end `covering`'s (whose size is the range's end).
pub fn range_tree(
    tree: &Frontier,
    applied_hash: &Hash,
    entries: &[Entry],
    covering: &Checkpoint,
) -> Result<(Vec<Hash>, Frontier), Fault> {
    let applied = tree.size();
    let mut tree = tree.clone();
    // Roots and chain hashes of every size from `applied` on, as the tree grows: only the
    // sizes a checkpoint entry of the range names are kept.
    let wanted: std::collections::BTreeSet<u64> = entries
        .iter()
        .filter(|e| e.kind == "checkpoint")
        .map(claim)
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .map(|cp| cp.size)
        .filter(|size| *size >= applied)
        .collect();
    let mut roots = std::collections::HashMap::new();
    let chain_at = |size: u64, entries: &[Entry]| -> Option<Hash> {
        match size.checked_sub(applied)? {
            0 => (size > 0).then_some(*applied_hash),
            i => entries.get(i as usize - 1)?.hash_bytes().ok(),
        }
    };
    if wanted.contains(&applied) {
        roots.insert(applied, tree.root());
    }
    let mut leaves = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        if e.seq != applied + i as u64 + 1 {
            return Err(Fault::Chain {
                seq: e.seq,
                detail: format!("entry {} expected", applied + i as u64 + 1),
            });
        }
        if e.kind == "checkpoint" {
            let cp = claim(e)?;
            if let Some(root) = roots.get(&cp.size) {
                let what = format!("the checkpoint at entry {}", e.seq);
                check(&what, &cp, root, chain_at(cp.size, entries).as_ref())?;
            }
        }
        let leaf = leaf_of(e);
        leaves.push(leaf);
        tree.push(leaf);
        if wanted.contains(&tree.size()) {
            roots.insert(tree.size(), tree.root());
        }
    }
    if covering.size != tree.size() {
        return Err(Fault::BadCheckpoint {
            seq: covering.size,
            detail: format!(
                "it covers {} entries, the range applied with it ends at entry {}",
                covering.size,
                tree.size()
            ),
        });
    }
    let chain = chain_at(covering.size, entries);
    check(
        "the signed checkpoint",
        covering,
        &tree.root(),
        chain.as_ref(),
    )?;
    Ok((leaves, tree))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dgsp_wire::log::GENESIS_PREV;
    use dgsp_wire::merkle::root;
    use serde_json::json;

    /// `n` chained entries from seq 1; every 5th a checkpoint of the entry before it
    /// (`head` per `head_of(size, leaves)`).
    fn log(n: u64, head_of: impl Fn(u64, &[Hash], &[Entry]) -> Hash) -> Vec<Entry> {
        let mut out: Vec<Entry> = Vec::new();
        let mut prev = GENESIS_PREV;
        for seq in 1..=n {
            let public = if seq % 5 == 0 {
                let leaves: Vec<Hash> = out.iter().map(leaf_of).collect();
                let head = head_of(seq - 1, &leaves, &out);
                json!({"size": seq - 1, "head": hex::encode(head), "note": "n"})
            } else {
                json!({"n": seq})
            };
            let mut e = Entry {
                seq,
                time_ms: seq,
                kind: if seq % 5 == 0 {
                    "checkpoint"
                } else {
                    "member_joined"
                }
                .into(),
                v: 1,
                public,
                commitment: None,
                private: None,
                prev_hash: hex::encode(prev),
                hash: String::new(),
            };
            prev = e.compute_hash(&prev);
            e.hash = hex::encode(prev);
            out.push(e);
        }
        out
    }

    fn covering(size: u64, root: Hash) -> Checkpoint {
        Checkpoint {
            origin: "o".into(),
            size,
            root,
            time_unix_ms: None,
            snapshot: None,
        }
    }

    fn merkle(size: u64, leaves: &[Hash], _: &[Entry]) -> Hash {
        root(&leaves[..size as usize])
    }

    #[test]
    fn a_range_gives_the_tree_of_its_entries_and_checks_every_root_in_it() {
        let entries = log(23, merkle);
        let leaves: Vec<Hash> = entries.iter().map(leaf_of).collect();
        for applied in [0usize, 1, 4, 5, 9, 22] {
            let mut start = Frontier::new();
            leaves[..applied].iter().for_each(|l| start.push(*l));
            let hash = match applied {
                0 => GENESIS_PREV,
                n => entries[n - 1].hash_bytes().unwrap(),
            };
            let cp = covering(23, root(&leaves));
            let (got, tree) = range_tree(&start, &hash, &entries[applied..], &cp).unwrap();
            assert_eq!(got, leaves[applied..]);
            assert_eq!((tree.size(), tree.root()), (23, root(&leaves)));
            // The covering checkpoint's root of one size less is refused, named.
            let wrong = covering(23, root(&leaves[..22]));
            let err = range_tree(&start, &hash, &entries[applied..], &wrong).unwrap_err();
            assert_eq!((err.kind(), err.seq()), ("fork", Some(23)));
            for named in [hex::encode(wrong.root), hex::encode(root(&leaves))] {
                assert!(err.to_string().contains(&named), "{err}");
            }
        }
    }

    #[test]
    fn legacy_chain_roots_are_accepted_and_a_chain_hash_of_another_size_is_not() {
        let chain =
            |size: u64, _: &[Hash], es: &[Entry]| es[size as usize - 1].hash_bytes().unwrap();
        let entries = log(12, chain);
        let last = entries[11].hash_bytes().unwrap();
        let (_, tree) = range_tree(
            &Frontier::new(),
            &GENESIS_PREV,
            &entries,
            &covering(12, last),
        )
        .unwrap();
        assert_eq!(tree.size(), 12);
        let other = entries[10].hash_bytes().unwrap();
        let err = range_tree(
            &Frontier::new(),
            &GENESIS_PREV,
            &entries,
            &covering(12, other),
        )
        .unwrap_err();
        assert_eq!(err.kind(), "fork");
        assert!(err.to_string().contains(&hex::encode(last)), "{err}");
    }

    #[test]
    fn a_checkpoint_entry_inside_the_range_with_a_wrong_root_is_a_fork() {
        // The checkpoint at entry 10 signs the root of 8 entries as that of 9.
        let bad = |size: u64, leaves: &[Hash], _: &[Entry]| {
            root(&leaves[..if size == 9 { 8 } else { size as usize }])
        };
        let entries = log(12, bad);
        let leaves: Vec<Hash> = entries.iter().map(leaf_of).collect();
        let err = range_tree(
            &Frontier::new(),
            &GENESIS_PREV,
            &entries,
            &covering(12, root(&leaves)),
        )
        .unwrap_err();
        assert_eq!((err.kind(), err.seq()), ("fork", Some(9)));
        assert!(err.to_string().contains("entry 10"), "{err}");
        // Applied from 9 on, the same entry names the applied size: checked against it.
        let mut start = Frontier::new();
        leaves[..9].iter().for_each(|l| start.push(*l));
        let hash = entries[8].hash_bytes().unwrap();
        let err =
            range_tree(&start, &hash, &entries[9..], &covering(12, root(&leaves))).unwrap_err();
        assert_eq!((err.kind(), err.seq()), ("fork", Some(9)));
        // From 10 on it names a size before the range: left to the replica.
        assert_eq!(earlier(&entries[10..], 10).unwrap().len(), 0);
        assert_eq!(earlier(&entries[9..], 10).unwrap()[0].0, 10);
    }

    #[test]
    fn one_changed_entry_changes_the_root() {
        let mut entries = log(7, merkle);
        let leaves: Vec<Hash> = entries.iter().map(leaf_of).collect();
        entries[2].public = json!({"n": 99});
        let err = range_tree(
            &Frontier::new(),
            &GENESIS_PREV,
            &entries,
            &covering(7, root(&leaves)),
        )
        .unwrap_err();
        assert_eq!(err.kind(), "fork");
    }
}
