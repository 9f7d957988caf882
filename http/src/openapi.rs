//! What both services' OpenAPI documents share: every problem answer documented as
//! `application/problem+json` with its headers, the answers the shared layers give to every
//! operation, and the committed rendering.

use utoipa::openapi::header::Header;
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{Content, Object, Ref, RefOr, Response, Type};
use utoipa::Modify;

pub use dgsp_wire::problem::PROBLEM_JSON;

/// What every operation of both services can answer besides its own responses, written into
/// the document so it says what the shared layers do (checked with schemathesis by
/// `scripts/api-check.sh`):
/// - a [`Problem`](crate::problem::Problem) answer is `application/problem+json`, never `application/json`;
/// - an operation with a JSON body answers 400 (malformed JSON), 413 (body over the limit)
///   and 415 (no `Content-Type: application/json`), from [`Body`](crate::problem::Body) and the body
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

/// The headers [`Problem`](crate::problem::Problem) answers carry: `WWW-Authenticate` on 401,
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
