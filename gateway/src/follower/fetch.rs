//! The registry's public reads the follower uses, each with a bound on what it reads:
//! `GET /v1/checkpoint` (the newest signed note), `GET /v1/log/entries` (a feed page) and,
//! with a witness policy, `GET /v1/log/key` (the group key's statement naming its log key).

use std::time::Duration;

use dgsp_wire::feed::Entries;

use super::{Fault, FollowConfig};

/// Largest `/v1/checkpoint` answer read: a note with the largest SPHINCS+ signature in
/// base64 is under 70 KiB, so this leaves room for witness cosignatures and nothing more.
pub const MAX_CHECKPOINT_BYTES: usize = 1 << 20;

/// What the registry serves at `GET /v1/checkpoint`: the newest signed note and what it
/// covers (other fields, such as the time it also states outside the note, are ignored:
/// only what the signature covers counts).
#[derive(Clone, Debug, serde::Deserialize)]
pub struct CheckpointInfo {
    /// Entries covered.
    pub size: u64,
    /// Hash of entry `size` (hex).
    pub head: String,
    /// The signed note.
    pub note: String,
    /// The witnessed note of the same tree (docs/witnesses.md), when the registry has
    /// witnesses.
    #[serde(default)]
    pub witnessed: Option<String>,
}

/// A feed page may take this many per-request timeouts in all: a legitimately large page
/// (a revocation at the certificate limit is ~37 MB) arrives at link speed, so it is bounded
/// by a stall timeout per read plus this overall deadline (300 s at the default 10 s, i.e.
/// 128 MiB at 0.45 MB/s), not by the time a small answer should take.
pub const PAGE_DEADLINE_TIMEOUTS: u32 = 30;

/// The HTTP client used for the registry: `timeout` bounds connecting and each read (the
/// wait for the answer's headers, then every pause between body chunks), so a registry
/// that stalls is dropped after `timeout` while a large answer that keeps arriving is not.
/// Each call also bounds its total time. An `https://` registry's certificate is checked
/// against `roots` (`--registry-ca-file`) when given, else the system's roots.
pub fn client(timeout: Duration, roots: &[reqwest::Certificate]) -> Result<reqwest::Client, Fault> {
    let mut builder = reqwest::Client::builder()
        .read_timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .user_agent(concat!("dgsp-gateway/", env!("CARGO_PKG_VERSION")));
    if !roots.is_empty() {
        builder = builder.tls_certs_only(roots.iter().cloned());
    }
    builder
        .build()
        .map_err(|e| Fault::Unreachable(e.to_string()))
}

/// A request that got no answer, with every cause: reqwest's own message stops before the
/// reason (a refused connection, a certificate that does not chain to the roots).
pub(crate) fn unreachable(url: &str, e: &reqwest::Error) -> Fault {
    let mut s = format!("{url}: {e}");
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    Fault::Unreachable(s)
}

/// The CA certificates of a PEM file (`--registry-ca-file`): at least one.
pub fn read_roots(path: &std::path::Path) -> Result<Vec<reqwest::Certificate>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let roots = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|e| format!("{}: not a PEM file of CA certificates: {e}", path.display()))?;
    if roots.is_empty() {
        return Err(format!("{}: no certificate in it", path.display()));
    }
    Ok(roots)
}

/// A body read whole, unless it exceeds `max` bytes (then `Ok(None)`; nothing more is read:
/// [`crate::tiles::client::Body::read_to_end`]).
pub(crate) async fn read_bounded(
    resp: reqwest::Response,
    max: usize,
) -> Result<Option<Vec<u8>>, Fault> {
    crate::tiles::client::Body::http(resp)
        .read_to_end(max)
        .await
}

/// The feed page of at most `limit` entries after `after`.
pub async fn fetch_page(
    client: &reqwest::Client,
    config: &FollowConfig,
    after: u64,
    limit: usize,
) -> Result<Entries, Fault> {
    let deadline = config.timeout * PAGE_DEADLINE_TIMEOUTS;
    tokio::time::timeout(deadline, fetch_page_within(client, config, after, limit))
        .await
        .unwrap_or_else(|_| {
            Err(Fault::Unreachable(format!(
                "a feed page took longer than {deadline:?} in all"
            )))
        })
}

async fn fetch_page_within(
    client: &reqwest::Client,
    config: &FollowConfig,
    after: u64,
    limit: usize,
) -> Result<Entries, Fault> {
    let url = format!("{}/v1/log/entries", config.registry);
    let resp = client
        .get(&url)
        .query(&[("after", after), ("limit", limit as u64)])
        .send()
        .await
        .map_err(|e| unreachable(&url, &e))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(Fault::HttpStatus(status.as_u16()));
    }
    let body = read_bounded(resp, config.max_page_bytes)
        .await?
        .ok_or(Fault::PageTooLarge {
            entries: limit,
            max_bytes: config.max_page_bytes,
        })?;
    parse_page(&body)
}

/// A feed page body as read (at most `max_page_bytes`), parsed.
pub fn parse_page(body: &[u8]) -> Result<Entries, Fault> {
    serde_json::from_slice(body).map_err(|e| Fault::MalformedPage(e.to_string()))
}

/// A `/v1/checkpoint` answer as read (at most [`MAX_CHECKPOINT_BYTES`]), parsed.
pub fn parse_checkpoint(body: &[u8]) -> Result<CheckpointInfo, Fault> {
    serde_json::from_slice(body)
        .map_err(|e| Fault::MalformedPage(format!("the checkpoint answer: {e}")))
}

/// The registry's newest signed checkpoint, or `None` when it has none to serve yet (503) or
/// does not serve the endpoint (404): freshness then comes from the log's checkpoints alone.
pub async fn fetch_checkpoint(
    client: &reqwest::Client,
    config: &FollowConfig,
) -> Result<Option<CheckpointInfo>, Fault> {
    let absent = [
        reqwest::StatusCode::NOT_FOUND,
        reqwest::StatusCode::SERVICE_UNAVAILABLE,
    ];
    let too_large = || {
        Fault::MalformedPage(format!(
            "a checkpoint answer larger than {MAX_CHECKPOINT_BYTES} bytes"
        ))
    };
    let body = get_capped(
        client,
        config,
        "/v1/checkpoint",
        "the checkpoint",
        MAX_CHECKPOINT_BYTES,
        &absent,
        too_large,
    )
    .await?;
    body.map(|b| parse_checkpoint(&b)).transpose()
}

/// `GET {registry}{path}` within the follower's timeout, its body read up to `max` bytes
/// (`too_large` beyond): `Ok(None)` when the status is one of `absent`, a fault for any
/// other status that is not a success. `what` names it in the timeout's fault.
async fn get_capped(
    client: &reqwest::Client,
    config: &FollowConfig,
    path: &str,
    what: &str,
    max: usize,
    absent: &[reqwest::StatusCode],
    too_large: impl FnOnce() -> Fault,
) -> Result<Option<Vec<u8>>, Fault> {
    let url = format!("{}{path}", config.registry);
    let fetch = async {
        let resp = client
            .get(&url)
            .send()
            .await
            .map_err(|e| unreachable(&url, &e))?;
        let status = resp.status();
        if absent.contains(&status) {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(Fault::HttpStatus(status.as_u16()));
        }
        read_bounded(resp, max)
            .await?
            .ok_or_else(too_large)
            .map(Some)
    };
    tokio::time::timeout(config.timeout, fetch)
        .await
        .unwrap_or_else(|_| {
            Err(Fault::Unreachable(format!(
                "{what} took longer than {:?} in all",
                config.timeout
            )))
        })
}

/// Largest `/v1/log/key` answer read: a statement (a 1.8 KB vkey) with the largest SPHINCS+
/// signature in base64 is under 70 KiB.
pub const MAX_LOG_KEY_BYTES: usize = 256 << 10;

/// The registry's statement naming its log key (`GET /v1/log/key`): `Ok(None)` when the
/// registry has none (404: it has no witnesses).
pub async fn fetch_log_key(
    client: &reqwest::Client,
    config: &FollowConfig,
) -> Result<Option<String>, Fault> {
    let too_large = || {
        Fault::LogKey(format!(
            "a log-key statement larger than {MAX_LOG_KEY_BYTES} bytes"
        ))
    };
    let body = get_capped(
        client,
        config,
        "/v1/log/key",
        "the log key",
        MAX_LOG_KEY_BYTES,
        &[reqwest::StatusCode::NOT_FOUND],
        too_large,
    )
    .await?;
    body.map(|b| {
        String::from_utf8(b).map_err(|_| Fault::LogKey("the log-key statement is not UTF-8".into()))
    })
    .transpose()
}
