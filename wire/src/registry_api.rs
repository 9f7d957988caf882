//! The registry's answers as its clients read them (`dgsp-manager`, scripts): members,
//! certificates issued, revocations and openings (admin API), the group and the newest
//! signed checkpoint (public API). The registry serves exactly these types.

use dgsp_core::MemberId;
use serde::{Deserialize, Serialize};

/// Most WOTS+ keys certified by one request.
pub const MAX_ISSUE: usize = 1024;

/// Most usernames in one bulk join.
pub const MAX_BULK_JOIN: usize = 10_000;

/// A member as admitted.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JoinedMember {
    /// Assigned id.
    pub id: MemberId,
    /// Username.
    pub username: String,
    /// `cid*` for the member's certificate requests (standard base64, N bytes).
    pub cid_star: String,
}

/// Members admitted together.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BulkJoined {
    /// In request order.
    pub members: Vec<JoinedMember>,
}

/// Certificates, one per requested key, in request order.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Issued {
    /// Member id.
    pub id: MemberId,
    /// Counter value of the first certificate.
    pub first_counter: u64,
    /// Encoded certificates (standard base64 of the kind-3 encoding).
    pub certificates: Vec<String>,
}

/// A revocation.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Revoked {
    /// Member id.
    pub id: MemberId,
    /// Log entry of the revocation.
    pub seq: u64,
    /// True if the member had already been revoked (nothing changed).
    pub already_revoked: bool,
    /// The member's revoked zetas (standard base64, 16 bytes each).
    pub zetas: Vec<String>,
}

/// A member record.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MemberInfo {
    /// Member id.
    pub id: MemberId,
    /// Username.
    pub username: String,
    /// False once revoked.
    pub active: bool,
    /// Certificates issued.
    pub certificates_issued: u64,
    /// Log entry of the revocation, once revoked.
    pub revoked_at: Option<u64>,
}

/// A page of members.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MemberPage {
    /// In id order.
    pub members: Vec<MemberInfo>,
    /// `from` for the next page; absent on the last page.
    pub next: Option<u64>,
}

/// The signer of a signature, with what a third party needs to judge the claim.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Opened {
    /// Signer's member id.
    pub id: MemberId,
    /// Signer's username.
    pub username: String,
    /// Which of the signer's certificates was used.
    pub counter: u64,
    /// Opening proof (standard base64, N bytes): give it with `id` to `POST /v1/judge`.
    pub pi: String,
    /// Log entry recording the opening.
    pub seq: u64,
}

/// The group: what verifiers pin.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GroupInfo {
    /// Parameter set name.
    pub params: String,
    /// The manager signature's standard: `fips205` (FIPS 205 SLH-DSA, `slh-dsa-*` sets) or
    /// `round3` (SPHINCS+ round 3.1). Absent from registries older than the FIPS 205 sets,
    /// which serve only round 3.1 groups.
    #[serde(default = "round3")]
    #[cfg_attr(feature = "openapi", schema(example = "fips205"))]
    pub standard: String,
    /// Group public key (standard base64 of its encoding).
    pub public_key: String,
    /// SHA3-256 of the public key encoding (hex).
    pub fingerprint: String,
    /// Current log head.
    pub head_seq: u64,
    /// Hash of the head entry (hex).
    pub head_hash: String,
}

/// The newest signed checkpoint, as kept in `meta` and served at `GET /v1/checkpoint`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StoredNote {
    /// Entries covered.
    pub size: u64,
    /// Hash of entry `size` (hex).
    pub head: String,
    /// When the registry signed it (Unix ms), as the note's `time` line says.
    pub time_unix_ms: u64,
    /// The signed note (docs/checkpoints.md).
    pub note: String,
}

fn round3() -> String {
    dgsp_core::Standard::Round3.tag().to_owned()
}

/// `GET /v1/checkpoint`'s answer.
pub type CheckpointInfo = StoredNote;
