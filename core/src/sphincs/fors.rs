//! FORS public keys from signatures, for a batch of signatures at once: all `k` leaves of
//! all signatures are one pass of `F` calls through the lanes, each of the `a` levels of
//! all `k` trees one pass of `H` calls, then one `T_k` per signature.

use super::address::{Address, FORS_ROOTS, FORS_TREE};
use super::hash::{Hasher, NodeJob};
use super::merkle::{compute_roots, RootTask};
use super::params::{Params, Standard};
use super::Item;

/// The largest `k`.
const MAX_K: usize = 35;

/// The `k` leaf indices (`a` bits each) of the FORS message `md`. Round 3.1 (PQClean
/// `message_to_indices`) reads the bits least significant first within each byte and fills
/// each index from its least significant bit up; FIPS 205 (`base_2b`) reads them most
/// significant first, as one big-endian bit string.
pub(crate) fn indices(p: &Params, md: &[u8]) -> [u32; MAX_K] {
    let mut out = [0u32; MAX_K];
    let mut offset = 0usize;
    for idx in out.iter_mut().take(p.k) {
        for j in 0..p.a {
            let byte = md[offset >> 3];
            *idx = match p.standard {
                Standard::Round3 => *idx | u32::from((byte >> (offset & 7)) & 1) << j,
                Standard::Fips205 => (*idx << 1) | u32::from((byte >> (7 - (offset & 7))) & 1),
            };
            offset += 1;
        }
    }
    out
}

/// Sets each item's `root` to the FORS public key its signature implies.
pub(crate) fn public_keys(p: &Params, hasher: &Hasher, items: &mut [Item<'_>]) {
    let (n, a, k) = (p.n, p.a, p.k);
    let tree_bytes = (a + 1) * n;
    let mut leaves: Vec<NodeJob> = Vec::with_capacity(items.len() * k);
    let mut all_indices = Vec::with_capacity(items.len());
    for it in items.iter() {
        let idx = indices(p, &it.md);
        let fors = &it.sig[n..n + p.fors_bytes()];
        for (i, &leaf) in idx[..k].iter().enumerate() {
            let mut job = NodeJob {
                adrs: Address::new(0, it.tree, FORS_TREE, it.leaf),
                ..NodeJob::default()
            };
            job.adrs.word7 = leaf + ((i as u32) << a);
            job.input[..n].copy_from_slice(&fors[i * tree_bytes..i * tree_bytes + n]);
            leaves.push(job);
        }
        all_indices.push(idx);
    }
    hasher.f_nodes(n, &mut leaves);

    let mut tasks: Vec<RootTask<'_>> = Vec::with_capacity(items.len() * k);
    for (b, it) in items.iter().enumerate() {
        let fors = &it.sig[n..n + p.fors_bytes()];
        for i in 0..k {
            tasks.push(RootTask {
                adrs: Address::new(0, it.tree, FORS_TREE, it.leaf),
                idx: all_indices[b][i],
                offset: (i as u32) << a,
                auth: &fors[i * tree_bytes + n..(i + 1) * tree_bytes],
                node: leaves[b * k + i].out,
            });
        }
    }
    compute_roots(hasher, n, a, &mut tasks, &mut leaves);

    // One T_k per item, through the lanes when there are several.
    let roots: Vec<u8> = tasks
        .iter()
        .flat_map(|t| t.node[..n].iter().copied())
        .collect();
    let adrs: Vec<Address> = items
        .iter()
        .map(|it| Address::new(0, it.tree, FORS_ROOTS, it.leaf))
        .collect();
    let mut pks = vec![[0u8; 32]; items.len()];
    hasher.t_many(&adrs, &roots, &mut pks);
    for (it, pk) in items.iter_mut().zip(pks) {
        it.root = pk;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamSet;

    #[test]
    fn indices_read_bits_lsb_first() {
        let p = Params::of(ParamSet::Sha2_128f); // a = 6
        let mut md = [0u8; 40];
        md[0] = 0b1000_0001; // bit 0 -> tree 0 bit 0; bit 7 -> tree 1 bit 1
        md[1] = 0b0000_0001; // bit 8 -> tree 1 bit 2
        let idx = indices(&p, &md);
        assert_eq!(idx[0], 1);
        assert_eq!(idx[1], 0b110);
        assert_eq!(idx[2], 0);
    }
}
