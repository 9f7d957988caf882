//! The operator's API (bearer admin token): join, issue, revoke, open, member lookup,
//! online backup. Every write to the log accepts an `Idempotency-Key` header: a retry with the same key and request
//! returns the first answer and changes nothing.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use dgsp_core::{CidStar, MemberId, ParamSet, Signature, WotsPk, MAX_N};
use dgsp_wire::limits::{base64_len, signed_message_body_limit, DEFAULT_MAX_MESSAGE, FRAMING};
use serde::{Deserialize, Serialize};
use sha3::{Digest, Sha3_256};
use utoipa::IntoParams;

use super::problem::IdPath;
use super::{Admin, Shared};
use crate::backup::{self, BackupError};
use crate::issuance::Job;
use crate::writer::{Command, Idempotency, Outcome};
use dgsp_http::problem::{b64, to_b64, Body, Params, Problem};
use dgsp_wire::events::Event;

pub use dgsp_wire::registry_api::{
    BackupRequest, BulkJoinRequest, BulkJoined, IssueRequest, Issued, JoinRequest, JoinedMember,
    MemberInfo, MemberPage, OpenRequest, Opened, Revoked, MAX_BULK_JOIN, MAX_ISSUE, MAX_USERNAME,
};

/// Body limit of a join: one username of [`MAX_USERNAME`] bytes even if every byte is
/// written as a six-byte `\u` escape, and [`FRAMING`] (1,792 bytes).
pub const JOIN_BODY_LIMIT: usize = 6 * MAX_USERNAME + FRAMING;

/// Body limit of an issuance: twice the compact JSON of the largest one ([`MAX_ISSUE`] keys
/// and a `cid*` of the largest `N`, in base64 with quotes and commas), and [`FRAMING`]
/// (97,368 bytes).
pub const ISSUE_BODY_LIMIT: usize =
    2 * (MAX_ISSUE * (base64_len(MAX_N) + 3) + base64_len(MAX_N)) + FRAMING;

/// Body limit of an opening: one message of [`DEFAULT_MAX_MESSAGE`] bytes and one signature
/// (`dgsp_wire::limits::signed_message_body_limit`, 1,503,296 bytes).
pub const OPEN_BODY_LIMIT: usize = signed_message_body_limit(DEFAULT_MAX_MESSAGE);

/// Body limit of a backup request (a name of at most 64 bytes): [`FRAMING`], 1 KiB.
pub const SMALL_BODY_LIMIT: usize = FRAMING;

fn idempotency(
    headers: &HeaderMap,
    route: &str,
    body: &impl Serialize,
) -> Result<Option<Idempotency>, Problem> {
    let Some(v) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = v
        .to_str()
        .ok()
        .filter(|k| !k.is_empty() && k.len() <= 200)
        .ok_or_else(|| {
            Problem::bad_field("Idempotency-Key", "1 to 200 visible ASCII characters")
        })?;
    let mut h = Sha3_256::new();
    h.update(route.as_bytes());
    h.update([0]);
    h.update(serde_json::to_vec(body).expect("requests serialize"));
    Ok(Some(Idempotency {
        key: key.to_owned(),
        fingerprint: hex::encode(h.finalize()),
    }))
}

fn check_username(field: &str, u: &str) -> Result<(), Problem> {
    if u.is_empty() || u.len() > MAX_USERNAME || u.chars().any(char::is_control) {
        return Err(Problem::invalid_field(
            field,
            format!("a username is 1 to {MAX_USERNAME} bytes without control characters"),
        ));
    }
    Ok(())
}

/// Checks a [`JoinRequest`] as the handler does before anything is written (a 422 naming
/// the field).
pub fn check_join(req: &JoinRequest) -> Result<(), Problem> {
    check_username("username", &req.username)
}

async fn join_many(
    s: &Shared,
    usernames: Vec<String>,
    idem: Option<Idempotency>,
) -> Result<Vec<JoinedMember>, Problem> {
    let outcome = s
        .writer
        .submit(
            Command::Join {
                usernames: usernames.clone(),
            },
            idem,
        )
        .await?;
    let Outcome::Joined { ids, .. } = outcome else {
        return Err(Problem::internal("join", "unexpected writer outcome"));
    };
    Ok(ids
        .into_iter()
        .zip(usernames)
        .map(|(id, username)| JoinedMember {
            id,
            username,
            cid_star: to_b64(s.manager.cid_star(id).as_bytes()),
        })
        .collect())
}

/// Admit one member.
#[utoipa::path(post, path = "/admin/v1/members", tag = "admin", request_body = JoinRequest,
    params(("Idempotency-Key" = Option<String>, Header, description = "a retry with the same key and request returns the first answer and changes nothing; 1 to 200 visible ASCII characters")),
    responses((status = 201, body = JoinedMember), (status = 409, body = Problem), (status = 422, body = Problem)),
    security(("admin" = [])))]
pub async fn join(
    _: Admin,
    State(s): State<Shared>,
    headers: HeaderMap,
    Body(req): Body<JoinRequest>,
) -> Result<(StatusCode, Json<JoinedMember>), Problem> {
    check_join(&req)?;
    let idem = idempotency(&headers, "join", &req)?;
    let mut joined = join_many(&s, vec![req.username], idem).await?;
    Ok((StatusCode::CREATED, Json(joined.remove(0))))
}

/// Checks a [`BulkJoinRequest`] as the handler does before anything is written: 1 to
/// [`MAX_BULK_JOIN`] usernames (422 on `usernames`), each acceptable (422 on
/// `usernames[i]`).
pub fn check_bulk_join(req: &BulkJoinRequest) -> Result<(), Problem> {
    if req.usernames.is_empty() || req.usernames.len() > MAX_BULK_JOIN {
        return Err(Problem::invalid_field(
            "usernames",
            format!("1 to {MAX_BULK_JOIN} usernames"),
        ));
    }
    for (i, u) in req.usernames.iter().enumerate() {
        check_username(&format!("usernames[{i}]"), u)?;
    }
    Ok(())
}

/// Admit many members at once, all or none.
#[utoipa::path(post, path = "/admin/v1/members/bulk", tag = "admin", request_body = BulkJoinRequest,
    params(("Idempotency-Key" = Option<String>, Header, description = "a retry with the same key and request returns the first answer and changes nothing; 1 to 200 visible ASCII characters")),
    responses((status = 201, body = BulkJoined), (status = 409, body = Problem), (status = 422, body = Problem)),
    security(("admin" = [])))]
pub async fn join_bulk(
    _: Admin,
    State(s): State<Shared>,
    headers: HeaderMap,
    Body(req): Body<BulkJoinRequest>,
) -> Result<(StatusCode, Json<BulkJoined>), Problem> {
    check_bulk_join(&req)?;
    let idem = idempotency(&headers, "join_bulk", &req)?;
    let members = join_many(&s, req.usernames, idem).await?;
    Ok((StatusCode::CREATED, Json(BulkJoined { members })))
}

/// Decodes an [`IssueRequest`] for a group of `params` as the handler does before anything
/// is written: 1 to [`MAX_ISSUE`] keys (422 on `wots_pks`), then `cid_star` and each
/// `wots_pks[i]` (400 naming the field).
pub fn decode_issue(
    req: &IssueRequest,
    params: ParamSet,
) -> Result<(CidStar, Vec<WotsPk>), Problem> {
    if req.wots_pks.is_empty() || req.wots_pks.len() > MAX_ISSUE {
        return Err(Problem::invalid_field(
            "wots_pks",
            format!("1 to {MAX_ISSUE} public keys"),
        ));
    }
    let cid_star = CidStar::from_slice(params, &b64("cid_star", &req.cid_star)?)
        .map_err(|e| Problem::bad_field("cid_star", e.to_string()))?;
    let mut pks = Vec::with_capacity(req.wots_pks.len());
    for (i, pk) in req.wots_pks.iter().enumerate() {
        let field = format!("wots_pks[{i}]");
        let bytes = b64(&field, pk)?;
        pks.push(
            WotsPk::from_slice(params, &bytes)
                .map_err(|e| Problem::bad_field(&field, e.to_string()))?,
        );
    }
    Ok((cid_star, pks))
}

/// Issue certificates for a member's WOTS+ public keys.
///
/// Signing stops soon after the request is abandoned (client gone or request timed out).
/// With an `Idempotency-Key`, a retry gets the same counters; it joins the signing still
/// under way, continues from what an abandoned attempt had signed, or, up to 10 minutes
/// after completion (while the registry's 256 MiB for kept certificates allows), receives
/// the same certificates byte for byte without signing again.
#[utoipa::path(post, path = "/admin/v1/members/{id}/certificates", tag = "admin", request_body = IssueRequest,
    params(("id" = u64, Path, description = "member id"),
        ("Idempotency-Key" = Option<String>, Header, description = "a retry with the same key and request returns the first answer and changes nothing; 1 to 200 visible ASCII characters")),
    responses((status = 200, body = Issued),
        (status = 400, description = "malformed id, body, `cid_star` or `wots_pks[i]`", body = Problem),
        (status = 403, description = "`cid_star` is not the member's", body = Problem),
        (status = 404, description = "no such member", body = Problem),
        (status = 409, description = "the member is revoked (`member-revoked`), or the issuance would take it past 1 048 576 certificates (`certificate-limit`)", body = Problem),
        (status = 422, description = "no or too many keys (1 to 1024)", body = Problem)),
    security(("admin" = [])))]
pub async fn issue(
    _: Admin,
    State(s): State<Shared>,
    IdPath(id): IdPath,
    headers: HeaderMap,
    Body(req): Body<IssueRequest>,
) -> Result<Json<Issued>, Problem> {
    let (cid_star, pks) = decode_issue(&req, s.manager.params())?;
    if s.manager.check_cid_star(id, &cid_star).is_err() {
        return Err(Problem::new(
            StatusCode::FORBIDDEN,
            "cid-star-mismatch",
            "cid* does not match",
            format!("cid* is not the one issued to member {id}"),
        )
        .at("cid_star"));
    }
    let idem = idempotency(&headers, &format!("issue/{id}"), &req)?;
    let retryable = idem.is_some();
    let digests = pks
        .iter()
        .map(|pk| hex::encode(Sha3_256::digest(pk.as_bytes())))
        .collect();
    let outcome = s
        .writer
        .submit(
            Command::Issue {
                id,
                count: req.wots_pks.len() as u64,
                wots_pk_digests: digests,
            },
            idem,
        )
        .await?;
    let Outcome::Reserved { first, .. } = outcome else {
        return Err(Problem::internal("issue", "unexpected writer outcome"));
    };
    // Signed by a job that stops if this request goes away, is shared with a concurrent
    // retry and, with an idempotency key, kept for later ones (crate::issuance).
    let certs = s
        .issuer
        .certify(Job {
            id,
            first,
            wots_pks: pks,
            retryable,
        })
        .await
        .map_err(|e| Problem::internal("certificate signing", e))?;
    Ok(Json(Issued {
        id,
        first_counter: first,
        certificates: certs.iter().map(|c| to_b64(c)).collect(),
    }))
}

/// Revoke a member: all of its certificates, for good. Idempotent.
#[utoipa::path(post, path = "/admin/v1/members/{id}/revoke", tag = "admin",
    params(("id" = u64, Path, description = "member id"),
        ("Idempotency-Key" = Option<String>, Header, description = "a retry with the same key and request returns the first answer and changes nothing; 1 to 200 visible ASCII characters")),
    responses((status = 200, body = Revoked),
        (status = 400, description = "malformed id or `Idempotency-Key`", body = Problem),
        (status = 404, description = "no such member", body = Problem),
        (status = 422, description = "`Idempotency-Key` reused for another request", body = Problem)),
    security(("admin" = [])))]
pub async fn revoke(
    _: Admin,
    State(s): State<Shared>,
    IdPath(id): IdPath,
    headers: HeaderMap,
) -> Result<Json<Revoked>, Problem> {
    let outcome = s
        .writer
        .submit(
            Command::Revoke { id },
            idempotency(&headers, &format!("revoke/{id}"), &id)?,
        )
        .await?;
    let Outcome::Revoked {
        seq,
        zetas,
        already,
        ..
    } = outcome
    else {
        return Err(Problem::internal("revoke", "unexpected writer outcome"));
    };
    let zetas = zetas
        .iter()
        .map(|z| to_b64(&hex::decode(z).unwrap_or_default()))
        .collect();
    Ok(Json(Revoked {
        id,
        seq,
        already_revoked: already,
        zetas,
    }))
}

fn member_info(id: MemberId, m: crate::store::MemberView) -> MemberInfo {
    MemberInfo {
        id,
        username: m.username,
        active: m.active,
        certificates_issued: m.counter,
        revoked_at: m.revoked_at,
    }
}

/// Largest page of the member list.
pub const MAX_MEMBER_PAGE: usize = 1000;

/// `GET /admin/v1/members` query.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct MemberQuery {
    /// Members with id at least this (default 0).
    #[serde(default)]
    #[param(required = false)]
    pub from: u64,
    /// Page size, 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000, nullable = false)]
    pub limit: Option<usize>,
    /// Only the member with this username (ignores `from`/`limit`).
    #[param(nullable = false)]
    pub username: Option<String>,
}

/// List members in id order, a page at a time, or look one up by username.
#[utoipa::path(get, path = "/admin/v1/members", tag = "admin", params(MemberQuery),
    responses((status = 200, body = MemberPage), (status = 400, body = Problem)),
    security(("admin" = [])))]
pub async fn members(
    _: Admin,
    State(s): State<Shared>,
    Params(q): Params<MemberQuery>,
) -> Result<Json<MemberPage>, Problem> {
    if let Some(name) = q.username {
        let found = match s.store.id_of(&name) {
            Ok(Some(id)) => s.store.member(id).map(|m| m.map(|m| member_info(id, m))),
            Ok(None) => Ok(None),
            Err(e) => Err(e),
        }
        .map_err(|e| Problem::storage("member lookup", e))?;
        return Ok(Json(MemberPage {
            members: found.into_iter().collect(),
            next: None,
        }));
    }
    let limit = q.limit.unwrap_or(100);
    if limit == 0 || limit > MAX_MEMBER_PAGE {
        return Err(Problem::bad_field(
            "limit",
            format!("1 to {MAX_MEMBER_PAGE}"),
        ));
    }
    // One more than asked tells whether a next page exists.
    let mut page = s
        .store
        .members_from(q.from, limit + 1)
        .map_err(|e| Problem::storage("member list", e))?;
    let next = (page.len() > limit).then(|| page[limit].0);
    page.truncate(limit);
    Ok(Json(MemberPage {
        members: page.into_iter().map(|(id, m)| member_info(id, m)).collect(),
        next,
    }))
}

/// Look up a member.
#[utoipa::path(get, path = "/admin/v1/members/{id}", tag = "admin",
    params(("id" = u64, Path, description = "member id")),
    responses((status = 200, body = MemberInfo),
        (status = 400, description = "malformed id", body = Problem),
        (status = 404, description = "no such member", body = Problem)),
    security(("admin" = [])))]
pub async fn member(
    _: Admin,
    State(s): State<Shared>,
    IdPath(id): IdPath,
) -> Result<Json<MemberInfo>, Problem> {
    let m = s
        .store
        .member(id)
        .map_err(|e| Problem::storage("member lookup", e))?
        .ok_or_else(|| {
            Problem::new(
                StatusCode::NOT_FOUND,
                "unknown-member",
                "Unknown member",
                format!("no member with id {id}"),
            )
        })?;
    Ok(Json(member_info(id, m)))
}

/// Decodes an [`OpenRequest`] as the handler does before opening: the message and the
/// signature (400 naming the field).
pub fn decode_open(req: &OpenRequest) -> Result<(Vec<u8>, Signature), Problem> {
    let message = b64("message", &req.message)?;
    let sig = Signature::from_bytes(&b64("signature", &req.signature)?)
        .map_err(|e| Problem::bad_field("signature", e.to_string()))?;
    Ok((message, sig))
}

/// Open a valid signature to its signer (refuses invalid ones). The opening is logged.
#[utoipa::path(post, path = "/admin/v1/open", tag = "admin", request_body = OpenRequest,
    params(("Idempotency-Key" = Option<String>, Header, description = "a retry with the same key and request returns the first answer and changes nothing; 1 to 200 visible ASCII characters")),
    responses((status = 200, body = Opened), (status = 400, body = Problem), (status = 422, body = Problem)),
    security(("admin" = [])))]
pub async fn open(
    _: Admin,
    State(s): State<Shared>,
    headers: HeaderMap,
    Body(req): Body<OpenRequest>,
) -> Result<Json<Opened>, Problem> {
    let idem = idempotency(&headers, "open", &req)?;
    let (message, sig) = decode_open(&req)?;
    let manager = s.manager.clone();
    let (sig, message, opening) = tokio::task::spawn_blocking(move || {
        let o = manager.open(&message, &sig);
        (sig, message, o)
    })
    .await
    .map_err(|e| Problem::internal("open", e))?;
    let opening = opening.map_err(|e| {
        Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid-signature",
            "Signature does not verify",
            format!("{e}: only valid signatures are opened"),
        )
        .at("signature")
    })?;
    let m = s
        .store
        .member(opening.id)
        .map_err(|e| Problem::storage("member lookup", e))?;
    let event = Event::SignatureOpened {
        signature: to_b64(&sig.to_bytes()),
        message_digest: hex::encode(Sha3_256::digest(&message)),
        digest: Some(hex::encode(sig.message_digest(&message).as_bytes())),
        id: opening.id,
        pi: hex::encode(opening.pi.as_bytes()),
    };
    let Outcome::Appended { seq } = s.writer.submit(Command::Append { event }, idem).await? else {
        return Err(Problem::internal("open", "unexpected writer outcome"));
    };
    Ok(Json(Opened {
        id: opening.id,
        username: m.map(|m| m.username).unwrap_or_default(),
        counter: opening.counter,
        pi: to_b64(opening.pi.as_bytes()),
        seq,
    }))
}

/// Checks a [`BackupRequest`] as the handler does before backing up (422 on `name`).
pub fn check_backup(req: &BackupRequest) -> Result<(), Problem> {
    match &req.name {
        Some(name) => {
            backup::check_name(name).map_err(|e| Problem::invalid_field("name", e.to_string()))
        }
        None => Ok(()),
    }
}

/// Make an online backup on the registry's host.
///
/// A consistent RocksDB checkpoint of the log and its projections, the encrypted manager key
/// (copied as is) and a manifest (`backup.json`: group, parameter set, log head at the
/// checkpoint), written under the registry's backup directory. Writes go on meanwhile. The directory appears only once complete; an existing
/// non-empty one is never written over. Same file system as the data directory: table files
/// are hard-linked and a backup takes seconds (a request that times out, 408, may still
/// complete). Restore with `dgsp-registry restore` (docs/deploy.md, "Backups").
#[utoipa::path(post, path = "/admin/v1/backup", tag = "admin", request_body = BackupRequest,
    responses((status = 201, body = backup::Created),
        (status = 409, description = "a backup of that name exists (`backup-exists`), or this registry has no backup settings (`backups-disabled`)", body = Problem),
        (status = 422, description = "the name is not acceptable", body = Problem),
        (status = 500, description = "the backup failed (`backup-failed`: disk full, permissions, ...); nothing was left in its place", body = Problem)),
    security(("admin" = [])))]
pub async fn backup(
    _: Admin,
    State(s): State<Shared>,
    Body(req): Body<BackupRequest>,
) -> Result<(StatusCode, Json<backup::Created>), Problem> {
    check_backup(&req)?;
    let store = s.store.clone();
    let settings = s.backups.clone();
    let made = tokio::task::spawn_blocking(move || {
        let settings = settings.ok_or(BackupError::Disabled)?;
        backup::create_named(&store, &settings, req.name.as_deref())
    })
    .await
    .map_err(|e| Problem::internal("backup", e))?;
    match made {
        Ok(created) => Ok((StatusCode::CREATED, Json(created))),
        Err(e @ (BackupError::TargetNotEmpty { .. } | BackupError::TargetNotDirectory { .. })) => {
            Err(Problem::new(
                StatusCode::CONFLICT,
                "backup-exists",
                "Backup exists",
                e.to_string(),
            )
            .at("name"))
        }
        Err(e @ BackupError::BadName { .. }) => Err(Problem::invalid_field("name", e.to_string())),
        Err(e @ BackupError::Disabled) => Err(Problem::new(
            StatusCode::CONFLICT,
            "backups-disabled",
            "Backups disabled",
            e.to_string(),
        )),
        Err(e) => Err(Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "backup-failed",
            "Backup failed",
            e.to_string(),
        )),
    }
}
