//! Hash functions (spec section 2): the labelled hash `HL` used for every DGSP-level value,
//! and the multi-lane SHA-256, SHA-512 and Keccak-f kernels under every tweakable hash.
//!
//! The tweakable hashes themselves (`F`, `H`, `T`, `PRF`, keyed by a seed, with their
//! precomputed midstates) are `sphincs::hash`'s, for the manager's SPHINCS+ keys and the
//! members' WOTS+ keys (`crate::wots`, keyed by `rho`) alike.

// The SHA-NI kernel: the only unsafe code in the crate (see its "Safety" section).
#[allow(unsafe_code)]
pub(crate) mod lanes;
// The 4-way Keccak-f kernels (see their "Safety" section).
#[allow(unsafe_code)]
pub(crate) mod keccak_lanes;
// The 4-lane SHA-512 kernel (its AVX2 build is chosen at run time; see its "Safety" section).
#[allow(unsafe_code)]
pub(crate) mod sha512_lanes;
// The 16-lane AVX-512F SHA-256 kernel, measured against SHA-NI (see its "Safety" section).
#[allow(unsafe_code)]
pub(crate) mod sha256_x16;

use core::sync::atomic::{AtomicBool, Ordering};

use ::sha2::{Digest, Sha256, Sha512};
use sha3::digest::{ExtendableOutput, Update, XofReader};
use sha3::Shake256;

use crate::params::{HashFamily, ParamSet, MAX_N};

/// The hash kernels selected on the running CPU, e.g. `"SHA-256 x4: sha-ni, SHA-256 x16:
/// avx512f, SHA-512 x4: avx2, Keccak-f x4: avx512, Keccak-f x8: avx512f"`.
pub(crate) fn kernels_in_use() -> String {
    let wide = match (wide_kernels(), avx512f()) {
        (true, _) => "avx512f",
        (false, true) => "off",
        (false, false) => "none",
    };
    format!(
        "SHA-256 x4: {}, SHA-256 x16: {}, SHA-512 x4: {}, Keccak-f x4: {}, Keccak-f x8: {}",
        lanes::kernel_name(),
        wide,
        sha512_lanes::kernel_name(),
        keccak_lanes::Kernel::best().name(),
        wide,
    )
}

/// Whether the running CPU has AVX-512F, which the wide kernels (`sha256_x16`, sixteen
/// SHA-256 compressions; `keccak_lanes::f1600_x8`, eight Keccak-f states) are compiled for.
/// `is_x86_feature_detected!` caches its answer after the first call.
pub(crate) fn avx512f() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the tweakable hashes may use the wide kernels where the CPU has them (a benchmark
/// turns them off to measure the four-lane kernels beside them in one run).
static WIDE_KERNELS: AtomicBool = AtomicBool::new(true);

/// Whether hashers built from now on run the wide kernels: the CPU has AVX-512F and they
/// are not switched off ([`set_wide_kernels`]).
pub(crate) fn wide_kernels() -> bool {
    WIDE_KERNELS.load(Ordering::Relaxed) && avx512f()
}

/// Allows or forbids the wide kernels for hashers built from now on (benchmarks).
pub(crate) fn set_wide_kernels(on: bool) {
    WIDE_KERNELS.store(on, Ordering::Relaxed);
}

/// The SHA-256 initial state (FIPS 180-4), where a midstate's compression starts.
pub(crate) const IV256: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// SHA-256 round constants (FIPS 180-4, 4.2.2), for the SHA-NI and AVX-512F kernels.
#[cfg(target_arch = "x86_64")]
const SHA256_K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// The labels of the DGSP-level hashes (spec 2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Label {
    /// `rho`: a WOTS+ public seed from its secret seed.
    Rho,
    /// `wots-sk`: a WOTS+ secret seed from `seed_u` and the item seed.
    WotsSk,
    /// `msg`: the digest a WOTS+ key signs.
    Msg,
    /// `cid`: a member's secret-derived identifier.
    Cid,
    /// `cid*`: what the member presents in certificate requests.
    CidStar,
    /// `pi`: the opening proof.
    Pi,
    /// `tau`: the certificate commitment.
    Tau,
}

impl Label {
    /// The ASCII label as hashed.
    pub const fn as_str(self) -> &'static str {
        match self {
            Label::Rho => "rho",
            Label::WotsSk => "wots-sk",
            Label::Msg => "msg",
            Label::Cid => "cid",
            Label::CidStar => "cid*",
            Label::Pi => "pi",
            Label::Tau => "tau",
        }
    }

    /// Every label, for tests and vectors.
    pub const ALL: [Label; 7] = [
        Label::Rho,
        Label::WotsSk,
        Label::Msg,
        Label::Cid,
        Label::CidStar,
        Label::Pi,
        Label::Tau,
    ];
}

/// `HL(label, parts[0] || parts[1] || ...)`: returns a 32-byte buffer whose first `N` bytes
/// are the hash.
pub(crate) fn labelled(params: ParamSet, label: Label, parts: &[&[u8]]) -> [u8; MAX_N] {
    fn absorb<D: Digest>(mut d: D, label: Label, parts: &[&[u8]]) -> D {
        Digest::update(&mut d, b"DGSP-v1:");
        Digest::update(&mut d, label.as_str().as_bytes());
        Digest::update(&mut d, [0u8]);
        for p in parts {
            Digest::update(&mut d, p);
        }
        d
    }
    let n = params.n();
    let mut out = [0u8; MAX_N];
    match (params.hash_family(), n) {
        (HashFamily::Shake, _) => {
            let mut h = Shake256::default();
            h.update(b"DGSP-v1:");
            h.update(label.as_str().as_bytes());
            h.update(&[0u8]);
            for p in parts {
                h.update(p);
            }
            h.finalize_xof().read(&mut out[..n]);
        }
        (HashFamily::Sha2, 16) => {
            out[..n].copy_from_slice(&absorb(Sha256::new(), label, parts).finalize()[..n])
        }
        (HashFamily::Sha2, _) => {
            out[..n].copy_from_slice(&absorb(Sha512::new(), label, parts).finalize()[..n])
        }
    }
    out
}
