//! The hashes of the revocation commitment (format v1): SHA3-256 with one domain byte per
//! role, and the `rs_merkle` hasher that applies the node prefix.

use std::sync::OnceLock;

use sha3::{Digest, Sha3_256};

use super::{BUCKET_COUNT, TOP_DEPTH};

/// A 32-byte SHA3-256 output.
pub(crate) type Hash = [u8; 32];

/// Domain byte of a leaf hash: `H(0x00 || zeta)`.
pub const LEAF_PREFIX: u8 = 0x00;
/// Domain byte of an internal node (bucket tree and top tree): `H(0x01 || left || right)`.
pub const NODE_PREFIX: u8 = 0x01;
/// Domain byte of a top-tree leaf:
/// `H(0x02 || be16(bucket) || be64(start) || be64(count) || bucket_root)`.
pub const TOP_LEAF_PREFIX: u8 = 0x02;

/// The root of an empty bucket: 32 zero bytes (no hash is computed).
pub const EMPTY_BUCKET_ROOT: [u8; 32] = [0u8; 32];

/// SHA3-256 for `rs_merkle`, with the internal-node prefix.
///
/// [`rs_merkle::Hasher::hash`] is plain SHA3-256 (callers add the leaf prefix themselves, see
/// [`leaf_hash`]); `concat_and_hash` computes `H(0x01 || left || right)` and, like
/// `rs_merkle`'s default, returns `left` unchanged when there is no right node (an odd last
/// node is carried up a level without hashing).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sha3Hasher;

impl rs_merkle::Hasher for Sha3Hasher {
    type Hash = [u8; 32];

    fn hash(data: &[u8]) -> [u8; 32] {
        Sha3_256::digest(data).into()
    }

    fn concat_and_hash(left: &[u8; 32], right: Option<&[u8; 32]>) -> [u8; 32] {
        match right {
            Some(right) => node_hash(left, right),
            None => *left,
        }
    }
}

/// `H(0x00 || zeta)`: the leaf hash of a revoked zeta.
pub fn leaf_hash(zeta: &[u8; 16]) -> [u8; 32] {
    let mut h = Sha3_256::new();
    h.update([LEAF_PREFIX]);
    h.update(zeta);
    h.finalize().into()
}

/// `H(0x01 || left || right)`: an internal node.
pub fn node_hash(left: &[u8; 32], right: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha3_256::new();
    h.update([NODE_PREFIX]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// `H(0x02 || be16(bucket) || be64(start) || be64(count) || bucket_root)`: the top-tree leaf
/// of one bucket. `start` is the global position of the bucket's first zeta (the number of
/// zetas in lower buckets), `count` the bucket's size.
pub fn top_leaf_hash(bucket: u16, start: u64, count: u64, bucket_root: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha3_256::new();
    h.update([TOP_LEAF_PREFIX]);
    h.update(bucket.to_be_bytes());
    h.update(start.to_be_bytes());
    h.update(count.to_be_bytes());
    h.update(bucket_root);
    h.finalize().into()
}

/// The root of the empty set: the top tree over the 4096 top leaves of empty buckets
/// (`start = count = 0`, bucket root all zeros). Computed once.
pub fn empty_root() -> [u8; 32] {
    static EMPTY: OnceLock<[u8; 32]> = OnceLock::new();
    *EMPTY.get_or_init(|| {
        let mut layer: Vec<Hash> = (0..BUCKET_COUNT)
            .map(|b| top_leaf_hash(b as u16, 0, 0, &EMPTY_BUCKET_ROOT))
            .collect();
        for _ in 0..TOP_DEPTH {
            layer = layer
                .chunks_exact(2)
                .map(|c| node_hash(&c[0], &c[1]))
                .collect();
        }
        layer[0]
    })
}
