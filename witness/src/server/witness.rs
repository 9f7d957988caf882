//! The witness itself: [`Witness::add_checkpoint`] judges one request body and answers per
//! `c2sp.org/tlog-witness` ([`WitnessAnswer`]).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use dgsp_wire::merkle::{empty_root, verify_consistency};
use dgsp_wire::note::cosignature::{covers_extensions, MAX_TIMESTAMP};
use dgsp_wire::note::{
    verify_signature_line, CheckpointBody, MlDsaCosigner, NoteError, Policy, SignedNote, Vkey,
};

use sha2::{Digest, Sha256};

use super::store::{TreeHead, WitnessStore};
use crate::protocol::{encode_conflict, AddCheckpoint, CONFLICT_CONTENT_TYPE, MAX_REQUEST_BODY};

/// The longest origin a witness can be configured for: the ML-DSA-44 `cosigned_message`
/// encodes it with a one-byte length.
pub const MAX_ORIGIN_LEN: usize = 255;

/// How many times a request re-reads the store after losing a compare-and-set to another
/// writer (another process on the same store) before answering 500.
const CAS_ATTEMPTS: usize = 3;

/// The content type of every answer but the 409.
pub const TEXT_PLAIN: &str = "text/plain; charset=utf-8";

/// Unix time in seconds, for the cosignatures' timestamps.
pub type UnixClock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The system's wall clock, in seconds (0 if it reads before 1970).
pub fn system_clock() -> UnixClock {
    Arc::new(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    })
}

/// Why a log key was not added to [`KnownLogs`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KnownLogsError {
    /// The key name (the origin) is over [`MAX_ORIGIN_LEN`] bytes.
    #[error("origin {0:?}… is over {MAX_ORIGIN_LEN} bytes")]
    OriginTooLong(String),
}

/// The logs a witness cosigns for: per origin, the keys it trusts to sign that origin's
/// checkpoints (any one valid signature suffices; every line by a trusted key must verify).
/// A key's name is its log's origin (as in `c2sp.org/tlog-policy`). Key types: Ed25519
/// note signatures (`0x01`, over the whole body), ML-DSA-44 (`0x06`, `subtree/v1`, extension
/// lines unsigned), and timestamped Ed25519 (`0x04`).
#[derive(Debug, Clone, Default)]
pub struct KnownLogs {
    logs: BTreeMap<String, Vec<Vkey>>,
}

impl KnownLogs {
    /// No logs.
    pub fn new() -> KnownLogs {
        KnownLogs::default()
    }

    /// Trusts `vkey` for the origin named by its key name (adding the same key twice is a
    /// no-op; several keys per origin allow a key rotation).
    pub fn add(&mut self, vkey: Vkey) -> Result<(), KnownLogsError> {
        if vkey.name.len() > MAX_ORIGIN_LEN {
            return Err(KnownLogsError::OriginTooLong(
                vkey.name.chars().take(40).collect(),
            ));
        }
        let keys = self.logs.entry(vkey.name.clone()).or_default();
        if !keys.contains(&vkey) {
            keys.push(vkey);
        }
        Ok(())
    }

    /// The `log` lines of a `c2sp.org/tlog-policy` file (its witnesses and quorum are not
    /// used here).
    pub fn from_policy(policy: &Policy) -> Result<KnownLogs, KnownLogsError> {
        let mut logs = KnownLogs::new();
        for log in policy.logs() {
            logs.add(log.vkey.clone())?;
        }
        Ok(logs)
    }

    /// The keys trusted for `origin` (empty if the origin is unknown).
    pub fn keys(&self, origin: &str) -> &[Vkey] {
        self.logs.get(origin).map_or(&[], Vec::as_slice)
    }

    /// The known origins, in order.
    pub fn origins(&self) -> impl Iterator<Item = &str> {
        self.logs.keys().map(String::as_str)
    }
}

/// The witness's answer to one `add-checkpoint`: an HTTP status, a content type and a body.
/// With the `axum` router it is sent as is ([`IntoResponse`](axum::response::IntoResponse));
/// [`WitnessAnswer::kind`] names it for metrics and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WitnessAnswer {
    /// 200: the cosignature line (`— <name> base64(key id || timestamp || signature)\n`),
    /// given after the new tree was persisted.
    Cosigned {
        /// The origin cosigned.
        origin: String,
        /// The size cosigned.
        size: u64,
        /// The cosignature's timestamp (POSIX seconds, never 0).
        timestamp: u64,
        /// The body: the cosignature line(s), each ending in `\n`.
        lines: String,
    },
    /// 400: a malformed request, or an old size larger than the checkpoint's.
    BadRequest(String),
    /// 403: no valid signature by a key trusted for the origin, or a trusted key's signature
    /// fails.
    Forbidden(&'static str),
    /// 404: an origin this witness does not cosign for.
    UnknownOrigin,
    /// 409 (`text/x.tlog.size`, body `<size>\n`): the old size is not the size this witness
    /// last cosigned for the origin (0 if never).
    Conflict {
        /// The size this witness holds.
        size: u64,
    },
    /// 422: the checkpoint is not consistent with what this witness holds (bad proof, a
    /// non-empty proof from size 0, another root at the same size, a size-0 checkpoint whose
    /// root is not the empty tree's).
    Unprocessable(&'static str),
    /// 413: the body is over [`MAX_REQUEST_BODY`] bytes.
    TooLarge,
    /// 500: the store failed, or the clock reads 0. The text is for the operator's log; the
    /// body sent is only `internal error\n`.
    Internal(String),
}

impl WitnessAnswer {
    /// The HTTP status code.
    pub fn status(&self) -> u16 {
        match self {
            WitnessAnswer::Cosigned { .. } => 200,
            WitnessAnswer::BadRequest(_) => 400,
            WitnessAnswer::Forbidden(_) => 403,
            WitnessAnswer::UnknownOrigin => 404,
            WitnessAnswer::Conflict { .. } => 409,
            WitnessAnswer::TooLarge => 413,
            WitnessAnswer::Unprocessable(_) => 422,
            WitnessAnswer::Internal(_) => 500,
        }
    }

    /// The `Content-Type`: `text/x.tlog.size` for the 409, `text/plain; charset=utf-8`
    /// otherwise.
    pub fn content_type(&self) -> &'static str {
        match self {
            WitnessAnswer::Conflict { .. } => CONFLICT_CONTENT_TYPE,
            _ => TEXT_PLAIN,
        }
    }

    /// The body sent.
    pub fn body(&self) -> String {
        match self {
            WitnessAnswer::Cosigned { lines, .. } => lines.clone(),
            WitnessAnswer::BadRequest(why) => format!("{why}\n"),
            WitnessAnswer::Forbidden(why) | WitnessAnswer::Unprocessable(why) => {
                format!("{why}\n")
            }
            WitnessAnswer::UnknownOrigin => "unknown origin\n".into(),
            WitnessAnswer::Conflict { size } => encode_conflict(*size),
            WitnessAnswer::TooLarge => {
                format!("request body over {MAX_REQUEST_BODY} bytes\n")
            }
            WitnessAnswer::Internal(_) => "internal error\n".into(),
        }
    }

    /// A short name for metrics and logs: `cosigned`, `bad_request`, `forbidden`,
    /// `unknown_origin`, `conflict`, `too_large`, `unprocessable`, `internal`.
    pub fn kind(&self) -> &'static str {
        match self {
            WitnessAnswer::Cosigned { .. } => "cosigned",
            WitnessAnswer::BadRequest(_) => "bad_request",
            WitnessAnswer::Forbidden(_) => "forbidden",
            WitnessAnswer::UnknownOrigin => "unknown_origin",
            WitnessAnswer::Conflict { .. } => "conflict",
            WitnessAnswer::TooLarge => "too_large",
            WitnessAnswer::Unprocessable(_) => "unprocessable",
            WitnessAnswer::Internal(_) => "internal",
        }
    }
}

/// 403 bodies.
pub const NO_TRUSTED_SIGNATURE: &str = "no signature by a key trusted for the origin";
/// 403 body: a line by a trusted key (name and key ID) does not verify.
pub const BAD_TRUSTED_SIGNATURE: &str =
    "a signature by a key trusted for the origin does not verify";
/// 403 body: extension lines on a note whose trusted signatures (ML-DSA-44) do not cover
/// them.
pub const UNSIGNED_EXTENSIONS: &str =
    "extension lines that no signature by a key trusted for the origin covers";
/// 422 body: the consistency proof does not lead from the held tree to the checkpoint.
pub const BAD_PROOF: &str =
    "the consistency proof does not verify from the tree this witness holds";
/// 422 body: a non-empty proof with `old 0`.
pub const PROOF_FROM_ZERO: &str = "a consistency proof from size 0 must be empty";
/// 422 body: the size this witness holds, with another root.
pub const OTHER_ROOT: &str = "this witness holds another root at this size";
/// 422 body: size 0 with a root other than `SHA-256("")`.
pub const NOT_EMPTY_ROOT: &str = "a checkpoint of size 0 must have the empty tree's root";

/// A `c2sp.org/tlog-witness` witness: an ML-DSA-44 key, the logs it cosigns for, its state
/// in a [`WitnessStore`], and a clock. Share it with an `Arc`; every method takes `&self`.
pub struct Witness {
    key: MlDsaCosigner,
    logs: KnownLogs,
    store: Arc<dyn WitnessStore>,
    clock: UnixClock,
    /// Serialises the check-and-write of every request in this process, and holds the last
    /// timestamp issued (cosignature timestamps never go backwards, even if the clock does).
    gate: Mutex<u64>,
    /// Per origin, the newest checkpoint cosigned since this process started, with the log's
    /// signature and this witness's cosignature (memory only: see
    /// [`Witness::latest_checkpoint`]).
    latest: Mutex<BTreeMap<String, Latest>>,
    /// `hex(SHA-256(origin))` → origin, for every known origin (the monitoring path).
    by_hash: BTreeMap<String, String>,
}

impl fmt::Debug for Witness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Witness")
            .field("key", &self.key)
            .field("logs", &self.logs.origins().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// What a request asks, once parsed and its log signature verified.
struct Verified {
    old: u64,
    proof: Vec<[u8; 32]>,
    cp: CheckpointBody,
    /// The checkpoint's text (the note's body) and the log's signature lines that verified
    /// under a trusted key, for [`Witness::latest_checkpoint`].
    body: String,
    log_lines: Vec<String>,
}

/// The newest checkpoint this witness cosigned for one origin, as it serves it for
/// monitoring ([`Witness::latest_checkpoint`]).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Latest {
    size: u64,
    timestamp: u64,
    note: String,
}

impl Witness {
    /// A witness signing with `key` (its name is the witness's name), cosigning for `logs`,
    /// keeping its state in `store`, timestamping with `clock` (Unix seconds).
    pub fn new(
        key: MlDsaCosigner,
        logs: KnownLogs,
        store: Arc<dyn WitnessStore>,
        clock: UnixClock,
    ) -> Witness {
        let by_hash = logs
            .origins()
            .map(|o| (origin_hash(o), o.to_owned()))
            .collect();
        Witness {
            key,
            logs,
            store,
            clock,
            gate: Mutex::new(0),
            latest: Mutex::new(BTreeMap::new()),
            by_hash,
        }
    }

    /// The witness's name (its key name).
    pub fn name(&self) -> &str {
        self.key.name()
    }

    /// The witness's verifier key (`<name>+<key id>+base64(0x06 || public key)`), for the
    /// `witness` line of a policy.
    pub fn vkey(&self) -> String {
        self.key.vkey()
    }

    /// The logs it cosigns for.
    pub fn logs(&self) -> &KnownLogs {
        &self.logs
    }

    /// The tree last cosigned for `origin` (from the store).
    pub fn held(&self, origin: &str) -> Result<Option<TreeHead>, super::StoreError> {
        self.store.get(origin)
    }

    /// Judges one `add-checkpoint` request body and answers. Synchronous: it verifies
    /// signatures, calls the store and signs; from async code call it on a blocking thread
    /// ([`Witness::add_checkpoint_async`] does).
    ///
    /// In order (the spec's): over 16 KiB → 413; malformed request or note → 400; unknown
    /// origin → 404; no valid signature by a trusted key, or a failing one, or extension
    /// lines that no trusted signature covers (every trusted line ML-DSA-44) → 403; old >
    /// size → 400; old ≠ the size held (0 if none) → 409; size 0 with another root than the
    /// empty tree's, a non-empty proof from 0, a proof that does not lead from the **held**
    /// tree (size and root from the store, never from the request) to the checkpoint, or
    /// another root at the held size → 422; then the new tree is compare-and-set in the
    /// store (expected: the tree just read), and only once that returned `true` is the
    /// cosignature made, with a non-zero timestamp taken inside the same critical section.
    pub fn add_checkpoint(&self, body: &[u8]) -> WitnessAnswer {
        let req = match self.verify_request(body) {
            Ok(req) => req,
            Err(answer) => return answer,
        };
        let timestamp = match self.advance(&req) {
            Ok(ts) => ts,
            Err(answer) => return answer,
        };
        let cp = &req.cp;
        match self.key.cosign(&cp.origin, cp.size, &cp.root, timestamp) {
            Ok(lines) => {
                self.remember(&req, timestamp, &lines);
                WitnessAnswer::Cosigned {
                    origin: cp.origin.clone(),
                    size: cp.size,
                    timestamp,
                    lines,
                }
            }
            Err(e) => WitnessAnswer::Internal(format!("cosigning failed: {e}")),
        }
    }

    /// Keeps `req`'s checkpoint, cosigned by `lines` at `timestamp`, as the origin's newest
    /// unless a larger tree (or the same tree with a later cosignature) is already kept:
    /// requests cosign in the store's order but may finish signing in another.
    fn remember(&self, req: &Verified, timestamp: u64, lines: &str) {
        let mut note = format!("{}\n", req.body);
        for line in &req.log_lines {
            note.push_str(line);
        }
        note.push_str(lines);
        let new = Latest {
            size: req.cp.size,
            timestamp,
            note,
        };
        let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        match latest.get(&req.cp.origin) {
            Some(held) if (held.size, held.timestamp) >= (new.size, new.timestamp) => {}
            _ => {
                latest.insert(req.cp.origin.clone(), new);
            }
        }
    }

    /// The newest checkpoint this witness cosigned for the origin whose SHA-256 is
    /// `origin_hash` (64 lowercase hex digits), since this process started: a signed note of
    /// the checkpoint's body, the log's signature line(s) that verified under a key trusted
    /// for the origin, and this witness's cosignature line, exactly as handed out. `None`
    /// for an unknown origin, or when nothing was cosigned for it since the start (the
    /// tree is durable in the store, the note and its signatures are not kept: the log's
    /// next submission, one cadence later, brings them back).
    ///
    /// What `GET <prefix>/<hex SHA-256(origin)>/checkpoint` serves
    /// ([`router`](super::router)): a monitor, e.g. `dgsp-manager audit --compare
    /// witness:<prefix>`, reads which tree the witness holds and verifies both signatures.
    pub fn latest_checkpoint(&self, origin_hash: &str) -> Option<String> {
        let origin = self.by_hash.get(origin_hash)?;
        let latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        latest.get(origin).map(|l| l.note.clone())
    }

    /// [`Witness::add_checkpoint`] on tokio's blocking pool (it may wait on the store and
    /// spends about a millisecond on signatures).
    pub async fn add_checkpoint_async(self: Arc<Self>, body: axum::body::Bytes) -> WitnessAnswer {
        match tokio::task::spawn_blocking(move || self.add_checkpoint(&body)).await {
            Ok(answer) => answer,
            Err(e) => WitnessAnswer::Internal(format!("the witness task failed: {e}")),
        }
    }

    /// Parsing, the origin and the log's signature: everything that needs no state.
    fn verify_request(&self, body: &[u8]) -> Result<Verified, WitnessAnswer> {
        if body.len() > MAX_REQUEST_BODY {
            return Err(WitnessAnswer::TooLarge);
        }
        let req = AddCheckpoint::parse(body)
            .map_err(|e| WitnessAnswer::BadRequest(format!("malformed request: {e}")))?;
        let note = match SignedNote::parse(&req.checkpoint) {
            Ok(note) => note,
            Err(NoteError::NoSignatures) => {
                // A well-formed checkpoint without signature lines: 404 if its origin is
                // unknown, else 403 (no trusted signature), as with only unknown lines.
                let body = req
                    .checkpoint
                    .strip_suffix('\n')
                    .and_then(|t| t.strip_suffix('\n'))
                    .filter(|b| !b.contains("\n\n"))
                    .map(|b| format!("{b}\n"));
                let cp = body.as_deref().map(CheckpointBody::parse);
                return Err(match cp {
                    Some(Ok(cp)) if self.logs.keys(&cp.origin).is_empty() => {
                        WitnessAnswer::UnknownOrigin
                    }
                    Some(Ok(_)) => WitnessAnswer::Forbidden(NO_TRUSTED_SIGNATURE),
                    _ => WitnessAnswer::BadRequest(format!(
                        "malformed checkpoint note: {}",
                        NoteError::NoSignatures
                    )),
                });
            }
            Err(e) => {
                return Err(WitnessAnswer::BadRequest(format!(
                    "malformed checkpoint note: {e}"
                )))
            }
        };
        let cp = CheckpointBody::parse(&note.body)
            .map_err(|e| WitnessAnswer::BadRequest(format!("malformed checkpoint: {e}")))?;
        let keys = self.logs.keys(&cp.origin);
        if keys.is_empty() {
            return Err(WitnessAnswer::UnknownOrigin);
        }
        let mut log_lines = Vec::new();
        let mut covered = false;
        for line in &note.signatures {
            let Some(key) = keys
                .iter()
                .find(|k| k.name == line.name && k.key_id == line.key_id)
            else {
                continue; // unknown keys are ignored
            };
            verify_signature_line(key, &cp, line)
                .map_err(|_| WitnessAnswer::Forbidden(BAD_TRUSTED_SIGNATURE))?;
            covered |= covers_extensions(key);
            log_lines.push(line.to_line());
        }
        if log_lines.is_empty() {
            return Err(WitnessAnswer::Forbidden(NO_TRUSTED_SIGNATURE));
        }
        // An ML-DSA-44 signature covers origin, size and root only, and so does this
        // witness's cosignature: extension lines only an Ed25519 log signature vouched for
        // would be served (the monitoring read) as if signed.
        if !cp.extensions.is_empty() && !covered {
            return Err(WitnessAnswer::Forbidden(UNSIGNED_EXTENSIONS));
        }
        if req.old > cp.size {
            return Err(WitnessAnswer::BadRequest(format!(
                "old size {} is larger than the checkpoint's size {}",
                req.old, cp.size
            )));
        }
        Ok(Verified {
            old: req.old,
            proof: req.proof,
            cp,
            body: note.body,
            log_lines,
        })
    }

    /// The stateful part, under the gate: the held tree, the checks against it, the
    /// compare-and-set, and the timestamp.
    fn advance(&self, req: &Verified) -> Result<u64, WitnessAnswer> {
        let mut last_ts = self.gate.lock().unwrap_or_else(PoisonError::into_inner);
        let cp = &req.cp;
        let new = TreeHead {
            size: cp.size,
            root: cp.root,
        };
        for _ in 0..CAS_ATTEMPTS {
            let held = self.store.get(&cp.origin).map_err(internal)?;
            check_against(held, req)?;
            // The timestamp before the write, so a failing clock changes nothing.
            let ts = (self.clock)().max(*last_ts);
            if ts == 0 || ts > MAX_TIMESTAMP {
                return Err(WitnessAnswer::Internal(format!(
                    "the clock reads {ts}: no cosignature timestamp"
                )));
            }
            if self
                .store
                .compare_and_set(&cp.origin, held, new)
                .map_err(internal)?
            {
                *last_ts = ts;
                return Ok(ts);
            }
            // Another writer of the store got there first: judge again against its tree.
        }
        Err(WitnessAnswer::Internal(format!(
            "the store's tree for {:?} changed {CAS_ATTEMPTS} times during one request",
            cp.origin
        )))
    }
}

/// `hex(SHA-256(origin))`, lowercase: how the monitoring path names a log.
pub fn origin_hash(origin: &str) -> String {
    let digest = Sha256::digest(origin.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn internal(e: super::StoreError) -> WitnessAnswer {
    WitnessAnswer::Internal(e.to_string())
}

/// The spec's checks against the held tree, in its order: 409, then the 422s.
fn check_against(held: Option<TreeHead>, req: &Verified) -> Result<(), WitnessAnswer> {
    let cp = &req.cp;
    let held_size = held.map_or(0, |h| h.size);
    if req.old != held_size {
        return Err(WitnessAnswer::Conflict { size: held_size });
    }
    if cp.size == 0 && cp.root != empty_root() {
        return Err(WitnessAnswer::Unprocessable(NOT_EMPTY_ROOT));
    }
    if req.old == 0 && !req.proof.is_empty() {
        return Err(WitnessAnswer::Unprocessable(PROOF_FROM_ZERO));
    }
    let Some(held) = held else {
        // Never cosigned: every tree extends the empty one.
        return Ok(());
    };
    if held.size == cp.size && req.proof.is_empty() && held.root != cp.root {
        return Err(WitnessAnswer::Unprocessable(OTHER_ROOT));
    }
    // From the held root: a proof made from any other old root fails here.
    verify_consistency(held.size, cp.size, &held.root, &cp.root, &req.proof)
        .map_err(|_| WitnessAnswer::Unprocessable(BAD_PROOF))
}
