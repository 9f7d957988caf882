//! SPHINCS+ "simple" tweakable hashes for the SHA-2 sets.
//!
//! `F` and `PRF` hash `rho || zeros(64-N) || ADRSc || x`: the first 64-byte block depends on
//! `rho` alone, so its SHA-256 state is computed once per key, and the second block
//! (`ADRSc || x || padding`, at most 22 + 32 + 9 = 63 bytes) is one call to the compression
//! function per chain step. `T` uses a hasher cloned from the same primed state.
//!
//! A chain step depends on the step before, so one chain is bound by the compression's
//! latency; the chains of a WOTS+ key are independent, so [`Sha2Th::chains`] keeps
//! [`LANES`] of them in flight and compresses one block of each per call.

use sha2::digest::generic_array::GenericArray;
use sha2::{compress256, Digest, Sha256, Sha512};

use super::lanes::{compress_lanes, LANES};
use crate::address::{Adrs, COMPRESSED_HASH_OFFSET, WOTS_HASH, WOTS_PK, WOTS_PRF};
use crate::params::MAX_N;

/// SHA-256 initial state.
pub(super) const IV256: [u32; 8] = [
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
        write_output(&st, &mut block[X_OFFSET..X_OFFSET + self.n]);
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

    /// Advances chain `i` of `buf` (`len` chains of N bytes) from position `start[i]` by
    /// `steps[i]`, [`LANES`] chains at a time.
    pub(crate) fn chains(&self, buf: &mut [u8], start: &[u8], steps: &[u8]) {
        let n = self.n;
        let mut todo = (0..buf.len() / n).filter(|&i| steps[i] > 0);
        // Per lane: the chain it works on (if any), its next step, the step it stops at.
        let mut lane: [Option<(usize, u32, u32)>; LANES] = [None; LANES];
        let mut blocks = [[0u8; 64]; LANES];
        let mut load = |slot: &mut Option<(usize, u32, u32)>, block: &mut [u8; 64], buf: &[u8]| {
            *slot = todo.next().map(|i| {
                let mut adrs = Adrs::dgsp(WOTS_HASH);
                adrs.set_chain(i as u32);
                *block = self.second_block(&adrs);
                block[X_OFFSET..X_OFFSET + n].copy_from_slice(&buf[i * n..(i + 1) * n]);
                let j = u32::from(start[i]);
                (i, j, j + u32::from(steps[i]))
            });
        };
        for (slot, block) in lane.iter_mut().zip(blocks.iter_mut()) {
            load(slot, block, buf);
        }
        while lane.iter().any(Option::is_some) {
            let mut states = [self.mid; LANES];
            for (slot, block) in lane.iter().zip(blocks.iter_mut()) {
                if let Some((_, j, _)) = slot {
                    block[COMPRESSED_HASH_OFFSET..COMPRESSED_HASH_OFFSET + 4]
                        .copy_from_slice(&j.to_be_bytes());
                }
            }
            compress_lanes(&mut states, &blocks);
            for ((slot, block), st) in lane.iter_mut().zip(blocks.iter_mut()).zip(&states) {
                let Some((i, j, end)) = slot else { continue };
                write_output(st, &mut block[X_OFFSET..X_OFFSET + n]);
                *j += 1;
                if *j == *end {
                    let i = *i;
                    buf[i * n..(i + 1) * n].copy_from_slice(&block[X_OFFSET..X_OFFSET + n]);
                    load(slot, block, buf);
                }
            }
        }
    }

    /// The secret chain starts `PRF(rho, ADRS{type=WOTS_PRF, chain=i}, sk_seed)` for every
    /// chain `i` of `out` (`len * N` bytes), [`LANES`] at a time.
    pub(crate) fn prf_all(&self, sk_seed: &[u8], out: &mut [u8]) {
        let n = self.n;
        let len = out.len() / n;
        for first in (0..len).step_by(LANES) {
            let mut blocks = [[0u8; 64]; LANES];
            for (k, block) in blocks.iter_mut().enumerate() {
                let mut adrs = Adrs::dgsp(WOTS_PRF);
                adrs.set_chain((first + k).min(len - 1) as u32);
                *block = self.second_block(&adrs);
                block[X_OFFSET..X_OFFSET + n].copy_from_slice(sk_seed);
            }
            let mut states = [self.mid; LANES];
            compress_lanes(&mut states, &blocks);
            for (k, st) in states.iter().enumerate().take(len - first) {
                write_output(st, &mut out[(first + k) * n..(first + k + 1) * n]);
            }
            zeroize::Zeroize::zeroize(&mut blocks);
        }
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

/// The first `out.len()` bytes (a multiple of 4) of a SHA-256 state, big-endian: the
/// truncated hash output.
#[inline(always)]
fn write_output(st: &[u32; 8], out: &mut [u8]) {
    for (bytes, w) in out.chunks_exact_mut(4).zip(st) {
        bytes.copy_from_slice(&w.to_be_bytes());
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
