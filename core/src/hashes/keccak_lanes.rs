//! Several independent Keccak-f\[1600\] permutations at once.
//!
//! A SHAKE tweakable hash in SPHINCS+ is one permutation of a one-block state; chains,
//! tree nodes and signatures are independent of each other, so the verifier permutes
//! [`KECCAK_LANES`] of them together. [`f1600_x4`] picks, once per process, the fastest
//! kernel the running CPU supports ([`Kernel`]):
//!
//! * **AVX-512VL** (`avx512f` + `avx512vl`): the four states in 25 `__m256i` registers (one
//!   64-bit element per state), theta's five-way XORs as two `vpternlogq`, chi as one
//!   `vpternlogq` per lane, rho as `vprolq`; the 32 vector registers of EVEX hold the state
//!   and the temporaries.
//! * **AVX2**: the same layout and round code; rotations are a shift pair and an OR, except
//!   the rotations by 8 and 56, which are one `vpshufb`.
//! * **Portable** (every other CPU and architecture, wasm included): a loop over
//!   `keccak::f1600`.
//!
//! All three are expanded from one round macro (`keccak_rounds!`) with different
//! per-operation macros, so the round structure (theta, rho, pi, chi, iota, 24 rounds) is
//! written once; the tests run that macro with scalar `u64` operations, with the SIMD
//! operations, and with a bit-exact scalar model of `vpternlogq` (checking the two
//! truth-table immediates the AVX-512 kernel uses), each against `keccak::f1600`.
//!
//! Measured on the development machine (2-core AMD EPYC Zen 4 VM, release build,
//! `cargo bench -p dgsp-core --bench keccak`; best of four runs: the VM was shared with
//! other builds and single runs came out up to ~30% slower):
//!
//! | kernel                                   | ns per permutation per lane |
//! |------------------------------------------|-----------------------------|
//! | `keccak::f1600`, one state               | 388                         |
//! | [`Kernel::Portable`] (the loop)          | 389                         |
//! | [`Kernel::Avx2`]                         | 122.5 (3.2x)                |
//! | [`Kernel::Avx512`]                       | not measured: no AVX-512    |
//!
//! That VM's CPU exposed AVX2 but **no AVX-512**, so the AVX-512VL kernel was compiled (its
//! disassembly checked: 35 `vpternlogq` and 29 `vprolq` per round, all 32 vector registers
//! used) and its operations tested through the scalar `vpternlogq` model only. On
//! 2026-11-25 a later development VM (2 Zen 4 cores, `avx512f`/`avx512vl` in
//! `/proc/cpuinfo`) ran it on hardware: the module's tests passed with it as the best
//! kernel (`cargo test -p dgsp-core --lib keccak`), and the same bench, one run, gave
//! `keccak::f1600` 366, the loop 382, [`Kernel::Avx2`] 110 (3.3x) and [`Kernel::Avx512`]
//! **65 ns (5.6x; 1.69x the AVX2 kernel)**. An interleaved safe-Rust
//! portable variant (`[u64; 4]` per lane, left to the compiler's SSE2 vectorisation) took
//! 530 ns per lane, slower than the loop, so the portable kernel stays the loop.
//!
//! **Eight states** ([`f1600_x8`], AVX-512F): the same round macro on `__m512i`, one 64-bit
//! element per state, `vpternlogq` and `vprolq` at full width. On 2026-11-27, on a 2-core
//! Intel Xeon VM (Sapphire Rapids class: AVX-512 with FP16), one run of the same bench gave
//! `keccak::f1600` 258 ns, [`Kernel::Avx2`] 113, [`Kernel::Avx512`] 57.4 and the eight-state
//! kernel **44.3 ns per permutation per lane (1.30x the four-state AVX-512VL kernel)**. The
//! SHAKE hashes use it where the CPU has AVX-512F (`sphincs::hash::shake`), gathering four
//! or fewer busy lanes into one four-state call instead. On Zen 4, which splits 512-bit
//! operations into two 256-bit halves, it has not been measured.
//!
//! # Safety
//!
//! `hashes/mod.rs` allows `unsafe` in this module. The unsafe code is confined to the
//! x86-64 module `x86` (the kernels [`x86::avx2`], [`x86::avx512`] and [`x86::avx512_x8`]
//! and their shared-template forms `x86::avx2_shared`, `x86::avx512_shared` and
//! `x86::avx512_x8_shared`, with one store in the four-state kernels' shared `scatter` and
//! one in the eight-state kernels' `scatter_x8`) and the kernels' call sites in
//! [`f1600_x4_with`], [`f1600_x4_shared_with`], [`f1600_x8`] and [`f1600_x8_shared`]. The
//! shared-template forms are called exactly like their plain ones (the same target
//! features, checked the same way) after their lane range was checked; they read their
//! inputs with `set`/`set1` intrinsics (register operations, no pointer):
//!
//! * **Target features.** `x86::avx2` is a `#[target_feature(enable = "avx2")] fn`,
//!   `x86::avx512` a `#[target_feature(enable = "avx2,avx512f,avx512vl")] fn`; calling them
//!   on a CPU without those features would be undefined behaviour, which is why the calls
//!   are `unsafe`. They are called from exactly one place, [`f1600_x4_with`], in the match
//!   arm of their [`Kernel`], and only after [`Kernel::is_available`] returned `true` for
//!   that kernel (it panics otherwise). `is_available` answers from
//!   `std::is_x86_feature_detected!` for exactly the features the kernel is compiled with.
//!   [`f1600_x4`] passes [`Kernel::best`], which is the best *available* kernel (detected
//!   once, cached in an atomic; a stale "unknown" only re-runs detection).
//!   `x86::avx512_x8` is a `#[target_feature(enable = "avx512f")] fn`, called only from
//!   [`f1600_x8`] after [`super::avx512f`] (`is_x86_feature_detected!("avx512f")`) returned
//!   `true`; otherwise [`f1600_x8`] makes two safe [`f1600_x4`] calls.
//! * **Memory.** The kernels read the states with `_mm256_set_epi64x` (register
//!   operations, no pointer) and write them back with `_mm256_storeu_si256`, the unaligned
//!   form, into a local `[u64; 4]`: the pointer comes from a mutable reference to exactly
//!   32 bytes, so the store stays inside that array and needs no alignment. The values
//!   are then copied into the states by safe indexing. The eight-state kernel does the
//!   same with `_mm512_set_epi64` and `_mm512_storeu_si512` into a local `[u64; 8]` (64
//!   bytes, exactly what the store writes). There is no other pointer use.
//! * **Everything else** in the kernels is register-only AVX2 / AVX-512 intrinsics on
//!   `__m256i` values, which have no preconditions beyond the target features above (they
//!   are safe functions inside the kernels' `#[target_feature]` context).
//!
//! The kernels are tested against `keccak::f1600` (random states, the zero state, equal
//! and distinct lanes; for eight states also zero lanes among random ones and single bits)
//! on any CPU that has their features; the tests of a kernel the CPU lacks are skipped
//! (and say so on stderr). The scalar model of the round macro with `vpternlogq` modelled
//! bit by bit covers the eight-state kernel's operations too (the same immediates).

use core::sync::atomic::{AtomicU8, Ordering};

/// How many states one [`f1600_x4`] call permutes.
pub(crate) const KECCAK_LANES: usize = 4;

/// Applies Keccak-f\[1600\] to each of the four states: exactly `keccak::f1600(&mut s[i])`
/// for every `i`.
#[inline]
pub(crate) fn f1600_x4(states: &mut [[u64; 25]; KECCAK_LANES]) {
    f1600_x4_with(Kernel::best(), states);
}

/// One way of computing [`f1600_x4`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// A loop over `keccak::f1600`; every target.
    Portable,
    /// The four states in AVX2 registers; x86-64 with `avx2`.
    Avx2,
    /// The four states in 256-bit registers with AVX-512VL instructions; x86-64 with
    /// `avx2`, `avx512f` and `avx512vl`.
    Avx512,
}

/// The detected [`Kernel::best`]: 0 = not yet detected, else `1 + kernel as u8`.
static BEST: AtomicU8 = AtomicU8::new(0);

impl Kernel {
    /// Every kernel, slowest first.
    pub(crate) const ALL: [Kernel; 3] = [Kernel::Portable, Kernel::Avx2, Kernel::Avx512];

    /// The kernel's name in the benchmarks: `portable`, `avx2` or `avx512`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kernel::Portable => "portable",
            Kernel::Avx2 => "avx2",
            Kernel::Avx512 => "avx512",
        }
    }

    /// The kernel called `name` (see [`Kernel::name`]).
    pub(crate) fn from_name(name: &str) -> Option<Kernel> {
        Kernel::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the running CPU can execute this kernel.
    pub(crate) fn is_available(self) -> bool {
        match self {
            Kernel::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => std::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => {
                std::is_x86_feature_detected!("avx2")
                    && std::is_x86_feature_detected!("avx512f")
                    && std::is_x86_feature_detected!("avx512vl")
            }
            #[cfg(not(target_arch = "x86_64"))]
            Kernel::Avx2 | Kernel::Avx512 => false,
        }
    }

    /// The fastest kernel the running CPU can execute (detected once, then cached).
    #[inline]
    pub(crate) fn best() -> Kernel {
        match BEST.load(Ordering::Relaxed) {
            1 => Kernel::Portable,
            2 => Kernel::Avx2,
            3 => Kernel::Avx512,
            _ => Kernel::detect(),
        }
    }

    #[cold]
    fn detect() -> Kernel {
        let best = Kernel::ALL
            .into_iter()
            .rev()
            .find(|k| k.is_available())
            .unwrap_or(Kernel::Portable);
        BEST.store(1 + best as u8, Ordering::Relaxed);
        best
    }
}

/// [`f1600_x4`] with a given kernel (for the tests and the benchmarks).
///
/// # Panics
/// If the running CPU cannot execute `kernel` ([`Kernel::is_available`]).
#[inline]
pub(crate) fn f1600_x4_with(kernel: Kernel, states: &mut [[u64; 25]; KECCAK_LANES]) {
    match kernel {
        Kernel::Portable => portable(states),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => {
            assert!(kernel.is_available(), "the CPU lacks AVX2");
            // SAFETY: `is_available` checked every target feature `x86::avx2` is compiled
            // with on the running CPU (see the module's Safety section).
            unsafe { x86::avx2(states) }
        }
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => {
            assert!(kernel.is_available(), "the CPU lacks AVX-512F/VL");
            // SAFETY: as above, for `x86::avx512`'s target features.
            unsafe { x86::avx512(states) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        Kernel::Avx2 | Kernel::Avx512 => panic!("{kernel:?} needs an x86-64 CPU"),
    }
}

/// How many states one [`f1600_x8`] call permutes.
pub(crate) const KECCAK_LANES_X8: usize = 8;

/// Applies Keccak-f\[1600\] to each of eight states: exactly `keccak::f1600(&mut s[i])` for
/// every `i`. With AVX-512F, the eight states in 25 `__m512i` registers (the AVX-512VL
/// kernel's operations on twice the width); elsewhere two [`f1600_x4`] calls.
#[inline]
pub(crate) fn f1600_x8(states: &mut [[u64; 25]; KECCAK_LANES_X8]) {
    #[cfg(target_arch = "x86_64")]
    if super::avx512f() {
        // SAFETY: `avx512f()` checked `avx512f`, the one target feature `x86::avx512_x8` is
        // compiled with, on the running CPU (see the module's Safety section).
        unsafe { x86::avx512_x8(states) };
        return;
    }
    for four in states.as_chunks_mut::<KECCAK_LANES>().0 {
        f1600_x4(four);
    }
}

/// [`f1600_x8_shared`] for four states, with [`Kernel::best`]: the shared lanes broadcast,
/// only the first four lanes stored (AVX2 and AVX-512VL); one `keccak::f1600` per built
/// state elsewhere. `out[i]` is `f1600(state_i)[..4]`.
///
/// # Panics
/// As [`f1600_x8_shared`].
#[inline]
pub(crate) fn f1600_x4_shared(
    template: &[u64; 25],
    first: usize,
    nvar: usize,
    var: &[[u64; SHARED_VAR_LANES]; KECCAK_LANES],
    out: &mut [[u64; SHARED_OUT_LANES]; KECCAK_LANES],
) {
    assert!(
        nvar <= SHARED_VAR_LANES && first + nvar <= 25,
        "f1600_x4_shared: lanes {first}..{} of 25, at most {SHARED_VAR_LANES} varying",
        first + nvar
    );
    f1600_x4_shared_with(Kernel::best(), template, first, nvar, var, out);
}

/// [`f1600_x4_shared`] with a given kernel (for the tests).
///
/// # Panics
/// As [`f1600_x4_shared`], and if the running CPU cannot execute `kernel`.
#[inline]
pub(crate) fn f1600_x4_shared_with(
    kernel: Kernel,
    template: &[u64; 25],
    first: usize,
    nvar: usize,
    var: &[[u64; SHARED_VAR_LANES]; KECCAK_LANES],
    out: &mut [[u64; SHARED_OUT_LANES]; KECCAK_LANES],
) {
    assert!(
        nvar <= SHARED_VAR_LANES && first + nvar <= 25,
        "f1600_x4_shared: lanes {first}..{} of 25, at most {SHARED_VAR_LANES} varying",
        first + nvar
    );
    assert!(kernel.is_available(), "the CPU cannot run {kernel:?}");
    match kernel {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `is_available` checked every target feature `x86::avx2_shared` is
        // compiled with on the running CPU (see the module's Safety section); the lane
        // range was checked above.
        Kernel::Avx2 => unsafe { x86::avx2_shared(template, first, nvar, var, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for `x86::avx512_shared`.
        Kernel::Avx512 => unsafe { x86::avx512_shared(template, first, nvar, var, out) },
        _ => {
            for (o, v) in out.iter_mut().zip(var) {
                let mut st = *template;
                st[first..first + nvar].copy_from_slice(&v[..nvar]);
                keccak::f1600(&mut st);
                o.copy_from_slice(&st[..SHARED_OUT_LANES]);
            }
        }
    }
}

/// Lanes of a one-block input that may differ between the states of one
/// [`f1600_x8_shared`] call, at most.
pub(crate) const SHARED_VAR_LANES: usize = 12;

/// Lanes of each output of [`f1600_x8_shared`].
pub(crate) const SHARED_OUT_LANES: usize = 4;

/// The first four lanes of Keccak-f\[1600\] of each of eight states that equal `template`
/// except in lanes `first..first + nvar`, which are `var[i][..nvar]`: `out[i]` is
/// `f1600(state_i)[..4]`, where `state_i` is `template` with `var[i][..nvar]` at `first`.
///
/// What a one-block SPHINCS+ SHAKE hash needs (its `PK.seed` and padding lanes are the same
/// in every call, its address and input lanes differ, its output is at most four lanes),
/// without building or storing whole states: with AVX-512F the shared lanes are broadcast
/// into their registers and only the first four lanes are stored; elsewhere the states
/// are built and two [`f1600_x4`] calls made.
///
/// # Panics
/// If `nvar > SHARED_VAR_LANES` or `first + nvar > 25` (callers pass constants of their
/// parameter set).
#[inline]
pub(crate) fn f1600_x8_shared(
    template: &[u64; 25],
    first: usize,
    nvar: usize,
    var: &[[u64; SHARED_VAR_LANES]; KECCAK_LANES_X8],
    out: &mut [[u64; SHARED_OUT_LANES]; KECCAK_LANES_X8],
) {
    assert!(
        nvar <= SHARED_VAR_LANES && first + nvar <= 25,
        "f1600_x8_shared: lanes {first}..{} of 25, at most {SHARED_VAR_LANES} varying",
        first + nvar
    );
    #[cfg(target_arch = "x86_64")]
    if super::avx512f() {
        // SAFETY: `avx512f()` checked `avx512f`, the one target feature
        // `x86::avx512_x8_shared` is compiled with, on the running CPU (see the module's
        // Safety section); the lane range was checked above.
        unsafe { x86::avx512_x8_shared(template, first, nvar, var, out) };
        return;
    }
    shared_model(template, first, nvar, var, out);
}

/// [`f1600_x8_shared`] by whole states and [`f1600_x8`]: its fallback, and its tests' model.
fn shared_model(
    template: &[u64; 25],
    first: usize,
    nvar: usize,
    var: &[[u64; SHARED_VAR_LANES]; KECCAK_LANES_X8],
    out: &mut [[u64; SHARED_OUT_LANES]; KECCAK_LANES_X8],
) {
    let mut states = [*template; KECCAK_LANES_X8];
    for (st, v) in states.iter_mut().zip(var) {
        st[first..first + nvar].copy_from_slice(&v[..nvar]);
    }
    for four in states.as_chunks_mut::<KECCAK_LANES>().0 {
        f1600_x4(four);
    }
    for (o, st) in out.iter_mut().zip(&states) {
        o.copy_from_slice(&st[..SHARED_OUT_LANES]);
    }
}

/// The portable kernel: one `keccak::f1600` per state.
#[inline]
fn portable(states: &mut [[u64; 25]; KECCAK_LANES]) {
    for s in states.iter_mut() {
        keccak::f1600(s);
    }
}

/// The 24 round constants of Keccak-f\[1600\] (iota).
#[cfg(any(test, target_arch = "x86_64"))]
const RC: [u64; 24] = [
    0x0000_0000_0000_0001,
    0x0000_0000_0000_8082,
    0x8000_0000_0000_808a,
    0x8000_0000_8000_8000,
    0x0000_0000_0000_808b,
    0x0000_0000_8000_0001,
    0x8000_0000_8000_8081,
    0x8000_0000_0000_8009,
    0x0000_0000_0000_008a,
    0x0000_0000_0000_0088,
    0x0000_0000_8000_8009,
    0x0000_0000_8000_000a,
    0x0000_0000_8000_808b,
    0x8000_0000_0000_008b,
    0x8000_0000_0000_8089,
    0x8000_0000_0000_8003,
    0x8000_0000_0000_8002,
    0x8000_0000_0000_0080,
    0x0000_0000_0000_800a,
    0x8000_0000_8000_000a,
    0x8000_0000_8000_8081,
    0x8000_0000_0000_8080,
    0x0000_0000_8000_0001,
    0x8000_0000_8000_8008,
];

/// The 24 rounds of Keccak-f\[1600\] on `$a`, a `[T; 25]` indexed `x + 5 * y`, where `T`
/// is whatever the operation macros work on (a `u64`, or a vector of one lane per state):
///
/// * `$xor!(a, b)` = `a ^ b`, `$xor5!(a, b, c, d, e)` = `a ^ b ^ c ^ d ^ e`;
/// * `$rol!(a, n)` = `a` rotated left by the literal `n` (1 to 63);
/// * `$chi!(a, b, c)` = `a ^ (!b & c)`;
/// * `$rc!(rc)` = the `u64` round constant `rc` as a `T`.
///
/// One round is theta (column parities `c`, their mix `d`), rho and pi together (`b` is
/// the lane moved to `(y, 2x + 3y)` and rotated by its offset), chi and iota. The rotation
/// offsets and the pi positions are spelled out (generated from the specification's
/// recurrences), so every index is a constant and the compiler keeps the state in
/// registers (as far as they go: AVX2's 16 force some spills, AVX-512's 32 far fewer).
#[cfg(any(test, target_arch = "x86_64"))]
macro_rules! keccak_rounds {
    ($a:ident, xor: $xor:ident, xor5: $xor5:ident, rol: $rol:ident, chi: $chi:ident, rc: $rc:ident) => {
        for &rc in RC.iter() {
            let c0 = $xor5!($a[0], $a[5], $a[10], $a[15], $a[20]);
            let c1 = $xor5!($a[1], $a[6], $a[11], $a[16], $a[21]);
            let c2 = $xor5!($a[2], $a[7], $a[12], $a[17], $a[22]);
            let c3 = $xor5!($a[3], $a[8], $a[13], $a[18], $a[23]);
            let c4 = $xor5!($a[4], $a[9], $a[14], $a[19], $a[24]);
            let d0 = $xor!(c4, $rol!(c1, 1));
            let d1 = $xor!(c0, $rol!(c2, 1));
            let d2 = $xor!(c1, $rol!(c3, 1));
            let d3 = $xor!(c2, $rol!(c4, 1));
            let d4 = $xor!(c3, $rol!(c0, 1));
            let b0 = $xor!($a[0], d0);
            let b1 = $rol!($xor!($a[6], d1), 44);
            let b2 = $rol!($xor!($a[12], d2), 43);
            let b3 = $rol!($xor!($a[18], d3), 21);
            let b4 = $rol!($xor!($a[24], d4), 14);
            let b5 = $rol!($xor!($a[3], d3), 28);
            let b6 = $rol!($xor!($a[9], d4), 20);
            let b7 = $rol!($xor!($a[10], d0), 3);
            let b8 = $rol!($xor!($a[16], d1), 45);
            let b9 = $rol!($xor!($a[22], d2), 61);
            let b10 = $rol!($xor!($a[1], d1), 1);
            let b11 = $rol!($xor!($a[7], d2), 6);
            let b12 = $rol!($xor!($a[13], d3), 25);
            let b13 = $rol!($xor!($a[19], d4), 8);
            let b14 = $rol!($xor!($a[20], d0), 18);
            let b15 = $rol!($xor!($a[4], d4), 27);
            let b16 = $rol!($xor!($a[5], d0), 36);
            let b17 = $rol!($xor!($a[11], d1), 10);
            let b18 = $rol!($xor!($a[17], d2), 15);
            let b19 = $rol!($xor!($a[23], d3), 56);
            let b20 = $rol!($xor!($a[2], d2), 62);
            let b21 = $rol!($xor!($a[8], d3), 55);
            let b22 = $rol!($xor!($a[14], d4), 39);
            let b23 = $rol!($xor!($a[15], d0), 41);
            let b24 = $rol!($xor!($a[21], d1), 2);
            $a[0] = $xor!($chi!(b0, b1, b2), $rc!(rc));
            $a[1] = $chi!(b1, b2, b3);
            $a[2] = $chi!(b2, b3, b4);
            $a[3] = $chi!(b3, b4, b0);
            $a[4] = $chi!(b4, b0, b1);
            $a[5] = $chi!(b5, b6, b7);
            $a[6] = $chi!(b6, b7, b8);
            $a[7] = $chi!(b7, b8, b9);
            $a[8] = $chi!(b8, b9, b5);
            $a[9] = $chi!(b9, b5, b6);
            $a[10] = $chi!(b10, b11, b12);
            $a[11] = $chi!(b11, b12, b13);
            $a[12] = $chi!(b12, b13, b14);
            $a[13] = $chi!(b13, b14, b10);
            $a[14] = $chi!(b14, b10, b11);
            $a[15] = $chi!(b15, b16, b17);
            $a[16] = $chi!(b16, b17, b18);
            $a[17] = $chi!(b17, b18, b19);
            $a[18] = $chi!(b18, b19, b15);
            $a[19] = $chi!(b19, b15, b16);
            $a[20] = $chi!(b20, b21, b22);
            $a[21] = $chi!(b21, b22, b23);
            $a[22] = $chi!(b22, b23, b24);
            $a[23] = $chi!(b23, b24, b20);
            $a[24] = $chi!(b24, b20, b21);
        }
    };
}

/// Scalar operations for `keccak_rounds!` on `u64` (one state): the tests check the
/// round structure with them.
#[cfg(test)]
mod scalar {
    macro_rules! xor {
        ($x:expr, $y:expr) => {
            $x ^ $y
        };
    }
    macro_rules! xor5 {
        ($a:expr, $b:expr, $c:expr, $d:expr, $e:expr) => {
            $a ^ $b ^ $c ^ $d ^ $e
        };
    }
    macro_rules! rol {
        ($x:expr, $n:literal) => {
            ($x).rotate_left($n)
        };
    }
    macro_rules! chi {
        ($a:expr, $b:expr, $c:expr) => {
            $a ^ (!$b & $c)
        };
    }
    macro_rules! rc {
        ($rc:expr) => {
            $rc
        };
    }

    use super::RC;

    /// Keccak-f\[1600\] from `keccak_rounds!` with scalar operations.
    pub(super) fn f1600(a: &mut [u64; 25]) {
        keccak_rounds!(a, xor: xor, xor5: xor5, rol: rol, chi: chi, rc: rc);
    }
}

/// The `vpternlogq` truth tables the AVX-512 kernel uses: bit `4a + 2b + c` of the
/// immediate is the result for input bits `a`, `b`, `c`.
#[cfg(any(test, target_arch = "x86_64"))]
mod ternlog {
    /// `a ^ b ^ c`.
    pub(super) const XOR3: i32 = 0x96;
    /// `a ^ (!b & c)`: Keccak's chi.
    pub(super) const CHI: i32 = 0xd2;
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::{
        __m256i, __m512i, _mm256_andnot_si256, _mm256_or_si256, _mm256_rol_epi64,
        _mm256_set1_epi64x, _mm256_set_epi64x, _mm256_shuffle_epi8, _mm256_slli_epi64,
        _mm256_srli_epi64, _mm256_storeu_si256, _mm256_ternarylogic_epi64, _mm256_xor_si256,
        _mm512_rol_epi64, _mm512_set1_epi64, _mm512_set_epi64, _mm512_storeu_si512,
        _mm512_ternarylogic_epi64, _mm512_xor_si512,
    };

    use super::ternlog::{CHI, XOR3};
    use super::{KECCAK_LANES, KECCAK_LANES_X8, RC, SHARED_OUT_LANES, SHARED_VAR_LANES};

    /// Lane `j` of each state, as one vector (element `i` from state `i`).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn gather(states: &[[u64; 25]; KECCAK_LANES]) -> [__m256i; 25] {
        core::array::from_fn(|j| {
            // The arguments of `set_epi64x` go from the highest element to the lowest.
            _mm256_set_epi64x(
                states[3][j] as i64,
                states[2][j] as i64,
                states[1][j] as i64,
                states[0][j] as i64,
            )
        })
    }

    /// The inverse of [`gather`] for the first `N` lanes of each state (all 25, or the four
    /// a shared-template call returns).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn scatter<const N: usize>(a: &[__m256i; 25], states: &mut [[u64; N]; KECCAK_LANES]) {
        for (j, v) in a.iter().take(N).enumerate() {
            let mut lane = [0u64; 4];
            // SAFETY: the pointer comes from `&mut lane`, exactly the 32 bytes written; the
            // store is the unaligned form (see the module's Safety section).
            unsafe { _mm256_storeu_si256(lane.as_mut_ptr().cast::<__m256i>(), *v) };
            for (s, x) in states.iter_mut().zip(lane) {
                s[j] = x;
            }
        }
    }

    macro_rules! xor {
        ($x:expr, $y:expr) => {
            _mm256_xor_si256($x, $y)
        };
    }
    macro_rules! rc {
        ($rc:expr) => {
            _mm256_set1_epi64x($rc as i64)
        };
    }

    // AVX2 operations.
    macro_rules! xor5_avx2 {
        ($a:expr, $b:expr, $c:expr, $d:expr, $e:expr) => {
            xor!(xor!(xor!($a, $b), xor!($c, $d)), $e)
        };
    }
    macro_rules! rol_avx2 {
        // Byte rotations: one shuffle instead of two shifts and an OR. Byte `k` of each
        // 64-bit element takes byte `k - 1` (left by 8) or `k + 1` (left by 56), mod 8.
        ($x:expr, 8) => {
            _mm256_shuffle_epi8(
                $x,
                _mm256_set_epi64x(
                    0x0e0d_0c0b_0a09_080f,
                    0x0605_0403_0201_0007,
                    0x0e0d_0c0b_0a09_080f,
                    0x0605_0403_0201_0007,
                ),
            )
        };
        ($x:expr, 56) => {
            _mm256_shuffle_epi8(
                $x,
                _mm256_set_epi64x(
                    0x080f_0e0d_0c0b_0a09,
                    0x0007_0605_0403_0201,
                    0x080f_0e0d_0c0b_0a09,
                    0x0007_0605_0403_0201,
                ),
            )
        };
        ($x:expr, $n:literal) => {{
            let x = $x;
            _mm256_or_si256(
                _mm256_slli_epi64::<$n>(x),
                _mm256_srli_epi64::<{ 64 - $n }>(x),
            )
        }};
    }
    macro_rules! chi_avx2 {
        ($a:expr, $b:expr, $c:expr) => {
            xor!($a, _mm256_andnot_si256($b, $c))
        };
    }

    /// The AVX2 kernel.
    ///
    /// # Safety
    /// The CPU must support `avx2` (see [`super::Kernel::is_available`]).
    #[target_feature(enable = "avx2")]
    pub(super) fn avx2(states: &mut [[u64; 25]; KECCAK_LANES]) {
        let mut a = gather(states);
        keccak_rounds!(a, xor: xor, xor5: xor5_avx2, rol: rol_avx2, chi: chi_avx2, rc: rc);
        scatter(&a, states);
    }

    /// [`gather`] for states that are `template` but for `var[i][..nvar]` at lane `first`:
    /// the shared lanes broadcast.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn gather_shared(
        template: &[u64; 25],
        first: usize,
        nvar: usize,
        var: &[[u64; SHARED_VAR_LANES]; KECCAK_LANES],
    ) -> [__m256i; 25] {
        core::array::from_fn(|j| {
            if (first..first + nvar).contains(&j) {
                let k = j - first;
                _mm256_set_epi64x(
                    var[3][k] as i64,
                    var[2][k] as i64,
                    var[1][k] as i64,
                    var[0][k] as i64,
                )
            } else {
                _mm256_set1_epi64x(template[j] as i64)
            }
        })
    }

    /// The AVX2 kernel on shared-template states ([`super::f1600_x4_shared`]).
    ///
    /// # Safety
    /// The CPU must support AVX2 (see [`super::Kernel::is_available`]).
    #[target_feature(enable = "avx2")]
    pub(super) fn avx2_shared(
        template: &[u64; 25],
        first: usize,
        nvar: usize,
        var: &[[u64; SHARED_VAR_LANES]; KECCAK_LANES],
        out: &mut [[u64; SHARED_OUT_LANES]; KECCAK_LANES],
    ) {
        let mut a = gather_shared(template, first, nvar, var);
        keccak_rounds!(a, xor: xor, xor5: xor5_avx2, rol: rol_avx2, chi: chi_avx2, rc: rc);
        scatter(&a, out);
    }

    // AVX-512VL operations.
    macro_rules! xor5_avx512 {
        ($a:expr, $b:expr, $c:expr, $d:expr, $e:expr) => {
            _mm256_ternarylogic_epi64::<XOR3>(_mm256_ternarylogic_epi64::<XOR3>($a, $b, $c), $d, $e)
        };
    }
    macro_rules! rol_avx512 {
        ($x:expr, $n:literal) => {
            _mm256_rol_epi64::<$n>($x)
        };
    }
    macro_rules! chi_avx512 {
        ($a:expr, $b:expr, $c:expr) => {
            _mm256_ternarylogic_epi64::<CHI>($a, $b, $c)
        };
    }

    /// The AVX-512VL kernel.
    ///
    /// # Safety
    /// The CPU must support `avx2`, `avx512f` and `avx512vl` (see
    /// [`super::Kernel::is_available`]).
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    pub(super) fn avx512(states: &mut [[u64; 25]; KECCAK_LANES]) {
        let mut a = gather(states);
        keccak_rounds!(a, xor: xor, xor5: xor5_avx512, rol: rol_avx512, chi: chi_avx512, rc: rc);
        scatter(&a, states);
    }

    /// The AVX-512VL kernel on shared-template states ([`super::f1600_x4_shared`]).
    ///
    /// # Safety
    /// The CPU must support AVX2, AVX-512F and AVX-512VL (see
    /// [`super::Kernel::is_available`]).
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    pub(super) fn avx512_shared(
        template: &[u64; 25],
        first: usize,
        nvar: usize,
        var: &[[u64; SHARED_VAR_LANES]; KECCAK_LANES],
        out: &mut [[u64; SHARED_OUT_LANES]; KECCAK_LANES],
    ) {
        let mut a = gather_shared(template, first, nvar, var);
        keccak_rounds!(a, xor: xor, xor5: xor5_avx512, rol: rol_avx512, chi: chi_avx512, rc: rc);
        scatter(&a, out);
    }

    // AVX-512F operations on eight states (`__m512i`).
    macro_rules! xor_x8 {
        ($x:expr, $y:expr) => {
            _mm512_xor_si512($x, $y)
        };
    }
    macro_rules! xor5_x8 {
        ($a:expr, $b:expr, $c:expr, $d:expr, $e:expr) => {
            _mm512_ternarylogic_epi64::<XOR3>(_mm512_ternarylogic_epi64::<XOR3>($a, $b, $c), $d, $e)
        };
    }
    macro_rules! rol_x8 {
        ($x:expr, $n:literal) => {
            _mm512_rol_epi64::<$n>($x)
        };
    }
    macro_rules! chi_x8 {
        ($a:expr, $b:expr, $c:expr) => {
            _mm512_ternarylogic_epi64::<CHI>($a, $b, $c)
        };
    }
    macro_rules! rc_x8 {
        ($rc:expr) => {
            _mm512_set1_epi64($rc as i64)
        };
    }

    /// The eight-state AVX-512F kernel.
    ///
    /// # Safety
    /// The CPU must support `avx512f` (see [`crate::hashes::avx512f`]).
    #[target_feature(enable = "avx512f")]
    pub(super) fn avx512_x8(states: &mut [[u64; 25]; KECCAK_LANES_X8]) {
        let mut a: [__m512i; 25] = core::array::from_fn(|j| {
            // From the highest element to the lowest, as `set_epi64x`.
            _mm512_set_epi64(
                states[7][j] as i64,
                states[6][j] as i64,
                states[5][j] as i64,
                states[4][j] as i64,
                states[3][j] as i64,
                states[2][j] as i64,
                states[1][j] as i64,
                states[0][j] as i64,
            )
        });
        keccak_rounds!(a, xor: xor_x8, xor5: xor5_x8, rol: rol_x8, chi: chi_x8, rc: rc_x8);
        scatter_x8(&a, states);
    }

    /// The first `N` lanes of each of the eight states out of the registers (all 25, or the
    /// four a shared-template call returns).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn scatter_x8<const N: usize>(a: &[__m512i; 25], states: &mut [[u64; N]; KECCAK_LANES_X8]) {
        for (j, v) in a.iter().take(N).enumerate() {
            let mut lane = [0u64; KECCAK_LANES_X8];
            // SAFETY: the pointer comes from `&mut lane`, exactly the 64 bytes written; the
            // store is the unaligned form (see the module's Safety section).
            unsafe { _mm512_storeu_si512(lane.as_mut_ptr().cast(), *v) };
            for (s, x) in states.iter_mut().zip(lane) {
                s[j] = x;
            }
        }
    }

    /// The eight-state AVX-512F kernel for states that share all but `nvar` lanes from
    /// `first` ([`super::f1600_x8_shared`]): the shared lanes broadcast, the varying ones
    /// set element by element, and only the first four lanes stored.
    ///
    /// # Safety
    /// The CPU must support `avx512f` (see [`crate::hashes::avx512f`]). The lane range is
    /// checked by the caller; out of range, safe indexing would panic, not overrun.
    #[target_feature(enable = "avx512f")]
    pub(super) fn avx512_x8_shared(
        template: &[u64; 25],
        first: usize,
        nvar: usize,
        var: &[[u64; SHARED_VAR_LANES]; KECCAK_LANES_X8],
        out: &mut [[u64; SHARED_OUT_LANES]; KECCAK_LANES_X8],
    ) {
        let mut a: [__m512i; 25] = core::array::from_fn(|j| {
            if (first..first + nvar).contains(&j) {
                let k = j - first;
                _mm512_set_epi64(
                    var[7][k] as i64,
                    var[6][k] as i64,
                    var[5][k] as i64,
                    var[4][k] as i64,
                    var[3][k] as i64,
                    var[2][k] as i64,
                    var[1][k] as i64,
                    var[0][k] as i64,
                )
            } else {
                _mm512_set1_epi64(template[j] as i64)
            }
        });
        keccak_rounds!(a, xor: xor_x8, xor5: xor5_x8, rol: rol_x8, chi: chi_x8, rc: rc_x8);
        scatter_x8(&a, out);
    }
}

#[cfg(test)]
mod tests {
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
        fn state(&mut self) -> [u64; 25] {
            core::array::from_fn(|_| self.next_u64())
        }
    }

    fn reference(states: &[[u64; 25]; KECCAK_LANES]) -> [[u64; 25]; KECCAK_LANES] {
        let mut want = *states;
        for s in want.iter_mut() {
            keccak::f1600(s);
        }
        want
    }

    /// The kernels this CPU can run; says on stderr which ones it cannot.
    fn kernels() -> Vec<Kernel> {
        Kernel::ALL
            .into_iter()
            .filter(|k| {
                let ok = k.is_available();
                if !ok {
                    eprintln!("keccak_lanes: {k:?} not available on this CPU, not tested");
                }
                ok
            })
            .collect()
    }

    /// Checks `kernel` on `states` against `keccak::f1600`.
    fn check(kernel: Kernel, states: &[[u64; 25]; KECCAK_LANES], what: &str) {
        let mut got = *states;
        f1600_x4_with(kernel, &mut got);
        assert_eq!(got, reference(states), "{kernel:?}: {what}");
    }

    #[test]
    fn scalar_round_macro_matches_keccak() {
        let mut rng = Rng(1);
        for _ in 0..200 {
            let mut s = rng.state();
            let mut want = s;
            keccak::f1600(&mut want);
            scalar::f1600(&mut s);
            assert_eq!(s, want);
        }
        let mut zero = [0u64; 25];
        scalar::f1600(&mut zero);
        let mut want = [0u64; 25];
        keccak::f1600(&mut want);
        assert_eq!(zero, want);
    }

    /// A bit-by-bit model of `vpternlogq` (Intel SDM: result bit = bit `4a + 2b + c` of
    /// the immediate).
    fn ternlog(imm: i32, a: u64, b: u64, c: u64) -> u64 {
        (0..64).fold(0, |r, bit| {
            let idx = ((a >> bit) & 1) << 2 | ((b >> bit) & 1) << 1 | ((c >> bit) & 1);
            r | ((imm as u64 >> idx) & 1) << bit
        })
    }

    #[test]
    fn ternlog_immediates() {
        let mut rng = Rng(2);
        for _ in 0..1000 {
            let (a, b, c) = (rng.next_u64(), rng.next_u64(), rng.next_u64());
            assert_eq!(ternlog(ternlog::XOR3, a, b, c), a ^ b ^ c);
            assert_eq!(ternlog(ternlog::CHI, a, b, c), a ^ (!b & c));
        }
    }

    /// The AVX-512 kernel's operation macros, with `vpternlogq` replaced by the scalar
    /// model above: checks the immediates and operand order through the whole permutation
    /// on any CPU.
    #[test]
    fn avx512_operations_modelled_in_scalar_match_keccak() {
        macro_rules! xor {
            ($x:expr, $y:expr) => {
                $x ^ $y
            };
        }
        macro_rules! xor5 {
            ($a:expr, $b:expr, $c:expr, $d:expr, $e:expr) => {
                ternlog(ternlog::XOR3, ternlog(ternlog::XOR3, $a, $b, $c), $d, $e)
            };
        }
        macro_rules! rol {
            ($x:expr, $n:literal) => {
                ($x).rotate_left($n)
            };
        }
        macro_rules! chi {
            ($a:expr, $b:expr, $c:expr) => {
                ternlog(ternlog::CHI, $a, $b, $c)
            };
        }
        macro_rules! rc {
            ($rc:expr) => {
                $rc
            };
        }
        let mut rng = Rng(3);
        for _ in 0..20 {
            let mut a = rng.state();
            let mut want = a;
            keccak::f1600(&mut want);
            keccak_rounds!(a, xor: xor, xor5: xor5, rol: rol, chi: chi, rc: rc);
            assert_eq!(a, want);
        }
    }

    #[test]
    fn kernels_match_keccak_on_random_states() {
        for kernel in kernels() {
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
            let mut states: [[u64; 25]; KECCAK_LANES] = core::array::from_fn(|_| rng.state());
            for it in 0..2000 {
                let want = reference(&states);
                f1600_x4_with(kernel, &mut states);
                assert_eq!(states, want, "{kernel:?}, iteration {it}");
                // Now and then start a lane afresh so unrelated states keep appearing.
                if it % 7 == 0 {
                    states[it % KECCAK_LANES] = rng.state();
                }
            }
        }
    }

    #[test]
    fn kernels_on_zero_equal_and_distinct_lanes() {
        let mut rng = Rng(4);
        let one = rng.state();
        for kernel in kernels() {
            check(kernel, &[[0; 25]; KECCAK_LANES], "zero states");
            check(kernel, &[one; KECCAK_LANES], "four equal states");
            // Zero in some lanes, random in the others; single bits in each lane.
            let mut mixed = [[0; 25]; KECCAK_LANES];
            mixed[1] = one;
            mixed[3] = rng.state();
            check(kernel, &mixed, "zero and random lanes");
            for bit in 0..64 * 25 {
                let mut states = [[0u64; 25]; KECCAK_LANES];
                for (i, s) in states.iter_mut().enumerate() {
                    let b = (bit + 401 * i) % (64 * 25);
                    s[b / 64] = 1 << (b % 64);
                }
                check(kernel, &states, "one bit per lane");
            }
            // Distinct lanes that differ in one bit only.
            let mut close = [one; KECCAK_LANES];
            for (i, s) in close.iter_mut().enumerate() {
                s[7 * i] ^= 1 << (13 * i);
            }
            check(kernel, &close, "lanes one bit apart");
        }
    }

    /// The eight-state entry point on random states, single bits and a lane of zeros:
    /// AVX-512F where the CPU has it (said on stderr when it does not: two four-state
    /// calls then, already tested above).
    #[test]
    fn eight_states_match_keccak() {
        if !crate::hashes::avx512f() {
            eprintln!("keccak_lanes: AVX-512F not available on this CPU, f1600_x8 tested through its fallback");
        }
        let mut rng = Rng(6);
        let mut states: [[u64; 25]; KECCAK_LANES_X8] = core::array::from_fn(|_| rng.state());
        for it in 0..500 {
            let mut want = states;
            want.iter_mut().for_each(keccak::f1600);
            f1600_x8(&mut states);
            assert_eq!(states, want, "iteration {it}");
            if it % 5 == 0 {
                states[it % KECCAK_LANES_X8] = if it % 2 == 0 { [0; 25] } else { rng.state() };
            }
        }
        for bit in (0..64 * 25).step_by(7) {
            let mut states = [[0u64; 25]; KECCAK_LANES_X8];
            for (i, s) in states.iter_mut().enumerate() {
                let b = (bit + 211 * i) % (64 * 25);
                s[b / 64] = 1 << (b % 64);
            }
            let mut want = states;
            want.iter_mut().for_each(keccak::f1600);
            f1600_x8(&mut states);
            assert_eq!(states, want, "one bit per lane, from bit {bit}");
        }
    }

    /// The shared-template entry point against `keccak::f1600` of the whole states, for
    /// every varying range a SPHINCS+ SHAKE hash uses (`PK.seed` of 2, 3 or 4 lanes, then 4
    /// address lanes and 1 or 2 inputs) and the extremes, random and zero lanes; and its
    /// fallback (`shared_model`) the same way.
    #[test]
    fn shared_states_match_keccak() {
        let mut rng = Rng(8);
        let ranges = [
            (2, 6),
            (2, 8),
            (3, 7),
            (3, 10),
            (4, 8),
            (4, 12),
            (0, 12),
            (13, 12),
            (0, 0),
            (24, 1),
        ];
        for (it, (first, nvar)) in ranges.into_iter().cycle().take(300).enumerate() {
            let template = rng.state();
            let var: [[u64; SHARED_VAR_LANES]; KECCAK_LANES_X8] = core::array::from_fn(|i| {
                core::array::from_fn(|k| {
                    if (i + k + it) % 9 == 0 {
                        0
                    } else {
                        rng.next_u64()
                    }
                })
            });
            let want: [[u64; SHARED_OUT_LANES]; KECCAK_LANES_X8] = core::array::from_fn(|i| {
                let mut st = template;
                st[first..first + nvar].copy_from_slice(&var[i][..nvar]);
                keccak::f1600(&mut st);
                st[..SHARED_OUT_LANES].try_into().unwrap()
            });
            let mut got = [[0u64; SHARED_OUT_LANES]; KECCAK_LANES_X8];
            f1600_x8_shared(&template, first, nvar, &var, &mut got);
            assert_eq!(got, want, "iteration {it}: lanes {first}..{}", first + nvar);
            let mut model = [[0u64; SHARED_OUT_LANES]; KECCAK_LANES_X8];
            shared_model(&template, first, nvar, &var, &mut model);
            assert_eq!(model, want, "the model, iteration {it}");
            let four: [[u64; SHARED_VAR_LANES]; KECCAK_LANES] =
                core::array::from_fn(|i| var[i + it % 5]);
            for k in kernels() {
                let mut got4 = [[0u64; SHARED_OUT_LANES]; KECCAK_LANES];
                f1600_x4_shared_with(k, &template, first, nvar, &four, &mut got4);
                assert_eq!(got4[..], want[it % 5..it % 5 + 4], "{k:?}, iteration {it}");
            }
        }
    }

    #[cfg(not(target_family = "wasm"))]
    #[test]
    fn shared_states_refuse_a_range_past_the_state() {
        let var = [[0u64; SHARED_VAR_LANES]; KECCAK_LANES_X8];
        let mut out = [[0u64; SHARED_OUT_LANES]; KECCAK_LANES_X8];
        for (first, nvar) in [(14, 12), (0, 13)] {
            let r = std::panic::catch_unwind(move || {
                let mut out = out;
                f1600_x8_shared(&[0; 25], first, nvar, &var, &mut out)
            });
            assert!(r.is_err(), "{first}..+{nvar}");
        }
        f1600_x8_shared(&[0; 25], 13, 12, &var, &mut out);
    }

    #[test]
    fn the_dispatch_uses_the_best_kernel_and_agrees() {
        let best = Kernel::best();
        assert!(best.is_available());
        assert_eq!(best, *kernels().last().unwrap());
        let mut rng = Rng(5);
        let mut states: [[u64; 25]; KECCAK_LANES] = core::array::from_fn(|_| rng.state());
        let want = reference(&states);
        f1600_x4(&mut states);
        assert_eq!(states, want);
        for k in Kernel::ALL {
            assert_eq!(Kernel::from_name(k.name()), Some(k));
        }
    }

    // catch_unwind: WebAssembly aborts on a panic (the wasm32-wasip1 run leaves this out).
    #[cfg(not(target_family = "wasm"))]
    #[test]
    fn unavailable_kernels_panic() {
        // Never reached on a CPU without the features: the call panics first.
        for k in Kernel::ALL.into_iter().filter(|k| !k.is_available()) {
            let r = std::panic::catch_unwind(|| f1600_x4_with(k, &mut [[0; 25]; KECCAK_LANES]));
            assert!(r.is_err(), "{k:?}");
        }
    }
}
