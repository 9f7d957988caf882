//! The hypertree: `d` layers of WOTS+ signatures and Merkle trees, from the FORS public key
//! up to the root, for a batch of signatures. The layers of one signature are sequential
//! (each signs the root of the one below); different signatures are independent, so each
//! layer of the whole batch runs together: all WOTS+ chains of all signatures through one
//! lane-refill scheduler, then one `T_len` per signature (through the lanes together), then
//! the batch's Merkle climbs level by level.

use super::address::{Address, TREE, WOTS_PK};
use super::hash::{Hasher, NodeJob, WotsChains};
use super::merkle::{compute_roots, RootTask};
use super::params::Params;
use super::wots::chain_lengths;
use super::Item;

/// Takes each item's `root` (the FORS public key) up through every layer; on return it is
/// the hypertree root the signature implies.
pub(crate) fn climb(p: &Params, hasher: &Hasher, items: &mut [Item<'_>]) {
    let n = p.n;
    let base = n + p.fors_bytes();
    let mut nodes: Vec<NodeJob> = Vec::with_capacity(items.len());
    let mut key_pairs: Vec<Address> = Vec::with_capacity(items.len());
    let mut starts: Vec<u8> = Vec::with_capacity(items.len() * p.len);
    let mut pks: Vec<u8> = Vec::with_capacity(items.len() * p.len * n);
    let mut leaves: Vec<[u8; 32]> = Vec::with_capacity(items.len());
    for layer in 0..p.d {
        let off = base + layer * p.layer_bytes();
        // Every item's WOTS+ signature of its current root, completed in place (`pks`) to
        // the public key's chain ends.
        key_pairs.clear();
        starts.clear();
        pks.clear();
        for it in items.iter() {
            key_pairs.push(Address::new(layer as u8, it.tree, 0, it.leaf));
            starts.extend_from_slice(&chain_lengths(p, &it.root[..n])[..p.len]);
            pks.extend_from_slice(&it.sig[off..off + p.len * n]);
        }
        let chains = WotsChains {
            len: p.len,
            adrs: &key_pairs,
            starts: &starts,
        };
        hasher.wots_chains(n, &chains, &mut pks);

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
