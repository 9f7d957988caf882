//! What every service router ends with, and per-route body limits.

use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::MethodRouter;
use axum::{Extension, Router};

use crate::problem::Problem;

/// Default request body limit (a bulk join or a large CSR fits; a flood does not).
pub const DEFAULT_BODY_LIMIT: usize = 4 << 20;

/// A request that takes longer than this (slow client or stuck work) is answered 408.
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The body limit in force for a request, in bytes: what the extractors of
/// [`problem`](crate::problem) name in a 413. Set by [`finish`] for every route and by
/// [`limit_body`] for one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyLimit(pub usize);

/// `route` with a body limit of its own, `max` bytes, instead of the router's: a larger
/// body is refused 413 (problem+json naming the limit), before it is read when its
/// `Content-Length` says so, else as soon as it passes `max`.
pub fn limit_body<S: Clone + Send + Sync + 'static>(
    route: MethodRouter<S>,
    max: usize,
) -> MethodRouter<S> {
    route
        .layer::<_, std::convert::Infallible>(DefaultBodyLimit::max(max))
        .layer::<_, std::convert::Infallible>(Extension(BodyLimit(max)))
}

/// 404 and 405 as problem+json, the body limit (routes may have their own, [`limit_body`]),
/// and a request timeout answered 408. Shared by the registry and the gateway.
pub fn finish<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    body_limit: usize,
    timeout: std::time::Duration,
) -> Router<S> {
    router
        .fallback(|| async {
            Problem::new(
                StatusCode::NOT_FOUND,
                "not-found",
                "No such route",
                "see /openapi.json for the API",
            )
        })
        .method_not_allowed_fallback(|| async {
            Problem::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method-not-allowed",
                "Method not allowed",
                "see /openapi.json for the methods of each path",
            )
        })
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(Extension(BodyLimit(body_limit)))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ))
}
