//! The registry's OpenAPI document, generated from the handlers' annotations.
//!
//! `dgsp-registry openapi > openapi/registry.json` writes it; a test fails when the committed
//! file differs from what the code generates.

use utoipa::openapi::header::Header;
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Content, Object, Ref, RefOr, Response, Type};
use utoipa::{Modify, OpenApi};

use super::{admin, problem, public};

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "DGSP registry",
        description = "The group manager's registry: admin API (bearer admin token) for joins, certificate issuance, revocation and opening; public API for the group, the hash-chained log feed, signed checkpoints, signed revocation snapshots and revocation proofs. Errors are application/problem+json (RFC 9457).",
        license(name = "MIT OR Apache-2.0")
    ),
    paths(
        admin::join, admin::join_bulk, admin::members, admin::member, admin::issue, admin::revoke, admin::open,
        admin::backup,
        public::group, public::entries, public::checkpoint, public::latest_snapshot,
        public::snapshot, public::proof
    ),
    components(schemas(problem::Problem)),
    modifiers(&Security, &ProblemResponses),
    tags((name = "admin", description = "operator API, bearer admin token"),
         (name = "public", description = "anyone"))
)]
pub struct RegistryApi;

struct Security;

impl Modify for Security {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "admin",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// Media type of every error answer ([`problem::Problem`]).
pub const PROBLEM_JSON: &str = "application/problem+json";

/// What every operation of both services can answer besides its own responses, written into
/// the document so it says what the shared layers do (checked with schemathesis by
/// `scripts/api-check.sh`):
/// - a [`problem::Problem`] answer is `application/problem+json`, never `application/json`;
/// - an operation with a JSON body answers 400 (malformed JSON), 413 (body over the limit)
///   and 415 (no `Content-Type: application/json`), from [`problem::Body`] and the body
///   limit;
/// - an operation that requires the admin token answers 401 without it.
pub struct ProblemResponses;

impl Modify for ProblemResponses {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let admin = SecurityRequirement::new("admin", Vec::<String>::new());
        for item in doc.paths.paths.values_mut() {
            for op in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ]
            .into_iter()
            .flatten()
            {
                if op.request_body.is_some() {
                    add_problem(op, "400", "malformed JSON body or field");
                    add_problem(op, "413", "request body over the size limit");
                    add_problem(
                        op,
                        "415",
                        "the body is not sent as `Content-Type: application/json`",
                    );
                }
                if op.security.as_ref().is_some_and(|s| s.contains(&admin)) {
                    add_problem(
                        op,
                        "401",
                        "missing or wrong admin token (`WWW-Authenticate: Bearer`)",
                    );
                }
                for (status, resp) in op.responses.responses.iter_mut() {
                    if let RefOr::T(resp) = resp {
                        problem_media_type(resp);
                        problem_headers(status, resp);
                    }
                }
            }
        }
    }
}

fn is_problem(content: &RefOr<Content>) -> bool {
    matches!(content, RefOr::T(c) if matches!(&c.schema, Some(RefOr::Ref(r)) if r.ref_location.ends_with("/Problem")))
}

/// Moves a `Problem` body documented as `application/json` to `application/problem+json`.
fn problem_media_type(resp: &mut Response) {
    if resp.content.get("application/json").is_some_and(is_problem) {
        let content = std::mem::take(&mut resp.content);
        resp.content = content
            .into_iter()
            .map(|(k, v)| {
                if k == "application/json" {
                    (PROBLEM_JSON.to_owned(), v)
                } else {
                    (k, v)
                }
            })
            .collect();
    }
}

/// The headers [`problem::Problem`] answers carry: `WWW-Authenticate` on 401,
/// `Retry-After` (seconds) on 503.
fn problem_headers(status: &str, resp: &mut Response) {
    if !resp.content.get(PROBLEM_JSON).is_some_and(is_problem) {
        return;
    }
    let (name, schema, description) = match status {
        "401" => ("WWW-Authenticate", Type::String, "`Bearer`"),
        "503" => (
            "Retry-After",
            Type::Integer,
            "seconds after which a retry may succeed",
        ),
        _ => return,
    };
    let mut header = Header::new(Object::with_type(schema));
    header.description = Some(description.to_owned());
    resp.headers.insert(name.to_owned(), header.into());
}

/// Documents a problem answer with `status` unless the operation already does.
fn add_problem(op: &mut Operation, status: &str, description: &str) {
    op.responses
        .responses
        .entry(status.to_owned())
        .or_insert_with(|| {
            let mut r = Response::new(description);
            r.content.insert(
                PROBLEM_JSON.to_owned(),
                Content::new(Some(Ref::from_schema_name("Problem"))).into(),
            );
            RefOr::T(r)
        });
}

/// The document as pretty JSON with a trailing newline (the committed form).
pub fn document() -> String {
    render(RegistryApi::openapi())
}

/// `doc`, versioned as this build, as pretty JSON with a trailing newline (how the
/// committed documents of the registry and the gateway are written).
pub fn render(mut doc: utoipa::openapi::OpenApi) -> String {
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    let mut s = doc
        .to_pretty_json()
        .expect("the OpenAPI document serializes");
    s.push('\n');
    s
}

/// `GET /openapi.json`.
pub async fn serve() -> impl axum::response::IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        document(),
    )
}
