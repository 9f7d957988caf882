//! WOTS+ public keys from signatures (`w = 16`): the chain lengths of a message and the
//! chain jobs that complete a signature to the public key.

use super::address::{Address, WOTS_HASH};
use super::hash::ChainJob;
use super::params::Params;

/// The largest `len`.
pub(crate) const MAX_LEN: usize = 67;

/// The `len` base-16 digits signed for `msg` (`N` bytes): the message nibbles, high nibble
/// first, then the three digits of the checksum `sum(15 - d_i)`.
pub(crate) fn chain_lengths(p: &Params, msg: &[u8]) -> [u8; MAX_LEN] {
    match p.n {
        16 => chain_digits::<16>(msg),
        24 => chain_digits::<24>(msg),
        _ => chain_digits::<32>(msg),
    }
}

/// [`chain_lengths`] for `N` known at compile time: `2 N + 3` digits (`len`).
pub(crate) fn chain_digits<const N: usize>(msg: &[u8]) -> [u8; MAX_LEN] {
    let mut d = [0u8; MAX_LEN];
    for (i, b) in msg[..N].iter().enumerate() {
        d[2 * i] = b >> 4;
        d[2 * i + 1] = b & 15;
    }
    let csum: u32 = d[..2 * N].iter().map(|x| 15 - u32::from(*x)).sum();
    d[2 * N] = ((csum >> 8) & 15) as u8;
    d[2 * N + 1] = ((csum >> 4) & 15) as u8;
    d[2 * N + 2] = (csum & 15) as u8;
    d
}

/// Appends the `len` chain jobs that take the WOTS+ signature `sig` (`len * N` bytes) of
/// `msg` by key pair `leaf` of tree `tree` in `layer` to the public key's chain ends.
pub(crate) fn push_chains(
    p: &Params,
    adrs: Address,
    msg: &[u8],
    sig: &[u8],
    jobs: &mut Vec<ChainJob>,
) {
    match p.n {
        16 => push_chains_n::<16>(p, adrs, msg, sig, jobs),
        24 => push_chains_n::<24>(p, adrs, msg, sig, jobs),
        _ => push_chains_n::<32>(p, adrs, msg, sig, jobs),
    }
}

/// [`push_chains`] for `N = p.n` known at compile time (fixed-size copies).
fn push_chains_n<const N: usize>(
    p: &Params,
    adrs: Address,
    msg: &[u8],
    sig: &[u8],
    jobs: &mut Vec<ChainJob>,
) {
    let lengths = chain_lengths(p, msg);
    let (chunks, _) = sig.as_chunks::<N>();
    let mut a = adrs;
    a.kind = WOTS_HASH;
    for (c, (s, &start)) in chunks.iter().zip(&lengths[..p.len]).enumerate() {
        a.word6 = c as u32;
        let mut x = [0u8; 32];
        x[..N].copy_from_slice(s);
        jobs.push(ChainJob {
            adrs: a,
            x,
            start,
            end: 15,
        });
    }
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
