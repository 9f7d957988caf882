//! Sixteen independent SHA-256 compressions at once with AVX-512F: the measurement the
//! four-lane SHA-NI kernel (`hashes::lanes`) is weighed against.
//!
//! Three entry points: [`compress_x16`] (sixteen states, sixteen blocks),
//! [`compress_x16_from`] (one broadcast midstate, only the words wanted stored), and
//! [`chain_steps_x16`], which runs whole WOTS+ chains of one-block calls with the blocks
//! kept as message words between the steps: no gather, byte swap or byte copy per step, only
//! the chained value's words merged back under the mask of the busy lanes.
//!
//! One `__m512i` holds the same 32-bit word of sixteen compressions (one lane each): the
//! eight state words, the sixteen-word message schedule, and the rounds' temporaries, 26 of
//! the 32 vector registers. A round is the FIPS 180-4 round with `vprord` for the rotations,
//! `vpternlogd` for the three-way XORs of Σ0/Σ1/σ0/σ1, for `Ch` (immediate `0xCA`) and for
//! `Maj` (`0xE8`), and `vpaddd`. Nothing here is specific to SPHINCS+: it is
//! `sha2::compress256` sixteen times.
//!
//! Measured against the SHA-NI kernel on the same dependent chains (`cargo bench -p
//! dgsp-core --bench sha256`; docs/benchmarks.md, issue 30): on a Sapphire-Rapids-class Xeon
//! 23.2 ns per block per lane against 27.8 for four SHA-NI lanes and 35.4 for one
//! `compress256`. So the SHA-2 `F` hashes run sixteen lanes per call where the CPU has
//! AVX-512F (`sphincs::hash::sha2`), and four or fewer busy lanes on the SHA-NI kernel.
//! [`compress_x16`] falls back to sixteen `sha2::compress256` calls where the CPU has no
//! AVX-512F.
//!
//! # Safety
//!
//! `hashes/mod.rs` allows `unsafe` in this module. It is confined to the x86-64 module `x86`
//! (the kernels [`x86::compress`], [`x86::compress_from`] and [`x86::chain_steps`], their
//! loads and stores) and the kernels' call sites in [`compress_x16`], [`compress_x16_from`]
//! and [`chain_steps_x16`]:
//!
//! * **Target features.** The kernels are `#[target_feature(enable = "avx512f")] fn`s. Each
//!   is called from exactly one place, after [`super::avx512f`]
//!   (`is_x86_feature_detected!("avx512f")`) returned `true`.
//! * **Memory.** The kernels read and write states, message words and step counts only
//!   through `_mm512_loadu_si512` and `_mm512_storeu_si512`, the unaligned forms, each on a
//!   pointer from a reference to a `[u32; 16]` (exactly the 64 bytes accessed: a local, or
//!   one row of [`ChainLanes`]); the states are copied in and out by safe indexing. They
//!   read blocks of bytes only through `_mm512_i32gather_epi32` in `x86::message_word`:
//!   sixteen 4-byte reads at `64 i + 4 j` bytes from the start of `blocks` (a reference to
//!   1 024 bytes), `i, j < 16` (`j` checked there), so every byte read is inside `blocks`;
//!   a gather has no alignment requirement. There is no other pointer use.
//! * **Everything else** is register-only AVX-512F intrinsics on `__m512i`, safe inside the
//!   kernel's `#[target_feature]` context.
//!
//! The kernel is tested lane by lane against `sha2::compress256` (random states and blocks,
//! the FIPS 180-4 "abc" block, lanes equal and distinct), and so is the fallback; the chain
//! kernel against its scalar model [`chain_steps_scalar`] (itself checked byte by byte
//! against `compress256`).

use sha2::compress256;
use sha2::digest::generic_array::GenericArray;

/// How many compressions one [`compress_x16`] call performs.
pub(crate) const LANES_X16: usize = 16;

/// Compresses each `blocks[i]` from the one state `mid` and writes the first `out_words`
/// words of the result to `out[i]` (the rest of `out[i]` is left as it was): exactly
/// `let mut st = *mid; sha2::compress256(&mut st, &[blocks[i]]); out[i][..out_words] =
/// st[..out_words]`. What a tweakable hash from a seeded midstate needs, without sixteen
/// copies of the state in or eight words out.
///
/// # Panics
/// If `out_words > 8`.
pub(crate) fn compress_x16_from(
    mid: &[u32; 8],
    blocks: &[[u8; 64]; LANES_X16],
    out: &mut [[u32; 8]; LANES_X16],
    out_words: usize,
) {
    assert!(out_words <= 8, "a SHA-256 state has eight words");
    #[cfg(target_arch = "x86_64")]
    if super::avx512f() {
        // SAFETY: as in `compress_x16`.
        unsafe { x86::compress_from(mid, blocks, out, out_words) };
        return;
    }
    for (o, b) in out.iter_mut().zip(blocks) {
        let mut st = *mid;
        compress256(&mut st, core::slice::from_ref(GenericArray::from_slice(b)));
        o[..out_words].copy_from_slice(&st[..out_words]);
    }
}

/// Compresses `blocks[i]` into `states[i]` for every lane: exactly
/// `sha2::compress256(&mut states[i], &[blocks[i]])` for each `i`.
pub(crate) fn compress_x16(states: &mut [[u32; 8]; LANES_X16], blocks: &[[u8; 64]; LANES_X16]) {
    #[cfg(target_arch = "x86_64")]
    if super::avx512f() {
        // SAFETY: `avx512f()` checked `avx512f`, the one target feature the kernel is
        // compiled with, on the running CPU (see the module's Safety section).
        unsafe { x86::compress(states, blocks) };
        return;
    }
    for (st, b) in states.iter_mut().zip(blocks) {
        compress256(st, core::slice::from_ref(GenericArray::from_slice(b)));
    }
}

/// Sixteen chains of dependent one-block SHA-256 calls from one midstate, each block kept
/// as its sixteen message words between the steps: the WOTS+ chains of the SPHINCS+ SHA-2
/// `F`, whose block is `ADRSc (22 bytes) || x (N bytes) || 0x80 || zeros || bit length`
/// with the hash address's low bytes at 20..22 (see `sphincs::hash::sha2`). What the
/// chain driver keeps between the calls of [`chain_steps_x16`].
#[derive(Clone, Copy)]
pub(crate) struct ChainLanes {
    /// Word `j` of lane `i`'s block, as SHA-256 reads it (big-endian): `words[j][i]`.
    pub(crate) words: [[u32; LANES_X16]; 16],
    /// Steps left per lane (0: the lane is idle).
    pub(crate) steps: [u32; LANES_X16],
}

/// The block word where the chained value starts: bytes 20..24 hold the hash address's
/// low two bytes and the value's first two.
pub(crate) const CHAIN_WORD: usize = 5;

/// Runs chain steps, every lane with steps left stepping together, while more than `stop`
/// lanes have steps left. One step of lane `i`: its block is compressed from `mid`; the
/// result's first `value_words` words, big-endian, become the block's bytes
/// `22..22 + 4 value_words` (the chained value); the 16-bit big-endian number at bytes
/// `20..22` (the hash address) is incremented, wrapping; `steps[i]` decreases by one. The
/// words between the one that ends the value and the last (`CHAIN_WORD + value_words + 1 ..
/// 15`, the padding's zeros in a SPHINCS+ block) are read as zero whatever they hold: the
/// kernel's message schedule drops what they would add.
/// Exactly [`chain_steps_scalar`], the model it is tested against; on AVX-512F one kernel
/// call with the blocks in registers, no gathers or byte copies between steps.
///
/// # Panics
/// If `value_words` is not 4, 6 or 8 (`N` = 16, 24, 32).
pub(crate) fn chain_steps_x16(
    mid: &[u32; 8],
    lanes: &mut ChainLanes,
    value_words: usize,
    stop: usize,
) {
    assert!(
        matches!(value_words, 4 | 6 | 8),
        "a chained value is four, six or eight words"
    );
    #[cfg(target_arch = "x86_64")]
    if super::avx512f() {
        // SAFETY: as in `compress_x16`.
        unsafe {
            match value_words {
                4 => x86::chain_steps::<4>(mid, lanes, stop),
                6 => x86::chain_steps::<6>(mid, lanes, stop),
                _ => x86::chain_steps::<8>(mid, lanes, stop),
            }
        }
        return;
    }
    chain_steps_scalar(mid, lanes, value_words, stop);
}

/// The scalar model of [`chain_steps_x16`] (and its fallback): one `sha2::compress256` per
/// lane and step.
///
/// # Panics
/// If `value_words` is not 4, 6 or 8.
pub(crate) fn chain_steps_scalar(
    mid: &[u32; 8],
    lanes: &mut ChainLanes,
    value_words: usize,
    stop: usize,
) {
    assert!(matches!(value_words, 4 | 6 | 8));
    while lanes.steps.iter().filter(|s| **s > 0).count() > stop {
        for i in 0..LANES_X16 {
            if lanes.steps[i] == 0 {
                continue;
            }
            let mut block = [0u8; 64];
            for (bytes, w) in block.chunks_exact_mut(4).zip(&lanes.words) {
                bytes.copy_from_slice(&w[i].to_be_bytes());
            }
            // The padding words, read as zero.
            block[4 * (CHAIN_WORD + value_words + 1)..60].fill(0);
            let mut st = *mid;
            compress256(
                &mut st,
                core::slice::from_ref(GenericArray::from_slice(&block)),
            );
            let w = &mut lanes.words;
            let c = CHAIN_WORD;
            w[c][i] = (w[c][i].wrapping_add(1 << 16) & 0xffff_0000) | (st[0] >> 16);
            for j in 1..value_words {
                w[c + j][i] = (st[j - 1] << 16) | (st[j] >> 16);
            }
            let last = c + value_words;
            w[last][i] = (st[value_words - 1] << 16) | (w[last][i] & 0xffff);
            lanes.steps[i] -= 1;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::{
        __m512i, _mm512_add_epi32, _mm512_and_si512, _mm512_andnot_si512, _mm512_cmpgt_epu32_mask,
        _mm512_i32gather_epi32, _mm512_loadu_si512, _mm512_mask_mov_epi32, _mm512_mask_sub_epi32,
        _mm512_or_si512, _mm512_rol_epi32, _mm512_ror_epi32, _mm512_set1_epi32, _mm512_setr_epi32,
        _mm512_setzero_si512, _mm512_slli_epi32, _mm512_srli_epi32, _mm512_storeu_si512,
        _mm512_ternarylogic_epi32,
    };

    use super::{ChainLanes, CHAIN_WORD, LANES_X16};

    use super::super::SHA256_K as K;

    /// `vpternlogd` truth tables: bit `4a + 2b + c` is the result for input bits `a, b, c`.
    const XOR3: i32 = 0x96;
    /// `Ch(e, f, g) = (e & f) ^ (!e & g)`.
    const CH: i32 = 0xca;
    /// `Maj(a, b, c) = (a & b) ^ (a & c) ^ (b & c)`.
    const MAJ: i32 = 0xe8;

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load(words: &[u32; LANES_X16]) -> __m512i {
        // SAFETY: the pointer comes from a reference to exactly the 64 bytes read; the load
        // is the unaligned form (see the module's Safety section).
        unsafe { _mm512_loadu_si512(words.as_ptr().cast()) }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn store_to(words: &mut [u32; LANES_X16], v: __m512i) {
        // SAFETY: as in `load`, for the 64 bytes written through a unique reference.
        unsafe { _mm512_storeu_si512(words.as_mut_ptr().cast(), v) };
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn store(v: __m512i) -> [u32; LANES_X16] {
        let mut words = [0u32; LANES_X16];
        // SAFETY: as in `load`, for the 64 bytes written.
        unsafe { _mm512_storeu_si512(words.as_mut_ptr().cast(), v) };
        words
    }

    /// Word `j` (below 16) of each of the sixteen blocks, as the big-endian `u32` SHA-256
    /// reads: one gather (the blocks are one contiguous 1 KiB array, so lane `i`'s word is at
    /// byte `64 i + 4 j`) and a byte swap by two rotations and one `vpternlogd`.
    ///
    /// # Panics
    /// If `j >= 16` (never: the kernel passes `0..16`).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn message_word(blocks: &[[u8; 64]; LANES_X16], j: usize) -> __m512i {
        assert!(j < 16, "a block has sixteen words");
        // Lane i's word, in 4-byte units from the base: 16 i.
        let index = _mm512_setr_epi32(
            0, 16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240,
        );
        let base = blocks.as_flattened()[4 * j..].as_ptr();
        // SAFETY: `base` is byte `4 j` of the 1 024 bytes of `blocks` (a reference), and lane
        // `i` reads the four bytes at `base + 4 * 16 i`, i.e. bytes `64 i + 4 j ..= 64 i + 4 j + 3`
        // of `blocks`; with `i, j <= 15` the last is byte 1 023. The gather has no alignment
        // requirement (see the module's Safety section).
        let le = unsafe { _mm512_i32gather_epi32::<4>(index, base.cast()) };
        // [m0 m1 m2 m3] -> [m3 m2 m1 m0]: bytes 0 and 2 from the rotation by 8, 1 and 3 from
        // the rotation by 24 (`vpternlogd` 0xCA: mask ? x : y).
        _mm512_ternarylogic_epi32::<CH>(
            _mm512_set1_epi32(0x00ff_00ff),
            _mm512_rol_epi32::<8>(le),
            _mm512_rol_epi32::<24>(le),
        )
    }

    /// The AVX-512F kernel.
    ///
    /// # Safety
    /// The CPU must support `avx512f` (see [`crate::hashes::avx512f`]).
    #[target_feature(enable = "avx512f")]
    pub(super) fn compress(states: &mut [[u32; 8]; LANES_X16], blocks: &[[u8; 64]; LANES_X16]) {
        let init: [__m512i; 8] =
            core::array::from_fn(|k| load(&core::array::from_fn(|i| states[i][k])));
        for (k, v) in rounds(init, |j| message_word(blocks, j))
            .into_iter()
            .enumerate()
        {
            for (st, word) in states.iter_mut().zip(store(v)) {
                st[k] = word;
            }
        }
    }

    /// The AVX-512F kernel from one state shared by all lanes (a midstate), storing only
    /// the first `out_words` (at most 8) words of each result.
    ///
    /// # Safety
    /// The CPU must support `avx512f` (see [`crate::hashes::avx512f`]).
    #[target_feature(enable = "avx512f")]
    pub(super) fn compress_from(
        mid: &[u32; 8],
        blocks: &[[u8; 64]; LANES_X16],
        out: &mut [[u32; 8]; LANES_X16],
        out_words: usize,
    ) {
        let init: [__m512i; 8] = core::array::from_fn(|k| _mm512_set1_epi32(mid[k] as i32));
        let st = rounds(init, |j| message_word(blocks, j));
        for (k, v) in st.into_iter().enumerate().take(out_words) {
            for (st, word) in out.iter_mut().zip(store(v)) {
                st[k] = word;
            }
        }
    }

    /// The AVX-512F kernel of [`super::chain_steps_x16`] for values of `VALUE_WORDS`
    /// words: the blocks' words are loaded as registers when the rounds need them (no
    /// gather, no byte swap; the padding's zeros are constants), the busy lanes' new words
    /// merged under a mask.
    ///
    /// # Safety
    /// The CPU must support `avx512f` (see [`crate::hashes::avx512f`]).
    #[target_feature(enable = "avx512f")]
    pub(super) fn chain_steps<const VALUE_WORDS: usize>(
        mid: &[u32; 8],
        lanes: &mut ChainLanes,
        stop: usize,
    ) {
        let last = CHAIN_WORD + VALUE_WORDS;
        let init: [__m512i; 8] = core::array::from_fn(|k| _mm512_set1_epi32(mid[k] as i32));
        let high = _mm512_set1_epi32(0xffff_0000_u32 as i32);
        let step = _mm512_set1_epi32(1 << 16);
        let mut steps = load(&lanes.steps);
        loop {
            let busy = _mm512_cmpgt_epu32_mask(steps, _mm512_setzero_si512());
            if busy.count_ones() as usize <= stop {
                break;
            }
            // The padding words are zero: known at compile time, so the schedule's terms
            // in them fold away.
            let st = rounds(init, |j| {
                if j > last && j < 15 {
                    _mm512_setzero_si512()
                } else {
                    load(&lanes.words[j])
                }
            });
            let c = CHAIN_WORD;
            // Each rewritten word: the busy lanes' new value, the idle lanes' old one.
            let merge = |row: &mut [u32; LANES_X16], new: __m512i| {
                store_to(row, _mm512_mask_mov_epi32(load(row), busy, new));
            };
            // Plain AND/OR/ANDN below, not `vpternlogd`: written as
            // `_mm512_ternarylogic_epi32::<0xF2>(st << 16, high, w)`, the last word came out
            // as 0xffff0000 in the busy lanes (rustc 1.95, optimised builds), although the
            // intrinsic alone computes it right; `chain_steps_match_the_model` caught it.
            // LLVM merged the masked merge into the ternlog (`vpternlogd w {k}, st << 16,
            // high`), and reordering its operands to do so took the wrong immediate (0xae
            // for 0xdc): llvm/llvm-project#157929, the 231/312 immediate transforms swapped,
            // fixed by llvm/llvm-project#209782 (July 2026), after rustc 1.95's LLVM.
            // (w + 1 << 16) & 0xffff0000 | st[0] >> 16.
            let old = load(&lanes.words[c]);
            merge(
                &mut lanes.words[c],
                _mm512_or_si512(
                    _mm512_and_si512(_mm512_add_epi32(old, step), high),
                    _mm512_srli_epi32::<16>(st[0]),
                ),
            );
            for j in 1..VALUE_WORDS {
                merge(
                    &mut lanes.words[c + j],
                    _mm512_or_si512(
                        _mm512_slli_epi32::<16>(st[j - 1]),
                        _mm512_srli_epi32::<16>(st[j]),
                    ),
                );
            }
            // st << 16 | w & 0xffff.
            let old = load(&lanes.words[last]);
            merge(
                &mut lanes.words[last],
                _mm512_or_si512(
                    _mm512_slli_epi32::<16>(st[VALUE_WORDS - 1]),
                    _mm512_andnot_si512(high, old),
                ),
            );
            steps = _mm512_mask_sub_epi32(steps, busy, steps, _mm512_set1_epi32(1));
        }
        store_to(&mut lanes.steps, steps);
    }

    /// The 64 rounds on the sixteen lanes from `init` (one state word per register) over
    /// the message words `msg(j)` (word `j` of every lane, read when round `j` needs it:
    /// no 1 KiB array of them copied in), and the feed-forward: the new states, one word per
    /// register.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn rounds(init: [__m512i; 8], msg: impl Fn(usize) -> __m512i) -> [__m512i; 8] {
        let mut w = [_mm512_setzero_si512(); 16];
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = init;
        let xor3 = |x, y, z| _mm512_ternarylogic_epi32::<XOR3>(x, y, z);
        for (t, &k) in K.iter().enumerate() {
            if t < 16 {
                w[t] = msg(t);
            } else {
                // w[t] = σ1(w[t-2]) + w[t-7] + σ0(w[t-15]) + w[t-16], kept mod 16.
                let w2 = w[(t - 2) % 16];
                let w15 = w[(t - 15) % 16];
                let s0 = xor3(
                    _mm512_ror_epi32::<7>(w15),
                    _mm512_ror_epi32::<18>(w15),
                    _mm512_srli_epi32::<3>(w15),
                );
                let s1 = xor3(
                    _mm512_ror_epi32::<17>(w2),
                    _mm512_ror_epi32::<19>(w2),
                    _mm512_srli_epi32::<10>(w2),
                );
                w[t % 16] = _mm512_add_epi32(
                    _mm512_add_epi32(w[t % 16], s0),
                    _mm512_add_epi32(w[(t - 7) % 16], s1),
                );
            }
            let big_s1 = xor3(
                _mm512_ror_epi32::<6>(e),
                _mm512_ror_epi32::<11>(e),
                _mm512_ror_epi32::<25>(e),
            );
            let ch = _mm512_ternarylogic_epi32::<CH>(e, f, g);
            let t1 = _mm512_add_epi32(
                _mm512_add_epi32(h, big_s1),
                _mm512_add_epi32(ch, _mm512_add_epi32(_mm512_set1_epi32(k as i32), w[t % 16])),
            );
            let big_s0 = xor3(
                _mm512_ror_epi32::<2>(a),
                _mm512_ror_epi32::<13>(a),
                _mm512_ror_epi32::<22>(a),
            );
            let t2 = _mm512_add_epi32(big_s0, _mm512_ternarylogic_epi32::<MAJ>(a, b, c));
            h = g;
            g = f;
            f = e;
            e = _mm512_add_epi32(d, t1);
            d = c;
            c = b;
            b = a;
            a = _mm512_add_epi32(t1, t2);
        }
        let out = [a, b, c, d, e, f, g, h];
        core::array::from_fn(|k| _mm512_add_epi32(out[k], init[k]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64*: reproducible test data without a dependency.
    struct Rng(u64);
    impl Rng {
        fn next_u32(&mut self) -> u32 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
        }
    }

    fn reference(
        states: &[[u32; 8]; LANES_X16],
        blocks: &[[u8; 64]; LANES_X16],
    ) -> [[u32; 8]; LANES_X16] {
        let mut out = *states;
        for (st, b) in out.iter_mut().zip(blocks) {
            compress256(st, core::slice::from_ref(GenericArray::from_slice(b)));
        }
        out
    }

    #[test]
    fn sixteen_lanes_match_compress256() {
        if !crate::hashes::avx512f() {
            eprintln!("sha256_x16: AVX-512F not available on this CPU, the fallback tested");
        }
        let mut rng = Rng(0x243f_6a88_85a3_08d3);
        for round in 0..200 {
            let mut states: [[u32; 8]; LANES_X16] =
                core::array::from_fn(|_| core::array::from_fn(|_| rng.next_u32()));
            let blocks: [[u8; 64]; LANES_X16] =
                core::array::from_fn(|_| core::array::from_fn(|_| rng.next_u32() as u8));
            let want = reference(&states, &blocks);
            compress_x16(&mut states, &blocks);
            assert_eq!(states, want, "round {round}");
        }
    }

    /// From one shared midstate, every output width, against `compress256`.
    #[test]
    fn from_a_midstate_match_compress256() {
        let mut rng = Rng(11);
        let mid: [u32; 8] = core::array::from_fn(|_| rng.next_u32());
        let blocks: [[u8; 64]; LANES_X16] =
            core::array::from_fn(|_| core::array::from_fn(|_| rng.next_u32() as u8));
        for words in [0usize, 4, 6, 8] {
            let mut out = [[7u32; 8]; LANES_X16];
            compress_x16_from(&mid, &blocks, &mut out, words);
            for (i, (o, b)) in out.iter().zip(&blocks).enumerate() {
                let mut want = mid;
                compress256(
                    &mut want,
                    core::slice::from_ref(GenericArray::from_slice(b)),
                );
                assert_eq!(o[..words], want[..words], "lane {i}, {words} words");
                assert!(
                    o[words..].iter().all(|w| *w == 7),
                    "lane {i}: past {words} untouched"
                );
            }
        }
    }

    /// The chain kernel against its scalar model: random blocks, steps and value widths,
    /// stopping at every threshold the driver uses (and at none).
    #[test]
    fn chain_steps_match_the_model() {
        if !crate::hashes::avx512f() {
            eprintln!(
                "sha256_x16: AVX-512F not available on this CPU, the chain kernel not run \
                 (its fallback is the model itself)"
            );
        }
        let mut rng = Rng(0x5ec0_2d1e);
        let mid: [u32; 8] = core::array::from_fn(|_| rng.next_u32());
        for round in 0..60 {
            let value_words = [4usize, 6, 8][round % 3];
            let stop = [0usize, 12, 15, 16][(round / 3) % 4];
            let mut lanes = ChainLanes {
                words: core::array::from_fn(|_| core::array::from_fn(|_| rng.next_u32())),
                steps: core::array::from_fn(|_| rng.next_u32() % 16),
            };
            let mut want = lanes;
            chain_steps_scalar(&mid, &mut want, value_words, stop);
            chain_steps_x16(&mid, &mut lanes, value_words, stop);
            assert_eq!(lanes.words, want.words, "round {round}");
            assert_eq!(lanes.steps, want.steps, "round {round}");
            let busy = want.steps.iter().filter(|s| **s > 0).count();
            assert!(
                busy <= stop,
                "round {round}: stopped with {busy} busy lanes"
            );
        }
    }

    /// One step of the model, in bytes: the block compressed from the midstate, its first
    /// words written big-endian at byte 22, the 16-bit number at bytes 20..22 incremented.
    #[test]
    fn a_chain_step_in_bytes() {
        let mut rng = Rng(5);
        let mid: [u32; 8] = core::array::from_fn(|_| rng.next_u32());
        for value_words in [4usize, 6, 8] {
            let mut block: [u8; 64] = core::array::from_fn(|_| rng.next_u32() as u8);
            block[21] = 0xff; // the increment carries into byte 20
            block[4 * (CHAIN_WORD + value_words + 1)..60].fill(0); // the padding's zeros
            let mut lanes = ChainLanes {
                words: [[0; LANES_X16]; 16],
                steps: [0; LANES_X16],
            };
            for (j, w) in lanes.words.iter_mut().enumerate() {
                w[3] = u32::from_be_bytes(block[4 * j..4 * j + 4].try_into().unwrap());
            }
            lanes.steps[3] = 1;
            chain_steps_x16(&mid, &mut lanes, value_words, 0);
            let mut st = mid;
            compress256(
                &mut st,
                core::slice::from_ref(GenericArray::from_slice(&block)),
            );
            let mut want = block;
            let adr = u16::from_be_bytes([block[20], block[21]]).wrapping_add(1);
            want[20..22].copy_from_slice(&adr.to_be_bytes());
            for (k, w) in st.iter().take(value_words).enumerate() {
                want[22 + 4 * k..26 + 4 * k].copy_from_slice(&w.to_be_bytes());
            }
            let got: Vec<u8> = lanes
                .words
                .iter()
                .flat_map(|w| w[3].to_be_bytes())
                .collect();
            assert_eq!(got, want, "{value_words} words");
            assert_eq!(lanes.steps, [0; LANES_X16]);
            assert!(
                lanes.words.iter().all(|w| w[0] == 0),
                "idle lanes untouched"
            );
        }
    }

    #[test]
    fn the_abc_block_and_equal_lanes() {
        // FIPS 180-4's "abc", padded to one block, from the initial hash value.
        const IV: [u32; 8] = [
            0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
            0x5be0cd19,
        ];
        let mut block = [0u8; 64];
        block[..3].copy_from_slice(b"abc");
        block[3] = 0x80;
        block[63] = 24;
        let mut states = [IV; LANES_X16];
        compress_x16(&mut states, &[block; LANES_X16]);
        let digest: Vec<u8> = states[9].iter().flat_map(|w| w.to_be_bytes()).collect();
        assert_eq!(
            hex::encode(digest),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(states.iter().all(|s| *s == states[0]));
    }
}
