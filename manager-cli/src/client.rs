//! HTTP client for the registry and gateways.
//!
//! - **Retries** with exponential backoff (honouring `Retry-After`) on 503, 429, 408, 502,
//!   504, timeouts and connection errors. Every call made through this client is safe to
//!   repeat: GETs are reads, and every POST carries one `Idempotency-Key` for all its
//!   attempts, so the registry applies a write once however often it is sent (the gateway's
//!   POSTs are pure computations and ignore the header).
//! - **Errors** from problem+json answers keep the server's title, detail and field, so the
//!   user reads what the server said; other failures say which URL and what went wrong.
//! - **TLS**: https URLs work (rustls), checked against the platform's trust store, or
//!   only against the CA certificates of `--ca-file` ([`Transport`]). A certificate that
//!   is not trusted, has expired or names another host is refused at once
//!   ([`ClientError::Tls`]), never retried.
//! - **Tokens never in clear off loopback**: a client with a bearer token refuses a plain
//!   `http://` URL whose host is not loopback ([`ClientError::PlainHttp`], before any
//!   connection) unless `--allow-plain-http` ([`dgsp_secrets::transport`]); it uses a
//!   proxy from the environment (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, not for a
//!   `NO_PROXY` host) only when that proxy passes the same rule, and refuses any other
//!   ([`ClientError::Proxy`], before any connection); and it never follows a redirect.
//! - **Bounded answers**: an answer is read only up to a cap ([`MAX_REGISTRY_ANSWER`], or
//!   [`MAX_GATEWAY_ANSWER`] for a gateway): a larger one is refused
//!   ([`ClientError::TooLarge`]) as soon as its `Content-Length` or its bytes pass the cap,
//!   never read whole into memory.

use std::time::Duration;

use dgsp_wire::problem::ProblemDetails;
use rand_core::{OsRng, RngCore};
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// The most bytes read of a registry's answer: its largest are an issuance of 1024
/// certificates of the largest parameter set (~68 MB of JSON) and a feed page holding the
/// revocation of a member at the certificate cap (~37 MB); both fit with room.
pub const MAX_REGISTRY_ANSWER: usize = 128 << 20;

/// The most bytes read of a gateway's answer: a verify or judge answer carries one signed
/// checkpoint note (under 70 KB with the largest signature), a revocation proof and a
/// snapshot record, well under 1 MB; a batch of 256 such answers shares one note.
pub const MAX_GATEWAY_ANSWER: usize = 8 << 20;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The base URL is not usable.
    #[error("{url}: not a usable base URL: {reason}")]
    BadUrl {
        /// the URL given
        url: String,
        /// what is wrong
        reason: String,
    },
    /// The token would cross the network in clear: plain `http://` to a host that is not
    /// loopback, without `--allow-plain-http`. Nothing was sent.
    #[error(transparent)]
    PlainHttp(#[from] dgsp_secrets::transport::PlainHttpRefused),
    /// The token would cross the network in clear through the proxy the environment names
    /// (plain `http://` or SOCKS to a host that is not loopback), without
    /// `--allow-plain-http`. Nothing was sent.
    #[error(transparent)]
    Proxy(#[from] dgsp_secrets::transport::ProxyRefused),
    /// The `--ca-file` could not be read or holds no PEM certificate.
    #[error("{path}: not a PEM file of CA certificates: {reason}")]
    CaFile {
        /// the file
        path: std::path::PathBuf,
        /// what is wrong
        reason: String,
    },
    /// The server's certificate was refused (not issued by a trusted CA, expired, for
    /// another name) or the TLS handshake failed: not retried.
    #[error("{url}: TLS: {reason}")]
    Tls {
        /// the request URL
        url: String,
        /// rustls' reason
        reason: String,
    },
    /// No answer (connection refused, DNS, timeout) after every retry.
    #[error("{url}: no answer after {attempts} attempts: {reason}")]
    Unreachable {
        /// the request URL
        url: String,
        /// attempts made
        attempts: u32,
        /// the last failure
        reason: String,
    },
    /// The server kept answering "busy" (503/429/408/502/504) until the retry budget ran out.
    #[error("{url}: still {status} after {attempts} attempts: {detail}")]
    RetriesExhausted {
        /// the request URL
        url: String,
        /// attempts made
        attempts: u32,
        /// the last status
        status: u16,
        /// the server's last explanation
        detail: String,
    },
    /// The server refused with a problem+json answer.
    #[error("{status} {title}: {detail}{}", field.as_ref().map(|f| format!(" (field: {f})")).unwrap_or_default())]
    Problem {
        /// the request URL
        url: String,
        /// HTTP status
        status: u16,
        /// problem type (a short name such as `invalid-field`)
        kind: String,
        /// problem title
        title: String,
        /// the server's explanation
        detail: String,
        /// the request field at fault, when the server named one
        field: Option<String>,
    },
    /// The server answered an error status without a problem document.
    #[error("{url}: HTTP {status}: {body}")]
    Status {
        /// the request URL
        url: String,
        /// HTTP status
        status: u16,
        /// the start of the body
        body: String,
    },
    /// The answer is larger than the client reads: refused without reading it whole.
    #[error("{url}: the answer is larger than {limit} bytes, more than any answer of this API; refused without reading it")]
    TooLarge {
        /// the request URL
        url: String,
        /// the most bytes this client reads of an answer
        limit: usize,
    },
    /// A success status whose body is not what the API documents.
    #[error("{url}: malformed reply: {reason}")]
    Malformed {
        /// the request URL
        url: String,
        /// what is wrong
        reason: String,
    },
}

impl ClientError {
    /// Short stable name (the `kind` of `--json` errors).
    pub fn kind(&self) -> &'static str {
        match self {
            ClientError::BadUrl { .. } => "bad_url",
            ClientError::PlainHttp(_) => "plain_http_refused",
            ClientError::Proxy(_) => "proxy_refused",
            ClientError::CaFile { .. } => "ca_file",
            ClientError::Tls { .. } => "tls",
            ClientError::Unreachable { .. } => "unreachable",
            ClientError::RetriesExhausted { .. } => "retries_exhausted",
            ClientError::Problem { .. } => "refused",
            ClientError::Status { .. } => "http_status",
            ClientError::TooLarge { .. } => "answer_too_large",
            ClientError::Malformed { .. } => "malformed_reply",
        }
    }

    /// The HTTP status, when the server answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Problem { status, .. }
            | ClientError::Status { status, .. }
            | ClientError::RetriesExhausted { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// Retry timing.
#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    /// first wait
    pub base: Duration,
    /// longest wait (also caps `Retry-After`)
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_millis(250),
            max: Duration::from_secs(10),
        }
    }
}

impl Backoff {
    /// The wait before retry `attempt` (1-based): exponential with jitter, or the server's
    /// `Retry-After` when it gave one, capped at `max`.
    fn wait(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(d) = retry_after {
            return d.min(self.max);
        }
        let exp = self
            .base
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let jitter = 0.5 + (OsRng.next_u32() as f64 / u32::MAX as f64) / 2.0;
        exp.mul_f64(jitter).min(self.max)
    }
}

/// How a client reaches its service: the CA certificates it trusts over `https://`, and
/// whether a token may cross the network in clear.
#[derive(Clone, Debug, Default)]
pub struct Transport {
    /// Trust only these CA certificates (`--ca-file`); empty: the platform's trust store.
    pub roots: Vec<reqwest::Certificate>,
    /// Send a token over plain `http://` to a host that is not loopback
    /// (`--allow-plain-http`).
    pub allow_plain_http: bool,
}

impl Transport {
    /// `--ca-file` (when given) and `--allow-plain-http`.
    pub fn new(
        ca_file: Option<&std::path::Path>,
        allow_plain_http: bool,
    ) -> Result<Transport, ClientError> {
        let roots = match ca_file {
            None => Vec::new(),
            Some(path) => {
                let bad = |reason: String| ClientError::CaFile {
                    path: path.to_owned(),
                    reason,
                };
                let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
                let roots =
                    reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| bad(e.to_string()))?;
                if roots.is_empty() {
                    return Err(bad("no certificate in it".into()));
                }
                roots
            }
        };
        Ok(Transport {
            roots,
            allow_plain_http,
        })
    }
}

/// A bearer token, with what it is (`admin`, `auditor`: named when it is refused).
#[derive(Clone)]
pub struct Token {
    /// `admin` or `auditor`
    pub name: &'static str,
    /// the token
    pub value: String,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Token({}, ..)", self.name)
    }
}

/// A client for one service base URL.
#[derive(Clone, Debug)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
    retries: u32,
    backoff: Backoff,
    max_answer: usize,
}

fn is_transient(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::TOO_MANY_REQUESTS
            | StatusCode::REQUEST_TIMEOUT
            | StatusCode::BAD_GATEWAY
            | StatusCode::GATEWAY_TIMEOUT
    )
}

fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
}

/// What one attempt came to.
enum Attempt<T> {
    Done(Result<T, ClientError>),
    Retry {
        reason: String,
        status: Option<u16>,
        after: Option<Duration>,
    },
}

impl Client {
    /// A client for `base` (http or https) with an optional bearer token (named `admin`
    /// when refused), a per-request timeout and a retry budget; the platform's trust store,
    /// and no token over plain HTTP off loopback ([`Client::connect`] with the defaults).
    pub fn new(
        base: &str,
        token: Option<String>,
        timeout: Duration,
        retries: u32,
    ) -> Result<Client, ClientError> {
        let token = token.map(|value| Token {
            name: "admin",
            value,
        });
        Client::connect(base, token, timeout, retries, &Transport::default())
    }

    /// A client for `base` (http or https) with an optional bearer token, a per-request
    /// timeout, a retry budget and `transport`'s CA certificates. A token is refused for
    /// plain `http://` to a host that is not loopback unless `transport` allows it
    /// ([`ClientError::PlainHttp`]: nothing is sent), and so is a proxy from the environment
    /// that is neither `https://` nor on a loopback host ([`ClientError::Proxy`]).
    pub fn connect(
        base: &str,
        token: Option<Token>,
        timeout: Duration,
        retries: u32,
        transport: &Transport,
    ) -> Result<Client, ClientError> {
        let bad = |reason: &str| ClientError::BadUrl {
            url: base.to_owned(),
            reason: reason.to_owned(),
        };
        let url = reqwest::Url::parse(base).map_err(|e| bad(&e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(bad("expected http://host[:port] or https://host[:port]"));
        }
        let token = token.filter(|t| !t.value.is_empty());
        // Every request goes to `base`'s scheme and host (no redirect is followed), so the
        // proxy decided for `base` is the proxy of every request.
        let mut keep_env_proxy = true;
        if let Some(token) = &token {
            dgsp_secrets::transport::check_token_destination(
                base,
                url.scheme(),
                url.host_str().unwrap_or_default(),
                token.name,
                transport.allow_plain_http,
            )?;
            keep_env_proxy =
                dgsp_secrets::transport::token_proxy(base, token.name, transport.allow_plain_http)?
                    .is_some();
        }
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("dgsp-manager/", env!("CARGO_PKG_VERSION")))
            // The services never redirect; a redirect could take the token elsewhere.
            .redirect(reqwest::redirect::Policy::none());
        if !transport.roots.is_empty() {
            builder = builder.tls_certs_only(transport.roots.iter().cloned());
        }
        if !keep_env_proxy {
            builder = builder.no_proxy();
        }
        let http = builder.build().map_err(|e| bad(&e.to_string()))?;
        Ok(Client {
            http,
            base: base.trim_end_matches('/').to_owned(),
            token: token.map(|t| t.value),
            retries,
            backoff: Backoff::default(),
            max_answer: MAX_REGISTRY_ANSWER,
        })
    }

    /// Reads at most `bytes` of an answer ([`MAX_REGISTRY_ANSWER`] unless set; a gateway's
    /// client sets [`MAX_GATEWAY_ANSWER`]).
    pub fn with_max_answer(mut self, bytes: usize) -> Client {
        self.max_answer = bytes;
        self
    }

    /// Replaces the retry timing (tests use short waits).
    pub fn with_backoff(mut self, backoff: Backoff) -> Client {
        self.backoff = backoff;
        self
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// GET `path` with `query`, retried on transient failures.
    pub async fn get_json<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<T, ClientError> {
        self.call(Method::GET, path, query, None::<(&(), &str)>)
            .await
    }

    /// POST `body` to `path` with one Idempotency-Key for every attempt, retried on
    /// transient failures.
    pub async fn post_json<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        let mut key = [0u8; 16];
        OsRng.fill_bytes(&mut key);
        self.post_json_keyed(path, body, &hex::encode(key)).await
    }

    /// POST with a caller-chosen Idempotency-Key: a key derived from the request's content
    /// makes a re-run of the same command (after a crash, say) return the first answer.
    pub async fn post_json_keyed<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
        idempotency_key: &str,
    ) -> Result<T, ClientError> {
        self.call(Method::POST, path, &[], Some((body, idempotency_key)))
            .await
    }

    /// GET `path` as bytes (a tile, a checkpoint note), retried on transient failures; the
    /// answer is read up to the client's cap ([`with_max_answer`](Self::with_max_answer)).
    pub async fn get_bytes(&self, path: &str) -> Result<Vec<u8>, ClientError> {
        let url = format!("{}{}", self.base, path);
        let bytes = self
            .call_raw(Method::GET, &url, &[], None::<(&(), &str)>)
            .await?;
        Ok(bytes)
    }

    async fn call<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<(&B, &str)>,
    ) -> Result<T, ClientError> {
        let url = format!("{}{}", self.base, path);
        let bytes = self.call_raw(method, &url, query, body).await?;
        serde_json::from_slice(&bytes).map_err(|e| ClientError::Malformed {
            url: url.clone(),
            reason: format!("{e} (body starts: {})", snippet(&bytes)),
        })
    }

    /// One call with its retries: the body of a success.
    async fn call_raw<B: Serialize>(
        &self,
        method: Method,
        url: &str,
        query: &[(&str, String)],
        body: Option<(&B, &str)>,
    ) -> Result<Vec<u8>, ClientError> {
        let url = url.to_owned();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut req = self.http.request(method.clone(), &url).query(query);
            if let Some(token) = &self.token {
                req = req.bearer_auth(token);
            }
            if let Some((body, key)) = body {
                req = req.header("Idempotency-Key", key).json(body);
            }
            match self.attempt(&url, req).await {
                Attempt::Done(result) => return result,
                Attempt::Retry {
                    reason,
                    status,
                    after,
                } => {
                    if attempt > self.retries {
                        return Err(match status {
                            Some(status) => ClientError::RetriesExhausted {
                                url,
                                attempts: attempt,
                                status,
                                detail: reason,
                            },
                            None => ClientError::Unreachable {
                                url,
                                attempts: attempt,
                                reason,
                            },
                        });
                    }
                    tokio::time::sleep(self.backoff.wait(attempt, after)).await;
                }
            }
        }
    }

    async fn attempt(&self, url: &str, req: reqwest::RequestBuilder) -> Attempt<Vec<u8>> {
        let resp = match req.send().await {
            Ok(r) => r,
            // A certificate refused is refused again: said at once.
            Err(e) if tls_refusal(&e).is_some() => {
                return Attempt::Done(Err(ClientError::Tls {
                    url: url.to_owned(),
                    reason: tls_refusal(&e).unwrap_or_default(),
                }))
            }
            Err(e) => {
                return Attempt::Retry {
                    reason: describe(&e),
                    status: None,
                    after: None,
                }
            }
        };
        let status = resp.status();
        let after = retry_after(resp.headers());
        let bytes = match read_capped(resp, self.max_answer).await {
            Ok(Some(b)) => b,
            Ok(None) => {
                return Attempt::Done(Err(ClientError::TooLarge {
                    url: url.to_owned(),
                    limit: self.max_answer,
                }))
            }
            // The connection dropped mid-body: as transient as a refused connection.
            Err(e) => {
                return Attempt::Retry {
                    reason: describe(&e),
                    status: None,
                    after: None,
                }
            }
        };
        if status.is_success() {
            return Attempt::Done(Ok(bytes));
        }
        let problem = serde_json::from_slice::<ProblemDetails>(&bytes)
            .ok()
            .filter(|p| !p.title.is_empty() || !p.detail.is_empty());
        if is_transient(status) {
            let reason = problem
                .map(|p| p.detail)
                .unwrap_or_else(|| status.to_string());
            return Attempt::Retry {
                reason,
                status: Some(status.as_u16()),
                after,
            };
        }
        Attempt::Done(Err(match problem {
            Some(p) => ClientError::Problem {
                url: url.to_owned(),
                status: status.as_u16(),
                kind: p.kind,
                title: p.title,
                detail: p.detail,
                field: p.field,
            },
            None => ClientError::Status {
                url: url.to_owned(),
                status: status.as_u16(),
                body: snippet(&bytes),
            },
        }))
    }
}

/// The answer's body, or `None` as soon as it is known to be longer than `max` bytes (by its
/// `Content-Length`, before reading, or by what has arrived): what was read is dropped and
/// the rest is never read.
async fn read_capped(
    mut resp: reqwest::Response,
    max: usize,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if resp.content_length().is_some_and(|n| n > max as u64) {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if body.len() + chunk.len() > max {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// The TLS failure behind `e`, if it is one: rustls' error, wrapped on the way up in an
/// I/O error (by tokio-rustls), itself wrapped in another (by the connector).
fn tls_refusal(e: &reqwest::Error) -> Option<String> {
    fn rustls_in<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        let io = e.downcast_ref::<std::io::Error>()?;
        rustls_in(io.get_ref()?)
    }
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        if let Some(tls) = rustls_in(cause) {
            return Some(tls.to_string());
        }
        source = cause.source();
    }
    None
}

/// A reqwest error with its causes (reqwest's own Display stops at the first).
fn describe(e: &reqwest::Error) -> String {
    let mut s = if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "cannot connect".to_owned()
    } else {
        e.to_string()
    };
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]);
    text.trim().to_owned()
}
