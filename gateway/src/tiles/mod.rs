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
//!    manager's signature, the record the checkpoint names, and zetas that give its signed
//!    root (`bad_snapshot_bundle`).
//! 4. The entries after the snapshot's `log_seq` (and the one at it) come from the entry
//!    bundles, each bundle's leaves checked against the verified hash tiles
//!    (`tile_mismatch`, `bad_tile`), then chain-checked (`chain`). The tree's edge at
//!    `log_seq`, read from verified tiles, plus those entries must give the checkpoint's
//!    root (`fork`), the snapshot's own entry must be among them, and the checkpoint must
//!    name the newest snapshot and hold every revocation among them (`bad_checkpoint`).
//! 5. One synced batch writes the base tree, the snapshot's zetas, those entries and the
//!    note ([`crate::replica::Replica::commit_bootstrap`]); the view is swapped in: ready.
//!
//! **Following** ([`TileFollower::follow`]): the checkpoint is polled no more often than its
//! `Cache-Control: max-age` (nor less often than `--poll-ms` allows, and at least every
//! [`MAX_POLL`]). A new note is verified as above and checked against the one in service
//! (`replayed_checkpoint`); one of the applied size must have the applied tree's root
//! (`fork`) and, when newer, becomes the view's note; a larger one must extend the applied
//! tree (its tiles' edge at the applied size is the applied tree's edge: `fork`), and the
//! new entries, read and checked as in step 4, are applied with the rules of the feed
//! follower ([`crate::follower::apply::apply_range`]) in one batch.
//!
//! **With a witness policy** (`--witness-policy`), each new checkpoint is read with
//! [`WITNESSED_CHECKPOINT`], the witnessed note of the same tree (both read again once when
//! it names another size: the mirror writes it just after `checkpoint`), verified as the
//! feed follower verifies the registry's (`unwitnessed_checkpoint`, `witness_quorum`,
//! `bad_witnessed_checkpoint`) and carried in the verified checkpoint: answers are fresh only
//! as of a witnessed checkpoint, and the note is stored beside the checkpoint in the replica.
//!
//! Any fault keeps the last verified view in service, is reported like the feed's
//! (`/readyz`, metrics) and retried with backoff.

pub mod client;
pub mod tree;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dgsp_core::revocation::SignedSnapshot;
use dgsp_wire::log::{unhex32, Entry, Hash};
use dgsp_wire::snapshot_bundle::{self, SnapshotBundle};
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
    /// Most entries applied in one step (bootstrap: the entries after the snapshot).
    pub max_entries: u64,
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
    /// backoff to 10 s, at most [`crate::follower::MAX_PENDING`] entries a step.
    pub fn new(url: impl Into<String>) -> Self {
        TilesConfig {
            url: url.into().trim_end_matches('/').to_owned(),
            poll: Duration::from_millis(500),
            max_backoff: Duration::from_secs(10),
            timeout: Duration::from_secs(10),
            max_entries: crate::follower::MAX_PENDING as u64,
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
    /// (the mirror writes it just after `checkpoint`), both are read once more. Returns the
    /// pause before the next poll, the note and the witnessed note.
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
            if same_size || !again {
                return Ok((pause, note, witnessed));
            }
            again = false;
        }
    }

    /// Starts an empty replica from the checkpoint `verified` and the snapshot it names.
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
        let path = snapshot_bundle::path(named.number);
        let bytes = self
            .client
            .get(&path, MAX_SNAPSHOT_BUNDLE_BYTES)
            .await?
            .bytes;
        let group = view.group.clone();
        let (snapshot, set) = tokio::task::spawn_blocking(move || {
            let bundle = SnapshotBundle::decode(&bytes).map_err(|e| e.to_string())?;
            let set = bundle.verify(&group, &named).map_err(|e| e.to_string())?;
            Ok::<_, String>((bundle.snapshot, set))
        })
        .await
        .map_err(|e| Fault::Storage(format!("snapshot bundle task: {e}")))?
        .map_err(bad_bundle)?;
        let cut = snapshot.record.log_seq;
        if cut >= cp.size {
            return Err(bad_bundle(format!(
                "it covers entry {cut}, the checkpoint only {} entries",
                cp.size
            )));
        }
        if cp.size - cut > self.config.max_entries {
            return Err(Fault::PendingLimit(format!(
                "{} entries after snapshot {} (at most {} a step)",
                cp.size - cut,
                named.number,
                self.config.max_entries
            )));
        }
        // The entry at the cut (for its hash) and every one after it.
        let mut entries = tree.entries(&self.client, cut.max(1), cp.size).await?;
        let (base_hash, rest) = if cut == 0 {
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
        tree.read_edge(&self.client, cut).await?;
        let edge = tree.frontier_at(cut)?;
        check_earlier(&mut tree, &self.client, &rest, cut).await?;
        let (leaves, frontier) = roots::range_tree(&edge, &base_hash, &rest, cp)?;
        // The snapshot's own entry must be among them; the checkpoint must name the newest
        // snapshot among them and hold every revocation among them.
        let mut found = false;
        let mut latest: Option<SignedSnapshot> = None;
        let mut first_revocation = None;
        for e in &rest {
            match e.kind.as_str() {
                "member_revoked" => {
                    apply::revoked_zetas(e)?;
                    first_revocation.get_or_insert(e.seq);
                }
                "snapshot_published" => {
                    let s = dgsp_wire::follow::parse_snapshot(e)?;
                    found |= s == snapshot;
                    latest = Some(s);
                }
                _ => {}
            }
        }
        if !found {
            return Err(bad_bundle(format!(
                "its snapshot_published entry is not among entries {}..={}",
                cut + 1,
                cp.size
            )));
        }
        apply::check_covers(cp, latest.as_ref(), first_revocation).map_err(|detail| {
            Fault::BadCheckpoint {
                seq: cp.size,
                detail,
            }
        })?;
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
            checkpoint: verified.note.to_string(),
            witnessed: verified.witness.as_ref().map(|w| w.note.to_string()),
        };
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
                checkpoint: Some(verified.clone()),
                snapshot: Some(snapshot),
                set,
                unsnapshotted: Arc::new(HashMap::new()),
                tree: frontier,
                witness_policy: view.witness_policy.clone(),
            },
        );
        let ms = started.elapsed().as_millis() as u64;
        let since_start = self.started.elapsed().as_millis() as u64;
        if let Some(t) = lock(&self.status).tiles.as_mut() {
            t.bootstrap_snapshot = Some(named.number);
            t.history_from_seq = Some(cut);
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
        if cp.size - applied > self.config.max_entries {
            return Err(Fault::PendingLimit(format!(
                "{} new entries in one checkpoint (at most {} a step)",
                cp.size - applied,
                self.config.max_entries
            )));
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
        let entries = tree.entries(&self.client, applied + 1, cp.size).await?;
        check_chain(applied, &view.applied.hash, &entries)?;
        check_earlier(&mut tree, &self.client, &entries, applied).await?;
        let replica = self.replica.clone();
        let current_view = view.clone();
        let (next, superseded) = tokio::task::spawn_blocking(move || {
            let at = verified.checkpoint.size;
            let (update, next, superseded) =
                apply::apply_range(&current_view, &entries, verified, at)?;
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
        let mut st = lock(&self.status);
        st.ranges_applied += 1;
        if let Some(t) = st.tiles.as_mut() {
            t.checkpoints_applied += 1;
        }
        drop(st);
        tracing::debug!(seq, "applied a checkpoint through the tiles");
        Ok(())
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
