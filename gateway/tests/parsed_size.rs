//! The follower bounds its pending entries by parsed size: the estimate
//! (`follower::size::parsed_size`) is never below what parsing a feed page really
//! allocates, measured by a counting allocator, and a revocation at the certificate cap fits
//! the default bound.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use dgsp_gateway::follower::size::{parsed_size, ALLOCATION_OVERHEAD};
use dgsp_gateway::follower::{fetch, MAX_PENDING_BYTES};
use dgsp_registry::writer::MAX_CERTIFICATES_PER_MEMBER;
use serde_json::json;

/// Bytes allocated and not yet freed, and allocations live, by this process.
struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
static LIVE_ALLOCATIONS: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; only counters are
// updated beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        LIVE_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        LIVE_ALLOCATIONS.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: the caller's contract is System's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> (isize, isize) {
    (
        LIVE_BYTES.load(Ordering::SeqCst),
        LIVE_ALLOCATIONS.load(Ordering::SeqCst),
    )
}

/// A feed page of one `member_revoked` entry with `zetas` zetas and one small entry, as the
/// registry serves it.
fn page(zetas: u64) -> Vec<u8> {
    let list: Vec<String> = (0..zetas).map(|i| format!("{i:032x}")).collect();
    let entry = |seq: u64, kind: &str, public: serde_json::Value| {
        json!({
            "seq": seq, "time_ms": 1_700_000_000_000u64, "kind": kind, "v": 1,
            "public": public, "commitment": "ab".repeat(32),
            "prev_hash": "00".repeat(32), "hash": "11".repeat(32),
        })
    };
    serde_json::to_vec(&json!({
        "entries": [
            entry(7, "member_revoked", json!({ "zetas": list })),
            entry(8, "member_joined", json!({})),
        ],
        "head_seq": 8,
    }))
    .unwrap()
}

#[test]
fn the_estimate_covers_what_parsing_allocates_and_admits_an_entry_at_the_cap() {
    for zetas in [0, 1, 1000, 100_000] {
        let body = page(zetas);
        let (bytes, allocations) = live();
        let parsed = fetch::parse_page(&body).unwrap();
        let (after, after_allocations) = live();
        let held = (after - bytes) as usize;
        let charged = held + (after_allocations - allocations) as usize * ALLOCATION_OVERHEAD;
        let estimate: usize = parsed.entries.iter().map(parsed_size).sum::<usize>();
        // The page's own list of entries is not held pending; each entry is.
        let list = parsed.entries.capacity() * std::mem::size_of::<dgsp_wire::log::Entry>();
        assert!(
            estimate + ALLOCATION_OVERHEAD >= charged - list,
            "{zetas} zetas: estimated {estimate}, allocated {charged} ({held} asked for)"
        );
        assert!(
            estimate <= 2 * charged,
            "{zetas} zetas: estimated {estimate}, allocated {charged}"
        );
        drop(parsed);
    }

    // A member at the certificate cap: one entry of ~37 MB of JSON, within the default
    // bound with room to spare, and twice that is not.
    let body = page(MAX_CERTIFICATES_PER_MEMBER);
    let parsed = fetch::parse_page(&body).unwrap();
    let at_cap = parsed_size(&parsed.entries[0]);
    assert!(body.len() > 36_000_000, "{}", body.len());
    assert!(at_cap > 2 * body.len(), "{at_cap}");
    assert!(at_cap + (16 << 20) < MAX_PENDING_BYTES, "{at_cap}");
    assert!(2 * at_cap > MAX_PENDING_BYTES, "{at_cap}");
}
