//! The hypertree's side of a signature (FIPS 205 Algorithms 6-12): every layer's tree
//! built together, keeping every position of the signing key pair's chains, from which
//! the `d` WOTS+ signatures are then read.

use zeroize::Zeroizing;

use super::tree::Forest;
use crate::sphincs::address::{Address, TREE, WOTS_HASH, WOTS_PK, WOTS_PRF};
use crate::sphincs::hash::{put_words, ChainJob, Hasher};
use crate::sphincs::params::Params;
use crate::sphincs::wots::chain_lengths;

/// WOTS+ chains computed together, at most (whole layers; at least one): a few MiB of jobs.
const GROUP_CHAINS: usize = 1 << 15;

/// One layer's tree to build, and the key pair of it that signs.
#[derive(Clone, Copy)]
struct LayerTree {
    layer: u8,
    tree: u64,
    leaf: u32,
}

/// What is kept of the built layer trees.
struct Built {
    /// Each spec's root.
    roots: Vec<[u8; 32]>,
    /// Every position of each signing key pair's chains: spec `t`'s chain `c` at position
    /// `j` is the `N / 8` little-endian words from `((t * len + c) * 16 + j) * N / 8`.
    positions: Zeroizing<Vec<u64>>,
}

/// The root of the top layer's only tree: `PK.root` of the seeds.
pub(super) fn top_root(p: &Params, hasher: &Hasher, sk_seed: &[u8]) -> [u8; 32] {
    let top = LayerTree {
        layer: (p.d - 1) as u8,
        tree: 0,
        leaf: 0,
    };
    let mut auth = [0u8; 32 * 16];
    build(p, hasher, sk_seed, &[top], (&mut auth, p.hp * p.n, 0)).roots[0]
}

/// Writes the hypertree signature of `fors_pk` (the bottom layer signs it with key pair
/// `leaf` of tree `tree`) to `out` (`d (len + h') N` bytes) and returns the top root, which
/// is `PK.root` when the key and the computation are sound.
pub(super) fn sign(
    p: &Params,
    hasher: &Hasher,
    sk_seed: &[u8],
    tree: u64,
    leaf: u32,
    fors_pk: &[u8; 32],
    out: &mut [u8],
) -> [u8; 32] {
    let n = p.n;
    let mut specs = Vec::with_capacity(p.d);
    let (mut tree, mut leaf) = (tree, leaf);
    for layer in 0..p.d {
        specs.push(LayerTree {
            layer: layer as u8,
            tree,
            leaf,
        });
        leaf = (tree & ((1u64 << p.hp) - 1)) as u32;
        tree >>= p.hp;
    }
    let wots_bytes = p.len * n;
    let layer_bytes = p.layer_bytes();
    // Each layer's authentication path goes straight to its place in the signature.
    let built = build(p, hasher, sk_seed, &specs, (out, layer_bytes, wots_bytes));

    // Layer 0 signs the FORS public key, layer i the root of layer i - 1: chain c's value at
    // the signed digit, kept while the tree was built.
    for (i, part) in out.chunks_exact_mut(layer_bytes).enumerate() {
        let msg = if i == 0 { fors_pk } else { &built.roots[i - 1] };
        let digits = chain_lengths(p, &msg[..n]);
        for (c, (dst, &digit)) in part[..wots_bytes]
            .chunks_exact_mut(n)
            .zip(&digits[..p.len])
            .enumerate()
        {
            let at = ((i * p.len + c) * 16 + usize::from(digit)) * (n / 8);
            for (bytes, word) in dst
                .chunks_exact_mut(8)
                .zip(&built.positions[at..at + n / 8])
            {
                bytes.copy_from_slice(&word.to_le_bytes());
            }
        }
    }
    built.roots[p.d - 1]
}

/// Builds the tree of every spec (in groups of whole layers of at most [`GROUP_CHAINS`]
/// chains): the roots and every position of the signing key pairs' chains are returned; spec `i`'s
/// authentication path (`h' · N` bytes) is written to `auth.0` at `i · auth.1 + auth.2`.
fn build(
    p: &Params,
    hasher: &Hasher,
    sk_seed: &[u8],
    specs: &[LayerTree],
    auth: (&mut [u8], usize, usize),
) -> Built {
    let (auth, stride, offset) = auth;
    let (n, len) = (p.n, p.len);
    let pairs = 1usize << p.hp;
    let per_layer = pairs * len;
    let group = (GROUP_CHAINS / per_layer).max(1);
    let w = n / 8;
    // Every position of the signing key pairs' chains, for the WOTS+ signatures: position
    // 0 (the start) is put here, the others by the chain scheduler's taps.
    let per_spec = len * 16 * w;
    let mut built = Built {
        roots: Vec::with_capacity(specs.len()),
        positions: Zeroizing::new(vec![0; specs.len() * per_spec]),
    };
    // The chain starts are secret until the chains have run; after, every job holds its
    // chain's end (public), so the buffer is not wiped again on drop.
    let mut chains: Vec<ChainJob> = Vec::new();
    let mut pks: Vec<u8> = Vec::new();
    for (g, specs) in specs.chunks(group).enumerate() {
        // The chain starts of every key pair of every tree, PRF(PK.seed, SK.seed, ADRS),
        // each made a chain job (positions 0 to 15).
        let count = specs.len() * per_layer;
        chains.clear();
        chains.resize(
            count,
            ChainJob {
                adrs: Address::default(),
                x: [0; 32],
                start: 0,
                end: 15,
            },
        );
        let adrs_of = |i: usize, kind: u8| {
            let (t, rest) = (i / per_layer, i % per_layer);
            let mut a = Address::new(specs[t].layer, specs[t].tree, kind, (rest / len) as u32);
            a.word6 = (rest % len) as u32;
            a
        };
        hasher.f_each(
            n,
            count,
            |i| (adrs_of(i, WOTS_PRF), sk_seed),
            |i, y| {
                let job = &mut chains[i];
                job.adrs = adrs_of(i, WOTS_HASH);
                job.x[..n].copy_from_slice(y);
            },
        );
        // This group's share of the kept positions; the starts put now.
        let taps = &mut built.positions[g * group * per_spec..][..specs.len() * per_spec];
        for (t, s) in specs.iter().enumerate() {
            let first = t * per_layer + s.leaf as usize * len;
            for (c, job) in chains[first..first + len].iter().enumerate() {
                put_words(&mut taps[(t * len + c) * 16 * w..][..w], &job.x[..n]);
            }
        }
        let tap = |i: usize| {
            let (t, rest) = (i / per_layer, i % per_layer);
            (rest / len == specs[t].leaf as usize).then_some(t * len + rest % len)
        };
        hasher.chains_tapped(n, &mut chains, tap, taps);

        // Each key pair's public key compressed to its leaf: T_len, through the lanes.
        pks.clear();
        for c in chains.iter() {
            pks.extend_from_slice(&c.x[..n]);
        }
        let pk_adrs: Vec<Address> = specs
            .iter()
            .flat_map(|s| {
                (0..pairs).map(|pair| Address::new(s.layer, s.tree, WOTS_PK, pair as u32))
            })
            .collect();
        let mut leaf_nodes = vec![[0u8; 32]; pk_adrs.len()];
        hasher.t_many(&pk_adrs, &pks, &mut leaf_nodes);
        let leaves: Vec<u8> = leaf_nodes
            .iter()
            .flat_map(|l| l[..n].iter().copied())
            .collect();

        let adrs: Vec<Address> = specs
            .iter()
            .map(|s| Address::new(s.layer, s.tree, TREE, 0))
            .collect();
        let forest = Forest::build(hasher, n, p.hp, leaves, &adrs, &vec![0; specs.len()]);
        for (t, s) in specs.iter().enumerate() {
            let at = (g * group + t) * stride + offset;
            forest.auth_path(t, s.leaf, &mut auth[at..at + p.hp * n]);
            built.roots.push(forest.root(t));
        }
    }
    built
}
