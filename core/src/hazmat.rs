//! Low-level building blocks, exposed for known-answer tests and interoperability work.
//!
//! These functions are the scheme's internals (spec sections 2-4). Misusing them — signing
//! two digests with one WOTS+ key, deriving zetas for someone else's counters — breaks the
//! scheme's guarantees; applications use [`Manager`](crate::Manager),
//! [`MemberKey`](crate::MemberKey) and [`ManagerPublicKey`](crate::ManagerPublicKey) instead.

pub use crate::address::{Adrs, DGSP_LAYER, WOTS_HASH, WOTS_PK, WOTS_PRF};
pub use crate::derive::{cid, cid_star, message_digest, pi, rho, sk_seed, tau};
pub use crate::hashes::Label;
pub use crate::wots::{
    digits as wots_digits, public_key as wots_public_key,
    public_key_from_signature as wots_public_key_from_signature, sign as wots_sign,
};

use crate::params::ParamSet;
use crate::values::{AesKey, Zeta};
use crate::zeta::ZetaCipher;
use crate::MemberId;

/// Advances `x` (N bytes) by `steps` steps of WOTS+ chain `chain` of the key with public
/// seed `rho`, starting at position `start` (spec section 3, `chain(x, i, start, steps)`).
pub fn wots_chain(
    params: ParamSet,
    rho: &crate::Rho,
    x: &mut [u8],
    chain: u32,
    start: u32,
    steps: u32,
) {
    crate::hashes::Th::new(params, rho.as_bytes()).chain(x, chain, start, steps);
}

/// `HL(label, input)`: the labelled hash of spec 2.1 (`N` bytes).
pub fn labelled_hash(params: ParamSet, label: Label, input: &[u8]) -> Vec<u8> {
    crate::hashes::labelled(params, label, &[input])[..params.n()].to_vec()
}

/// `zeta = AES_enc(aes_key, be64(id) || be64(counter))`.
pub fn zeta(aes_key: &AesKey, id: MemberId, counter: u64) -> Zeta {
    ZetaCipher::new(aes_key).zeta(id, counter)
}

/// Decrypts a zeta to `(id, counter)`.
pub fn open_zeta(aes_key: &AesKey, zeta: &Zeta) -> (MemberId, u64) {
    ZetaCipher::new(aes_key).open(zeta)
}
