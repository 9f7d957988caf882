//! Honest logs for the auditor tests, written by the real registry: an in-process registry
//! on loopback (RocksDB in a temp dir; over HTTPS with `start_over_tls`), driven through its
//! admin API (and, for bulk issuance, its writer), read back with the private parts, then
//! shut down cleanly.
#![allow(dead_code)]

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::{Certificate, CidStar, CsrItem, Manager, MemberKey, ParamSet, SigningKey};
use dgsp_registry::server;
use dgsp_registry::store::Store;
use dgsp_registry::writer::Command;
use dgsp_wire::log::Entry;
use rand_core::{OsRng, RngCore};
use serde_json::{json, Value};

/// The admin token of test registries.
pub const ADMIN: &str = "admin-token-for-audit-tests";
/// The auditor token of test registries.
pub const AUDITOR: &str = "auditor-token-for-audit-tests";

/// A registry serving on loopback.
pub struct Registry {
    /// Base URL.
    pub url: String,
    client: reqwest::Client,
    /// Its database.
    pub store: Arc<Store>,
    /// The group manager.
    pub manager: Arc<Manager>,
    running: server::Running,
    _dir: tempfile::TempDir,
}

/// A member with unused signing keys.
pub struct Member {
    /// Member id.
    pub id: u64,
    key: MemberKey,
    cid_star: String,
    keys: Vec<SigningKey>,
}

/// An honest log and the key of the manager that wrote it.
pub struct Log {
    /// Every entry, with private parts.
    pub entries: Vec<Entry>,
    /// The manager (tests re-sign with it as a dishonest manager would).
    pub manager: Arc<Manager>,
}

impl Registry {
    /// Starts a registry for a new sha2-128f group, with an auditor token.
    pub async fn start() -> Registry {
        Registry::start_publishing(None).await
    }

    /// Starts a registry that also publishes its tiles into `tiles` (as `--tiles-dir`
    /// does), when given.
    pub async fn start_publishing(tiles: Option<Arc<dyn dgsp_tilestore::TileStore>>) -> Registry {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Registry::start_on(listener.into(), reqwest::Client::new(), tiles).await
    }

    /// Starts a registry serving HTTPS with `tls` (as `serve --tls-cert --tls-key` does);
    /// the test's own admin calls trust only `ca`.
    pub async fn start_over_tls(
        tls: Arc<dgsp_http::tls::Tls>,
        ca: &dgsp_http::tls::test_certs::TestCa,
    ) -> Registry {
        let roots = reqwest::Certificate::from_pem_bundle(ca.pem().as_bytes()).unwrap();
        let client = reqwest::Client::builder()
            .tls_certs_only(roots)
            .build()
            .unwrap();
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let listen = dgsp_http::tls::Listen::with_tls_no_signal(tcp, tls);
        Registry::start_on(listen, client, None).await
    }

    async fn start_on(
        listener: dgsp_http::tls::Listen,
        client: reqwest::Client,
        tiles: Option<Arc<dyn dgsp_tilestore::TileStore>>,
    ) -> Registry {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let manager = Arc::new(Manager::generate(ParamSet::Sha2_128f, &mut OsRng));
        store.create_group(manager.public_key(), 1).unwrap();
        let config = server::Config {
            admin_token: ADMIN.into(),
            auditor_token: Some(AUDITOR.into()),
            body_limit: dgsp_registry::api::DEFAULT_BODY_LIMIT,
            publisher: Default::default(),
            feed_bytes_in_flight: dgsp_registry::feed::DEFAULT_BYTES_IN_FLIGHT,
            backups: None,
            tiles,
        };
        let running = server::start(store.clone(), manager.clone(), listener, config)
            .await
            .unwrap();
        Registry {
            url: running.url(),
            client,
            store,
            manager,
            running,
            _dir: dir,
        }
    }

    /// Reads the whole log, then stops like `serve` does (RocksDB closes before exit).
    pub async fn finish(self) -> Log {
        self.settled().await;
        let entries = self.store.entries_after(0, usize::MAX).unwrap();
        let manager = self.manager.clone();
        let Registry {
            running,
            store,
            _dir,
            ..
        } = self;
        drop(store);
        running.shutdown().await.unwrap();
        drop(_dir);
        Log { entries, manager }
    }

    /// POSTs to the admin API; panics unless 2xx.
    pub async fn admin(&self, path: &str, body: &Value) -> Value {
        let r = self
            .client
            .post(format!("{}{path}", self.url))
            .bearer_auth(ADMIN)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let v: Value = r.json().await.unwrap();
        assert!(status.is_success(), "{path}: {status} {v}");
        v
    }

    /// Joins `username` and gets `count` real certificates for it.
    pub async fn member(&self, username: &str, count: usize) -> Member {
        let params = self.manager.params();
        let joined = self
            .admin("/admin/v1/members", &json!({"username": username}))
            .await;
        let id = joined["id"].as_u64().unwrap();
        let cid_star = joined["cid_star"].as_str().unwrap().to_owned();
        let key = MemberKey::generate(
            params,
            id,
            CidStar::from_slice(params, &B64.decode(&cid_star).unwrap()).unwrap(),
            &mut OsRng,
        );
        let mut m = Member {
            id,
            key,
            cid_star,
            keys: Vec::new(),
        };
        self.issue(&mut m, count).await;
        m
    }

    /// Issues `count` more real certificates to `m` through the admin API.
    pub async fn issue(&self, m: &mut Member, count: usize) {
        let items: Vec<CsrItem> = m.key.csr(count, &mut OsRng);
        let pks: Vec<String> = items
            .iter()
            .map(|i| B64.encode(i.wots_pk().as_bytes()))
            .collect();
        let issued = self
            .admin(
                &format!("/admin/v1/members/{}/certificates", m.id),
                &json!({"cid_star": m.cid_star, "wots_pks": pks}),
            )
            .await;
        for (item, c) in items
            .into_iter()
            .zip(issued["certificates"].as_array().unwrap())
        {
            let cert = Certificate::from_bytes(&B64.decode(c.as_str().unwrap()).unwrap()).unwrap();
            let key = m
                .key
                .import(self.manager.public_key(), item, &cert)
                .unwrap();
            m.keys.push(key);
        }
    }

    /// `m` signs `message` and the manager opens the signature (logged).
    pub async fn sign_and_open(&self, m: &mut Member, message: &[u8]) {
        let sig = m.keys.pop().expect("an unused certificate").sign(message);
        let v = self
            .admin(
                "/admin/v1/open",
                &json!({"message": B64.encode(message), "signature": B64.encode(sig.to_bytes())}),
            )
            .await;
        assert_eq!(v["id"].as_u64(), Some(m.id));
    }

    /// Revokes member `id`.
    pub async fn revoke(&self, id: u64) {
        self.admin(&format!("/admin/v1/members/{id}/revoke"), &json!({}))
            .await;
    }

    /// Admits `usernames` at once; returns their ids.
    pub async fn bulk_join(&self, usernames: &[String]) -> Vec<u64> {
        let v = self
            .admin("/admin/v1/members/bulk", &json!({"usernames": usernames}))
            .await;
        v["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_u64().unwrap())
            .collect()
    }

    /// Reserves counters through the writer, as the admin API does before it signs the
    /// certificates (skipping the SPHINCS+ signing, which the log does not record): one
    /// `(id, count)` per issuance, submitted concurrently so the writer group-commits.
    pub async fn bulk_issue(&self, issues: &[(u64, u64)]) {
        let writer = self.running.state.writer.clone();
        let tasks: Vec<_> = issues
            .iter()
            .map(|&(id, count)| {
                let writer = writer.clone();
                let digests = (0..count).map(|_| random_hex(32)).collect();
                tokio::spawn(async move {
                    writer
                        .submit(
                            Command::Issue {
                                id,
                                count,
                                wots_pk_digests: digests,
                            },
                            None,
                        )
                        .await
                        .unwrap()
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    }

    /// Revokes `ids` concurrently.
    pub async fn bulk_revoke(&self, ids: &[u64]) {
        let writer = self.running.state.writer.clone();
        let tasks: Vec<_> = ids
            .iter()
            .map(|&id| {
                let writer = writer.clone();
                tokio::spawn(
                    async move { writer.submit(Command::Revoke { id }, None).await.unwrap() },
                )
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    }

    /// The size of the latest checkpoint the registry has logged.
    fn checkpointed(&self) -> u64 {
        self.store
            .latest_checkpoint()
            .unwrap()
            .and_then(|e| e.public["size"].as_u64())
            .unwrap_or(0)
    }

    /// Waits until every operator action so far is covered by a checkpoint and every
    /// revocation by a snapshot.
    pub async fn settled(&self) {
        wait_for("the registry to checkpoint its log", || async {
            let mut last_action = 0;
            let mut last_revocation = 0;
            for e in self.store.entries_after(0, usize::MAX).unwrap() {
                match e.kind.as_str() {
                    "checkpoint" | "snapshot_published" => {}
                    "member_revoked" => {
                        last_revocation = e.seq;
                        last_action = e.seq;
                    }
                    _ => last_action = e.seq,
                }
            }
            let snapshot_ok = self
                .store
                .latest_snapshot()
                .unwrap()
                .and_then(|s| s["record"]["log_seq"].as_u64())
                .is_some_and(|seq| seq >= last_revocation);
            (snapshot_ok && self.checkpointed() >= last_action).then_some(())
        })
        .await
    }
}

/// `n` random bytes as hex.
pub fn random_hex(n: usize) -> String {
    let mut b = vec![0u8; n];
    OsRng.fill_bytes(&mut b);
    hex::encode(b)
}

/// Polls `check` every 20 ms until it yields a value (panics after 60 s, naming `what`).
pub async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs `f` on a fresh runtime in its own thread (for fixtures shared by sync tests).
pub fn block_on<T: Send + 'static>(f: impl Future<Output = T> + Send + 'static) -> T {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    })
    .join()
    .unwrap()
}

/// The small honest log the tampering tests start from: four members with real
/// certificates; two openings of alice's signatures; bob, carol and dave revoked one
/// after the other (a snapshot after each); a second issuance to alice and a third
/// opening. Every action is checkpointed.
pub async fn small_log() -> Log {
    let r = Registry::start().await;
    let mut alice = r.member("alice", 3).await;
    let bob = r.member("bob", 2).await;
    let carol = r.member("carol", 3).await;
    let dave = r.member("dave", 2).await;
    r.sign_and_open(&mut alice, b"first message").await;
    r.sign_and_open(&mut alice, b"second message").await;
    r.settled().await;
    for m in [&bob, &carol, &dave] {
        r.revoke(m.id).await;
        r.settled().await;
    }
    r.issue(&mut alice, 2).await;
    r.sign_and_open(&mut alice, b"third message").await;
    r.finish().await
}

/// Thousands of events: `members` joined at once, one to three certificates each, a
/// second issuance to every fourth, every seventh revoked (in three waves, so several
/// snapshots), and a real member whose two signatures are opened.
pub async fn populate_large(r: &Registry, members: usize) {
    let names: Vec<String> = (0..members).map(|i| format!("user{i:05}")).collect();
    let ids = r.bulk_join(&names).await;
    let first: Vec<(u64, u64)> = ids.iter().map(|&id| (id, 1 + id % 3)).collect();
    r.bulk_issue(&first).await;
    let second: Vec<(u64, u64)> = ids
        .iter()
        .filter(|&&id| id % 4 == 0)
        .map(|&id| (id, 2))
        .collect();
    r.bulk_issue(&second).await;
    let revoked: Vec<u64> = ids.iter().copied().filter(|id| id % 7 == 0).collect();
    for wave in revoked.chunks(revoked.len().div_ceil(3).max(1)) {
        r.bulk_revoke(wave).await;
        r.settled().await;
    }
    let mut signer = r.member("signer", 2).await;
    r.sign_and_open(&mut signer, b"one").await;
    r.sign_and_open(&mut signer, b"two").await;
}
