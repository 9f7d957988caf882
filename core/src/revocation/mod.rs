//! Merkle-committed revocation snapshots (commitment format v1).
//!
//! The registry keeps every revoked zeta in a [`RevocationSet`]; after each revocation batch
//! the manager signs a [`SnapshotRecord`] holding the set's root and count
//! ([`Manager::sign_snapshot`](crate::Manager::sign_snapshot)). Gateways answer "is this zeta
//! revoked?" with a [`RevocationProof`] that anyone verifies offline against the signed
//! snapshot ([`verify_revocation`], or [`verify_proof`] given a trusted root and count).
//!
//! ```
//! use dgsp_core::revocation::{verify_proof, Membership, RevocationProof, RevocationSet};
//! use dgsp_core::Zeta;
//!
//! let mut set = RevocationSet::new();
//! assert_eq!(set.insert(&[Zeta([0x10; 16]), Zeta([0x80; 16]), Zeta([0x10; 16])]), 2);
//! let (root, count) = (set.root(), set.len());
//!
//! let revoked = Zeta([0x80; 16]);
//! let proof = RevocationProof::from_bytes(&set.prove(&revoked).to_bytes())?;
//! assert_eq!(verify_proof(&root, count, &revoked, &proof)?, Membership::Revoked);
//!
//! let fine = Zeta([0x42; 16]);
//! assert_eq!(verify_proof(&root, count, &fine, &set.prove(&fine))?, Membership::NotRevoked);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Layout of the commitment (normative description: `docs/revocation-proofs.md`):
//! - leaf `H(0x00 || zeta)`, node `H(0x01 || left || right)`, SHA3-256, `rs_merkle` tree
//!   shape (an odd last node is carried up a level unchanged, not hashed);
//! - 4096 buckets by the first 12 bits of the zeta, each with a tree over its sorted leaves
//!   (an empty bucket's root is 32 zero bytes);
//! - a top tree over 4096 leaves
//!   `H(0x02 || be16(b) || be64(start_b) || be64(count_b) || bucket_root_b)`; its root is the
//!   set root.
//!
//! Inserting a few zetas rehashes only the touched buckets (to the right of the first new
//! leaf) and the top leaves from the first touched bucket on, so a new root costs
//! milliseconds even at 10^7 zetas.

mod bucket;
mod codec;
mod error;
mod hasher;
mod lanes;
mod proof;
mod set;
mod snapshot;
mod tree;
mod verify;

pub use error::{FormatError, PathKind, ProofError, SetError, SnapshotError};
pub use hasher::{
    empty_root, leaf_hash, node_hash, top_leaf_hash, Sha3Hasher, EMPTY_BUCKET_ROOT, LEAF_PREFIX,
    NODE_PREFIX, TOP_LEAF_PREFIX,
};
pub use proof::{
    InclusionProof, LeafOpening, Membership, NonMembershipProof, RevocationProof, MAX_BUCKET_PATH,
    PROOF_MAGIC, PROOF_TYPE_INCLUSION, PROOF_TYPE_NON_MEMBERSHIP, PROOF_VERSION,
};
pub use set::RevocationSet;
pub use snapshot::{
    verify_revocation, SignedSnapshot, SnapshotRecord, MAX_SIGNATURE_LEN, RECORD_LEN, RECORD_MAGIC,
    RECORD_VERSION, SNAPSHOT_PREFIX,
};
pub use verify::{path_len, verify_proof};

use crate::values::Zeta;

/// Bits of the zeta that select its bucket.
pub const BUCKET_BITS: u32 = 12;
/// Number of buckets (`2^BUCKET_BITS`), which is also the number of top-tree leaves.
pub const BUCKET_COUNT: usize = 1 << BUCKET_BITS;
/// Depth of the top tree: the number of hashes in every top-tree path.
pub const TOP_DEPTH: usize = BUCKET_BITS as usize;

/// The bucket of a zeta: its first 12 bits, `(z[0] << 4) | (z[1] >> 4)`.
pub fn bucket_of(zeta: &Zeta) -> u16 {
    (u16::from(zeta.0[0]) << 4) | u16::from(zeta.0[1] >> 4)
}
