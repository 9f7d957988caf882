//! The SHAKE tweakable hashes: `SHAKE256(PK.seed || ADRS || x)`, truncated to `N` bytes.
//!
//! `F` and `H` inputs are at most `32 + 32 + 64 = 128` bytes, less than one 136-byte
//! SHAKE256 block, so each call is exactly one Keccak-f[1600] permutation of an absorbed
//! state. With `N` a multiple of 8, every field is on whole 64-bit lanes: `PK.seed` in lanes
//! `0..N/8`, the address in the next four, `x` after that, then the padding. The lanes
//! holding `PK.seed` (and the padding) are computed once per key and per call kind; a call
//! writes the address and `x` lanes and permutes.

use sha3::digest::{ExtendableOutput, Update, XofReader};
use sha3::Shake256;

use super::{gather, Kernel, MAX_LANES};
use crate::hashes::keccak_lanes::{
    f1600_x4_shared, f1600_x8, f1600_x8_shared, KECCAK_LANES, KECCAK_LANES_X8, SHARED_OUT_LANES,
    SHARED_VAR_LANES,
};
use crate::hashes::wide_kernels;
use crate::sphincs::address::Address;

/// SHAKE256 rate in 64-bit lanes (136 bytes).
const RATE_LANES: usize = 17;

/// One-permutation calls with an `x` of `blocks * N` bytes.
///
/// A lane holds only what differs between calls: the address (four Keccak lanes) and `x`
/// (`blocks * N / 8` lanes), which sit at Keccak lanes `N/8..` of the state; the `PK.seed`
/// lanes and the padding are the kernel's `template`, shared by every call.
#[derive(Clone)]
pub(crate) struct ShakeKernel {
    /// `N / 8`.
    w: usize,
    /// Varying lanes per call: `4 + blocks * w`.
    nvar: usize,
    /// `PK.seed` lanes and padding, everything else zero.
    template: [u64; 25],
    /// Lanes per call: eight where the CPU has AVX-512F (`f1600_x8_shared`), else four.
    lanes: usize,
}

impl ShakeKernel {
    fn new(seed: &[u64; 4], w: usize, blocks: usize) -> Self {
        let mut template = [0u64; 25];
        template[..w].copy_from_slice(&seed[..w]);
        // SHAKE padding: 0x1F right after the message, 0x80 in the rate's last byte.
        template[w + 4 + blocks * w] ^= 0x1F;
        template[RATE_LANES - 1] ^= 0x80 << 56;
        let lanes = if wide_kernels() {
            KECCAK_LANES_X8
        } else {
            KECCAK_LANES
        };
        ShakeKernel {
            w,
            nvar: 4 + blocks * w,
            template,
            lanes,
        }
    }

    /// The whole state of a lane.
    #[inline(always)]
    fn state(&self, lane: &[u64; SHARED_VAR_LANES]) -> [u64; 25] {
        let mut st = self.template;
        st[self.w..self.w + self.nvar].copy_from_slice(&lane[..self.nvar]);
        st
    }
}

impl Kernel for ShakeKernel {
    type Lane = [u64; SHARED_VAR_LANES];

    #[inline]
    fn load(&self, adrs: &Address, x: &[u8]) -> [u64; SHARED_VAR_LANES] {
        let mut lane = [0u64; SHARED_VAR_LANES];
        lane[..4].copy_from_slice(&adrs.lanes());
        for (l, bytes) in lane[4..].iter_mut().zip(x.chunks_exact(8)) {
            *l = u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]));
        }
        lane
    }

    #[inline(always)]
    fn set_word7(&self, lane: &mut [u64; SHARED_VAR_LANES], v: u32) {
        let l = &mut lane[3];
        *l = (*l & 0xFFFF_FFFF) | (u64::from(v.swap_bytes()) << 32);
    }

    #[inline(always)]
    fn lanes(&self) -> usize {
        self.lanes
    }

    /// One busy lane: one permutation. Up to four: the four-state kernel on them (on a CPU
    /// with AVX-512 it costs about 0.65 of the eight-state one). More: the eight-state one,
    /// fed only the lanes that differ.
    #[inline]
    fn run(&self, lanes: &mut [[u64; SHARED_VAR_LANES]; MAX_LANES], active: [bool; MAX_LANES]) {
        let w = self.w;
        let busy = active.iter().filter(|a| **a).count();
        if busy == 1 {
            let i = active.iter().position(|a| *a).unwrap_or(0);
            self.run_one(&mut lanes[i]);
            return;
        }
        if busy <= KECCAK_LANES {
            // The busy lanes (at most four) gathered into one four-state call.
            let (which, gathered) = gather::<_, KECCAK_LANES>(lanes, &active);
            let mut out = [[0u64; SHARED_OUT_LANES]; KECCAK_LANES];
            f1600_x4_shared(&self.template, w, self.nvar, &gathered, &mut out);
            for (&i, o) in which.iter().zip(&out).take(busy) {
                lanes[i][4..4 + w].copy_from_slice(&o[..w]);
            }
            return;
        }
        // More than four busy lanes: only with eight lanes per call (`self.lanes`), so all
        // of them are among the first eight.
        const _: () = assert!(KECCAK_LANES_X8 <= MAX_LANES);
        let eight = lanes
            .first_chunk_mut::<KECCAK_LANES_X8>()
            .expect("MAX_LANES >= 8, checked at compile time");
        let mut out = [[0u64; SHARED_OUT_LANES]; KECCAK_LANES_X8];
        f1600_x8_shared(&self.template, w, self.nvar, eight, &mut out);
        for ((lane, o), a) in eight.iter_mut().zip(&out).zip(active) {
            if a {
                lane[4..4 + w].copy_from_slice(&o[..w]);
            }
        }
    }

    #[inline]
    fn run_one(&self, lane: &mut [u64; SHARED_VAR_LANES]) {
        let mut st = self.state(lane);
        keccak::f1600(&mut st);
        lane[4..4 + self.w].copy_from_slice(&st[..self.w]);
    }

    #[inline(always)]
    fn output(&self, lane: &[u64; SHARED_VAR_LANES], out: &mut [u8]) {
        for (bytes, l) in out.chunks_exact_mut(8).zip(&lane[4..]) {
            bytes.copy_from_slice(&l.to_le_bytes());
        }
    }
}

/// The SHAKE hashes of one public key.
#[derive(Clone)]
pub(crate) struct ShakeHasher {
    f: ShakeKernel,
    h: ShakeKernel,
    /// SHAKE256 after absorbing `PK.seed` (`T_l`).
    t: Shake256,
    /// `PK.seed` (first `N` bytes).
    seed: [u8; 32],
    n: usize,
}

impl ShakeHasher {
    pub(crate) fn new(pk_seed: &[u8]) -> Self {
        let n = pk_seed.len();
        let w = n / 8;
        let mut seed = [0u64; 4];
        for (lane, bytes) in seed.iter_mut().zip(pk_seed.chunks_exact(8)) {
            *lane = u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]));
        }
        let mut t = Shake256::default();
        t.update(pk_seed);
        ShakeHasher {
            f: ShakeKernel::new(&seed, w, 1),
            h: ShakeKernel::new(&seed, w, 2),
            t,
            seed: {
                let mut s = [0u8; 32];
                s[..n].copy_from_slice(pk_seed);
                s
            },
            n,
        }
    }

    pub(crate) fn f(&self) -> &ShakeKernel {
        &self.f
    }

    pub(crate) fn h(&self) -> &ShakeKernel {
        &self.h
    }

    pub(crate) fn t(&self, adrs: &Address, input: &[u8], out: &mut [u8]) {
        let mut h = self.t.clone();
        h.update(&adrs.full());
        h.update(input);
        h.finalize_xof().read(&mut out[..self.n]);
    }
}

impl ShakeHasher {
    /// `T_l` of `adrs.len()` inputs of equal length (`inputs` holds them one after the
    /// other), eight sponges at a time ([`f1600_x8`]: eight states with AVX-512F, else two
    /// four-state calls); a single input takes the one-state path. `outs[i]` gets input
    /// `i`'s `N` bytes.
    pub(crate) fn t_many(&self, adrs: &[Address], inputs: &[u8], outs: &mut [[u8; 32]]) {
        let n = self.n;
        if let ([a], [out]) = (adrs, &mut *outs) {
            self.t(a, inputs, &mut out[..n]);
            return;
        }
        let len = inputs.len() / adrs.len().max(1);
        const RATE: usize = RATE_LANES * 8;
        let msg_len = n + 32 + len;
        let blocks = (msg_len + 1).div_ceil(RATE);
        let mut msgs = vec![0u8; KECCAK_LANES_X8 * blocks * RATE];
        for (group, (adrs, outs)) in adrs
            .chunks(KECCAK_LANES_X8)
            .zip(outs.chunks_mut(KECCAK_LANES_X8))
            .enumerate()
        {
            for (k, a) in adrs.iter().enumerate() {
                let m = &mut msgs[k * blocks * RATE..(k + 1) * blocks * RATE];
                let i = group * KECCAK_LANES_X8 + k;
                m.fill(0);
                m[..n].copy_from_slice(&self.seed[..n]);
                m[n..n + 32].copy_from_slice(&a.full());
                m[n + 32..msg_len].copy_from_slice(&inputs[i * len..(i + 1) * len]);
                m[msg_len] ^= 0x1F;
                m[blocks * RATE - 1] ^= 0x80;
            }
            let mut states = [[0u64; 25]; KECCAK_LANES_X8];
            for b in 0..blocks {
                for (k, st) in states.iter_mut().enumerate() {
                    let block = &msgs[k * blocks * RATE + b * RATE..][..RATE];
                    for (lane, bytes) in st.iter_mut().zip(block.chunks_exact(8)) {
                        *lane ^= u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]));
                    }
                }
                f1600_x8(&mut states);
            }
            for (out, st) in outs.iter_mut().zip(&states) {
                for (bytes, lane) in out[..n].chunks_exact_mut(8).zip(st) {
                    bytes.copy_from_slice(&lane.to_le_bytes());
                }
            }
        }
    }
}

/// `H_msg = SHAKE256(R || PK || M)`, `out.len()` bytes.
pub(crate) fn h_msg(r: &[u8], pk: &[u8], msg: [&[u8]; 2], out: &mut [u8]) {
    let mut h = Shake256::default();
    h.update(r);
    h.update(pk);
    h.update(msg[0]);
    h.update(msg[1]);
    h.finalize_xof().read(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_equal_plain_shake256() {
        for n in [16usize, 24, 32] {
            let seed: Vec<u8> = (1..=n as u8).collect();
            let x: Vec<u8> = (0..2 * n).map(|i| (i * 7 + 3) as u8).collect();
            let h = ShakeHasher::new(&seed);
            let base = Address {
                layer: 3,
                tree: 0x1234_5678_9abc,
                kind: 2,
                keypair: 77,
                word6: 4,
                word7: 11,
            };
            for (k, blocks) in [(&h.f, 1usize), (&h.h, 2)] {
                // Every lane (the eight-state path where the CPU has it), three and four (the
                // four-state path, gathered from scattered lanes), one (a single permutation).
                let sets: [&[usize]; 5] = [
                    &[0, 1, 2, 3, 4, 5, 6, 7],
                    &[0, 2, 3],
                    &[1, 4, 6, 7],
                    &[5],
                    &[0, 1, 2, 3],
                ];
                for on in sets {
                    let on: Vec<usize> = on.iter().copied().filter(|&i| i < k.lanes()).collect();
                    let active: [bool; MAX_LANES] = core::array::from_fn(|i| on.contains(&i));
                    // Each lane a distinct input: its own hash address.
                    let mut lanes = [k.load(&base, &x[..blocks * n]); MAX_LANES];
                    for (i, lane) in lanes.iter_mut().enumerate() {
                        k.set_word7(lane, 100 + i as u32);
                    }
                    k.run(&mut lanes, active);
                    for &i in &on {
                        let mut got = vec![0u8; n];
                        k.output(&lanes[i], &mut got);
                        let a = Address {
                            word7: 100 + i as u32,
                            ..base
                        };
                        let mut want = vec![0u8; n];
                        let mut s = Shake256::default();
                        s.update(&seed);
                        s.update(&a.full());
                        s.update(&x[..blocks * n]);
                        s.finalize_xof().read(&mut want);
                        assert_eq!(got, want, "n {n} blocks {blocks} lanes {on:?}: lane {i}");
                    }
                }
            }
        }
    }
}
