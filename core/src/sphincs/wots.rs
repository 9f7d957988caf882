//! WOTS+ with `w = 16`: the chain lengths a message signs (the chains that complete a
//! signature to its public key run through `hash::Hasher::wots_chains`).

use super::params::Params;

/// The largest `len`.
pub(crate) const MAX_LEN: usize = 67;

/// The `len` base-16 digits signed for `msg` (`N` bytes): the message nibbles, high nibble
/// first, then the three digits of the checksum `sum(15 - d_i)`.
pub(crate) fn chain_lengths(p: &Params, msg: &[u8]) -> [u8; MAX_LEN] {
    let mut d = [0u8; MAX_LEN];
    let len1 = 2 * p.n;
    for (i, b) in msg[..p.n].iter().enumerate() {
        d[2 * i] = b >> 4;
        d[2 * i + 1] = b & 15;
    }
    let csum: u32 = d[..len1].iter().map(|x| 15 - u32::from(*x)).sum();
    d[len1] = ((csum >> 8) & 15) as u8;
    d[len1 + 1] = ((csum >> 4) & 15) as u8;
    d[len1 + 2] = (csum & 15) as u8;
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamSet;

    #[test]
    fn checksum_digits() {
        let p = Params::of(ParamSet::Sha2_128f);
        // All-zero message: 32 digits of 0, checksum 32 * 15 = 480 = 0x1E0.
        let d = chain_lengths(&p, &[0u8; 16]);
        assert_eq!(&d[32..35], &[1, 14, 0]);
        // All-0xFF: checksum 0.
        let d = chain_lengths(&p, &[0xFF; 16]);
        assert!(d[..32].iter().all(|x| *x == 15));
        assert_eq!(&d[32..35], &[0, 0, 0]);
        let d = chain_lengths(&p, &[0x12; 16]);
        assert_eq!((d[0], d[1]), (1, 2));
    }
}
