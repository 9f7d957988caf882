//! `audit --compare URL…`: the checkpoints several registries and gateways serve, set side
//! by side (issue 28, "Views compared"; `docs/witnesses.md`, "Comparing views").
//!
//! 1. Every URL is asked for `GET {url}/v1/checkpoint` (the registry's and the gateways'
//!    `{size, head, time_unix_ms, note, witnessed}`; only `note` and `witnessed` are read).
//!    Each `note` must verify under the group key and name the group's origin; each
//!    `witnessed` note must carry a valid signature by the group's ML-DSA-44 log key (with
//!    `--witness-policy`, also a quorum of the policy's witnesses: no maximum age) and name
//!    the same tree (size and root) as the view's note. Without a policy the log key is the
//!    one the group key's statement names (`GET /v1/log/key`, asked of each URL in turn);
//!    when none serves one, a witnessed note's tree is still compared but its signature is
//!    not checked (a warning says so).
//! 2. The log source (`--tiles`, else `{--registry}/v1/log`): its `checkpoint` is one more
//!    view, and its hash tiles give the tree to compute consistency proofs from
//!    (`dgsp_wire::merkle::consistency_proof_at`); the tiles must hold the root the
//!    checkpoint states (`log_source` otherwise).
//! 3. Every pair of verified views: the same size must have the same root; sizes `m < n`
//!    need the RFC 6962 consistency proof from `(m, root_m)` to `(n, root_n)`, computed from
//!    the log source and verified against the two stated roots
//!    (`dgsp_wire::merkle::verify_consistency`). A proof that fails while the source's root
//!    at `n` is the larger view's proves that no proof exists (the tree of `n` is known):
//!    `split_view`, with both URLs and both notes verbatim. When the larger view is not in
//!    the source's tree either, nothing can be proved about the pair from this source: a
//!    warning (`undecided`; the larger view's split with the source is its own finding).
//!    Sizes the source does not reach are a warning (`not_compared`).
//!
//! A `--compare` argument `witness:PREFIX` is a witness instead (with `--witness-policy`,
//! which names its key): `GET PREFIX/<hex SHA-256(origin)>/checkpoint`, the monitoring read
//! our witness server serves (`dgsp_witness::server::latest_checkpoint`; a gateway with
//! `--witness-key` at `PREFIX = <gateway URL>/witness`), answers the newest checkpoint it
//! cosigned as a signed note. Its log signature must verify under the policy's log key, and
//! at least one line by a policy witness must verify (every such line must): then its size
//! and root are one more view, compared like the others, whose cosigner is that witness (a
//! split between it and a view it also cosigned names it as having equivocated).
//!
//! A URL that does not answer, or answers what does not verify, is a finding of its own
//! (`unreachable`, `checkpoint_signature`, `witnessed_signature`, `unwitnessed`,
//! `witnessed_mismatch`), never a split. Exit code as for the other audits: 3 when there is
//! any finding.
//!
//! Limits: each answer is read up to [`MAX_VIEW_ANSWER`] bytes within `--timeout-secs`
//! (with `--retries`); at most [`MAX_VIEWS`] URLs. omniwitness and litewitness serve no
//! "latest checkpoint" (`tlog-witness` has only `add-checkpoint`): their view shows as their
//! cosignatures in the views' witnessed notes, which the report lists per view.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::checkpoint::{origin_for, Checkpoint};
use dgsp_core::ManagerPublicKey;
use dgsp_wire::anchor::Anchor;
use dgsp_wire::log::Hash;
use dgsp_wire::merkle::{consistency_proof_at, root_at, verify_consistency, Nodes, ProofError};
use dgsp_wire::note::{
    verify_signature_line, verify_witnessed, CheckpointBody, Policy, SignedNote,
};
use dgsp_wire::tiles::{decode_hash_tile, Tile, TileNodes, TILE_HEIGHT, TILE_WIDTH};
use serde::{Deserialize, Serialize};

use super::report::GroupInfo;
use super::tiles::{self, TileBase, MAX_HASH_TILE, MAX_NOTE};
use crate::cli::AuditArgs;
use crate::client::Client;
use crate::config::Config;
use crate::error::{exit, Error};
use crate::output::Output;

/// The most bytes read of one `/v1/checkpoint` answer: a SPHINCS+ note (under 70 KB of
/// base64) and a witnessed note (at most 64 KiB), in JSON.
pub const MAX_VIEW_ANSWER: usize = 1 << 20;
/// The most bytes read of a `/v1/log/key` statement or a `/v1/group` answer.
const MAX_SMALL_ANSWER: usize = 256 << 10;
/// The most bytes read of a witness's monitoring answer (a note of at most 64 KiB).
const MAX_WITNESS_ANSWER: usize = 64 << 10;
/// How a `--compare` argument names a witness's monitoring prefix.
pub const WITNESS_PREFIX: &str = "witness:";
/// The largest witness policy file read.
const MAX_POLICY_FILE: usize = 256 << 10;
/// The most URLs compared (every pair is compared).
pub const MAX_VIEWS: usize = 64;
/// How far ahead of this clock a log or witness timestamp may be (seconds).
const TOLERANCE_S: u64 = 600;

/// What `/v1/checkpoint` answers, as far as it is read.
#[derive(Deserialize)]
struct Served {
    note: String,
    #[serde(default)]
    witnessed: Option<String>,
}

/// What `/v1/group` answers, as far as it is read.
#[derive(Deserialize)]
struct GroupAnswer {
    public_key: String,
}

/// What a comparison finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// A URL did not answer `/v1/checkpoint` (or the log source its checkpoint or tiles),
    /// or answered what is not a checkpoint.
    Unreachable,
    /// A view's note does not verify under the group key or names another origin.
    CheckpointSignature,
    /// A view's witnessed note is malformed, its log signature does not verify, or (with a
    /// policy) its cosignatures do not meet the quorum.
    WitnessedSignature,
    /// With a witness policy, a view serves no witnessed note.
    Unwitnessed,
    /// A view's witnessed note names another tree (size or root) than its signed note.
    WitnessedMismatch,
    /// The log source's hash tiles do not hold the root its checkpoint states.
    LogSource,
    /// Two views no consistency proof joins: the same size with different roots, or a
    /// smaller tree that is not a prefix of the larger.
    SplitView,
}

impl FindingKind {
    /// The stable name (as in JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::Unreachable => "unreachable",
            FindingKind::CheckpointSignature => "checkpoint_signature",
            FindingKind::WitnessedSignature => "witnessed_signature",
            FindingKind::Unwitnessed => "unwitnessed",
            FindingKind::WitnessedMismatch => "witnessed_mismatch",
            FindingKind::LogSource => "log_source",
            FindingKind::SplitView => "split_view",
        }
    }
}

/// One view's notes, verbatim, as evidence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// Where it was read.
    pub url: String,
    /// The size its note states (0 when it could not be read).
    pub size: u64,
    /// The root its note states (hex; empty when it could not be read).
    pub root: String,
    /// The signed note (group key), verbatim; for a witness, the note it serves (the
    /// checkpoint, the log's signature, its cosignature).
    pub note: String,
    /// The witnessed note (log key and cosignatures), verbatim, if served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witnessed: Option<String>,
}

/// A finding: what, between which URLs, and the notes that show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What was found.
    pub kind: FindingKind,
    /// The URLs involved (two for a split view).
    pub urls: Vec<String>,
    /// What exactly.
    pub detail: String,
    /// The notes involved, verbatim (both views' for a split view).
    pub evidence: Vec<Evidence>,
}

/// Something not compared, or compared with less than full strength.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CompareWarning {
    /// `not_compared`, `undecided`, `log_signature_unchecked`, `no_log_source`.
    pub kind: &'static str,
    /// What exactly.
    pub detail: String,
}

/// A cosignature that counted (with a policy).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cosigner {
    /// The witness's policy name.
    pub name: String,
    /// Its cosignature's timestamp (POSIX seconds).
    pub timestamp: u64,
}

/// A view as read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ViewInfo {
    /// The URL (for the log source: its tiles base).
    pub url: String,
    /// Whether this is the log source's checkpoint rather than a `--compare` URL.
    pub log_source: bool,
    /// Whether this is a witness's latest cosigned checkpoint (`witness:PREFIX`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub witness: bool,
    /// Whether its note verified under the group key (then it is compared).
    pub verified: bool,
    /// The size its note states.
    pub size: Option<u64>,
    /// The root its note states (hex).
    pub root: Option<String>,
    /// Its signed time (Unix ms).
    pub time_unix_ms: Option<u64>,
    /// Whether it served a witnessed note.
    pub witnessed: bool,
    /// Whether that note's log signature was checked (a key was known).
    pub log_signature_checked: bool,
    /// The policy witnesses whose cosignatures counted (with a policy).
    pub cosigners: Vec<Cosigner>,
    /// Why it could not be read or verified.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The result of `audit --compare`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CompareReport {
    /// The group (pinned by `--group-key`).
    pub group: GroupInfo,
    /// Every view, the log source's last.
    pub views: Vec<ViewInfo>,
    /// The log source's tiles base, if any.
    pub log_source: Option<String>,
    /// The log source's tree size (as its checkpoint states and its tiles hold).
    pub log_source_size: Option<u64>,
    /// Pairs of verified views compared.
    pub pairs: u64,
    /// Pairs found consistent.
    pub consistent: u64,
    /// Consistency proofs computed from the log source and verified.
    pub consistency_proofs: u64,
    /// What was found.
    pub findings: Vec<Finding>,
    /// What could not be compared.
    pub warnings: Vec<CompareWarning>,
}

impl CompareReport {
    /// True when nothing was found.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }

    /// The kind of every finding, in report order (what tests compare).
    pub fn kinds(&self) -> Vec<&'static str> {
        self.findings.iter().map(|f| f.kind.as_str()).collect()
    }

    /// The report as text for people.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "compared the views of {} URLs of group {} ({}, pinned)",
            self.views.iter().filter(|v| !v.log_source).count(),
            self.group.fingerprint,
            self.group.params
        );
        for v in &self.views {
            let what = match (v.log_source, v.witness) {
                (true, _) => "log source",
                (false, true) => "witness",
                (false, false) => "view",
            };
            match (&v.error, v.size, &v.root) {
                (Some(e), _, _) => {
                    let _ = writeln!(out, "{what} {}: not compared: {e}", v.url);
                }
                (None, Some(size), Some(root)) => {
                    let wit = if !v.witnessed {
                        String::new()
                    } else if !v.log_signature_checked {
                        "; witnessed (log signature not checked)".into()
                    } else if v.cosigners.is_empty() {
                        "; witnessed".into()
                    } else {
                        let names: Vec<&str> =
                            v.cosigners.iter().map(|c| c.name.as_str()).collect();
                        format!("; witnessed, cosigned by {}", names.join(", "))
                    };
                    let time = v
                        .time_unix_ms
                        .map_or_else(String::new, |t| format!(" time {t}"));
                    let _ = writeln!(out, "{what} {}: size {size} root {root}{time}{wit}", v.url);
                }
                _ => {}
            }
        }
        let _ = writeln!(
            out,
            "{} pairs compared: {} consistent ({} consistency proofs verified)",
            self.pairs, self.consistent, self.consistency_proofs
        );
        for w in &self.warnings {
            let _ = writeln!(out, "warning: {}: {}", w.kind, w.detail);
        }
        for f in &self.findings {
            let _ = writeln!(
                out,
                "VIOLATION: {}: {}: {}",
                f.kind.as_str(),
                f.urls.join(" and "),
                f.detail
            );
            for e in &f.evidence {
                let _ = writeln!(out, "  note from {} (size {}):", e.url, e.size);
                indent(&mut out, &e.note);
                if let Some(w) = &e.witnessed {
                    let _ = writeln!(out, "  witnessed note from {}:", e.url);
                    indent(&mut out, w);
                }
            }
        }
        match self.findings.len() {
            0 => out.push_str("no violations\n"),
            1 => out.push_str("1 violation\n"),
            n => {
                let _ = writeln!(out, "{n} violations");
            }
        }
        out
    }
}

/// Appends `text`, each non-empty line indented by four spaces.
fn indent(out: &mut String, text: &str) {
    for line in text.lines() {
        if line.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "    {line}");
        }
    }
}

/// A view whose note verified.
struct Verified {
    url: String,
    cp: Checkpoint,
    note: String,
    witnessed: Option<String>,
    /// The policy witnesses whose cosignatures of this very tree counted.
    cosigners: Vec<String>,
}

impl Verified {
    fn evidence(&self) -> Evidence {
        Evidence {
            url: self.url.clone(),
            size: self.cp.size,
            root: hex::encode(self.cp.root),
            note: self.note.clone(),
            witnessed: self.witnessed.clone(),
        }
    }
}

/// Runs `audit --compare`: prints the report; exit code [`exit::OK`] when nothing was
/// found, [`exit::REJECTED`] otherwise.
pub async fn run(args: AuditArgs, out: Output, config: &Config) -> Result<i32, Error> {
    let report = compare(&args, config).await?;
    out.emit(&report, || report.render());
    Ok(if report.is_clean() {
        exit::OK
    } else {
        exit::REJECTED
    })
}

/// Compares the views `args.compare` names (see the module documentation).
pub async fn compare(args: &AuditArgs, config: &Config) -> Result<CompareReport, Error> {
    let urls = &args.compare;
    if urls.len() > MAX_VIEWS {
        return Err(Error::arg(
            "--compare",
            format!("{} URLs, at most {MAX_VIEWS}", urls.len()),
        ));
    }
    // The registries' and gateways' URLs, and the witnesses' monitoring prefixes.
    let (witness_urls, view_urls): (Vec<&String>, Vec<&String>) =
        urls.iter().partition(|u| u.starts_with(WITNESS_PREFIX));
    let mut clients = Vec::with_capacity(view_urls.len());
    for u in &view_urls {
        clients.push(args.http.client(u, None)?.with_max_answer(MAX_VIEW_ANSWER));
    }
    let mut witness_clients = Vec::with_capacity(witness_urls.len());
    for u in &witness_urls {
        let prefix = &u[WITNESS_PREFIX.len()..];
        witness_clients.push(
            args.http
                .client(prefix, None)?
                .with_max_answer(MAX_WITNESS_ANSWER),
        );
    }
    if !witness_urls.is_empty() && args.witness_policy.is_none() {
        return Err(Error::arg(
            "--compare",
            "a witness:PREFIX view needs --witness-policy: its witness line holds the key its cosignature must verify under",
        ));
    }
    let anchor = args
        .group_key
        .as_deref()
        .map(crate::io::read_anchor)
        .transpose()
        .map_err(|e| Error::arg("--group-key", e))?
        .ok_or_else(|| {
            Error::arg(
                "--group-key",
                "audit --compare needs the group pinned: a key file or its fingerprint",
            )
        })?;
    let group = group_key(&anchor, &clients).await?;
    let origin = origin_for(&group);
    let user_policy = match &args.witness_policy {
        Some(path) => Some(read_policy(path, &origin)?),
        None => None,
    };

    // Every view, fetched at once; the witnesses' too.
    let mut tasks = Vec::with_capacity(clients.len());
    for c in &clients {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            c.get_json::<Served>("/v1/checkpoint", &[]).await
        }));
    }
    let monitoring = format!(
        "/{}/checkpoint",
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(origin.as_bytes()))
    );
    let mut witness_tasks = Vec::with_capacity(witness_clients.len());
    for c in &witness_clients {
        let (c, path) = (c.clone(), monitoring.clone());
        witness_tasks.push(tokio::spawn(async move { c.get_bytes(&path).await }));
    }
    let mut answers = Vec::with_capacity(tasks.len());
    for t in tasks {
        answers.push(
            t.await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic())),
        );
    }
    let mut witness_answers = Vec::with_capacity(witness_tasks.len());
    for t in witness_tasks {
        witness_answers.push(
            t.await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic())),
        );
    }

    let mut report = CompareReport {
        group: GroupInfo {
            fingerprint: hex::encode(group.fingerprint()),
            params: group.params().to_string(),
            pinned: true,
        },
        views: Vec::new(),
        log_source: None,
        log_source_size: None,
        pairs: 0,
        consistent: 0,
        consistency_proofs: 0,
        findings: Vec::new(),
        warnings: Vec::new(),
    };

    // The log key: the policy's, else the group's statement from the first URL serving one.
    let any_witnessed = answers
        .iter()
        .any(|a| matches!(a, Ok(s) if s.witnessed.is_some()));
    let policy = match user_policy {
        Some(p) => Some(p),
        None if any_witnessed => {
            let p = statement_policy(&group, &clients).await;
            if p.is_none() {
                report.warnings.push(CompareWarning {
                    kind: "log_signature_unchecked",
                    detail: "no --witness-policy, and no URL serves the group's log-key statement (GET /v1/log/key): the witnessed notes' trees are compared with the signed notes', their log signatures are not checked".into(),
                });
            }
            p
        }
        None => None,
    };
    let demand_witnessed = args.witness_policy.is_some();

    let mut verified = Vec::new();
    for (url, answer) in view_urls.into_iter().zip(answers) {
        let served = match answer {
            Ok(s) => s,
            Err(e) => {
                report.findings.push(Finding {
                    kind: FindingKind::Unreachable,
                    urls: vec![url.clone()],
                    detail: format!("GET /v1/checkpoint failed: {e}"),
                    evidence: Vec::new(),
                });
                report.views.push(failed_view(url, false, e.to_string()));
                continue;
            }
        };
        if let Some(v) = check_view(
            url,
            served,
            &group,
            &origin,
            policy.as_ref(),
            demand_witnessed,
            false,
            &mut report,
        ) {
            verified.push(v);
        }
    }

    // The witnesses' latest cosigned checkpoints (a policy is known: checked above).
    if let Some(p) = policy.as_ref().filter(|_| !witness_urls.is_empty()) {
        for (url, answer) in witness_urls.into_iter().zip(witness_answers) {
            let note = match answer {
                Ok(bytes) => String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned()),
                Err(e) => Err(e.to_string()),
            };
            match note {
                Ok(note) => {
                    if let Some(v) = check_witness_view(url, note, &origin, p, &mut report) {
                        verified.push(v);
                    }
                }
                Err(e) => {
                    report.findings.push(Finding {
                        kind: FindingKind::Unreachable,
                        urls: vec![url.clone()],
                        detail: format!(
                            "GET {monitoring} (the witness's latest checkpoint) failed: {e}"
                        ),
                        evidence: Vec::new(),
                    });
                    let mut info = failed_view(url, false, e);
                    info.witness = true;
                    report.views.push(info);
                }
            }
        }
    }

    // The log source.
    let source_spec = args.tiles.clone().or_else(|| {
        args.registry
            .clone()
            .or_else(|| config.registry.clone())
            .map(|r| format!("{}/v1/log", r.trim_end_matches('/')))
    });
    let mut source = None;
    match source_spec {
        None => report.warnings.push(CompareWarning {
            kind: "no_log_source",
            detail: "no log source (--tiles URL or --registry URL): views of different sizes are not compared".into(),
        }),
        Some(spec) => {
            let base = TileBase::open(&spec, &args.http)?;
            let label = base.describe();
            report.log_source = Some(label.clone());
            match read_source_checkpoint(&base).await {
                Err(e) => {
                    report.findings.push(Finding {
                        kind: FindingKind::Unreachable,
                        urls: vec![label.clone()],
                        detail: format!("the log source's checkpoint: {e}"),
                        evidence: Vec::new(),
                    });
                    report.views.push(failed_view(&label, true, e));
                }
                Ok(note) => {
                    let served = Served {
                        note,
                        witnessed: None,
                    };
                    if let Some(v) = check_view(
                        &label,
                        served,
                        &group,
                        &origin,
                        None,
                        false,
                        true,
                        &mut report,
                    ) {
                        let mut src = SourceTree::new(base, v.cp.size);
                        match src.with_nodes(|n| root_at(n, v.cp.size)).await {
                            Ok(Ok(r)) if r == v.cp.root => {
                                report.log_source_size = Some(v.cp.size);
                                source = Some(src);
                            }
                            Ok(Ok(r)) => report.findings.push(Finding {
                                kind: FindingKind::LogSource,
                                urls: vec![label.clone()],
                                detail: format!(
                                    "the hash tiles hold root {} for size {}, the checkpoint states {}: its tiles are not used for proofs",
                                    hex::encode(r),
                                    v.cp.size,
                                    hex::encode(v.cp.root)
                                ),
                                evidence: vec![v.evidence()],
                            }),
                            Ok(Err(e)) | Err(e) => report.findings.push(Finding {
                                kind: FindingKind::Unreachable,
                                urls: vec![label.clone()],
                                detail: format!("the log source's hash tiles: {e}"),
                                evidence: Vec::new(),
                            }),
                        }
                        verified.push(v);
                    }
                }
            }
        }
    }

    compare_pairs(&verified, source.as_mut(), &mut report).await;
    Ok(report)
}

/// The group's key: the pinned key, or the key a URL's `/v1/group` serves that hashes to
/// the pinned fingerprint.
async fn group_key(anchor: &Anchor, clients: &[Client]) -> Result<ManagerPublicKey, Error> {
    if let Anchor::Key(k) = anchor {
        return Ok((**k).clone());
    }
    let want = anchor.fingerprint();
    for c in clients {
        let c = c.clone().with_max_answer(MAX_SMALL_ANSWER);
        let Ok(g) = c.get_json::<GroupAnswer>("/v1/group", &[]).await else {
            continue;
        };
        let Ok(bytes) = B64.decode(g.public_key.trim()) else {
            continue;
        };
        if let Ok(k) = ManagerPublicKey::from_bytes(&bytes) {
            if k.fingerprint() == want {
                return Ok(k);
            }
        }
    }
    Err(Error::arg(
        "--group-key",
        "a fingerprint, and no --compare URL serves a group key (GET /v1/group) with that fingerprint: pass the key file",
    ))
}

/// The witness policy file, which must have a `log` line for the group's origin.
fn read_policy(path: &std::path::Path, origin: &str) -> Result<Policy, Error> {
    let bytes = tiles::read_capped(path, MAX_POLICY_FILE)?;
    if bytes.len() > MAX_POLICY_FILE {
        return Err(Error::input(path, "larger than a witness policy can be"));
    }
    let text = String::from_utf8(bytes).map_err(|_| Error::input(path, "not UTF-8 text"))?;
    let policy = Policy::parse(&text).map_err(|e| Error::input(path, e.to_string()))?;
    if policy.log_keys(origin).next().is_none() {
        return Err(Error::input(
            path,
            format!("no log line for this group's origin {origin}"),
        ));
    }
    Ok(policy)
}

/// A policy of the log keys the group key's statements name (`GET /v1/log/key` of each
/// URL), no witnesses and no quorum: it checks the log signature only.
async fn statement_policy(group: &ManagerPublicKey, clients: &[Client]) -> Option<Policy> {
    let mut vkeys = BTreeSet::new();
    for c in clients {
        let c = c.clone().with_max_answer(MAX_SMALL_ANSWER);
        let Ok(bytes) = c.get_bytes("/v1/log/key").await else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        if let Ok(s) = group.verify_log_key(&text) {
            vkeys.insert(s.vkey);
        }
    }
    let mut text = String::new();
    for v in &vkeys {
        let _ = writeln!(text, "log {v}");
    }
    text.push_str("quorum none\n");
    (!vkeys.is_empty())
        .then(|| Policy::parse(&text).ok())
        .flatten()
}

fn failed_view(url: &str, log_source: bool, error: String) -> ViewInfo {
    ViewInfo {
        url: url.to_owned(),
        log_source,
        witness: false,
        verified: false,
        size: None,
        root: None,
        time_unix_ms: None,
        witnessed: false,
        log_signature_checked: false,
        cosigners: Vec::new(),
        error: Some(error),
    }
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Verifies one view's notes; records its [`ViewInfo`] and findings. `None` when its note
/// does not verify (it is then not compared).
#[allow(clippy::too_many_arguments)]
fn check_view(
    url: &str,
    served: Served,
    group: &ManagerPublicKey,
    origin: &str,
    policy: Option<&Policy>,
    demand_witnessed: bool,
    log_source: bool,
    report: &mut CompareReport,
) -> Option<Verified> {
    let cp = match group.verify_checkpoint(&served.note) {
        Ok(cp) if cp.origin == origin => cp,
        res => {
            let why = match res {
                Ok(cp) => format!("names origin {:?}, not the group's {origin}", cp.origin),
                Err(e) => e.to_string(),
            };
            report.findings.push(Finding {
                kind: FindingKind::CheckpointSignature,
                urls: vec![url.to_owned()],
                detail: format!("the checkpoint note does not verify under the group key: {why}"),
                evidence: vec![Evidence {
                    url: url.to_owned(),
                    size: 0,
                    root: String::new(),
                    note: served.note.clone(),
                    witnessed: served.witnessed.clone(),
                }],
            });
            report
                .views
                .push(failed_view(url, log_source, format!("its note: {why}")));
            return None;
        }
    };
    let mut v = Verified {
        url: url.to_owned(),
        cp,
        note: served.note,
        witnessed: served.witnessed,
        cosigners: Vec::new(),
    };
    let mut cosigners = Vec::new();
    let mut info = ViewInfo {
        url: url.to_owned(),
        log_source,
        witness: false,
        verified: true,
        size: Some(v.cp.size),
        root: Some(hex::encode(v.cp.root)),
        time_unix_ms: v.cp.time_unix_ms,
        witnessed: v.witnessed.is_some(),
        log_signature_checked: false,
        cosigners: Vec::new(),
        error: None,
    };
    let mut finding = |kind, detail: String| {
        report.findings.push(Finding {
            kind,
            urls: vec![url.to_owned()],
            detail,
            evidence: vec![v.evidence()],
        });
    };
    match (&v.witnessed, policy) {
        (None, _) => {
            if demand_witnessed {
                finding(
                    FindingKind::Unwitnessed,
                    "no witnessed note, and the witness policy requires one".into(),
                );
            }
        }
        (Some(w), Some(p)) => match verify_witnessed(w, p, now_s(), None, TOLERANCE_S) {
            Ok(wv) => {
                info.log_signature_checked = true;
                info.cosigners = wv
                    .cosigners
                    .iter()
                    .map(|(name, timestamp)| Cosigner {
                        name: name.clone(),
                        timestamp: *timestamp,
                    })
                    .collect();
                if wv.origin == v.cp.origin && wv.size == v.cp.size && wv.root == v.cp.root {
                    cosigners = wv.cosigners.iter().map(|(n, _)| n.clone()).collect();
                } else {
                    finding(
                        FindingKind::WitnessedMismatch,
                        format!(
                            "the witnessed note names size {} root {}, the signed note size {} root {}",
                            wv.size,
                            hex::encode(wv.root),
                            v.cp.size,
                            hex::encode(v.cp.root)
                        ),
                    );
                }
            }
            Err(e) => finding(
                FindingKind::WitnessedSignature,
                format!("the witnessed note is refused: {e}"),
            ),
        },
        (Some(w), None) => {
            let body = SignedNote::parse(w)
                .map_err(|e| e.to_string())
                .and_then(|n| CheckpointBody::parse(&n.body).map_err(|e| e.to_string()));
            match body {
                Ok(b) if b.origin == v.cp.origin && b.size == v.cp.size && b.root == v.cp.root => {}
                Ok(b) => finding(
                    FindingKind::WitnessedMismatch,
                    format!(
                        "the witnessed note names origin {} size {} root {}, the signed note size {} root {}",
                        b.origin,
                        b.size,
                        hex::encode(b.root),
                        v.cp.size,
                        hex::encode(v.cp.root)
                    ),
                ),
                Err(e) => finding(
                    FindingKind::WitnessedSignature,
                    format!("the witnessed note is malformed: {e}"),
                ),
            }
        }
    }
    report.views.push(info);
    v.cosigners = cosigners;
    Some(v)
}

/// Verifies a witness's latest cosigned checkpoint (`witness:PREFIX`): the three-line
/// checkpoint of the group's origin, a valid signature by a `log` key of `policy`, every line
/// by a policy witness valid, and at least one. Records its [`ViewInfo`] and findings;
/// `None` when it does not verify (it is then not compared).
fn check_witness_view(
    url: &str,
    note: String,
    origin: &str,
    policy: &Policy,
    report: &mut CompareReport,
) -> Option<Verified> {
    let checked = (|| {
        let parsed = SignedNote::parse(&note).map_err(|e| format!("not a signed note: {e}"))?;
        let cp =
            CheckpointBody::parse(&parsed.body).map_err(|e| format!("not a checkpoint: {e}"))?;
        if !cp.extensions.is_empty() {
            return Err("a witnessed checkpoint has no extension lines".to_owned());
        }
        if cp.origin != origin {
            return Err(format!(
                "names origin {:?}, not the group's {origin}",
                cp.origin
            ));
        }
        let log_keys: Vec<_> = policy.log_keys(origin).collect();
        let mut log_signed = false;
        let mut cosigners: Vec<(String, u64)> = Vec::new();
        for line in &parsed.signatures {
            if let Some(key) = log_keys
                .iter()
                .find(|k| k.name == line.name && k.key_id == line.key_id)
            {
                verify_signature_line(key, &cp, line)
                    .map_err(|e| format!("the log's signature does not verify: {e}"))?;
                log_signed = true;
            } else if let Some(w) = policy.witness_by_key(&line.name, &line.key_id) {
                let ts = verify_signature_line(&w.vkey, &cp, line).map_err(|e| {
                    format!(
                        "the cosignature of policy witness {} does not verify: {e}",
                        w.name
                    )
                })?;
                cosigners.push((w.name.clone(), ts));
            }
        }
        if !log_signed {
            return Err("no signature by the group's log key (the policy's log line)".into());
        }
        if cosigners.is_empty() {
            return Err("no cosignature by a witness of the policy".into());
        }
        Ok((cp, cosigners))
    })();
    let (cp, cosigners) = match checked {
        Ok(ok) => ok,
        Err(why) => {
            report.findings.push(Finding {
                kind: FindingKind::WitnessedSignature,
                urls: vec![url.to_owned()],
                detail: format!("the witness's latest checkpoint is refused: {why}"),
                evidence: vec![Evidence {
                    url: url.to_owned(),
                    size: 0,
                    root: String::new(),
                    note,
                    witnessed: None,
                }],
            });
            let mut info = failed_view(url, false, format!("its note: {why}"));
            info.witness = true;
            report.views.push(info);
            return None;
        }
    };
    report.views.push(ViewInfo {
        url: url.to_owned(),
        log_source: false,
        witness: true,
        verified: true,
        size: Some(cp.size),
        root: Some(hex::encode(cp.root)),
        time_unix_ms: None,
        witnessed: true,
        log_signature_checked: true,
        cosigners: cosigners
            .iter()
            .map(|(name, timestamp)| Cosigner {
                name: name.clone(),
                timestamp: *timestamp,
            })
            .collect(),
        error: None,
    });
    Some(Verified {
        url: url.to_owned(),
        cp: Checkpoint {
            origin: cp.origin,
            size: cp.size,
            root: cp.root,
            time_unix_ms: None,
            snapshot: None,
        },
        note,
        witnessed: None,
        cosigners: cosigners.into_iter().map(|(n, _)| n).collect(),
    })
}

/// Reads the log source's `checkpoint` note.
async fn read_source_checkpoint(base: &TileBase) -> Result<String, String> {
    let bytes = fetch(base, "checkpoint", MAX_NOTE).await?;
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())
}

/// Reads `path` under the base, at most `cap` bytes.
async fn fetch(base: &TileBase, path: &str, cap: usize) -> Result<Vec<u8>, String> {
    let bytes = match base {
        TileBase::Http(c) => c
            .get_bytes(&format!("/{path}"))
            .await
            .map_err(|e| e.to_string())?,
        TileBase::Dir(dir) => {
            tiles::read_capped(&dir.join(path), cap).map_err(|e| e.to_string())?
        }
    };
    if bytes.len() > cap {
        return Err(format!(
            "{path}: {} bytes, more than such an object can be ({cap})",
            bytes.len()
        ));
    }
    Ok(bytes)
}

/// Any [`Nodes`] source behind a reference (so one closure serves both passes).
pub struct DynNodes<'a>(&'a dyn Nodes);

impl Nodes for DynNodes<'_> {
    fn node(&self, level: u8, index: u64) -> Result<Hash, ProofError> {
        self.0.node(level, index)
    }
}

/// The log source's tree of `size` entries, read from its hash tiles as needed.
struct SourceTree {
    base: TileBase,
    size: u64,
    cache: HashMap<Tile, Vec<Hash>>,
}

impl SourceTree {
    fn new(base: TileBase, size: u64) -> SourceTree {
        SourceTree {
            base,
            size,
            cache: HashMap::new(),
        }
    }

    /// Runs `op` over the tree's nodes: a first pass names the hash tiles it reads, they
    /// are fetched (cached), a second pass computes. `Err` when a tile cannot be read.
    async fn with_nodes<T>(
        &mut self,
        op: impl Fn(&DynNodes<'_>) -> Result<T, ProofError>,
    ) -> Result<Result<T, ProofError>, ProofError> {
        let size = self.size;
        let needed = RefCell::new(BTreeSet::new());
        let dry = TileNodes(|level: u8, index: u64| {
            needed
                .borrow_mut()
                .insert(tiles::tile_of(level, index, size));
            Ok([0u8; 32])
        });
        if let Err(e) = op(&DynNodes(&dry)) {
            return Ok(Err(e));
        }
        for t in needed.into_inner() {
            if self.cache.contains_key(&t) {
                continue;
            }
            let missing = |reason: String| ProofError::Missing {
                level: t.level.unwrap_or(0) * TILE_HEIGHT,
                index: t.index * TILE_WIDTH,
                reason,
            };
            let bytes = fetch(&self.base, &t.path(), MAX_HASH_TILE)
                .await
                .map_err(missing)?;
            let hashes = decode_hash_tile(&bytes, usize::from(t.width)).ok_or_else(|| {
                missing(format!(
                    "{} is {} bytes, a tile of {} hashes is {}",
                    t.path(),
                    bytes.len(),
                    t.width,
                    32 * usize::from(t.width)
                ))
            })?;
            self.cache.insert(t, hashes);
        }
        let cache = &self.cache;
        let nodes = TileNodes(|level: u8, index: u64| {
            let t = tiles::tile_of(level, index, size);
            cache
                .get(&t)
                .and_then(|h| h.get((index % TILE_WIDTH) as usize))
                .copied()
                .ok_or(ProofError::Missing {
                    level: level * TILE_HEIGHT,
                    index,
                    reason: format!("not in {}", t.path()),
                })
        });
        Ok(op(&DynNodes(&nodes)))
    }
}

/// Compares every pair of verified views (see the module documentation).
async fn compare_pairs(
    views: &[Verified],
    mut source: Option<&mut SourceTree>,
    report: &mut CompareReport,
) {
    // The source's root at each view's size (None: not reachable from the source).
    let mut src_roots: Vec<Option<Hash>> = Vec::with_capacity(views.len());
    for v in views {
        let r = match source.as_deref_mut() {
            Some(s) if v.cp.size <= s.size => match s.with_nodes(|n| root_at(n, v.cp.size)).await {
                Ok(Ok(r)) => Some(r),
                _ => None,
            },
            _ => None,
        };
        src_roots.push(r);
    }
    for i in 0..views.len() {
        for j in i + 1..views.len() {
            let (a, b, rb) = if views[i].cp.size <= views[j].cp.size {
                (&views[i], &views[j], src_roots[j])
            } else {
                (&views[j], &views[i], src_roots[i])
            };
            report.pairs += 1;
            let (m, n) = (a.cp.size, b.cp.size);
            let both: Vec<&str> = a
                .cosigners
                .iter()
                .filter(|w| b.cosigners.contains(w))
                .map(String::as_str)
                .collect();
            let split = |detail: String| Finding {
                kind: FindingKind::SplitView,
                urls: vec![a.url.clone(), b.url.clone()],
                detail: if both.is_empty() {
                    detail
                } else {
                    format!(
                        "{detail}; witnesses that cosigned both trees (they equivocated): {}",
                        both.join(", ")
                    )
                },
                evidence: vec![a.evidence(), b.evidence()],
            };
            if m == n {
                if a.cp.root == b.cp.root {
                    report.consistent += 1;
                } else {
                    report.findings.push(split(format!(
                        "two trees of size {m}: root {} and root {}",
                        hex::encode(a.cp.root),
                        hex::encode(b.cp.root)
                    )));
                }
                continue;
            }
            let Some(src) = source.as_deref_mut().filter(|s| n <= s.size) else {
                report.warnings.push(CompareWarning {
                    kind: "not_compared",
                    detail: format!(
                        "{} (size {m}) and {} (size {n}): no log source holds a tree of size {n} to compute their consistency proof from",
                        a.url, b.url
                    ),
                });
                continue;
            };
            let proof = match src.with_nodes(|t| consistency_proof_at(t, m, n)).await {
                Ok(Ok(p)) => p,
                Ok(Err(e)) | Err(e) => {
                    report.warnings.push(CompareWarning {
                        kind: "not_compared",
                        detail: format!(
                            "{} (size {m}) and {} (size {n}): the consistency proof could not be computed from the log source: {e}",
                            a.url, b.url
                        ),
                    });
                    continue;
                }
            };
            if verify_consistency(m, n, &a.cp.root, &b.cp.root, &proof).is_ok() {
                report.consistent += 1;
                report.consistency_proofs += 1;
                continue;
            }
            if rb == Some(b.cp.root) {
                let src_m = src
                    .with_nodes(|t| root_at(t, m))
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .map_or_else(|| "?".to_owned(), hex::encode);
                report.findings.push(split(format!(
                    "no consistency proof from size {m} to size {n}: the tree of size {n} (the log source's) has root {src_m} at size {m}, {} states {}",
                    a.url,
                    hex::encode(a.cp.root)
                )));
            } else {
                report.warnings.push(CompareWarning {
                    kind: "undecided",
                    detail: format!(
                        "{} (size {m}) and {} (size {n}): the larger is not in the log source's tree either, so no proof between them can be computed from it (its split from the log source is reported)",
                        a.url, b.url
                    ),
                });
            }
        }
    }
}
