//! The SPHINCS+ "simple" tweakable hashes `F`, `H`, `T_l` and the message hash `H_msg`,
//! keyed by one public key's `PK.seed`.
//!
//! Everything that depends on `PK.seed` alone is computed once, when the
//! [`VerifyingKey`](super::VerifyingKey) is built: the SHA-256 and SHA-512 midstates of
//! `PK.seed` padded to one block (SHA-2 sets), the Keccak lanes holding `PK.seed` (SHAKE
//! sets). After that, every `F` and `H` call is a single compression or permutation:
//!
//! | family | `F` | `H` |
//! |---|---|---|
//! | SHA-2, N = 16 | 1 SHA-256 block (22 + 16 + 9 <= 64) | 1 SHA-256 block (22 + 32 + 9 <= 64) |
//! | SHA-2, N = 24/32 | 1 SHA-256 block | 1 SHA-512 block (22 + 2N + 17 <= 128) |
//! | SHAKE | 1 Keccak-f (32 + 32 + N <= 135) | 1 Keccak-f (32 + 32 + 2N <= 135) |
//!
//! The calls a verifier makes are mostly independent of each other (the WOTS+ chains of a
//! layer, the FORS leaves and trees, different signatures), so they go through a
//! [`Kernel`]: [`Kernel::lanes`] prepared inputs (at most [`MAX_LANES`]) hashed by one call
//! of a multi-lane primitive (`hashes::sha256_x16::compress_x16` for SHA-256, sixteen where
//! the CPU has AVX-512F, else `hashes::lanes::compress_lanes`, four with SHA-NI;
//! `hashes::sha512_lanes::compress512_x4` for SHA-512, four; `hashes::keccak_lanes::f1600_x8`
//! for SHAKE, eight where the CPU has AVX-512F, else `f1600_x4`, four). Two drivers feed it:
//! [`run_chains`], a lane-refill scheduler for chains of dependent `F` calls, and
//! [`run_nodes`] for independent one-shot calls.

mod sha2;
mod shake;

use zeroize::Zeroize;

use super::address::{Address, WOTS_HASH};
use super::params::Params;
use crate::params::HashFamily;

pub(crate) use self::sha2::Sha2Hasher;
pub(crate) use self::shake::ShakeHasher;

/// The most independent hashes one kernel call computes (the lane arrays' size).
pub(crate) const MAX_LANES: usize = 16;
const _: () = assert!(MAX_LANES >= crate::hashes::lanes::LANES);
const _: () = assert!(MAX_LANES >= crate::hashes::keccak_lanes::KECCAK_LANES_X8);
const _: () = assert!(MAX_LANES == crate::hashes::sha256_x16::LANES_X16);

/// A multi-lane hash primitive for one kind of call (`F`, or `H`).
///
/// A lane holds one fully prepared input: the address and the `N`- or `2N`-byte value `x`
/// (plus whatever padding the primitive needs). [`Kernel::run`] hashes the active lanes
/// and writes each output over the first `N` bytes of that lane's `x`, so a chain step is
/// "set the hash address, run" with no other copying.
pub(crate) trait Kernel {
    /// One prepared input (wiped when a driver is done with its lanes: a signer's lanes
    /// hold secret values).
    type Lane: Copy + Zeroize;
    /// A lane for `adrs` and input `x` (`N` or `2N` bytes, as this kernel expects).
    fn load(&self, adrs: &Address, x: &[u8]) -> Self::Lane;
    /// [`Kernel::load`] over an existing lane, in place (the drivers' refills: a lane built
    /// elsewhere and copied in is read back wide right after its narrow stores, which
    /// stalls on store forwarding).
    #[inline]
    fn load_into(&self, lane: &mut Self::Lane, adrs: &Address, x: &[u8]) {
        *lane = self.load(adrs, x);
    }
    /// How many lanes one [`Kernel::run`] hashes (at most [`MAX_LANES`]): the drivers fill
    /// only the first this many, and leave the others inactive.
    fn lanes(&self) -> usize;
    /// Rewrites the address's last word (the WOTS+ hash index) in a prepared lane.
    fn set_word7(&self, lane: &mut Self::Lane, v: u32);
    /// Hashes every lane whose `active` flag is set, in place (only lanes below
    /// [`Kernel::lanes`] are ever active).
    fn run(&self, lanes: &mut [Self::Lane; MAX_LANES], active: [bool; MAX_LANES]);
    /// Hashes one lane in place, as [`Kernel::run`] with only that lane active (one
    /// compression or permutation, without a lane array to fill).
    fn run_one(&self, lane: &mut Self::Lane);
    /// The first `N` bytes of the lane's `x` (after `run`: the hash output).
    fn output(&self, lane: &Self::Lane, out: &mut [u8]);
}

/// The busy lanes (at most `N`, in lane order) gathered for one `N`-lane call of a narrower
/// primitive: their indices, and copies of them (the copies past the busy count are of
/// `lanes[0]`, hashed for nothing). The caller writes output `j` back to `lanes[which[j]]`
/// for each `j` below the busy count.
pub(crate) fn gather<T: Copy, const N: usize>(
    lanes: &[T; MAX_LANES],
    active: &[bool; MAX_LANES],
) -> ([usize; N], [T; N]) {
    let mut which = [0usize; N];
    let mut gathered = [lanes[0]; N];
    for ((slot, g), i) in which
        .iter_mut()
        .zip(gathered.iter_mut())
        .zip((0..MAX_LANES).filter(|&i| active[i]))
    {
        *slot = i;
        *g = lanes[i];
    }
    (which, gathered)
}

/// A WOTS+ chain to advance: `x` goes through positions `start..end` (hash index = the
/// position), each step `x = F(ADRS, x)`.
#[derive(Clone, Copy)]
pub(crate) struct ChainJob {
    /// The chain's address (`word7` is overwritten with each position).
    pub adrs: Address,
    /// The value, `N` bytes used.
    pub x: [u8; 32],
    /// First position.
    pub start: u8,
    /// Position after the last one.
    pub end: u8,
}

/// One independent `F` (input `N` bytes) or `H` (input `2N` bytes) call.
#[derive(Clone, Copy)]
pub(crate) struct NodeJob {
    /// The address.
    pub adrs: Address,
    /// The input (first `N` or `2N` bytes used).
    pub input: [u8; 64],
    /// The output (first `N` bytes).
    pub out: [u8; 32],
}

impl Zeroize for ChainJob {
    fn zeroize(&mut self) {
        self.x.zeroize();
    }
}

impl Default for NodeJob {
    fn default() -> Self {
        NodeJob {
            adrs: Address::default(),
            input: [0; 64],
            out: [0; 32],
        }
    }
}

/// The chains of WOTS+ signatures under one public key's hashes: chain `i` is chain
/// `i % len` of the signature by the key pair at `adrs[i / len]` (layer, tree and key pair;
/// the type and chain index are set here), running from position `starts[i]` to 15.
pub(crate) struct WotsChains<'a> {
    /// Chains per signature.
    pub len: usize,
    /// Each signature's key pair.
    pub adrs: &'a [Address],
    /// Each chain's first position.
    pub starts: &'a [u8],
}

impl WotsChains<'_> {
    /// Chain `i`'s steps.
    pub(crate) fn steps(&self, i: usize) -> u8 {
        15u8.saturating_sub(self.starts[i])
    }

    /// Chain `i`'s address (its hash index still to be set).
    pub(crate) fn adrs(&self, i: usize) -> Address {
        Address {
            kind: WOTS_HASH,
            word6: (i % self.len) as u32,
            ..self.adrs[i / self.len]
        }
    }

    /// Chain `i` as a job, its value still to be put in `x`.
    pub(crate) fn job(&self, i: usize) -> ChainJob {
        ChainJob {
            adrs: self.adrs(i),
            x: [0; 32],
            start: self.starts[i],
            end: 15,
        }
    }
}

/// [`Hasher::wots_chains`] through [`run_chains`], the chains as jobs.
pub(crate) fn run_wots_chains<K: Kernel>(
    k: &K,
    n: usize,
    chains: &WotsChains<'_>,
    values: &mut [u8],
) {
    let mut jobs: Vec<ChainJob> = values
        .chunks_exact(n)
        .enumerate()
        .map(|(i, v)| {
            let mut job = chains.job(i);
            job.x[..n].copy_from_slice(v);
            job
        })
        .collect();
    run_chains(k, n, &mut jobs, false, |_| None, &mut []);
    for (v, job) in values.chunks_exact_mut(n).zip(&jobs) {
        v.copy_from_slice(&job.x[..n]);
    }
}

/// Advances every chain of `jobs`, keeping the kernel's lanes busy: whenever a chain ends,
/// its lane is refilled with the next one. Longest chains go first, so the lanes run
/// out of work at about the same time. With `wipe`, the lanes (which held every
/// intermediate value) are wiped at the end: a signer's chains are secret below the
/// signed position.
///
/// Where `tap(i)` is `Some(t)`, job `i`'s value after each step is also written to entry
/// `t * 16 + position` of `taps` (the position the step reached, 1 to 15), entries of `N / 8`
/// little-endian words (words, not bytes, so that wiping them is cheap): a signer keeps
/// every position of the chains one of whose positions it will sign.
pub(crate) fn run_chains<K: Kernel>(
    k: &K,
    n: usize,
    jobs: &mut [ChainJob],
    wipe: bool,
    tap: impl Fn(usize) -> Option<usize>,
    taps: &mut [u64],
) {
    let mut next = longest_first(jobs).into_iter();
    let width = k.lanes().min(MAX_LANES);
    // Per lane: the job it runs, the position of its next step and its tap (lanes from
    // `width` on stay empty).
    let mut slots: [Option<(usize, u8, Option<usize>)>; MAX_LANES] = [None; MAX_LANES];
    let mut lanes: [K::Lane; MAX_LANES] = [k.load(&Address::default(), &[0u8; 32][..n]); MAX_LANES];
    let mut refill =
        |slot: &mut Option<(usize, u8, Option<usize>)>, lane: &mut K::Lane, jobs: &[ChainJob]| {
            *slot = next.next().map(|i| {
                k.load_into(lane, &jobs[i].adrs, &jobs[i].x[..n]);
                (i, jobs[i].start, tap(i))
            });
        };
    for (slot, lane) in slots.iter_mut().zip(lanes.iter_mut()).take(width) {
        refill(slot, lane, jobs);
    }
    loop {
        let mut active = [false; MAX_LANES];
        for ((slot, lane), a) in slots[..width]
            .iter()
            .zip(lanes.iter_mut())
            .zip(active.iter_mut())
        {
            if let Some((_, pos, _)) = slot {
                k.set_word7(lane, u32::from(*pos));
                *a = true;
            }
        }
        if !active.contains(&true) {
            break;
        }
        k.run(&mut lanes, active);
        for (slot, lane) in slots[..width].iter_mut().zip(lanes.iter_mut()) {
            let Some((i, pos, t)) = slot else { continue };
            *pos += 1;
            if let Some(t) = t {
                let mut y = [0u8; 32];
                k.output(lane, &mut y[..n]);
                put_words(
                    &mut taps[(*t * 16 + usize::from(*pos)) * (n / 8)..],
                    &y[..n],
                );
                y.zeroize();
            }
            if *pos == jobs[*i].end {
                let i = *i;
                k.output(lane, &mut jobs[i].x[..n]);
                refill(slot, lane, jobs);
            }
        }
    }
    if wipe {
        lanes.iter_mut().take(width).for_each(Zeroize::zeroize);
    }
}

/// The indices of the jobs with steps to run, longest first (a counting sort on the
/// number of steps; equal lengths keep their order).
pub(crate) fn longest_first(jobs: &[ChainJob]) -> Vec<usize> {
    longest_first_by(jobs.len(), |i| {
        usize::from(jobs[i].end.saturating_sub(jobs[i].start))
    })
}

/// The indices below `count` whose `steps` (at most 255) are not zero, most steps first,
/// equal counts in index order (a counting sort).
pub(crate) fn longest_first_by(count: usize, steps: impl Fn(usize) -> usize) -> Vec<usize> {
    // Each count read once (at most 255, so a byte), then: how many of each count, where
    // the first of each count goes (the longest at 0), and every index to its place.
    let counts: Vec<u8> = (0..count).map(|i| steps(i).min(255) as u8).collect();
    let mut at = [0usize; 256];
    let mut longest = 0;
    for &s in &counts {
        at[usize::from(s)] += 1;
        longest = longest.max(usize::from(s));
    }
    let mut total = 0usize;
    for a in at[1..=longest.max(1)].iter_mut().rev() {
        let c = *a;
        *a = total;
        total += c;
    }
    let mut order = vec![0usize; total];
    for (i, &s) in counts.iter().enumerate() {
        if s > 0 {
            order[at[usize::from(s)]] = i;
            at[usize::from(s)] += 1;
        }
    }
    order
}

/// Writes `src` (a multiple of 8 bytes) as little-endian words over the first
/// `src.len() / 8` words of `dst`: how the signer keeps chain values (words wipe eight times
/// faster than bytes).
pub(crate) fn put_words(dst: &mut [u64], src: &[u8]) {
    for (word, bytes) in dst.iter_mut().zip(src.chunks_exact(8)) {
        *word = u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]));
    }
}

/// Computes every job's output, [`Kernel::lanes`] at a time; `blocks` is 1 (`F`) or 2 (`H`).
/// The verifier's: its values are public, so its lanes are not wiped.
pub(crate) fn run_nodes<K: Kernel>(k: &K, n: usize, blocks: usize, jobs: &mut [NodeJob]) {
    let first = match jobs {
        [] => return,
        [job] => {
            // One call (a single signature's Merkle climb, level by level): no lane array.
            let mut lane = k.load(&job.adrs, &job.input[..blocks * n]);
            k.run_one(&mut lane);
            k.output(&lane, &mut job.out[..n]);
            return;
        }
        [first, ..] => first,
    };
    let mut lanes = [k.load(&first.adrs, &first.input[..blocks * n]); MAX_LANES];
    for chunk in jobs.chunks_mut(k.lanes().clamp(1, MAX_LANES)) {
        let mut active = [false; MAX_LANES];
        for ((job, lane), a) in chunk.iter().zip(lanes.iter_mut()).zip(active.iter_mut()) {
            k.load_into(lane, &job.adrs, &job.input[..blocks * n]);
            *a = true;
        }
        k.run(&mut lanes, active);
        for (job, lane) in chunk.iter_mut().zip(lanes.iter()) {
            k.output(lane, &mut job.out[..n]);
        }
    }
}

/// Computes `count` independent calls, [`Kernel::lanes`] at a time, without materialising
/// jobs: `input(i)` gives call `i`'s address and input (`blocks * N` bytes), `output(i, y)`
/// receives its `N`-byte output. The signer's `PRF`, FORS leaves and tree levels: its
/// lanes are wiped at the end.
pub(crate) fn run_each<'a, K: Kernel>(
    k: &K,
    n: usize,
    count: usize,
    input: impl Fn(usize) -> (Address, &'a [u8]),
    mut output: impl FnMut(usize, &[u8]),
) {
    let width = k.lanes().clamp(1, MAX_LANES);
    let Some(first) = (count > 0).then(|| input(0)) else {
        return;
    };
    let mut lanes = [k.load(&first.0, first.1); MAX_LANES];
    let mut y = [0u8; 32];
    for start in (0..count).step_by(width) {
        let m = width.min(count - start);
        let mut active = [false; MAX_LANES];
        for (j, (lane, a)) in lanes.iter_mut().zip(active.iter_mut()).take(m).enumerate() {
            let (adrs, x) = input(start + j);
            k.load_into(lane, &adrs, x);
            *a = true;
        }
        k.run(&mut lanes, active);
        for (j, lane) in lanes.iter().take(m).enumerate() {
            k.output(lane, &mut y[..n]);
            output(start + j, &y[..n]);
        }
    }
    lanes.iter_mut().take(width).for_each(Zeroize::zeroize);
    y.zeroize();
}

/// The tweakable hashes of one public key.
#[derive(Clone)]
pub(crate) enum Hasher {
    /// SHA-2 sets.
    Sha2(Box<Sha2Hasher>),
    /// SHAKE sets.
    Shake(Box<ShakeHasher>),
}

impl Hasher {
    /// Precomputes the `PK.seed` state. `pk_seed` must be `N` bytes.
    pub(crate) fn new(p: &Params, pk_seed: &[u8]) -> Self {
        match p.family {
            HashFamily::Sha2 => Hasher::Sha2(Box::new(Sha2Hasher::new(pk_seed))),
            HashFamily::Shake => Hasher::Shake(Box::new(ShakeHasher::new(pk_seed))),
        }
    }

    /// Advances every chain (`F` steps) of public values (a verifier's), see
    /// [`run_chains`].
    pub(crate) fn chains(&self, n: usize, jobs: &mut [ChainJob]) {
        match self {
            Hasher::Sha2(h) => h.f().chains(jobs),
            Hasher::Shake(h) => run_chains(h.f(), n, jobs, false, |_| None, &mut []),
        }
    }

    /// Advances the WOTS+ signatures' chains `chains` over their values `values` in place
    /// (`N` bytes per chain, in chain order; a verifier's: public): each from its start to
    /// position 15.
    pub(crate) fn wots_chains(&self, n: usize, chains: &WotsChains<'_>, values: &mut [u8]) {
        match self {
            Hasher::Sha2(h) => h.f().wots_chains(chains, values),
            Hasher::Shake(h) => run_wots_chains(h.f(), n, chains, values),
        }
    }

    /// [`chains`](Self::chains) of secret values (a signer's): the lanes are wiped after.
    pub(crate) fn chains_secret(&self, n: usize, jobs: &mut [ChainJob]) {
        self.chains_tapped(n, jobs, |_| None, &mut []);
    }

    /// [`chains_secret`](Self::chains_secret), keeping every position of the jobs `tap`
    /// names in `taps` (see [`run_chains`]).
    pub(crate) fn chains_tapped(
        &self,
        n: usize,
        jobs: &mut [ChainJob],
        tap: impl Fn(usize) -> Option<usize>,
        taps: &mut [u64],
    ) {
        match self {
            Hasher::Sha2(h) => run_chains(h.f(), n, jobs, true, tap, taps),
            Hasher::Shake(h) => run_chains(h.f(), n, jobs, true, tap, taps),
        }
    }

    /// `out = F(adrs, input[..N])` for every job.
    pub(crate) fn f_nodes(&self, n: usize, jobs: &mut [NodeJob]) {
        match self {
            Hasher::Sha2(h) => run_nodes(h.f(), n, 1, jobs),
            Hasher::Shake(h) => run_nodes(h.f(), n, 1, jobs),
        }
    }

    /// `F` calls given by `input` (address, `N` bytes), outputs to `output`: see
    /// [`run_each`].
    pub(crate) fn f_each<'a>(
        &self,
        n: usize,
        count: usize,
        input: impl Fn(usize) -> (Address, &'a [u8]),
        output: impl FnMut(usize, &[u8]),
    ) {
        match self {
            Hasher::Sha2(h) => run_each(h.f(), n, count, input, output),
            Hasher::Shake(h) => run_each(h.f(), n, count, input, output),
        }
    }

    /// `H` calls given by `input` (address, `2N` bytes), outputs to `output`: see
    /// [`run_each`]. (The signer's tree levels.)
    #[cfg(any(feature = "sign", all(test, not(target_family = "wasm"))))]
    pub(crate) fn h_each<'a>(
        &self,
        n: usize,
        count: usize,
        input: impl Fn(usize) -> (Address, &'a [u8]),
        output: impl FnMut(usize, &[u8]),
    ) {
        match self {
            Hasher::Sha2(h) if n == 16 => run_each(h.f(), n, count, input, output),
            Hasher::Sha2(h) => run_each(h.h512(), n, count, input, output),
            Hasher::Shake(h) => run_each(h.h(), n, count, input, output),
        }
    }

    /// `out = H(adrs, input[..2N])` for every job.
    pub(crate) fn h_nodes(&self, n: usize, jobs: &mut [NodeJob]) {
        match self {
            Hasher::Sha2(h) if n == 16 => run_nodes(h.f(), n, 2, jobs),
            Hasher::Sha2(h) => run_nodes(h.h512(), n, 2, jobs),
            Hasher::Shake(h) => run_nodes(h.h(), n, 2, jobs),
        }
    }

    /// `T_l(adrs, input)` (input `l * N` bytes, `l >= 2`) into `out` (`N` bytes).
    pub(crate) fn t(&self, adrs: &Address, input: &[u8], out: &mut [u8]) {
        match self {
            Hasher::Sha2(h) => h.t(adrs, input, out),
            Hasher::Shake(h) => h.t(adrs, input, out),
        }
    }

    /// `T_l` of every address's input (`inputs` holds the inputs, all of one length, one
    /// after the other) into `outs` (first `N` bytes each), the hashes run through the
    /// lanes together.
    pub(crate) fn t_many(&self, adrs: &[Address], inputs: &[u8], outs: &mut [[u8; 32]]) {
        match self {
            Hasher::Sha2(h) => h.t_many(adrs, inputs, outs),
            Hasher::Shake(h) => h.t_many(adrs, inputs, outs),
        }
    }

    /// `H_msg(R, PK, M)`, `out.len()` bytes.
    pub(crate) fn h_msg(&self, r: &[u8], pk: &[u8], msg: [&[u8]; 2], out: &mut [u8]) {
        match self {
            Hasher::Sha2(h) => h.h_msg(r, pk, msg, out),
            Hasher::Shake(_) => shake::h_msg(r, pk, msg, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamSet;

    /// The counting sort gives what a stable sort by decreasing length gives, without the
    /// jobs of no steps.
    #[test]
    fn longest_first_is_a_stable_sort() {
        let mut seed = 7u32;
        let jobs: Vec<ChainJob> = (0..300)
            .map(|_| {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let start = (seed >> 16) as u8 % 16;
                let end = if seed.is_multiple_of(5) { start } else { 15 };
                ChainJob {
                    adrs: Address::default(),
                    x: [0; 32],
                    start,
                    end,
                }
            })
            .collect();
        let mut want: Vec<usize> = (0..jobs.len())
            .filter(|&i| jobs[i].end > jobs[i].start)
            .collect();
        want.sort_by_key(|&i| core::cmp::Reverse(jobs[i].end - jobs[i].start));
        assert_eq!(longest_first(&jobs), want);
        assert!(longest_first(&[]).is_empty());
    }

    /// `T_l` through the lanes equals one `T_l` at a time, for every width of the families'
    /// hashes (SHA-256, SHA-512, SHAKE) and counts that leave partial groups.
    #[test]
    fn t_many_equals_t() {
        for set in [
            ParamSet::Sha2_128f,
            ParamSet::Sha2_192f,
            ParamSet::Sha2_256f,
            ParamSet::Shake128f,
            ParamSet::Shake256f,
        ] {
            let p = Params::of(set);
            let n = p.n;
            let seed: Vec<u8> = (0..n as u8).map(|i| i * 3 + 1).collect();
            let h = Hasher::new(&p, &seed);
            for (count, l) in [(1usize, p.len), (3, p.len), (5, p.k), (17, p.len), (33, 2)] {
                let adrs: Vec<Address> = (0..count)
                    .map(|i| Address::new(2, 77 + i as u64, 1, i as u32))
                    .collect();
                let inputs: Vec<u8> = (0..count * l * n).map(|i| (i * 7 + count) as u8).collect();
                let mut outs = vec![[0u8; 32]; count];
                h.t_many(&adrs, &inputs, &mut outs);
                for (i, (a, out)) in adrs.iter().zip(&outs).enumerate() {
                    let mut want = [0u8; 32];
                    h.t(a, &inputs[i * l * n..(i + 1) * l * n], &mut want[..n]);
                    assert_eq!(
                        out[..n],
                        want[..n],
                        "{set}: {count} inputs of {l}, input {i}"
                    );
                }
            }
        }
    }
}
