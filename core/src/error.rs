//! Typed errors. Nothing in this crate panics on untrusted input: every decoder and every
//! protocol operation reports failures through these types.

use crate::params::ParamSet;
use crate::MemberId;

/// Why a byte string could not be decoded into a DGSP object (spec section 5).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Shorter than the 4-byte header.
    #[error("encoding too short for a header: {len} bytes, need at least 4")]
    MissingHeader {
        /// bytes received
        len: usize,
    },
    /// The first byte is not the DGSP marker `0xD6`.
    #[error("not a DGSP encoding: marker byte is {0:#04x}, expected 0xd6")]
    BadMarker(u8),
    /// An encoding version this implementation does not know.
    #[error("unsupported DGSP encoding version {0} (this implementation reads version 1)")]
    UnsupportedVersion(u8),
    /// A parameter-set id outside 1..=24.
    #[error("unknown parameter set id {0} (valid ids are 1..=24)")]
    UnknownParamSet(u8),
    /// A parameter-set name that is not one of the 24 canonical names.
    #[error("unknown parameter set {0:?} (expected one of sha2-128s, sha2-128f, sha2-192s, sha2-192f, sha2-256s, sha2-256f, shake-128s, shake-128f, shake-192s, shake-192f, shake-256s, shake-256f, or any of these prefixed with slh-dsa- for FIPS 205, e.g. slh-dsa-sha2-128f)")]
    UnknownParamSetName(String),
    /// The header names another kind of object.
    #[error("wrong object kind: expected {expected} ({expected_name}), found {found}")]
    WrongKind {
        /// kind byte expected
        expected: u8,
        /// human name of the expected kind
        expected_name: &'static str,
        /// kind byte found
        found: u8,
    },
    /// The body length does not match what the header implies.
    #[error("wrong length for a {kind} of {params}: expected {expected} bytes, found {found}")]
    WrongLength {
        /// human name of the object
        kind: &'static str,
        /// its parameter set
        params: ParamSet,
        /// expected total length
        expected: usize,
        /// received total length
        found: usize,
    },
    /// A field had the wrong length (for values built from raw parts).
    #[error("wrong length for {field}: expected {expected} bytes, found {found}")]
    WrongFieldLength {
        /// field name
        field: &'static str,
        /// expected length
        expected: usize,
        /// received length
        found: usize,
    },
    /// A secret key whose public part is not the one its secret seeds give (a SPHINCS+
    /// secret key whose `PK.root` is not its tree's root): corrupt, or pieced together.
    #[error("inconsistent {field}: its public part does not belong to its secret seeds")]
    InconsistentKey {
        /// field name
        field: &'static str,
    },
}

/// Failures of a [`Plm`](crate::Plm) or [`RevokedList`](crate::RevokedList) store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No member with this id.
    #[error("unknown member id {0}")]
    UnknownMember(MemberId),
    /// The username is already taken.
    #[error("username {0:?} is already a member")]
    DuplicateUsername(String),
    /// The member was revoked: no more certificates.
    #[error("member {0} is revoked (inactive)")]
    Inactive(MemberId),
    /// Reserving counters would overflow the 64-bit counter.
    #[error("certificate counter of member {0} would overflow")]
    CounterOverflow(MemberId),
    /// The storage backend failed (I/O, corruption, ...).
    #[error("storage backend: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    /// The error for an object of set `found` used with a key of set `expected` (which
    /// differ): [`Error::FamilyMismatch`] between twins, otherwise [`Error::ParamMismatch`].
    pub fn mismatch(expected: ParamSet, found: ParamSet) -> Self {
        if expected.twin() == found {
            Error::FamilyMismatch { expected, found }
        } else {
            Error::ParamMismatch { expected, found }
        }
    }
}

/// Errors of the DGSP protocol operations.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Malformed input bytes.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// An object of one parameter set was used with a key of another.
    #[error("parameter set mismatch: the key is {expected}, the object is {found}")]
    ParamMismatch {
        /// the key's set
        expected: ParamSet,
        /// the object's set
        found: ParamSet,
    },
    /// An object of one family was used with a key of the other family's twin set (the same
    /// sizes, another standard: `sha2-128f` against `slh-dsa-sha2-128f`). Refused before any
    /// cryptography runs.
    #[error("signature family mismatch: the key is {expected} ({}), the object is {found} ({})", expected.standard(), found.standard())]
    FamilyMismatch {
        /// the key's set
        expected: ParamSet,
        /// the object's set
        found: ParamSet,
    },
    /// The signature's zeta is on the revoked list. The signature may be cryptographically
    /// valid; its certificate has been revoked.
    #[error("signature is revoked")]
    Revoked,
    /// The signature does not verify (wrong message, tampered, or not made by a member).
    #[error("invalid signature")]
    InvalidSignature,
    /// A certificate failed its check on import: the manager's signature does not cover it.
    #[error("invalid certificate: the manager's SPHINCS+ signature does not verify")]
    InvalidCertificate,
    /// Judge: the claimed `(id, pi)` does not match the signature's `tau`.
    #[error("the opening (id, pi) does not match the signature")]
    WrongOpening,
    /// `cid*` does not match the member id: refuse to issue.
    #[error("cid* does not match member {0}")]
    CidStarMismatch(MemberId),
    /// A certificate request with no public keys.
    #[error("empty certificate request")]
    EmptyRequest,
    /// The number of certificates does not match the number of CSR items.
    #[error("expected {expected} certificates, got {found}")]
    CountMismatch {
        /// CSR items
        expected: usize,
        /// certificates
        found: usize,
    },
    /// The PLM or revoked-list store refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
