//! `H_msg`: the message digest, split into the FORS message, the hypertree tree index and
//! the leaf index (PQClean `hash_message`).

use super::hash::Hasher;
use super::params::Params;

/// What `H_msg(R, PK, M)` selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MsgDigest {
    /// The FORS message (first `ceil(k a / 8)` bytes used).
    pub md: [u8; 40],
    /// Index of the bottom-layer tree (`h - h'` bits).
    pub tree: u64,
    /// Index of the leaf in that tree (`h'` bits).
    pub leaf: u32,
}

/// Big-endian integer of up to 8 bytes.
fn be(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
}

/// The low `bits` bits of `x` (`bits <= 64`).
fn low_bits(x: u64, bits: usize) -> u64 {
    if bits >= 64 {
        x
    } else {
        x & ((1u64 << bits) - 1)
    }
}

/// Computes and splits `H_msg(R, PK, M)`, `M` the concatenation of `msg`'s two parts.
pub(crate) fn digest(
    p: &Params,
    hasher: &Hasher,
    r: &[u8],
    pk: &[u8],
    msg: [&[u8]; 2],
) -> MsgDigest {
    let mut buf = [0u8; 64];
    let len = p.digest_bytes();
    hasher.h_msg(r, pk, msg, &mut buf[..len]);
    let fb = p.fors_msg_bytes();
    let tb = p.tree_bits().div_ceil(8);
    let lb = p.hp.div_ceil(8);
    let mut md = [0u8; 40];
    md[..fb].copy_from_slice(&buf[..fb]);
    MsgDigest {
        md,
        tree: low_bits(be(&buf[fb..fb + tb]), p.tree_bits()),
        leaf: low_bits(be(&buf[fb + tb..fb + tb + lb]), p.hp) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamSet;

    #[test]
    fn digest_lengths_fit_the_buffer() {
        for set in ParamSet::ALL {
            let p = Params::of(set);
            assert!(p.digest_bytes() <= 64 && p.fors_msg_bytes() <= 40, "{set}");
        }
        assert_eq!(low_bits(u64::MAX, 64), u64::MAX);
        assert_eq!(low_bits(0xFFFF, 9), 0x1FF);
        assert_eq!(be(&[1, 2]), 0x102);
    }
}
