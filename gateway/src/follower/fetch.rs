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
/// Each call also bounds its total time.
pub fn client(timeout: Duration) -> Result<reqwest::Client, Fault> {
    reqwest::Client::builder()
        .read_timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .user_agent(concat!("dgsp-gateway/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Fault::Unreachable(e.to_string()))
}

/// A body read whole, unless it exceeds `max` bytes (then `Ok(None)`; nothing more is read).
pub(crate) async fn read_bounded(
    mut resp: reqwest::Response,
    max: usize,
) -> Result<Option<Vec<u8>>, Fault> {
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| Fault::MalformedPage(format!("reading the body: {e}")))?
    {
        if body.len() + chunk.len() > max {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
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
        .map_err(|e| Fault::Unreachable(format!("{url}: {e}")))?;
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
    tokio::time::timeout(config.timeout, fetch_checkpoint_within(client, config))
        .await
        .unwrap_or_else(|_| {
            Err(Fault::Unreachable(format!(
                "the checkpoint took longer than {:?} in all",
                config.timeout
            )))
        })
}

async fn fetch_checkpoint_within(
    client: &reqwest::Client,
    config: &FollowConfig,
) -> Result<Option<CheckpointInfo>, Fault> {
    let url = format!("{}/v1/checkpoint", config.registry);
    let resp = client
        .get(&url)
        .send()
        .await
        .map_err(|e| Fault::Unreachable(format!("{url}: {e}")))?;
    let status = resp.status();
    if status == reqwest::StatusCode::NOT_FOUND
        || status == reqwest::StatusCode::SERVICE_UNAVAILABLE
    {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(Fault::HttpStatus(status.as_u16()));
    }
    let body = read_bounded(resp, MAX_CHECKPOINT_BYTES)
        .await?
        .ok_or_else(|| {
            Fault::MalformedPage(format!(
                "a checkpoint answer larger than {MAX_CHECKPOINT_BYTES} bytes"
            ))
        })?;
    parse_checkpoint(&body).map(Some)
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
    let url = format!("{}/v1/log/key", config.registry);
    let fetch = async {
        let resp = client
            .get(&url)
            .send()
            .await
            .map_err(|e| Fault::Unreachable(format!("{url}: {e}")))?;
        let status = resp.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(Fault::HttpStatus(status.as_u16()));
        }
        let body = read_bounded(resp, MAX_LOG_KEY_BYTES)
            .await?
            .ok_or_else(|| {
                Fault::LogKey(format!(
                    "a log-key statement larger than {MAX_LOG_KEY_BYTES} bytes"
                ))
            })?;
        String::from_utf8(body)
            .map(Some)
            .map_err(|_| Fault::LogKey("the log-key statement is not UTF-8".into()))
    };
    tokio::time::timeout(config.timeout, fetch)
        .await
        .unwrap_or_else(|_| {
            Err(Fault::Unreachable(format!(
                "the log key took longer than {:?} in all",
                config.timeout
            )))
        })
}
