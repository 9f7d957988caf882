//! What a parsed log entry costs in memory, for the bound on entries held pending
//! ([`MAX_PENDING_BYTES`](super::MAX_PENDING_BYTES)).
//!
//! A parsed entry is larger than its JSON: every string of a `member_revoked` entry's
//! `zetas` (34 bytes of JSON with its quotes and comma) is a 32-byte `serde_json::Value`
//! in the list and a 32-byte allocation of its own, and the smallest non-empty object is a
//! whole B-tree node of ~730 bytes. The estimate counts what the parsed values hold: the
//! entry itself, the capacity of every string and list, every map node (as many as the
//! B-tree can have), and [`ALLOCATION_OVERHEAD`] per allocation for the allocator's own
//! bookkeeping, so it is never below what the parse allocated.

use std::mem::size_of;

use dgsp_wire::log::Entry;
use serde_json::Value;

/// Bytes the allocator is charged per allocation beyond the size asked for (its header and
/// rounding to a size class; 8 to 16 bytes in glibc's malloc).
pub const ALLOCATION_OVERHEAD: usize = 16;

/// One node of a JSON object's B-tree (`serde_json::Map` is a `BTreeMap<String, Value>`):
/// room for 11 keys and values whether used or not, its parent pointer and lengths, and 12
/// edges (internal nodes; leaves are a little smaller).
const MAP_NODE: usize = 11 * (size_of::<String>() + size_of::<Value>()) + 16 + 12 * 8;

/// Nodes of a B-tree of `len` entries, at most: every node but the root holds at least 5.
const fn map_nodes(len: usize) -> usize {
    if len == 0 {
        0
    } else {
        1 + len / 5
    }
}

fn string(s: &str, capacity: usize) -> usize {
    if s.is_empty() && capacity == 0 {
        0
    } else {
        capacity + ALLOCATION_OVERHEAD
    }
}

/// Heap bytes held by `v` (not counting `v` itself, which lives in its parent).
pub fn value_heap(v: &Value) -> usize {
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        Value::String(s) => string(s, s.capacity()),
        Value::Array(items) => {
            let own = if items.capacity() == 0 {
                0
            } else {
                items.capacity() * size_of::<Value>() + ALLOCATION_OVERHEAD
            };
            items
                .iter()
                .map(value_heap)
                .fold(own, usize::saturating_add)
        }
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| string(k, k.capacity()) + value_heap(v))
            .fold(
                map_nodes(map.len()) * (MAP_NODE + ALLOCATION_OVERHEAD),
                usize::saturating_add,
            ),
    }
}

/// The memory a parsed `entry` holds: itself and everything it owns.
pub fn parsed_size(entry: &Entry) -> usize {
    let strings = [&entry.kind, &entry.prev_hash, &entry.hash]
        .into_iter()
        .chain(entry.commitment.as_ref())
        .map(|s| string(s, s.capacity()))
        .sum::<usize>();
    let private = entry.private.as_ref().map_or(0, |p| {
        string(&p.salt, p.salt.capacity()) + value_heap(&p.payload)
    });
    size_of::<Entry>()
        .saturating_add(strings)
        .saturating_add(value_heap(&entry.public))
        .saturating_add(private)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(public: Value) -> Entry {
        Entry {
            seq: 2,
            time_ms: 1,
            kind: "member_revoked".into(),
            v: 1,
            public,
            commitment: None,
            private: None,
            prev_hash: "00".repeat(32),
            hash: "11".repeat(32),
        }
    }

    #[test]
    fn a_revocation_costs_about_twice_its_json() {
        let zetas: Vec<String> = (0..10_000).map(|i| format!("{i:032x}")).collect();
        let e = entry(json!({ "zetas": zetas }));
        let json = serde_json::to_vec(&e).unwrap().len();
        let parsed: Entry = serde_json::from_slice(&serde_json::to_vec(&e).unwrap()).unwrap();
        let size = parsed_size(&parsed);
        // 32 (Value) + 32 (string) + 16 (allocator) per 34-byte zeta of JSON, and the list's
        // spare capacity.
        assert!(size > 2 * json, "{size} for {json} bytes of JSON");
        assert!(size < 4 * json, "{size} for {json} bytes of JSON");
    }

    #[test]
    fn nested_values_are_counted() {
        let small = parsed_size(&entry(json!({})));
        let nested = parsed_size(&entry(json!({"a": {"b": ["x".repeat(1000)]}})));
        assert!(nested >= small + 1000 + 2 * MAP_NODE, "{small} {nested}");
    }
}
