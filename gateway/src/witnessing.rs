//! The gateway as a witness (`--witness-key`, issue 28 item 5; docs/gateway.md, "The gateway
//! as a witness"): a gateway already checks everything a witness must check, so it can offer
//! the C2SP `tlog-witness` endpoint, `POST /witness/add-checkpoint` (submission prefix
//! `<gateway URL>/witness`), and cosign its group's log with its own ML-DSA-44 key. Operators
//! of independent gateways then witness each other's view of the log: a registry whose
//! policy names their gateways as witnesses publishes a checkpoint only once they cosigned
//! it, and no gateway cosigns two trees of one size, or a tree that does not extend the one
//! it cosigned before.
//!
//! - [`WitnessKey`]: the key file (`dgsp-gateway witness-key --out FILE --name NAME`), a
//!   secret file holding the witness's name and its 32-byte ML-DSA-44 seed.
//! - [`WitnessConfig`]: what `serve` is given (the key, and further logs to witness from a
//!   `--witness-logs` tlog-policy file).
//! - [`WitnessService`]: the running witness ([`dgsp_witness::server::Witness`]), its state
//!   kept with its key, apart from the replica (`--witness-state`, a [`DirStore`]: the
//!   replica can be lost and rebuilt, the trees a witness cosigned cannot), its answers
//!   counted for `/metrics`, its report for `/readyz`. It cosigns once the group's log key
//!   is known ([`start`]): from a `log` line for the group's log in `--witness-policy` or
//!   `--witness-logs`, else from the registry's `GET /v1/log/key` statement, judged by
//!   [`verify_log_key_statement`] against the configuration: signed by the pinned group
//!   key, naming the group's origin and an ML-DSA-44 key under it, and of no lower
//!   generation (nor another key of the same generation) than the statement kept in the
//!   witness state (`log-key`), where each newer one it accepts is kept. Until then it
//!   answers 503, naming why the last statement was refused.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::header::{CONTENT_TYPE, RETRY_AFTER};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use dgsp_core::checkpoint::origin_for;
use dgsp_core::ManagerPublicKey;
use dgsp_wire::note::cosignature::MlDsaCosigner;
use dgsp_wire::note::{verify_log_key_statement, LearnedLogKey, Policy, Vkey};
use dgsp_witness::server::{
    DirStore, KnownLogs, TreeHead, Witness, WitnessAnswer, WitnessStore, TEXT_PLAIN,
};
use rand_core::{OsRng, RngCore};
use serde::Serialize;
use tokio::sync::watch;
use utoipa::ToSchema;
use zeroize::Zeroizing;

use crate::api::Shared;
use crate::follower::FollowConfig;

/// The first line of a witness key file.
pub const KEY_FORMAT: &str = "dgsp-gateway-witness-key/v1";

/// The submission prefix under the gateway's URL: requests go to
/// `<gateway URL>/witness/add-checkpoint`.
pub const PREFIX: &str = "/witness";

/// The witness's key: its name (the key name in its vkey and cosignatures, e.g. the
/// gateway's host name) and the 32-byte seed of its ML-DSA-44 key. The seed is zeroized on
/// drop and never printed.
///
/// The file (`witness-key`, read by `serve --witness-key`) is a secret file of three lines:
///
/// ```text
/// dgsp-gateway-witness-key/v1
/// name <name>
/// seed <64 hex digits>
/// ```
///
/// The name is in the file because the key ID, and so the vkey every policy names, is made
/// from it: the same seed under another name is another witness.
#[derive(Clone)]
pub struct WitnessKey {
    name: String,
    seed: Zeroizing<[u8; 32]>,
}

impl fmt::Debug for WitnessKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WitnessKey")
            .field("name", &self.name)
            .field("seed", &"<redacted>")
            .finish()
    }
}

impl WitnessKey {
    /// A new key named `name`, from the operating system's random source. Refused if
    /// `name` is not a valid key name (non-empty, no spaces or `+`, at most 255 bytes).
    pub fn generate(name: &str) -> Result<WitnessKey, String> {
        let mut seed = Zeroizing::new([0u8; 32]);
        OsRng.fill_bytes(seed.as_mut());
        WitnessKey::from_seed(name, seed)
    }

    /// The key named `name` with `seed`.
    pub fn from_seed(name: &str, seed: Zeroizing<[u8; 32]>) -> Result<WitnessKey, String> {
        let key = WitnessKey {
            name: name.to_owned(),
            seed,
        };
        key.cosigner()?;
        Ok(key)
    }

    /// The witness's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The ML-DSA-44 cosigner of this key.
    pub fn cosigner(&self) -> Result<MlDsaCosigner, String> {
        MlDsaCosigner::from_seed(&self.name, &self.seed)
            .map_err(|e| format!("witness name {:?}: {e}", self.name))
    }

    /// The witness's verifier key (`<name>+<key id>+base64(0x06 || public key)`): what a
    /// policy's `witness` line names.
    pub fn vkey(&self) -> Result<String, String> {
        Ok(self.cosigner()?.vkey())
    }

    fn encode(&self) -> Zeroizing<String> {
        Zeroizing::new(format!(
            "{KEY_FORMAT}\nname {}\nseed {}\n",
            self.name,
            Zeroizing::new(hex::encode(self.seed.as_ref())).as_str()
        ))
    }

    fn parse(text: &str) -> Result<WitnessKey, String> {
        let mut lines = text.strip_suffix('\n').unwrap_or(text).split('\n');
        if lines.next() != Some(KEY_FORMAT) {
            return Err(format!(
                "not a witness key file (its first line is not {KEY_FORMAT})"
            ));
        }
        let name = lines
            .next()
            .and_then(|l| l.strip_prefix("name "))
            .ok_or("the second line is not `name <name>`")?;
        let seed_hex = lines
            .next()
            .and_then(|l| l.strip_prefix("seed "))
            .ok_or("the third line is not `seed <64 hex digits>`")?;
        if lines.next().is_some() {
            return Err("more than three lines".into());
        }
        let mut seed = Zeroizing::new([0u8; 32]);
        hex::decode_to_slice(seed_hex, seed.as_mut())
            .map_err(|_| "the seed is not 64 hex digits".to_owned())?;
        WitnessKey::from_seed(name, seed)
    }

    /// Reads the key file at `path` as a secret file (refused if it is a symbolic link, not
    /// a regular file, or other users may read it: `chmod 600`).
    pub fn load(path: &Path) -> Result<WitnessKey, String> {
        let text = dgsp_secrets::file::read_text(path).map_err(|e| e.to_string())?;
        WitnessKey::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Writes the key file at `path`: mode 0600 whatever the umask, atomically (a fresh
    /// temporary file beside it, synced, then linked into place), never over anything that
    /// is there (a file, a directory, a link). A new key has cosigned nothing, so its empty
    /// witness state is made beside it, at [`default_state_dir`] (unless one is there).
    pub fn write_new(&self, path: &Path) -> Result<(), String> {
        dgsp_secrets::write::write_new(path, self.encode().as_bytes(), "witness key files")
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let state = default_state_dir(path);
        if !DirStore::exists(&state) {
            DirStore::create(&state, &[]).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// Where the witness state of the key file `key` is unless `--witness-state` says
/// otherwise: the directory `<key file>.state` beside it.
pub fn default_state_dir(key: &Path) -> PathBuf {
    let mut name = key.file_name().unwrap_or_default().to_os_string();
    name.push(".state");
    key.with_file_name(name)
}

/// What `serve` is configured with to be a witness.
#[derive(Clone, Debug)]
pub struct WitnessConfig {
    /// The witness's key (`--witness-key`).
    pub key: WitnessKey,
    /// Further logs to witness (`--witness-logs`: the `log` lines of a tlog-policy file);
    /// the group's own log is always witnessed.
    pub logs: KnownLogs,
    /// The witness state's directory (`--witness-state`, default [`default_state_dir`]).
    pub state: PathBuf,
    /// Whether a missing state may be made anew (`--witness-init-state`).
    pub init_state: bool,
}

impl WitnessConfig {
    /// The key file at `key`, the witness state's directory (`state`, else beside the key),
    /// whether a missing state may be made (`init_state`) and, if given, the tlog-policy
    /// file `logs` whose `log` lines name further logs to witness; errors name the flag and
    /// the file.
    pub fn load(
        key: &Path,
        logs: Option<&Path>,
        state: Option<&Path>,
        init_state: bool,
    ) -> Result<WitnessConfig, String> {
        let state = state.map_or_else(|| default_state_dir(key), Path::to_owned);
        let key = WitnessKey::load(key).map_err(|e| format!("--witness-key {e}"))?;
        let logs = match logs {
            None => KnownLogs::new(),
            Some(path) => {
                let bad = |e: String| format!("--witness-logs {}: {e}", path.display());
                let text = fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
                let policy = Policy::parse(&text).map_err(|e| bad(e.to_string()))?;
                KnownLogs::from_policy(&policy).map_err(|e| bad(e.to_string()))?
            }
        };
        Ok(WitnessConfig {
            key,
            logs,
            state,
            init_state,
        })
    }
}

/// Opens the witness state of `config` for the logs `origins`. A state that is not there
/// is made only with `--witness-init-state`, from the trees the replica holds for those
/// logs (what gateways before `--witness-state` kept there), else empty; without the flag
/// the start is refused: a witness that lost its state would cosign any tree from `old 0`
/// again, a second tree of a size it already cosigned among them.
pub fn open_state(
    config: &WitnessConfig,
    origins: &[String],
    replica: &crate::replica::Replica,
) -> Result<DirStore, String> {
    let dir = &config.state;
    let bad = |e: dgsp_witness::server::StoreError| format!("--witness-state {}", e.0);
    if DirStore::exists(dir) {
        return DirStore::open(dir).map_err(bad);
    }
    if !config.init_state {
        return Err(format!(
            "--witness-state {}: no witness state there. A witness's state (the tree it last \
             cosigned for each log) must be kept with its key: restore it, or, if this key has \
             never cosigned or its cosignatures count nowhere yet, start once with \
             --witness-init-state (from the replica's trees, if it holds any; else it cosigns \
             any tree from old 0 again)",
            dir.display()
        ));
    }
    let mut initial: Vec<(String, TreeHead)> = Vec::new();
    for origin in origins {
        let held = replica
            .witnessed_tree(origin)
            .map_err(|e| format!("--witness-init-state: the replica's witness trees: {e}"))?;
        if let Some(h) = held {
            initial.push((origin.clone(), h));
        }
    }
    let store = DirStore::create(dir, &initial).map_err(bad)?;
    tracing::warn!(
        dir = %dir.display(),
        from_replica = initial.len(),
        "--witness-init-state: a new witness state was made"
    );
    Ok(store)
}

/// The statuses answers are counted by in `/metrics`, with their names.
const ANSWERS: [(u16, &str); 9] = [
    (200, "cosigned"),
    (400, "bad_request"),
    (403, "forbidden"),
    (404, "unknown_origin"),
    (409, "conflict"),
    (413, "too_large"),
    (422, "unprocessable"),
    (500, "internal"),
    (503, "not_ready"),
];

/// The body of the 503 answered before the group's log key is known (with why the last
/// try failed, when one did: [`WitnessService::not_ready`]).
pub const NOT_READY: &str = "this witness does not know its log's key yet: retry later\n";

/// The gateway's running witness.
pub struct WitnessService {
    key: WitnessKey,
    vkey: String,
    store: Arc<dyn WitnessStore>,
    /// The group's log origin.
    origin: String,
    witness: OnceLock<Arc<Witness>>,
    /// Why the last try to learn the group's log key failed (the 503's body says it).
    learn_error: Mutex<Option<String>>,
    answers: [AtomicU64; ANSWERS.len()],
}

impl fmt::Debug for WitnessService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WitnessService")
            .field("name", &self.key.name)
            .field("vkey", &self.vkey)
            .field("ready", &self.witness.get().is_some())
            .finish_non_exhaustive()
    }
}

/// The witness, as `/readyz` reports it.
#[derive(Debug, Serialize, ToSchema)]
pub struct WitnessReport {
    /// The witness's name.
    pub name: String,
    /// Its verifier key, for the `witness` line of a log's policy.
    pub vkey: String,
    /// Its submission prefix, under this gateway's URL.
    pub prefix: String,
    /// Whether it cosigns: false until the group's log key is known (answers 503 then).
    pub ready: bool,
    /// The logs it cosigns for, with the tree it last cosigned.
    pub logs: Vec<WitnessedLog>,
}

/// One log the witness cosigns for.
#[derive(Debug, Serialize, ToSchema)]
pub struct WitnessedLog {
    /// The log's origin.
    pub origin: String,
    /// The size it last cosigned (0: never).
    pub size: u64,
    /// The root it last cosigned (hex; absent if never).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
}

impl WitnessService {
    /// A witness with `config`'s key for `group`'s log, its state in `store`, not yet
    /// cosigning ([`install`](Self::install) gives it its logs).
    pub fn new(
        config: &WitnessConfig,
        group: &ManagerPublicKey,
        store: Arc<dyn WitnessStore>,
    ) -> Result<WitnessService, String> {
        Ok(WitnessService {
            vkey: config.key.vkey()?,
            key: config.key.clone(),
            store,
            origin: origin_for(group),
            witness: OnceLock::new(),
            learn_error: Mutex::new(None),
            answers: Default::default(),
        })
    }

    /// The witness's name.
    pub fn name(&self) -> &str {
        self.key.name()
    }

    /// The witness's verifier key.
    pub fn vkey(&self) -> &str {
        &self.vkey
    }

    /// The group's log origin.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The witness, once it cosigns.
    pub fn witness(&self) -> Option<&Arc<Witness>> {
        self.witness.get()
    }

    /// Starts cosigning for `logs` (which must name the group's log); a second call changes
    /// nothing.
    pub fn install(&self, logs: KnownLogs) -> Result<(), String> {
        if logs.keys(&self.origin).is_empty() {
            return Err(format!("no key for the group's log {:?}", self.origin));
        }
        let witness = Witness::new(
            self.key.cosigner()?,
            logs,
            self.store.clone(),
            dgsp_witness::server::system_clock(),
        );
        if self.witness.set(Arc::new(witness)).is_ok() {
            tracing::info!(
                name = %self.name(),
                vkey = %self.vkey,
                origins = ?self.witness().map(|w| w.logs().origins().map(str::to_owned).collect::<Vec<_>>()),
                "witness cosigning at {PREFIX}/add-checkpoint"
            );
        }
        Ok(())
    }

    /// Records why the last try to learn the group's log key failed.
    fn learn_failed(&self, why: String) {
        *self
            .learn_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(why);
    }

    /// The 503 answered before the group's log key is known: [`NOT_READY`], or, once a try
    /// to learn it failed, `this witness does not know its log's key yet (<why>): retry
    /// later`, so a registry's witness client reports why as this witness's failure.
    pub fn not_ready(&self) -> Response {
        let why = self
            .learn_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let body = match why {
            None => NOT_READY.to_owned(),
            Some(why) => {
                format!("this witness does not know its log's key yet ({why}): retry later\n")
            }
        };
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(CONTENT_TYPE, TEXT_PLAIN), (RETRY_AFTER, "5")],
            body,
        )
            .into_response()
    }

    /// Judges one request body (the route's handler, counted).
    async fn answer(&self, body: Result<Bytes, BytesRejection>) -> Response {
        let Some(witness) = self.witness().cloned() else {
            self.count(503);
            return self.not_ready();
        };
        let answer = match body {
            Ok(body) => witness.add_checkpoint_async(body).await,
            Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                WitnessAnswer::TooLarge
            }
            Err(rejection) => WitnessAnswer::BadRequest(format!(
                "the request body could not be read: {rejection}"
            )),
        };
        self.count(answer.status());
        match &answer {
            WitnessAnswer::Cosigned { origin, size, .. } => {
                tracing::debug!(%origin, size, "witness: cosigned")
            }
            WitnessAnswer::Internal(why) => tracing::error!(error = %why, "witness: failed"),
            WitnessAnswer::Unprocessable(why) => {
                tracing::warn!(answer = %why, "witness: refused a checkpoint (422)")
            }
            _ => {}
        }
        answer.into_response()
    }

    fn count(&self, status: u16) {
        if let Some(i) = ANSWERS.iter().position(|(s, _)| *s == status) {
            self.answers[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// What `/readyz` says of the witness (reads the held trees from the replica).
    pub fn report(&self) -> WitnessReport {
        let origins: Vec<String> = match self.witness() {
            Some(w) => w.logs().origins().map(str::to_owned).collect(),
            None => vec![self.origin.clone()],
        };
        let logs = origins
            .into_iter()
            .map(|origin| {
                let held = self.store.get(&origin).ok().flatten();
                WitnessedLog {
                    size: held.map_or(0, |h| h.size),
                    root: held.map(|h| hex::encode(h.root)),
                    origin,
                }
            })
            .collect();
        WitnessReport {
            name: self.name().to_owned(),
            vkey: self.vkey.clone(),
            prefix: PREFIX.to_owned(),
            ready: self.witness().is_some(),
            logs,
        }
    }

    /// Appends the witness's metrics (Prometheus text) to `out`.
    pub fn render_metrics(&self, out: &mut String) {
        out.push_str("# HELP dgsp_gateway_witness_answers_total add-checkpoint answers of this gateway's witness, by status.\n# TYPE dgsp_gateway_witness_answers_total counter\n");
        for (i, (status, answer)) in ANSWERS.iter().enumerate() {
            out.push_str(&format!(
                "dgsp_gateway_witness_answers_total{{status=\"{status}\",answer=\"{answer}\"}} {}\n",
                self.answers[i].load(Ordering::Relaxed)
            ));
        }
        dgsp_http::metrics::gauge(
            out,
            "dgsp_gateway_witness_ready",
            "1 once the witness cosigns (the group's log key is known).",
            u64::from(self.witness().is_some()),
        );
        let report = self.report();
        out.push_str("# HELP dgsp_gateway_witness_size The size this witness last cosigned, per log.\n# TYPE dgsp_gateway_witness_size gauge\n");
        for log in report.logs {
            out.push_str(&format!(
                "dgsp_gateway_witness_size{{origin=\"{}\"}} {}\n",
                log.origin, log.size
            ));
        }
    }
}

/// `POST /witness/add-checkpoint`: the C2SP `tlog-witness` endpoint, served only with
/// `--witness-key` (404 otherwise).
#[utoipa::path(post, path = "/witness/add-checkpoint", tag = "witness",
    request_body(content = String, content_type = "text/plain",
        description = "c2sp.org/tlog-witness: `old <size>`, up to 63 base64 consistency-proof hashes, a blank line, the checkpoint note signed by the log's key; at most 16 KiB"),
    responses(
        (status = 200, description = "the witness's cosignature line(s), `— <name> <base64>`, given once the tree is stored", body = String, content_type = "text/plain"),
        (status = 400, description = "a malformed request, or an old size larger than the checkpoint's", body = String, content_type = "text/plain"),
        (status = 403, description = "no valid signature by the log's key", body = String, content_type = "text/plain"),
        (status = 404, description = "a log this witness does not cosign for (text/plain); a gateway started without --witness-key answers problem+json",
            content((String = "text/plain"), (dgsp_http::problem::Problem = "application/problem+json"))),
        (status = 409, description = "the old size is not the size this witness last cosigned: the body is that size (`<size>\\n`)", body = String, content_type = "text/x.tlog.size"),
        (status = 413, description = "a body over 16 KiB", body = String, content_type = "text/plain"),
        (status = 422, description = "not consistent with the tree this witness holds (a bad proof, another root at the same size)", body = String, content_type = "text/plain"),
        (status = 500, description = "the replica failed", body = String, content_type = "text/plain"),
        (status = 503, description = "the group's log key is not known yet (Retry-After)", body = String, content_type = "text/plain"),
    ))]
pub async fn add_checkpoint(
    State(s): State<Shared>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match &s.witness {
        Some(w) => w.answer(body).await,
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `GET /witness/{origin_hash}/checkpoint`: the monitoring read of the gateway's witness
/// (ours; `dgsp_witness::server::latest_checkpoint`), served only with `--witness-key`.
#[utoipa::path(get, path = "/witness/{origin_hash}/checkpoint", tag = "witness",
    params(("origin_hash" = String, Path, description = "hex SHA-256 of the log's origin, 64 lowercase digits")),
    responses(
        (status = 200, description = "the newest checkpoint this witness cosigned for the log since it started, as a signed note: the checkpoint body, the log's signature line(s) that verified, and this witness's cosignature line (what `dgsp-manager audit --compare witness:<gateway URL>/witness` reads); not cached", body = String, content_type = "text/plain"),
        (status = 404, description = "a log this witness does not cosign for, or nothing cosigned for it since it started (text/plain); a gateway started without --witness-key answers problem+json",
            content((String = "text/plain"), (dgsp_http::problem::Problem = "application/problem+json"))),
        (status = 503, description = "the group's log key is not known yet (Retry-After)", body = String, content_type = "text/plain"),
    ))]
pub async fn latest_checkpoint(
    State(s): State<Shared>,
    axum::extract::Path(origin_hash): axum::extract::Path<String>,
) -> Response {
    let Some(service) = &s.witness else {
        return StatusCode::NOT_FOUND.into_response();
    };
    match service.witness() {
        Some(witness) => dgsp_witness::server::latest_checkpoint(witness, &origin_hash),
        None => service.not_ready(),
    }
}

/// The keys for `group`'s log that the configuration names: the `log` lines of
/// `--witness-policy` and `--witness-logs` for its origin.
fn configured_log_keys(
    config: &WitnessConfig,
    group: &ManagerPublicKey,
    policy: Option<&crate::witness::WitnessPolicy>,
) -> Vec<Vkey> {
    let origin = origin_for(group);
    let mut keys: Vec<Vkey> = config.logs.keys(&origin).to_vec();
    if let Some(p) = policy {
        keys.extend(p.policy().log_keys(&origin).cloned());
    }
    keys
}

/// Starts the witness of a gateway pinned to `group`, its state opened by [`open_state`]
/// (the replica only lends its trees to a new state): with the group's log key from a `log`
/// line of `policy` or of `config.logs` for the group's log, it cosigns at once; otherwise a
/// task reads the registry's `GET /v1/log/key` (retrying until it has a statement that
/// passes [`verify_log_key_statement`] against `group` and the statement the state keeps,
/// or `stop` turns true) and the witness answers 503 until then. Refused when neither a log
/// line nor a registry can give the key, and when the statement the state keeps does not
/// verify under `group`.
pub fn start(
    config: &WitnessConfig,
    group: &ManagerPublicKey,
    policy: Option<&crate::witness::WitnessPolicy>,
    follow: &FollowConfig,
    replica: Arc<crate::replica::Replica>,
    stop: watch::Receiver<bool>,
) -> Result<Arc<WitnessService>, String> {
    let mut origins: Vec<String> = config.logs.origins().map(str::to_owned).collect();
    origins.push(origin_for(group));
    let store = Arc::new(open_state(config, &origins, &replica)?);
    let service = Arc::new(WitnessService::new(config, group, store.clone())?);
    let mut logs = config.logs.clone();
    let keys = configured_log_keys(config, group, policy);
    if !keys.is_empty() {
        for key in keys {
            logs.add(key).map_err(|e| e.to_string())?;
        }
        service.install(logs)?;
        return Ok(service);
    }
    if follow.registry.is_empty() {
        return Err(format!(
            "--witness-key: the group's log key is not known: give --registry (its GET /v1/log/key names it) or a `log` line for {:?} in --witness-logs",
            service.origin
        ));
    }
    let held = held_log_key(&store, group)?;
    let client =
        crate::follower::client(follow.timeout, &follow.roots).map_err(|e| e.to_string())?;
    tokio::spawn(learn_log_key(
        service.clone(),
        logs,
        client,
        follow.clone(),
        Learner {
            group: Arc::new(group.clone()),
            store,
            held: held.map(Arc::new),
        },
        stop,
    ));
    Ok(service)
}

/// The log key of the statement the witness state keeps (`<state>/log-key`), verified
/// under `group`; `None` if it keeps none. A kept statement that does not verify refuses
/// the start (the state is damaged or another group's).
fn held_log_key(
    store: &DirStore,
    group: &ManagerPublicKey,
) -> Result<Option<LearnedLogKey>, String> {
    let file = || store.dir().join("log-key").display().to_string();
    let Some(text) = store
        .log_key_statement()
        .map_err(|e| format!("--witness-state {}", e.0))?
    else {
        return Ok(None);
    };
    verify_log_key_statement(group, &text, None)
        .map(Some)
        .map_err(|e| {
            format!(
                "--witness-state {}: the log-key statement kept there: {e}",
                file()
            )
        })
}

/// What judges and keeps the log-key statements the witness learns.
struct Learner {
    group: Arc<ManagerPublicKey>,
    store: Arc<DirStore>,
    /// The newest statement accepted so far (kept in the state).
    held: Option<Arc<LearnedLogKey>>,
}

impl Learner {
    /// Judges `statement` against the group and the statement held, and keeps it in the
    /// state if it is newer; the key it names. Blocking (a SPHINCS+ verification, a synced
    /// write).
    fn accept(&self, statement: &str) -> Result<Vkey, String> {
        let held = self.held.as_deref();
        let learned = verify_log_key_statement(&self.group, statement, held)
            .map_err(|e| format!("the registry's log-key statement: {e}"))?;
        if held.is_none_or(|h| learned.is_newer_than(h)) {
            self.store
                .keep_log_key_statement(statement)
                .map_err(|e| format!("keeping the log-key statement: {e}"))?;
        }
        Ok(learned.vkey)
    }
}

/// Reads the registry's log-key statement until one passes [`Learner::accept`], then
/// installs the witness's logs with the key it names.
async fn learn_log_key(
    service: Arc<WitnessService>,
    mut logs: KnownLogs,
    client: reqwest::Client,
    follow: FollowConfig,
    learner: Learner,
    mut stop: watch::Receiver<bool>,
) {
    let learner = Arc::new(learner);
    let mut pause = Duration::from_millis(100);
    loop {
        let fetched = tokio::select! {
            _ = stop.changed() => return,
            r = crate::follower::fetch::fetch_log_key(&client, &follow) => r,
        };
        let checked = match fetched {
            Ok(Some(statement)) => {
                let learner = learner.clone();
                tokio::task::spawn_blocking(move || learner.accept(&statement))
                    .await
                    .unwrap_or_else(|e| Err(format!("the log-key task: {e}")))
            }
            Ok(None) => Err("the registry serves no log key (GET /v1/log/key answers 404)".into()),
            Err(e) => Err(e.to_string()),
        };
        match checked.and_then(|vkey| {
            logs.add(vkey).map_err(|e| e.to_string())?;
            service.install(logs.clone())
        }) {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(error = %e, "witness: the group's log key is not known yet; retrying");
                service.learn_failed(e);
            }
        }
        tokio::select! {
            _ = stop.changed() => return,
            () = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(follow.max_backoff);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_key_file_is_written_private_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("witness.key");
        let key = WitnessKey::generate("gw1.example").unwrap();
        key.write_new(&path).unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // A new key's empty state, beside it.
        let state = dir.path().join("witness.key.state");
        assert_eq!(default_state_dir(&path), state);
        let store = DirStore::open(&state).unwrap();
        assert_eq!(store.get("any"), Ok(None));
        drop(store);
        let read = WitnessKey::load(&path).unwrap();
        assert_eq!(read.name(), "gw1.example");
        assert_eq!(read.vkey().unwrap(), key.vkey().unwrap());
        assert!(read.vkey().unwrap().starts_with("gw1.example+"));
        // Never overwritten.
        let again = WitnessKey::generate("gw1.example").unwrap();
        let err = again.write_new(&path).unwrap_err();
        assert!(err.contains("never overwritten"), "{err}");
        assert_eq!(WitnessKey::load(&path).unwrap().vkey(), key.vkey());
        // Readable by others: refused.
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        assert!(WitnessKey::load(&path).unwrap_err().contains("chmod 600"));
        // The debug form shows no seed.
        assert!(!format!("{key:?}").contains(&hex::encode(key.seed.as_ref())));
    }

    #[test]
    fn further_logs_come_from_a_policy_files_log_lines() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("witness.key");
        WitnessKey::generate("gw1.example")
            .unwrap()
            .write_new(&key)
            .unwrap();
        let other = MlDsaCosigner::from_seed("other.example/log", &[9; 32]).unwrap();
        let logs = dir.path().join("logs");
        fs::write(&logs, format!("log {}\nquorum none\n", other.vkey())).unwrap();
        let c = WitnessConfig::load(&key, Some(&logs), None, false).unwrap();
        assert_eq!(c.logs.keys("other.example/log"), [other.verifier().clone()]);
        assert_eq!(c.key.name(), "gw1.example");
        assert_eq!(c.state, dir.path().join("witness.key.state"));
        assert!(!c.init_state);
        let elsewhere = dir.path().join("elsewhere");
        let c = WitnessConfig::load(&key, None, Some(&elsewhere), true).unwrap();
        assert_eq!((c.state, c.init_state), (elsewhere, true));
        fs::write(&logs, format!("log {}\n", other.vkey())).unwrap();
        let err = WitnessConfig::load(&key, Some(&logs), None, false).unwrap_err();
        assert!(err.starts_with("--witness-logs "), "{err}");
        let err = WitnessConfig::load(&dir.path().join("missing"), None, None, false).unwrap_err();
        assert!(err.starts_with("--witness-key "), "{err}");
    }

    #[test]
    fn bad_key_files_and_names_are_refused_without_echoing_the_seed() {
        assert!(WitnessKey::generate("has space").is_err());
        assert!(WitnessKey::generate("").is_err());
        let seed = "ab".repeat(32);
        for text in [
            String::new(),
            format!("other\nname a\nseed {seed}\n"),
            format!("{KEY_FORMAT}\nname a\n"),
            format!("{KEY_FORMAT}\nname a\nseed {}\n", &seed[2..]),
            format!("{KEY_FORMAT}\nname a\nseed {seed}\nmore\n"),
            format!("{KEY_FORMAT}\nname a b\nseed {seed}\n"),
        ] {
            let err = WitnessKey::parse(&text).unwrap_err();
            assert!(!err.contains(&seed[4..]), "{err}");
        }
        let key = WitnessKey::parse(&format!("{KEY_FORMAT}\nname a\nseed {seed}")).unwrap();
        assert_eq!(
            key.encode().as_str(),
            format!("{KEY_FORMAT}\nname a\nseed {seed}\n")
        );
    }
}
