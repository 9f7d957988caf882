//! Following the log through its tiles (`--tiles URL`): a replica that starts from the
//! newest checkpoint and the snapshot it names instead of replaying every entry, then
//! applies each new checkpoint's entries from the entry bundles.
//!
//! **Bootstrap** (an empty replica, [`TileFollower::bootstrap`]):
//! 1. `checkpoint`: the note must verify under the pinned key with this group's origin, not
//!    be dated beyond the clock tolerance ahead, and carry a signed time and a `snapshot`
//!    line (`bad_checkpoint`, `future_checkpoint`).
//! 2. The right-edge hash tiles at its size must give its root (`root_mismatch`; a tile of
//!    the wrong length is `bad_tile`) ([`tree::TileTree`]).
//! 3. `snapshot/<N>`, the bundle of the snapshot the checkpoint names, must verify: the
//!    manager's signature, the record the checkpoint names and its count, read from the
//!    bundle's header before any zeta is ([`bundle`]), then zetas that give its signed root
//!    (`bad_snapshot_bundle`).
//! 4. The entries after the snapshot's `log_seq` (and the one at it) come from the entry
//!    bundles, each bundle's leaves checked against the verified hash tiles
//!    (`tile_mismatch`, `bad_tile`), then chain-checked (`chain`), one step at a time: at
//!    most [`TilesConfig::max_entries`] entries and [`TilesConfig::max_bytes`] of them parsed.
//!    A step that does not reach the checkpoint ends at the last `checkpoint` entry among its
//!    entries, which covers it (none: `pending_limit`). The tree's edge at `log_seq`, read
//!    from verified tiles, plus the step's entries must give the covering checkpoint's root
//!    (`fork`), the snapshot's own entry must be among them, and the covering checkpoint must
//!    name the newest snapshot and hold every revocation among them that revokes a zeta
//!    (`bad_checkpoint`: the canonical rule, [`dgsp_wire::coverage::Covers`]).
//! 5. One synced batch writes the base tree, the snapshot's zetas, that step's entries and
//!    the covering note ([`crate::replica::Replica::commit_bootstrap`]); the view is swapped
//!    in. The steps after it are applied as following applies them, each its own batch, up
//!    to the checkpoint: ready. Every state written is a checkpoint's, so a gateway stopped
//!    between steps resumes from the last.
//!
//! **Following** ([`TileFollower::follow`]): the checkpoint is polled no more often than its
//! `Cache-Control: max-age` (nor less often than `--poll-ms` allows, and at least every
//! [`MAX_POLL`]). A new note is verified as above and checked against the one in service
//! (`replayed_checkpoint`); one of the applied size must have the applied tree's root
//! (`fork`) and, when newer, becomes the view's note; a larger one must extend the applied
//! tree (its tiles' edge at the applied size is the applied tree's edge: `fork`), and the
//! new entries, read and checked in steps as in step 4, are applied with the rules of the
//! feed follower ([`crate::follower::apply::apply_range`]), one batch a step.
//!
//! **With a witness policy** (`--witness-policy`), each new checkpoint is read with
//! [`WITNESSED_CHECKPOINT`], the witnessed note of the same tree (both read again once when
//! it names another size: the mirror writes it just after `checkpoint`; still another size,
//! as a cache serving one older than the other gives, is `unsettled`, not an integrity fault,
//! and read again later), verified as the feed follower verifies the registry's
//! (`unwitnessed_checkpoint`, `witness_quorum`, `bad_witnessed_checkpoint`) and carried in
//! the verified checkpoint: answers are fresh only as of a witnessed checkpoint, and the note
//! is stored beside the checkpoint in the replica.
//!
//! Any fault keeps the last verified view in service, is reported like the feed's
//! (`/readyz`, metrics) and retried with backoff.

pub mod bundle;
pub mod client;
pub mod tree;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dgsp_wire::coverage::Covers;
use dgsp_wire::log::{unhex32, Entry, Hash};
use tokio::sync::watch;

use crate::clock::WallClock;
use crate::follower::fetch::MAX_CHECKPOINT_BYTES;
use crate::follower::{apply, roots, Fault};
use crate::replica::{Applied, Base, Replica, Update};
use crate::state::{
    current, lock, now_ms, replace, SharedStatus, SharedView, TilesStatus, Verified, View,
};
use client::TileClient;
use tree::TileTree;

/// Longest pause between two reads of the checkpoint, whatever its `max-age` says.
pub const MAX_POLL: Duration = Duration::from_secs(10);

/// The object beside `checkpoint` holding the witnessed note of its tree (written by the
/// registry's mirror when it has witnesses; docs/format.md, "Tiles").
pub const WITNESSED_CHECKPOINT: &str = "checkpoint.witnessed";

/// Largest witnessed note read ([`dgsp_wire::note::signed_note::MAX_NOTE_BYTES`]).
pub const MAX_WITNESSED_BYTES: usize = dgsp_wire::note::signed_note::MAX_NOTE_BYTES;

/// Largest snapshot bundle read: 2^26 zetas.
pub const MAX_SNAPSHOT_BUNDLE_BYTES: usize = 1 << 30;

/// How the gateway reads tiles.
#[derive(Clone, Debug)]
pub struct TilesConfig {
    /// The base URL: `checkpoint`, `tile/...` and `snapshot/...` are under it.
    pub url: String,
    /// Shortest pause between reads of the checkpoint (its `max-age` may make it longer).
    pub poll: Duration,
    /// Longest pause after repeated faults.
    pub max_backoff: Duration,
    /// Stall timeout of every read.
    pub timeout: Duration,
    /// Most entries read and applied in one step; more are applied in several steps, each
    /// covered by a `checkpoint` entry of the log.
    pub max_entries: u64,
    /// Most memory one step's entries hold, by their parsed size (as the feed's pending
    /// entries: `--max-pending-bytes`); a step ends before the entry that would pass it.
    pub max_bytes: usize,
    /// Read the tiles from this store (an S3 bucket, with credentials) instead of over
    /// HTTP; `url` then only names it.
    pub store: Option<Arc<dyn dgsp_tilestore::TileStore>>,
    /// With a witness policy: the oldest a witnessed note's cosignatures may be (the
    /// gateway's `--max-staleness-secs`).
    pub witness_max_age: Duration,
    /// The CA certificates an `https://` base's certificate must chain to
    /// (`--registry-ca-file`); empty: the system's roots.
    pub roots: Vec<reqwest::Certificate>,
}

impl TilesConfig {
    /// Defaults for `url`: 500 ms polls (or the checkpoint's `max-age`), 10 s timeouts,
    /// backoff to 10 s, at most [`crate::follower::MAX_PENDING`] entries and
    /// [`crate::follower::MAX_PENDING_BYTES`] of them parsed a step.
    pub fn new(url: impl Into<String>) -> Self {
        TilesConfig {
            url: url.into().trim_end_matches('/').to_owned(),
            poll: Duration::from_millis(500),
            max_backoff: Duration::from_secs(10),
            timeout: Duration::from_secs(10),
            max_entries: crate::follower::MAX_PENDING as u64,
            max_bytes: crate::follower::MAX_PENDING_BYTES,
            store: None,
            witness_max_age: Duration::from_secs(60),
            roots: Vec::new(),
        }
    }

    /// The reader this configuration names.
    fn client(&self) -> Result<TileClient, Fault> {
        match &self.store {
            Some(store) => TileClient::from_store(&self.url, store.clone(), self.timeout),
            None => TileClient::new(&self.url, self.timeout, &self.roots),
        }
    }
}

/// The follower that reads tiles.
pub struct TileFollower {
    config: TilesConfig,
    client: TileClient,
    replica: Arc<Replica>,
    view: SharedView,
    status: SharedStatus,
    clock: WallClock,
    /// The last note handled without a fault, with its witnessed note (with a policy): not
    /// verified again while they are served.
    last_note: Option<(String, Option<String>)>,
    started: Instant,
}

impl TileFollower {
    /// A follower of the tiles at `config.url`, applying to `view` and `replica`.
    pub fn new(
        config: TilesConfig,
        replica: Arc<Replica>,
        view: SharedView,
        status: SharedStatus,
        clock: WallClock,
    ) -> Result<Self, Fault> {
        let client = config.client()?;
        {
            let mut st = lock(&status);
            let base = replica
                .tiles_base()
                .map_err(|e| Fault::Storage(e.to_string()))?;
            st.tiles = Some(TilesStatus {
                url: config.url.clone(),
                bootstrap_snapshot: base.map(|(_, n)| n),
                history_from_seq: base.map(|(seq, _)| seq),
                ..TilesStatus::default()
            });
        }
        Ok(TileFollower {
            config,
            client,
            replica,
            view,
            status,
            clock,
            last_note: None,
            started: Instant::now(),
        })
    }

    /// Polls until `stop` turns true. Reads are cancelled at once; a write in progress
    /// completes first (it runs on a blocking thread), so the replica is never half-written.
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut failures = 0u32;
        loop {
            let pause = tokio::select! {
                _ = stop.changed() => return,
                r = self.step() => match r {
                    Ok(pause) => {
                        failures = 0;
                        pause
                    }
                    Err(fault) => {
                        failures = failures.saturating_add(1);
                        tracing::warn!(kind = fault.kind(), error = %fault, "tiles refused; serving the last verified state");
                        self.report(&fault);
                        let exp = self.config.poll.saturating_mul(1 << failures.min(8));
                        exp.min(self.config.max_backoff)
                    }
                }
            };
            tokio::select! {
                _ = stop.changed() => return,
                _ = tokio::time::sleep(pause) => {}
            }
        }
    }

    fn report(&self, fault: &Fault) {
        let mut st = lock(&self.status);
        st.record_fault(fault.kind(), fault.to_string(), fault.seq());
        if fault.is_integrity() {
            st.last_integrity_fault = st.fault.clone();
        }
    }

    /// One poll: the checkpoint, and whatever it makes applicable. Returns the pause before
    /// the next.
    pub async fn step(&mut self) -> Result<Duration, Fault> {
        let witnessing = current(&self.view).witness_policy.is_some();
        let (pause, note, witnessed) = self.read_checkpoint(witnessing).await?;
        let read = (note, witnessed);
        if self.last_note.as_ref() != Some(&read) {
            let (note, witnessed) = read.clone();
            let view = current(&self.view);
            let cp = apply::check_note(&view, &note)
                .map_err(|detail| Fault::BadCheckpoint { seq: 0, detail })?;
            self.clock
                .check_not_ahead(&cp)
                .map_err(|detail| Fault::FutureCheckpoint {
                    seq: cp.size,
                    detail: format!("the published checkpoint: {detail}"),
                })?;
            {
                let mut st = lock(&self.status);
                st.registry_checkpoint = Some((cp.size, cp.time_unix_ms));
                st.registry_head = st.registry_head.max(cp.size);
            }
            let witness = match (&view.witness_policy, witnessed) {
                (None, _) => None,
                (Some(_), None) => {
                    return Err(Fault::Unwitnessed {
                        seq: cp.size,
                        detail: format!(
                            "the tiles hold no {WITNESSED_CHECKPOINT} beside their checkpoint, and this gateway's witness policy requires one"
                        ),
                    })
                }
                (Some(policy), Some(witnessed)) => Some(
                    policy
                        .verify(
                            &witnessed,
                            &cp,
                            self.clock.now_unix_ms(),
                            Some(self.config.witness_max_age),
                            self.clock.tolerance(),
                        )
                        .map_err(|refusal| refusal.into_fault(cp.size))?,
                ),
            };
            let verified = Arc::new(Verified::new(cp, note).with_witness(witness));
            if view.applied.seq == 0 && view.snapshot.is_none() {
                self.bootstrap(&view, verified).await?;
            } else {
                self.follow(&view, verified).await?;
            }
            self.last_note = Some(read);
        }
        let mut st = lock(&self.status);
        st.fault = None;
        st.last_sync_unix_ms = Some(now_ms());
        st.fetched = current(&self.view).applied.seq;
        Ok(pause)
    }

    /// Reads `checkpoint` and, when `witnessing`, [`WITNESSED_CHECKPOINT`] (`None` when the
    /// tiles have none); when the witnessed note names another size than the checkpoint
    /// (the mirror writes it just after `checkpoint`), both are read once more, and another
    /// size again is [`Fault::Unsettled`] (a cache holding one older than the other: read
    /// again later). Returns the pause before the next poll, the note and the witnessed note.
    async fn read_checkpoint(
        &self,
        witnessing: bool,
    ) -> Result<(Duration, String, Option<String>), Fault> {
        let mut again = true;
        loop {
            let fetched = self.client.get("checkpoint", MAX_CHECKPOINT_BYTES).await?;
            let pause = fetched
                .max_age
                .unwrap_or_default()
                .max(self.config.poll)
                .min(MAX_POLL);
            let note = String::from_utf8(fetched.bytes)
                .map_err(|_| Fault::MalformedPage("the checkpoint is not UTF-8".into()))?;
            if !witnessing {
                return Ok((pause, note, None));
            }
            let witnessed = match self
                .client
                .get(WITNESSED_CHECKPOINT, MAX_WITNESSED_BYTES)
                .await
            {
                Ok(w) => Some(String::from_utf8(w.bytes).map_err(|_| {
                    Fault::MalformedPage(format!("{WITNESSED_CHECKPOINT} is not UTF-8"))
                })?),
                Err(Fault::HttpStatus(404)) => None,
                Err(e) => return Err(e),
            };
            let size = |n: &str| n.lines().nth(1).map(str::to_owned);
            let same_size = witnessed.as_deref().is_none_or(|w| size(w) == size(&note));
            if same_size {
                return Ok((pause, note, witnessed));
            }
            if !again {
                let shown = |n: Option<String>| n.unwrap_or_else(|| "no".into());
                return Err(Fault::Unsettled(format!(
                    "{WITNESSED_CHECKPOINT} names a tree of {} entries, checkpoint one of {}, read twice",
                    shown(witnessed.as_deref().and_then(size)),
                    shown(size(&note))
                )));
            }
            again = false;
        }
    }

    /// Starts an empty replica from the checkpoint `verified` and the snapshot it names:
    /// the first step written with the base ([`crate::replica::Replica::commit_bootstrap`]),
    /// the steps after it as following writes them ([`TileFollower::advance`]).
    pub async fn bootstrap(&mut self, view: &View, verified: Arc<Verified>) -> Result<(), Fault> {
        let started = Instant::now();
        let cp = &verified.checkpoint;
        let (Some(_), Some(named)) = (cp.time_unix_ms, cp.snapshot) else {
            return Err(Fault::BadCheckpoint {
                seq: cp.size,
                detail: "a checkpoint without a signed time and a snapshot line cannot start a replica from tiles".into(),
            });
        };
        let mut tree = TileTree::open(&self.client, cp.size, &cp.root).await?;
        let bad_bundle = |detail: String| Fault::BadSnapshotBundle {
            number: named.number,
            detail,
        };
        let (snapshot, set) = bundle::read(&self.client, view.group.clone(), named).await?;
        let cut = snapshot.record.log_seq;
        if cut >= cp.size {
            return Err(bad_bundle(format!(
                "it covers entry {cut}, the checkpoint only {} entries",
                cp.size
            )));
        }
        // The entry at the cut (for its hash) and those after it, one step's worth.
        let mut entries = self.read_step(&mut tree, cut.max(1), cp.size).await?;
        let (base_hash, mut rest) = if cut == 0 {
            ([0u8; 32], entries)
        } else {
            let rest = entries.split_off(1);
            let at = &entries[0];
            let prev = unhex32(&at.prev_hash).unwrap_or_default();
            at.check(cut - 1, &prev).map_err(|e| Fault::Chain {
                seq: cut,
                detail: e.to_string(),
            })?;
            (at.hash_bytes().unwrap_or_default(), rest)
        };
        check_chain(cut, &base_hash, &rest)?;
        if cut == 0 {
            if let Some(first) = rest.first() {
                apply::check_group(view, first)?;
            }
        }
        // What covers this step: the checkpoint when the step reaches it, else the last
        // `checkpoint` entry among its entries (verified here: it is in the log, signed).
        let (covering, at) = if rest.last().map(|e| e.seq) == Some(cp.size) {
            (verified.clone(), cp.size)
        } else {
            let e = self.cut_at_checkpoint(&mut rest, cut, cp.size)?;
            (Arc::new(apply::check_checkpoint(view, &e)?), e.seq)
        };
        tree.read_edge(&self.client, cut).await?;
        let edge = tree.frontier_at(cut)?;
        check_earlier(&mut tree, &self.client, &rest, cut).await?;
        let (leaves, frontier) = roots::range_tree(&edge, &base_hash, &rest, &covering.checkpoint)?;
        // The snapshot's own entry must be among them; the covering checkpoint must name the
        // newest snapshot among them and hold every revocation among them that revokes a
        // zeta (the log's rule: `dgsp_wire::coverage`).
        let mut found = false;
        let mut covers = Covers::default();
        for e in &rest {
            match e.kind.as_str() {
                "member_revoked" => covers.revoked(e.seq, &apply::revoked_zetas(e)?),
                "snapshot_published" => {
                    let s = dgsp_wire::follow::parse_snapshot(e)?;
                    found |= s == snapshot;
                    covers.published(e.seq, Arc::new(s));
                }
                _ => {}
            }
        }
        let covered = covering.checkpoint.size;
        if !found {
            return Err(bad_bundle(format!(
                "its snapshot_published entry is not among entries {}..={covered}",
                cut + 1,
            )));
        }
        let (newest, uncovered) = covers.at(covered);
        apply::check_covers(&covering.checkpoint, newest.as_deref(), uncovered)
            .map_err(|detail| Fault::BadCheckpoint { seq: at, detail })?;
        let base = Base {
            size: cut,
            hash: base_hash,
            snapshot: named.number,
            nodes: tree.edge_nodes(cut)?,
        };
        let last = rest.last().expect("the snapshot's entry is among them");
        let applied = Applied {
            seq: last.seq,
            hash: last.hash_bytes().unwrap_or_default(),
            time_ms: last.time_ms,
        };
        let snapshot = Arc::new(snapshot);
        let set = Arc::new(set);
        let update = Update {
            hashes: rest
                .iter()
                .map(|e| (e.seq, e.hash_bytes().unwrap_or_default()))
                .collect(),
            leaves,
            tree: frontier.clone(),
            applied,
            revocations: set.iter().map(|z| (*z, cut)).collect(),
            snapshots: vec![snapshot.clone()],
            checkpoint: covering.note.to_string(),
            witnessed: covering.witness.as_ref().map(|w| w.note.to_string()),
        };
        drop(rest);
        let replica = self.replica.clone();
        tokio::task::spawn_blocking(move || replica.commit_bootstrap(&base, &update))
            .await
            .map_err(|e| Fault::Storage(format!("bootstrap task: {e}")))?
            .map_err(|e| Fault::Storage(e.to_string()))?;
        let count = set.len();
        replace(
            &self.view,
            View {
                group: view.group.clone(),
                applied,
                checkpoint: Some(covering),
                snapshot: Some(snapshot),
                set,
                unsnapshotted: Arc::new(HashMap::new()),
                tree: frontier,
                witness_policy: view.witness_policy.clone(),
            },
        );
        if let Some(t) = lock(&self.status).tiles.as_mut() {
            t.bootstrap_snapshot = Some(named.number);
            t.history_from_seq = Some(cut);
        }
        // The rest, in steps, as a replica that holds entries follows.
        tree.forget_before(applied.seq);
        self.advance(current(&self.view), &mut tree, verified.clone())
            .await?;
        let ms = started.elapsed().as_millis() as u64;
        let since_start = self.started.elapsed().as_millis() as u64;
        if let Some(t) = lock(&self.status).tiles.as_mut() {
            t.bootstrap_ms = Some(since_start);
            t.checkpoints_applied += 1;
        }
        tracing::info!(
            size = cp.size,
            snapshot = named.number,
            zetas = count,
            entries_after_snapshot = cp.size - cut,
            ms,
            "started from the tiles"
        );
        Ok(())
    }

    /// Applies a checkpoint of a replica that holds entries: the same state with a newer
    /// time, or the entries up to its size.
    pub async fn follow(&mut self, view: &View, verified: Arc<Verified>) -> Result<(), Fault> {
        let cp = &verified.checkpoint;
        if let Some(held) = view.checkpoint.as_deref() {
            if held.time_unix_ms().is_some() {
                if cp.time_unix_ms.is_none() {
                    return Err(Fault::ReplayedCheckpoint(
                        "an untimed checkpoint after timed ones".into(),
                    ));
                }
                apply::check_order(cp, &held.checkpoint)?;
            }
        }
        let applied = view.applied.seq;
        if cp.size < applied {
            return Err(Fault::ReplayedCheckpoint(format!(
                "the published checkpoint covers {} entries, {applied} are applied",
                cp.size
            )));
        }
        if cp.size == applied {
            roots::check(
                "the published checkpoint",
                cp,
                &view.tree.root(),
                Some(&view.applied.hash),
            )?;
            let held = view.checkpoint.as_deref();
            let newer = cp.time_unix_ms > held.and_then(|c| c.time_unix_ms());
            // The same note, now with the witnessed note the held one lacks (or a newer
            // witnessed note of the same checkpoint).
            let witnessed = verified.witness.is_some()
                && held.is_some_and(|h| h.note == verified.note && h.witness != verified.witness);
            if !newer && !witnessed {
                return Ok(());
            }
            apply::check_covers(
                cp,
                view.snapshot.as_deref(),
                view.unsnapshotted.values().min().copied(),
            )
            .map_err(|detail| Fault::BadCheckpoint {
                seq: cp.size,
                detail,
            })?;
            let replica = self.replica.clone();
            let signed = verified.clone();
            tokio::task::spawn_blocking(move || {
                let witnessed = signed.witness.as_ref().map(|w| w.note.to_string());
                replica.confirm_witnessed(&signed.note, witnessed.as_deref(), &signed.checkpoint)
            })
            .await
            .map_err(|e| Fault::Storage(format!("confirm task: {e}")))?
            .map_err(|e| Fault::Storage(e.to_string()))?;
            let mut next = view.clone();
            next.checkpoint = Some(verified);
            replace(&self.view, next);
            return Ok(());
        }
        let mut tree = TileTree::open(&self.client, cp.size, &cp.root).await?;
        // Consistency: the new tree's first `applied` entries are the applied tree.
        tree.read_edge(&self.client, applied).await?;
        let old = tree.frontier_at(applied)?;
        if old != view.tree {
            return Err(Fault::Fork {
                seq: applied,
                detail: format!(
                    "the checkpoint of {} entries does not extend the applied tree: its tiles give {} at {applied} entries, the applied tree is {}",
                    cp.size,
                    hex::encode(old.root()),
                    hex::encode(view.tree.root())
                ),
            });
        }
        tree.forget_before(applied);
        self.advance(current(&self.view), &mut tree, verified)
            .await?;
        if let Some(t) = lock(&self.status).tiles.as_mut() {
            t.checkpoints_applied += 1;
        }
        Ok(())
    }

    /// Applies the entries after `view`'s up to `verified`'s size, whose verified tiles
    /// `tree` holds (the applied tree is its prefix), in steps ([`TileFollower::read_step`]):
    /// each step is covered by the last `checkpoint` entry among its entries (the last step
    /// by `verified`), applied with the feed follower's rules
    /// ([`apply::apply_range`]) and written in one batch, and its view swapped in.
    async fn advance(
        &mut self,
        mut view: Arc<View>,
        tree: &mut TileTree,
        verified: Arc<Verified>,
    ) -> Result<(), Fault> {
        let size = verified.checkpoint.size;
        while view.applied.seq < size {
            let applied = view.applied.seq;
            let mut entries = self.read_step(tree, applied + 1, size).await?;
            check_chain(applied, &view.applied.hash, &entries)?;
            let covering = if entries.last().map(|e| e.seq) == Some(size) {
                None
            } else {
                Some(self.cut_at_checkpoint(&mut entries, applied, size)?)
            };
            check_earlier(tree, &self.client, &entries, applied).await?;
            let replica = self.replica.clone();
            let last = verified.clone();
            let (next, superseded) = tokio::task::spawn_blocking(move || {
                let (checkpoint, at) = match covering {
                    None => (last, size),
                    Some(e) => (Arc::new(apply::check_checkpoint(&view, &e)?), e.seq),
                };
                let (update, next, superseded) =
                    apply::apply_range(&view, &entries, checkpoint, at)?;
                replica
                    .commit(&update)
                    .map_err(|e| Fault::Storage(e.to_string()))?;
                Ok::<_, Fault>((next, superseded))
            })
            .await
            .map_err(|e| Fault::Storage(format!("apply task: {e}")))??;
            let seq = next.applied.seq;
            replace(&self.view, next);
            for fault in superseded {
                tracing::warn!(kind = fault.kind(), error = %fault, "a superseded snapshot does not match the log");
                self.report(&fault);
            }
            lock(&self.status).ranges_applied += 1;
            tracing::debug!(seq, "applied a step through the tiles");
            tree.forget_before(seq);
            view = current(&self.view);
        }
        Ok(())
    }

    /// The entries `from..=to` (`to` at most the tree's size), or as many of them as one
    /// step holds: at most [`TilesConfig::max_entries`] entries and
    /// [`TilesConfig::max_bytes`] of them parsed.
    async fn read_step(
        &self,
        tree: &mut TileTree,
        from: u64,
        to: u64,
    ) -> Result<Vec<Entry>, Fault> {
        let last = to.min(from.saturating_add(self.config.max_entries.max(1) - 1));
        tree.entries(&self.client, from, last, self.config.max_bytes)
            .await
    }

    /// Ends `entries` (a step of the entries after `after`, short of `to`) at the last
    /// `checkpoint` entry among them that covers more than `after` entries, and returns
    /// that entry (the step's covering checkpoint, its note not yet verified). None among
    /// them: `pending_limit`, as the feed's entries that no checkpoint covers within its
    /// bounds.
    fn cut_at_checkpoint(
        &self,
        entries: &mut Vec<Entry>,
        after: u64,
        to: u64,
    ) -> Result<Entry, Fault> {
        let read = entries.last().map_or(after, |e| e.seq);
        let mut found = None;
        for e in entries.iter().rev().filter(|e| e.kind == "checkpoint") {
            let covers = roots::claim(e)?.size;
            if covers > after {
                found = Some((e.clone(), covers));
                break;
            }
        }
        let Some((e, covers)) = found else {
            return Err(Fault::PendingLimit(format!(
                "entries {}..={read} of the {to} to apply, no checkpoint among them (a step holds at most {} entries and {} bytes of them parsed, --max-pending-bytes)",
                after + 1,
                self.config.max_entries,
                self.config.max_bytes
            )));
        };
        entries.truncate((covers - after) as usize);
        Ok(e)
    }
}

/// `entries` chain from `(after, hash)`.
fn check_chain(after: u64, hash: &Hash, entries: &[Entry]) -> Result<(), Fault> {
    let (mut prev_seq, mut prev) = (after, *hash);
    for e in entries {
        e.check(prev_seq, &prev).map_err(|err| Fault::Chain {
            seq: e.seq,
            detail: err.to_string(),
        })?;
        prev_seq = e.seq;
        prev = e.hash_bytes().unwrap_or_default();
    }
    Ok(())
}

/// The `checkpoint` entries among `entries` naming a size before `after`: their roots
/// against the verified tiles (which hold every older tree).
async fn check_earlier(
    tree: &mut TileTree,
    client: &TileClient,
    entries: &[Entry],
    after: u64,
) -> Result<(), Fault> {
    for (seq, cp) in roots::earlier(entries, after)? {
        tree.read_edge(client, cp.size).await?;
        let root = tree.frontier_at(cp.size)?.root();
        roots::check(&format!("the checkpoint at entry {seq}"), &cp, &root, None)?;
    }
    Ok(())
}

/// Entry 1 as the tiles publish it, from the first entry bundle (its width from the
/// checkpoint's size line; the checkpoint is verified once the key is known): resolves a
/// fingerprint anchor without a registry (the key must hash to the fingerprint).
pub async fn first_entry(config: &TilesConfig) -> Result<Entry, Fault> {
    let client = config.client()?;
    let note = client.get("checkpoint", MAX_CHECKPOINT_BYTES).await?.bytes;
    let size: u64 = std::str::from_utf8(&note)
        .ok()
        .and_then(|n| n.lines().nth(1))
        .and_then(|l| l.parse().ok())
        .filter(|s| *s > 0)
        .ok_or_else(|| Fault::MalformedPage("the checkpoint has no size line".into()))?;
    let width = size.min(256) as u16;
    let bundle = dgsp_wire::tiles::Tile {
        level: None,
        index: 0,
        width,
    };
    let path = bundle.path();
    let bytes = client.get(&path, tree::MAX_BUNDLE_BYTES).await?.bytes;
    let items = dgsp_wire::tiles::decode_bundle(&bytes, usize::from(width)).map_err(|e| {
        Fault::BadTile {
            path: path.clone(),
            detail: e.to_string(),
        }
    })?;
    serde_json::from_slice(items[0]).map_err(|e| Fault::MalformedEntry {
        seq: 1,
        detail: e.to_string(),
    })
}
