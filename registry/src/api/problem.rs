//! RFC 9457 problem details: every error answer is `application/problem+json` with a stable
//! `type`, and bad input names the offending field. The type and the extractors are shared
//! with the gateway (`dgsp_http::problem`); the registry's own problems are here: what a
//! refused write answers, and the member id path.

use axum::http::StatusCode;

/// The problem type and the extractors the registry's handlers use, named for callers that
/// drive them as the registry does (the fuzz targets, the CLI's seed tests).
pub use dgsp_http::problem::{Body, Params, Problem};

use crate::writer::WriteError;

impl From<WriteError> for Problem {
    fn from(e: WriteError) -> Self {
        match &e {
            WriteError::DuplicateUsername(_) => Problem::new(
                StatusCode::CONFLICT,
                "duplicate-username",
                "Username taken",
                e.to_string(),
            )
            .at("username"),
            WriteError::UnknownMember(_) => Problem::new(
                StatusCode::NOT_FOUND,
                "unknown-member",
                "Unknown member",
                e.to_string(),
            ),
            WriteError::Inactive(_) => Problem::new(
                StatusCode::CONFLICT,
                "member-revoked",
                "Member revoked",
                format!("{e}: no more certificates can be issued"),
            ),
            WriteError::CertificateLimit { .. } => Problem::new(
                StatusCode::CONFLICT,
                "certificate-limit",
                "Certificate limit reached",
                e.to_string(),
            )
            .at("wots_pks"),
            WriteError::CounterOverflow(_) | WriteError::DigestCount { .. } => {
                Problem::invalid_field("wots_pks", e.to_string())
            }
            WriteError::IdempotencyMismatch(_) => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency-key-reused",
                "Idempotency key reused",
                e.to_string(),
            )
            .at("Idempotency-Key"),
            WriteError::Stopped => Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "shutting-down",
                "Shutting down",
                e.to_string(),
            )
            .retry_after(5),
            WriteError::Store(err) => Problem::storage("the write could not be checked", err),
            WriteError::CommitFailed(_) => {
                tracing::error!(error = %e, "commit failed");
                Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "write-outcome-unknown",
                    "Write outcome unknown",
                    "the write failed and may or may not have been stored; the registry \
                     halted: retry with the same Idempotency-Key once it is restarted",
                )
                .retry_after(30)
            }
            WriteError::Halted(reason) => Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "registry-halted",
                "Registry halted",
                format!("the registry stopped accepting writes after a failure ({reason}); an operator must restart it"),
            )
            .retry_after(30),
        }
    }
}

/// A path member id whose rejection is a [`Problem`] naming `id`.
pub struct IdPath(pub u64);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for IdPath {
    type Rejection = Problem;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Problem> {
        axum::extract::Path::<u64>::from_request_parts(parts, state)
            .await
            .map(|p| IdPath(p.0))
            .map_err(|rej| {
                Problem::bad_field(
                    "id",
                    format!(
                        "member id must be an unsigned integer ({})",
                        rej.body_text()
                    ),
                )
            })
    }
}
