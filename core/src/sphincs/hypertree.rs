//! The hypertree: `d` layers of WOTS+ signatures and Merkle trees, from the FORS public key
//! up to the root, for a batch of signatures. The layers of one signature are sequential
//! (each signs the root of the one below); different signatures are independent, so each
//! layer of the whole batch runs together: all WOTS+ chains of all signatures through one
//! lane-refill scheduler, then one `T_len` per signature (through the lanes together), then
//! the batch's Merkle climbs level by level.

use super::address::{Address, TREE, WOTS_PK};
use super::hash::{ChainJob, Hasher, NodeJob};
use super::merkle::{compute_roots, RootTask};
use super::params::Params;
use super::wots::push_chains;
use super::Item;

/// Takes each item's `root` (the FORS public key) up through every layer; on return it is
/// the hypertree root the signature implies.
pub(crate) fn climb(p: &Params, hasher: &Hasher, items: &mut [Item<'_>]) {
    let n = p.n;
    let base = n + p.fors_bytes();
    let mut chains: Vec<ChainJob> = Vec::with_capacity(items.len() * p.len);
    let mut nodes: Vec<NodeJob> = Vec::with_capacity(items.len());
    let mut pks: Vec<u8> = Vec::with_capacity(items.len() * p.len * n);
    let mut leaves: Vec<[u8; 32]> = Vec::with_capacity(items.len());
    for layer in 0..p.d {
        let off = base + layer * p.layer_bytes();
        let wots_sigs = items.iter().map(|it| &it.sig[off..off + p.len * n]);
        match hasher.wide_sha256() {
            // Sixteen SHA-256 lanes: from the signatures straight into the chain kernel.
            Some(k) => {
                let adrs: Vec<Address> = items
                    .iter()
                    .map(|it| Address::new(layer as u8, it.tree, 0, it.leaf))
                    .collect();
                let msgs: Vec<&[u8]> = items.iter().map(|it| &it.root[..n]).collect();
                let sigs: Vec<&[u8]> = wots_sigs.collect();
                k.wots_ends(p.len, &adrs, &msgs, &sigs, &mut pks);
            }
            None => {
                chains.clear();
                for (it, wots_sig) in items.iter().zip(wots_sigs) {
                    let adrs = Address::new(layer as u8, it.tree, 0, it.leaf);
                    push_chains(p, adrs, &it.root[..n], wots_sig, &mut chains);
                }
                hasher.chains(n, &mut chains);
                chain_ends(n, &chains, &mut pks);
            }
        }

        // One T_len per item, through the lanes when there are several.
        let adrs: Vec<Address> = items
            .iter()
            .map(|it| Address::new(layer as u8, it.tree, WOTS_PK, it.leaf))
            .collect();
        leaves.clear();
        leaves.resize(items.len(), [0u8; 32]);
        hasher.t_many(&adrs, &pks, &mut leaves);
        let mut tasks: Vec<RootTask<'_>> = Vec::with_capacity(items.len());
        for (it, leaf) in items.iter().zip(&leaves) {
            tasks.push(RootTask {
                adrs: Address::new(layer as u8, it.tree, TREE, 0),
                idx: it.leaf,
                offset: 0,
                auth: &it.sig[off + p.len * n..off + p.layer_bytes()],
                node: *leaf,
            });
        }
        compute_roots(hasher, n, p.hp, &mut tasks, &mut nodes);
        let roots: Vec<[u8; 32]> = tasks.iter().map(|t| t.node).collect();
        for (it, root) in items.iter_mut().zip(roots) {
            it.root = root;
            it.leaf = (it.tree & ((1u64 << p.hp) - 1)) as u32;
            it.tree >>= p.hp;
        }
    }
}

/// The chains' values (`N` bytes each, in order) into `out`: the WOTS+ public keys the
/// `T_len` calls compress.
fn chain_ends(n: usize, chains: &[ChainJob], out: &mut Vec<u8>) {
    match n {
        16 => chain_ends_n::<16>(chains, out),
        24 => chain_ends_n::<24>(chains, out),
        _ => chain_ends_n::<32>(chains, out),
    }
}

/// [`chain_ends`] for `N` known at compile time (fixed-size copies).
fn chain_ends_n<const N: usize>(chains: &[ChainJob], out: &mut Vec<u8>) {
    out.clear();
    out.resize(chains.len() * N, 0);
    for (dst, c) in out.as_chunks_mut::<N>().0.iter_mut().zip(chains) {
        dst.copy_from_slice(&c.x[..N]);
    }
}
