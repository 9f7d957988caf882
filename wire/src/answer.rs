//! The gateway's request and answer bodies (`POST /v1/verify`, `/v1/verify/batch`,
//! `/v1/judge`) with the evidence an answer carries. Binary values are standard base64
//! with padding.

use std::borrow::Cow;
use std::sync::Arc;

use dgsp_core::revocation::{Membership, RevocationProof, SignedSnapshot};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

// The base64 fields are borrowed from the request body (owned only when the JSON string has
// escapes): the gateway parses verify bodies into these types directly (`api::body`).

/// A signature to verify.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct VerifyRequest<'a> {
    /// The signed message (base64).
    #[cfg_attr(feature = "openapi", schema(content_encoding = "base64", value_type = String))]
    #[serde(borrow)]
    pub message: Cow<'a, str>,
    /// The group signature (base64 of its encoding).
    #[cfg_attr(feature = "openapi", schema(content_encoding = "base64", value_type = String))]
    #[serde(borrow)]
    pub signature: Cow<'a, str>,
}

/// Several signatures to verify in parallel.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BatchRequest<'a> {
    /// 1 to `max_batch` (default 256) items.
    #[cfg_attr(feature = "openapi", schema(min_items = 1))]
    #[serde(borrow)]
    pub items: Vec<VerifyRequest<'a>>,
}

/// A claimed opening to judge.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JudgeRequest {
    /// The signed message (base64).
    #[cfg_attr(feature = "openapi", schema(content_encoding = "base64"))]
    pub message: String,
    /// The group signature (base64).
    #[cfg_attr(feature = "openapi", schema(content_encoding = "base64"))]
    pub signature: String,
    /// The member id the manager named.
    pub id: u64,
    /// The manager's opening proof (base64).
    #[cfg_attr(feature = "openapi", schema(content_encoding = "base64"))]
    pub pi: String,
}

/// The outcome of a verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    /// The gateway's newest signed checkpoint is older than its `--max-staleness-secs`:
    /// revocations since then may be missing, so it gives no verdict (`valid` is false).
    Stale,
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
            Status::Stale => "stale",
        }
    }

    /// Every status, in counter order.
    pub const ALL: [Status; 6] = [
        Status::Ok,
        Status::Revoked,
        Status::InvalidSignature,
        Status::WrongGroup,
        Status::Malformed,
        Status::Stale,
    ];
}

/// The signed snapshot an answer was checked against (fetch it whole from
/// `/v1/revocations/snapshots/{number}` to check its signature offline).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
            root: b64(&s.record.root),
            time_unix_ms: s.record.time_unix_ms,
        }
    }
}

/// What a revocation proof shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ProofKind {
    /// The zeta is in the snapshot.
    Inclusion,
    /// The zeta is not in the snapshot.
    NonMembership,
}

/// A revocation proof against the answer's snapshot.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
            encoded: b64(&p.to_bytes()),
        }
    }
}

/// The signed checkpoint an answer's state is fresh as of: the newest checkpoint the
/// gateway has verified and applied, which covers exactly its applied entries.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CheckpointEvidence {
    /// Log entries it covers (`applied_seq`).
    pub size: u64,
    /// When the registry signed it (Unix ms): the state is the registry's as of then.
    pub time_unix_ms: u64,
    /// The revocation snapshot it names (the one the answer's proof is against); absent
    /// before the first snapshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_number: Option<u64>,
    /// The whole signed note (docs/checkpoints.md): verify it under the group key to check
    /// `time_unix_ms` and the snapshot (number and record hash) yourself. Omitted in the
    /// items of a batch answer, whose top-level `freshness` carries it once.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub note: Option<Note>,
    /// The same tree (origin, size, root) as a witnessed C2SP checkpoint note: signed by
    /// the group's ML-DSA-44 log key and cosigned by the witnesses of the gateway's policy
    /// (docs/witnesses.md). Verify it against your own policy: a quorum of cosignatures, each
    /// no older than your maximum age. Absent when the gateway has no witness policy, and
    /// in the items of a batch answer (like `note`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub witnessed: Option<Note>,
}

/// A signed checkpoint note as an answer carries it: the text, and its JSON string form made
/// once per note (a note carries a SPHINCS+ signature of up to ~50 KB, which every verify
/// answer repeats: escaping and copying it per answer was most of the cost of writing one).
#[derive(Clone, Debug)]
pub struct Note(Arc<NoteForms>);

#[derive(Debug)]
struct NoteForms {
    text: String,
    json: Box<RawValue>,
}

impl Note {
    /// The note `text`.
    pub fn new(text: String) -> Self {
        let json = serde_json::to_string(&text).expect("a string always serializes");
        let json = RawValue::from_string(json).expect("a JSON string literal is valid JSON");
        Note(Arc::new(NoteForms { text, json }))
    }

    /// The note's text.
    pub fn as_str(&self) -> &str {
        &self.0.text
    }
}

impl std::ops::Deref for Note {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Note {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Note {}

impl Serialize for Note {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.json.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Note {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Note::new)
    }
}

/// How current the state an answer was checked against is, by the registry's signed time.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Freshness {
    /// Last log entry applied (covered by a verified checkpoint).
    pub applied_seq: u64,
    /// The checkpoint the state is fresh as of; absent before the first checkpoint with a
    /// signed time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointEvidence>,
    /// Milliseconds between the checkpoint's signed time and this answer (absent with
    /// `checkpoint`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_ms: Option<u64>,
    /// The gateway's bound (`--max-staleness-secs`), in milliseconds.
    pub max_staleness_ms: u64,
    /// True when `age_ms` exceeds the bound or there is no timed checkpoint: revocations
    /// signed since may be missing.
    pub stale: bool,
}

impl Freshness {
    /// The same without the note (the items of a batch answer).
    pub fn without_note(&self) -> Self {
        let mut f = self.clone();
        if let Some(c) = &mut f.checkpoint {
            c.note = None;
            c.witnessed = None;
        }
        f
    }
}

/// The revocation state of one zeta in a view.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

/// The answer to a verification.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BatchAnswer {
    /// One answer per item (their `freshness` omits the note).
    pub results: Vec<VerifyAnswer>,
    /// How current the state every item was checked against is, with the signed note.
    pub freshness: Freshness,
    /// Items per status.
    pub ok: usize,
    /// Items not `ok`.
    pub not_ok: usize,
}

/// The answer to a judge request.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

/// Standard base64 with padding (every binary field of these bodies).
pub fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Parses a zeta as clients write it: 32 hex characters, unpadded base64url (22 characters)
/// or standard base64 (the gateway's proof path, `dgsp-manager check-proof`).
pub fn parse_zeta(s: &str) -> Option<dgsp_core::Zeta> {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use base64::Engine;
    if let Some(bytes) = crate::log::unhex::<16>(s) {
        return Some(dgsp_core::Zeta(bytes));
    }
    let decoded = URL_SAFE_NO_PAD
        .decode(s)
        .or_else(|_| STANDARD.decode(s))
        .ok()?;
    dgsp_core::Zeta::from_slice(&decoded).ok()
}
