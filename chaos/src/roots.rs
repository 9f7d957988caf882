//! Every checkpoint the registry signed, logged (`checkpoint` entries) or served
//! (`GET /v1/checkpoint`, every answer the suite read during the run), has as its root the
//! RFC 6962 Merkle root of the first `size` entries of the log (`docs/checkpoints.md`):
//! recomputed here from the suite's copy of the log. A chain-hash root (what registries
//! signed before the tree, still accepted from old logs by followers) is a failure too:
//! this run's registry was initialised by this build.

use std::collections::HashSet;
use std::sync::Mutex;

use dgsp_core::checkpoint::Checkpoint;
use dgsp_core::ManagerPublicKey;
use dgsp_wire::follow::{check_root, RootKind};
use dgsp_wire::log::{unhex32, Entry};
use dgsp_wire::merkle::MemoryTree;
use dgsp_wire::registry_api::CheckpointInfo;
use dgsp_wire::tiles::leaf_of;

use crate::invariants::Log;
use crate::report::Row;

const NAME: &str = "every checkpoint served or logged has the Merkle root of its size";

/// The distinct checkpoints the registry served, as the suite read them.
#[derive(Default)]
pub struct ServedNotes {
    seen: Mutex<(HashSet<String>, Vec<CheckpointInfo>)>,
}

impl ServedNotes {
    /// Records an answer of `GET /v1/checkpoint` (once per distinct note).
    pub fn record(&self, answer: &CheckpointInfo) {
        let mut seen = self.seen.lock().unwrap();
        let (notes, answers) = &mut *seen;
        if notes.insert(answer.note.clone()) {
            answers.push(answer.clone());
        }
    }

    /// The distinct answers, in the order first seen.
    fn answers(&self) -> Vec<CheckpointInfo> {
        self.seen.lock().unwrap().1.clone()
    }
}

/// The log's tree, and how far it could be built (the copy must hold entries 1, 2, ... in
/// order).
struct Tree {
    tree: MemoryTree,
    chain: Vec<[u8; 32]>,
}

impl Tree {
    fn of(entries: &[Entry], failures: &mut Vec<String>) -> Tree {
        let mut t = Tree {
            tree: MemoryTree::new(),
            chain: Vec::new(),
        };
        for e in entries {
            let hash = unhex32(&e.hash);
            match hash {
                Some(h) if e.seq == t.tree.size() + 1 => {
                    t.tree.push(leaf_of(e));
                    t.chain.push(h);
                }
                _ => {
                    failures.push(format!(
                        "the log copy holds entry {} (hash {:?}) where entry {} was expected: \
                         no root is checked past entry {}",
                        e.seq,
                        e.hash,
                        t.tree.size() + 1,
                        t.tree.size()
                    ));
                    break;
                }
            }
        }
        t
    }

    /// `Ok` when `cp`'s root is the tree root of its size; why not otherwise.
    fn check(&self, cp: &Checkpoint) -> Result<(), String> {
        let Ok(root) = self.tree.root_at(cp.size) else {
            return Err(format!(
                "size {} is beyond the {} entries of the log copy",
                cp.size,
                self.tree.size()
            ));
        };
        let chain = cp
            .size
            .checked_sub(1)
            .and_then(|i| self.chain.get(usize::try_from(i).ok()?));
        match check_root(cp, &root, chain)? {
            RootKind::Tree => Ok(()),
            RootKind::LegacyChain => Err(format!(
                "its root is the chain hash of entry {}, not the Merkle root {}: this registry signs tree roots",
                cp.size,
                hex::encode(root)
            )),
        }
    }
}

/// Every logged and every served checkpoint has the Merkle root of its size. Notes that do
/// not verify are the row "every logged checkpoint's revocations are in its snapshot"'s
/// (logged) or a failure here (served).
pub fn checkpoint_roots(log: &Log, served: &ServedNotes, group: &ManagerPublicKey) -> Row {
    let mut failures = Vec::new();
    let tree = Tree::of(log.entries(), &mut failures);
    let mut checked = 0u64;
    for (seq, cp) in log.checkpoints() {
        let Ok(cp) = cp else { continue };
        checked += 1;
        if let Err(e) = tree.check(cp) {
            failures.push(format!("checkpoint at entry {seq} (size {}): {e}", cp.size));
        }
    }
    for answer in served.answers() {
        checked += 1;
        let what = format!(
            "served checkpoint of size {} signed at {}",
            answer.size, answer.time_unix_ms
        );
        let cp = match group.verify_checkpoint(&answer.note) {
            Ok(cp) => cp,
            Err(e) => {
                failures.push(format!("{what}: the note does not verify: {e}"));
                continue;
            }
        };
        if cp.size != answer.size || answer.head != hex::encode(cp.root) {
            failures.push(format!(
                "{what}: the answer states size {} and head {}, its note size {} and root {}",
                answer.size,
                answer.head,
                cp.size,
                hex::encode(cp.root)
            ));
        }
        if let Err(e) = tree.check(&cp) {
            failures.push(format!("{what}: {e}"));
        }
    }
    Row::new(NAME, checked, failures)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dgsp_core::checkpoint::origin_for;
    use dgsp_core::{Manager, ParamSet};
    use dgsp_wire::events::Event;
    use dgsp_wire::log::GENESIS_PREV;
    use rand_core::OsRng;

    /// A log of `n` joins and a checkpoint of the first `n` entries with root `root`.
    fn log(m: &Manager, n: u64, root: impl Fn(&[Entry]) -> [u8; 32]) -> (Log, CheckpointInfo) {
        let mut entries: Vec<Entry> = Vec::new();
        let mut prev = GENESIS_PREV;
        let mut push = |entries: &mut Vec<Entry>, ev: &Event| {
            let seq = entries.len() as u64 + 1;
            let e = Entry::seal_with_salt(seq, 1, ev, &prev, [seq as u8; 16]);
            prev = e.hash_bytes().unwrap();
            entries.push(e);
        };
        push(&mut entries, &Event::group_created(m.public_key()));
        for id in 1..n {
            push(
                &mut entries,
                &Event::MemberJoined {
                    id,
                    username: format!("m{id}"),
                },
            );
        }
        let root = root(&entries);
        let note = m.sign_checkpoint(&Checkpoint {
            origin: origin_for(m.public_key()),
            size: n,
            root,
            time_unix_ms: Some(1),
            snapshot: None,
        });
        push(
            &mut entries,
            &Event::Checkpoint {
                size: n,
                head: hex::encode(root),
                note: note.clone(),
            },
        );
        let served = CheckpointInfo {
            size: n,
            head: hex::encode(root),
            time_unix_ms: 1,
            note,
            witnessed: None,
        };
        (Log::new(entries, m.public_key()), served)
    }

    fn tree_root(entries: &[Entry]) -> [u8; 32] {
        let leaves: Vec<_> = entries.iter().map(leaf_of).collect();
        dgsp_wire::merkle::root(&leaves)
    }

    #[test]
    fn tree_roots_pass_and_other_roots_fail() {
        let m = Manager::generate(ParamSet::Sha2_128f, &mut OsRng);
        let (good, served) = log(&m, 5, tree_root);
        let notes = ServedNotes::default();
        notes.record(&served);
        notes.record(&served);
        let row = checkpoint_roots(&good, &notes, m.public_key());
        assert!(row.passed(), "{:?}", row.failures);
        assert_eq!(row.checked, 2, "a repeated answer counts once");

        // The chain hash of entry `size` (a legacy root), and the root of another size.
        let chain = |es: &[Entry]| unhex32(&es[4].hash).unwrap();
        let shorter = |es: &[Entry]| tree_root(&es[..4]);
        for (what, root) in [
            ("chain", &chain as &dyn Fn(&[Entry]) -> [u8; 32]),
            ("shorter", &shorter),
        ] {
            let (bad, served) = log(&m, 5, root);
            let notes = ServedNotes::default();
            notes.record(&served);
            let row = checkpoint_roots(&bad, &notes, m.public_key());
            assert_eq!(row.failures.len(), 2, "{what}: {:?}", row.failures);
            assert!(row.failures[0].contains("checkpoint at entry 6 (size 5)"));
            assert!(row.failures[1].starts_with("served checkpoint of size 5"));
        }

        // A served note from another key, and one beyond the log.
        let other = Manager::generate(ParamSet::Sha2_128f, &mut OsRng);
        let (_, foreign) = log(&other, 5, tree_root);
        let (_, longer) = log(&m, 9, tree_root);
        let notes = ServedNotes::default();
        notes.record(&foreign);
        notes.record(&longer);
        let row = checkpoint_roots(&good, &notes, m.public_key());
        assert_eq!(row.failures.len(), 2, "{:?}", row.failures);
        assert!(row.failures[0].contains("does not verify"));
        assert!(row.failures[1].contains("beyond the 6 entries"));
    }
}
