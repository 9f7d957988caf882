//! What the auditor finds: violations (the manager misbehaved, or the log was altered),
//! warnings (worth a look, not a breach) and the names scripts can rely on.

use std::fmt;

use serde::Serialize;

/// The kind of a violation: a stable snake_case name (`--json` prints it as `kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ViolationKind {
    /// Entries out of order, missing or repeated (`seq` is not the previous one + 1).
    Sequence,
    /// The hash chain is broken: `prev_hash` is not the previous entry's hash, or `hash` is
    /// not the hash of the entry.
    Chain,
    /// A private payload does not match its commitment.
    Commitment,
    /// An entry cannot be read: unknown kind, missing or mistyped field, bad encoding.
    Malformed,
    /// Entry 1 is not a well-formed `group_created` for the pinned group, or another entry
    /// claims to create the group.
    Group,
    /// A checkpoint note does not verify under the group key (or names another origin).
    CheckpointSignature,
    /// A checkpoint does not match the log: its root is neither the Merkle root of the
    /// first `size` entries nor (a note signed before the tree) the hash of entry `size`,
    /// its fields differ from its signed note, it covers entries after itself, or it goes
    /// back.
    CheckpointMismatch,
    /// A timed checkpoint does not name the newest snapshot among the entries it covers, or
    /// covers a revocation that snapshot does not hold (`dgsp_wire::follow::check_covers`):
    /// it vouches for a state in which a revoked member's signatures verify.
    CheckpointUncovered,
    /// A snapshot's signature does not verify under the group key (or it names another
    /// group).
    SnapshotSignature,
    /// A snapshot does not directly extend the previous one (number + 1, `prev_hash`), or
    /// claims to cover entries after itself.
    SnapshotSuccession,
    /// A snapshot's root or count differs from the set rebuilt from the log's revocations
    /// up to the entry it says it covers.
    SnapshotRoot,
    /// A snapshot goes back: fewer zetas than an earlier snapshot, or an earlier log
    /// position than the previous one.
    SnapshotShrink,
    /// An opening does not pass judge: the manager named the wrong member.
    WrongOpening,
    /// An opened signature does not verify under the group key for the digest the opening
    /// records: the manager opened something no member signed (the registry only opens
    /// signatures that verify), or the logged signature or digest was altered.
    InvalidOpenedSignature,
    /// Certificates were issued to a member after its revocation.
    IssuedToRevoked,
    /// Certificates or a revocation name a member that never joined.
    UnknownMember,
    /// A counter value was issued twice to the same member.
    CounterReused,
    /// A member's counter ranges skip values (they must be contiguous from 0).
    CounterGap,
    /// An issuance lists a different number of WOTS+ key digests than certificates.
    IssueDigests,
    /// A revocation's zeta count (or counter) is not the number of certificates issued to
    /// the member.
    RevocationCount,
    /// A zeta is revoked twice (within one revocation or across revocations).
    DuplicateZeta,
    /// A member is revoked a second time.
    DoubleRevocation,
    /// A member id or username joins twice.
    DuplicateMember,
    /// An entry bundle served as a tile (`audit --tiles`) cannot be read as the entries its
    /// path names: truncated, another number of entries than its width, an entry that is
    /// not a log entry, an entry at another position (a tile of another tree), or entry
    /// bytes that are not the entry's canonical bytes.
    TileBundle,
    /// A hash tile served (`audit --tiles`) differs from the hashes recomputed from the
    /// entry bundles (or is not 32 bytes per hash of its width).
    TileHash,
    /// The RFC 6962 consistency proof between two successive checkpoints (computed from
    /// the served hash tiles) does not verify against their stated roots.
    CheckpointConsistency,
}

impl ViolationKind {
    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            ViolationKind::Sequence => "sequence",
            ViolationKind::Chain => "chain",
            ViolationKind::Commitment => "commitment",
            ViolationKind::Malformed => "malformed",
            ViolationKind::Group => "group",
            ViolationKind::CheckpointSignature => "checkpoint_signature",
            ViolationKind::CheckpointMismatch => "checkpoint_mismatch",
            ViolationKind::CheckpointUncovered => "checkpoint_uncovered",
            ViolationKind::SnapshotSignature => "snapshot_signature",
            ViolationKind::SnapshotSuccession => "snapshot_succession",
            ViolationKind::SnapshotRoot => "snapshot_root",
            ViolationKind::SnapshotShrink => "snapshot_shrink",
            ViolationKind::WrongOpening => "wrong_opening",
            ViolationKind::InvalidOpenedSignature => "invalid_opened_signature",
            ViolationKind::IssuedToRevoked => "issued_to_revoked",
            ViolationKind::UnknownMember => "unknown_member",
            ViolationKind::CounterReused => "counter_reused",
            ViolationKind::CounterGap => "counter_gap",
            ViolationKind::IssueDigests => "issue_digests",
            ViolationKind::RevocationCount => "revocation_count",
            ViolationKind::DuplicateZeta => "duplicate_zeta",
            ViolationKind::DoubleRevocation => "double_revocation",
            ViolationKind::DuplicateMember => "duplicate_member",
            ViolationKind::TileBundle => "tile_bundle",
            ViolationKind::TileHash => "tile_hash",
            ViolationKind::CheckpointConsistency => "checkpoint_consistency",
        }
    }
}

impl fmt::Display for ViolationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One breach, at the entry where it was found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// The entry at which it was found.
    pub seq: u64,
    /// What kind of breach.
    pub kind: ViolationKind,
    /// What exactly, for people.
    pub detail: String,
}

/// The kind of a warning: a stable snake_case name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// A schema-version-1 opening: it does not record the DGSP digest, so neither its
    /// signature nor its opening can be checked from the log (neither passed nor failed).
    UnjudgeableOpening,
    /// Issuances that record no WOTS+ key digests (the core's own issuance path writes
    /// none), so the keys certified are not committed to in the log.
    NoKeyDigests,
    /// An entry of a schema version newer than this auditor reads; its checks were skipped.
    Unreadable,
    /// The log ends with entries that no checkpoint covers yet.
    Uncheckpointed,
    /// The log ends with revocations that no snapshot covers yet.
    Unsnapshotted,
    /// The log is empty.
    Empty,
}

impl WarningKind {
    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            WarningKind::UnjudgeableOpening => "unjudgeable_opening",
            WarningKind::NoKeyDigests => "no_key_digests",
            WarningKind::Unreadable => "unreadable",
            WarningKind::Uncheckpointed => "uncheckpointed",
            WarningKind::Unsnapshotted => "unsnapshotted",
            WarningKind::Empty => "empty",
        }
    }
}

impl fmt::Display for WarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Something worth a look that is not a breach.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// The entry it concerns (the first one, for warnings about several).
    pub seq: Option<u64>,
    /// What kind of warning.
    pub kind: WarningKind,
    /// What exactly, for people.
    pub detail: String,
}

/// The checks that can be skipped, for the report's `skipped` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Skipped {
    /// Commitments of entries whose private part is missing (public feed).
    Commitment,
    /// Member checks (joins, issuance, revocation counts) once a private part is missing:
    /// they need every private payload from entry 1 on.
    MemberChecks,
    /// Signature and judge checks, for want of a group key.
    Signatures,
    /// Checks of an entry that failed its chain or commitment check: its content is not
    /// what the chain commits to, so the one violation says all there is about it.
    AlteredEntry,
    /// Checkpoint roots that cover an entry already reported altered or out of sequence
    /// (`chain`, `sequence`): that leaf is not the one checkpointed, so the root cannot
    /// match, and the one violation says so.
    CheckpointRoot,
    /// Consistency proofs not computed (`audit --tiles`): they would read a hash tile
    /// already reported (`tile_hash`), or the audit stopped at an unreadable bundle.
    Consistency,
}
