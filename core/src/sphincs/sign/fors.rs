//! FORS signing (FIPS 205 Algorithms 14-16): the `k · 2^a` leaf secrets, the leaves and
//! every level of the `k` trees, in groups of trees that keep the lanes full and the
//! scratch memory bounded; the signature (one secret and one authentication path per tree)
//! and the FORS public key.

use zeroize::{Zeroize, Zeroizing};

use super::tree::Forest;
use crate::sphincs::address::{Address, FORS_PRF, FORS_ROOTS, FORS_TREE};
use crate::sphincs::fors::indices;
use crate::sphincs::h_msg::MsgDigest;
use crate::sphincs::hash::{Hasher, NodeJob};
use crate::sphincs::params::Params;

/// Leaves hashed per group of trees (at least one whole tree): about 0.5 MiB of jobs.
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
    let mut secrets: Zeroizing<Vec<NodeJob>> = Zeroizing::new(Vec::with_capacity(group * per_tree));
    let mut leaf_jobs: Zeroizing<Vec<NodeJob>> =
        Zeroizing::new(Vec::with_capacity(group * per_tree));
    for first in (0..k).step_by(group) {
        let last = (first + group).min(k);
        secrets.zeroize();
        for t in first..last {
            for j in 0..per_tree {
                let mut job = NodeJob {
                    adrs: base(FORS_PRF),
                    ..NodeJob::default()
                };
                job.adrs.word7 = ((t << a) | j) as u32;
                job.input[..n].copy_from_slice(sk_seed);
                secrets.push(job);
            }
        }
        hasher.f_nodes(n, &mut secrets);

        leaf_jobs.zeroize();
        leaf_jobs.extend(secrets.iter().map(|s| {
            let mut job = NodeJob {
                adrs: base(FORS_TREE),
                ..NodeJob::default()
            };
            job.adrs.word7 = s.adrs.word7;
            job.input[..n].copy_from_slice(&s.out[..n]);
            job
        }));
        hasher.f_nodes(n, &mut leaf_jobs);
        let leaves: Vec<[u8; 32]> = leaf_jobs.iter().map(|j| j.out).collect();

        let adrs = vec![base(FORS_TREE); last - first];
        let offsets: Vec<u32> = (first..last).map(|t| (t << a) as u32).collect();
        let forest = Forest::build(hasher, n, a, leaves, &adrs, &offsets);
        for t in first..last {
            let sig = &mut out[t * tree_bytes..(t + 1) * tree_bytes];
            let leaf = idx[t];
            sig[..n].copy_from_slice(&secrets[(t - first) * per_tree + leaf as usize].out[..n]);
            forest.auth_path(t - first, leaf, &mut sig[n..]);
            roots[t * n..(t + 1) * n].copy_from_slice(&forest.root(t - first)[..n]);
        }
    }

    let mut pk = [0u8; 32];
    hasher.t(&base(FORS_ROOTS), &roots[..k * n], &mut pk[..n]);
    pk
}
