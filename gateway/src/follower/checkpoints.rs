//! Signed checkpoints as they reach the follower: the registry's newest note from
//! `/v1/checkpoint` (verified unless identical to the last, checked against every timed
//! checkpoint held, held as the registry's claim and applied once the feed has served what it
//! covers) and `checkpoint` entries of the feed (verified, checked the same way). Both end in
//! [`Follower::cover`]; one it refuses for what it covers is reported and skipped
//! ([`Follower::refuse`]), the registry's note is no longer held, and the follower goes on
//! with the entries pending, until a checkpoint at least as large is applied
//! ([`Follower::resumed`]).
//!
//! With a witness policy (`--witness-policy`), the registry's note must come with its
//! witnessed note, which must meet the policy's quorum with cosignatures no older than the
//! staleness bound and be of the same tree; otherwise the note is refused
//! (`unwitnessed_checkpoint`, `witness_quorum`, `bad_witnessed_checkpoint`) like any other
//! fault of the poll. Checkpoint entries of the feed carry no witnessed note: they still
//! apply what they cover, but the view is fresh only as of a witnessed checkpoint.

use std::sync::Arc;

use dgsp_core::checkpoint::origin_for;
use dgsp_wire::log::unhex32;

use super::{apply, CheckpointInfo, Fault, Follower};
use crate::state::{current, lock, Verified};
use crate::witness::WitnessRefusal;

impl Follower {
    /// The registry's newest note: verified (unless it is the note verified last time),
    /// checked against every timed checkpoint held, then held as `latest`; applied at once
    /// when it covers the applied position or entries already pending.
    pub(super) async fn on_registry_note(&mut self, info: CheckpointInfo) -> Result<(), Fault> {
        let view = current(&self.view);
        let policy = view.witness_policy.clone();
        let same = |l: &Verified| {
            *l.note == info.note
                && (policy.is_none()
                    || l.witness.as_ref().map(|w| &*w.note) == info.witnessed.as_deref())
        };
        if self.latest.as_deref().is_some_and(same) {
            return self.try_latest().await;
        }
        if self.is_refused(&info.note) {
            // Refused already (its fault is in force): keep polling for a later one.
            return Ok(());
        }
        let origin = origin_for(&view.group);
        let served = info.note.lines().next().unwrap_or_default();
        if served != origin {
            return Err(Fault::WrongGroup(format!(
                "the registry's checkpoint is for log {served:?}, this gateway is pinned to {origin:?}"
            )));
        }
        let v = view.clone();
        let note = info.note.clone();
        // A SPHINCS+ verification: off the async runtime.
        let checked = tokio::task::spawn_blocking(move || apply::check_note(&v, &note))
            .await
            .map_err(|e| Fault::Storage(format!("checkpoint task: {e}")))?;
        let bad = |detail: String| Fault::BadCheckpoint {
            seq: info.size,
            detail: format!("the registry's current checkpoint: {detail}"),
        };
        let cp = checked.map_err(bad)?;
        if cp.size != info.size || unhex32(&info.head) != Some(cp.root) {
            return Err(bad(
                "the answer's size or head differs from its signed note".into(),
            ));
        }
        self.clock
            .check_not_ahead(&cp)
            .map_err(|detail| Fault::FutureCheckpoint {
                seq: info.size,
                detail: format!("the registry's current checkpoint: {detail}"),
            })?;
        let witness = match &policy {
            None => None,
            Some(policy) => {
                let seq = info.size;
                let witnessed = info
                    .witnessed
                    .as_deref()
                    .ok_or_else(|| Fault::Unwitnessed {
                        seq,
                        detail: WitnessRefusal::Missing.to_string(),
                    })?;
                let witness = policy
                    .verify(
                        witnessed,
                        &cp,
                        self.clock.now_unix_ms(),
                        Some(self.config.witness_max_age),
                        self.clock.tolerance(),
                    )
                    .map_err(|refusal| refusal.into_fault(seq))?;
                Some(witness)
            }
        };
        let new = Arc::new(Verified::new(cp, info.note).with_witness(witness));
        let held = [view.checkpoint.as_deref(), self.latest.as_deref()];
        for h in held.into_iter().flatten() {
            let (new_t, held_t) = (new.time_unix_ms(), h.time_unix_ms());
            match (new_t, held_t) {
                (None, Some(_)) => {
                    return Err(Fault::ReplayedCheckpoint(
                        "the registry serves an untimed checkpoint after timed ones".into(),
                    ))
                }
                (Some(n), Some(t)) if n < t => {
                    return Err(Fault::ReplayedCheckpoint(format!(
                        "the registry serves a checkpoint signed at {n}, older than one signed at {t} already verified"
                    )))
                }
                _ => apply::check_order(&new.checkpoint, &h.checkpoint)?,
            }
        }
        if new.checkpoint.size < view.applied.seq {
            return Err(Fault::ReplayedCheckpoint(format!(
                "the registry's current checkpoint covers {} entries, {} are applied here",
                new.checkpoint.size, view.applied.seq
            )));
        }
        let previous = self.latest.replace(new.clone());
        if let Err(fault) = self.try_latest().await {
            // A note refused when applied is not the registry's claim to hold on to.
            self.latest = previous;
            return Err(fault);
        }
        if self.latest.is_none() {
            // Refused for what it covers (`try_latest` reported it).
            self.latest = previous;
            return Ok(());
        }
        lock(&self.status).registry_checkpoint = Some((new.checkpoint.size, new.time_unix_ms()));
        Ok(())
    }

    /// Applies `latest` if it covers the applied position or the last pending entry at its
    /// size has been fetched. Refused for what it covers, it is reported and no longer held.
    pub(super) async fn try_latest(&mut self) -> Result<(), Fault> {
        let Some(latest) = self.latest.clone() else {
            return Ok(());
        };
        let size = latest.checkpoint.size;
        let view = current(&self.view);
        let applied = view.applied.seq;
        let pending_has = self.pending.last().is_some_and(|h| h.entry.seq >= size);
        // Applied already (unless it brings the witnessed note the applied one lacks).
        if size == applied
            && view.checkpoint.as_ref().is_some_and(|c| {
                c.note == latest.note && (c.witness.is_some() || latest.witness.is_none())
            })
        {
            return Ok(());
        }
        if size == applied || (size > applied && pending_has) {
            if let Some(fault) = self.cover(latest.clone(), size).await? {
                self.latest = None;
                self.refuse(latest, fault);
            }
        }
        Ok(())
    }

    /// Verifies the checkpoint entry just held (the note verified last is not verified
    /// again).
    pub(super) async fn check_log_checkpoint(&self) -> Result<Verified, Fault> {
        let e = &self.pending[self.pending.len() - 1].entry;
        let note = apply::checkpoint_note(e)?;
        if let Some(l) = self.latest.as_ref().filter(|l| *l.note == *note) {
            apply::check_checkpoint_entry(e, &l.checkpoint)?;
            return Ok((**l).clone());
        }
        let view = current(&self.view);
        let e = e.clone();
        // A SPHINCS+ verification: off the async runtime.
        tokio::task::spawn_blocking(move || apply::check_checkpoint(&view, &e))
            .await
            .map_err(|e| Fault::Storage(format!("checkpoint task: {e}")))?
    }

    /// A `checkpoint` entry at `seq`: it must agree with the timed checkpoints held; then it
    /// covers what it covers, or is refused for it and skipped (the entries stay pending for
    /// a later checkpoint).
    pub(super) async fn on_log_checkpoint(
        &mut self,
        checked: Verified,
        seq: u64,
    ) -> Result<(), Fault> {
        if self.is_refused(&checked.note) {
            return Ok(());
        }
        self.clock
            .check_not_ahead(&checked.checkpoint)
            .map_err(|detail| Fault::FutureCheckpoint { seq, detail })?;
        let view = current(&self.view);
        let advances = checked.checkpoint.size > view.applied.seq;
        let timed = view
            .checkpoint
            .as_ref()
            .is_some_and(|c| c.time_unix_ms().is_some());
        if advances && checked.time_unix_ms().is_none() && timed {
            return Err(Fault::ReplayedCheckpoint(format!(
                "the untimed checkpoint at entry {seq} follows timed ones"
            )));
        }
        for h in [view.checkpoint.as_deref(), self.latest.as_deref()]
            .into_iter()
            .flatten()
        {
            apply::check_order(&checked.checkpoint, &h.checkpoint)?;
        }
        let checked = Arc::new(checked);
        if let Some(fault) = self.cover(checked.clone(), seq).await? {
            self.refuse(checked, fault);
        }
        Ok(())
    }

    /// A checkpoint refused for what it covers: reported (in force until a checkpoint at
    /// least as large is applied, counted once per note), never tried again.
    fn refuse(&mut self, checkpoint: Arc<Verified>, fault: Fault) {
        tracing::warn!(
            kind = fault.kind(),
            error = %fault,
            "signed checkpoint refused; waiting for a later one that covers the log consistently"
        );
        let report = self.report(&fault);
        if self.refused.len() == super::MAX_REFUSED {
            self.refused.pop_front();
        }
        self.refused.push_back((checkpoint, report));
    }

    /// Whether `note` is a checkpoint refused and not yet resumed past.
    fn is_refused(&self, note: &str) -> bool {
        self.refused.iter().any(|(r, _)| *r.note == *note)
    }

    /// The applied state now covers entry `seq`: a refused checkpoint no larger is history
    /// (its fault stays in `last_integrity_fault` and the counts). Snapshots the range
    /// superseded that did not match the log are reported unless the refusal in force was
    /// theirs.
    pub(super) fn resumed(&mut self, seq: u64, superseded: Vec<Fault>) {
        for fault in superseded {
            let shown = self
                .refused
                .iter()
                .any(|(_, f)| f.kind == fault.kind() && f.seq == fault.seq());
            if !shown {
                tracing::warn!(kind = fault.kind(), error = %fault, "a superseded snapshot does not match the log");
                self.report(&fault);
            }
        }
        self.refused.retain(|(r, _)| {
            let past = r.checkpoint.size <= seq;
            if past {
                tracing::info!(
                    seq,
                    refused = r.checkpoint.size,
                    "resumed past a refused checkpoint"
                );
            }
            !past
        });
        lock(&self.status).fault = self.refused.back().map(|(_, f)| f.clone());
    }
}
