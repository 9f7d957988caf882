//! WOTS+ with `w = 16` (spec section 3), with real chain and hash addresses and the real
//! checksum. A WOTS+ key signs exactly one digest; DGSP certifies each key once.

use zeroize::Zeroize;

use crate::hashes::Th;
use crate::params::{ParamSet, MAX_N, MAX_WOTS_LEN, WOTS_W};
use crate::values::{MessageDigest, Rho, SkSeed, WotsPk};

/// Highest chain position (`w - 1`).
const TOP: u8 = (WOTS_W - 1) as u8;

/// The `len` base-16 digits of a digest: `len1 = 2N` message digits, most significant
/// nibble first, then three checksum digits of `(sum(15 - m_i)) << 4` as a big-endian u16.
pub fn digits(params: ParamSet, d: &MessageDigest) -> [u8; MAX_WOTS_LEN] {
    let mut out = [0u8; MAX_WOTS_LEN];
    let len1 = params.wots_len1();
    for (i, b) in d.as_bytes().iter().enumerate() {
        out[2 * i] = b >> 4;
        out[2 * i + 1] = b & 0x0f;
    }
    let checksum: u32 = out[..len1].iter().map(|&m| 15 - u32::from(m)).sum();
    let c = ((checksum << 4) as u16).to_be_bytes();
    out[len1] = c[0] >> 4;
    out[len1 + 1] = c[0] & 0x0f;
    out[len1 + 2] = c[1] >> 4;
    out
}

/// Compresses the chain ends into the public key.
fn compress(params: ParamSet, th: &Th, ends: &[u8]) -> WotsPk {
    let mut pk = [0u8; MAX_N];
    th.t_pk(ends, &mut pk[..params.n()]);
    WotsPk::from_output(&pk[..params.n()])
}

/// The public key of the WOTS+ key `(rho, sk_seed)`.
pub fn public_key(params: ParamSet, rho: &Rho, sk_seed: &SkSeed) -> WotsPk {
    let th = Th::new(params, rho.as_bytes());
    let (n, len) = (params.n(), params.wots_len());
    let mut buf = [0u8; MAX_WOTS_LEN * MAX_N];
    let ends = &mut buf[..len * n];
    th.prf_all(sk_seed.expose_secret(), ends);
    th.chains(ends, &[0; MAX_WOTS_LEN][..len], &[TOP; MAX_WOTS_LEN][..len]);
    compress(params, &th, ends)
}

/// Signs digest `d`: block `i` is chain `i` advanced `digit_i` steps (`len * N` bytes).
pub fn sign(params: ParamSet, rho: &Rho, sk_seed: &SkSeed, d: &MessageDigest) -> Vec<u8> {
    let th = Th::new(params, rho.as_bytes());
    let len = params.wots_len();
    let digits = digits(params, d);
    let mut sig = vec![0u8; params.wots_sig_len()];
    th.prf_all(sk_seed.expose_secret(), &mut sig);
    th.chains(&mut sig, &[0; MAX_WOTS_LEN][..len], &digits[..len]);
    sig
}

/// Recomputes the public key from a signature of `d`. `sig` must be `len * N` bytes.
pub fn public_key_from_signature(
    params: ParamSet,
    rho: &Rho,
    sig: &[u8],
    d: &MessageDigest,
) -> WotsPk {
    let th = Th::new(params, rho.as_bytes());
    let (n, len) = (params.n(), params.wots_len());
    let digits = digits(params, d);
    let mut rest = [0u8; MAX_WOTS_LEN];
    for (r, d) in rest.iter_mut().zip(&digits[..len]) {
        *r = TOP - d;
    }
    let mut buf = [0u8; MAX_WOTS_LEN * MAX_N];
    let ends = &mut buf[..len * n];
    ends.copy_from_slice(sig);
    th.chains(ends, &digits[..len], &rest[..len]);
    let pk = compress(params, &th, ends);
    buf.zeroize();
    pk
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_digits_follow_the_spec() {
        let p = ParamSet::Sha2_128f;
        // All-zero digest: every m_i = 0, checksum = 32 * 15 = 480, << 4 = 7680 = 0x1e00.
        let d = MessageDigest::from_slice(p, &[0u8; 16]).unwrap();
        let g = digits(p, &d);
        assert_eq!(&g[32..35], &[1, 14, 0]);
        // All-0xff digest: checksum 0.
        let d = MessageDigest::from_slice(p, &[0xffu8; 16]).unwrap();
        assert_eq!(&digits(p, &d)[32..35], &[0, 0, 0]);
    }

    #[test]
    fn signature_round_trips_to_the_public_key() {
        for p in [ParamSet::Sha2_192f, ParamSet::Shake256f] {
            let rho = Rho::from_slice(p, &vec![3u8; p.n()]).unwrap();
            let sk = SkSeed::from_slice(p, &vec![9u8; p.n()]).unwrap();
            let d = MessageDigest::from_slice(p, &vec![0x5au8; p.n()]).unwrap();
            let pk = public_key(p, &rho, &sk);
            let sig = sign(p, &rho, &sk, &d);
            assert_eq!(public_key_from_signature(p, &rho, &sig, &d), pk);
            let other = MessageDigest::from_slice(p, &vec![0x5bu8; p.n()]).unwrap();
            assert_ne!(public_key_from_signature(p, &rho, &sig, &other), pk);
        }
    }
}
