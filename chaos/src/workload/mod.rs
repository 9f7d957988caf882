//! The clients: concurrent joins, issuances and revocations against the registry's admin
//! API, each sent in one of several ways — a patient client, a client that times out and
//! retries with the same `Idempotency-Key`, a client that disconnects right after sending
//! (a raw TCP write, then close), and the disconnect race of issue 26 (a revocation kept
//! open on one connection while another, 0-2 ms later, is dropped right after sending).
//! Every write answered 2xx is recorded with what it returned; the invariants check them
//! against the log afterwards.

mod answer;
mod api;
mod ledger;
mod send;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_wire::registry_api::{
    BulkJoinRequest, BulkJoined, IssueRequest, Issued, JoinRequest, JoinedMember, Revoked,
    MAX_BULK_JOIN,
};
use sha3::{Digest, Sha3_256};
use tokio::task::JoinHandle;

use self::answer::typed;
pub use self::api::Api;
use self::api::Sent;
use self::ledger::Member;
pub use self::ledger::{Ack, Acked, Ledger};
use self::send::{Mode, PATIENT};
use crate::rng::Rng;

/// What a client loop writes.
#[derive(Clone, Copy, Debug)]
enum Role {
    /// Joins members (one or a few at once) and issues them certificates.
    Joins,
    /// Issues more certificates to members of the pool.
    Issues,
    /// Revokes members of the pool, a share of them as the disconnect race.
    Revokes,
}

/// The client loops of a run: one joins, one issues, three revoke.
const CLIENTS: [Role; 5] = [
    Role::Joins,
    Role::Issues,
    Role::Revokes,
    Role::Revokes,
    Role::Revokes,
];

/// Shared by the client tasks.
pub struct Workload {
    api: Api,
    /// What was acknowledged.
    pub ledger: Ledger,
    /// Members with certificates, not yet being revoked.
    pool: Mutex<Vec<Member>>,
    /// Set when the chaos phase ends.
    pub stop: AtomicBool,
    /// N of the parameter set (the length of a WOTS+ public key).
    n: usize,
    /// Prefix of every username of this run.
    prefix: String,
    next_user: AtomicU64,
}

impl Workload {
    /// A workload against `api`.
    pub fn new(api: Api, n: usize, seed: u64) -> Self {
        Workload {
            api,
            ledger: Ledger::default(),
            pool: Mutex::default(),
            stop: AtomicBool::new(false),
            n,
            prefix: format!("chaos-{seed:x}"),
            next_user: AtomicU64::new(0),
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Setup: joins `count` members in bulk and issues each one certificate (patiently, four
    /// clients at a time), all into the pool; fails unless every issuance was answered.
    pub async fn populate(self: &Arc<Self>, seed: u64, count: usize) -> Result<usize, String> {
        let mut rng = Rng::new(seed, 0);
        let mut members = Vec::new();
        while members.len() < count {
            let n = (count - members.len()).min(MAX_BULK_JOIN);
            members.extend(self.join_bulk(&mut rng, n).await?);
        }
        let tasks: Vec<_> = members
            .chunks(members.len().div_ceil(4))
            .enumerate()
            .map(|(i, chunk)| {
                let (work, chunk) = (self.clone(), chunk.to_vec());
                let mut rng = Rng::new(seed, 100 + i as u64);
                tokio::spawn(async move {
                    for m in chunk {
                        if work.issue(&mut rng, &m, 1, Mode::Patient).await {
                            work.pool.lock().unwrap().push(m);
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
        let pooled = self.pool.lock().unwrap().len();
        if pooled < count {
            return Err(format!(
                "setup: only {pooled} of {count} issuances answered"
            ));
        }
        Ok(pooled)
    }

    /// Starts the client loops, each on its own stream of the run's `seed`; they run until
    /// [`stop`](Self::stop) is set.
    pub fn spawn_clients(self: &Arc<Self>, seed: u64) -> Vec<JoinHandle<()>> {
        CLIENTS
            .into_iter()
            .enumerate()
            .map(|(i, role)| tokio::spawn(self.clone().client(role, Rng::new(seed, 1 + i as u64))))
            .collect()
    }

    fn username(&self) -> String {
        format!(
            "{}-{}",
            self.prefix,
            self.next_user.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// Joins `count` members in one bulk request (setup), all patient.
    async fn join_bulk(&self, rng: &mut Rng, count: usize) -> Result<Vec<Member>, String> {
        let usernames: Vec<String> = (0..count).map(|_| self.username()).collect();
        let body = typed(BulkJoinRequest { usernames });
        match self
            .api
            .write(
                &self.ledger.stats,
                "/admin/v1/members/bulk",
                Some(&body),
                &rng.key(),
                PATIENT,
                &self.stop,
            )
            .await
        {
            Sent::Acked(b) => {
                let joined: BulkJoined =
                    serde_json::from_slice(&b).map_err(|e| format!("bulk join answer: {e}"))?;
                Ok(joined.members.into_iter().map(|m| self.joined(m)).collect())
            }
            Sent::Refused(s, b) => Err(format!("bulk join refused: {s} {b}")),
            Sent::Abandoned(e) => Err(format!("bulk join not answered: {e}")),
        }
    }

    /// Joins one member (or a few at once) in a random mode; issues each 1-3
    /// certificates and adds them to the pool.
    async fn join_some(&self, rng: &mut Rng) {
        let mode = Mode::draw(rng);
        let key = rng.key();
        let joined = if rng.chance(0.2) {
            let usernames: Vec<String> = (0..rng.range(2, 6)).map(|_| self.username()).collect();
            let body = typed(BulkJoinRequest { usernames });
            let path = "/admin/v1/members/bulk";
            let bulk: Option<BulkJoined> = self.send(rng, mode, path, Some(&body), &key, 0.1).await;
            bulk.map(|j| j.members)
        } else {
            let body = typed(JoinRequest {
                username: self.username(),
            });
            let path = "/admin/v1/members";
            let one: Option<JoinedMember> =
                self.send(rng, mode, path, Some(&body), &key, 0.1).await;
            one.map(|j| vec![j])
        };
        for m in joined.unwrap_or_default() {
            let member = self.joined(m);
            let count = rng.range(1, 3) as usize;
            let mode = Mode::draw(rng);
            if self.issue(rng, &member, count, mode).await {
                self.pool.lock().unwrap().push(member);
            }
        }
    }

    /// Records a member the registry admitted; the member, for issuing to.
    fn joined(&self, m: JoinedMember) -> Member {
        self.ledger.ack(Ack::Joined {
            id: m.id,
            username: m.username,
        });
        Member {
            id: m.id,
            cid_star: m.cid_star,
        }
    }

    /// Issues `count` certificates to `m` for random keys; true when acknowledged.
    async fn issue(&self, rng: &mut Rng, m: &Member, count: usize, mode: Mode) -> bool {
        let pks: Vec<Vec<u8>> = (0..count).map(|_| rng.bytes(self.n)).collect();
        let body = typed(IssueRequest {
            cid_star: m.cid_star.clone(),
            wots_pks: pks.iter().map(|p| B64.encode(p)).collect(),
        });
        let path = format!("/admin/v1/members/{}/certificates", m.id);
        let key = rng.key();
        let sent = self.send::<Issued>(rng, mode, &path, Some(&body), &key, 0.05);
        let Some(issued) = sent.await else {
            return false;
        };
        self.ledger.ack(Ack::Issued {
            id: issued.id,
            first: issued.first_counter,
            digests: pks
                .iter()
                .map(|p| hex::encode(Sha3_256::digest(p)))
                .collect(),
        });
        true
    }

    /// Issues more certificates to a random member of the pool.
    async fn issue_more(&self, rng: &mut Rng) {
        let m = {
            let pool = self.pool.lock().unwrap();
            if pool.is_empty() {
                None
            } else {
                Some(pool[rng.below(pool.len() as u64) as usize].clone())
            }
        };
        match m {
            Some(m) => {
                let count = rng.range(1, 2) as usize;
                let mode = Mode::draw(rng);
                self.issue(rng, &m, count, mode).await;
            }
            None => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }

    fn take_member(&self, rng: &mut Rng) -> Option<Member> {
        let mut pool = self.pool.lock().unwrap();
        if pool.is_empty() {
            return None;
        }
        let i = rng.below(pool.len() as u64) as usize;
        Some(pool.swap_remove(i))
    }

    fn record_revoked(&self, r: Revoked) {
        let zetas = r
            .zetas
            .iter()
            .map(|z| hex::encode(B64.decode(z).unwrap_or_default()))
            .collect();
        self.ledger.ack(Ack::Revoked {
            id: r.id,
            seq: r.seq,
            zetas,
        });
    }

    /// Revokes a member of the pool: in a random mode, or as the disconnect race.
    async fn revoke_some(self: &Arc<Self>, rng: &mut Rng) {
        if rng.chance(0.4) {
            return self.race(rng).await;
        }
        let Some(m) = self.take_member(rng) else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            return;
        };
        let mode = Mode::draw(rng);
        let path = format!("/admin/v1/members/{}/revoke", m.id);
        let key = rng.key();
        if let Some(r) = self.send(rng, mode, &path, None, &key, 0.1).await {
            self.record_revoked(r);
        }
    }

    /// Issue 26's race: revoke B on one connection and keep it open; 0-2 ms later, revoke
    /// A on a second connection closed 0-1 ms after sending. Half the time A is retried
    /// afterwards with the same key.
    async fn race(self: &Arc<Self>, rng: &mut Rng) {
        let (Some(b), Some(a)) = (self.take_member(rng), self.take_member(rng)) else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            return;
        };
        let stats = &self.ledger.stats;
        stats.races.fetch_add(1, Ordering::Relaxed);
        let (b_path, b_key) = (format!("/admin/v1/members/{}/revoke", b.id), rng.key());
        let me = self.clone();
        let patient = tokio::spawn(async move {
            let body = me.deliver(&b_path, None, &b_key, PATIENT).await;
            if let Some(r) = body.and_then(|b| serde_json::from_slice(&b).ok()) {
                me.record_revoked(r);
            }
        });
        let (a_path, a_key) = (format!("/admin/v1/members/{}/revoke", a.id), rng.key());
        stats.disconnects.fetch_add(1, Ordering::Relaxed);
        let delay = Duration::from_micros(rng.below(2000));
        let linger = Duration::from_micros(rng.below(1000));
        self.drop_after_send(&a_path, None, &a_key, delay, linger)
            .await;
        let _ = patient.await;
        if rng.chance(0.5) {
            tokio::time::sleep(Duration::from_millis(rng.range(0, 500))).await;
            if let Some(r) = self
                .send(rng, Mode::Patient, &a_path, None, &a_key, 0.0)
                .await
            {
                self.record_revoked(r);
            }
        }
    }

    /// Runs a client loop until `stop`.
    async fn client(self: Arc<Self>, role: Role, mut rng: Rng) {
        while !self.stopping() {
            match role {
                Role::Joins => self.join_some(&mut rng).await,
                Role::Issues => self.issue_more(&mut rng).await,
                Role::Revokes => self.revoke_some(&mut rng).await,
            }
            tokio::time::sleep(Duration::from_millis(rng.range(5, 120))).await;
        }
    }
}

/// Waits for the client loops to stop (after [`Workload::stop`] is set): fails when one
/// did not within 45 s.
pub async fn join(clients: Vec<JoinHandle<()>>) -> Result<(), String> {
    for c in clients {
        if tokio::time::timeout(Duration::from_secs(45), c)
            .await
            .is_err()
        {
            return Err("a client did not stop within 45 s".into());
        }
    }
    Ok(())
}
