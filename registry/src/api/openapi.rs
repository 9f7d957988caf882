//! The registry's OpenAPI document, generated from the handlers' annotations.
//!
//! `dgsp-registry openapi > openapi/registry.json` writes it; a test fails when the committed
//! file differs from what the code generates.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{admin, public, tiles};

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "DGSP registry",
        description = "The group manager's registry: admin API (bearer admin token) for joins, certificate issuance, revocation and opening; public API for the group, the hash-chained log feed, signed checkpoints, the log as C2SP tlog-tiles (RFC 6962 Merkle tree), signed revocation snapshots and revocation proofs. Errors are application/problem+json (RFC 9457).",
        license(name = "MIT OR Apache-2.0")
    ),
    paths(
        admin::join, admin::join_bulk, admin::members, admin::member, admin::issue, admin::revoke, admin::open,
        admin::backup,
        public::group, public::entries, public::checkpoint, public::log_key, public::latest_snapshot,
        public::snapshot, public::proof, tiles::checkpoint, tiles::checkpoint_witnessed, tiles::tile, tiles::snapshot
    ),
    components(schemas(dgsp_http::problem::Problem)),
    modifiers(&Security, &ProblemResponses),
    tags((name = "admin", description = "operator API, bearer admin token"),
         (name = "public", description = "anyone"),
         (name = "tiles", description = "the log as C2SP tlog-tiles: the checkpoint note and immutable tiles, cacheable by any CDN"))
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

pub use dgsp_http::openapi::{render, ProblemResponses, PROBLEM_JSON};

/// The document as pretty JSON with a trailing newline (the committed form).
pub fn document() -> String {
    render(RegistryApi::openapi())
}

/// `GET /openapi.json`.
pub async fn serve() -> impl axum::response::IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        document(),
    )
}
