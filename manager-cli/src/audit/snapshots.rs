//! The revoked set rebuilt from the log's public zetas, and every snapshot against it.
//!
//! The rule is the gateway's (`dgsp_wire::follow`, which the gateway applies): a snapshot's root and
//! count must equal the set of every zeta revoked at an entry `<= log_seq` (the record's
//! last covered entry), it must directly extend the previous snapshot and cover only
//! entries before itself. On top of that the auditor names a snapshot that goes back
//! (fewer zetas than any earlier snapshot, or an earlier `log_seq`) as `snapshot_shrink`;
//! such a snapshot's root is not compared (the shrink is the violation, and the set the
//! auditor holds only grows). Every snapshot, good or bad, becomes the predecessor of the
//! next, as it is in the log.

use std::collections::HashMap;

use dgsp_core::revocation::{RevocationSet, SignedSnapshot, SnapshotRecord};
use dgsp_core::Zeta;

use super::findings::Findings;
use super::violation::ViolationKind;

/// Revocations and snapshots so far.
#[derive(Default)]
pub(crate) struct Snapshots {
    /// Zetas revoked at entries covered by the latest snapshot's `log_seq`.
    set: RevocationSet,
    /// Zetas revoked since, with their entry.
    pending: HashMap<Zeta, u64>,
    latest: Option<SnapshotRecord>,
    /// The largest count of any snapshot so far.
    high_count: u64,
}

impl Snapshots {
    /// `member_revoked` at `seq` adds `zetas`; each must be new. Returns how many were new.
    pub(crate) fn revoke(&mut self, seq: u64, zetas: &[Zeta], out: &mut Findings) -> u64 {
        let mut duplicates = 0u64;
        let mut first_duplicate = None;
        let mut new = 0;
        for z in zetas {
            if self.set.contains(z) || self.pending.contains_key(z) {
                duplicates += 1;
                first_duplicate.get_or_insert(*z);
            } else {
                self.pending.insert(*z, seq);
                new += 1;
            }
        }
        if let Some(z) = first_duplicate {
            out.violation(
                seq,
                ViolationKind::DuplicateZeta,
                format!(
                    "{duplicates} zetas revoked before (e.g. {})",
                    hex::encode(z.as_bytes())
                ),
            );
        }
        new
    }

    /// Zetas revoked but in no snapshot yet, and the first entry revoking one.
    pub(crate) fn unsnapshotted(&self) -> (usize, Option<u64>) {
        (self.pending.len(), self.pending.values().min().copied())
    }

    /// A `snapshot_published` entry at `seq` (its signature is checked elsewhere).
    pub(crate) fn published(&mut self, seq: u64, s: &SignedSnapshot, out: &mut Findings) {
        let r = &s.record;
        let mut succession = Vec::new();
        if r.log_seq >= seq {
            succession.push(format!(
                "it claims to cover entry {} but is entry {seq}",
                r.log_seq
            ));
        }
        match &self.latest {
            Some(prev) if prev.number.checked_add(1) != Some(r.number) => succession.push(format!(
                "it is number {} after number {}",
                r.number, prev.number
            )),
            Some(prev) if r.prev_hash != prev.hash() => succession.push(format!(
                "its prev_hash is not the hash of snapshot {}",
                prev.number
            )),
            None if r.number != 1 => {
                succession.push(format!("the first snapshot is number {}, not 1", r.number))
            }
            _ => {}
        }
        if !succession.is_empty() {
            out.violation(
                seq,
                ViolationKind::SnapshotSuccession,
                format!("snapshot {}: {}", r.number, succession.join("; ")),
            );
        }

        let mut shrink = Vec::new();
        if r.count < self.high_count {
            shrink.push(format!(
                "{} zetas, an earlier snapshot had {}",
                r.count, self.high_count
            ));
        }
        if let Some(prev) = self.latest.as_ref().filter(|p| r.log_seq < p.log_seq) {
            shrink.push(format!(
                "it covers the log up to entry {}, snapshot {} up to entry {}",
                r.log_seq, prev.number, prev.log_seq
            ));
        }

        // Fold every revocation the record says it covers into the set.
        let zetas: Vec<Zeta> = self
            .pending
            .extract_if(|_, at| *at <= r.log_seq)
            .map(|(z, _)| z)
            .collect();
        self.set.insert(&zetas);

        if !shrink.is_empty() {
            out.violation(
                seq,
                ViolationKind::SnapshotShrink,
                format!("snapshot {} goes back: {}", r.number, shrink.join("; ")),
            );
        } else if self.set.root() != r.root || self.set.len() != r.count {
            out.violation(
                seq,
                ViolationKind::SnapshotRoot,
                format!(
                    "snapshot {} claims {} zetas with root {}; the log's revocations up to entry {} give {} zetas with root {}",
                    r.number,
                    r.count,
                    hex::encode(r.root),
                    r.log_seq,
                    self.set.len(),
                    hex::encode(self.set.root())
                ),
            );
        }
        self.high_count = self.high_count.max(r.count);
        self.latest = Some(r.clone());
    }
}
