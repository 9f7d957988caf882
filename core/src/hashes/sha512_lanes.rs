//! Four independent SHA-512 compressions at once.
//!
//! `H` of the SHA-2 sets with N = 24 and 32 is one SHA-512 block, and a verifier has many
//! independent ones (FORS tree levels, Merkle climbs of several signatures). The kernel is
//! written twice: on x86-64 CPUs with AVX2, one 256-bit register holds a word of all four
//! lanes (chosen at run time); elsewhere four `sha2::compress512` calls (an interleaved
//! safe-Rust version measured no faster: the compiler keeps it scalar).
//!
//! # Safety
//!
//! The only unsafe operation is calling [`compress_avx2`], a `#[target_feature(enable =
//! "avx2")]` function: it is called from exactly one place, [`compress512_x4`], right after
//! `std::is_x86_feature_detected!("avx2")` returned true, which is the whole precondition
//! (running AVX2 code on a CPU that has AVX2). Inside, it uses only register-to-register
//! AVX2 intrinsics, which are safe functions in an AVX2 context: no pointers, loads or
//! stores. Both versions are tested against `sha2::compress512`.

use sha2::digest::generic_array::GenericArray;

/// SHA-512 round constants (FIPS 180-4, 4.2.3), for the AVX2 kernel.
#[cfg(target_arch = "x86_64")]
const K: [u64; 80] = [
    0x428a2f98d728ae22,
    0x7137449123ef65cd,
    0xb5c0fbcfec4d3b2f,
    0xe9b5dba58189dbbc,
    0x3956c25bf348b538,
    0x59f111f1b605d019,
    0x923f82a4af194f9b,
    0xab1c5ed5da6d8118,
    0xd807aa98a3030242,
    0x12835b0145706fbe,
    0x243185be4ee4b28c,
    0x550c7dc3d5ffb4e2,
    0x72be5d74f27b896f,
    0x80deb1fe3b1696b1,
    0x9bdc06a725c71235,
    0xc19bf174cf692694,
    0xe49b69c19ef14ad2,
    0xefbe4786384f25e3,
    0x0fc19dc68b8cd5b5,
    0x240ca1cc77ac9c65,
    0x2de92c6f592b0275,
    0x4a7484aa6ea6e483,
    0x5cb0a9dcbd41fbd4,
    0x76f988da831153b5,
    0x983e5152ee66dfab,
    0xa831c66d2db43210,
    0xb00327c898fb213f,
    0xbf597fc7beef0ee4,
    0xc6e00bf33da88fc2,
    0xd5a79147930aa725,
    0x06ca6351e003826f,
    0x142929670a0e6e70,
    0x27b70a8546d22ffc,
    0x2e1b21385c26c926,
    0x4d2c6dfc5ac42aed,
    0x53380d139d95b3df,
    0x650a73548baf63de,
    0x766a0abb3c77b2a8,
    0x81c2c92e47edaee6,
    0x92722c851482353b,
    0xa2bfe8a14cf10364,
    0xa81a664bbc423001,
    0xc24b8b70d0f89791,
    0xc76c51a30654be30,
    0xd192e819d6ef5218,
    0xd69906245565a910,
    0xf40e35855771202a,
    0x106aa07032bbd1b8,
    0x19a4c116b8d2d0c8,
    0x1e376c085141ab53,
    0x2748774cdf8eeb99,
    0x34b0bcb5e19b48a8,
    0x391c0cb3c5c95a63,
    0x4ed8aa4ae3418acb,
    0x5b9cca4f7763e373,
    0x682e6ff3d6b2b8a3,
    0x748f82ee5defb2fc,
    0x78a5636f43172f60,
    0x84c87814a1f0ab72,
    0x8cc702081a6439ec,
    0x90befffa23631e28,
    0xa4506cebde82bde9,
    0xbef9a3f7b2c67915,
    0xc67178f2e372532b,
    0xca273eceea26619c,
    0xd186b8c721c0c207,
    0xeada7dd6cde0eb1e,
    0xf57d4f7fee6ed178,
    0x06f067aa72176fba,
    0x0a637dc5a2c898a6,
    0x113f9804bef90dae,
    0x1b710b35131c471b,
    0x28db77f523047d84,
    0x32caab7b40c72493,
    0x3c9ebe0a15c9bebc,
    0x431d67c49c100d4c,
    0x4cc5d4becb3e42b6,
    0x597f299cfc657e2a,
    0x5fcb6fab3ad6faec,
    0x6c44198c4a475817,
];

/// The kernel [`compress512_x4`] runs on this CPU: `"avx2"` or `"portable"`.
pub(crate) fn kernel_name() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        return "avx2";
    }
    "portable"
}

/// Compresses `blocks[i]` into `states[i]` for each lane: exactly
/// `sha2::compress512(&mut states[i], &[blocks[i]])`.
#[inline]
pub(crate) fn compress512_x4(states: &mut [[u64; 8]; 4], blocks: &[[u8; 128]; 4]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, the only target feature `compress_avx2` enables
        // (see the module's Safety section).
        unsafe { compress_avx2(states, blocks) };
        return;
    }
    compress_portable(states, blocks);
}

/// The kernel with AVX2: one 256-bit register holds a state or schedule word of all four
/// lanes. Only register-to-register intrinsics (safe inside an AVX2 function); values enter
/// with `_mm256_set_epi64x` and leave with `_mm256_extract_epi64`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn compress_avx2(states: &mut [[u64; 8]; 4], blocks: &[[u8; 128]; 4]) {
    use core::arch::x86_64::{
        __m256i, _mm256_add_epi64, _mm256_and_si256, _mm256_andnot_si256, _mm256_extract_epi64,
        _mm256_or_si256, _mm256_set1_epi64x, _mm256_set_epi64x, _mm256_slli_epi64,
        _mm256_srli_epi64, _mm256_xor_si256,
    };
    macro_rules! rotr {
        ($x:expr, $n:literal) => {
            _mm256_or_si256(
                _mm256_srli_epi64::<$n>($x),
                _mm256_slli_epi64::<{ 64 - $n }>($x),
            )
        };
    }
    macro_rules! xor3 {
        ($a:expr, $b:expr, $c:expr) => {
            _mm256_xor_si256(_mm256_xor_si256($a, $b), $c)
        };
    }
    let word = |l: usize, t: usize| -> i64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&blocks[l][8 * t..8 * t + 8]);
        i64::from_be_bytes(b)
    };
    let mut w: [__m256i; 16] =
        core::array::from_fn(|t| _mm256_set_epi64x(word(3, t), word(2, t), word(1, t), word(0, t)));
    let init: [__m256i; 8] = core::array::from_fn(|i| {
        _mm256_set_epi64x(
            states[3][i] as i64,
            states[2][i] as i64,
            states[1][i] as i64,
            states[0][i] as i64,
        )
    });
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = init;
    macro_rules! round {
        ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $t:expr) => {{
            let t = $t;
            if t >= 16 {
                let i = t & 15;
                let x = w[(t + 1) & 15];
                let s0 = xor3!(rotr!(x, 1), rotr!(x, 8), _mm256_srli_epi64::<7>(x));
                let y = w[(t + 14) & 15];
                let s1 = xor3!(rotr!(y, 19), rotr!(y, 61), _mm256_srli_epi64::<6>(y));
                w[i] = _mm256_add_epi64(
                    _mm256_add_epi64(w[i], s0),
                    _mm256_add_epi64(w[(t + 9) & 15], s1),
                );
            }
            let ch = _mm256_xor_si256(_mm256_and_si256($e, $f), _mm256_andnot_si256($e, $g));
            let big1 = xor3!(rotr!($e, 14), rotr!($e, 18), rotr!($e, 41));
            let k = _mm256_set1_epi64x(K[t] as i64);
            let t1 = _mm256_add_epi64(
                _mm256_add_epi64(_mm256_add_epi64($h, big1), _mm256_add_epi64(ch, k)),
                w[t & 15],
            );
            let big0 = xor3!(rotr!($a, 28), rotr!($a, 34), rotr!($a, 39));
            let maj = _mm256_or_si256(
                _mm256_and_si256($a, $b),
                _mm256_and_si256($c, _mm256_or_si256($a, $b)),
            );
            $d = _mm256_add_epi64($d, t1);
            $h = _mm256_add_epi64(t1, _mm256_add_epi64(big0, maj));
        }};
    }
    for r in 0..10 {
        let t = 8 * r;
        round!(a, b, c, d, e, f, g, h, t);
        round!(h, a, b, c, d, e, f, g, t + 1);
        round!(g, h, a, b, c, d, e, f, t + 2);
        round!(f, g, h, a, b, c, d, e, t + 3);
        round!(e, f, g, h, a, b, c, d, t + 4);
        round!(d, e, f, g, h, a, b, c, t + 5);
        round!(c, d, e, f, g, h, a, b, t + 6);
        round!(b, c, d, e, f, g, h, a, t + 7);
    }
    let out = [a, b, c, d, e, f, g, h];
    for (i, o) in out.iter().enumerate() {
        let lanes = [
            _mm256_extract_epi64::<0>(*o),
            _mm256_extract_epi64::<1>(*o),
            _mm256_extract_epi64::<2>(*o),
            _mm256_extract_epi64::<3>(*o),
        ];
        for (st, v) in states.iter_mut().zip(lanes) {
            st[i] = st[i].wrapping_add(v as u64);
        }
    }
}

/// The portable path: four `sha2::compress512` calls.
fn compress_portable(states: &mut [[u64; 8]; 4], blocks: &[[u8; 128]; 4]) {
    for (st, block) in states.iter_mut().zip(blocks) {
        sha2::compress512(st, core::slice::from_ref(GenericArray::from_slice(block)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_compress512_lane_by_lane() {
        let mut states = [[0u64; 8]; 4];
        let mut blocks = [[0u8; 128]; 4];
        let mut x = 0x0123_4567_89ab_cdefu64;
        for _ in 0..20 {
            for l in 0..4 {
                for v in states[l].iter_mut() {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    *v = x;
                }
                for byte in blocks[l].iter_mut() {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    *byte = (x >> 56) as u8;
                }
            }
            let mut want = states;
            for (st, b) in want.iter_mut().zip(&blocks) {
                sha2::compress512(st, &[GenericArray::clone_from_slice(b)]);
            }
            let mut portable = states;
            compress_portable(&mut portable, &blocks);
            assert_eq!(portable, want);
            compress512_x4(&mut states, &blocks);
            assert_eq!(states, want);
        }
    }
}
