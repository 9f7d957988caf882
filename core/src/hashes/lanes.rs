//! Several independent SHA-256 compressions at once.
//!
//! A WOTS+ chain step on the SHA-2 sets is one SHA-256 compression, and each step depends
//! on the previous one, so a single chain runs at the *latency* of the compression
//! function. Different chains are independent: [`compress_lanes`] compresses [`LANES`] of
//! them together, and on x86-64 CPUs with the SHA extensions it does so with a SHA-NI
//! kernel that issues the lanes' instructions round-group by round-group, letting the CPU
//! overlap them and run at the SHA unit's *throughput* instead. Elsewhere (other CPUs,
//! other architectures) it falls back to a plain loop over [`sha2::compress256`].
//!
//! Measured on the development machine (virtualised Sapphire-Rapids-class Xeon, ~3.3 GHz,
//! release build, dependent chains as in WOTS+: each lane's next block holds its previous
//! output), ns per block per lane: `sha2::compress256` 48.6; this kernel with 1 / 2 / 3 /
//! 4 / 6 / 8 lanes 48.2 / 35.7 / 33.9 / 34.1 / 33.9 / 34.5. On this CPU `sha256rnds2` has a
//! latency of ~1.13 ns but a throughput of only ~0.85 ns, so 32 of them bound a block at
//! ~27.5 ns however many lanes run: the gain over one chain is ~1.4x, reached from three
//! lanes on. In a simulation of the WOTS+ lane-refill loop (keygen and sign, n = 16/24/32)
//! four lanes were consistently best or tied (~36-39 ns per chain step against ~51 for
//! `compress256`); three or fewer leave the SHA unit partly idle and six or more spill
//! registers (16 XMM registers; the SHA instructions have no VEX/EVEX form) and waste
//! more work on idle lanes at the tail. Hence `LANES = 4`.
//!
//! # Safety
//!
//! This is the only module of the crate allowed to use `unsafe` (see `hashes/mod.rs`). The
//! unsafe code is confined to the x86-64 kernel [`shani::compress`] and its one call site:
//!
//! * **Target features.** `shani::compress` is a `#[target_feature(enable = "sha,sse2,
//!   ssse3,sse4.1")] unsafe fn`; executing it on a CPU without those features would be
//!   undefined behaviour. It is called from exactly one place, [`compress_lanes`], and only
//!   after [`shani::available`] returned `true`, which happens only when
//!   `std::is_x86_feature_detected!` reported all four features on the running CPU (the
//!   answer is cached in an atomic; a stale "unknown" only re-runs detection).
//! * **Memory.** The kernel touches memory only through `_mm_loadu_si128` /
//!   `_mm_storeu_si128`, the unaligned forms, so no alignment is required. Every pointer
//!   passed to them is derived from a safe reference to exactly 16 bytes: a
//!   `chunks_exact(16)` chunk of a `[u8; 64]` block, or one half (`split_at(4)`, four
//!   `u32`s) of a `[u32; 8]` state. There is no other pointer arithmetic, so each access
//!   stays inside the array it came from, and the borrow checker guarantees the references
//!   are valid (and, for stores, exclusive) for the whole call.
//! * **Everything else** in the kernel is register-only SSE/SHA intrinsics on `__m128i`
//!   values, which have no memory-safety preconditions beyond the target features above.
//!
//! The kernel is tested lane by lane against `sha2::compress256` (random inputs, several
//! lane counts, the "abc" test vector), and so is the portable fallback.

use sha2::compress256;
use sha2::digest::generic_array::GenericArray;

/// How many independent compressions one call performs.
pub(crate) const LANES: usize = 4;

/// The kernel [`compress_lanes`] runs on this CPU: `"sha-ni"` or `"portable"`.
pub(crate) fn kernel_name() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if shani::available() {
        return "sha-ni";
    }
    "portable"
}

/// Compresses `blocks[i]` into `states[i]` for every lane: exactly
/// `sha2::compress256(&mut states[i], &[blocks[i]])` for each `i`.
#[inline]
pub(crate) fn compress_lanes(states: &mut [[u32; 8]; LANES], blocks: &[[u8; 64]; LANES]) {
    #[cfg(target_arch = "x86_64")]
    if shani::available() {
        // SAFETY: `available()` returned true, so the running CPU supports every target
        // feature `shani::compress` is compiled with (see the module's Safety section).
        unsafe { shani::compress(states, blocks) };
        return;
    }
    compress_lanes_portable(states, blocks);
}

/// The portable fallback: one `sha2::compress256` per lane.
#[inline]
fn compress_lanes_portable<const N: usize>(states: &mut [[u32; 8]; N], blocks: &[[u8; 64]; N]) {
    for (st, b) in states.iter_mut().zip(blocks) {
        compress256(st, core::slice::from_ref(GenericArray::from_slice(b)));
    }
}

#[cfg(target_arch = "x86_64")]
mod shani {
    use core::arch::x86_64::{
        _mm_add_epi32, _mm_alignr_epi8, _mm_blend_epi16, _mm_loadu_si128, _mm_set_epi32,
        _mm_set_epi64x, _mm_setzero_si128, _mm_sha256msg1_epu32, _mm_sha256msg2_epu32,
        _mm_sha256rnds2_epu32, _mm_shuffle_epi32, _mm_shuffle_epi8, _mm_storeu_si128,
    };
    use core::sync::atomic::{AtomicU8, Ordering};

    use super::super::SHA256_K as K;

    /// 0 = not yet detected, 1 = unavailable, 2 = available.
    static DETECTED: AtomicU8 = AtomicU8::new(0);

    /// Whether the running CPU has SHA-NI and the SSE levels the kernel uses.
    #[inline]
    pub(super) fn available() -> bool {
        match DETECTED.load(Ordering::Relaxed) {
            2 => true,
            1 => false,
            _ => detect(),
        }
    }

    #[cold]
    fn detect() -> bool {
        let ok = std::is_x86_feature_detected!("sha")
            && std::is_x86_feature_detected!("sse2")
            && std::is_x86_feature_detected!("ssse3")
            && std::is_x86_feature_detected!("sse4.1");
        DETECTED.store(if ok { 2 } else { 1 }, Ordering::Relaxed);
        ok
    }

    /// `N` interleaved SHA-256 compressions with SHA-NI.
    ///
    /// Each lane follows the usual SHA-NI structure (state held as ABEF / CDGH, two rounds
    /// per `sha256rnds2`, schedule by `sha256msg1`/`sha256msg2`); the lanes are processed
    /// together one 4-round group at a time, so `N` independent dependency chains are in
    /// flight. The 16 round groups are spelled out by the macros below (so every schedule
    /// vector has a fixed register role) and the `0..N` lane loops have a constant trip
    /// count, so the whole function compiles to straight-line code (checked in the
    /// disassembly). Generic over `N` so the tests and measurements can try other counts.
    ///
    /// # Safety
    /// The CPU must support `sha`, `sse2`, `ssse3` and `sse4.1` (check [`available`]).
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    pub(super) unsafe fn compress<const N: usize>(
        states: &mut [[u32; 8]; N],
        blocks: &[[u8; 64]; N],
    ) {
        // Byte shuffle turning each big-endian 32-bit word into a native one.
        let bswap = _mm_set_epi64x(0x0c0d0e0f_08090a0b, 0x04050607_00010203);

        let mut abef = [_mm_setzero_si128(); N];
        let mut cdgh = [_mm_setzero_si128(); N];
        // The message schedule: the last 16 words as a ring of four 4-word vectors per lane.
        // Separate arrays (not an indexed ring) so every access below has a constant index
        // and the whole thing lives in registers.
        let mut w0 = [_mm_setzero_si128(); N];
        let mut w1 = [_mm_setzero_si128(); N];
        let mut w2 = [_mm_setzero_si128(); N];
        let mut w3 = [_mm_setzero_si128(); N];

        for i in 0..N {
            let (lo, hi) = states[i].split_at(4);
            // SAFETY: `lo` and `hi` are 4 × u32 = 16 bytes each; unaligned loads.
            let (dcba, hgfe) = unsafe {
                (
                    _mm_loadu_si128(lo.as_ptr().cast()),
                    _mm_loadu_si128(hi.as_ptr().cast()),
                )
            };
            // Lanes (low to high): dcba = [a b c d], hgfe = [e f g h].
            let badc = _mm_shuffle_epi32(dcba, 0xB1); // [b a d c]
            let efgh = _mm_shuffle_epi32(hgfe, 0x1B); // [h g f e]
            abef[i] = _mm_alignr_epi8(badc, efgh, 8); // [f e b a]
            cdgh[i] = _mm_blend_epi16(efgh, badc, 0xF0); // [h g d c]

            let slots = [&mut w0[i], &mut w1[i], &mut w2[i], &mut w3[i]];
            for (slot, chunk) in slots.into_iter().zip(blocks[i].chunks_exact(16)) {
                // SAFETY: `chunk` is exactly 16 bytes of the block; unaligned load.
                let m = unsafe { _mm_loadu_si128(chunk.as_ptr().cast()) };
                *slot = _mm_shuffle_epi8(m, bswap);
            }
        }

        // Rounds 4g .. 4g+3 of every lane, with message words `$w` (W[4g .. 4g+3]).
        macro_rules! rounds {
            ($g:literal, $w:ident) => {{
                let k = _mm_set_epi32(
                    K[4 * $g + 3] as i32,
                    K[4 * $g + 2] as i32,
                    K[4 * $g + 1] as i32,
                    K[4 * $g] as i32,
                );
                for i in 0..N {
                    let wk = _mm_add_epi32($w[i], k);
                    cdgh[i] = _mm_sha256rnds2_epu32(cdgh[i], abef[i], wk);
                    abef[i] = _mm_sha256rnds2_epu32(abef[i], cdgh[i], _mm_shuffle_epi32(wk, 0x0E));
                }
            }};
        }
        // The next four schedule words, W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16],
        // replacing the oldest ring slot `$w16` (W[t-16..]); `$w12`, `$w8`, `$w4` hold
        // W[t-12..], W[t-8..], W[t-4..].
        macro_rules! schedule {
            ($w16:ident, $w12:ident, $w8:ident, $w4:ident) => {
                for i in 0..N {
                    let m = _mm_sha256msg1_epu32($w16[i], $w12[i]);
                    let m = _mm_add_epi32(m, _mm_alignr_epi8($w4[i], $w8[i], 4));
                    $w16[i] = _mm_sha256msg2_epu32(m, $w4[i]);
                }
            };
        }

        rounds!(0, w0);
        rounds!(1, w1);
        rounds!(2, w2);
        rounds!(3, w3);
        macro_rules! sixteen_rounds {
            ($($g0:literal, $g1:literal, $g2:literal, $g3:literal);*) => {$(
                schedule!(w0, w1, w2, w3);
                rounds!($g0, w0);
                schedule!(w1, w2, w3, w0);
                rounds!($g1, w1);
                schedule!(w2, w3, w0, w1);
                rounds!($g2, w2);
                schedule!(w3, w0, w1, w2);
                rounds!($g3, w3);
            )*};
        }
        sixteen_rounds!(4, 5, 6, 7; 8, 9, 10, 11; 12, 13, 14, 15);

        for i in 0..N {
            let feba = _mm_shuffle_epi32(abef[i], 0x1B); // [a b e f]
            let ghcd = _mm_shuffle_epi32(cdgh[i], 0xB1); // [g h c d]
            let dcba = _mm_blend_epi16(feba, ghcd, 0xF0); // [a b c d]
            let hgfe = _mm_alignr_epi8(ghcd, feba, 8); // [e f g h]
            let (lo, hi) = states[i].split_at_mut(4);
            // SAFETY: `lo` and `hi` are 4 × u32 = 16 bytes each, exclusively borrowed;
            // unaligned loads and stores. Adding the input state re-read from memory (it is
            // still unmodified) rather than kept in registers eases register pressure.
            unsafe {
                let dcba0 = _mm_loadu_si128(lo.as_ptr().cast());
                let hgfe0 = _mm_loadu_si128(hi.as_ptr().cast());
                _mm_storeu_si128(lo.as_mut_ptr().cast(), _mm_add_epi32(dcba, dcba0));
                _mm_storeu_si128(hi.as_mut_ptr().cast(), _mm_add_epi32(hgfe, hgfe0));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::IV256;
    use super::*;

    /// xorshift64*: deterministic test input.
    struct Rng(u64);
    impl Rng {
        fn next_u64(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn state(&mut self) -> [u32; 8] {
            core::array::from_fn(|_| self.next_u64() as u32)
        }
        fn block(&mut self) -> [u8; 64] {
            core::array::from_fn(|_| self.next_u64() as u8)
        }
    }

    fn reference(state: &[u32; 8], block: &[u8; 64]) -> [u32; 8] {
        let mut st = *state;
        compress256(
            &mut st,
            core::slice::from_ref(GenericArray::from_slice(block)),
        );
        st
    }

    /// Checks `f` against `sha2::compress256` lane by lane on random inputs, carrying the
    /// states over from one call to the next (as a hash chain does).
    fn check_random<const N: usize>(
        f: impl Fn(&mut [[u32; 8]; N], &[[u8; 64]; N]),
        seed: u64,
        iters: usize,
    ) {
        let mut rng = Rng(seed);
        let mut states: [[u32; 8]; N] = core::array::from_fn(|_| rng.state());
        for it in 0..iters {
            let blocks: [[u8; 64]; N] = core::array::from_fn(|_| rng.block());
            let want: [[u32; 8]; N] = core::array::from_fn(|i| reference(&states[i], &blocks[i]));
            f(&mut states, &blocks);
            for i in 0..N {
                assert_eq!(states[i], want[i], "N = {N}, iteration {it}, lane {i}");
            }
            // Now and then start a lane afresh so unrelated states keep appearing.
            if it % 7 == 0 {
                states[it % N] = rng.state();
            }
        }
    }

    /// SHA-256 of `msg` (< 56 bytes) as one padded block.
    fn padded(msg: &[u8]) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[..msg.len()].copy_from_slice(msg);
        b[msg.len()] = 0x80;
        b[56..].copy_from_slice(&(msg.len() as u64 * 8).to_be_bytes());
        b
    }

    const ABC: [u32; 8] = [
        0xba7816bf, 0x8f01cfea, 0x414140de, 0x5dae2223, 0xb00361a3, 0x96177a9c, 0xb410ff61,
        0xf20015ad,
    ];
    const EMPTY: [u32; 8] = [
        0xe3b0c442, 0x98fc1c14, 0x9afbf4c8, 0x996fb924, 0x27ae41e4, 0x649b934c, 0xa495991b,
        0x7852b855,
    ];

    fn check_vectors(f: impl Fn(&mut [[u32; 8]; LANES], &[[u8; 64]; LANES])) {
        // "abc" in even lanes, "" in odd ones, so a lane mix-up cannot go unnoticed.
        let mut states = [IV256; LANES];
        let blocks: [[u8; 64]; LANES] = core::array::from_fn(|i| {
            if i % 2 == 0 {
                padded(b"abc")
            } else {
                padded(b"")
            }
        });
        f(&mut states, &blocks);
        for (i, st) in states.iter().enumerate() {
            assert_eq!(*st, if i % 2 == 0 { ABC } else { EMPTY }, "lane {i}");
        }
    }

    #[test]
    fn dispatch_matches_compress256() {
        check_random::<LANES>(compress_lanes, 1, 5000);
    }

    #[test]
    fn dispatch_abc_vector() {
        check_vectors(compress_lanes);
    }

    #[test]
    fn portable_matches_compress256() {
        check_random::<LANES>(compress_lanes_portable, 2, 2000);
        check_random::<3>(compress_lanes_portable, 3, 500);
    }

    #[test]
    fn portable_abc_vector() {
        check_vectors(compress_lanes_portable);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn shani_kernel_all_lane_counts() {
        if !shani::available() {
            eprintln!("SHA-NI not available on this CPU: kernel not exercised");
            return;
        }
        // SAFETY (all closures): `available()` returned true above.
        check_random::<1>(|s, b| unsafe { shani::compress(s, b) }, 11, 3000);
        check_random::<2>(|s, b| unsafe { shani::compress(s, b) }, 12, 3000);
        check_random::<3>(|s, b| unsafe { shani::compress(s, b) }, 13, 3000);
        check_random::<4>(|s, b| unsafe { shani::compress(s, b) }, 14, 3000);
        check_random::<5>(|s, b| unsafe { shani::compress(s, b) }, 15, 2000);
        check_random::<8>(|s, b| unsafe { shani::compress(s, b) }, 18, 2000);
        check_vectors(|s, b| unsafe { shani::compress(s, b) });
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn detection_is_stable() {
        let first = shani::available();
        assert_eq!(first, shani::available());
        assert_eq!(
            first,
            std::is_x86_feature_detected!("sha") && std::is_x86_feature_detected!("sse4.1")
        );
    }
}
