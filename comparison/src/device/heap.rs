//! A counting global allocator: the heap a piece of code holds at its peak, in bytes above
//! what was allocated when it started. It counts only the calling thread's allocations
//! inside [`peak`]; elsewhere it costs one thread-local read per allocation and deallocation,
//! so the timings of the rest of the run are not disturbed.
//!
//! The only `unsafe` code of the crate: forwarding [`GlobalAlloc`] to the system allocator.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Mutex;

/// The system allocator, counting while [`peak`] runs.
pub struct CountingAllocator;

thread_local! {
    /// Whether this thread is inside [`peak`].
    static TRACKING: Cell<bool> = const { Cell::new(false) };
}
static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
/// One [`peak`] at a time.
static EXCLUSIVE: Mutex<()> = Mutex::new(());

fn tracking() -> bool {
    // `try_with`: deallocations can happen after the thread's locals are gone.
    TRACKING.try_with(Cell::get).unwrap_or(false)
}

fn grew(bytes: usize) {
    let now = CURRENT.fetch_add(bytes as isize, Ordering::Relaxed) + bytes as isize;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

fn shrank(bytes: usize) {
    CURRENT.fetch_sub(bytes as isize, Ordering::Relaxed);
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the counting touches only atomics and a thread-local `Cell` (const
// initialised, no destructor) and never allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's `layout` obligations are passed on unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() && tracking() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() && tracking() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation goes there).
        unsafe { System.dealloc(ptr, layout) };
        if tracking() {
            shrank(layout.size());
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `dealloc` for `ptr` and `layout`; `new_size` is the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() && tracking() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        p
    }
}

/// Runs `f` and returns its result with the peak heap it held above the level at its start
/// (0 when this allocator is not the global one).
pub fn peak<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let _one = EXCLUSIVE.lock().unwrap_or_else(|p| p.into_inner());
    CURRENT.store(0, Ordering::SeqCst);
    PEAK.store(0, Ordering::SeqCst);
    TRACKING.with(|t| t.set(true));
    let out = std::hint::black_box(f());
    TRACKING.with(|t| t.set(false));
    (out, PEAK.load(Ordering::SeqCst).max(0) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_a_vector() {
        let (v, bytes) = peak(|| vec![1u8; 100_000]);
        assert_eq!(v.len(), 100_000);
        // The crate's global allocator is this one (lib.rs), also in tests.
        assert!(bytes >= 100_000, "{bytes}");
        let (_, none) = peak(|| 1 + 1);
        assert_eq!(none, 0);
    }
}
