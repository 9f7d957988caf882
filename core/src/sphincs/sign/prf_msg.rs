//! `PRF_msg(SK.prf, OptRand, M)`: the randomizer `R` (the same function in SPHINCS+ round
//! 3.1 and FIPS 205): HMAC-SHA-256 (`N = 16`) or HMAC-SHA-512 (`N = 24, 32`) for the SHA-2
//! sets, `SHAKE256(SK.prf || OptRand || M)` for the SHAKE sets, truncated to `N` bytes.

use sha2::digest::core_api::BlockSizeUser;
use sha2::{Digest, Sha256, Sha512};
use sha3::digest::{ExtendableOutput, Update, XofReader};
use sha3::Shake256;
use zeroize::Zeroizing;

use crate::params::HashFamily;
use crate::sphincs::params::Params;

/// Writes `PRF_msg(sk_prf, opt_rand, msg[0] || msg[1])` to `out` (`N` bytes).
pub(super) fn prf_msg(p: &Params, sk_prf: &[u8], opt_rand: &[u8], msg: [&[u8]; 2], out: &mut [u8]) {
    match p.family {
        HashFamily::Sha2 if p.n == 16 => hmac::<Sha256>(sk_prf, [opt_rand, msg[0], msg[1]], out),
        HashFamily::Sha2 => hmac::<Sha512>(sk_prf, [opt_rand, msg[0], msg[1]], out),
        HashFamily::Shake => {
            let mut h = Shake256::default();
            for part in [sk_prf, opt_rand, msg[0], msg[1]] {
                h.update(part);
            }
            h.finalize_xof().read(out);
        }
    }
}

/// HMAC (RFC 2104) with hash `D` and a key no longer than its block, over the concatenation
/// of `data`, truncated to `out.len()` (at most the output size).
fn hmac<D: Digest + BlockSizeUser>(key: &[u8], data: [&[u8]; 3], out: &mut [u8]) {
    let block = <D as BlockSizeUser>::block_size();
    let mut pad = Zeroizing::new([0u8; 128]);
    pad[..key.len()].copy_from_slice(key);
    let pad = &mut pad[..block];
    pad.iter_mut().for_each(|b| *b ^= 0x36);
    let mut inner = D::new();
    Digest::update(&mut inner, &*pad);
    for part in data {
        Digest::update(&mut inner, part);
    }
    let inner = inner.finalize();
    pad.iter_mut().for_each(|b| *b ^= 0x36 ^ 0x5c);
    let mut outer = D::new();
    Digest::update(&mut outer, &*pad);
    Digest::update(&mut outer, &inner);
    out.copy_from_slice(&outer.finalize()[..out.len()]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231 test case 2 (key "Jefe"), for both hashes.
    #[test]
    fn hmac_matches_rfc_4231() {
        let mut out = [0u8; 32];
        hmac::<Sha256>(
            b"Jefe",
            [b"what do ya want ", b"for nothing?", b""],
            &mut out,
        );
        assert_eq!(
            hex(&out),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let mut out = [0u8; 64];
        hmac::<Sha512>(
            b"Jefe",
            [b"", b"what do ya want for nothing?", b""],
            &mut out,
        );
        assert_eq!(
            hex(&out),
            "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"
        );
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }
}
