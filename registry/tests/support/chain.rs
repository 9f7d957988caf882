//! Writing the log through the store directly, as the store's own tests do.

use dgsp_registry::store::{Head, Store};
use dgsp_wire::events::Event;
use dgsp_wire::log::{Entry, Hash};

/// Appends `events` as one commit after `head` (timestamps 1000, 1001, …) and moves `head`.
pub fn append(store: &Store, head: &mut Head, events: &[Event]) {
    let mut entries: Vec<Entry> = Vec::new();
    for (k, e) in events.iter().enumerate() {
        let prev: Hash = entries
            .last()
            .map_or(head.hash, |x| x.hash_bytes().unwrap());
        entries.push(Entry::seal(
            head.seq + 1 + k as u64,
            1_000 + k as u64,
            e,
            &prev,
        ));
    }
    store.commit(&entries, &[]).unwrap();
    let last = entries.last().unwrap();
    *head = Head {
        seq: last.seq,
        hash: last.hash_bytes().unwrap(),
    };
}
