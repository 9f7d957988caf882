//! Following the registry's public feed: fetch, chain-check, hold, and apply only what a
//! checkpoint signed by the pinned key covers.
//!
//! Each poll asks for the page that starts at the gateway's own tip (the last entry it holds),
//! so the first entry served must be one it already has, with the same hash: a registry that
//! rewrote history (a fork) or lost it (a rollback) is caught before anything new is read.
//! New entries must chain; they wait in a pending list until a `checkpoint` entry arrives whose
//! note verifies and whose head is the hash of the pending entry at its size. That range is
//! then checked as a whole ([`apply::apply_range`]: group, revocations, snapshot signatures,
//! succession and roots), written to the replica in one batch and swapped in as the new view.
//! Any fault discards the pending list, keeps the last view in service, is reported in
//! `/readyz` and metrics, and the poll is retried with backoff from the last applied entry.

pub mod apply;
mod fault;

use std::sync::Arc;
use std::time::Duration;

use dgsp_registry::api::public::Entries;
use dgsp_registry::log::{Entry, Hash};
use tokio::sync::watch;

pub use fault::Fault;

use crate::replica::Replica;
use crate::state::{current, now_ms, SharedStatus, SharedView};

/// Most entries held pending before the registry must have checkpointed them: the registry
/// checkpoints after every publishing step (a few hundred entries under heavy load), so a feed
/// that goes this long without one is refused rather than buffered without bound.
pub const MAX_PENDING: usize = 200_000;

/// Largest feed page read (1000 entries of the largest parameter set are well under this); a
/// registry sending more is refused instead of exhausting memory.
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
}

impl FollowConfig {
    /// Defaults for `registry`: pages of 1000, 500 ms polls, 10 s timeouts, backoff to 10 s.
    pub fn new(registry: impl Into<String>) -> Self {
        FollowConfig {
            registry: registry.into().trim_end_matches('/').to_owned(),
            page: 1000,
            poll: Duration::from_millis(500),
            max_backoff: Duration::from_secs(10),
            timeout: Duration::from_secs(10),
        }
    }
}

/// The follower task.
pub struct Follower {
    config: FollowConfig,
    client: reqwest::Client,
    replica: Arc<Replica>,
    view: SharedView,
    status: SharedStatus,
    pending: Vec<Entry>,
}

impl Follower {
    /// A follower applying to `view` and `replica`.
    pub fn new(
        config: FollowConfig,
        replica: Arc<Replica>,
        view: SharedView,
        status: SharedStatus,
    ) -> Result<Self, Fault> {
        Ok(Follower {
            client: client(config.timeout)?,
            config,
            replica,
            view,
            status,
            pending: Vec::new(),
        })
    }

    /// Polls until `stop` turns true. Fetches and waits are cancelled at once; an apply in
    /// progress completes first, so the replica is never left half-written.
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut failures = 0u32;
        loop {
            let after = self.tip().0.saturating_sub(1);
            let fetched = tokio::select! {
                _ = stop.changed() => return,
                r = fetch(&self.client, &self.config, after) => r,
            };
            let outcome = match fetched {
                Ok(page) => self.process(page).await,
                Err(f) => Err(f),
            };
            let pause = match outcome {
                Ok(more) => {
                    failures = 0;
                    if more {
                        Duration::ZERO
                    } else {
                        self.config.poll
                    }
                }
                Err(fault) => {
                    failures = failures.saturating_add(1);
                    tracing::warn!(kind = fault.kind(), error = %fault, "registry feed refused; serving the last verified state");
                    self.pending.clear();
                    self.status.lock().expect("status lock").record_fault(
                        fault.kind(),
                        fault.to_string(),
                        fault.seq(),
                    );
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

    /// The last entry held: pending, else applied.
    fn tip(&self) -> (u64, Hash) {
        match self.pending.last() {
            Some(e) => (e.seq, e.hash_bytes().unwrap_or_default()),
            None => {
                let v = current(&self.view);
                (v.applied.seq, v.applied.hash)
            }
        }
    }

    /// Checks and holds one page; applies what checkpoints in it cover. Returns whether the
    /// registry has more to fetch.
    async fn process(&mut self, page: Entries) -> Result<bool, Fault> {
        let (tip_seq, tip_hash) = self.tip();
        if page.head_seq < tip_seq {
            return Err(Fault::Rollback {
                head: page.head_seq,
                applied: tip_seq,
            });
        }
        let mut entries = page.entries.into_iter();
        if tip_seq > 0 {
            let first = entries.next().ok_or_else(|| {
                Fault::MalformedPage(format!("the page does not start with entry {tip_seq}"))
            })?;
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
            let is_checkpoint = e.kind == "checkpoint";
            if self.pending.len() >= MAX_PENDING {
                return Err(Fault::BadCheckpoint {
                    seq: e.seq,
                    detail: format!("no signed checkpoint in the last {MAX_PENDING} entries"),
                });
            }
            self.pending.push(e);
            if is_checkpoint {
                self.on_checkpoint().await?;
            }
        }
        let mut st = self.status.lock().expect("status lock");
        st.registry_head = page.head_seq;
        st.fetched = prev_seq;
        let substantive: Vec<&Entry> = self
            .pending
            .iter()
            .filter(|e| e.kind != "checkpoint")
            .collect();
        st.pending_substantive = substantive.len() as u64;
        st.oldest_pending_ms = substantive.first().map(|e| e.time_ms);
        st.fault = None;
        let more = prev_seq < page.head_seq;
        if !more {
            st.synced_unix_ms = Some(now_ms());
        }
        Ok(more)
    }

    /// The last pending entry is a checkpoint: verify it and apply what it covers.
    async fn on_checkpoint(&mut self) -> Result<(), Fault> {
        let view = current(&self.view);
        let cp_entry = self.pending.last().expect("just pushed").clone();
        let cp_seq = cp_entry.seq;
        // A SPHINCS+ verification: off the async runtime.
        let v = view.clone();
        let (cp, note) =
            tokio::task::spawn_blocking(move || apply::check_checkpoint(&v, &cp_entry))
                .await
                .map_err(|e| Fault::Storage(format!("checkpoint task: {e}")))??;
        if cp.size <= view.applied.seq {
            // Old news: it must name the entry already applied at its size.
            let ours = match cp.size {
                0 => None,
                n => self
                    .replica
                    .hash_at(n)
                    .map_err(|e| Fault::Storage(e.to_string()))?,
            };
            return match ours {
                Some(h) if h != cp.head => Err(Fault::Fork {
                    seq: cp.size,
                    detail: "a signed checkpoint names a different entry than the one applied here"
                        .into(),
                }),
                _ => Ok(()),
            };
        }
        // The pending entries start right after `applied`, so the covered ones are a prefix.
        let covered = (cp.size - view.applied.seq) as usize;
        match self.pending.get(covered - 1) {
            Some(last) if last.seq == cp.size => {
                if last.hash_bytes().ok() != Some(cp.head) {
                    return Err(Fault::Fork {
                        seq: cp.size,
                        detail: "the signed checkpoint's head differs from the feed's entry".into(),
                    });
                }
            }
            _ => {
                return Err(Fault::BadCheckpoint {
                    seq: cp_seq,
                    detail: format!("it covers entry {} which the feed did not serve", cp.size),
                })
            }
        }
        // Taken out, not copied: on a fault the caller drops everything pending anyway.
        let entries: Vec<Entry> = self.pending.drain(..covered).collect();
        let replica = self.replica.clone();
        let (next, revocations, snapshots) = tokio::task::spawn_blocking(move || {
            let (update, next) = apply::apply_range(&view, &entries, note)?;
            replica
                .commit(&update)
                .map_err(|e| Fault::Storage(e.to_string()))?;
            Ok::<_, Fault>((next, update.revocations.len(), update.snapshots.len()))
        })
        .await
        .map_err(|e| Fault::Storage(format!("apply task: {e}")))??;
        let seq = next.applied.seq;
        *self.view.write().expect("view lock") = Arc::new(next);
        self.status.lock().expect("status lock").ranges_applied += 1;
        tracing::info!(seq, revocations, snapshots, "applied a checkpointed range");
        Ok(())
    }
}

/// The HTTP client used for the registry.
pub fn client(timeout: Duration) -> Result<reqwest::Client, Fault> {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .user_agent(concat!("dgsp-gateway/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Fault::Unreachable(e.to_string()))
}

/// Fetches the feed page after `after`.
pub async fn fetch(
    client: &reqwest::Client,
    config: &FollowConfig,
    after: u64,
) -> Result<Entries, Fault> {
    let url = format!("{}/v1/log/entries", config.registry);
    let resp = client
        .get(&url)
        .query(&[("after", after), ("limit", config.page as u64)])
        .send()
        .await
        .map_err(|e| Fault::Unreachable(format!("{url}: {e}")))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(Fault::HttpStatus(status.as_u16()));
    }
    let mut resp = resp;
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| Fault::MalformedPage(format!("reading the body: {e}")))?
    {
        if body.len() + chunk.len() > MAX_PAGE_BYTES {
            return Err(Fault::MalformedPage(format!(
                "a page larger than {MAX_PAGE_BYTES} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| Fault::MalformedPage(e.to_string()))
}
