//! Revocation proofs: plain structs and their versioned binary layout
//! (`docs/revocation-proofs.md`, section "Proof bytes").
//!
//! ```text
//! proof        = "DGRP" || 0x01 || type || body
//!   type 0x01  = inclusion:       body = opening
//!   type 0x02  = non-membership:  body = flags || [opening(pred)] || [opening(succ)]
//!                flags: bit 0 = predecessor present, bit 1 = successor present
//! opening      = zeta (16) || be16(bucket) || be64(bucket_start) || be64(bucket_count)
//!             || be64(local_index) || u8(k) || k × 32 bucket path || 12 × 32 top path
//! ```

use crate::values::Zeta;

use super::codec::Reader;
use super::error::FormatError;
use super::{BUCKET_COUNT, TOP_DEPTH};

/// Magic of an encoded revocation proof.
pub const PROOF_MAGIC: &[u8; 4] = b"DGRP";
/// Version byte of the proof layout (and of the commitment format it opens).
pub const PROOF_VERSION: u8 = 1;
/// Proof-type byte of an inclusion proof.
pub const PROOF_TYPE_INCLUSION: u8 = 0x01;
/// Proof-type byte of a non-membership proof.
pub const PROOF_TYPE_NON_MEMBERSHIP: u8 = 0x02;
/// Longest bucket path accepted when decoding (a tree of up to 2^64 leaves).
pub const MAX_BUCKET_PATH: usize = 64;

const FLAG_PREDECESSOR: u8 = 0x01;
const FLAG_SUCCESSOR: u8 = 0x02;

/// One revoked zeta opened against the set root: where it sits and the two Merkle paths.
///
/// Its global position in the sorted set is `bucket_start + local_index`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafOpening {
    /// The revoked zeta (the leaf is `H(0x00 || zeta)`).
    pub zeta: Zeta,
    /// Its bucket: the first 12 bits of the zeta (`0..4096`).
    pub bucket: u16,
    /// Number of revoked zetas in lower buckets (global position of the bucket's first leaf).
    pub bucket_start: u64,
    /// Number of revoked zetas in the bucket (leaves of the bucket tree).
    pub bucket_count: u64,
    /// Position of the zeta in its bucket (0-based).
    pub local_index: u64,
    /// `rs_merkle` proof hashes in the bucket tree, bottom-up.
    pub bucket_path: Vec<[u8; 32]>,
    /// `rs_merkle` proof hashes of the bucket's top leaf in the top tree, bottom-up.
    pub top_path: [[u8; 32]; TOP_DEPTH],
}

impl LeafOpening {
    /// `bucket_start + local_index`, the claimed global position (`None` on overflow).
    pub fn position(&self) -> Option<u64> {
        self.bucket_start.checked_add(self.local_index)
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.zeta.0);
        out.extend_from_slice(&self.bucket.to_be_bytes());
        out.extend_from_slice(&self.bucket_start.to_be_bytes());
        out.extend_from_slice(&self.bucket_count.to_be_bytes());
        out.extend_from_slice(&self.local_index.to_be_bytes());
        // No tree has a path longer than 64 hashes. A longer (hand-made) path is written
        // with at most 255 hashes and such bytes are then refused by `from_bytes`.
        let k = self.bucket_path.len().min(u8::MAX as usize);
        out.push(k as u8);
        for h in &self.bucket_path[..k] {
            out.extend_from_slice(h);
        }
        for h in &self.top_path {
            out.extend_from_slice(h);
        }
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, FormatError> {
        let zeta = Zeta(r.array()?);
        let bucket = r.u16()?;
        if usize::from(bucket) >= BUCKET_COUNT {
            return Err(FormatError::BucketOutOfRange(bucket));
        }
        let bucket_start = r.u64()?;
        let bucket_count = r.u64()?;
        let local_index = r.u64()?;
        let k = r.u8()?;
        if usize::from(k) > MAX_BUCKET_PATH {
            return Err(FormatError::PathTooLong(k));
        }
        let mut bucket_path = Vec::with_capacity(usize::from(k));
        for _ in 0..k {
            bucket_path.push(r.array()?);
        }
        let mut top_path = [[0u8; 32]; TOP_DEPTH];
        for h in &mut top_path {
            *h = r.array()?;
        }
        Ok(LeafOpening {
            zeta,
            bucket,
            bucket_start,
            bucket_count,
            local_index,
            bucket_path,
            top_path,
        })
    }

    /// Encoded length in bytes.
    fn encoded_len(&self) -> usize {
        16 + 2 + 8 + 8 + 8 + 1 + 32 * self.bucket_path.len().min(255) + 32 * TOP_DEPTH
    }
}

/// Proof that a zeta is revoked: its opening.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InclusionProof {
    /// The opening of the zeta itself.
    pub leaf: LeafOpening,
}

/// Proof that a zeta is not revoked: the revoked zetas just below and just above it, at
/// consecutive global positions. At the lower edge only the successor (at position 0), at
/// the upper edge only the predecessor (at position `count - 1`); for the empty set neither.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NonMembershipProof {
    /// The largest revoked zeta below the queried one, if any.
    pub predecessor: Option<LeafOpening>,
    /// The smallest revoked zeta above the queried one, if any.
    pub successor: Option<LeafOpening>,
}

/// A revocation proof: the zeta is revoked (inclusion) or not (non-membership).
// The variants hold one and two openings (about 0.5 and 1 KiB of plain data, mostly the
// top paths); a proof is built once and moved little, so boxing would only add allocations.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RevocationProof {
    /// The zeta is in the set.
    Inclusion(InclusionProof),
    /// The zeta is not in the set.
    NonMembership(NonMembershipProof),
}

/// What a verified proof establishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Membership {
    /// The zeta is in the revoked set of the snapshot.
    Revoked,
    /// The zeta is not in the revoked set of the snapshot.
    NotRevoked,
}

impl RevocationProof {
    /// What the proof claims (check it with [`verify_proof`](super::verify_proof)).
    pub fn claim(&self) -> Membership {
        match self {
            RevocationProof::Inclusion(_) => Membership::Revoked,
            RevocationProof::NonMembership(_) => Membership::NotRevoked,
        }
    }

    /// The versioned binary layout (see the module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        let openings: Vec<&LeafOpening> = match self {
            RevocationProof::Inclusion(p) => vec![&p.leaf],
            RevocationProof::NonMembership(p) => {
                p.predecessor.iter().chain(p.successor.iter()).collect()
            }
        };
        let len = 7 + openings.iter().map(|o| o.encoded_len()).sum::<usize>();
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(PROOF_MAGIC);
        out.push(PROOF_VERSION);
        match self {
            RevocationProof::Inclusion(p) => {
                out.push(PROOF_TYPE_INCLUSION);
                p.leaf.write(&mut out);
            }
            RevocationProof::NonMembership(p) => {
                out.push(PROOF_TYPE_NON_MEMBERSHIP);
                let mut flags = 0;
                if p.predecessor.is_some() {
                    flags |= FLAG_PREDECESSOR;
                }
                if p.successor.is_some() {
                    flags |= FLAG_SUCCESSOR;
                }
                out.push(flags);
                for o in openings {
                    o.write(&mut out);
                }
            }
        }
        out
    }

    /// Decodes [`to_bytes`](Self::to_bytes) output. Checks magic, version, type, flags,
    /// bucket range, path lengths and the exact total length; never panics.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, FormatError> {
        let mut r = Reader::new(bytes, "revocation proof");
        r.header(PROOF_MAGIC, PROOF_VERSION)?;
        let proof = match r.u8()? {
            PROOF_TYPE_INCLUSION => RevocationProof::Inclusion(InclusionProof {
                leaf: LeafOpening::read(&mut r)?,
            }),
            PROOF_TYPE_NON_MEMBERSHIP => {
                let flags = r.u8()?;
                if flags & !(FLAG_PREDECESSOR | FLAG_SUCCESSOR) != 0 {
                    return Err(FormatError::BadFlags(flags));
                }
                let predecessor = if flags & FLAG_PREDECESSOR != 0 {
                    Some(LeafOpening::read(&mut r)?)
                } else {
                    None
                };
                let successor = if flags & FLAG_SUCCESSOR != 0 {
                    Some(LeafOpening::read(&mut r)?)
                } else {
                    None
                };
                RevocationProof::NonMembership(NonMembershipProof {
                    predecessor,
                    successor,
                })
            }
            other => return Err(FormatError::UnknownProofType(other)),
        };
        r.finish()?;
        Ok(proof)
    }
}
