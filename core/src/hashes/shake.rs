//! SPHINCS+ "simple" tweakable hashes for the SHAKE sets.
//!
//! `F(rho, ADRS, x) = SHAKE256(rho || ADRS || x)[..N]` is at most 96 bytes, less than one
//! 136-byte SHAKE256 block, so each chain step is exactly one Keccak-f[1600] permutation.
//! With `N` a multiple of 8 every field sits on whole 64-bit lanes: `rho` in lanes
//! `0..N/8`, the address in the next four, `x` in the `N/8` after that. A chain step
//! copies a template state, writes the step number and `x` into their lanes and permutes;
//! no bytes are shuffled in between.

use sha3::digest::{ExtendableOutput, Update, XofReader};
use sha3::Shake256;

use crate::address::{Adrs, WOTS_HASH, WOTS_PK, WOTS_PRF};
use crate::params::MAX_N;

/// SHAKE256 rate in 64-bit lanes (136 bytes).
const RATE_LANES: usize = 17;

/// The SHAKE tweakable hash of one WOTS+ key.
pub(crate) struct ShakeTh {
    n: usize,
    rho: [u8; MAX_N],
}

impl ShakeTh {
    pub(crate) fn new(rho: &[u8]) -> Self {
        let mut r = [0u8; MAX_N];
        r[..rho.len()].copy_from_slice(rho);
        ShakeTh {
            n: rho.len(),
            rho: r,
        }
    }

    /// Lanes of one absorbed, padded block `rho || adrs || x` with `x` left zero.
    fn template(&self, adrs: &Adrs) -> [u64; 25] {
        let w = self.n / 8;
        let mut st = [0u64; 25];
        for (i, lane) in st.iter_mut().take(w).enumerate() {
            *lane = lane_at(&self.rho, i);
        }
        for i in 0..4 {
            st[w + i] = lane_at(adrs.bytes(), i);
        }
        // SHAKE padding: 0x1F right after the message, 0x80 in the last byte of the rate.
        st[2 * w + 4] ^= 0x1F;
        st[RATE_LANES - 1] ^= 0x80 << 56;
        st
    }

    pub(crate) fn chain(&self, x: &mut [u8], chain: u32, start: u32, steps: u32) {
        if steps == 0 {
            return;
        }
        let w = self.n / 8;
        let mut adrs = Adrs::dgsp(WOTS_HASH);
        adrs.set_chain(chain);
        let template = self.template(&adrs);
        // The last address lane holds `chain` (low half) and `hash` (high half), little-endian.
        let chain_lane = template[w + 3];
        let mut cur = [0u64; MAX_N / 8];
        for (i, lane) in cur.iter_mut().take(w).enumerate() {
            *lane = lane_at(x, i);
        }
        for j in start..start + steps {
            let mut st = template;
            st[w + 3] = chain_lane | (u64::from(j.swap_bytes()) << 32);
            st[w + 4..2 * w + 4].copy_from_slice(&cur[..w]);
            keccak::f1600(&mut st);
            cur[..w].copy_from_slice(&st[..w]);
        }
        for (i, lane) in cur.iter().take(w).enumerate() {
            x[8 * i..8 * i + 8].copy_from_slice(&lane.to_le_bytes());
        }
    }

    /// Advances chain `i` of `buf` (`len` chains of N bytes) from position `start[i]` by
    /// `steps[i]`, one chain after the other.
    pub(crate) fn chains(&self, buf: &mut [u8], start: &[u8], steps: &[u8]) {
        for (i, x) in buf.chunks_exact_mut(self.n).enumerate() {
            self.chain(x, i as u32, u32::from(start[i]), u32::from(steps[i]));
        }
    }

    /// The secret chain starts `PRF(rho, ADRS{type=WOTS_PRF, chain=i}, sk_seed)` for every
    /// chain `i` of `out` (`len * N` bytes).
    pub(crate) fn prf_all(&self, sk_seed: &[u8], out: &mut [u8]) {
        for (i, sk) in out.chunks_exact_mut(self.n).enumerate() {
            self.prf(i as u32, sk_seed, sk);
        }
    }

    fn prf(&self, chain: u32, sk_seed: &[u8], out: &mut [u8]) {
        let w = self.n / 8;
        let mut adrs = Adrs::dgsp(WOTS_PRF);
        adrs.set_chain(chain);
        let mut st = self.template(&adrs);
        for i in 0..w {
            st[w + 4 + i] = lane_at(sk_seed, i);
        }
        keccak::f1600(&mut st);
        for (i, lane) in st.iter().take(w).enumerate() {
            out[8 * i..8 * i + 8].copy_from_slice(&lane.to_le_bytes());
        }
    }

    pub(crate) fn t_pk(&self, ends: &[u8], out: &mut [u8]) {
        let mut h = Shake256::default();
        h.update(&self.rho[..self.n]);
        h.update(Adrs::dgsp(WOTS_PK).bytes());
        h.update(ends);
        h.finalize_xof().read(out);
    }
}

/// The `i`-th little-endian 64-bit lane of `bytes`.
#[inline(always)]
fn lane_at(bytes: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[8 * i..8 * i + 8]);
    u64::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lane-level shortcut must equal SHAKE256 over the spec-defined input.
    #[test]
    fn f_equals_plain_shake256_of_the_spec_input() {
        for n in [16usize, 24, 32] {
            let rho: Vec<u8> = (0..n as u8).collect();
            let x: Vec<u8> = (100..100 + n as u8).collect();
            let th = ShakeTh::new(&rho);
            let mut got = x.clone();
            th.chain(&mut got, 5, 14, 1);

            let mut adrs = Adrs::dgsp(WOTS_HASH);
            adrs.set_chain(5);
            adrs.set_hash(14);
            let mut want = vec![0u8; n];
            let mut h = Shake256::default();
            h.update(&rho);
            h.update(adrs.bytes());
            h.update(&x);
            h.finalize_xof().read(&mut want);
            assert_eq!(got, want);
        }
    }
}
