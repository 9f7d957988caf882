//! The log's RFC 6962 Merkle tree, rebuilt as the entries are replayed: what the root line
//! of every checkpoint signed since the tree existed commits to (`docs/checkpoints.md`).
//!
//! Leaf `i` is entry `i + 1`'s public bytes (`dgsp_wire::tiles::entry_bytes`: its canonical
//! JSON without the private part). The tree only grows while the entries arrive in
//! sequence; from a gap on (an entry missing, repeated or out of order, reported by the
//! chain) the positions are unknown and no root past it is given.
//!
//! Memory: [`MemoryTree`] keeps every node, about two hashes (64 bytes) per entry.

use dgsp_wire::log::{Entry, Hash};
use dgsp_wire::merkle::MemoryTree;
use dgsp_wire::tiles::leaf_of;

/// The tree of the entries read in sequence so far.
#[derive(Default)]
pub(crate) struct Tree {
    tree: MemoryTree,
}

impl Tree {
    /// Adds `e` as the next leaf if it is the next position (`seq` = leaves + 1).
    pub(crate) fn push(&mut self, e: &Entry) {
        if e.seq == self.tree.size().saturating_add(1) {
            self.tree.push(leaf_of(e));
        }
    }

    /// The root of the first `size` entries, when all of them were read in sequence.
    pub(crate) fn root_at(&self, size: u64) -> Option<Hash> {
        self.tree.root_at(size).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dgsp_wire::events::Event;
    use dgsp_wire::log::GENESIS_PREV;
    use dgsp_wire::merkle::{empty_root, root};

    fn entries(n: u64) -> Vec<Entry> {
        let mut prev = GENESIS_PREV;
        (1..=n)
            .map(|seq| {
                let e = Entry::seal(
                    seq,
                    seq,
                    &Event::MemberJoined {
                        id: seq,
                        username: format!("m{seq}"),
                    },
                    &prev,
                );
                prev = e.hash_bytes().unwrap();
                e
            })
            .collect()
    }

    fn leaves(es: &[Entry]) -> Vec<Hash> {
        es.iter().map(leaf_of).collect()
    }

    #[test]
    fn roots_at_every_size_are_the_rfc_6962_roots() {
        let es = entries(7);
        let mut t = Tree::default();
        assert_eq!(t.root_at(0), Some(empty_root()));
        for e in &es {
            t.push(e);
        }
        let l = leaves(&es);
        for size in 0..=7 {
            assert_eq!(t.root_at(size), Some(root(&l[..size as usize])), "{size}");
        }
        assert_eq!(t.root_at(8), None);
    }

    #[test]
    fn the_private_part_is_not_in_the_leaf() {
        let es = entries(2);
        let mut a = Tree::default();
        let mut b = Tree::default();
        for e in &es {
            a.push(e);
            b.push(&e.redacted());
        }
        assert!(es[1].private.is_some());
        assert_eq!(a.root_at(2), b.root_at(2));
    }

    #[test]
    fn a_gap_stops_the_tree() {
        let es = entries(5);
        let mut t = Tree::default();
        for e in es.iter().filter(|e| e.seq != 3) {
            t.push(e);
        }
        // A repeated entry is not a second leaf either.
        t.push(&es[1]);
        assert_eq!(t.root_at(2), Some(root(&leaves(&es[..2]))));
        assert_eq!(t.root_at(3), None);
        assert_eq!(t.root_at(5), None);
    }
}
