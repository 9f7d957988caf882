//! One witness over HTTP ([`WitnessClient`]) and the per-witness state machine
//! ([`Submitter`]).
//!
//! | answer | [`SubmitError`] |
//! |---|---|
//! | 200 with 1..=16 well-formed cosignature lines | `Ok(lines)` (a [`Submitter`] with the witness's key: `Ok` with its one line that verifies, see below) |
//! | 200 otherwise, or a body over 64 KiB | `BadAnswer` |
//! | 409 `<size>\n` | `Conflict { size }` (the [`Submitter`] retries once) |
//! | 409 with another body | `BadAnswer` |
//! | 400 | `BadRequest` |
//! | 403 | `Forbidden` |
//! | 404 | `NotFound` |
//! | 422 | `Unprocessable` |
//! | any 5xx (omniwitness: unknown origin, bad log signature; litewitness: body too large) | `Server { status, body }` |
//! | any other status | `BadAnswer` |
//! | no answer within the timeout | `Timeout` |
//! | connection failure | `Transport` |
//!
//! Error bodies are read up to [`MAX_ERROR_BODY`] bytes and kept as lossy UTF-8.
//!
//! A [`Submitter`] made [`with_key`](Submitter::with_key) judges a 200 by the witness's own
//! key: only the lines under that key's name and key id are kept, each must verify over
//! the checkpoint submitted, and the newest of them is the answer; none, or one that does
//! not verify, is that witness's `BadAnswer`. Lines under other names (another witness's,
//! padding, anything) are dropped unread: one witness's answer can only ever count for that
//! witness.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::CONTENT_LENGTH;
use reqwest::{StatusCode, Url};
use serde::Serialize;

use dgsp_wire::note::{verify_signature_line, CheckpointBody, SignatureLine, SignedNote, Vkey};

use crate::protocol::{
    parse_conflict, split_cosignatures, AddCheckpoint, MAX_CONFLICT_BODY, MAX_COSIGNATURE_BODY,
    MAX_PROOF_HASHES,
};

/// The most bytes of an error answer's body kept.
pub const MAX_ERROR_BODY: usize = 512;

/// Why a witness did not cosign.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// 409: the witness last cosigned `size`, not the `old` sent.
    #[error("409: the witness holds size {size}")]
    Conflict {
        /// The size the witness holds.
        size: u64,
    },
    /// The witness holds a larger tree than the one submitted: a split-view signal (or a
    /// log that went back). Never retried.
    #[error("the witness cosigned size {size}, larger than the tree submitted")]
    WitnessAhead {
        /// The size the witness holds.
        size: u64,
    },
    /// 422: bad proof, or another root at the same size.
    #[error("422: {0}")]
    Unprocessable(String),
    /// 403: no trusted signature on the note, or a known key's signature failed.
    #[error("403: {0}")]
    Forbidden(String),
    /// 404: the witness does not know the origin.
    #[error("404: {0}")]
    NotFound(String),
    /// 400: a malformed request, or old > size.
    #[error("400: {0}")]
    BadRequest(String),
    /// Any 5xx.
    #[error("{status}: {body}")]
    Server {
        /// The status code.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// No answer within the timeout.
    #[error("timed out")]
    Timeout,
    /// The connection failed.
    #[error("transport: {0}")]
    Transport(String),
    /// An answer that is not the protocol's.
    #[error("bad answer: {0}")]
    BadAnswer(String),
    /// The checkpoint given to submit is not a signed checkpoint note (the caller's fault).
    #[error("the checkpoint to submit is not a signed checkpoint note: {0}")]
    Note(String),
    /// The consistency proof from the witness's size could not be had (from the caller's
    /// proof function, or longer than 63 hashes).
    #[error("no consistency proof from size {old}: {why}")]
    Proof {
        /// The size the proof was to start from.
        old: u64,
        /// Why not.
        why: String,
    },
}

/// A submission prefix that is not an http(s) URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an http(s) submission prefix: {0}")]
pub struct InvalidPrefix(pub String);

/// One witness: its name, its submission prefix, an HTTP client and a per-request timeout.
#[derive(Debug, Clone)]
pub struct WitnessClient {
    name: String,
    endpoint: Url,
    http: reqwest::Client,
    timeout: Duration,
}

impl WitnessClient {
    /// A client for the witness `name` whose submission prefix is `prefix` (the request goes
    /// to `<prefix>/add-checkpoint`), sending with `http`, each request bounded by `timeout`.
    pub fn new(
        name: impl Into<String>,
        prefix: &str,
        http: reqwest::Client,
        timeout: Duration,
    ) -> Result<WitnessClient, InvalidPrefix> {
        let bad = || InvalidPrefix(prefix.chars().take(200).collect());
        let endpoint = Url::parse(&format!("{}/add-checkpoint", prefix.trim_end_matches('/')))
            .map_err(|_| bad())?;
        if !matches!(endpoint.scheme(), "http" | "https") || endpoint.query().is_some() {
            return Err(bad());
        }
        Ok(WitnessClient {
            name: name.into(),
            endpoint,
            http,
            timeout,
        })
    }

    /// The witness's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &Url {
        &self.endpoint
    }

    /// Sends one `add-checkpoint`; the cosignature lines (without their `\n`) on a 200.
    pub async fn add_checkpoint(&self, req: &AddCheckpoint) -> Result<Vec<String>, SubmitError> {
        match tokio::time::timeout(self.timeout, self.send(req)).await {
            Ok(result) => result,
            Err(_) => Err(SubmitError::Timeout),
        }
    }

    async fn send(&self, req: &AddCheckpoint) -> Result<Vec<String>, SubmitError> {
        let resp = self
            .http
            .post(self.endpoint.clone())
            .timeout(self.timeout)
            .body(req.encode())
            .send()
            .await
            .map_err(transport)?;
        let status = resp.status();
        match status {
            StatusCode::OK => {
                let body = read_capped(resp, MAX_COSIGNATURE_BODY)
                    .await?
                    .ok_or_else(|| {
                        SubmitError::BadAnswer(format!(
                            "200 body over {MAX_COSIGNATURE_BODY} bytes"
                        ))
                    })?;
                split_cosignatures(&body).map_err(|e| SubmitError::BadAnswer(format!("200: {e}")))
            }
            StatusCode::CONFLICT => {
                let body = read_capped(resp, MAX_CONFLICT_BODY).await?.ok_or_else(|| {
                    SubmitError::BadAnswer(format!("409 body over {MAX_CONFLICT_BODY} bytes"))
                })?;
                Err(match parse_conflict(&body) {
                    Ok(size) => SubmitError::Conflict { size },
                    Err(e) => SubmitError::BadAnswer(format!("409: {e}")),
                })
            }
            _ => {
                let body = error_body(resp).await?;
                Err(match status.as_u16() {
                    400 => SubmitError::BadRequest(body),
                    403 => SubmitError::Forbidden(body),
                    404 => SubmitError::NotFound(body),
                    422 => SubmitError::Unprocessable(body),
                    s @ 500..=599 => SubmitError::Server { status: s, body },
                    s => SubmitError::BadAnswer(format!("unexpected status {s}: {body}")),
                })
            }
        }
    }
}

fn transport(e: reqwest::Error) -> SubmitError {
    if e.is_timeout() {
        SubmitError::Timeout
    } else {
        // The error's chain names the cause (refused, reset, DNS); never the body.
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        SubmitError::Transport(truncate(text))
    }
}

/// The body, or `None` when it is longer than `max` (stops reading there).
async fn read_capped(
    mut resp: reqwest::Response,
    max: usize,
) -> Result<Option<Vec<u8>>, SubmitError> {
    if let Some(len) = resp.headers().get(CONTENT_LENGTH) {
        let len = len.to_str().ok().and_then(|l| l.parse::<u64>().ok());
        if len.is_none_or(|l| l > max as u64) {
            return Ok(None);
        }
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(transport)? {
        if body.len() + chunk.len() > max {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// The first [`MAX_ERROR_BODY`] bytes of an error answer, lossy UTF-8, trimmed.
async fn error_body(mut resp: reqwest::Response) -> Result<String, SubmitError> {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY {
        match resp.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) => break,
            // The status is the answer; a body cut short is still the start of one.
            Err(e) if e.is_timeout() => return Err(SubmitError::Timeout),
            Err(_) => break,
        }
    }
    body.truncate(MAX_ERROR_BODY);
    Ok(String::from_utf8_lossy(&body).trim().to_owned())
}

fn truncate(mut s: String) -> String {
    if s.len() > MAX_ERROR_BODY {
        let mut end = MAX_ERROR_BODY;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// One witness's state, for metrics and status pages.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WitnessStatus {
    /// The witness's name.
    pub name: String,
    /// The size this witness last cosigned, as far as the submitter knows (0: unknown).
    pub size: u64,
    /// When it last cosigned, POSIX seconds.
    pub last_success_unix: Option<u64>,
    /// The last error, if the last submission failed.
    pub last_error: Option<String>,
    /// Submissions failed in a row since the last success.
    pub consecutive_failures: u32,
}

/// One witness's submission state: the size it last cosigned, one retry after a 409, and
/// (with its key) the judgement of its answers.
#[derive(Debug)]
pub struct Submitter {
    client: WitnessClient,
    key: Option<Vkey>,
    status: WitnessStatus,
    /// After a success: the status's last success and failure count before it, which
    /// [`refuse`](Submitter::refuse) puts back (a refused cosignature is no success).
    before_success: Option<(Option<u64>, u32)>,
}

impl Submitter {
    /// A submitter that does not yet know what the witness holds (sends `old 0` first) and
    /// returns the lines of a 200 as the witness gave them (the caller verifies them).
    pub fn new(client: WitnessClient) -> Submitter {
        let status = WitnessStatus {
            name: client.name().to_owned(),
            ..WitnessStatus::default()
        };
        Submitter {
            client,
            key: None,
            status,
            before_success: None,
        }
    }

    /// A submitter for the witness whose cosigning key is `vkey` (its policy's key): a 200
    /// counts only with a line under `vkey`'s name and key id that verifies over the
    /// checkpoint submitted, and returns that one line (the newest, if several); anything
    /// else is [`SubmitError::BadAnswer`], this witness's failure.
    pub fn with_key(client: WitnessClient, vkey: Vkey) -> Submitter {
        Submitter {
            key: Some(vkey),
            ..Submitter::new(client)
        }
    }

    /// Records that the caller did not count the witness's last cosignature (e.g. dated
    /// too far ahead), as a failure of this witness's: the status's last success and
    /// failure count are those before that answer, plus this failure (the size it cosigned
    /// stays: the witness holds it).
    pub fn refuse(&mut self, why: String) {
        if let Some((last_success, failures)) = self.before_success.take() {
            self.status.last_success_unix = last_success;
            self.status.consecutive_failures = failures;
        }
        self.status.last_error = Some(why);
        self.status.consecutive_failures = self.status.consecutive_failures.saturating_add(1);
    }

    /// The client.
    pub fn client(&self) -> &WitnessClient {
        &self.client
    }

    /// The size the witness last cosigned, as far as known (0: unknown).
    pub fn size(&self) -> u64 {
        self.status.size
    }

    /// The witness's status.
    pub fn status(&self) -> &WitnessStatus {
        &self.status
    }

    /// Has the witness cosign the checkpoint `note` of `size` entries; `proof(old)` gives the
    /// consistency proof from `old` (only asked for 0 < old < size). Sends the size the
    /// witness last cosigned; on a 409 takes the witness's size and retries once from it
    /// ([`SubmitError::WitnessAhead`] if that size is larger than `size`); on success
    /// remembers `size`. One or two requests, never more.
    pub async fn cosign(
        &mut self,
        size: u64,
        note: &str,
        proof: impl Fn(u64) -> Result<Vec<[u8; 32]>, String>,
    ) -> Result<Vec<String>, SubmitError> {
        let mut result = self.try_cosign(size, note, &proof).await;
        if let (Ok(lines), Some(key)) = (&result, &self.key) {
            result = judge(key, note, lines);
        }
        self.before_success = None;
        match &result {
            Ok(_) => {
                self.before_success = Some((
                    self.status.last_success_unix,
                    self.status.consecutive_failures,
                ));
                self.status.size = size;
                self.status.last_success_unix = Some(unix_now());
                self.status.last_error = None;
                self.status.consecutive_failures = 0;
            }
            Err(e) => {
                self.status.last_error = Some(e.to_string());
                self.status.consecutive_failures =
                    self.status.consecutive_failures.saturating_add(1);
            }
        }
        result
    }

    async fn try_cosign(
        &mut self,
        size: u64,
        note: &str,
        proof: &impl Fn(u64) -> Result<Vec<[u8; 32]>, String>,
    ) -> Result<Vec<String>, SubmitError> {
        let old = self.status.size;
        if old > size {
            return Err(SubmitError::WitnessAhead { size: old });
        }
        match self.submit(old, size, note, proof).await {
            Err(SubmitError::Conflict { size: held }) => {
                if held > size {
                    self.status.size = held;
                    return Err(SubmitError::WitnessAhead { size: held });
                }
                self.status.size = held;
                self.submit(held, size, note, proof).await
            }
            other => other,
        }
    }

    async fn submit(
        &self,
        old: u64,
        size: u64,
        note: &str,
        proof: &impl Fn(u64) -> Result<Vec<[u8; 32]>, String>,
    ) -> Result<Vec<String>, SubmitError> {
        let hashes = if old == 0 || old == size {
            Vec::new()
        } else {
            let p = proof(old).map_err(|why| SubmitError::Proof { old, why })?;
            if p.len() > MAX_PROOF_HASHES {
                return Err(SubmitError::Proof {
                    old,
                    why: format!("{} hashes, more than {MAX_PROOF_HASHES}", p.len()),
                });
            }
            p
        };
        let req = AddCheckpoint {
            old,
            proof: hashes,
            checkpoint: note.to_owned(),
        };
        self.client.add_checkpoint(&req).await
    }
}

/// A 200's lines judged by the witness's key (see [`Submitter::with_key`]).
fn judge(key: &Vkey, note: &str, lines: &[String]) -> Result<Vec<String>, SubmitError> {
    let cp = SignedNote::parse(note)
        .map_err(|e| e.to_string())
        .and_then(|n| CheckpointBody::parse(&n.body).map_err(|e| e.to_string()))
        .map_err(SubmitError::Note)?;
    let mut newest: Option<(u64, &String)> = None;
    for text in lines {
        let Ok(line) = SignatureLine::parse(text) else {
            continue;
        };
        if line.name != key.name || line.key_id != key.key_id {
            continue;
        }
        let ts = verify_signature_line(key, &cp, &line)
            .map_err(|e| SubmitError::BadAnswer(format!("its cosignature does not verify: {e}")))?;
        if newest.is_none_or(|(t, _)| ts > t) {
            newest = Some((ts, text));
        }
    }
    match newest {
        Some((_, line)) => Ok(vec![line.clone()]),
        None => Err(SubmitError::BadAnswer(format!(
            "no cosignature line under its key {}+{} among the {} it answered",
            key.name,
            hex_id(&key.key_id),
            lines.len()
        ))),
    }
}

fn hex_id(id: &[u8; 4]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
