//! The invariants checked once the run is quiet, from what the services answer and what the
//! clients recorded:
//!
//! - every signed snapshot in the log holds exactly the zetas revoked at or before its cut
//!   (recomputed here from the `member_revoked` entries);
//! - every checkpoint in the log names a snapshot that holds every revocation it covers
//!   (the registry's promise in docs/checkpoints.md; what a gateway refuses as
//!   `bad_checkpoint`);
//! - every zeta of every `member_revoked` entry is proved revoked against the latest signed
//!   snapshot by the registry (`GET /v1/revocations/{zeta}/proof`, proof and snapshot
//!   signature checked here) and answered revoked by every gateway;
//! - every checkpoint logged or served has the Merkle root of its size (`crate::roots`);
//! - every acknowledged write is in the log as it was answered;
//! - `dgsp-manager audit` passes.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::checkpoint::Checkpoint;
use dgsp_core::revocation::{
    verify_revocation, Membership, RevocationProof, RevocationSet, SignedSnapshot,
};
use dgsp_core::{ManagerPublicKey, Zeta};
use dgsp_wire::answer::Revocation;
use dgsp_wire::events::Event;
use dgsp_wire::follow::check_snapshot_root;
use dgsp_wire::log::{unhex, Entry};
use dgsp_wire::snapshot::snapshot_from_json;
use serde::Deserialize;
use serde_json::Value;

use crate::group::Group;
use crate::http;
use crate::processes::Binaries;
use crate::report::Row;
use crate::workload::{Ack, Ledger};

const SNAPSHOTS_EXACT: &str = "every signed snapshot = the revocations up to its cut";
const CHECKPOINTS_COVER: &str = "every logged checkpoint's revocations are in its snapshot";
const GATEWAYS_REVOKED: &str = "revoked zetas: answered revoked by every gateway";
const ACKED_IN_LOG: &str = "every acknowledged write is in the log";

/// The registry's proof answer (`GET /v1/revocations/{zeta}/proof`): the registry's own
/// type, which `dgsp-wire` does not carry.
#[derive(Debug, Deserialize)]
struct RegistryProof {
    revoked: bool,
    proof: String,
    snapshot_number: u64,
}

/// A revocation in the log.
struct Revoked {
    seq: u64,
    id: u64,
    zetas: Vec<String>,
}

/// The log, read whole and sorted by kind.
pub struct Log {
    entries: Vec<Entry>,
    revocations: Vec<Revoked>,
    /// (entry seq, snapshot)
    snapshots: Vec<(u64, SignedSnapshot)>,
    /// (entry seq, checkpoint) of the logged checkpoints
    checkpoints: Vec<(u64, Result<Checkpoint, String>)>,
    unreadable: Vec<String>,
}

impl Log {
    /// The log `entries`, sorted by kind.
    pub fn new(entries: Vec<Entry>, group: &ManagerPublicKey) -> Log {
        let mut log = Log {
            entries: Vec::new(),
            revocations: Vec::new(),
            snapshots: Vec::new(),
            checkpoints: Vec::new(),
            unreadable: Vec::new(),
        };
        for e in &entries {
            match e.event() {
                Ok(Event::MemberRevoked { id, zetas, .. }) => log.revocations.push(Revoked {
                    seq: e.seq,
                    id,
                    zetas,
                }),
                Ok(Event::SnapshotPublished { snapshot }) => match snapshot_from_json(&snapshot) {
                    Some(s) => log.snapshots.push((e.seq, s)),
                    None => log
                        .unreadable
                        .push(format!("entry {}: snapshot does not decode", e.seq)),
                },
                Ok(Event::Checkpoint { note, .. }) => log.checkpoints.push((
                    e.seq,
                    group
                        .verify_checkpoint(&note)
                        .map_err(|err| err.to_string()),
                )),
                Ok(_) => {}
                Err(err) => log.unreadable.push(format!("entry {}: {err}", e.seq)),
            }
        }
        log.entries = entries;
        log
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The logged checkpoints: (entry seq, the note verified under the group key, or why
    /// not).
    pub fn checkpoints(&self) -> &[(u64, Result<Checkpoint, String>)] {
        &self.checkpoints
    }

    /// Every revoked zeta with the seq of its revocation.
    fn zetas(&self) -> impl Iterator<Item = (u64, &str)> {
        self.revocations
            .iter()
            .flat_map(|r| r.zetas.iter().map(move |z| (r.seq, z.as_str())))
    }
}

/// One line: how long the log is.
impl fmt::Display for Log {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "log: {} entries, {} revocations",
            self.entries.len(),
            self.revocations.len()
        )
    }
}

fn zeta(hex: &str) -> Option<Zeta> {
    unhex::<16>(hex).map(Zeta)
}

/// Every signed snapshot in the log holds exactly the zetas revoked at or before its cut.
pub fn snapshots_exact(log: &Log, group: &ManagerPublicKey) -> Row {
    let mut failures = log.unreadable.clone();
    let mut set = RevocationSet::new();
    let mut pending = log.zetas().peekable();
    for (seq, s) in &log.snapshots {
        if let Err(e) = s.verify(group) {
            failures.push(format!("snapshot {} (entry {seq}): {e}", s.record.number));
        }
        let mut batch = Vec::new();
        while let Some((_, z)) = pending.next_if(|(rseq, _)| *rseq <= s.record.log_seq) {
            batch.extend(zeta(z));
        }
        set.insert(&batch);
        if let Err(e) = check_snapshot_root(s, &set, *seq) {
            failures.push(e.to_string());
        }
    }
    Row::new(SNAPSHOTS_EXACT, log.snapshots.len() as u64, failures)
}

/// Every checkpoint in the log names a snapshot holding every revocation it covers.
pub fn checkpoints_cover(log: &Log) -> Row {
    let mut failures = Vec::new();
    let by_number: HashMap<u64, &SignedSnapshot> = log
        .snapshots
        .iter()
        .map(|(_, s)| (s.record.number, s))
        .collect();
    for (seq, cp) in &log.checkpoints {
        let cp = match cp {
            Ok(cp) => cp,
            Err(e) => {
                failures.push(format!("checkpoint at entry {seq}: {e}"));
                continue;
            }
        };
        let cut = match named_cut(cp, &by_number) {
            Ok(cut) => cut,
            Err(e) => {
                failures.push(format!("checkpoint at entry {seq} {e}"));
                continue;
            }
        };
        for r in log
            .revocations
            .iter()
            .filter(|r| r.seq > cut && r.seq <= cp.size)
        {
            failures.push(format!(
                "checkpoint at entry {seq} (size {}) covers the revocation of member {} at entry {}, \
                 but the snapshot it names (cut {cut}) does not hold it",
                cp.size, r.id, r.seq
            ));
        }
    }
    Row::new(CHECKPOINTS_COVER, log.checkpoints.len() as u64, failures)
}

/// The cut (`log_seq`) of the snapshot in the log that `cp` names (0 when it names none),
/// or why there is none.
fn named_cut(cp: &Checkpoint, by_number: &HashMap<u64, &SignedSnapshot>) -> Result<u64, String> {
    let Some(named) = &cp.snapshot else {
        return Ok(0);
    };
    match by_number.get(&named.number) {
        Some(s) if s.record.hash() == named.hash => Ok(s.record.log_seq),
        Some(_) => Err(format!("names snapshot {} with another hash", named.number)),
        None => Err(format!("names snapshot {}, not in the log", named.number)),
    }
}

/// Every revoked zeta is proved revoked against the latest signed snapshot by the registry;
/// not checked (a failure) when the registry did not `serve` after quiescing.
pub async fn registry_answers_revoked(
    http: &reqwest::Client,
    registry: &str,
    serving: &Result<(), String>,
    log: &Log,
    group: &ManagerPublicKey,
) -> Row {
    let name = "revoked zetas: in the latest snapshot (registry proof)";
    if let Err(e) = serving {
        return Row::new(
            name,
            1,
            vec![format!(
                "not checked: the registry does not serve after quiescing: {e}"
            )],
        );
    }
    let snapshot =
        match http::read::<Value>(http, &format!("{registry}/v1/revocations/snapshot"), None).await
        {
            Ok(v) => match snapshot_from_json(&v) {
                Some(s) => s,
                None => {
                    return Row::new(name, 1, vec!["the latest snapshot does not decode".into()])
                }
            },
            Err(e) => return Row::new(name, 1, vec![e]),
        };
    let mut failures = Vec::new();
    if let Err(e) = snapshot.verify(group) {
        failures.push(format!(
            "the latest snapshot ({}): {e}",
            snapshot.record.number
        ));
    }
    let mut checked = 0;
    for (seq, z) in log.zetas() {
        checked += 1;
        let Some(zeta) = zeta(z) else {
            failures.push(format!("entry {seq}: zeta {z} is not 32 hex characters"));
            continue;
        };
        let answer: RegistryProof =
            match http::read(http, &format!("{registry}/v1/revocations/{z}/proof"), None).await {
                Ok(a) => a,
                Err(e) => {
                    failures.push(e);
                    continue;
                }
            };
        let proof = B64
            .decode(&answer.proof)
            .ok()
            .and_then(|b| RevocationProof::from_bytes(&b).ok());
        let shown = proof.map(|p| verify_revocation(group, &snapshot, &zeta, &p));
        let in_snapshot = matches!(shown, Some(Ok(Membership::Revoked)));
        if !answer.revoked || !in_snapshot || answer.snapshot_number != snapshot.record.number {
            failures.push(format!(
                "zeta {z} of the revocation at entry {seq}: registry answers revoked {} against snapshot {} \
                 (latest {}, cut {}); its proof shows {:?}",
                answer.revoked, answer.snapshot_number, snapshot.record.number, snapshot.record.log_seq, shown
            ));
        }
    }
    Row::new(name, checked, failures)
}

/// Every revoked zeta is answered revoked by every gateway.
pub async fn gateways_answer_revoked(
    http: &reqwest::Client,
    gateways: &[(String, String)],
    log: &Log,
) -> Row {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (name, url) in gateways {
        for (seq, z) in log.zetas() {
            checked += 1;
            // The gateway's proof answer carries the wire type's fields at its top level.
            match http::read::<Revocation>(http, &format!("{url}/v1/revocations/{z}/proof"), None).await {
                Ok(a) if a.revoked => {}
                Ok(a) => failures.push(format!(
                    "{name}: zeta {z} of the revocation at entry {seq} answered not revoked (snapshot {:?})",
                    a.snapshot.map(|s| s.number)
                )),
                Err(e) => failures.push(format!("{name}: {e}")),
            }
        }
    }
    Row::new(GATEWAYS_REVOKED, checked, failures)
}

/// A retried write is answered as the first time.
pub fn replays_agree(ledger: &Ledger) -> Row {
    Row::new(
        "a retried write is answered as the first time",
        ledger
            .stats
            .replays
            .load(std::sync::atomic::Ordering::Relaxed),
        ledger.replay_mismatches.lock().unwrap().clone(),
    )
}

/// Every acknowledged write is in the log as it was answered.
/// `complete`: the log was read to the registry's head after quiescing (else acknowledged
/// writes past what was read cannot be checked, and the row says so).
pub fn acked_in_log(log: &Log, ledger: &Ledger, complete: bool) -> Row {
    let last = log.entries.last().map_or(0, |e| e.seq);
    let mut unknown = 0u64;
    let mut joined: HashMap<u64, String> = HashMap::new();
    let mut issued: HashMap<(u64, u64), (u64, Vec<String>)> = HashMap::new();
    let mut by_seq: BTreeMap<u64, (u64, &[String])> = BTreeMap::new();
    for e in &log.entries {
        match e.event() {
            Ok(Event::MemberJoined { id, username }) => {
                joined.insert(id, username);
            }
            Ok(Event::CertificatesIssued {
                id,
                first,
                count,
                wots_pk_digests,
            }) => {
                issued.insert((id, first), (count, wots_pk_digests));
            }
            _ => {}
        }
    }
    for r in &log.revocations {
        by_seq.insert(r.seq, (r.id, &r.zetas));
    }
    let acks = ledger.acks.lock().unwrap().clone();
    let mut failures = Vec::new();
    for a in acks.iter().map(|a| &a.ack) {
        // None: not in the log as read (which may end early: `complete`).
        let found = match a {
            Ack::Joined { id, username } => joined.get(id).map(|u| u == username),
            Ack::Issued { id, first, digests } => issued
                .get(&(*id, *first))
                .map(|(count, d)| *count == digests.len() as u64 && d == digests),
            Ack::Revoked { id, seq, zetas } if *seq <= last || complete => Some(
                by_seq
                    .get(seq)
                    .is_some_and(|(rid, z)| rid == id && *z == zetas.as_slice()),
            ),
            Ack::Revoked { .. } => None,
        };
        match found {
            Some(true) => {}
            None if !complete => unknown += 1,
            _ => failures.push(format!(
                "acknowledged but not in the log as answered: {a:?}"
            )),
        }
    }
    if unknown > 0 {
        failures.push(format!(
            "{unknown} acknowledged writes could not be checked: the log was last read up to \
             entry {last} before the registry stopped serving"
        ));
    }
    Row::new(ACKED_IN_LOG, acks.len() as u64, failures)
}

/// `dgsp-manager audit` against the registry, with the admin token and the pinned key.
pub fn audit(bins: &Binaries, group: &Group, registry: &str, state: &Path) -> Row {
    let name = "dgsp-manager audit passes";
    let out = std::process::Command::new(&bins.manager)
        .arg("audit")
        .args(["--registry", registry, "--token-file"])
        .arg(&group.admin_token_file)
        .arg("--group-key")
        .arg(&group.public_key)
        .env("XDG_CONFIG_HOME", state.join("no-config"))
        .env_remove("DGSP_AUDITOR_TOKEN")
        .env_remove("DGSP_REGISTRY_URL")
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => return Row::new(name, 1, vec![format!("{}: {e}", bins.manager.display())]),
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let file = state.join("audit.txt");
    let _ = std::fs::write(&file, &text);
    let failures = if out.status.success() {
        Vec::new()
    } else {
        let mut f: Vec<String> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .rev()
            .take(12)
            .map(str::to_owned)
            .collect();
        f.reverse();
        f.push(format!(
            "exit {} (whole report: {})",
            out.status,
            file.display()
        ));
        f
    };
    Row::new(name, 1, failures)
}
