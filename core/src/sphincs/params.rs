//! Per-set constants of the twelve SPHINCS+ v3.1 "simple" parameter sets, as in PQClean's
//! `params.h` (`w = 16` everywhere, so `len2 = 3` and `len = 2N + 3`), which FIPS 205's
//! twelve SLH-DSA sets share.

pub use crate::params::Standard;
use crate::params::{HashFamily, ParamSet};

/// The structural constants of one parameter set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Params {
    /// Security parameter `N` in bytes.
    pub n: usize,
    /// Total hypertree height `h`.
    pub h: usize,
    /// Hypertree layers `d`.
    pub d: usize,
    /// Height of one subtree `h' = h / d`.
    pub hp: usize,
    /// FORS tree height `a`.
    pub a: usize,
    /// Number of FORS trees `k`.
    pub k: usize,
    /// WOTS+ chains `len`.
    pub len: usize,
    /// Hash family.
    pub family: HashFamily,
    /// Which specification's rules apply where the two differ.
    pub standard: Standard,
}

impl Params {
    /// The constants of `set`, and its standard.
    pub(crate) const fn of(set: ParamSet) -> Params {
        let (n, h, d, a, k) = match set.round3() {
            ParamSet::Sha2_128s | ParamSet::Shake128s => (16, 63, 7, 12, 14),
            ParamSet::Sha2_128f | ParamSet::Shake128f => (16, 66, 22, 6, 33),
            ParamSet::Sha2_192s | ParamSet::Shake192s => (24, 63, 7, 14, 17),
            ParamSet::Sha2_192f | ParamSet::Shake192f => (24, 66, 22, 8, 33),
            ParamSet::Sha2_256s | ParamSet::Shake256s => (32, 64, 8, 14, 22),
            ParamSet::Sha2_256f | ParamSet::Shake256f => (32, 68, 17, 9, 35),
            _ => unreachable!(),
        };
        Params {
            n,
            h,
            d,
            hp: h / d,
            a,
            k,
            len: 2 * n + 3,
            family: set.hash_family(),
            standard: set.standard(),
        }
    }

    /// Bytes of the FORS message digest: `ceil(k * a / 8)`.
    pub(crate) const fn fors_msg_bytes(&self) -> usize {
        (self.k * self.a).div_ceil(8)
    }

    /// Bits of the hypertree tree index: `h - h'`.
    pub(crate) const fn tree_bits(&self) -> usize {
        self.h - self.hp
    }

    /// Bytes of `H_msg` output: FORS digest, tree index, leaf index.
    pub(crate) const fn digest_bytes(&self) -> usize {
        self.fors_msg_bytes() + self.tree_bits().div_ceil(8) + self.hp.div_ceil(8)
    }

    /// Bytes of the FORS part of a signature: `k (a + 1) N`.
    pub(crate) const fn fors_bytes(&self) -> usize {
        self.k * (self.a + 1) * self.n
    }

    /// Bytes of one hypertree layer's part of a signature: WOTS+ signature and auth path.
    pub(crate) const fn layer_bytes(&self) -> usize {
        (self.len + self.hp) * self.n
    }

    /// Total signature length: `N + FORS + d layers`.
    pub(crate) const fn sig_bytes(&self) -> usize {
        self.n + self.fors_bytes() + self.d * self.layer_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_the_crate_table() {
        for set in ParamSet::ALL {
            let p = Params::of(set);
            assert_eq!(p.sig_bytes(), set.spx_sig_len(), "{set}");
            assert_eq!(p.n, set.n());
            assert_eq!(p.len, set.wots_len());
            assert_eq!(p.hp * p.d, p.h, "{set}");
            assert!(p.tree_bits() <= 64 && p.hp <= 32);
        }
    }
}
