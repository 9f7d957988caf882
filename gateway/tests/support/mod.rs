//! Shared by the gateway tests: a real registry on loopback (RocksDB in a temp dir), members
//! that join, get certificates and sign through its admin API, and gateways that follow it.
#![allow(dead_code)]

pub mod mock;
pub mod proxy;
pub mod signed_time;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::{
    Certificate, CidStar, CsrItem, Manager, MemberKey, ParamSet, Signature, SigningKey,
};
use dgsp_gateway::anchor::Anchor;
use dgsp_gateway::server as gw;
use dgsp_registry::server;
use dgsp_registry::store::Store;
use dgsp_wire::log::Entry;
use rand_core::OsRng;
use serde_json::{json, Value};

/// The admin token of test registries.
pub const ADMIN: &str = "admin-token-for-gateway-tests";

/// A registry serving on loopback.
pub struct Registry {
    /// Base URL.
    pub url: String,
    /// Where gateways follow it (the registry itself).
    pub feed_url: String,
    /// HTTP client.
    pub client: reqwest::Client,
    /// Its database (read-only use in tests).
    pub store: Arc<Store>,
    /// The group manager.
    pub manager: Arc<Manager>,
    running: server::Running,
    _dir: tempfile::TempDir,
}

/// Starts a registry for a new sha2-128f group.
pub async fn registry() -> Registry {
    registry_with(ParamSet::Sha2_128f).await
}

/// Starts a registry for a new group of `params`.
pub async fn registry_with(params: ParamSet) -> Registry {
    start_registry(params, None).await
}

/// Starts a registry for a new sha2-128f group that signs a checkpoint at least every
/// `interval`, even when nothing is written.
pub async fn registry_with_cadence(interval: Duration) -> Registry {
    start_registry(ParamSet::Sha2_128f, Some(interval)).await
}

async fn start_registry(params: ParamSet, cadence: Option<Duration>) -> Registry {
    registry_on_log(params, cadence, |_, _| ()).await.0
}

/// Starts a registry for a new sha2-128f group on a log that `write` extends first, whose
/// mirror publishes its tiles and snapshot bundles to the directory `tiles`, signing a
/// checkpoint at least every `cadence`.
pub async fn registry_with_tiles<T: Send + 'static>(
    tiles: &std::path::Path,
    cadence: Duration,
    write: impl FnOnce(&Arc<Store>, &Arc<Manager>) -> T + Send + 'static,
) -> (Registry, T) {
    let store = dgsp_tilestore::LocalDir::open(tiles).unwrap();
    start_on_log(
        ParamSet::Sha2_128f,
        Some(cadence),
        Some(Arc::new(store)),
        write,
        None,
    )
    .await
}

/// Makes a registry's publisher configuration from its manager (a log key, witnesses).
pub type Publishing =
    Box<dyn FnOnce(&Arc<Manager>) -> dgsp_registry::publisher::PublisherConfig + Send>;

/// Starts a registry for a new sha2-128f group whose publisher `publishing` configures
/// (its log key, its witnesses, its cadence).
pub async fn registry_publishing(publishing: Publishing) -> Registry {
    start_on_log(ParamSet::Sha2_128f, None, None, |_, _| (), Some(publishing))
        .await
        .0
}

/// [`registry_with_tiles`] (mirroring to the directory `tiles`), its publisher configured
/// by `publishing` (its log key, its witnesses, its cadence).
pub async fn registry_publishing_with_tiles(
    tiles: &std::path::Path,
    publishing: Publishing,
) -> Registry {
    let store = dgsp_tilestore::LocalDir::open(tiles).unwrap();
    start_on_log(
        ParamSet::Sha2_128f,
        None,
        Some(Arc::new(store)),
        |_, _| (),
        Some(publishing),
    )
    .await
    .0
}

/// [`registry_with_tiles`] publishing into `tiles` (an S3 bucket, say).
pub async fn registry_with_tile_store(
    tiles: Arc<dyn dgsp_tilestore::TileStore>,
    cadence: Duration,
) -> Registry {
    start_on_log(
        ParamSet::Sha2_128f,
        Some(cadence),
        Some(tiles),
        |_, _| (),
        None,
    )
    .await
    .0
}

/// Starts a registry for a new group of `params` on a log that `write` extends first (with
/// its own writer, as a registry that ran before did), and returns what `write` returns.
pub async fn registry_on_log<T: Send + 'static>(
    params: ParamSet,
    cadence: Option<Duration>,
    write: impl FnOnce(&Arc<Store>, &Arc<Manager>) -> T + Send + 'static,
) -> (Registry, T) {
    start_on_log(params, cadence, None, write, None).await
}

/// Starts a registry for a new sha2-128f group serving HTTPS with `tls`; its client (for
/// the admin calls) trusts only `ca`'s certificates.
pub async fn registry_over_tls(
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
    start_on(
        listen,
        client,
        ParamSet::Sha2_128f,
        None,
        None,
        |_, _| (),
        None,
    )
    .await
    .0
}

async fn start_on_log<T: Send + 'static>(
    params: ParamSet,
    cadence: Option<Duration>,
    tiles: Option<Arc<dyn dgsp_tilestore::TileStore>>,
    write: impl FnOnce(&Arc<Store>, &Arc<Manager>) -> T + Send + 'static,
    publishing: Option<Publishing>,
) -> (Registry, T) {
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = reqwest::Client::new();
    start_on(
        tcp.into(),
        client,
        params,
        cadence,
        tiles,
        write,
        publishing,
    )
    .await
}

async fn start_on<T: Send + 'static>(
    listener: dgsp_http::tls::Listen,
    client: reqwest::Client,
    params: ParamSet,
    cadence: Option<Duration>,
    tiles: Option<Arc<dyn dgsp_tilestore::TileStore>>,
    write: impl FnOnce(&Arc<Store>, &Arc<Manager>) -> T + Send + 'static,
    publishing: Option<Publishing>,
) -> (Registry, T) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    let manager = Arc::new(Manager::generate(params, &mut OsRng));
    store.create_group(manager.public_key(), 1).unwrap();
    let (s, m) = (store.clone(), manager.clone());
    let written = tokio::task::spawn_blocking(move || write(&s, &m))
        .await
        .unwrap();
    let config = server::Config {
        admin_token: ADMIN.into(),
        auditor_token: None,
        body_limit: dgsp_registry::api::DEFAULT_BODY_LIMIT,
        publisher: match publishing {
            Some(make) => make(&manager),
            None => cadence
                .map(
                    |checkpoint_interval| dgsp_registry::publisher::PublisherConfig {
                        checkpoint_interval,
                        ..Default::default()
                    },
                )
                .unwrap_or_default(),
        },
        feed_bytes_in_flight: dgsp_registry::feed::DEFAULT_BYTES_IN_FLIGHT,
        backups: None,
        tiles,
    };
    let running = server::start(store.clone(), manager.clone(), listener, config)
        .await
        .unwrap();
    let url = running.url();
    let registry = Registry {
        feed_url: url.clone(),
        url,
        client,
        store,
        manager,
        running,
        _dir: dir,
    };
    (registry, written)
}

/// A member with unused signing keys.
pub struct Member {
    /// Member id.
    pub id: u64,
    /// Its `cid_star` as the registry gave it (base64).
    pub cid_star: String,
    /// Its long-term key (for more CSRs).
    pub key: MemberKey,
    /// Unused one-time keys.
    pub keys: Vec<SigningKey>,
}

impl Member {
    /// Signs with the next unused certificate.
    pub fn sign(&mut self, message: &[u8]) -> Signature {
        self.keys
            .pop()
            .expect("an unused certificate")
            .sign(message)
    }
}

impl Registry {
    /// Stops like `serve` does, so RocksDB closes before the process exits.
    pub async fn shutdown(self) {
        self.running.shutdown().await.unwrap();
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

    /// Joins `username` and gets `count` certificates for it.
    pub async fn member(&self, username: &str, count: usize) -> Member {
        let params = self.manager.params();
        let joined = self
            .admin("/admin/v1/members", &json!({"username": username}))
            .await;
        let id = joined["id"].as_u64().unwrap();
        let cid_star = CidStar::from_slice(
            params,
            &B64.decode(joined["cid_star"].as_str().unwrap()).unwrap(),
        )
        .unwrap();
        let key = MemberKey::generate(params, id, cid_star, &mut OsRng);
        let items: Vec<CsrItem> = key.csr(count, &mut OsRng);
        let pks: Vec<String> = items
            .iter()
            .map(|i| B64.encode(i.wots_pk().as_bytes()))
            .collect();
        let issued = self
            .admin(
                &format!("/admin/v1/members/{id}/certificates"),
                &json!({"cid_star": joined["cid_star"], "wots_pks": pks}),
            )
            .await;
        let keys = items
            .into_iter()
            .zip(issued["certificates"].as_array().unwrap())
            .map(|(item, c)| {
                let cert =
                    Certificate::from_bytes(&B64.decode(c.as_str().unwrap()).unwrap()).unwrap();
                key.import(self.manager.public_key(), item, &cert).unwrap()
            })
            .collect();
        Member {
            id,
            cid_star: joined["cid_star"].as_str().unwrap().to_owned(),
            key,
            keys,
        }
    }

    /// Its whole log as a follower reads it (public parts).
    pub fn public_log(&self) -> Vec<Entry> {
        public_log(&self.store)
    }

    /// The registry's writer, for setting up states the admin API would take long to reach.
    pub fn writer(&self) -> &dgsp_registry::writer::Writer {
        &self.running.state.writer
    }

    /// Revokes member `id`; returns the revoked zetas (hex).
    pub async fn revoke(&self, id: u64) -> Vec<String> {
        let v = self
            .admin(&format!("/admin/v1/members/{id}/revoke"), &json!({}))
            .await;
        v["zetas"]
            .as_array()
            .unwrap()
            .iter()
            .map(|z| z.as_str().unwrap().to_owned())
            .collect()
    }

    /// Member `id` gets `count` certificates reserved straight through the writer (no keys,
    /// no signing) and is revoked: many zetas to revoke, quickly.
    pub async fn reserve_and_revoke(&self, id: u64, count: u64) {
        use dgsp_registry::writer::Command;
        self.writer()
            .submit(
                Command::Issue {
                    id,
                    count,
                    wots_pk_digests: Vec::new(),
                },
                None,
            )
            .await
            .unwrap();
        self.revoke(id).await;
    }

    /// Opens a signature; returns `(id, pi base64)`.
    pub async fn open(&self, message: &[u8], sig: &Signature) -> (u64, String) {
        let v = self
            .admin(
                "/admin/v1/open",
                &json!({"message": B64.encode(message), "signature": B64.encode(sig.to_bytes())}),
            )
            .await;
        (
            v["id"].as_u64().unwrap(),
            v["pi"].as_str().unwrap().to_owned(),
        )
    }

    /// Starts a gateway pinned to this group by key (data in a fresh temp dir), with the
    /// test configuration adjusted by `tweak`, and waits until it has applied everything
    /// the registry has settled.
    pub async fn follower(&self, tweak: impl FnOnce(&mut gw::Config)) -> Gateway {
        let dir = tempfile::tempdir().unwrap();
        let mut config = gateway_config(
            &self.feed_url,
            Anchor::Key(Box::new(self.manager.public_key().clone())),
            dir.path(),
        );
        tweak(&mut config);
        let g = gateway_in(config, dir).await;
        g.reach(self.settled().await).await;
        g
    }

    /// The size of the latest checkpoint the registry has logged.
    pub fn checkpointed(&self) -> u64 {
        self.store
            .latest_checkpoint()
            .unwrap()
            .and_then(|e| e.public["size"].as_u64())
            .unwrap_or(0)
    }

    /// Waits until every operator action so far is covered by a checkpoint and every
    /// revocation by a snapshot, and returns the checkpoint's size.
    pub async fn settled(&self) -> u64 {
        wait_for("the registry to checkpoint its log", || async {
            let entries = self.store.entries_after(0, 1_000_000).unwrap();
            let last_action = entries
                .iter()
                .filter(|e| e.kind != "checkpoint" && e.kind != "snapshot_published")
                .map(|e| e.seq)
                .max()
                .unwrap_or(0);
            let last_revocation = entries
                .iter()
                .filter(|e| e.kind == "member_revoked")
                .map(|e| e.seq)
                .max()
                .unwrap_or(0);
            let snapshot_ok = self
                .store
                .latest_snapshot()
                .unwrap()
                .and_then(|s| s["record"]["log_seq"].as_u64())
                .is_some_and(|seq| seq >= last_revocation);
            let cp = self.checkpointed();
            (snapshot_ok && cp >= last_action).then_some(cp)
        })
        .await
    }
}

/// The whole log in `store` as a follower reads it (public parts).
pub fn public_log(store: &Store) -> Vec<Entry> {
    store
        .entries_after(0, 1_000_000)
        .unwrap()
        .iter()
        .map(Entry::redacted)
        .collect()
}

/// A gateway following a registry.
pub struct Gateway {
    /// Base URL.
    pub url: String,
    /// HTTP client.
    pub client: reqwest::Client,
    running: gw::Running,
    _dir: Option<tempfile::TempDir>,
}

/// The default test configuration: fast polls, short timeouts.
pub fn gateway_config(registry_url: &str, anchor: Anchor, data: &std::path::Path) -> gw::Config {
    let mut c = gw::Config::new(registry_url, anchor, data.to_path_buf());
    c.follow.poll = Duration::from_millis(20);
    c.follow.max_backoff = Duration::from_millis(200);
    c.follow.timeout = Duration::from_secs(2);
    c.resolve_attempts = 20;
    c
}

/// Starts a gateway with `config`.
pub async fn gateway(config: gw::Config) -> Gateway {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let running = gw::start(config, listener).await.unwrap();
    Gateway {
        url: running.url(),
        client: reqwest::Client::new(),
        running,
        _dir: None,
    }
}

/// Starts a gateway with `config` whose data directory `dir` lives as long as it does.
pub async fn gateway_in(config: gw::Config, dir: tempfile::TempDir) -> Gateway {
    let mut g = gateway(config).await;
    g._dir = Some(dir);
    g
}

impl Gateway {
    /// A gateway started with `gw::start` (on a listener bound beforehand, say).
    pub fn wrap(running: gw::Running) -> Gateway {
        Gateway {
            url: running.url(),
            client: reqwest::Client::new(),
            running,
            _dir: None,
        }
    }

    /// The running gateway's shared state.
    pub fn state(&self) -> &dgsp_gateway::api::Shared {
        &self.running.state
    }

    /// Where it listens.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.running.addr
    }

    /// Stops cleanly (closes the replica).
    pub async fn shutdown(self) {
        self.running.shutdown().await.unwrap();
    }

    /// GET, returning status and JSON (Null if not JSON).
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .client
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// POST JSON, returning status and JSON; error answers must be problem+json.
    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let body = serde_json::to_vec(body).unwrap();
        self.post_bytes(path, "application/json", body).await
    }

    /// POST a body of any content type, as [`post`](Self::post).
    pub async fn post_bytes(&self, path: &str, content_type: &str, body: Vec<u8>) -> (u16, Value) {
        post_bytes(
            &self.client,
            &format!("{}{path}", self.url),
            content_type,
            body,
        )
        .await
    }

    /// Verifies one signature.
    pub async fn verify(&self, message: &[u8], sig: &Signature) -> Value {
        let (status, v) = self
            .post(
                "/v1/verify",
                &json!({"message": B64.encode(message), "signature": B64.encode(sig.to_bytes())}),
            )
            .await;
        assert_eq!(status, 200, "{v}");
        v
    }

    /// The Prometheus text of /metrics.
    pub async fn metrics(&self) -> String {
        let r = self
            .client
            .get(format!("{}/metrics", self.url))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r.text().await.unwrap()
    }

    /// Verifies a batch of signatures of `message`.
    pub async fn verify_batch(&self, message: &[u8], sigs: &[&Signature]) -> Value {
        let items: Vec<Value> = sigs
            .iter()
            .map(|s| json!({"message": B64.encode(message), "signature": B64.encode(s.to_bytes())}))
            .collect();
        let (status, v) = self
            .post("/v1/verify/batch", &json!({ "items": items }))
            .await;
        assert_eq!(status, 200, "{v}");
        v
    }

    /// The last applied seq, from /readyz.
    pub async fn applied(&self) -> u64 {
        self.get("/readyz").await.1["applied_seq"]
            .as_u64()
            .unwrap_or(0)
    }

    /// Waits until this gateway has applied at least `seq`.
    pub async fn reach(&self, seq: u64) {
        wait_for(&format!("the gateway to apply entry {seq}"), || async {
            (self.applied().await >= seq).then_some(())
        })
        .await
    }
}

/// POSTs `body` as `content_type` to `url`, returning status and JSON; error answers must be
/// problem+json. A free function so that spawned tasks can use it with a cloned client.
pub async fn post_bytes(
    client: &reqwest::Client,
    url: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    let r = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    if !status.is_success() {
        assert_eq!(
            r.headers()["content-type"],
            "application/problem+json",
            "{url}"
        );
    }
    (status.as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// The `status` of every result of a batch answer, in order.
pub fn statuses(batch: &Value) -> Vec<&str> {
    batch["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect()
}

/// A metric's value in Prometheus text (the line `name value`), if present.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .map(|v| match v.trim() {
            "+Inf" => f64::INFINITY,
            v => v.parse().unwrap(),
        })
}

/// Polls `check` every 100 ms until it yields a value (panics after 120 s, naming `what`:
/// a guard against a hang, not a timing assertion).
pub async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
