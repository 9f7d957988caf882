//! The clients: concurrent joins, issuances and revocations against the registry's admin
//! API, each sent in one of several ways — a patient client, a client that times out and
//! retries with the same `Idempotency-Key`, a client that disconnects right after sending
//! (a raw TCP write, then close), and the disconnect race of issue 26 (a revocation kept
//! open on one connection while another, 0-2 ms later, is dropped right after sending).
//! Every write answered 2xx is recorded with what it returned; the invariants check them
//! against the log afterwards.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_wire::registry_api::{
    BulkJoinRequest, BulkJoined, IssueRequest, Issued, JoinRequest, JoinedMember, Revoked,
};
use serde_json::Value;
use sha3::{Digest, Sha3_256};

use crate::rng::Rng;

/// A write the registry acknowledged (answered 2xx), with what it said.
#[derive(Clone, Debug)]
pub enum Ack {
    /// `POST /admin/v1/members` or `/members/bulk`.
    Joined {
        /// assigned id
        id: u64,
        /// the username sent
        username: String,
    },
    /// `POST /admin/v1/members/{id}/certificates`.
    Issued {
        /// member
        id: u64,
        /// first counter
        first: u64,
        /// SHA3-256 (hex) of each key sent, in order
        digests: Vec<String>,
    },
    /// `POST /admin/v1/members/{id}/revoke`.
    Revoked {
        /// member
        id: u64,
        /// the revocation's entry
        seq: u64,
        /// its zetas (hex)
        zetas: Vec<String>,
    },
}

/// A member the clients may issue to or revoke.
#[derive(Clone, Debug)]
pub struct Member {
    /// id
    pub id: u64,
    /// `cid*` (base64) as the join answered it
    pub cid_star: String,
}

/// Counts of what the clients did.
#[derive(Default)]
pub struct Stats {
    /// Writes sent through the patient or the timing-out client (each logical write once).
    pub writes: AtomicU64,
    /// Of those, answered 2xx.
    pub acked: AtomicU64,
    /// Refused for good (4xx).
    pub refused: AtomicU64,
    /// Given up on (no 2xx before the deadline).
    pub abandoned: AtomicU64,
    /// Retries (same key) after a timeout, an error or a 5xx.
    pub retries: AtomicU64,
    /// Requests dropped right after sending.
    pub disconnects: AtomicU64,
    /// Disconnect races (revoke B kept open, revoke A dropped 0-2 ms later).
    pub races: AtomicU64,
    /// Acknowledged writes sent again with the same key to compare the answers.
    pub replays: AtomicU64,
}

/// Everything the clients record.
#[derive(Default)]
pub struct Ledger {
    /// Acknowledged writes.
    pub acks: Mutex<Vec<Ack>>,
    /// Keys answered twice with different answers: (key, first, second).
    pub replay_mismatches: Mutex<Vec<String>>,
    /// What happened.
    pub stats: Stats,
}

impl Ledger {
    fn ack(&self, a: Ack) {
        self.acks.lock().unwrap().push(a);
    }
}

/// The admin API, through reqwest (patient and timing-out clients) or a raw socket
/// (disconnecting clients).
pub struct Api {
    /// HTTP client (a pool of keep-alive connections).
    pub http: reqwest::Client,
    /// `http://127.0.0.1:port`
    pub base: String,
    raw: Raw,
}

/// The registry's address and token, for requests on a raw socket.
#[derive(Clone)]
pub struct Raw {
    addr: SocketAddr,
    token: String,
}

/// The outcome of a logical write (all its attempts).
pub enum Sent {
    /// 2xx, the body.
    Acked(Vec<u8>),
    /// 4xx: refused for good (status, body).
    Refused(u16, String),
    /// No 2xx before the deadline, or the run is stopping.
    Abandoned(String),
}

impl Api {
    /// A client of the registry at `base`.
    pub fn new(http: reqwest::Client, base: &str, token: &str) -> Result<Self, String> {
        let addr = base
            .trim_start_matches("http://")
            .parse()
            .map_err(|e| format!("{base}: {e}"))?;
        Ok(Api {
            http,
            base: base.into(),
            raw: Raw {
                addr,
                token: token.into(),
            },
        })
    }

    async fn attempt(
        &self,
        path: &str,
        body: Option<&Value>,
        key: &str,
        timeout: Duration,
    ) -> Result<(u16, Vec<u8>), String> {
        let mut req = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.raw.token)
            .header("Idempotency-Key", key)
            .timeout(timeout);
        if let Some(b) = body {
            req = req.json(b);
        }
        let r = req.send().await.map_err(|e| e.to_string())?;
        let status = r.status().as_u16();
        let bytes = r.bytes().await.map_err(|e| e.to_string())?;
        Ok((status, bytes.to_vec()))
    }

    /// Sends a write until it is answered 2xx or refused with a 4xx, retrying with the same
    /// key after timeouts, connection errors and 5xx (the registry restarting or halted).
    /// The first attempt gets `first_timeout`; later ones 10 s. Gives up 30 s after the
    /// start, or soon after `stop` is set.
    pub async fn write(
        &self,
        stats: &Stats,
        path: &str,
        body: Option<&Value>,
        key: &str,
        first_timeout: Duration,
        stop: &AtomicBool,
    ) -> Sent {
        let started = Instant::now();
        let mut timeout = first_timeout;
        let mut backoff = Duration::from_millis(50);
        let mut last;
        loop {
            match self.attempt(path, body, key, timeout).await {
                Ok((s, b)) if (200..300).contains(&s) => return Sent::Acked(b),
                Ok((s, b)) if (400..500).contains(&s) && s != 408 && s != 429 => {
                    return Sent::Refused(s, String::from_utf8_lossy(&b).into_owned())
                }
                Ok((s, b)) => last = format!("{s}: {}", String::from_utf8_lossy(&b)),
                Err(e) => last = e,
            }
            if started.elapsed() > PATIENCE || stop.load(Ordering::Relaxed) {
                return Sent::Abandoned(last);
            }
            stats.retries.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(800));
            timeout = Duration::from_secs(10);
        }
    }
}

impl Raw {
    /// Sends a write on a fresh connection and closes it `linger` after the last byte,
    /// without reading anything (a client timeout, a proxy abort, Ctrl-C).
    pub fn send_and_drop(
        &self,
        path: &str,
        body: Option<&Value>,
        key: &str,
        linger: Duration,
    ) -> std::io::Result<()> {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nIdempotency-Key: {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            self.token,
            body.len()
        );
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(2))?;
        s.set_nodelay(true)?;
        s.write_all(request.as_bytes())?;
        if !linger.is_zero() {
            std::thread::sleep(linger);
        }
        drop(s);
        Ok(())
    }
}

/// How a write is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Waits for the answer, retrying on failures.
    Patient,
    /// First attempt times out after 1-30 ms, then retries with the same key.
    TimeoutRetry,
    /// Sent on a raw socket closed 0-2 ms after sending; sometimes retried later with the
    /// same key.
    Disconnect,
}

/// Shared by the client tasks.
pub struct Workload {
    /// The registry.
    pub api: Api,
    /// What was acknowledged.
    pub ledger: Arc<Ledger>,
    /// Members with certificates, not yet being revoked.
    pub pool: Mutex<Vec<Member>>,
    /// Set when the chaos phase ends.
    pub stop: AtomicBool,
    /// N of the parameter set (the length of a WOTS+ public key).
    pub n: usize,
    /// Prefix of every username of this run.
    pub prefix: String,
    next_user: AtomicU64,
}

const PATIENCE: Duration = Duration::from_secs(30);
const PATIENT: Duration = Duration::from_secs(10);

impl Workload {
    /// A workload against `api`.
    pub fn new(api: Api, n: usize, seed: u64) -> Self {
        Workload {
            api,
            ledger: Arc::default(),
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

    /// Sends a write in `mode`, then reads its answer as `T`; `replay` of the time sends it
    /// again with the same key (a client that lost the answer) and checks the second answer.
    /// `Some` when acknowledged with a `T`.
    async fn send<T: Answer>(
        &self,
        rng: &mut Rng,
        mode: Mode,
        path: &str,
        body: Option<&Value>,
        key: &str,
        replay: f64,
    ) -> Option<T> {
        let first_timeout = match mode {
            Mode::Patient => PATIENT,
            Mode::TimeoutRetry => Duration::from_millis(rng.range(1, 30)),
            Mode::Disconnect => {
                self.ledger
                    .stats
                    .disconnects
                    .fetch_add(1, Ordering::Relaxed);
                let linger = Duration::from_micros(rng.below(2000));
                self.drop_after_send(path, body, key, Duration::ZERO, linger)
                    .await;
                if !rng.chance(0.5) {
                    return None;
                }
                // The impatient client tries again a little later, with the same key.
                tokio::time::sleep(Duration::from_millis(rng.range(0, 300))).await;
                PATIENT
            }
        };
        let answer: T =
            serde_json::from_slice(&self.deliver(path, body, key, first_timeout).await?).ok()?;
        if rng.chance(replay) {
            self.replay::<T>(path, body, key, &answer.summary()).await;
        }
        Some(answer)
    }

    /// One logical write through [`Api::write`], counted; the body when acknowledged.
    async fn deliver(
        &self,
        path: &str,
        body: Option<&Value>,
        key: &str,
        first_timeout: Duration,
    ) -> Option<Vec<u8>> {
        let stats = &self.ledger.stats;
        stats.writes.fetch_add(1, Ordering::Relaxed);
        let sent = self
            .api
            .write(stats, path, body, key, first_timeout, &self.stop)
            .await;
        match sent {
            Sent::Acked(b) => {
                stats.acked.fetch_add(1, Ordering::Relaxed);
                Some(b)
            }
            Sent::Refused(status, body) => {
                stats.refused.fetch_add(1, Ordering::Relaxed);
                // The same key and request again must never be taken for another request.
                if status == 422 && body.contains("dempotency") {
                    self.ledger.replay_mismatches.lock().unwrap().push(format!(
                        "{path} key {key}: a retry of the same request was refused: {body}"
                    ));
                }
                None
            }
            Sent::Abandoned(_) => {
                stats.abandoned.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// [`Raw::send_and_drop`] on a blocking thread, after `delay` (slept there: tokio's
    /// timers have a resolution of 1 ms).
    async fn drop_after_send(
        &self,
        path: &str,
        body: Option<&Value>,
        key: &str,
        delay: Duration,
        linger: Duration,
    ) {
        let raw = self.api.raw.clone();
        let (path, body, key) = (path.to_owned(), body.cloned(), key.to_owned());
        let _ = tokio::task::spawn_blocking(move || {
            if !delay.is_zero() {
                std::thread::sleep(delay);
            }
            raw.send_and_drop(&path, body.as_ref(), &key, linger)
        })
        .await;
    }

    /// Sends an acknowledged write again with the same key (a client that lost the
    /// answer): the answer must be the first one.
    async fn replay<T: Answer>(&self, path: &str, body: Option<&Value>, key: &str, first: &str) {
        let stats = &self.ledger.stats;
        stats.replays.fetch_add(1, Ordering::Relaxed);
        if let Sent::Acked(b) = self
            .api
            .write(stats, path, body, key, PATIENT, &self.stop)
            .await
        {
            let second = serde_json::from_slice::<T>(&b).map_or_else(
                |e| format!("an answer that does not parse ({e})"),
                |a| a.summary(),
            );
            if second != first {
                self.ledger
                    .replay_mismatches
                    .lock()
                    .unwrap()
                    .push(format!("{path} key {key}: first {first}, then {second}"));
            }
        }
    }

    fn mode(rng: &mut Rng) -> Mode {
        [Mode::Patient, Mode::TimeoutRetry, Mode::Disconnect][rng.weighted(&[6, 2, 2])]
    }

    fn username(&self) -> String {
        format!(
            "{}-{}",
            self.prefix,
            self.next_user.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// Joins `count` members in one bulk request (setup), all patient.
    pub async fn join_bulk(&self, rng: &mut Rng, count: usize) -> Result<Vec<Member>, String> {
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
    pub async fn join_some(&self, rng: &mut Rng) {
        let mode = Self::mode(rng);
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
            let mode = Self::mode(rng);
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

    /// Issues one certificate to `m`, patiently (setup); true when acknowledged.
    pub async fn issue_one(&self, rng: &mut Rng, m: &Member) -> bool {
        self.issue(rng, m, 1, Mode::Patient).await
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
    pub async fn issue_more(&self, rng: &mut Rng) {
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
                let mode = Self::mode(rng);
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
    pub async fn revoke_some(self: &Arc<Self>, rng: &mut Rng) {
        if rng.chance(0.4) {
            return self.race(rng).await;
        }
        let Some(m) = self.take_member(rng) else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            return;
        };
        let mode = Self::mode(rng);
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

    /// Runs a client loop until `stop`: `kind` 0 joins, 1 issues, 2 revokes.
    pub async fn client(self: Arc<Self>, kind: u8, mut rng: Rng) {
        while !self.stopping() {
            match kind {
                0 => self.join_some(&mut rng).await,
                1 => self.issue_more(&mut rng).await,
                _ => self.revoke_some(&mut rng).await,
            }
            tokio::time::sleep(Duration::from_millis(rng.range(5, 120))).await;
        }
    }
}

/// The answer of an admin write (its type in `dgsp-wire`).
trait Answer: serde::de::DeserializeOwned {
    /// What must be the same when the write is answered twice under one key.
    fn summary(&self) -> String;
}

/// The member id.
impl Answer for JoinedMember {
    fn summary(&self) -> String {
        format!("id {}", self.id)
    }
}

/// The member ids.
impl Answer for BulkJoined {
    fn summary(&self) -> String {
        let ids: Vec<String> = self.members.iter().map(|m| m.id.to_string()).collect();
        format!("ids {}", ids.join(","))
    }
}

/// The counters (the certificates may be signed again after a restart).
impl Answer for Issued {
    fn summary(&self) -> String {
        format!("id {} first {}", self.id, self.first_counter)
    }
}

/// The entry and the zetas.
impl Answer for Revoked {
    fn summary(&self) -> String {
        format!("seq {} zetas {:?}", self.seq, self.zetas)
    }
}

/// A request body of the registry's admin API, from its type in `dgsp-wire` (a renamed
/// field fails to compile here instead of being refused at run time).
fn typed(body: impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(body).expect("request bodies serialize")
}
