//! Following the registry: its newest signed checkpoint, then its public feed; fetch,
//! chain-check, hold, and apply only what a checkpoint signed by the pinned key covers.
//!
//! Each poll first reads `GET /v1/checkpoint`, the registry's newest signed note (it signs
//! one at a fixed cadence even when nothing is written, with the signing time inside). The
//! note must verify under the pinned key, name this group's log, and agree with every timed
//! checkpoint already held: a later signed time never covers fewer entries, and one older
//! than the newest held is refused (`replayed_checkpoint`). It is held as the registry's
//! claim ([`Follower::latest`]) until the entries it covers are applied.
//!
//! Then the poll asks for the feed page that starts at the gateway's own tip (the last entry
//! it holds), so the first entry served must be one it already has, with the same hash: a
//! registry that rewrote history (a fork) or lost it (a rollback) is caught before anything
//! new is read. A feed whose head is below the size of the signed note it just served is
//! withholding entries (`withheld`). New entries must chain; they wait in a pending list,
//! bounded in entries and in memory (by parsed size), until a checkpoint covers them: a
//! `checkpoint` entry in the feed, or the note from `/v1/checkpoint` once the feed has served
//! its last entry. That
//! range is then checked as a whole ([`apply::apply_range`]: group, revocations, snapshot
//! signatures, succession, roots, and that a timed checkpoint names the latest snapshot
//! holding every revocation), written to the replica in one batch with the note, and swapped
//! in as the new view. A newer note covering exactly the applied position replaces the
//! view's note, which is how the view stays fresh while nothing is written.
//!
//! The view is fresh as of its note's signed time and nothing else: a registry (or a proxy)
//! that stops serving new entries or new notes cannot keep a gateway fresh, whatever it
//! answers. Any fault discards the pending list, keeps the last view in service, is reported
//! in `/readyz` and metrics, and the poll is retried with backoff from the last applied entry.
//!
//! Except a validly signed checkpoint refused for what it covers (`bad_checkpoint`: it does
//! not name the newest snapshot or covers a revocation outside it; `snapshot_mismatch`: the
//! snapshot it names does not hold the log's revocations). The manager signed it and the
//! log keeps it, so asking again would meet it again: it is refused and reported (the fault
//! stays in force until a checkpoint at least as large is applied), the entries stay
//! pending, and a later checkpoint that covers them consistently applies them, as a
//! registry repairing such a log publishes (docs/checkpoints.md, "Recovering a log"). Every
//! state served is still a checkpoint and the snapshot it names, both checked against the
//! log ([`apply::apply_range`]).
//! A page refused for size halves the page size (down to one entry) instead of asking for
//! the same page again; successful pages grow it back.

pub mod apply;
mod checkpoints;
mod fault;
pub mod fetch;
pub mod roots;
pub mod size;

use std::sync::Arc;
use std::time::Duration;

use dgsp_wire::feed::Entries;
use dgsp_wire::log::{Entry, Hash};
use tokio::sync::watch;

pub use fault::Fault;
pub use fetch::{client, read_roots, CheckpointInfo};

use crate::clock::WallClock;
use crate::replica::Replica;
use crate::state::{
    current, lock, now_ms, replace, FaultReport, SharedStatus, SharedView, Verified, View,
};

/// Most refused checkpoints remembered at once (each holds its note, under 70 KB): a
/// registry signing more bad checkpoints than this before a good one has some counted
/// again when they are met again.
pub const MAX_REFUSED: usize = 32;

/// Most entries held pending before the registry must have checkpointed them: the registry
/// checkpoints after every publishing step (a few hundred entries under heavy load), so a feed
/// that goes this long without one is refused rather than buffered without bound.
pub const MAX_PENDING: usize = 200_000;

/// Most memory held by entries pending, by their parsed size ([`size::parsed_size`]): the
/// same rule by size, so a registry (or anyone on the path to it) that serves large
/// entries without checkpointing them cannot make the gateway hold more unverified data than
/// this. 128 MiB: one `member_revoked` entry of a member at the certificate cap (2^20 zetas,
/// ~37 MB of JSON, ~80 MiB parsed) fits with room for the rest of its publishing step; two
/// such revocations in one step do not, and are refused (`pending_limit`) until the bound is
/// raised (`--max-pending-bytes`).
pub const MAX_PENDING_BYTES: usize = 128 << 20;

/// Largest feed page read (1000 entries of the largest parameter set are well under this); a
/// larger page makes the follower ask for fewer entries.
pub const MAX_PAGE_BYTES: usize = 128 << 20;

/// How the follower talks to the registry.
#[derive(Clone, Debug)]
pub struct FollowConfig {
    /// Registry base URL, e.g. `http://127.0.0.1:7300`.
    pub registry: String,
    /// Entries per page (the registry serves at most 1000).
    pub page: usize,
    /// Pause between polls once caught up.
    pub poll: Duration,
    /// Longest pause after repeated faults.
    pub max_backoff: Duration,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Largest feed page read, in bytes.
    pub max_page_bytes: usize,
    /// Most entries held pending.
    pub max_pending: usize,
    /// Most memory held by entries pending, by their parsed size.
    pub max_pending_bytes: usize,
    /// With a witness policy: the oldest a witness's cosignature may be when the gateway
    /// first verifies the registry's witnessed note (the gateway's staleness bound).
    pub witness_max_age: Duration,
    /// The CA certificates an `https://` registry's certificate must chain to
    /// (`--registry-ca-file`); empty: the system's roots.
    pub roots: Vec<reqwest::Certificate>,
}

impl FollowConfig {
    /// Defaults for `registry`: pages of 1000, 500 ms polls, 10 s timeouts, backoff to 10 s,
    /// and the `MAX_*` bounds.
    pub fn new(registry: impl Into<String>) -> Self {
        FollowConfig {
            registry: registry.into().trim_end_matches('/').to_owned(),
            page: 1000,
            poll: Duration::from_millis(500),
            max_backoff: Duration::from_secs(10),
            timeout: Duration::from_secs(10),
            max_page_bytes: MAX_PAGE_BYTES,
            max_pending: MAX_PENDING,
            max_pending_bytes: MAX_PENDING_BYTES,
            witness_max_age: Duration::from_secs(60),
            roots: Vec::new(),
        }
    }
}

/// A fetched, chain-checked entry waiting for a checkpoint, with its parsed size.
struct Held {
    entry: Entry,
    bytes: usize,
}

/// The follower task.
pub struct Follower {
    config: FollowConfig,
    client: reqwest::Client,
    replica: Arc<Replica>,
    view: SharedView,
    status: SharedStatus,
    pending: Vec<Held>,
    pending_bytes: usize,
    /// Entries asked for per page now.
    page_limit: usize,
    /// The newest note from `/v1/checkpoint` that verified; it may cover entries not yet
    /// applied.
    latest: Option<Arc<Verified>>,
    /// The clock signed times are checked against (none may be beyond its tolerance ahead).
    clock: WallClock,
    /// The checkpoints refused for what they cover, oldest first, each with its fault, until
    /// a checkpoint at least as large is applied (at most [`MAX_REFUSED`]; the newest is the
    /// fault in force). Kept so that one met again (after any fault, the follower reads on
    /// from its applied position) is neither checked nor counted again.
    refused: std::collections::VecDeque<(Arc<Verified>, FaultReport)>,
    /// With a witness policy: whether the registry's log-key statement was checked since
    /// the last fault (it is checked again after each).
    log_key_checked: bool,
    /// With a witness policy: whether the last poll already asked again at once for the
    /// witnessed note of a checkpoint applied from the feed ([`Follower::recheck_witnessed`]).
    rechecked: bool,
}

impl Follower {
    /// A follower applying to `view` and `replica`.
    pub fn new(
        config: FollowConfig,
        replica: Arc<Replica>,
        view: SharedView,
        status: SharedStatus,
        clock: WallClock,
    ) -> Result<Self, Fault> {
        let page_limit = config.page.max(1);
        lock(&status).page_limit = page_limit;
        Ok(Follower {
            client: client(config.timeout, &config.roots)?,
            config,
            replica,
            view,
            status,
            pending: Vec::new(),
            pending_bytes: 0,
            page_limit,
            latest: None,
            clock,
            refused: Default::default(),
            log_key_checked: false,
            rechecked: false,
        })
    }

    /// Polls until `stop` turns true. Fetches and waits are cancelled at once; an apply in
    /// progress completes first, so the replica is never left half-written.
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut failures = 0u32;
        loop {
            let outcome = match self.poll(&mut stop).await {
                Ok(None) => return,
                Ok(Some(more)) => Ok(more),
                Err(fault) => Err(fault),
            };
            let pause = match outcome {
                Ok(more) => {
                    failures = 0;
                    self.set_page_limit(self.page_limit.saturating_mul(2));
                    if more {
                        Duration::ZERO
                    } else {
                        self.config.poll
                    }
                }
                Err(Fault::PageTooLarge { entries, .. }) if self.page_limit > 1 => {
                    // Nothing of the page was kept: ask for half as many entries, at once.
                    self.set_page_limit(self.page_limit / 2);
                    tracing::warn!(
                        entries,
                        now = self.page_limit,
                        "feed page too large; asking for fewer entries"
                    );
                    Duration::ZERO
                }
                Err(fault) => {
                    failures = failures.saturating_add(1);
                    self.log_key_checked = false;
                    tracing::warn!(kind = fault.kind(), error = %fault, "registry feed refused; serving the last verified state");
                    self.pending.clear();
                    self.pending_bytes = 0;
                    lock(&self.status).pending_bytes = 0;
                    self.report(&fault);
                    let exp = self.config.poll.saturating_mul(1 << failures.min(8));
                    exp.min(self.config.max_backoff)
                }
            };
            if !pause.is_zero() {
                tokio::select! {
                    _ = stop.changed() => return,
                    _ = tokio::time::sleep(pause) => {}
                }
            }
        }
    }

    fn set_page_limit(&mut self, n: usize) {
        self.page_limit = n.clamp(1, self.config.page.max(1));
        lock(&self.status).page_limit = self.page_limit;
    }

    /// One poll: the newest signed note, then one feed page. `Ok(None)` when stopped,
    /// otherwise whether the registry has more to fetch at once.
    async fn poll(&mut self, stop: &mut watch::Receiver<bool>) -> Result<Option<bool>, Fault> {
        if !self.log_key_checked {
            let view = current(&self.view);
            if let Some(policy) = view.witness_policy.clone() {
                let group = view.group.clone();
                tokio::select! {
                    _ = stop.changed() => return Ok(None),
                    r = check_log_key(&self.client, &self.config, group, policy) => r?,
                };
            }
            self.log_key_checked = true;
        }
        let info = tokio::select! {
            _ = stop.changed() => return Ok(None),
            r = fetch::fetch_checkpoint(&self.client, &self.config) => r?,
        };
        if let Some(info) = info {
            self.on_registry_note(info).await?;
        }
        let tip = self.tip().0;
        // The page starts with the tip (already held, for the continuity check), then up to
        // `page_limit` new entries.
        let limit = (self.page_limit + usize::from(tip > 0)).min(self.config.page.max(2));
        let page = tokio::select! {
            _ = stop.changed() => return Ok(None),
            r = fetch::fetch_page(&self.client, &self.config, tip.saturating_sub(1), limit) => r?,
        };
        let only_tip =
            tip > 0 && page.head_seq > tip && page.entries.len() == 1 && page.entries[0].seq == tip;
        if !only_tip {
            let more = self.process(page, true).await?;
            return Ok(Some(more || self.recheck_witnessed()));
        }
        // The registry's page bound left room for the tip alone: the next entry is larger
        // than the bound (a revocation near the certificate limit is ~37 MB, the registry's
        // pages 16 MiB). Check the tip, then read that entry on its own; its `prev` hash
        // continues from the tip like any other entry's.
        self.check_tip(&page.entries[0])?;
        let page = tokio::select! {
            _ = stop.changed() => return Ok(None),
            r = fetch::fetch_page(&self.client, &self.config, tip, 1) => r?,
        };
        let more = self.process(page, false).await?;
        Ok(Some(more || self.recheck_witnessed()))
    }

    /// With a witness policy, a checkpoint entry of the feed applied beyond the registry's
    /// witnessed note leaves the view without a witnessed checkpoint (stale): whether to
    /// ask `/v1/checkpoint` again at once (once in a row) for the witnessed note of that
    /// tree, which the registry serves before it logs the entry.
    fn recheck_witnessed(&mut self) -> bool {
        let view = current(&self.view);
        let unwitnessed = view.witness_policy.is_some()
            && view
                .checkpoint
                .as_ref()
                .is_some_and(|c| c.witness.is_none());
        let again = unwitnessed && !self.rechecked;
        self.rechecked = unwitnessed;
        again
    }

    /// The first entry of a page that starts at the tip must be the tip, byte for byte.
    fn check_tip(&self, first: &Entry) -> Result<(), Fault> {
        let (tip_seq, tip_hash) = self.tip();
        if first.seq != tip_seq {
            return Err(Fault::MalformedPage(format!(
                "the page starts with entry {} instead of {tip_seq}",
                first.seq
            )));
        }
        if first.hash_bytes().ok() != Some(tip_hash) {
            return Err(Fault::Fork {
                seq: tip_seq,
                detail: "the registry now serves a different entry here".into(),
            });
        }
        Ok(())
    }

    /// The last entry held: pending, else applied.
    fn tip(&self) -> (u64, Hash) {
        match self.pending.last() {
            Some(h) => (h.entry.seq, h.entry.hash_bytes().unwrap_or_default()),
            None => {
                let v = current(&self.view);
                (v.applied.seq, v.applied.hash)
            }
        }
    }

    /// Checks and holds one page (which starts with the tip when `overlap`); applies what
    /// checkpoints cover. Returns whether the registry has more to fetch.
    async fn process(&mut self, page: Entries, overlap: bool) -> Result<bool, Fault> {
        let (tip_seq, tip_hash) = self.tip();
        if page.head_seq < tip_seq {
            return Err(Fault::Rollback {
                head: page.head_seq,
                applied: tip_seq,
            });
        }
        if let Some(l) = &self.latest {
            if l.checkpoint.size > page.head_seq {
                return Err(Fault::Withheld {
                    size: l.checkpoint.size,
                    head: page.head_seq,
                });
            }
        }
        let mut entries = page.entries.into_iter();
        if overlap && tip_seq > 0 {
            let first = entries.next().ok_or_else(|| {
                Fault::MalformedPage(format!("the page does not start with entry {tip_seq}"))
            })?;
            self.check_tip(&first)?;
        }
        let (mut prev_seq, mut prev_hash) = (tip_seq, tip_hash);
        let mut entries = entries.peekable();
        if entries.peek().is_none() && page.head_seq > tip_seq {
            // Claiming more than it serves would otherwise make us poll again at once, forever.
            return Err(Fault::MalformedPage(format!(
                "the registry reports head {} but serves nothing after entry {tip_seq}",
                page.head_seq
            )));
        }
        for e in entries {
            e.check(prev_seq, &prev_hash).map_err(|err| Fault::Chain {
                seq: e.seq,
                detail: err.to_string(),
            })?;
            if e.seq == 1 || e.kind == "group_created" {
                // Refuse another group's log at its first entry, before any checkpoint.
                apply::check_group(&current(&self.view), &e)?;
            }
            prev_seq = e.seq;
            prev_hash = e.hash_bytes().unwrap_or_default();
            self.hold(e)?;
            let last = &self.pending[self.pending.len() - 1].entry;
            if last.kind == "checkpoint" {
                let seq = last.seq;
                let checked = self.check_log_checkpoint().await?;
                self.on_log_checkpoint(checked, seq).await?;
            }
            if self
                .latest
                .as_ref()
                .is_some_and(|l| l.checkpoint.size == prev_seq)
            {
                self.try_latest().await?;
            }
        }
        let mut st = lock(&self.status);
        st.registry_head = page.head_seq;
        st.fetched = prev_seq;
        let substantive: Vec<&Entry> = self
            .pending
            .iter()
            .map(|h| &h.entry)
            .filter(|e| e.kind != "checkpoint")
            .collect();
        st.pending_substantive = substantive.len() as u64;
        st.oldest_pending_ms = substantive.first().map(|e| e.time_ms);
        st.pending_bytes = self.pending_bytes as u64;
        st.fault = self.refused.back().map(|(_, report)| report.clone());
        let more = prev_seq < page.head_seq;
        if !more {
            st.last_sync_unix_ms = Some(now_ms());
        }
        Ok(more)
    }

    /// Holds a chain-checked entry, within the bounds (in entries, and in memory by parsed
    /// size).
    fn hold(&mut self, entry: Entry) -> Result<(), Fault> {
        let bytes = size::parsed_size(&entry);
        if self.pending.len() >= self.config.max_pending {
            return Err(Fault::PendingLimit(format!(
                "{} entries up to entry {}",
                self.config.max_pending, entry.seq
            )));
        }
        if self.pending_bytes.saturating_add(bytes) > self.config.max_pending_bytes {
            return Err(Fault::PendingLimit(format!(
                "{} bytes of parsed entries up to entry {} (at most {}, --max-pending-bytes)",
                self.pending_bytes.saturating_add(bytes),
                entry.seq,
                self.config.max_pending_bytes
            )));
        }
        self.pending_bytes += bytes;
        self.pending.push(Held { entry, bytes });
        Ok(())
    }

    /// Applies what a verified checkpoint covers. One of the size already applied must have
    /// the root of the applied tree at its size (and, when newer, becomes the view's note);
    /// a larger one applies the pending entries up to its size as one range, its root that
    /// of the applied tree and those entries ([`apply::apply_range`]). Faults about the
    /// checkpoint are reported at `at`. `Ok(Some(fault))`: the checkpoint is refused for what it covers
    /// (`bad_checkpoint` by [`apply::check_covers`], or `snapshot_mismatch` of the snapshot
    /// it names); nothing was applied and the pending entries are kept, for a later
    /// checkpoint to cover.
    async fn cover(&mut self, checkpoint: Arc<Verified>, at: u64) -> Result<Option<Fault>, Fault> {
        let view = current(&self.view);
        let cp = &checkpoint.checkpoint;
        if cp.size <= view.applied.seq {
            // Old news, or a newer note of the same state: it must be of the entries applied.
            if cp.size == view.applied.seq {
                let chain = (cp.size > 0).then_some(&view.applied.hash);
                roots::check("a signed checkpoint", cp, &view.tree.root(), chain)?;
            } else {
                let replica = self.replica.clone();
                let cp = cp.clone();
                tokio::task::spawn_blocking(move || {
                    check_earlier(&replica, "a signed checkpoint", &cp)
                })
                .await
                .map_err(|e| Fault::Storage(format!("root task: {e}")))??;
            }
            let held = view.checkpoint.as_deref();
            let held_time = held.and_then(|c| c.checkpoint.time_unix_ms);
            let (witnessed, held_witnessed) = (
                checkpoint.witness.is_some(),
                held.is_some_and(|c| c.witness.is_some()),
            );
            // A newer note replaces the view's; a witnessed one of the same time replaces an
            // unwitnessed one (the feed's entry of the note the registry serves witnessed),
            // and an unwitnessed one never replaces a witnessed one (with a policy, it would
            // make the state stale; without one, no note is witnessed).
            let replaces = match (witnessed, held_witnessed) {
                (true, false) => cp.time_unix_ms >= held_time,
                (false, true) => false,
                _ => cp.time_unix_ms > held_time,
            };
            if cp.size == view.applied.seq && replaces {
                return self.confirm(&view, checkpoint, at).await;
            }
            return Ok(None);
        }
        // The pending entries start right after `applied`, so the covered ones are a prefix.
        let covered = (cp.size - view.applied.seq) as usize;
        match self.pending.get(covered - 1) {
            // Its root is checked with the range (`apply_range`).
            Some(last) if last.entry.seq == cp.size => {}
            _ => {
                return Err(Fault::BadCheckpoint {
                    seq: at,
                    detail: format!("it covers entry {} which the feed did not serve", cp.size),
                })
            }
        }
        // Taken out, not copied: on most faults the caller drops everything pending anyway;
        // a checkpoint refused for what it covers hands them back.
        let (entries, sizes): (Vec<Entry>, Vec<usize>) = self
            .pending
            .drain(..covered)
            .map(|h| (h.entry, h.bytes))
            .unzip();
        let replica = self.replica.clone();
        let applied = tokio::task::spawn_blocking(move || {
            // Checkpoint entries of the range naming a size before it: against the replica.
            for (seq, cp) in roots::earlier(&entries, view.applied.seq)? {
                check_earlier(&replica, &format!("the checkpoint at entry {seq}"), &cp)?;
            }
            let (update, next, superseded) =
                match apply::apply_range(&view, &entries, checkpoint, at) {
                    Ok(applied) => applied,
                    Err(fault @ (Fault::BadCheckpoint { .. } | Fault::SnapshotMismatch { .. })) => {
                        return Ok(Err((fault, entries)))
                    }
                    Err(fault) => return Err(fault),
                };
            replica
                .commit(&update)
                .map_err(|e| Fault::Storage(e.to_string()))?;
            let counts = (update.revocations.len(), update.snapshots.len());
            Ok::<_, Fault>(Ok((next, counts, superseded)))
        })
        .await
        .map_err(|e| Fault::Storage(format!("apply task: {e}")))??;
        let (next, (revocations, snapshots), superseded) = match applied {
            Ok(applied) => applied,
            Err((fault, entries)) => {
                let held = entries
                    .into_iter()
                    .zip(sizes)
                    .map(|(entry, bytes)| Held { entry, bytes });
                self.pending.splice(..0, held);
                return Ok(Some(fault));
            }
        };
        self.pending_bytes -= sizes.iter().sum::<usize>();
        let seq = next.applied.seq;
        replace(&self.view, next);
        let mut st = lock(&self.status);
        st.ranges_applied += 1;
        st.pending_bytes = self.pending_bytes as u64;
        drop(st);
        tracing::info!(seq, revocations, snapshots, "applied a checkpointed range");
        self.resumed(seq, superseded);
        Ok(None)
    }

    /// A newer signed note of exactly the applied state: checked like any covering
    /// checkpoint, stored, and made the view's note (the view is fresh as of its time).
    async fn confirm(
        &mut self,
        view: &View,
        checkpoint: Arc<Verified>,
        at: u64,
    ) -> Result<Option<Fault>, Fault> {
        if let Err(detail) = apply::check_covers(
            &checkpoint.checkpoint,
            view.snapshot.as_deref(),
            view.unsnapshotted.values().min().copied(),
        ) {
            return Ok(Some(Fault::BadCheckpoint { seq: at, detail }));
        }
        let replica = self.replica.clone();
        let signed = checkpoint.clone();
        tokio::task::spawn_blocking(move || {
            let witnessed = signed.witness.as_ref().map(|w| w.note.to_string());
            replica.confirm_witnessed(&signed.note, witnessed.as_deref(), &signed.checkpoint)
        })
        .await
        .map_err(|e| Fault::Storage(format!("confirm task: {e}")))?
        .map_err(|e| Fault::Storage(e.to_string()))?;
        let mut next = view.clone();
        next.checkpoint = Some(checkpoint);
        replace(&self.view, next);
        self.resumed(view.applied.seq, Vec::new());
        Ok(None)
    }

    /// Records `fault` in the status (in force, counted by kind, and kept as the last
    /// integrity fault when it finds the registry's publications at fault); returns its
    /// report.
    fn report(&self, fault: &Fault) -> FaultReport {
        let mut st = lock(&self.status);
        let report = st
            .record_fault(fault.kind(), fault.to_string(), fault.seq())
            .clone();
        if fault.is_integrity() {
            st.last_integrity_fault = Some(report.clone());
        }
        report
    }
}

/// The registry's log-key statement (`GET /v1/log/key`) checked against `policy`: it must
/// be served, verify under `group` and name the policy's log key for this group's log.
pub async fn check_log_key(
    client: &reqwest::Client,
    config: &FollowConfig,
    group: Arc<dgsp_core::ManagerPublicKey>,
    policy: Arc<crate::witness::WitnessPolicy>,
) -> Result<(), Fault> {
    let Some(statement) = fetch::fetch_log_key(client, config).await? else {
        return Err(Fault::LogKey(
            "the registry serves no log key (GET /v1/log/key answers 404: it has no witnesses), and this gateway's witness policy requires witnessed checkpoints".into(),
        ));
    };
    // A SPHINCS+ verification: off the async runtime.
    tokio::task::spawn_blocking(move || policy.check_statement(&group, &statement))
        .await
        .map_err(|e| Fault::Storage(format!("log-key task: {e}")))?
        .map_err(Fault::LogKey)
}

/// `cp`, of a size already applied, against the replica's tree (and, for a legacy note, the
/// chain hash of entry `size`). Reads the replica: run off the async runtime.
fn check_earlier(
    replica: &Replica,
    what: &str,
    cp: &dgsp_core::checkpoint::Checkpoint,
) -> Result<(), Fault> {
    let storage = |e: crate::replica::ReplicaError| Fault::Storage(e.to_string());
    let tree_root = replica.root_at(cp.size).map_err(storage)?;
    let chain = match cp.size {
        0 => None,
        n => replica.hash_at(n).map_err(storage)?,
    };
    roots::check(what, cp, &tree_root, chain.as_ref()).map(|_| ())
}
