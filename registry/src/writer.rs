//! The single writer: every change to a group goes through one thread, which assigns
//! `seq`s, validates each command against the current state, and commits whatever has
//! queued up as **one** synced RocksDB batch (group commit). A request is answered only
//! after its batch is durable; under load, one fsync covers many requests. With a journal
//! (`crate::journal`), the batch is first written to object storage as one segment, and
//! committed locally only once the store holds it.

use std::collections::HashMap;
use std::sync::Arc;

use dgsp_core::{Manager, MemberId, Zeta};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use crate::health::Health;
use crate::journal::Journal;
use crate::store::{self, Head, MemberView, Store};
use dgsp_wire::events::Event;
use dgsp_wire::log::{now_ms, Entry};

/// Most commands committed in one batch.
pub const MAX_GROUP: usize = 1024;

/// Most certificates the registry issues to one member over its lifetime: 2^20.
///
/// A revocation is one `member_revoked` entry listing every zeta of the member (35 bytes of
/// JSON each), and every follower must be able to read that entry in one feed page: at the
/// cap the entry is about 37 MB, well under the gateway's 128 MiB page limit, and the
/// writer's idempotency record and the revoke answer stay of the same order. A member that
/// needs more signatures joins again under a new username. The spec bounds the counter only
/// by 64 bits; this is the registry's policy, refused with [`WriteError::CertificateLimit`].
pub const MAX_CERTIFICATES_PER_MEMBER: u64 = 1 << 20;

/// Why the writer refused a command.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The username is taken.
    #[error("username {0:?} is already a member")]
    DuplicateUsername(String),
    /// No such member.
    #[error("unknown member id {0}")]
    UnknownMember(MemberId),
    /// The member was revoked.
    #[error("member {0} is revoked")]
    Inactive(MemberId),
    /// Counter overflow.
    #[error("certificate counter of member {0} would overflow")]
    CounterOverflow(MemberId),
    /// The issuance would take the member past [`MAX_CERTIFICATES_PER_MEMBER`].
    #[error(
        "member {id} holds {issued} certificates; {requested} more would pass the limit of {limit} per member (join again under a new username for more)",
        limit = MAX_CERTIFICATES_PER_MEMBER
    )]
    CertificateLimit {
        /// member
        id: MemberId,
        /// certificates issued so far
        issued: u64,
        /// certificates asked for
        requested: u64,
    },
    /// Writing the batch failed. Its outcome is unknown (the database may or may not have
    /// made it durable), so the registry halted: retry with the same `Idempotency-Key` after
    /// it is restarted.
    #[error("the write failed and its outcome is unknown: {0}")]
    CommitFailed(String),
    /// The registry halted after an earlier failure and accepts no writes until restarted.
    #[error(
        "the registry halted after a failure and accepts no writes until it is restarted: {0}"
    )]
    Halted(String),
    /// The database failed; nothing of this batch was written.
    #[error("storage: {0}")]
    Store(#[from] store::Error),
    /// An issuance whose digest list does not match its count.
    #[error("{digests} key digests for {count} certificates")]
    DigestCount {
        /// certificates requested
        count: u64,
        /// digests given
        digests: usize,
    },
    /// The idempotency key was first used for a different request.
    #[error("idempotency key {0:?} was already used for a different request")]
    IdempotencyMismatch(String),
    /// The writer has stopped (shutdown).
    #[error("the registry is shutting down")]
    Stopped,
}

/// A change requested of the group.
#[derive(Debug)]
pub enum Command {
    /// Admit members, all or none (one username for a single join).
    Join {
        /// unique usernames
        usernames: Vec<String>,
    },
    /// Reserve counters for certificates (signed afterwards, outside the writer).
    Issue {
        /// member
        id: MemberId,
        /// how many counters (equal to `wots_pk_digests.len()` when digests are given)
        count: u64,
        /// SHA3-256 (hex) of each WOTS+ public key to certify
        wots_pk_digests: Vec<String>,
    },
    /// Revoke a member (idempotent).
    Revoke {
        /// member
        id: MemberId,
    },
    /// Append an event that needs no validation against the state: an opening (verified
    /// before it gets here), a signed snapshot or a checkpoint.
    Append {
        /// the event to log
        event: Event,
    },
}

/// What a committed command produced.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// `Join`: the new ids, in request order.
    Joined {
        /// seq of the last entry written
        seq: u64,
        /// member ids
        ids: Vec<MemberId>,
    },
    /// `Issue`: the reserved counter range.
    Reserved {
        /// entry seq
        seq: u64,
        /// member id
        id: MemberId,
        /// first counter
        first: u64,
        /// number reserved
        count: u64,
    },
    /// `Revoke`: the member's zetas (hex); `seq` of the (first) revocation entry.
    Revoked {
        /// entry seq
        seq: u64,
        /// member id
        id: MemberId,
        /// revoked zetas, hex
        zetas: Vec<String>,
        /// true if the member had been revoked before (nothing new was written)
        already: bool,
    },
    /// `Append`.
    Appended {
        /// entry seq
        seq: u64,
    },
}

/// A client's idempotency key and the fingerprint (hash) of the request it names.
#[derive(Clone, Debug)]
pub struct Idempotency {
    /// client-chosen key
    pub key: String,
    /// hash of the request body and target, to refuse a key reused for another request
    pub fingerprint: String,
}

#[derive(Clone, Serialize, Deserialize)]
struct IdemRecord {
    fingerprint: String,
    outcome: Outcome,
}

type Reply = Result<Outcome, WriteError>;

struct Request {
    command: Command,
    idem: Option<Idempotency>,
    reply: oneshot::Sender<Reply>,
    /// A revocation's share of the fence. It travels with the command, so it is the writer
    /// that releases it, after the batch holding the command is durable (or refused):
    /// a caller that goes away (a dropped future, a client that disconnects) cannot release
    /// it while the revocation is still queued.
    fence: Option<FenceShare>,
}

/// A revocation's share of the fence, held from before it is queued until it is durable.
type FenceShare = tokio::sync::OwnedRwLockReadGuard<()>;

impl Request {
    fn new(
        command: Command,
        idem: Option<Idempotency>,
        fence: Option<FenceShare>,
    ) -> (Request, oneshot::Receiver<Reply>) {
        let (reply, rx) = oneshot::channel();
        (
            Request {
                command,
                idem,
                reply,
                fence,
            },
            rx,
        )
    }
}

/// A handle to the writer thread; cheap to clone.
#[derive(Clone)]
pub struct Writer {
    tx: mpsc::Sender<Request>,
    head: tokio::sync::watch::Receiver<u64>,
    health: Arc<Health>,
    /// Revocations hold it shared until they are durable; the publisher holds it exclusively
    /// while it signs a snapshot and the checkpoint naming it (see [`Writer::fence_revocations`]).
    fence: Arc<tokio::sync::RwLock<()>>,
}

/// Held by the publisher: no revocation is being committed or can start.
pub type RevocationFence = tokio::sync::OwnedRwLockWriteGuard<()>;

impl Writer {
    /// Starts the writer thread over `store`. It stops when every handle is dropped. A
    /// failed commit or a panic halts `health` (fail-stop).
    pub fn start(
        store: Arc<Store>,
        manager: Arc<Manager>,
        health: Arc<Health>,
    ) -> Result<(Writer, std::thread::JoinHandle<()>), store::Error> {
        Writer::start_journaled(store, manager, health, None)
    }

    /// [`start`](Self::start), writing every batch to `journal` before committing it.
    pub fn start_journaled(
        store: Arc<Store>,
        manager: Arc<Manager>,
        health: Arc<Health>,
        journal: Option<Arc<Journal>>,
    ) -> Result<(Writer, std::thread::JoinHandle<()>), store::Error> {
        let head = store.head()?;
        let next_id = store.count("members")?;
        let (tx, rx) = mpsc::channel(4 * MAX_GROUP);
        let (head_tx, head_rx) = tokio::sync::watch::channel(head.seq);
        let state = State {
            store,
            manager,
            head,
            next_id,
            head_tx,
            health: health.clone(),
            journal,
        };
        let on_panic = health.clone();
        let handle = std::thread::Builder::new()
            .name("dgsp-writer".into())
            .spawn(move || {
                let run = std::panic::AssertUnwindSafe(move || state.run(rx));
                if std::panic::catch_unwind(run).is_err() {
                    on_panic.halt("the writer thread panicked");
                }
            })
            .map_err(|e| store::Error::Corrupt {
                what: "writer thread".into(),
                reason: e.to_string(),
            })?;
        let writer = Writer {
            tx,
            head: head_rx,
            health,
            fence: Arc::default(),
        };
        Ok((writer, handle))
    }

    /// Waits until no revocation is being committed, then keeps new ones waiting until the
    /// guard is dropped. The publisher holds it while it folds the log, signs a snapshot
    /// and signs the checkpoint naming it, so every revocation a checkpoint covers is in the
    /// snapshot it names. Revocations are durable before they are acknowledged, so waiting
    /// delays them (by at most two signatures) but loses nothing.
    pub async fn fence_revocations(&self) -> RevocationFence {
        self.fence.clone().write_owned().await
    }

    /// The shared fail-stop state.
    pub fn health(&self) -> &Arc<Health> {
        &self.health
    }

    fn refuse_if_halted(&self) -> Result<(), WriteError> {
        match self.health.halted() {
            Some(reason) => Err(WriteError::Halted(reason)),
            None => Ok(()),
        }
    }

    /// [`submit`](Self::submit) for synchronous callers (not from inside an async runtime).
    pub fn submit_blocking(
        &self,
        command: Command,
        idem: Option<Idempotency>,
    ) -> Result<Outcome, WriteError> {
        self.refuse_if_halted()?;
        let fence = match command {
            // tokio has no blocking owned read: wait out the publisher (it holds the fence
            // for at most two signatures) a millisecond at a time.
            Command::Revoke { .. } => Some(loop {
                match self.fence.clone().try_read_owned() {
                    Ok(share) => break share,
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
                }
            }),
            _ => None,
        };
        let (req, rx) = Request::new(command, idem, fence);
        self.tx
            .blocking_send(req)
            .map_err(|_| WriteError::Stopped)?;
        rx.blocking_recv().map_err(|_| WriteError::Stopped)?
    }

    /// Watches the seq of the last durable entry.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.head.clone()
    }

    /// Submits a command and waits until it is durable (or refused). With an idempotency
    /// key, a repeated command returns the first outcome and changes nothing.
    ///
    /// Cancel-safe where it matters: if the returned future is dropped before the command
    /// is queued, nothing is queued; once it is queued, the writer commits it (or refuses
    /// it) whatever the caller does, and a revocation keeps its share of the fence until
    /// then (the writer, not this future, releases it).
    pub async fn submit(
        &self,
        command: Command,
        idem: Option<Idempotency>,
    ) -> Result<Outcome, WriteError> {
        self.refuse_if_halted()?;
        let fence = match command {
            Command::Revoke { .. } => Some(self.fence.clone().read_owned().await),
            _ => None,
        };
        let (req, rx) = Request::new(command, idem, fence);
        self.tx.send(req).await.map_err(|_| WriteError::Stopped)?;
        rx.await.map_err(|_| WriteError::Stopped)?
    }
}

struct State {
    store: Arc<Store>,
    manager: Arc<Manager>,
    head: Head,
    next_id: u64,
    head_tx: tokio::sync::watch::Sender<u64>,
    health: Arc<Health>,
    /// where each batch goes first, when object storage is configured
    journal: Option<Arc<Journal>>,
}

/// Changes made by earlier commands of the batch being built.
#[derive(Default)]
struct Pending {
    members: HashMap<MemberId, MemberView>,
    names: HashMap<String, MemberId>,
    idem: HashMap<String, IdemRecord>,
}

impl State {
    fn run(mut self, mut rx: mpsc::Receiver<Request>) {
        while let Some(first) = rx.blocking_recv() {
            let mut group = vec![first];
            while group.len() < MAX_GROUP {
                match rx.try_recv() {
                    Ok(r) => group.push(r),
                    Err(_) => break,
                }
            }
            match self.health.halted() {
                None => self.commit_group(group),
                // Refused, so nothing to order: dropping the requests releases their shares.
                Some(reason) => {
                    for req in group {
                        let _ = req.reply.send(Err(WriteError::Halted(reason.clone())));
                    }
                }
            }
        }
    }

    fn member(&self, pending: &Pending, id: MemberId) -> Result<MemberView, WriteError> {
        match pending.members.get(&id) {
            Some(v) => Ok(v.clone()),
            None => self.store.member(id)?.ok_or(WriteError::UnknownMember(id)),
        }
    }

    fn commit_group(&mut self, group: Vec<Request>) {
        let mut pending = Pending::default();
        let mut entries: Vec<Entry> = Vec::new();
        let mut idem_records = Vec::new();
        let mut answers = Vec::with_capacity(group.len());
        let (start_head, start_next_id) = (self.head, self.next_id);
        // Revocations' shares of the fence, released only once the batch is durable (or
        // refused): until then the publisher cannot fold the log past them.
        let mut fence_shares = Vec::new();
        for mut req in group {
            fence_shares.extend(req.fence.take());
            let result = self.apply(&req, &mut pending, &mut entries);
            if let (Some(idem), Ok(outcome)) = (&req.idem, &result) {
                if !pending.idem.contains_key(&idem.key) {
                    let record = IdemRecord {
                        fingerprint: idem.fingerprint.clone(),
                        outcome: outcome.clone(),
                    };
                    let bytes = serde_json::to_vec(&record).expect("records serialize");
                    idem_records.push((idem.key.clone(), bytes));
                    pending.idem.insert(idem.key.clone(), record);
                }
            }
            answers.push((req.reply, result));
        }
        if !entries.is_empty() || !idem_records.is_empty() {
            // The journal first: what is acknowledged must be in the bucket, written while
            // this registry provably held the lease. A batch of idempotency answers alone
            // (a repeated revocation) changes no entry and is kept locally only.
            let committed = match (&self.journal, entries.first()) {
                (Some(j), Some(first)) => j.append_then(&entries, &idem_records, || {
                    self.store
                        .commit_journaled(&entries, &idem_records, first.seq)
                        .map_err(|e| e.to_string())
                }),
                _ => self
                    .store
                    .commit(&entries, &idem_records)
                    .map_err(|e| e.to_string()),
            };
            if let Err(e) = committed {
                // Fail-stop: whether the batch is durable is unknown, so nothing more is
                // written until a restart reads the log as it really is.
                self.health.halt(format!("a commit failed: {e}"));
                self.head = start_head;
                self.next_id = start_next_id;
                let msg = e.to_string();
                for (reply, result) in answers {
                    let _ = reply.send(match result {
                        Ok(_) => Err(WriteError::CommitFailed(msg.clone())),
                        Err(e) => Err(e),
                    });
                }
                drop(fence_shares);
                return;
            }
        }
        self.head_tx.send_replace(self.head.seq);
        drop(fence_shares);
        for (reply, result) in answers {
            let _ = reply.send(result);
        }
    }

    fn seal(&mut self, event: &Event, entries: &mut Vec<Entry>) -> u64 {
        let seq = self.head.seq + 1;
        let e = Entry::seal(seq, now_ms(), event, &self.head.hash);
        self.head = Head {
            seq,
            hash: e.hash_bytes().expect("fresh hash"),
        };
        entries.push(e);
        seq
    }

    fn apply(
        &mut self,
        req: &Request,
        pending: &mut Pending,
        entries: &mut Vec<Entry>,
    ) -> Result<Outcome, WriteError> {
        if let Some(idem) = &req.idem {
            let stored = match pending.idem.get(&idem.key) {
                Some(r) => Some(r.clone()),
                None => self
                    .store
                    .idempotent(&idem.key)?
                    .and_then(|bytes| serde_json::from_slice::<IdemRecord>(&bytes).ok()),
            };
            if let Some(r) = stored {
                if r.fingerprint != idem.fingerprint {
                    return Err(WriteError::IdempotencyMismatch(idem.key.clone()));
                }
                return Ok(r.outcome);
            }
        }
        match &req.command {
            Command::Join { usernames } => {
                let mut seen = std::collections::HashSet::new();
                for u in usernames {
                    if !seen.insert(u)
                        || pending.names.contains_key(u)
                        || self.store.id_of(u)?.is_some()
                    {
                        return Err(WriteError::DuplicateUsername(u.clone()));
                    }
                }
                let mut ids = Vec::with_capacity(usernames.len());
                let mut seq = self.head.seq;
                for username in usernames {
                    let id = self.next_id;
                    let event = Event::MemberJoined {
                        id,
                        username: username.clone(),
                    };
                    seq = self.seal(&event, entries);
                    self.next_id += 1;
                    pending.names.insert(username.clone(), id);
                    let view = MemberView {
                        username: username.clone(),
                        active: true,
                        counter: 0,
                        revoked_at: None,
                    };
                    pending.members.insert(id, view);
                    ids.push(id);
                }
                Ok(Outcome::Joined { seq, ids })
            }
            Command::Issue {
                id,
                count,
                wots_pk_digests,
            } => {
                let mut m = self.member(pending, *id)?;
                if !m.active {
                    return Err(WriteError::Inactive(*id));
                }
                let count = *count;
                if !wots_pk_digests.is_empty() && wots_pk_digests.len() as u64 != count {
                    return Err(WriteError::DigestCount {
                        count,
                        digests: wots_pk_digests.len(),
                    });
                }
                let first = m.counter;
                let end = first
                    .checked_add(count)
                    .ok_or(WriteError::CounterOverflow(*id))?;
                if end > MAX_CERTIFICATES_PER_MEMBER {
                    return Err(WriteError::CertificateLimit {
                        id: *id,
                        issued: first,
                        requested: count,
                    });
                }
                m.counter = end;
                let event = Event::CertificatesIssued {
                    id: *id,
                    first,
                    count,
                    wots_pk_digests: wots_pk_digests.clone(),
                };
                let seq = self.seal(&event, entries);
                pending.members.insert(*id, m);
                Ok(Outcome::Reserved {
                    seq,
                    id: *id,
                    first,
                    count,
                })
            }
            Command::Revoke { id } => {
                let mut m = self.member(pending, *id)?;
                let zetas: Vec<String> = self
                    .manager
                    .zetas(*id, 0..m.counter)
                    .iter()
                    .map(|z: &Zeta| hex::encode(z.as_bytes()))
                    .collect();
                if let Some(seq) = m.revoked_at.filter(|_| !m.active) {
                    return Ok(Outcome::Revoked {
                        seq,
                        id: *id,
                        zetas,
                        already: true,
                    });
                }
                // One entry, or consecutive parts of at most `MAX_ZETAS_PER_ENTRY` zetas in
                // this same batch: every entry fits an entry bundle.
                let mut parts = Event::revocation(*id, &zetas).into_iter();
                let first = parts.next().expect("a revocation has a first part");
                let seq = self.seal(&first, entries);
                for part in parts {
                    self.seal(&part, entries);
                }
                m.active = false;
                m.revoked_at = Some(seq);
                pending.members.insert(*id, m);
                Ok(Outcome::Revoked {
                    seq,
                    id: *id,
                    zetas,
                    already: false,
                })
            }
            Command::Append { event } => {
                let seq = self.seal(event, entries);
                Ok(Outcome::Appended { seq })
            }
        }
    }
}
