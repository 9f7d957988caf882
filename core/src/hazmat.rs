//! Low-level building blocks, exposed for known-answer tests and interoperability work.
//!
//! These functions are the scheme's internals (spec sections 2-4). Misusing them — signing
//! two digests with one WOTS+ key, deriving zetas for someone else's counters — breaks the
//! scheme's guarantees; applications use [`Manager`](crate::Manager),
//! [`MemberKey`](crate::MemberKey) and [`ManagerPublicKey`](crate::ManagerPublicKey) instead.
//!
//! # Lengths are checked, nothing panics
//!
//! Every function that takes values whose length depends on the parameter set (`N`-byte
//! values such as [`Rho`] or [`SkSeed`], a WOTS+ signature of `len * N` bytes, a chain
//! value) checks them against `params` first and returns a [`HazmatError`] instead of
//! panicking or computing garbage. The typed values know their length, so a value made for
//! another parameter set (say a 16-byte `rho` passed with `sha2-192f`) is refused too.
//! [`labelled_hash`] accepts any input length, and [`zeta`] / [`open_zeta`] take values
//! whose length is fixed by their types; they cannot fail.
//!
//! ```
//! use dgsp_core::hazmat::{self, HazmatError};
//! use dgsp_core::{ParamSet, Rho};
//! let rho = Rho::from_slice(ParamSet::Sha2_128f, &[7; 16])?;
//! // A 16-byte rho is not a sha2-192f rho: refused, not a panic.
//! assert!(matches!(
//!     hazmat::message_digest(ParamSet::Sha2_192f, &rho, b"hi"),
//!     Err(HazmatError::WrongLength { field: "rho", expected: 24, found: 16, .. })
//! ));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use crate::address::{Adrs, DGSP_LAYER, WOTS_HASH, WOTS_PK, WOTS_PRF};
pub use crate::hashes::Label;

use crate::derive;
use crate::params::{ParamSet, MAX_WOTS_LEN, WOTS_W};
use crate::values::{
    AesKey, Cid, CidStar, HashSecret, MessageDigest, Pi, Rho, SeedU, SkSeed, Tau, WotsPk, WotsSeed,
    Zeta,
};
use crate::wots;
use crate::zeta::ZetaCipher;
use crate::MemberId;

/// Why a hazmat function refused its input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HazmatError {
    /// An input does not have the length `params` requires.
    #[error("wrong length for {field} under {params}: expected {expected} bytes, found {found}")]
    WrongLength {
        /// which input
        field: &'static str,
        /// the parameter set the call was made for
        params: ParamSet,
        /// the length it requires
        expected: usize,
        /// the length given
        found: usize,
    },
    /// A WOTS+ chain index or chain position outside the parameter set's range.
    #[error("{field} {found} is out of range under {params}: at most {max}")]
    OutOfRange {
        /// which input (`chain`, or `start + steps`)
        field: &'static str,
        /// the parameter set the call was made for
        params: ParamSet,
        /// the largest value allowed
        max: u64,
        /// the value given
        found: u64,
    },
}

/// Checks that `found` bytes is `expected` bytes for `field`.
fn len(
    params: ParamSet,
    field: &'static str,
    expected: usize,
    found: usize,
) -> Result<(), HazmatError> {
    if found == expected {
        Ok(())
    } else {
        Err(HazmatError::WrongLength {
            field,
            params,
            expected,
            found,
        })
    }
}

/// Checks that an `N`-byte value is `N` bytes for `params`.
fn n(params: ParamSet, field: &'static str, value: &[u8]) -> Result<(), HazmatError> {
    len(params, field, params.n(), value.len())
}

/// `cid = HL("cid", hash_secret || be64(id))`.
pub fn cid(params: ParamSet, hash_secret: &HashSecret, id: MemberId) -> Result<Cid, HazmatError> {
    n(params, "hash_secret", hash_secret.expose_secret())?;
    Ok(derive::cid(params, hash_secret, id))
}

/// `cid* = HL("cid*", cid || be64(id))`.
pub fn cid_star(params: ParamSet, cid: &Cid, id: MemberId) -> Result<CidStar, HazmatError> {
    n(params, "cid", cid.as_bytes())?;
    Ok(derive::cid_star(params, cid, id))
}

/// `rho = HL("rho", wots_seed)`.
pub fn rho(params: ParamSet, wots_seed: &WotsSeed) -> Result<Rho, HazmatError> {
    n(params, "wots_seed", wots_seed.expose_secret())?;
    Ok(derive::rho(params, wots_seed))
}

/// `sk_seed = HL("wots-sk", seed_u || wots_seed)`.
pub fn sk_seed(
    params: ParamSet,
    seed_u: &SeedU,
    wots_seed: &WotsSeed,
) -> Result<SkSeed, HazmatError> {
    n(params, "seed_u", seed_u.expose_secret())?;
    n(params, "wots_seed", wots_seed.expose_secret())?;
    Ok(derive::sk_seed(params, seed_u, wots_seed))
}

/// `d = HL("msg", rho || message)` (the message may have any length).
pub fn message_digest(
    params: ParamSet,
    rho: &Rho,
    message: &[u8],
) -> Result<MessageDigest, HazmatError> {
    n(params, "rho", rho.as_bytes())?;
    Ok(derive::message_digest(params, rho, message))
}

/// `pi = HL("pi", wots_pk || cid)`.
pub fn pi(params: ParamSet, wots_pk: &WotsPk, cid: &Cid) -> Result<Pi, HazmatError> {
    n(params, "wots_pk", wots_pk.as_bytes())?;
    n(params, "cid", cid.as_bytes())?;
    Ok(derive::pi(params, wots_pk, cid))
}

/// `tau = HL("tau", wots_pk || pi || be64(id))`.
pub fn tau(params: ParamSet, wots_pk: &WotsPk, pi: &Pi, id: MemberId) -> Result<Tau, HazmatError> {
    n(params, "wots_pk", wots_pk.as_bytes())?;
    n(params, "pi", pi.as_bytes())?;
    Ok(derive::tau(params, wots_pk, pi, id))
}

/// The `len` base-16 digits of digest `d` (message digits, then the three checksum digits),
/// in the first `params.wots_len()` entries of the array (the rest are zero).
pub fn wots_digits(params: ParamSet, d: &MessageDigest) -> Result<[u8; MAX_WOTS_LEN], HazmatError> {
    n(params, "digest", d.as_bytes())?;
    Ok(wots::digits(params, d))
}

/// The WOTS+ public key of the key `(rho, sk_seed)`.
pub fn wots_public_key(
    params: ParamSet,
    rho: &Rho,
    sk_seed: &SkSeed,
) -> Result<WotsPk, HazmatError> {
    n(params, "rho", rho.as_bytes())?;
    n(params, "sk_seed", sk_seed.expose_secret())?;
    Ok(wots::public_key(params, rho, sk_seed))
}

/// The WOTS+ signature of digest `d` (`len * N` bytes).
pub fn wots_sign(
    params: ParamSet,
    rho: &Rho,
    sk_seed: &SkSeed,
    d: &MessageDigest,
) -> Result<Vec<u8>, HazmatError> {
    n(params, "rho", rho.as_bytes())?;
    n(params, "sk_seed", sk_seed.expose_secret())?;
    n(params, "digest", d.as_bytes())?;
    Ok(wots::sign(params, rho, sk_seed, d))
}

/// Recomputes the WOTS+ public key from signature `sig` (`len * N` bytes) of digest `d`.
pub fn wots_public_key_from_signature(
    params: ParamSet,
    rho: &Rho,
    sig: &[u8],
    d: &MessageDigest,
) -> Result<WotsPk, HazmatError> {
    n(params, "rho", rho.as_bytes())?;
    n(params, "digest", d.as_bytes())?;
    len(params, "wots_signature", params.wots_sig_len(), sig.len())?;
    Ok(wots::public_key_from_signature(params, rho, sig, d))
}

/// Advances `x` (N bytes) by `steps` steps of WOTS+ chain `chain` (below `len`) of the key
/// with public seed `rho`, starting at position `start`, with `start + steps <= w - 1`
/// (spec section 3, `chain(x, i, start, steps)`).
pub fn wots_chain(
    params: ParamSet,
    rho: &Rho,
    x: &mut [u8],
    chain: u32,
    start: u32,
    steps: u32,
) -> Result<(), HazmatError> {
    n(params, "rho", rho.as_bytes())?;
    n(params, "x", x)?;
    let last_chain = params.wots_len() as u64 - 1;
    if u64::from(chain) > last_chain {
        return Err(HazmatError::OutOfRange {
            field: "chain",
            params,
            max: last_chain,
            found: chain.into(),
        });
    }
    let end = u64::from(start) + u64::from(steps);
    let top = WOTS_W as u64 - 1;
    if end > top {
        return Err(HazmatError::OutOfRange {
            field: "start + steps",
            params,
            max: top,
            found: end,
        });
    }
    crate::wots::chain(params, rho, x, chain, start, steps);
    Ok(())
}

/// `HL(label, input)`: the labelled hash of spec 2.1 (`N` bytes). Any input length.
pub fn labelled_hash(params: ParamSet, label: Label, input: &[u8]) -> Vec<u8> {
    crate::hashes::labelled(params, label, &[input])[..params.n()].to_vec()
}

/// `zeta = AES_enc(aes_key, be64(id) || be64(counter))`. The key's length (16, 24 or 32
/// bytes) picks AES-128, -192 or -256; every [`AesKey`] has one of them.
pub fn zeta(aes_key: &AesKey, id: MemberId, counter: u64) -> Zeta {
    ZetaCipher::new(aes_key).zeta(id, counter)
}

/// The message the manager's SPHINCS+ key signs in a certificate:
/// `"DGSP-v1:cert" || wots_pk || zeta || tau` (spec section 4).
pub fn certificate_message(wots_pk: &WotsPk, zeta: &Zeta, tau: &Tau) -> Vec<u8> {
    crate::certificate::cert_message(wots_pk.as_bytes(), zeta, tau.as_bytes())
}

/// The hash kernels the running CPU selects for verification, in words (for benchmark
/// reports), e.g. `"SHA-256 x4: sha-ni, SHA-256 x16: avx512f, SHA-512 x4: avx2,
/// Keccak-f x4: avx512, Keccak-f x8: avx512f"` (a wide kernel is `off` when switched off,
/// `none` when the CPU lacks it).
pub fn cpu_features_used() -> String {
    crate::hashes::kernels_in_use()
}

/// Decrypts a zeta to `(id, counter)`.
pub fn open_zeta(aes_key: &AesKey, zeta: &Zeta) -> (MemberId, u64) {
    ZetaCipher::new(aes_key).open(zeta)
}

/// Benchmark hook, not an API: applies Keccak-f\[1600\] `iterations` times to each of the
/// four states with the kernel called `kernel` (`portable`, `avx2` or `avx512`). Returns
/// `false`, touching nothing, if there is no such kernel or the CPU cannot run it.
#[doc(hidden)]
pub fn keccak_f1600_x4_bench(kernel: &str, states: &mut [[u64; 25]; 4], iterations: u32) -> bool {
    use crate::hashes::keccak_lanes::{f1600_x4_with, Kernel};
    match Kernel::from_name(kernel) {
        Some(k) if k.is_available() => {
            for _ in 0..iterations {
                f1600_x4_with(k, states);
            }
            true
        }
        _ => false,
    }
}

/// Benchmark hook, not an API: applies Keccak-f\[1600\] `iterations` times to each of the
/// eight states with the eight-state kernel. Returns `false`, touching nothing, when the CPU
/// lacks AVX-512F (the entry point would fall back to two four-state calls).
#[doc(hidden)]
pub fn keccak_f1600_x8_bench(states: &mut [[u64; 25]; 8], iterations: u32) -> bool {
    use crate::hashes::{avx512f, keccak_lanes::f1600_x8};
    if !avx512f() {
        return false;
    }
    for _ in 0..iterations {
        f1600_x8(states);
    }
    true
}

/// Benchmark hook, not an API: `iterations` dependent SHA-256 compressions in each of
/// `states.len()` lanes (each lane's state feeds its next compression, as in a WOTS+
/// chain), with the kernel called `kernel`: `compress256` (one lane at a time, the `sha2`
/// crate), `sha-ni-x4` (the four-lane SHA-NI kernel the verifier uses; 4 lanes),
/// `avx512-x16` (the sixteen-lane AVX-512F kernel; 16 lanes) or `avx512-x16-chain` (its
/// chain form, `chain_steps_x16`, the blocks kept as words; 16 lanes). Returns `false`, touching
/// nothing, if the kernel is unknown, the CPU cannot run it, or the lane count is not its.
#[doc(hidden)]
pub fn sha256_lanes_bench(
    kernel: &str,
    states: &mut [[u32; 8]],
    block: &[u8; 64],
    iterations: u32,
) -> bool {
    use crate::hashes::{lanes, sha256_x16};
    match (kernel, states.len()) {
        ("compress256", _) => {
            let block = sha2::digest::generic_array::GenericArray::from_slice(block);
            for _ in 0..iterations {
                for st in states.iter_mut() {
                    sha2::compress256(st, core::slice::from_ref(block));
                }
            }
            true
        }
        ("sha-ni-x4", lanes::LANES) if lanes::kernel_name() == "sha-ni" => {
            chains(states, block, iterations, lanes::compress_lanes)
        }
        ("avx512-x16", sha256_x16::LANES_X16) if crate::hashes::avx512f() => {
            chains(states, block, iterations, sha256_x16::compress_x16)
        }
        ("avx512-x16-chain", sha256_x16::LANES_X16) if crate::hashes::avx512f() => {
            // WOTS+-style chains with the blocks kept as words (`chain_steps_x16`): every
            // lane `iterations` steps from the block, its state mixed in, with a value of
            // four words (sha2-128f's); the block's words 5..13 come back as the state.
            let mut lanes = sha256_x16::ChainLanes {
                words: core::array::from_fn(|j| {
                    let w = u32::from_be_bytes([
                        block[4 * j],
                        block[4 * j + 1],
                        block[4 * j + 2],
                        block[4 * j + 3],
                    ]);
                    core::array::from_fn(|i| w ^ states[i][j % 8])
                }),
                steps: [iterations; sha256_x16::LANES_X16],
            };
            sha256_x16::chain_steps_x16(&states[0], &mut lanes, 4, 0);
            for (i, st) in states.iter_mut().enumerate() {
                *st = core::array::from_fn(|k| lanes.words[sha256_x16::CHAIN_WORD + k][i]);
            }
            true
        }
        _ => false,
    }
}

/// `iterations` calls of an `N`-lane compression on `states` (exactly `N` of them, else
/// `false`), every lane compressing `block`.
fn chains<const N: usize>(
    states: &mut [[u32; 8]],
    block: &[u8; 64],
    iterations: u32,
    compress: fn(&mut [[u32; 8]; N], &[[u8; 64]; N]),
) -> bool {
    let Ok(states) = <&mut [[u32; 8]; N]>::try_from(states) else {
        return false;
    };
    let blocks = [*block; N];
    for _ in 0..iterations {
        compress(states, &blocks);
    }
    true
}

/// Benchmark hook, not an API: whether the keys decoded from now on may use the wide
/// AVX-512F kernels, eight Keccak-f states for SHAKE and sixteen SHA-256 compressions for
/// SHA-2 `F` (on by default where the CPU has AVX-512F; off, they use the four-lane kernels).
/// Keys already built keep what they chose.
#[doc(hidden)]
pub fn wide_kernels_enable(on: bool) {
    crate::hashes::set_wide_kernels(on);
}

/// A fresh manager signature key pair `(public key, secret key)` from the OS randomness:
/// PQClean SPHINCS+ for round 3.1 sets, `slh-dsa` for FIPS 205 sets.
/// The oracle for tests and benches of [`crate::sphincs`]; not part of the supported API.
/// Requires the `oracle` feature, as do the other `spx_*` and `slh_*` oracles. The crate
/// itself signs with [`crate::sphincs::SigningKey`], which is checked against these.
#[cfg(feature = "oracle")]
#[doc(hidden)]
pub fn spx_keypair(params: ParamSet) -> (Vec<u8>, Vec<u8>) {
    let (pk, sk) = crate::spx::oracle::keypair(params, &mut rand_core::OsRng);
    (pk, sk.to_vec())
}

/// A manager signature of `msg` with secret key `sk` (`4N` bytes): PQClean SPHINCS+, or
/// FIPS 205 pure mode with the empty context and fresh `addrnd` (`slh-dsa`).
/// The oracle for tests and benches; not part of the supported API.
///
/// # Panics
/// If `sk` is not `4N` bytes.
#[cfg(feature = "oracle")]
#[doc(hidden)]
pub fn spx_sign(params: ParamSet, sk: &[u8], msg: &[u8]) -> Vec<u8> {
    assert_eq!(sk.len(), params.spx_sk_len(), "SPHINCS+ secret key length");
    crate::spx::oracle::sign(params, sk, msg)
}

/// PQClean's verdict on a round 3.1 SPHINCS+ signature (any length or content error is
/// `false`; always `false` for a FIPS 205 set). The oracle the native
/// [`crate::sphincs::VerifyingKey`] is tested against.
#[cfg(feature = "oracle")]
#[doc(hidden)]
pub fn spx_verify_pqclean(params: ParamSet, pk: &[u8], msg: &[u8], sig: &[u8]) -> bool {
    crate::spx::oracle::verify_pqclean(params, pk, msg, sig)
}

/// The signing library's verdict on a manager signature of either standard: PQClean's for
/// a round 3.1 set, `slh-dsa`'s (FIPS 205 pure mode, empty context) for a FIPS 205 set; any
/// length or content error is `false`. The oracle the fuzz target checks the native
/// verifier against on all 24 sets.
#[cfg(feature = "oracle")]
#[doc(hidden)]
pub fn spx_verify_oracle(params: ParamSet, pk: &[u8], msg: &[u8], sig: &[u8]) -> bool {
    crate::spx::oracle::verify(params, pk, msg, sig)
}

/// FIPS 205 `slh_keygen_internal(SK.seed, SK.prf, PK.seed)` with `slh-dsa`: the key pair
/// `(PK.seed || PK.root, SK.seed || SK.prf || PK.seed || PK.root)` of given seeds, for
/// known-answer tests. `None` unless `params` is a FIPS 205 set and every seed is `N` bytes.
#[cfg(feature = "oracle")]
#[doc(hidden)]
pub fn slh_keypair_from_seeds(
    params: ParamSet,
    sk_seed: &[u8],
    sk_prf: &[u8],
    pk_seed: &[u8],
) -> Option<(Vec<u8>, Vec<u8>)> {
    let n = params.n();
    if params.standard() != crate::params::Standard::Fips205
        || [sk_seed, sk_prf, pk_seed].iter().any(|s| s.len() != n)
    {
        return None;
    }
    let (pk, sk) = crate::spx::oracle::keypair_from_seeds(params, sk_seed, sk_prf, pk_seed);
    Some((pk, sk.to_vec()))
}

/// FIPS 205's deterministic variant (`opt_rand = PK.seed`) of the manager's signature of
/// `msg` (pure mode, empty context), for known-answer tests; DGSP itself always hedges.
/// `None` unless `params` is a FIPS 205 set and `sk` is `4N` bytes.
#[cfg(feature = "oracle")]
#[doc(hidden)]
pub fn slh_sign_deterministic(params: ParamSet, sk: &[u8], msg: &[u8]) -> Option<Vec<u8>> {
    (params.standard() == crate::params::Standard::Fips205 && sk.len() == params.spx_sk_len())
        .then(|| crate::spx::oracle::slh_sign(params, sk, msg, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checks_accept_the_right_lengths() {
        let p = ParamSet::Sha2_128f;
        let rho = Rho::from_slice(p, &[1; 16]).unwrap();
        let mut x = [0u8; 16];
        wots_chain(p, &rho, &mut x, p.wots_len() as u32 - 1, 3, 12).unwrap();
        assert_ne!(x, [0u8; 16]);
    }
}
