//! SHA3-256 of many single-block inputs at once: the leaf and node hashes of the bucket
//! trees and the top leaves, eight at a time through the crate's multi-lane Keccak-f\[1600\]
//! ([`f1600_x8`]: AVX-512F where the CPU has it, else two four-lane calls, AVX2 or a loop).
//!
//! A leaf input (`0x00 || zeta`, 17 bytes) and a node input (`0x01 || left || right`,
//! 65 bytes) both fit in one SHA3-256 block (136-byte rate), so each hash is exactly one
//! permutation of a padded block: the message, the SHA-3 domain and padding byte `0x06`
//! after it, `0x80` in the last byte of the rate (FIPS 202), absorbed little-endian into a
//! zero state (written straight into the state's 64-bit lanes); the hash is the first 32
//! bytes of the state. The tests check every function
//! against [`leaf_hash`](super::hasher::leaf_hash) and [`node_hash`](super::hasher::node_hash)
//! (the `sha3` crate) for every group size.

use crate::hashes::keccak_lanes::{f1600_x8, KECCAK_LANES_X8};
use crate::values::Zeta;

use super::hasher::{Hash, LEAF_PREFIX, NODE_PREFIX, TOP_LEAF_PREFIX};

/// SHA-3's domain bits and the first padding bit, the byte right after the message.
const PAD_FIRST: u64 = 0x06;
/// The last padding bit: the top bit of byte 135, the last byte of the rate (lane 16).
const PAD_LAST: u64 = 0x80 << 56;

/// Fills `out[i]` with SHA3-256 of the one-block message that `absorb(i, state)` writes
/// into a zero state, little-endian, with its first padding byte ([`PAD_FIRST`]) right
/// after it; the last padding bit is added here.
fn sha3_many(out: &mut [Hash], absorb: impl Fn(usize, &mut [u64; 25])) {
    let mut first = 0;
    for group in out.chunks_mut(KECCAK_LANES_X8) {
        let mut states = [[0u64; 25]; KECCAK_LANES_X8];
        for (lane, state) in states.iter_mut().enumerate().take(group.len()) {
            absorb(first + lane, state);
            state[16] ^= PAD_LAST;
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

/// The four little-endian words of a 32-byte hash, or the two of a zeta.
fn words<const N: usize>(bytes: &[[u8; 8]]) -> [u64; N] {
    let mut w = [0u64; N];
    for (word, b) in w.iter_mut().zip(bytes) {
        *word = u64::from_le_bytes(*b);
    }
    w
}

/// The leaf hashes `H(0x00 || zeta)` of `zetas`, in order.
pub(crate) fn leaf_hashes(zetas: &[Zeta]) -> Vec<Hash> {
    let mut out = vec![[0u8; 32]; zetas.len()];
    sha3_many(&mut out, |i, s| {
        // Message bytes: the prefix, then the zeta's 16 bytes (its words shifted a byte up).
        let [z0, z1] = words::<2>(zetas[i].0.as_chunks::<8>().0);
        s[0] = u64::from(LEAF_PREFIX) | (z0 << 8);
        s[1] = (z0 >> 56) | (z1 << 8);
        s[2] = (z1 >> 56) | (PAD_FIRST << 8);
    });
    out
}

/// The top-tree leaves `H(0x02 || be16(bucket) || be64(start) || be64(count) || root)` of
/// `(bucket, start, count, root)` items, in order.
pub(crate) fn top_leaf_hashes(items: &[(u16, u64, u64, Hash)]) -> Vec<Hash> {
    let mut out = vec![[0u8; 32]; items.len()];
    sha3_many(&mut out, |i, s| {
        let (bucket, start, count, root) = &items[i];
        // The 51 message bytes and the first padding byte: exactly seven words.
        let mut m = [0u8; 56];
        m[0] = TOP_LEAF_PREFIX;
        m[1..3].copy_from_slice(&bucket.to_be_bytes());
        m[3..11].copy_from_slice(&start.to_be_bytes());
        m[11..19].copy_from_slice(&count.to_be_bytes());
        m[19..51].copy_from_slice(root);
        m[51] = PAD_FIRST as u8;
        for (lane, bytes) in s.iter_mut().zip(m.as_chunks::<8>().0) {
            *lane = u64::from_le_bytes(*bytes);
        }
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
    sha3_many(&mut out[..hashed], |k, s| {
        let j = from + k;
        // Message bytes: the prefix, then left and right (their eight words a byte up).
        let [l0, l1, l2, l3] = words::<4>(child[2 * j].as_chunks::<8>().0);
        let [r0, r1, r2, r3] = words::<4>(child[2 * j + 1].as_chunks::<8>().0);
        let w = [l0, l1, l2, l3, r0, r1, r2, r3];
        s[0] = u64::from(NODE_PREFIX) | (w[0] << 8);
        for (lane, pair) in s[1..8].iter_mut().zip(w.windows(2)) {
            *lane = (pair[0] >> 56) | (pair[1] << 8);
        }
        s[8] = (w[7] >> 56) | (PAD_FIRST << 8);
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
    use super::super::hasher::{leaf_hash, node_hash, top_leaf_hash};
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
    fn top_leaves_match_the_sha3_crate() {
        let items: Vec<(u16, u64, u64, Hash)> = (0..11u64)
            .map(|i| {
                let root = leaf_hash(&zeta(i as usize).0);
                (4095 - i as u16 * 300, i << 40 | i, u64::MAX - i, root)
            })
            .collect();
        for n in 0..=items.len() {
            let want: Vec<Hash> = items[..n]
                .iter()
                .map(|(b, s, c, r)| top_leaf_hash(*b, *s, *c, r))
                .collect();
            assert_eq!(top_leaf_hashes(&items[..n]), want, "n={n}");
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
