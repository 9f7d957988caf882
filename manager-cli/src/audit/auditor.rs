//! The auditor: fed the log entry by entry, it replays the group's history and checks the
//! manager's conduct. Pure and incremental (no I/O), so any source can feed it.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::{MessageDigest, ParamSet, Pi, Signature};
use dgsp_wire::anchor::Anchor;
use dgsp_wire::events::{Event, EventError};
use dgsp_wire::follow::revoked_zetas;
use dgsp_wire::log::Entry;
use dgsp_wire::snapshot::snapshot_from_json;

use super::chain::Chain;
use super::checkpoints::{self, Checkpoints};
use super::crypto::{self, Job};
use super::findings::Findings;
use super::group::Group;
use super::members::Members;
use super::report::{Head, Report, Stats};
use super::snapshots::Snapshots;
use super::violation::{Skipped, ViolationKind, WarningKind};
use dgsp_wire::coverage::Covers;

/// Replays a log and checks it. Feed every entry in order with [`push`](Self::push), then
/// call [`finish`](Self::finish) for the [`Report`]. The rules are listed in the
/// [module documentation](super).
pub struct Auditor {
    group: Group,
    chain: Chain,
    members: Members,
    snapshots: Snapshots,
    checkpoints: Checkpoints,
    covers: Covers,
    jobs: Vec<Job>,
    findings: Findings,
    stats: Stats,
    entries: u64,
    head: Option<Head>,
    /// The last entry that is not a snapshot or checkpoint (what a checkpoint should cover).
    last_substantive: u64,
}

impl Auditor {
    /// An auditor for the group `pin` names (a key or its fingerprint); without a pin the
    /// group of entry 1 is trusted (and reported, to be compared by hand).
    pub fn new(pin: Option<Anchor>) -> Auditor {
        Auditor {
            group: Group::new(pin),
            chain: Chain::default(),
            members: Members::default(),
            snapshots: Snapshots::default(),
            checkpoints: Checkpoints::default(),
            covers: Covers::default(),
            jobs: Vec::new(),
            findings: Findings::default(),
            stats: Stats::default(),
            entries: 0,
            head: None,
            last_substantive: 0,
        }
    }

    /// Entries read so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Checks the next entry of the log.
    pub fn push(&mut self, e: &Entry) {
        self.entries += 1;
        self.head = Some(Head {
            seq: e.seq,
            hash: e.hash.clone(),
        });
        let intact = self.chain.check(e, &mut self.findings);
        self.checkpoints.entry(e);
        self.group.check_position(e, &mut self.findings);
        if e.private.is_none() && e.commitment.is_some() {
            self.findings.skip(Skipped::Commitment);
        }
        if e.kind != "checkpoint" && e.kind != "snapshot_published" {
            self.last_substantive = e.seq;
        }
        if intact {
            let mut out = std::mem::take(&mut self.findings);
            let mut jobs = std::mem::take(&mut self.jobs);
            self.apply(e, &mut out, &mut jobs);
            self.findings = out;
            self.jobs = jobs;
        } else {
            // Its content is not what the chain commits to: the one violation above says
            // all there is about it. Its effects on the replayed state are kept (the log is
            // what it is), its own checks are not made.
            self.findings.skip(Skipped::AlteredEntry);
            if e.kind != "checkpoint" {
                let (mut out, mut jobs) = (Findings::default(), Vec::new());
                self.apply(e, &mut out, &mut jobs);
            }
        }
        if self.jobs.len() >= crypto::BATCH {
            self.flush();
        }
    }

    /// Records a breach found by the source in how the log is published (the tile source's
    /// `tile_bundle`, `tile_hash`, `checkpoint_consistency`), at entry `seq`.
    pub fn source_violation(&mut self, seq: u64, kind: ViolationKind, detail: impl Into<String>) {
        self.findings.violation(seq, kind, detail);
    }

    /// Counts a check the source could not make.
    pub(crate) fn source_skip(&mut self, what: Skipped) {
        self.findings.skip(what);
    }

    /// Counts a consistency proof the source verified.
    pub(crate) fn consistency_verified(&mut self) {
        self.stats.consistency_proofs += 1;
    }

    /// Keeps the checkpoints whose root matched the tree for [`take_checkpoints`](Self::take_checkpoints)
    /// (the tile source proves their consistency).
    pub(crate) fn keep_checkpoints(&mut self) {
        self.checkpoints.keep_seen = true;
    }

    /// The checkpoints (size, root) whose root matched the tree since the last call.
    pub(crate) fn take_checkpoints(&mut self) -> Vec<(u64, dgsp_wire::log::Hash)> {
        self.checkpoints.take_seen()
    }

    /// Judges the checkpoint a tile source serves, `note` stating `size` and `root` (read
    /// from it before its signature could be checked): after the entries it covers were
    /// pushed, like a checkpoint entry would be (its root against the tree, its signature
    /// and origin, the snapshot it names); findings at entry `size`.
    pub(crate) fn served_checkpoint(&mut self, note: &str, size: u64, root: dgsp_wire::log::Hash) {
        let cp = checkpoints::Stated {
            size,
            root,
            note: note.to_owned(),
        };
        let matches = self
            .checkpoints
            .check_served(&cp, &self.chain, &mut self.findings);
        self.jobs.push(Job::Checkpoint {
            seq: size,
            note: cp.note,
            size,
            root,
            covered: matches.then(|| self.covers.at(size)),
            served: true,
        });
    }

    /// Runs the queued signature checks.
    fn flush(&mut self) {
        let jobs = std::mem::take(&mut self.jobs);
        if jobs.is_empty() {
            return;
        }
        match self.group.key() {
            Some(key) => {
                let found = crypto::run_all(&jobs, key);
                self.findings.violations.extend(found);
            }
            None => {
                for _ in &jobs {
                    self.findings.skip(Skipped::Signatures);
                }
            }
        }
    }

    /// Ends the audit.
    pub fn finish(mut self) -> Report {
        self.flush();
        self.checkpoints.close(&mut self.findings);
        let out = &mut self.findings;
        if self.entries == 0 {
            out.warn(None, WarningKind::Empty, "the log has no entries");
        }
        if let (n, Some(first)) = self.members.undigested {
            out.warn(
                Some(first),
                WarningKind::NoKeyDigests,
                format!("{n} issuances record no WOTS+ key digests"),
            );
        }
        if self.last_substantive > self.checkpoints.last_size {
            out.warn(
                Some(self.checkpoints.last_size + 1),
                WarningKind::Uncheckpointed,
                format!(
                    "entries {}..={} are covered by no checkpoint yet",
                    self.checkpoints.last_size + 1,
                    self.last_substantive
                ),
            );
        }
        if let (n, Some(first)) = self.snapshots.unsnapshotted() {
            out.warn(
                Some(first),
                WarningKind::Unsnapshotted,
                format!("{n} revoked zetas are in no snapshot yet"),
            );
        }
        self.stats.checkpointed = self.checkpoints.last_size;
        self.stats.tree_roots = self.checkpoints.roots.tree;
        self.stats.legacy_roots = self.checkpoints.roots.legacy;
        let mut violations = std::mem::take(&mut out.violations);
        violations.sort_by_key(|v| v.seq);
        let mut warnings = std::mem::take(&mut out.warnings);
        warnings.sort_by_key(|w| w.seq);
        Report {
            entries: self.entries,
            head: self.head,
            group: self.group.info(),
            violations,
            warnings,
            skipped: std::mem::take(&mut out.skipped),
            stats: self.stats,
            tiles: None,
        }
    }

    /// The checks and effects of one entry, by kind.
    fn apply(&mut self, e: &Entry, out: &mut Findings, jobs: &mut Vec<Job>) {
        let event = match e.event() {
            Ok(ev) => Some(ev),
            Err(EventError::Redacted(_)) => None,
            Err(err @ EventError::FutureVersion { .. }) => {
                out.warn(
                    Some(e.seq),
                    WarningKind::Unreadable,
                    format!("{err}; its checks were skipped (a newer dgsp-manager reads it)"),
                );
                return;
            }
            Err(err) => {
                out.violation(e.seq, ViolationKind::Malformed, err.to_string());
                return;
            }
        };
        match (e.kind.as_str(), event) {
            ("group_created", _) => self.group.created(e, out),
            ("member_joined", Some(Event::MemberJoined { id, username })) => {
                self.stats.members += 1;
                self.members.joined(e.seq, id, &username, out);
            }
            (
                "certificates_issued",
                Some(Event::CertificatesIssued {
                    id,
                    first,
                    count,
                    wots_pk_digests,
                }),
            ) => {
                self.stats.certificates = self.stats.certificates.saturating_add(count);
                self.members
                    .issued(e.seq, id, first, count, wots_pk_digests.len(), out);
            }
            ("member_revoked", event) => self.revoked(e, event, out),
            ("member_joined" | "certificates_issued", _) => {
                if e.kind == "member_joined" {
                    self.stats.members += 1;
                }
                self.members.redacted(out);
            }
            ("signature_opened", Some(ev)) => self.opened(e.seq, ev, out, jobs),
            ("snapshot_published", _) => {
                self.stats.snapshots += 1;
                let Some(s) = e.public.get("snapshot").and_then(snapshot_from_json) else {
                    out.violation(
                        e.seq,
                        ViolationKind::Malformed,
                        "snapshot_published does not carry a decodable signed snapshot",
                    );
                    return;
                };
                self.snapshots.published(e.seq, &s, out);
                let s = std::sync::Arc::new(s);
                self.covers.published(e.seq, s.clone());
                jobs.push(Job::Snapshot {
                    seq: e.seq,
                    snapshot: s,
                });
            }
            ("checkpoint", _) => {
                self.stats.checkpoints += 1;
                match checkpoints::parse(e) {
                    Err(reason) => {
                        out.violation(e.seq, ViolationKind::Malformed, reason);
                    }
                    Ok(cp) => {
                        let matches = self.checkpoints.check(e.seq, &cp, &self.chain, out);
                        jobs.push(Job::Checkpoint {
                            seq: e.seq,
                            note: cp.note,
                            size: cp.size,
                            root: cp.root,
                            covered: matches.then(|| self.covers.at(cp.size)),
                            served: false,
                        });
                    }
                }
            }
            (kind, _) => {
                out.violation(
                    e.seq,
                    ViolationKind::Malformed,
                    format!("{kind} entry without its payload"),
                );
            }
        }
    }

    /// `member_revoked`: the public zetas go into the set (always); the private part is
    /// checked against the member's issued counters when present.
    fn revoked(&mut self, e: &Entry, event: Option<Event>, out: &mut Findings) {
        self.stats.revocations += 1;
        let Ok(zetas) = revoked_zetas(e) else {
            out.violation(
                e.seq,
                ViolationKind::Malformed,
                "member_revoked without a list of 32-hex-character zetas",
            );
            return;
        };
        self.stats.revoked_zetas += self.snapshots.revoke(e.seq, &zetas, out);
        self.covers.revoked(e.seq, &zetas);
        match event {
            Some(Event::MemberRevoked {
                id, counter, first, ..
            }) => self
                .members
                .revoked(e.seq, id, (counter, first), zetas.len(), out),
            _ => self.members.redacted(out),
        }
    }

    /// `signature_opened`: decoded and queued for verification and judge; a version-1
    /// opening (no digest) can be neither and is warned about.
    fn opened(&mut self, seq: u64, ev: Event, out: &mut Findings, jobs: &mut Vec<Job>) {
        self.stats.openings += 1;
        let Event::SignatureOpened {
            signature,
            digest,
            id,
            pi,
            ..
        } = ev
        else {
            return;
        };
        let Some(digest) = digest else {
            out.warn(
                Some(seq),
                WarningKind::UnjudgeableOpening,
                format!(
                    "the opening naming member {id} predates schema version 2: it records no DGSP digest, so neither the signature nor the opening can be checked from the log"
                ),
            );
            return;
        };
        let Some(params) = self.group.key().map(|k| k.params()) else {
            out.skip(Skipped::Signatures);
            return;
        };
        match decode_opening(params, &signature, &digest, &pi) {
            Ok((signature, digest, pi)) => {
                self.stats.judged += 1;
                jobs.push(Job::Opening {
                    seq,
                    signature: Box::new(signature),
                    digest,
                    id,
                    pi,
                });
            }
            Err(reason) => {
                out.violation(seq, ViolationKind::Malformed, reason);
            }
        }
    }
}

/// The signature (base64), digest and pi (hex) of an opening, for the group's `params`.
fn decode_opening(
    params: ParamSet,
    signature: &str,
    digest: &str,
    pi: &str,
) -> Result<(Signature, MessageDigest, Pi), String> {
    let signature = B64
        .decode(signature)
        .map_err(|e| format!("opening: signature is not base64 ({e})"))
        .and_then(|b| {
            Signature::from_bytes(&b).map_err(|e| format!("opening: bad signature ({e})"))
        })?;
    let digest = hex::decode(digest)
        .map_err(|e| format!("opening: digest is not hex ({e})"))
        .and_then(|b| {
            MessageDigest::from_slice(params, &b).map_err(|e| format!("opening: digest: {e}"))
        })?;
    let pi = hex::decode(pi)
        .map_err(|e| format!("opening: pi is not hex ({e})"))
        .and_then(|b| Pi::from_slice(params, &b).map_err(|e| format!("opening: pi: {e}")))?;
    Ok((signature, digest, pi))
}
