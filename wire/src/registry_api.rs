//! The registry's admin requests and its answers, as its clients write and read them
//! (`dgsp-manager`, scripts): the bodies of a join, a bulk join, an issuance, an opening and
//! a backup; members, certificates issued, revocations and openings (admin API), the group
//! and the newest signed checkpoint (public API). The registry reads and serves exactly
//! these types (it checks the bodies itself, `dgsp_registry::api::admin`).

use dgsp_core::MemberId;
use serde::{Deserialize, Serialize};

/// Most WOTS+ keys certified by one request.
pub const MAX_ISSUE: usize = 1024;

/// Most usernames in one bulk join.
pub const MAX_BULK_JOIN: usize = 10_000;

/// Longest username, in bytes.
pub const MAX_USERNAME: usize = 128;

/// `POST /admin/v1/members` body.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JoinRequest {
    /// Unique username: 1 to 128 bytes of UTF-8 without control characters.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 128,
            pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$"
        )
    )]
    pub username: String,
}

/// `POST /admin/v1/members/bulk` body.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BulkJoinRequest {
    /// Unique usernames (1 to 10000); all are admitted or none.
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 10000))]
    pub usernames: Vec<String>,
}

/// `POST /admin/v1/members/{id}/certificates` body.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct IssueRequest {
    /// The member's `cid*` (standard base64).
    #[cfg_attr(feature = "openapi", schema(content_encoding = "base64"))]
    pub cid_star: String,
    /// WOTS+ public keys to certify (standard base64, N bytes each).
    #[cfg_attr(feature = "openapi", schema(schema_with = base64_list))]
    pub wots_pks: Vec<String>,
}

/// An array of standard base64 strings: [`IssueRequest::wots_pks`].
#[cfg(feature = "openapi")]
fn base64_list() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    ArrayBuilder::new()
        .min_items(Some(1))
        .max_items(Some(MAX_ISSUE))
        .description(Some(
            "WOTS+ public keys to certify (standard base64, N bytes each), 1 to 1024.",
        ))
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .content_encoding("base64"),
        )
        .build()
}

/// `POST /admin/v1/open` body.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct OpenRequest {
    /// The signed message (standard base64).
    #[cfg_attr(feature = "openapi", schema(content_encoding = "base64"))]
    pub message: String,
    /// The signature (standard base64 of its encoding).
    #[cfg_attr(feature = "openapi", schema(content_encoding = "base64"))]
    pub signature: String,
}

/// `POST /admin/v1/backup` body.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BackupRequest {
    /// Name of the backup directory under the registry's backup directory (`--backup-dir`,
    /// default `DATA/backups`); default: the UTC time, `20250131T235959Z`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 64,
            pattern = "^[A-Za-z0-9][A-Za-z0-9._-]*$",
            nullable = false
        )
    )]
    pub name: Option<String>,
}

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
    /// The same checkpoint as a witnessed C2SP note (origin, size and root only), signed
    /// by the group's ML-DSA-44 log key and cosigned by a quorum of the registry's
    /// witnesses (docs/witnesses.md); absent when the registry has no witnesses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witnessed: Option<String>,
}

fn round3() -> String {
    dgsp_core::Standard::Round3.tag().to_owned()
}

/// `GET /v1/checkpoint`'s answer.
pub type CheckpointInfo = StoredNote;
