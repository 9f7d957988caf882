//! The SHA-2 tweakable hashes (SPHINCS+ v3.1 "simple", as in PQClean).
//!
//! `F` is always SHA-256, `H` and `T_l` are SHA-256 for `N = 16` and SHA-512 otherwise,
//! each over `PK.seed || zeros || ADRSc || x`, where `PK.seed || zeros` fills exactly one
//! block (64 bytes for SHA-256, 128 for SHA-512). That block's compression is done once per
//! key; an `F` or `H` call is then one compression of `ADRSc || x || padding`.
//! `H_msg` is MGF1-SHA-X(`R || PK.seed || SHA-X(R || PK.seed || PK.root || M)`).

use sha2::digest::generic_array::GenericArray;
use sha2::{compress256, compress512, Digest, Sha256, Sha512};

use super::{
    gather, longest_first, longest_first_by, run_chains, run_wots_chains, ChainJob, Kernel,
    WotsChains, MAX_LANES,
};
use crate::hashes::lanes::compress_lanes;
use crate::hashes::lanes::LANES;
use crate::hashes::sha256_x16::{
    chain_steps_x16, compress_x16, compress_x16_from, ChainLanes, CHAIN_WORD, LANES_X16,
};
use crate::hashes::sha512_lanes::compress512_x4;
use crate::hashes::{wide_kernels, IV256};
use crate::sphincs::address::{Address, COMPRESSED_WORD7};

const IV512: [u64; 8] = [
    0x6a09e667f3bcc908,
    0xbb67ae8584caa73b,
    0x3c6ef372fe94f82b,
    0xa54ff53a5f1d36f1,
    0x510e527fade682d1,
    0x9b05688c2b3e6c1f,
    0x1f83d9abfb41bd6b,
    0x5be0cd19137e2179,
];

/// Where `x` starts in the block: after the 22-byte compressed address.
const X: usize = 22;
// The chain kernel's layout: the value two bytes into word `CHAIN_WORD`, after the hash
// address (bytes 18..22, whose low two bytes the kernel increments).
const _: () = assert!(X == 4 * CHAIN_WORD + 2 && COMPRESSED_WORD7 + 4 == X);

/// The four lanes the SHA-2 kernels hash (the drivers never activate the others).
#[inline(always)]
fn first_lanes<T>(lanes: &mut [T; MAX_LANES]) -> &mut [T; LANES] {
    const _: () = assert!(LANES <= MAX_LANES);
    lanes
        .first_chunk_mut::<LANES>()
        .expect("MAX_LANES >= LANES, checked at compile time")
}

/// Busy lanes up to which several four-lane SHA-NI calls beat one sixteen-lane AVX-512F
/// call: on the 2-core Sapphire Rapids VM of 2026-11-27 a four-lane call costs about 4 ×
/// 28 ns and a sixteen-lane one about 16 × 23 ns (`cargo bench -p dgsp-core --bench sha256`),
/// so three four-lane calls (twelve lanes) still cost less than one wide call.
const SHANI_UP_TO: usize = 12;

/// Busy lanes up to which the chain kernel's tail goes to four-lane SHA-NI calls: a step of
/// the chain kernel costs about 16 × 18 ns whatever the busy lanes, two four-lane SHA-NI
/// calls about 2 × 4 × 30 ns, three about 360 ns (`cargo bench -p dgsp-core --bench sha256`,
/// `avx512-x16-chain` and `sha-ni-x4`, on the 2-core Sapphire Rapids VM of 2026-11-27).
const CHAIN_SHANI_UP_TO: usize = 8;

/// One-block SHA-256 calls (`F`, and `H` for `N = 16`) from the seeded midstate.
#[derive(Clone)]
pub(crate) struct Sha256Kernel {
    n: usize,
    mid: [u32; 8],
    /// Lanes per call: sixteen where the CPU has AVX-512F (`compress_x16`), else four.
    lanes: usize,
}

impl Sha256Kernel {
    /// Whether this kernel runs sixteen lanes, and so the chain kernel.
    fn wide(&self) -> bool {
        self.lanes == LANES_X16
    }

    /// Advances every chain of a verifier's `jobs` (public values: nothing is wiped). With
    /// sixteen lanes, on the chain kernel (see [`drive`](Self::drive)); otherwise
    /// [`run_chains`].
    pub(crate) fn chains(&self, jobs: &mut [ChainJob]) {
        match self.n {
            16 => self.chains_n::<16>(jobs),
            24 => self.chains_n::<24>(jobs),
            _ => self.chains_n::<32>(jobs),
        }
    }

    /// [`chains`](Self::chains) for `N` known at compile time (`self.n == N`).
    fn chains_n<const N: usize>(&self, jobs: &mut [ChainJob]) {
        // The order only the chain kernel needs; with four lanes, or with no more chains
        // than a tail, `run_chains` does it all.
        let order = if self.wide() {
            longest_first(jobs)
        } else {
            Vec::new()
        };
        if order.len() <= CHAIN_SHANI_UP_TO {
            run_chains(self, N, jobs, false, |_| None, &mut []);
            return;
        }
        self.drive::<N, _>(&mut JobChains(jobs), order);
    }

    /// Advances the WOTS+ signatures' chains `chains` over their values `values` (a
    /// verifier's: public), see [`Hasher::wots_chains`](super::Hasher::wots_chains). With
    /// sixteen lanes the values go straight into the chain kernel's words and back, with no
    /// list of [`ChainJob`]s; otherwise [`run_wots_chains`].
    pub(crate) fn wots_chains(&self, chains: &WotsChains<'_>, values: &mut [u8]) {
        match self.n {
            16 => self.wots_chains_n::<16>(chains, values),
            24 => self.wots_chains_n::<24>(chains, values),
            _ => self.wots_chains_n::<32>(chains, values),
        }
    }

    /// [`wots_chains`](Self::wots_chains) for `N` known at compile time (`self.n == N`).
    fn wots_chains_n<const N: usize>(&self, chains: &WotsChains<'_>, values: &mut [u8]) {
        // As in `chains_n`.
        let order = if self.wide() {
            longest_first_by(chains.starts.len(), |i| usize::from(chains.steps(i)))
        } else {
            Vec::new()
        };
        if order.len() <= CHAIN_SHANI_UP_TO {
            run_wots_chains(self, N, chains, values);
            return;
        }
        self.drive::<N, _>(&mut ValueChains { chains, values }, order);
    }

    /// Runs the chains `order` names (longest first, none of zero steps) on the chain kernel
    /// (`hashes::sha256_x16::chain_steps_x16`): the blocks stay as words between steps and a
    /// kernel call runs until a lane's chain ends, when the lane is refilled with the next;
    /// once no chain waits and at most [`CHAIN_SHANI_UP_TO`] lanes are busy, the rest finish
    /// from where they are on SHA-NI ([`finish`](Self::finish)).
    fn drive<const N: usize, C: Chains<N>>(&self, chains: &mut C, order: Vec<usize>) {
        let mut next = order.into_iter();
        let mut lanes = empty_lanes::<N>();
        let mut slots: [Option<usize>; LANES_X16] = [None; LANES_X16];
        for (lane, slot) in slots.iter_mut().enumerate() {
            *slot = next.next();
            if let Some(i) = *slot {
                chains.load(i, &mut lanes, lane);
            }
        }
        loop {
            let waiting = next.len() > 0;
            let stop = if waiting {
                LANES_X16 - 1
            } else {
                CHAIN_SHANI_UP_TO
            };
            chain_steps_x16(&self.mid, &mut lanes, N / 4, stop);
            for (lane, slot) in slots.iter_mut().enumerate() {
                if lanes.steps[lane] > 0 {
                    continue;
                }
                if let Some(i) = slot.take() {
                    chains.done(i, &lane_value::<N>(&lanes, lane));
                    *slot = next.next();
                    if let Some(j) = *slot {
                        chains.load(j, &mut lanes, lane);
                    }
                }
            }
            if !waiting {
                break;
            }
        }
        self.finish::<N, C>(chains, &lanes, &slots);
    }

    /// Finishes the chains still running when the chain kernel stopped (lane `l` runs chain
    /// `slots[l]`; at most [`CHAIN_SHANI_UP_TO`] of them), from the blocks their lanes' words
    /// hold, on four-lane SHA-NI calls: a step compresses the busy blocks, four at a time,
    /// writes each output over the block's value and increments its hash address, and a
    /// chain that ends leaves the busy ones at the front.
    fn finish<const N: usize, C: Chains<N>>(
        &self,
        chains: &mut C,
        lanes: &ChainLanes,
        slots: &[Option<usize>; LANES_X16],
    ) {
        let mut blocks = [[0u8; 64]; LANES_X16];
        let mut left = [0u32; LANES_X16];
        let mut which = [0usize; LANES_X16];
        let mut busy = 0;
        for (lane, slot) in slots.iter().enumerate() {
            if let Some(i) = *slot {
                let block = blocks[busy].as_chunks_mut::<4>().0;
                for (bytes, w) in block.iter_mut().zip(&lanes.words) {
                    *bytes = w[lane].to_be_bytes();
                }
                left[busy] = lanes.steps[lane];
                which[busy] = i;
                busy += 1;
            }
        }
        while busy > 0 {
            for group in blocks[..busy.next_multiple_of(LANES)]
                .as_chunks_mut::<LANES>()
                .0
            {
                let mut states = [self.mid; LANES];
                compress_lanes(&mut states, group);
                for (block, st) in group.iter_mut().zip(&states) {
                    write256(st, &mut block[X..X + N]);
                    let at = COMPRESSED_WORD7 + 2;
                    let next = u16::from_be_bytes([block[at], block[at + 1]]).wrapping_add(1);
                    block[at..at + 2].copy_from_slice(&next.to_be_bytes());
                }
            }
            let mut j = 0;
            while j < busy {
                left[j] = left[j].saturating_sub(1);
                if left[j] == 0 {
                    chains.done(which[j], &blocks[j][X..X + N]);
                    busy -= 1;
                    blocks.swap(j, busy);
                    left.swap(j, busy);
                    which.swap(j, busy);
                } else {
                    j += 1;
                }
            }
        }
    }
}

/// The chains a [`Sha256Kernel::drive`] runs, named by index.
trait Chains<const N: usize> {
    /// Puts chain `i` as it stands (its value, first position and steps) into `lane` of
    /// the chain kernel's words, with [`load_lane`].
    fn load(&self, i: usize, lanes: &mut ChainLanes, lane: usize);
    /// Chain `i` ended with `value` (`N` bytes).
    fn done(&mut self, i: usize, value: &[u8]);
}

/// [`ChainJob`]s as the driver's chains.
struct JobChains<'a>(&'a mut [ChainJob]);

impl<const N: usize> Chains<N> for JobChains<'_> {
    #[inline]
    fn load(&self, i: usize, lanes: &mut ChainLanes, lane: usize) {
        let job = &self.0[i];
        let steps = job.end.saturating_sub(job.start);
        load_lane::<N>(lanes, lane, &job.adrs, job.start, steps, &job.x[..N]);
    }

    fn done(&mut self, i: usize, value: &[u8]) {
        self.0[i].x[..N].copy_from_slice(value);
    }
}

/// WOTS+ signatures' chains over their values in place, as the driver's chains.
struct ValueChains<'a, 'b> {
    chains: &'a WotsChains<'b>,
    values: &'a mut [u8],
}

impl<const N: usize> Chains<N> for ValueChains<'_, '_> {
    #[inline]
    fn load(&self, i: usize, lanes: &mut ChainLanes, lane: usize) {
        let c = self.chains;
        let x = &self.values[i * N..(i + 1) * N];
        load_lane::<N>(lanes, lane, &c.adrs(i), c.starts[i], c.steps(i), x);
    }

    fn done(&mut self, i: usize, value: &[u8]) {
        self.values[i * N..(i + 1) * N].copy_from_slice(value);
    }
}

/// Idle chain-kernel lanes whose padding words (the zeros after the value's word, and the
/// bit length) are set for `N`-byte values: [`load_lane`] writes only the other words, and
/// neither it nor the kernel ever writes these.
fn empty_lanes<const N: usize>() -> ChainLanes {
    let mut lanes = ChainLanes {
        words: [[0; LANES_X16]; 16],
        steps: [0; LANES_X16],
    };
    lanes.words[15] = [((64 + X + N) * 8) as u32; LANES_X16];
    lanes
}

/// Writes a chain's first block (as [`Kernel::load`] makes it from `adrs` and `x`, `N`
/// bytes, with the hash address set to `start`) into `lane` of the chain kernel's words
/// (but for the padding words, which [`empty_lanes`] set), and its `steps`. The address is
/// put in words from its fields, not through `Address::compressed` (which measured 7 %
/// slower on a batch: this runs once per chain); `chain_lane_words` checks the two agree.
/// Inlined into the callers, so that a chain's fields go straight into the words (a
/// `ChainJob` built and read back through memory stalled on store forwarding).
#[inline(always)]
fn load_lane<const N: usize>(
    lanes: &mut ChainLanes,
    lane: usize,
    a: &Address,
    start: u8,
    steps: u8,
    x: &[u8],
) {
    let w = &mut lanes.words;
    // ADRSc: layer (1), tree (8), type (1), key pair, chain, hash (4 each), then x, 0x80,
    // zeros and the bit length.
    w[0][lane] = (u32::from(a.layer) << 24) | (a.tree >> 40) as u32;
    w[1][lane] = (a.tree >> 8) as u32;
    w[2][lane] = ((a.tree as u32) << 24) | (u32::from(a.kind) << 16) | (a.keypair >> 16);
    w[3][lane] = (a.keypair << 16) | (a.word6 >> 16);
    w[4][lane] = a.word6 << 16; // and the hash address's high half: 0
    w[CHAIN_WORD][lane] = u32::from_be_bytes([0, start, x[0], x[1]]);
    for k in 1..N / 4 {
        w[CHAIN_WORD + k][lane] =
            u32::from_be_bytes([x[4 * k - 2], x[4 * k - 1], x[4 * k], x[4 * k + 1]]);
    }
    w[CHAIN_WORD + N / 4][lane] = u32::from_be_bytes([x[N - 2], x[N - 1], 0x80, 0]);
    lanes.steps[lane] = u32::from(steps);
}

/// The chained value (block bytes `X..X + N`) of `lane`.
fn lane_value<const N: usize>(lanes: &ChainLanes, lane: usize) -> [u8; N] {
    let mut block = [0u8; 64];
    for (bytes, w) in block.as_chunks_mut::<4>().0.iter_mut().zip(&lanes.words) {
        *bytes = w[lane].to_be_bytes();
    }
    let mut out = [0u8; N];
    out.copy_from_slice(&block[X..X + N]);
    out
}

impl Kernel for Sha256Kernel {
    type Lane = [u8; 64];

    #[inline]
    fn load(&self, adrs: &Address, x: &[u8]) -> [u8; 64] {
        let mut b = [0u8; 64];
        self.load_into(&mut b, adrs, x);
        b
    }

    /// In place, and `x` copied at a size the match makes known at compile time (no `memcpy`
    /// call).
    #[inline]
    fn load_into(&self, b: &mut [u8; 64], adrs: &Address, x: &[u8]) {
        b.fill(0);
        b[..X].copy_from_slice(&adrs.compressed());
        match x.len() {
            16 => b[X..X + 16].copy_from_slice(x),
            24 => b[X..X + 24].copy_from_slice(x),
            32 => b[X..X + 32].copy_from_slice(x),
            len => b[X..X + len].copy_from_slice(x),
        }
        b[X + x.len()] = 0x80;
        b[56..].copy_from_slice(&(((64 + X + x.len()) * 8) as u64).to_be_bytes());
    }

    #[inline(always)]
    fn set_word7(&self, lane: &mut [u8; 64], v: u32) {
        lane[COMPRESSED_WORD7..COMPRESSED_WORD7 + 4].copy_from_slice(&v.to_be_bytes());
    }

    #[inline(always)]
    fn lanes(&self) -> usize {
        self.lanes
    }

    /// One busy lane: one compression. Up to four: the four-lane SHA-NI kernel on them
    /// (gathered from wherever they are). Up to [`SHANI_UP_TO`]: that kernel on each four
    /// of them in turn. More: the sixteen-lane AVX-512F kernel on all.
    #[inline]
    fn run(&self, lanes: &mut [[u8; 64]; MAX_LANES], active: [bool; MAX_LANES]) {
        let n = self.n;
        let busy = active.iter().filter(|a| **a).count();
        if busy == 1 {
            // One busy lane: a single compression beats a four-lane call.
            let i = active.iter().position(|a| *a).unwrap_or(0);
            self.run_one(&mut lanes[i]);
            return;
        }
        if busy > LANES && busy <= SHANI_UP_TO {
            // A tail of a wide call: four-lane calls, four busy lanes at a time.
            let mut rest = active;
            while rest.contains(&true) {
                let (which, blocks) = gather::<_, LANES>(lanes, &rest);
                let count = rest.iter().filter(|a| **a).count().min(LANES);
                let mut states = [self.mid; LANES];
                compress_lanes(&mut states, &blocks);
                for (&i, st) in which.iter().zip(&states).take(count) {
                    write256(st, &mut lanes[i][X..X + n]);
                    rest[i] = false;
                }
            }
            return;
        }
        if busy > LANES {
            // Only with sixteen lanes per call (`self.lanes`): from the midstate, only the
            // output's `N / 4` words stored.
            let mut out = [[0u32; 8]; LANES_X16];
            compress_x16_from(&self.mid, lanes, &mut out, n / 4);
            for ((lane, st), a) in lanes.iter_mut().zip(&out).zip(active) {
                if a {
                    write256(st, &mut lane[X..X + n]);
                }
            }
            return;
        }
        if active[LANES..].contains(&true) {
            // Busy lanes beyond the first four: gathered into one four-lane call.
            let (which, blocks) = gather::<_, LANES>(lanes, &active);
            let mut states = [self.mid; LANES];
            compress_lanes(&mut states, &blocks);
            for (&i, st) in which.iter().zip(&states).take(busy) {
                write256(st, &mut lanes[i][X..X + n]);
            }
            return;
        }
        let lanes = first_lanes(lanes);
        let mut states = [self.mid; LANES];
        compress_lanes(&mut states, lanes);
        for ((lane, st), a) in lanes.iter_mut().zip(&states).zip(active) {
            if a {
                write256(st, &mut lane[X..X + n]);
            }
        }
    }

    #[inline]
    fn run_one(&self, lane: &mut [u8; 64]) {
        let mut st = self.mid;
        compress256(&mut st, &[GenericArray::clone_from_slice(lane)]);
        write256(&st, &mut lane[X..X + self.n]);
    }

    #[inline(always)]
    fn output(&self, lane: &[u8; 64], out: &mut [u8]) {
        out.copy_from_slice(&lane[X..X + self.n]);
    }
}

/// One-block SHA-512 `H` calls for `N = 24, 32`, four lanes at a time
/// (`hashes::sha512_lanes`).
#[derive(Clone)]
pub(crate) struct Sha512Kernel {
    n: usize,
    mid: [u64; 8],
}

impl Kernel for Sha512Kernel {
    type Lane = [u8; 128];

    #[inline]
    fn load(&self, adrs: &Address, x: &[u8]) -> [u8; 128] {
        let mut b = [0u8; 128];
        b[..X].copy_from_slice(&adrs.compressed());
        b[X..X + x.len()].copy_from_slice(x);
        b[X + x.len()] = 0x80;
        b[112..].copy_from_slice(&(((128 + X + x.len()) * 8) as u128).to_be_bytes());
        b
    }

    fn set_word7(&self, lane: &mut [u8; 128], v: u32) {
        lane[COMPRESSED_WORD7..COMPRESSED_WORD7 + 4].copy_from_slice(&v.to_be_bytes());
    }

    fn lanes(&self) -> usize {
        LANES
    }

    fn run(&self, lanes: &mut [[u8; 128]; MAX_LANES], active: [bool; MAX_LANES]) {
        let n = self.n;
        if active.iter().filter(|a| **a).count() == 1 {
            let i = active.iter().position(|a| *a).unwrap_or(0);
            self.run_one(&mut lanes[i]);
            return;
        }
        let lanes = first_lanes(lanes);
        let mut states = [self.mid; LANES];
        compress512_x4(&mut states, lanes);
        for ((lane, st), a) in lanes.iter_mut().zip(&states).zip(active) {
            if a {
                write512(st, &mut lane[X..X + n]);
            }
        }
    }

    fn run_one(&self, lane: &mut [u8; 128]) {
        let mut st = self.mid;
        compress512(&mut st, &[GenericArray::clone_from_slice(&lane[..])]);
        write512(&st, &mut lane[X..X + self.n]);
    }

    fn output(&self, lane: &[u8; 128], out: &mut [u8]) {
        out.copy_from_slice(&lane[X..X + self.n]);
    }
}

/// The first `out.len()` bytes (a multiple of 8) of a SHA-512 state, big-endian.
#[inline(always)]
fn write512(st: &[u64; 8], out: &mut [u8]) {
    for (bytes, w) in out.chunks_exact_mut(8).zip(st) {
        bytes.copy_from_slice(&w.to_be_bytes());
    }
}

/// The first `out.len()` bytes (a multiple of 4) of a SHA-256 state, big-endian.
#[inline(always)]
fn write256(st: &[u32; 8], out: &mut [u8]) {
    for (bytes, w) in out.chunks_exact_mut(4).zip(st) {
        bytes.copy_from_slice(&w.to_be_bytes());
    }
}

/// The SHA-2 hashes of one public key.
#[derive(Clone)]
pub(crate) struct Sha2Hasher {
    n: usize,
    seed: [u8; 32],
    f: Sha256Kernel,
    h512: Sha512Kernel,
    /// SHA-256 primed with `PK.seed || zeros(64 - N)` (`T_l` for `N = 16`).
    t256: Sha256,
    /// SHA-512 primed with `PK.seed || zeros(128 - N)` (`T_l` for `N = 24, 32`).
    t512: Sha512,
}

impl Sha2Hasher {
    pub(crate) fn new(pk_seed: &[u8]) -> Self {
        let n = pk_seed.len();
        let mut seed = [0u8; 32];
        seed[..n].copy_from_slice(pk_seed);
        let mut b64 = [0u8; 64];
        b64[..n].copy_from_slice(pk_seed);
        let mut b128 = [0u8; 128];
        b128[..n].copy_from_slice(pk_seed);
        let mut mid256 = IV256;
        compress256(&mut mid256, &[GenericArray::clone_from_slice(&b64)]);
        let mut mid512 = IV512;
        compress512(&mut mid512, &[GenericArray::clone_from_slice(&b128)]);
        Sha2Hasher {
            n,
            seed,
            f: Sha256Kernel {
                n,
                mid: mid256,
                lanes: if wide_kernels() { LANES_X16 } else { LANES },
            },
            h512: Sha512Kernel { n, mid: mid512 },
            t256: Sha256::new_with_prefix(b64),
            t512: Sha512::new_with_prefix(b128),
        }
    }

    pub(crate) fn f(&self) -> &Sha256Kernel {
        &self.f
    }

    pub(crate) fn h512(&self) -> &Sha512Kernel {
        &self.h512
    }

    pub(crate) fn t(&self, adrs: &Address, input: &[u8], out: &mut [u8]) {
        let c = adrs.compressed();
        if self.n == 16 {
            let d = self
                .t256
                .clone()
                .chain_update(c)
                .chain_update(input)
                .finalize();
            out.copy_from_slice(&d[..self.n]);
        } else {
            let d = self
                .t512
                .clone()
                .chain_update(c)
                .chain_update(input)
                .finalize();
            out.copy_from_slice(&d[..self.n]);
        }
    }

    /// `T_l` of `adrs.len()` inputs of equal length (`inputs` holds them one after the
    /// other), through the lanes: one multi-block hash per lane, a compression of every
    /// lane per block. `outs[i]` gets input `i`'s `N` bytes.
    pub(crate) fn t_many(&self, adrs: &[Address], inputs: &[u8], outs: &mut [[u8; 32]]) {
        if let ([a], [out]) = (adrs, &mut *outs) {
            self.t(a, inputs, &mut out[..self.n]);
            return;
        }
        let len = inputs.len() / adrs.len().max(1);
        if self.n == 16 {
            // Sixteen lanes where the CPU has them and more than four inputs wait.
            let width = if adrs.len() > LANES {
                self.f.lanes
            } else {
                LANES
            };
            let blocks = (X + len + 9).div_ceil(64);
            let mut msgs = vec![0u8; LANES_X16 * blocks * 64];
            for (group, (adrs, outs)) in adrs.chunks(width).zip(outs.chunks_mut(width)).enumerate()
            {
                pad_tails(
                    &mut msgs,
                    64,
                    blocks,
                    adrs,
                    &inputs[group * width * len..],
                    len,
                );
                let block = |k: usize, b: usize| -> [u8; 64] {
                    let at = k * blocks * 64 + b * 64;
                    msgs[at..at + 64].try_into().unwrap_or([0; 64])
                };
                let mut states = [self.f.mid; LANES_X16];
                for b in 0..blocks {
                    if width == LANES_X16 {
                        compress_x16(&mut states, &core::array::from_fn(|k| block(k, b)));
                    } else {
                        compress_lanes(
                            first_lanes(&mut states),
                            &core::array::from_fn(|k| block(k, b)),
                        );
                    }
                }
                for (out, st) in outs.iter_mut().zip(&states) {
                    write256(st, &mut out[..self.n]);
                }
            }
        } else {
            let blocks = (X + len + 17).div_ceil(128);
            let mut msgs = vec![0u8; LANES * blocks * 128];
            for (group, (adrs, outs)) in adrs.chunks(LANES).zip(outs.chunks_mut(LANES)).enumerate()
            {
                pad_tails(
                    &mut msgs,
                    128,
                    blocks,
                    adrs,
                    &inputs[group * LANES * len..],
                    len,
                );
                let mut states = [self.h512.mid; LANES];
                for b in 0..blocks {
                    let block: [[u8; 128]; LANES] = core::array::from_fn(|k| {
                        let at = k * blocks * 128 + b * 128;
                        msgs[at..at + 128].try_into().unwrap_or([0; 128])
                    });
                    compress512_x4(&mut states, &block);
                }
                for (out, st) in outs.iter_mut().zip(&states) {
                    write512(st, &mut out[..self.n]);
                }
            }
        }
    }

    pub(crate) fn h_msg(&self, r: &[u8], pk: &[u8], msg: [&[u8]; 2], out: &mut [u8]) {
        let seed = &self.seed[..self.n];
        if self.n == 16 {
            let inner = Sha256::new()
                .chain_update(r)
                .chain_update(pk)
                .chain_update(msg[0])
                .chain_update(msg[1])
                .finalize();
            mgf1::<Sha256>(&[r, seed, &inner], out);
        } else {
            let inner = Sha512::new()
                .chain_update(r)
                .chain_update(pk)
                .chain_update(msg[0])
                .chain_update(msg[1])
                .finalize();
            mgf1::<Sha512>(&[r, seed, &inner], out);
        }
    }
}

/// The padded tails of `T_l` calls after the seeded first block (`block` bytes: 64 for
/// SHA-256, 128 for SHA-512): `ADRSc || input || 0x80 || zeros || bit length` (a length
/// field of `block / 8` bytes, counting the seeded block), `blocks` blocks each, call `k`'s
/// (address `adrs[k]`, input `inputs[k * len..][..len]`) into the `k`-th run of `msgs`.
fn pad_tails(
    msgs: &mut [u8],
    block: usize,
    blocks: usize,
    adrs: &[Address],
    inputs: &[u8],
    len: usize,
) {
    let total = (((block + X + len) * 8) as u128).to_be_bytes();
    for ((m, a), input) in msgs
        .chunks_exact_mut(blocks * block)
        .zip(adrs)
        .zip(inputs.chunks_exact(len))
    {
        m.fill(0);
        m[..X].copy_from_slice(&a.compressed());
        m[X..X + len].copy_from_slice(input);
        m[X + len] = 0x80;
        m[blocks * block - block / 8..].copy_from_slice(&total[16 - block / 8..]);
    }
}

/// MGF1 with hash `D` over the concatenation of `seed`: `D(seed || be32(0)) ||
/// D(seed || be32(1)) || ...`, truncated to `out.len()`.
fn mgf1<D: Digest + Clone>(seed: &[&[u8]], out: &mut [u8]) {
    let mut base = D::new();
    for part in seed {
        base.update(part);
    }
    let size = <D as Digest>::output_size();
    for (counter, chunk) in out.chunks_mut(size).enumerate() {
        let block = base
            .clone()
            .chain_update((counter as u32).to_be_bytes())
            .finalize();
        chunk.copy_from_slice(&block[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chain kernel's lane words are the block `Kernel::load` makes (hash address set
    /// to the start), read big-endian, for every `N`; the value reads back from them.
    fn load_words_is_load<const N: usize>() {
        let k = Sha2Hasher::new(&[9u8; N]).f;
        let mut lanes = empty_lanes::<N>();
        for lane in [0usize, 7, 15] {
            let x: [u8; 32] = core::array::from_fn(|i| (i * 37 + lane) as u8 | 0x81);
            let job = ChainJob {
                adrs: Address {
                    layer: 0xa5,
                    tree: 0x0123_4567_89ab_cdef,
                    kind: 0,
                    keypair: 0xfedc_ba98,
                    word6: 0x7654_3210,
                    word7: 0xffff_ffff,
                },
                x,
                start: 3 + lane as u8 % 7,
                end: 15,
            };
            load_lane::<N>(
                &mut lanes,
                lane,
                &job.adrs,
                job.start,
                15 - job.start,
                &x[..N],
            );
            let mut block = k.load(&job.adrs, &job.x[..N]);
            k.set_word7(&mut block, u32::from(job.start));
            let words: Vec<u32> = lanes.words.iter().map(|w| w[lane]).collect();
            let want: Vec<u32> = block
                .chunks_exact(4)
                .map(|b| u32::from_be_bytes(b.try_into().unwrap()))
                .collect();
            assert_eq!(words, want, "N = {N}, lane {lane}");
            assert_eq!(lanes.steps[lane], u32::from(15 - job.start));
            assert_eq!(lane_value::<N>(&lanes, lane)[..], job.x[..N]);
        }
    }

    /// The WOTS+ chains on the chain kernel (values in place) equal the same chains as jobs
    /// on the four-lane scheduler, for one and several signatures, with chains nearly all
    /// of zero steps (the small path) and random ones.
    #[test]
    fn wots_chains_equal_the_chain_jobs() {
        for n in [16usize, 24, 32] {
            let len = 2 * n + 3;
            let mut h = Sha2Hasher::new(&vec![3u8; n]);
            let mut seed = 17u32;
            let mut byte = move || {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (seed >> 16) as u8
            };
            for count in [1usize, 2, 5] {
                let adrs: Vec<Address> = (0..count)
                    .map(|i| Address::new(i as u8 + 1, 0x1234_5678 + i as u64, 0, i as u32 * 3))
                    .collect();
                // The first signature's chains start at the end but for three.
                let starts: Vec<u8> = (0..count * len)
                    .map(|i| if i < len - 3 { 15 } else { byte() % 16 })
                    .collect();
                let chains = WotsChains {
                    len,
                    adrs: &adrs,
                    starts: &starts,
                };
                let values: Vec<u8> = (0..count * len * n).map(|_| byte()).collect();
                h.f.lanes = LANES;
                let mut want = values.clone();
                run_wots_chains(&h.f, n, &chains, &mut want);
                h.f.lanes = if wide_kernels() { LANES_X16 } else { LANES };
                let mut got = values.clone();
                h.f.wots_chains(&chains, &mut got);
                assert_eq!(got, want, "N = {n}: {count} signatures");
                assert_ne!(got, values, "N = {n}: nothing ran");
            }
        }
    }

    #[test]
    fn chain_lane_words() {
        load_words_is_load::<16>();
        load_words_is_load::<24>();
        load_words_is_load::<32>();
    }

    /// The flags with exactly the lanes `on` active.
    fn active(on: &[usize]) -> [bool; MAX_LANES] {
        core::array::from_fn(|i| on.contains(&i))
    }

    fn adrs() -> Address {
        Address {
            layer: 3,
            tree: 0x1234_5678_9abc,
            kind: 2,
            keypair: 77,
            word6: 4,
            word7: 11,
        }
    }

    /// The `F` kernel on distinct inputs (each lane its own hash address) with every lane
    /// busy and thirteen (sixteen-lane path where the CPU has AVX-512F), twelve and five
    /// (four-lane calls in turn), four of them scattered (the gathered four-lane path), two,
    /// and one.
    #[test]
    fn f_lanes_hash_their_own_inputs() {
        let n = 16;
        let seed: Vec<u8> = (1..=n as u8).collect();
        let x: Vec<u8> = (0..n).map(|i| (i * 5 + 1) as u8).collect();
        let h = Sha2Hasher::new(&seed);
        let base = adrs();
        let mut pre64 = seed.clone();
        pre64.resize(64, 0);
        let all: Vec<usize> = (0..MAX_LANES).collect();
        let twelve: Vec<usize> = (0..MAX_LANES).filter(|i| i % 4 != 1).collect();
        let thirteen: Vec<usize> = (0..13).map(|i| (i * 5) % MAX_LANES).collect();
        let sets: [&[usize]; 7] = [
            &all,
            &thirteen,
            &twelve,
            &[0, 3, 6, 9, 12],
            &[1, 7, 11, 15],
            &[2, 5],
            &[13],
        ];
        for on in sets {
            let on: Vec<usize> = on.iter().copied().filter(|&i| i < h.f.lanes()).collect();
            let mut lanes = [h.f.load(&base, &x); MAX_LANES];
            for (i, lane) in lanes.iter_mut().enumerate() {
                h.f.set_word7(lane, 200 + i as u32);
            }
            h.f.run(&mut lanes, active(&on));
            for &i in &on {
                let mut got = vec![0u8; n];
                h.f.output(&lanes[i], &mut got);
                let a = Address {
                    word7: 200 + i as u32,
                    ..base
                };
                let want = Sha256::new()
                    .chain_update(&pre64)
                    .chain_update(a.compressed())
                    .chain_update(&x)
                    .finalize();
                assert_eq!(got, want[..n], "lanes {on:?}: lane {i}");
            }
        }
    }

    /// The midstate shortcuts equal hashing the whole spec input.
    #[test]
    fn kernels_equal_plain_sha2() {
        for n in [16usize, 24, 32] {
            let seed: Vec<u8> = (1..=n as u8).collect();
            let x: Vec<u8> = (0..2 * n).map(|i| (i * 7 + 3) as u8).collect();
            let h = Sha2Hasher::new(&seed);
            let a = adrs();
            let mut pre64 = seed.clone();
            pre64.resize(64, 0);
            let mut pre128 = seed.clone();
            pre128.resize(128, 0);
            let c = a.compressed();

            // F
            let mut lanes = [h.f.load(&a, &x[..n]); MAX_LANES];
            h.f.run(&mut lanes, active(&[0, 2, 3]));
            let mut got = vec![0u8; n];
            h.f.output(&lanes[0], &mut got);
            let want = Sha256::new()
                .chain_update(&pre64)
                .chain_update(c)
                .chain_update(&x[..n])
                .finalize();
            assert_eq!(got, want[..n]);
            h.f.output(&lanes[3], &mut got);
            assert_eq!(got, want[..n]);
            // single-lane path
            let mut lanes = [h.f.load(&a, &x[..n]); MAX_LANES];
            h.f.run(&mut lanes, active(&[1]));
            h.f.output(&lanes[1], &mut got);
            assert_eq!(got, want[..n]);

            // H
            let want: Vec<u8> = if n == 16 {
                let mut lanes = [h.f.load(&a, &x); MAX_LANES];
                h.f.run(&mut lanes, active(&[0, 1, 2, 3]));
                h.f.output(&lanes[2], &mut got);
                Sha256::new()
                    .chain_update(&pre64)
                    .chain_update(c)
                    .chain_update(&x)
                    .finalize()
                    .to_vec()
            } else {
                let mut lanes = [h.h512.load(&a, &x); MAX_LANES];
                h.h512.run(&mut lanes, active(&[0, 1, 2, 3]));
                h.h512.output(&lanes[2], &mut got);
                Sha512::new()
                    .chain_update(&pre128)
                    .chain_update(c)
                    .chain_update(&x)
                    .finalize()
                    .to_vec()
            };
            assert_eq!(got, want[..n]);
        }
    }

    #[test]
    fn mgf1_matches_its_definition() {
        let mut out = [0u8; 40];
        mgf1::<Sha256>(&[b"ab", b"c"], &mut out);
        let b0 = Sha256::digest(b"abc\0\0\0\0");
        let b1 = Sha256::digest(b"abc\0\0\0\x01");
        assert_eq!(&out[..32], &b0[..]);
        assert_eq!(&out[32..], &b1[..8]);
    }
}
