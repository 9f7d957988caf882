//! SHA3-256 of many single-block inputs at once: the leaf and node hashes of the bucket
//! trees, eight at a time through the crate's multi-lane Keccak-f\[1600\]
//! ([`f1600_x8`]: AVX-512F where the CPU has it, else two four-lane calls, AVX2 or a loop).
//!
//! A leaf input (`0x00 || zeta`, 17 bytes) and a node input (`0x01 || left || right`,
//! 65 bytes) both fit in one SHA3-256 block (136-byte rate), so each hash is exactly one
//! permutation of a padded block: the message, the SHA-3 domain and padding byte `0x06`
//! after it, `0x80` in the last byte of the rate (FIPS 202), absorbed little-endian into a
//! zero state; the hash is the first 32 bytes of the state. The tests check every function
//! against [`leaf_hash`](super::hasher::leaf_hash) and [`node_hash`](super::hasher::node_hash)
//! (the `sha3` crate) for every group size.

use crate::hashes::keccak_lanes::{f1600_x8, KECCAK_LANES_X8};
use crate::values::Zeta;

use super::hasher::{Hash, LEAF_PREFIX, NODE_PREFIX};

/// SHA3-256's rate in bytes.
const RATE: usize = 136;

/// Fills `out[i]` with SHA3-256 of the message that `write(i, block)` puts at the start of a
/// zeroed block, returning its length (less than [`RATE`]).
fn sha3_many(out: &mut [Hash], write: impl Fn(usize, &mut [u8; RATE]) -> usize) {
    let mut first = 0;
    for group in out.chunks_mut(KECCAK_LANES_X8) {
        let mut states = [[0u64; 25]; KECCAK_LANES_X8];
        for (lane, state) in states.iter_mut().enumerate().take(group.len()) {
            let mut block = [0u8; RATE];
            let len = write(first + lane, &mut block).min(RATE - 1);
            block[len] ^= 0x06;
            block[RATE - 1] ^= 0x80;
            for (word, bytes) in state.iter_mut().zip(block.as_chunks::<8>().0) {
                *word = u64::from_le_bytes(*bytes);
            }
        }
        f1600_x8(&mut states);
        for (hash, state) in group.iter_mut().zip(&states) {
            for (bytes, word) in hash.as_chunks_mut::<8>().0.iter_mut().zip(state) {
                *bytes = word.to_le_bytes();
            }
        }
        first += group.len();
    }
}

/// The leaf hashes `H(0x00 || zeta)` of `zetas`, in order.
pub(crate) fn leaf_hashes(zetas: &[Zeta]) -> Vec<Hash> {
    let mut out = vec![[0u8; 32]; zetas.len()];
    sha3_many(&mut out, |i, block| {
        block[0] = LEAF_PREFIX;
        block[1..17].copy_from_slice(&zetas[i].0);
        17
    });
    out
}

/// Nodes `from..to` of the level above `child` (the `rs_merkle` shape): node `j` is
/// `H(0x01 || child[2j] || child[2j + 1])`, or `child[2j]` unchanged when it is the last,
/// unpaired node. `to` is clamped to the parent level's length.
pub(crate) fn parent_nodes(child: &[Hash], from: usize, to: usize) -> Vec<Hash> {
    let to = to.min(child.len().div_ceil(2));
    let paired = to.min(child.len() / 2);
    let from = from.min(to);
    let mut out = vec![[0u8; 32]; to - from];
    let hashed = paired.saturating_sub(from);
    sha3_many(&mut out[..hashed], |k, block| {
        let j = from + k;
        block[0] = NODE_PREFIX;
        block[1..33].copy_from_slice(&child[2 * j]);
        block[33..65].copy_from_slice(&child[2 * j + 1]);
        65
    });
    // At most one unpaired node: the last one of an odd-length level, carried up.
    for (slot, j) in out[hashed..].iter_mut().zip(paired.max(from)..to) {
        *slot = child[2 * j];
    }
    out
}

/// The whole level above `child`.
pub(crate) fn parent_level(child: &[Hash]) -> Vec<Hash> {
    parent_nodes(child, 0, usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::super::hasher::{leaf_hash, node_hash};
    use super::*;

    fn zeta(i: usize) -> Zeta {
        let mut z = [0u8; 16];
        z[..8].copy_from_slice(&(i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
        z[8..].copy_from_slice(&(i as u64).to_le_bytes());
        Zeta(z)
    }

    #[test]
    fn leaves_match_the_sha3_crate_for_every_group_size() {
        for n in 0..=19 {
            let zetas: Vec<Zeta> = (0..n).map(zeta).collect();
            let got = leaf_hashes(&zetas);
            let want: Vec<Hash> = zetas.iter().map(|z| leaf_hash(&z.0)).collect();
            assert_eq!(got, want, "n={n}");
        }
    }

    #[test]
    fn nodes_match_the_sha3_crate_with_the_odd_node_carried() {
        for n in 0..=21 {
            let child: Vec<Hash> = (0..n).map(|i| leaf_hash(&zeta(i).0)).collect();
            let want: Vec<Hash> = child
                .chunks(2)
                .map(|c| match c {
                    [l, r] => node_hash(l, r),
                    [l] => *l,
                    _ => unreachable!(),
                })
                .collect();
            assert_eq!(parent_level(&child), want, "n={n}");
            for from in 0..=want.len() {
                for to in from..=want.len() + 1 {
                    assert_eq!(
                        parent_nodes(&child, from, to),
                        want[from..to.min(want.len())],
                        "n={n} {from}..{to}"
                    );
                }
            }
        }
        // Out-of-range bounds give nothing rather than panicking.
        assert!(parent_nodes(&[[1; 32]; 4], 5, 3).is_empty());
    }
}
