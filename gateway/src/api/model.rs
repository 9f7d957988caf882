//! Request and answer bodies. Binary values are standard base64 with padding.

use dgsp_core::revocation::{Membership, RevocationProof, SignedSnapshot};
use dgsp_core::Zeta;
use dgsp_registry::api::problem::to_b64;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::state::{now_ms, View};

/// A signature to verify.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyRequest {
    /// The signed message (base64).
    #[schema(content_encoding = "base64")]
    pub message: String,
    /// The group signature (base64 of its encoding).
    #[schema(content_encoding = "base64")]
    pub signature: String,
}

/// Several signatures to verify in parallel.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// 1 to `max_batch` (default 256) items.
    #[schema(min_items = 1)]
    pub items: Vec<VerifyRequest>,
}

/// A claimed opening to judge.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeRequest {
    /// The signed message (base64).
    #[schema(content_encoding = "base64")]
    pub message: String,
    /// The group signature (base64).
    #[schema(content_encoding = "base64")]
    pub signature: String,
    /// The member id the manager named.
    pub id: u64,
    /// The manager's opening proof (base64).
    #[schema(content_encoding = "base64")]
    pub pi: String,
}

/// The outcome of a verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Valid, and its certificate is not revoked.
    Ok,
    /// Its certificate is revoked (checked first, as the scheme specifies).
    Revoked,
    /// It does not verify.
    InvalidSignature,
    /// A signature of another parameter set, so of another group.
    WrongGroup,
    /// Not a signature encoding (batch items only; a single verify answers 422).
    Malformed,
}

impl Status {
    /// Index into the per-status counters.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Label for metrics.
    pub fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Revoked => "revoked",
            Status::InvalidSignature => "invalid_signature",
            Status::WrongGroup => "wrong_group",
            Status::Malformed => "malformed",
        }
    }

    /// Every status, in counter order.
    pub const ALL: [Status; 5] = [
        Status::Ok,
        Status::Revoked,
        Status::InvalidSignature,
        Status::WrongGroup,
        Status::Malformed,
    ];
}

/// The signed snapshot an answer was checked against (fetch it whole from
/// `/v1/revocations/snapshots/{number}` to check its signature offline).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SnapshotRef {
    /// Snapshot number.
    pub number: u64,
    /// Last log entry it covers.
    pub seq: u64,
    /// Revoked zetas in it.
    pub count: u64,
    /// Its Merkle root (base64).
    pub root: String,
    /// When the manager signed it (Unix ms).
    pub time_unix_ms: u64,
}

impl SnapshotRef {
    /// The reference to `s`.
    pub fn of(s: &SignedSnapshot) -> Self {
        SnapshotRef {
            number: s.record.number,
            seq: s.record.log_seq,
            count: s.record.count,
            root: to_b64(&s.record.root),
            time_unix_ms: s.record.time_unix_ms,
        }
    }
}

/// What a revocation proof shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProofKind {
    /// The zeta is in the snapshot.
    Inclusion,
    /// The zeta is not in the snapshot.
    NonMembership,
}

/// A revocation proof against the answer's snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ProofRef {
    /// Inclusion (revoked) or non-membership (not revoked).
    pub kind: ProofKind,
    /// The proof (base64 of the format in docs/revocation-proofs.md).
    pub encoded: String,
}

impl ProofRef {
    /// Encodes `p`.
    pub fn of(p: &RevocationProof) -> Self {
        ProofRef {
            kind: match p.claim() {
                Membership::Revoked => ProofKind::Inclusion,
                Membership::NotRevoked => ProofKind::NonMembership,
            },
            encoded: to_b64(&p.to_bytes()),
        }
    }
}

/// How current the gateway's state is.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Freshness {
    /// Last log entry applied (covered by a verified checkpoint).
    pub applied_seq: u64,
    /// When the gateway last confirmed it holds everything the registry checkpointed (Unix
    /// ms); absent if never.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synced_unix_ms: Option<u64>,
    /// True when that confirmation is older than the configured bound (`--max-staleness`):
    /// revocations since then may be missing.
    pub stale: bool,
}

/// The revocation state of one zeta in a view.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Revocation {
    /// Whether it is revoked.
    pub revoked: bool,
    /// Revoked by an entry the latest snapshot does not cover yet: the inclusion proof
    /// comes with the next snapshot (`proof` is then absent).
    pub pending_snapshot: bool,
    /// The snapshot checked against (absent only before the first snapshot).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<SnapshotRef>,
    /// The proof against it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proof: Option<ProofRef>,
}

impl Revocation {
    /// Looks `zeta` up in `view`.
    pub fn of(view: &View, zeta: &Zeta) -> Self {
        let pending = view.unsnapshotted.contains_key(zeta);
        let snapshot = view.snapshot.as_deref().map(SnapshotRef::of);
        let proof = if pending || snapshot.is_none() {
            None
        } else {
            Some(ProofRef::of(&view.set.prove(zeta)))
        };
        Revocation {
            revoked: view.is_revoked(zeta),
            pending_snapshot: pending,
            snapshot,
            proof,
        }
    }
}

/// The answer to a verification.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct VerifyAnswer {
    /// True exactly when `status` is `ok`.
    pub valid: bool,
    /// The outcome.
    pub status: Status,
    /// The parameter set of the group (`wrong_group`: of the signature).
    pub params: String,
    /// The signature's certificate serial number (base64), when it could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zeta: Option<String>,
    /// Revocation state of `zeta`, with the snapshot and proof (absent for `wrong_group`,
    /// `malformed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revocation: Option<Revocation>,
    /// How current the state checked against is.
    pub freshness: Freshness,
    /// Why it is not `ok`, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Batch answers, in request order.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct BatchAnswer {
    /// One answer per item.
    pub results: Vec<VerifyAnswer>,
    /// Items per status.
    pub ok: usize,
    /// Items not `ok`.
    pub not_ok: usize,
}

/// The answer to a judge request.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct JudgeAnswer {
    /// True when the signature verifies and `(id, pi)` is its correct opening.
    pub correct: bool,
    /// Whether the signature itself verifies (revocation aside).
    pub signature_valid: bool,
    /// Whether `(id, pi)` matches the signature's `tau`.
    pub opening_matches: bool,
    /// The group's parameter set.
    pub params: String,
    /// Why it is not correct, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The freshness of `view` given the follower's last sync and the bound.
pub fn freshness(
    view: &View,
    synced_unix_ms: Option<u64>,
    max_staleness: std::time::Duration,
) -> Freshness {
    let stale = synced_unix_ms
        .is_none_or(|t| now_ms().saturating_sub(t) > max_staleness.as_millis() as u64);
    Freshness {
        applied_seq: view.applied.seq,
        synced_unix_ms,
        stale,
    }
}
