//! The audit's result: what was read, what was found, what could not be checked; as JSON
//! (`--json`) or as text.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::violation::{Skipped, Violation, Warning};

/// The group the log belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupInfo {
    /// SHA3-256 fingerprint of the group public key (hex).
    pub fingerprint: String,
    /// Parameter set.
    pub params: String,
    /// Whether the group was pinned (`--group-key`); otherwise entry 1 was trusted.
    pub pinned: bool,
}

/// The last entry read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Head {
    /// Its seq.
    pub seq: u64,
    /// Its hash (hex), as the entry states it.
    pub hash: String,
}

/// What the log holds, by kind of event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// `member_joined` entries.
    pub members: u64,
    /// Certificates issued (sum of `count`).
    pub certificates: u64,
    /// `member_revoked` entries.
    pub revocations: u64,
    /// Zetas revoked.
    pub revoked_zetas: u64,
    /// `signature_opened` entries.
    pub openings: u64,
    /// Openings checked: the opened signature verified from its digest and the opening
    /// judged (the others, version-1 openings, are warned about).
    pub judged: u64,
    /// `snapshot_published` entries.
    pub snapshots: u64,
    /// `checkpoint` entries.
    pub checkpoints: u64,
    /// Size of the last checkpoint.
    pub checkpointed: u64,
    /// Checkpoints whose root is the RFC 6962 Merkle root of the first `size` entries (what
    /// the registry signs).
    pub tree_roots: u64,
    /// Checkpoints whose root is the chain hash of entry `size`: notes signed before the log
    /// was a tree, still accepted (`docs/checkpoints.md`).
    pub legacy_roots: u64,
    /// RFC 6962 consistency proofs verified between successive checkpoints (`audit
    /// --tiles`: computed from the served hash tiles; 0 for the other sources).
    pub consistency_proofs: u64,
}

/// What `audit --tiles` read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TilesRead {
    /// The tiles' base (URL or directory).
    pub base: String,
    /// The size the served checkpoint states.
    pub checkpoint_size: u64,
    /// The root it states (hex).
    pub checkpoint_root: String,
    /// Entry bundles read.
    pub bundles: u64,
    /// Hash tiles read (each compared with the hashes recomputed from the bundles; tiles
    /// read again for consistency proofs counted once more).
    pub hash_tiles: u64,
    /// Bytes read (checkpoint and tiles).
    pub bytes: u64,
    /// The first entry not read, when an unreadable bundle (`tile_bundle`) stopped the
    /// audit there (a bundle that does not decode is refused whole).
    pub stopped_at: Option<u64>,
}

/// The result of an audit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Entries read.
    pub entries: u64,
    /// The last entry read, if any.
    pub head: Option<Head>,
    /// The group, once known (from the pin or entry 1).
    pub group: Option<GroupInfo>,
    /// Breaches, by seq.
    pub violations: Vec<Violation>,
    /// Things worth a look that are not breaches.
    pub warnings: Vec<Warning>,
    /// How many times each kind of check could not be made.
    pub skipped: BTreeMap<Skipped, u64>,
    /// What the log holds.
    pub stats: Stats,
    /// What was read from the tiles (`audit --tiles`; absent for the other sources).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiles: Option<TilesRead>,
}

impl Report {
    /// True when no violation was found.
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }

    /// The `(kind, seq)` of every violation, in report order (what tests compare).
    pub fn kinds(&self) -> Vec<(&'static str, u64)> {
        self.violations
            .iter()
            .map(|v| (v.kind.as_str(), v.seq))
            .collect()
    }

    /// The report as text for people.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let head = self.head.as_ref().map_or_else(
            || "empty".to_owned(),
            |h| format!("head {} {}", h.seq, h.hash),
        );
        let _ = writeln!(out, "audited {} entries ({head})", self.entries);
        if let Some(g) = &self.group {
            let how = if g.pinned {
                "pinned"
            } else {
                "from entry 1, not pinned: compare it with the fingerprint you expect, or pass --group-key"
            };
            let _ = writeln!(out, "group {} ({}, {how})", g.fingerprint, g.params);
        }
        let s = &self.stats;
        let _ = writeln!(
            out,
            "{} members, {} certificates, {} revocations ({} zetas), {} openings ({} judged), {} snapshots, {} checkpoints (last covers {}; roots matching the log: {} Merkle tree roots, {} legacy chain hashes)",
            s.members, s.certificates, s.revocations, s.revoked_zetas, s.openings, s.judged,
            s.snapshots, s.checkpoints, s.checkpointed, s.tree_roots, s.legacy_roots
        );
        if let Some(t) = &self.tiles {
            let _ = writeln!(
                out,
                "tiles from {}: served checkpoint size {} root {}; {} entry bundles, {} hash tiles, {} bytes; {} consistency proofs verified",
                t.base, t.checkpoint_size, t.checkpoint_root, t.bundles, t.hash_tiles, t.bytes, s.consistency_proofs
            );
            if let Some(at) = t.stopped_at {
                let _ = writeln!(
                    out,
                    "the audit stopped at entry {at}: its bundle could not be read (see the tile_bundle violation); the entries from there on were not audited"
                );
            }
        }
        for (check, n) in &self.skipped {
            let what = match check {
                Skipped::Commitment => {
                    "commitments not checked (private parts missing: use the auditor token)"
                }
                Skipped::MemberChecks => {
                    "entries without member checks (private parts missing: use the auditor token)"
                }
                Skipped::Signatures => "signatures not checked (no group key)",
                Skipped::AlteredEntry => "altered entries whose own checks were skipped",
                Skipped::CheckpointRoot => {
                    "checkpoint roots not compared (they cover an entry already reported altered or out of sequence, or not read)"
                }
                Skipped::Consistency => {
                    "consistency proofs not computed (they read a hash tile already reported, or the audit stopped)"
                }
            };
            let _ = writeln!(out, "skipped: {n} {what}");
        }
        for w in &self.warnings {
            let at = w.seq.map_or_else(String::new, |s| format!(" at {s}"));
            let _ = writeln!(out, "warning{at}: {}: {}", w.kind, w.detail);
        }
        for v in &self.violations {
            let _ = writeln!(out, "VIOLATION at {}: {}: {}", v.seq, v.kind, v.detail);
        }
        match self.violations.len() {
            0 => out.push_str("no violations\n"),
            1 => out.push_str("1 violation\n"),
            n => {
                let _ = writeln!(out, "{n} violations");
            }
        }
        out
    }
}
