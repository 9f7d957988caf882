//! RFC 9457 problem details as axum answers: every error answer of both services is
//! `application/problem+json` with a stable `type`, and bad input names the offending field
//! (the body a client reads is `dgsp_wire::problem::ProblemDetails`). The extractors here
//! turn every rejection into such an answer.

use axum::body::Bytes;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_wire::problem::{PROBLEM_JSON, PROBLEM_TYPE_PREFIX};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::router::BodyLimit;

/// An error answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// Stable identifier of the problem kind, `urn:dgsp:problem:<slug>`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Short human summary of the kind.
    pub title: String,
    /// HTTP status.
    pub status: u16,
    /// What went wrong in this request.
    pub detail: String,
    /// The request field at fault, when there is one (`wots_pks[3]`, `username`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Seconds after which a retry may succeed, sent as the `Retry-After` header.
    #[serde(skip)]
    pub retry_after: Option<u32>,
}

impl Problem {
    /// A problem of kind `slug`.
    pub fn new(status: StatusCode, slug: &str, title: &str, detail: impl Into<String>) -> Self {
        Problem {
            kind: format!("{PROBLEM_TYPE_PREFIX}{slug}"),
            title: title.into(),
            status: status.as_u16(),
            detail: detail.into(),
            field: None,
            retry_after: None,
        }
    }

    /// Tells the client to retry after `secs` seconds (`Retry-After`).
    pub fn retry_after(mut self, secs: u32) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// Names the field at fault.
    pub fn at(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// 400: a field is malformed.
    pub fn bad_field(field: &str, detail: impl Into<String>) -> Self {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "malformed-field",
            "Malformed field",
            detail,
        )
        .at(field)
    }

    /// 422: a field is well-formed but not acceptable.
    pub fn invalid_field(field: &str, detail: impl Into<String>) -> Self {
        Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid-field",
            "Invalid field",
            detail,
        )
        .at(field)
    }

    /// 500 without internals (they go to the log).
    /// 503 with `Retry-After: 1`: the database failed to answer (the cause is logged, not
    /// shown). Storage trouble is the server's and usually passes; it is never a 500.
    pub fn storage(context: &str, err: impl std::fmt::Display) -> Self {
        tracing::error!(error = %err, "{context}");
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "storage-unavailable",
            "Storage unavailable",
            format!("{context}: the database did not answer; the server logged the cause"),
        )
        .retry_after(1)
    }

    /// 500: a bug (the cause is logged, not shown).
    pub fn internal(context: &str, err: impl std::fmt::Display) -> Self {
        tracing::error!(error = %err, "{context}");
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Internal error",
            format!("{context}; the server logged the cause"),
        )
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (status, Json(&self)).into_response();
        resp.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if let Some(secs) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

/// A JSON request body whose every rejection is a [`Problem`] naming the field.
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Problem> {
        let (req, limit) = announced_within_limit(req).await?;
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(Body(v)),
            Err(rej) => Err(from_rejection(rej, limit)),
        }
    }
}

/// The request body as bytes, within the route's limit (a 413 naming it beyond; 400 for a
/// broken stream), for handlers that parse it themselves.
pub async fn body_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, Problem> {
    let (req, limit) = announced_within_limit(req).await?;
    Bytes::from_request(req, state)
        .await
        .map_err(|rej| from_rejection(JsonRejection::from(rej), limit))
}

/// A body refused for its announced length is still read and thrown away when it is at most
/// this long, so that the client, which is sending it, gets the 413 rather than a connection
/// reset (a server that closes with unread data makes the client's write fail first). Longer
/// ones are not read at all.
pub const DRAIN_LIMIT: u64 = 64 << 20;

/// The request and its route's body limit ([`BodyLimit`]), after refusing a body whose
/// `Content-Length` already passes that limit: nothing of such a body is kept (it is read
/// and discarded up to [`DRAIN_LIMIT`]).
async fn announced_within_limit(req: Request) -> Result<(Request, Option<usize>), Problem> {
    let limit = req.extensions().get::<BodyLimit>().map(|l| l.0);
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match (limit, announced) {
        (Some(max), Some(n)) if n > max as u64 => {
            if n <= DRAIN_LIMIT {
                discard(req.into_body()).await;
            }
            Err(body_too_large(max))
        }
        _ => Ok((req, limit)),
    }
}

/// Reads `body` to its end (or its first error), keeping nothing.
async fn discard(mut body: axum::body::Body) {
    use http_body::Body as _;
    while let Some(Ok(_)) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
    {}
}

/// 413 naming the route's body limit.
pub fn body_too_large(limit: usize) -> Problem {
    Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body-too-large",
        "Request body too large",
        format!("the request body is larger than this route's limit of {limit} bytes"),
    )
}

fn from_rejection(rej: JsonRejection, limit: Option<usize>) -> Problem {
    let text = rej.body_text();
    match rej {
        JsonRejection::JsonDataError(_) => data_problem(&text),
        JsonRejection::JsonSyntaxError(_) => syntax_problem(text),
        JsonRejection::MissingJsonContentType(_) => Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "Expected application/json",
            text,
        ),
        other => {
            let status = other.status();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                match limit {
                    Some(max) => body_too_large(max),
                    None => Problem::new(status, "body-too-large", "Request body too large", text),
                }
            } else {
                Problem::new(status, "unreadable-body", "Unreadable request body", text)
            }
        }
    }
}

/// 400 for a body that is JSON but not of the expected shape, naming the field from axum's
/// "...target type: <path>: <serde message>" text.
fn data_problem(text: &str) -> Problem {
    let detail = text.split_once("target type: ").map_or(text, |(_, d)| d);
    let field = detail.split_once(": ").map(|(f, _)| f.to_owned());
    let mut p = Problem::new(
        StatusCode::BAD_REQUEST,
        "malformed-json",
        "Malformed request body",
        detail,
    );
    p.field = field
        .filter(|f| !f.contains(' ') && f != ".")
        .or_else(|| backticked_field(detail));
    p
}

/// The problem for a JSON body that a handler parsed itself (for example into borrowed
/// fields) with `serde_path_to_error`: the same answer [`Body`] gives for the same body.
pub fn json_problem(err: serde_path_to_error::Error<serde_json::Error>) -> Problem {
    match err.inner().classify() {
        serde_json::error::Category::Data => data_problem(&format!(
            "Failed to deserialize the JSON body into the target type: {err}"
        )),
        _ => syntax_problem(format!("Failed to parse the request body as JSON: {err}")),
    }
}

/// The problem for trailing characters after a JSON body a handler parsed itself.
pub fn json_trailing_problem(err: serde_json::Error) -> Problem {
    syntax_problem(format!("Failed to parse the request body as JSON: {err}"))
}

/// 400 for a body that is not JSON (axum's or our own "Failed to parse ..." text).
fn syntax_problem(detail: String) -> Problem {
    Problem::new(
        StatusCode::BAD_REQUEST,
        "malformed-json",
        "Malformed request body",
        detail,
    )
}

/// The field serde names in "missing field `x`" / "unknown field `x`" messages (at the top
/// level, where axum gives no path).
fn backticked_field(detail: &str) -> Option<String> {
    ["missing field `", "unknown field `"]
        .iter()
        .find_map(|prefix| {
            let rest = &detail[detail.find(prefix)? + prefix.len()..];
            Some(rest[..rest.find('`')?].to_owned())
        })
}

/// Decodes a standard-base64 field, naming it on failure.
pub fn b64(field: &str, value: &str) -> Result<Vec<u8>, Problem> {
    B64.decode(value)
        .map_err(|e| Problem::bad_field(field, format!("not standard base64: {e}")))
}

/// Standard base64 with padding.
pub fn to_b64(bytes: &[u8]) -> String {
    B64.encode(bytes)
}

/// Query parameters whose rejection is a [`Problem`].
pub struct Params<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> axum::extract::FromRequestParts<S> for Params<T> {
    type Rejection = Problem;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Problem> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Params(q.0))
            .map_err(|rej| {
                let text = rej.body_text();
                let detail = text
                    .split_once("query string: ")
                    .map_or(text.as_str(), |(_, d)| d)
                    .to_owned();
                let field = detail
                    .split_once(':')
                    .map(|(f, _)| f.trim().to_owned())
                    .filter(|f| !f.contains(' '));
                let mut p = Problem::new(
                    StatusCode::BAD_REQUEST,
                    "malformed-query",
                    "Malformed query string",
                    detail,
                );
                p.field = field;
                p
            })
    }
}
