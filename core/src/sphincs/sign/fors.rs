//! FORS signing (FIPS 205 Algorithms 14-16): the `k · 2^a` leaf secrets, the leaves and
//! every level of the `k` trees, in groups of trees that keep the lanes full and the
//! scratch memory bounded; the signature (one secret and one authentication path per tree)
//! and the FORS public key.

use zeroize::Zeroizing;

use super::tree::Forest;
use crate::sphincs::address::{Address, FORS_PRF, FORS_ROOTS, FORS_TREE};
use crate::sphincs::fors::indices;
use crate::sphincs::h_msg::MsgDigest;
use crate::sphincs::hash::Hasher;
use crate::sphincs::params::Params;

/// Leaves hashed per group of trees (at least one whole tree).
const GROUP_LEAVES: usize = 4096;
/// The largest `k`.
const MAX_K: usize = 35;

/// Writes the FORS signature of `d.md` by key pair `d.leaf` of bottom tree `d.tree` to
/// `out` (`k (a + 1) N` bytes) and returns the FORS public key (first `N` bytes).
pub(super) fn sign(
    p: &Params,
    hasher: &Hasher,
    sk_seed: &[u8],
    d: &MsgDigest,
    out: &mut [u8],
) -> [u8; 32] {
    let (n, a, k) = (p.n, p.a, p.k);
    let idx = indices(p, &d.md);
    let per_tree = 1usize << a;
    let group = (GROUP_LEAVES >> a).clamp(1, k);
    let tree_bytes = (a + 1) * n;
    let base = |kind: u8| Address::new(0, d.tree, kind, d.leaf);

    let mut roots = [0u8; MAX_K * 32];
    // The leaf secrets of a group (`N` bytes each), wiped when the signature is done.
    let mut secrets: Zeroizing<Vec<u8>> = Zeroizing::new(vec![0u8; group * per_tree * n]);
    for first in (0..k).step_by(group) {
        let last = (first + group).min(k);
        let count = (last - first) * per_tree;
        let index = |i: usize| ((first << a) + i) as u32;
        hasher.f_each(
            n,
            count,
            |i| {
                let mut adrs = base(FORS_PRF);
                adrs.word7 = index(i);
                (adrs, sk_seed)
            },
            |i, y| secrets[i * n..(i + 1) * n].copy_from_slice(y),
        );
        let mut leaves = vec![0u8; count * n];
        hasher.f_each(
            n,
            count,
            |i| {
                let mut adrs = base(FORS_TREE);
                adrs.word7 = index(i);
                (adrs, &secrets[i * n..(i + 1) * n])
            },
            |i, y| leaves[i * n..(i + 1) * n].copy_from_slice(y),
        );

        let adrs = vec![base(FORS_TREE); last - first];
        let offsets: Vec<u32> = (first..last).map(|t| (t << a) as u32).collect();
        let forest = Forest::build(hasher, n, a, leaves, &adrs, &offsets);
        for t in first..last {
            let sig = &mut out[t * tree_bytes..(t + 1) * tree_bytes];
            let at = ((t - first) * per_tree + idx[t] as usize) * n;
            sig[..n].copy_from_slice(&secrets[at..at + n]);
            forest.auth_path(t - first, idx[t], &mut sig[n..]);
            roots[t * n..(t + 1) * n].copy_from_slice(&forest.root(t - first)[..n]);
        }
    }

    let mut pk = [0u8; 32];
    hasher.t(&base(FORS_ROOTS), &roots[..k * n], &mut pk[..n]);
    pk
}
