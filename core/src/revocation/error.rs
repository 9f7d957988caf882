//! Typed errors of the revocation module: building a set, decoding bytes, verifying proofs
//! and snapshots.

/// A revocation set could not be built from the given zetas.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SetError {
    /// `from_sorted` got zetas that are not strictly ascending (unsorted or duplicated).
    #[error("zetas are not strictly ascending at index {index}")]
    NotSorted {
        /// index of the first zeta not greater than its predecessor
        index: usize,
    },
}

/// A byte string is not a valid revocation proof, snapshot record or signed snapshot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The input ended before a field.
    #[error("{what} truncated: needed {needed} more bytes at offset {offset}, {available} left")]
    Truncated {
        /// object being decoded
        what: &'static str,
        /// offset of the field
        offset: usize,
        /// bytes the field needs
        needed: usize,
        /// bytes left in the input
        available: usize,
    },
    /// Bytes left over after a complete object.
    #[error("{what}: {extra} unexpected trailing bytes")]
    TrailingBytes {
        /// object being decoded
        what: &'static str,
        /// number of extra bytes
        extra: usize,
    },
    /// The 4-byte magic does not name this kind of object.
    #[error("{what}: bad magic {found:02x?}, expected {expected:?}")]
    BadMagic {
        /// object being decoded
        what: &'static str,
        /// the expected ASCII magic
        expected: &'static str,
        /// the bytes found
        found: [u8; 4],
    },
    /// A format version this implementation does not read.
    #[error("{what}: unsupported format version {version} (this implementation reads version 1)")]
    UnsupportedVersion {
        /// object being decoded
        what: &'static str,
        /// version byte found
        version: u8,
    },
    /// The proof-type byte is neither 1 (inclusion) nor 2 (non-membership).
    #[error("unknown revocation proof type {0} (1 = inclusion, 2 = non-membership)")]
    UnknownProofType(u8),
    /// The non-membership flags byte has bits other than 0 (predecessor) and 1 (successor).
    #[error("invalid non-membership flags {0:#04x} (only bits 0 and 1 may be set)")]
    BadFlags(u8),
    /// A bucket index of 4096 or more.
    #[error("bucket index {0} out of range (there are 4096 buckets)")]
    BucketOutOfRange(u16),
    /// A bucket path longer than any tree of at most 2^64 leaves.
    #[error("bucket path of {0} hashes is too long (at most 64)")]
    PathTooLong(u8),
    /// A snapshot record field with an impossible value.
    #[error("invalid snapshot record: {0}")]
    InvalidRecord(&'static str),
    /// A signature longer than any SPHINCS+ signature.
    #[error("signature length {0} exceeds the maximum of 65536 bytes")]
    SignatureTooLong(u32),
}

/// Which Merkle path of a leaf opening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// The path in the bucket tree.
    Bucket,
    /// The path in the top tree.
    Top,
}

impl core::fmt::Display for PathKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            PathKind::Bucket => "bucket",
            PathKind::Top => "top",
        })
    }
}

/// A revocation proof does not establish its claim against the given root and count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProofError {
    /// An inclusion proof opens a different zeta than the one asked about.
    #[error("the inclusion proof is for another zeta")]
    ZetaMismatch,
    /// A bucket index of 4096 or more.
    #[error("bucket index {0} out of range (there are 4096 buckets)")]
    BucketOutOfRange(u16),
    /// The opened zeta does not belong to the bucket the opening names.
    #[error("the opened zeta belongs to bucket {expected}, the opening names bucket {found}")]
    BucketMismatch {
        /// bucket of the zeta (its first 12 bits)
        expected: u16,
        /// bucket named by the opening
        found: u16,
    },
    /// The local index is not below the bucket count.
    #[error("local index {index} is not below the bucket count {count}")]
    LocalIndexOutOfRange {
        /// local index
        index: u64,
        /// bucket count
        count: u64,
    },
    /// The bucket's positions `[start, start + count)` do not fit in the set's count.
    #[error("bucket positions start {start} + count {bucket_count} exceed the set count {count}")]
    BucketBeyondCount {
        /// bucket start
        start: u64,
        /// bucket count
        bucket_count: u64,
        /// the set count
        count: u64,
    },
    /// A bucket count this platform cannot index (only on 32-bit targets).
    #[error("bucket count {0} too large for this platform")]
    TooLarge(u64),
    /// A Merkle path has the wrong number of hashes for its leaf index and leaf count.
    #[error("{which} path has {found} hashes, expected {expected}")]
    WrongPathLength {
        /// which path
        which: PathKind,
        /// hashes required
        expected: usize,
        /// hashes present
        found: usize,
    },
    /// The opening does not hash to the root.
    #[error("the proof does not lead to the snapshot root")]
    RootMismatch,
    /// The predecessor is not below the zeta, or the successor not above it.
    #[error("neighbours not ordered around the zeta (need predecessor < zeta < successor)")]
    NotOrdered,
    /// Predecessor and successor are not at consecutive positions.
    #[error("predecessor at position {predecessor} and successor at {successor} are not adjacent")]
    NotAdjacent {
        /// global position of the predecessor
        predecessor: u64,
        /// global position of the successor
        successor: u64,
    },
    /// A successor-only proof whose successor is not the first zeta (position 0).
    #[error("successor-only proof: successor is at position {0}, not 0")]
    NotFirst(u64),
    /// A predecessor-only proof whose predecessor is not the last zeta (position count - 1).
    #[error("predecessor-only proof: predecessor is at position {position}, not the last ({count} zetas)")]
    NotLast {
        /// global position of the predecessor
        position: u64,
        /// the set count
        count: u64,
    },
    /// A proof with neither neighbour, but the set is not empty.
    #[error("no neighbours given, but the set has {0} zetas")]
    SetNotEmpty(u64),
}

/// A snapshot (or a proof checked against one) is not valid.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The snapshot names another group than the key it is verified with.
    #[error("snapshot is for another group (fingerprint mismatch)")]
    WrongGroup,
    /// The manager's SPHINCS+ signature does not verify.
    #[error("invalid snapshot signature")]
    BadSignature,
    /// The record breaks a rule of the format (e.g. number 0).
    #[error(transparent)]
    Format(#[from] FormatError),
    /// A successor record does not extend its predecessor.
    #[error("not a successor snapshot: {0}")]
    NotSuccessor(&'static str),
    /// The revocation proof does not verify against the snapshot.
    #[error(transparent)]
    Proof(#[from] ProofError),
}
