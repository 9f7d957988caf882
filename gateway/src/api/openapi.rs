//! The gateway's OpenAPI document, generated from the handlers' annotations.
//!
//! `dgsp-gateway openapi > openapi/gateway.json` (or `scripts/openapi.sh`, which writes both
//! documents) regenerates it; a test fails when the committed file differs.

use axum::http::header;
use axum::response::IntoResponse;
use utoipa::OpenApi;

use super::{health, model, revocations, verify};
use dgsp_http::openapi::ProblemResponses;
use dgsp_http::problem;

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "DGSP gateway",
        description = "Public verification API for one DGSP group. The gateway follows the group's registry, checks the hash chain, every checkpoint and every snapshot signature against the pinned group key before applying anything, and answers verify and judge requests. Every verification answer names the signed revocation snapshot it was checked against and carries an inclusion or non-membership proof that can be checked offline (docs/revocation-proofs.md). Binary values are standard base64. Errors are application/problem+json (RFC 9457).",
        license(name = "MIT OR Apache-2.0")
    ),
    paths(
        verify::verify, verify::verify_batch, verify::judge,
        revocations::group, revocations::checkpoint, revocations::latest_snapshot, revocations::snapshot, revocations::proof,
        health::healthz, health::readyz, health::metrics,
        crate::witnessing::add_checkpoint, crate::witnessing::latest_checkpoint
    ),
    components(schemas(problem::Problem, model::Status, model::ProofKind)),
    modifiers(&ProblemResponses, &WitnessRoute),
    tags((name = "verify", description = "verification and judging, CPU-bound, load-shed with 503 + Retry-After"),
         (name = "revocations", description = "the group, the checkpoint applied, signed snapshots and revocation proofs"),
         (name = "operations", description = "health, readiness, metrics"),
         (name = "witness", description = "with --witness-key: the gateway as a c2sp.org/tlog-witness witness of its group's log (submission and monitoring prefix `<gateway URL>/witness`); text/plain, not problem+json"))
)]
pub struct GatewayApi;

/// The witness endpoint speaks the tlog-witness protocol (text bodies of any content type),
/// not JSON: it never answers 415, which [`ProblemResponses`] documents for request bodies.
struct WitnessRoute;

impl utoipa::Modify for WitnessRoute {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        if let Some(op) = doc
            .paths
            .paths
            .get_mut("/witness/add-checkpoint")
            .and_then(|item| item.post.as_mut())
        {
            op.responses.responses.remove("415");
        }
    }
}

/// The document as pretty JSON with a trailing newline (the committed form).
pub fn document() -> String {
    dgsp_http::openapi::render(GatewayApi::openapi())
}

/// `GET /openapi.json`.
pub async fn serve() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], document())
}
