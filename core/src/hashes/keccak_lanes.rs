//! Several independent Keccak-f[1600] permutations at once.
//!
//! A SHAKE tweakable hash in SPHINCS+ is one permutation of a one-block state; chains,
//! tree nodes and signatures are independent of each other, so the verifier permutes
//! [`KECCAK_LANES`] of them together.
//!
//! For now this is the portable loop; SIMD kernels selected at run time replace it.

/// How many states one [`f1600_x4`] call permutes.
pub(crate) const KECCAK_LANES: usize = 4;

/// Applies Keccak-f[1600] to each of the four states: exactly `keccak::f1600(&mut s[i])`
/// for every `i`.
#[inline]
pub(crate) fn f1600_x4(states: &mut [[u64; 25]; KECCAK_LANES]) {
    for s in states.iter_mut() {
        keccak::f1600(s);
    }
}
