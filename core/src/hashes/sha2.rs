//! SPHINCS+ "simple" tweakable hashes for the SHA-2 sets.
//!
//! `F` and `PRF` hash `rho || zeros(64-N) || ADRSc || x`: the first 64-byte block depends on
//! `rho` alone, so its SHA-256 state is computed once per key, and the second block
//! (`ADRSc || x || padding`, at most 22 + 32 + 9 = 63 bytes) is one call to the compression
//! function per chain step. `T` uses a hasher cloned from the same primed state.

use sha2::digest::generic_array::GenericArray;
use sha2::{compress256, Digest, Sha256, Sha512};

use crate::address::{Adrs, COMPRESSED_HASH_OFFSET, WOTS_HASH, WOTS_PK, WOTS_PRF};
use crate::params::MAX_N;

/// SHA-256 initial state.
const IV256: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// Where `x` starts in the second block: right after the 22-byte compressed address.
const X_OFFSET: usize = 22;

enum PrimedT {
    Sha256(Sha256),
    Sha512(Sha512),
}

/// The SHA-2 tweakable hash of one WOTS+ key.
pub(crate) struct Sha2Th {
    n: usize,
    /// SHA-256 state after compressing `rho || zeros(64 - N)`.
    mid: [u32; 8],
    /// The hasher for `T`, primed with `rho || zeros(64 or 128 - N)`.
    t: PrimedT,
}

impl Sha2Th {
    pub(crate) fn new(rho: &[u8]) -> Self {
        let n = rho.len();
        let mut block = [0u8; 64];
        block[..n].copy_from_slice(rho);
        let mut mid = IV256;
        compress256(&mut mid, &[GenericArray::clone_from_slice(&block)]);
        let t = if n == 16 {
            PrimedT::Sha256(Sha256::new_with_prefix(block))
        } else {
            let mut block = [0u8; 128];
            block[..n].copy_from_slice(rho);
            PrimedT::Sha512(Sha512::new_with_prefix(block))
        };
        Sha2Th { n, mid, t }
    }

    /// The second block of `F`/`PRF` for `adrs`, padded for a message of `64 + 22 + N` bytes;
    /// `x` goes at [`X_OFFSET`].
    fn second_block(&self, adrs: &Adrs) -> [u8; 64] {
        let mut block = [0u8; 64];
        block[..X_OFFSET].copy_from_slice(&adrs.compressed());
        block[X_OFFSET + self.n] = 0x80;
        let bits = ((64 + X_OFFSET + self.n) * 8) as u64;
        block[56..].copy_from_slice(&bits.to_be_bytes());
        block
    }

    /// One compression of `block` from the primed state; writes the first N output bytes
    /// back into the block's `x` field.
    #[inline(always)]
    fn step(&self, block: &mut [u8; 64]) {
        let mut st = self.mid;
        compress256(
            &mut st,
            core::slice::from_ref(GenericArray::from_slice(&block[..])),
        );
        for (k, w) in st.iter().take(self.n / 4).enumerate() {
            block[X_OFFSET + 4 * k..X_OFFSET + 4 * k + 4].copy_from_slice(&w.to_be_bytes());
        }
    }

    pub(crate) fn chain(&self, x: &mut [u8], chain: u32, start: u32, steps: u32) {
        if steps == 0 {
            return;
        }
        let mut adrs = Adrs::dgsp(WOTS_HASH);
        adrs.set_chain(chain);
        let mut block = self.second_block(&adrs);
        let n = self.n;
        block[X_OFFSET..X_OFFSET + n].copy_from_slice(x);
        for j in start..start + steps {
            block[COMPRESSED_HASH_OFFSET..COMPRESSED_HASH_OFFSET + 4]
                .copy_from_slice(&j.to_be_bytes());
            self.step(&mut block);
        }
        x.copy_from_slice(&block[X_OFFSET..X_OFFSET + n]);
    }

    pub(crate) fn prf(&self, chain: u32, sk_seed: &[u8], out: &mut [u8]) {
        let mut adrs = Adrs::dgsp(WOTS_PRF);
        adrs.set_chain(chain);
        let mut block = self.second_block(&adrs);
        block[X_OFFSET..X_OFFSET + self.n].copy_from_slice(sk_seed);
        self.step(&mut block);
        out.copy_from_slice(&block[X_OFFSET..X_OFFSET + self.n]);
    }

    pub(crate) fn t_pk(&self, ends: &[u8], out: &mut [u8]) {
        let adrs = Adrs::dgsp(WOTS_PK).compressed();
        let mut buf = [0u8; 64];
        let digest: &[u8] = match &self.t {
            PrimedT::Sha256(h) => {
                let d = h.clone().chain_update(adrs).chain_update(ends).finalize();
                buf[..32].copy_from_slice(&d);
                &buf[..32]
            }
            PrimedT::Sha512(h) => {
                let d = h.clone().chain_update(adrs).chain_update(ends).finalize();
                buf.copy_from_slice(&d);
                &buf[..]
            }
        };
        out.copy_from_slice(&digest[..self.n]);
        debug_assert!(self.n <= MAX_N);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The midstate shortcut must equal hashing the whole spec-defined input.
    #[test]
    fn f_equals_plain_sha256_of_the_spec_input() {
        for n in [16usize, 24, 32] {
            let rho: Vec<u8> = (0..n as u8).collect();
            let x: Vec<u8> = (100..100 + n as u8).collect();
            let th = Sha2Th::new(&rho);
            let mut got = x.clone();
            th.chain(&mut got, 7, 3, 1);

            let mut adrs = Adrs::dgsp(WOTS_HASH);
            adrs.set_chain(7);
            adrs.set_hash(3);
            let mut input = rho.clone();
            input.resize(64, 0);
            input.extend_from_slice(&adrs.compressed());
            input.extend_from_slice(&x);
            assert_eq!(got, Sha256::digest(&input)[..n]);
        }
    }
}
