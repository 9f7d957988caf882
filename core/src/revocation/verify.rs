//! Pure verification of revocation proofs against a root and a count (from a signed
//! snapshot). The algorithm is the one of `docs/revocation-proofs.md`, section
//! "Verification"; the Merkle paths are checked with `rs_merkle::MerkleProof`.

use rs_merkle::MerkleProof;

use crate::values::Zeta;

use super::error::{PathKind, ProofError};
use super::hasher::{empty_root, leaf_hash, top_leaf_hash, Sha3Hasher};
use super::proof::{LeafOpening, Membership, RevocationProof};
use super::{bucket_of, BUCKET_COUNT, TOP_DEPTH};

/// Checks that `proof` establishes its claim about `zeta` in the set with this `root` and
/// `count`, and returns the claim.
///
/// - Inclusion: the opening is of `zeta` itself and leads to `root`.
/// - Non-membership: every opening leads to `root`; with both neighbours,
///   `predecessor < zeta < successor` and their global positions are consecutive; with only a
///   successor, `zeta < successor` at position 0; with only a predecessor,
///   `predecessor < zeta` at position `count - 1`; with neither, `count == 0` and `root` is
///   the empty-set root.
///
/// Each opening must name the bucket of its zeta, have `local_index < bucket_count`,
/// `bucket_start + bucket_count <= count` and exactly as many path hashes as its shape needs.
pub fn verify_proof(
    root: &[u8; 32],
    count: u64,
    zeta: &Zeta,
    proof: &RevocationProof,
) -> Result<Membership, ProofError> {
    match proof {
        RevocationProof::Inclusion(p) => {
            if p.leaf.zeta != *zeta {
                return Err(ProofError::ZetaMismatch);
            }
            verify_opening(root, count, &p.leaf)?;
            Ok(Membership::Revoked)
        }
        RevocationProof::NonMembership(p) => {
            match (&p.predecessor, &p.successor) {
                (None, None) => {
                    if count != 0 {
                        return Err(ProofError::SetNotEmpty(count));
                    }
                    if *root != empty_root() {
                        return Err(ProofError::RootMismatch);
                    }
                }
                (Some(pred), None) => {
                    let position = verify_opening(root, count, pred)?;
                    if pred.zeta >= *zeta {
                        return Err(ProofError::NotOrdered);
                    }
                    if position != count - 1 {
                        return Err(ProofError::NotLast { position, count });
                    }
                }
                (None, Some(succ)) => {
                    let position = verify_opening(root, count, succ)?;
                    if succ.zeta <= *zeta {
                        return Err(ProofError::NotOrdered);
                    }
                    if position != 0 {
                        return Err(ProofError::NotFirst(position));
                    }
                }
                (Some(pred), Some(succ)) => {
                    let p_pos = verify_opening(root, count, pred)?;
                    let s_pos = verify_opening(root, count, succ)?;
                    if !(pred.zeta < *zeta && *zeta < succ.zeta) {
                        return Err(ProofError::NotOrdered);
                    }
                    if p_pos.checked_add(1) != Some(s_pos) {
                        return Err(ProofError::NotAdjacent {
                            predecessor: p_pos,
                            successor: s_pos,
                        });
                    }
                }
            }
            Ok(Membership::NotRevoked)
        }
    }
}

/// Number of proof hashes `rs_merkle` gives for leaf `index` of a tree of `count` leaves:
/// one per level below the root, except where the node is a carried odd last node.
pub fn path_len(index: u64, count: u64) -> usize {
    let (mut i, mut n, mut len) = (index, count, 0);
    while n > 1 {
        if (i ^ 1) < n {
            len += 1;
        }
        i >>= 1;
        n = n.div_ceil(2);
    }
    len
}

/// Checks one opening against `root` and `count`; returns its global position.
fn verify_opening(root: &[u8; 32], count: u64, o: &LeafOpening) -> Result<u64, ProofError> {
    let b = usize::from(o.bucket);
    if b >= BUCKET_COUNT {
        return Err(ProofError::BucketOutOfRange(o.bucket));
    }
    let expected = bucket_of(&o.zeta);
    if expected != o.bucket {
        return Err(ProofError::BucketMismatch {
            expected,
            found: o.bucket,
        });
    }
    if o.local_index >= o.bucket_count {
        return Err(ProofError::LocalIndexOutOfRange {
            index: o.local_index,
            count: o.bucket_count,
        });
    }
    if o.bucket_start
        .checked_add(o.bucket_count)
        .is_none_or(|end| end > count)
    {
        return Err(ProofError::BucketBeyondCount {
            start: o.bucket_start,
            bucket_count: o.bucket_count,
            count,
        });
    }
    let want = path_len(o.local_index, o.bucket_count);
    if o.bucket_path.len() != want {
        return Err(ProofError::WrongPathLength {
            which: PathKind::Bucket,
            expected: want,
            found: o.bucket_path.len(),
        });
    }
    let n = usize::try_from(o.bucket_count).map_err(|_| ProofError::TooLarge(o.bucket_count))?;
    let i = usize::try_from(o.local_index).map_err(|_| ProofError::TooLarge(o.local_index))?;

    let leaf = leaf_hash(&o.zeta.0);
    let bucket_root = MerkleProof::<Sha3Hasher>::new(o.bucket_path.clone())
        .root(&[i], &[leaf], n)
        .map_err(|_| ProofError::RootMismatch)?;
    let top_leaf = top_leaf_hash(o.bucket, o.bucket_start, o.bucket_count, &bucket_root);
    let top_root = MerkleProof::<Sha3Hasher>::new(o.top_path.to_vec())
        .root(&[b], &[top_leaf], BUCKET_COUNT)
        .map_err(|_| ProofError::RootMismatch)?;
    debug_assert_eq!(path_len(b as u64, BUCKET_COUNT as u64), TOP_DEPTH);
    if top_root != *root {
        return Err(ProofError::RootMismatch);
    }
    // Cannot overflow: local_index < bucket_count and start + bucket_count <= count.
    Ok(o.bucket_start + o.local_index)
}
