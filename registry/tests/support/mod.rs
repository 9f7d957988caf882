//! What the registry's integration tests share: a group served in process on loopback
//! (`Registry::start`, or `group` and `serve` for a store a test prepares itself), the
//! `dgsp-registry` binary (`init`, the manager key it wrote, a free port for `serve`), and
//! the polls that wait for a registry (`/readyz`, `/v1/checkpoint`). Each test binary uses
//! part of it.
#![allow(dead_code)]

pub mod chain;
pub mod load;
pub mod rocksdb;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dgsp_core::{Manager, ParamSet};
use dgsp_registry::publisher::PublisherConfig;
use dgsp_registry::store::Store;
use dgsp_registry::{api, feed, keyfile, server};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use reqwest::StatusCode;
use serde_json::Value;

/// The registry binary of this package.
pub const BIN: &str = env!("CARGO_BIN_EXE_dgsp-registry");

/// What an in-process registry starts from: `admin_token`, no auditor token, the default
/// body limit, publisher and feed budget, no online backups. A test changes the fields it
/// is about: `server::Config { body_limit, ..config(ADMIN) }`.
pub fn config(admin_token: &str) -> server::Config {
    server::Config {
        admin_token: admin_token.into(),
        auditor_token: None,
        body_limit: api::DEFAULT_BODY_LIMIT,
        publisher: PublisherConfig::default(),
        feed_bytes_in_flight: feed::DEFAULT_BYTES_IN_FLIGHT,
        backups: None,
        tiles: None,
    }
}

/// A new sha2-128f group, created at `created_ms`, in a store at `db`; its manager is
/// generated from `seed`.
pub fn group(db: &Path, seed: u64, created_ms: u64) -> (Arc<Store>, Arc<Manager>) {
    let store = Arc::new(Store::open(db).unwrap());
    let manager = Arc::new(Manager::generate(
        ParamSet::Sha2_128f,
        &mut ChaCha20Rng::seed_from_u64(seed),
    ));
    store
        .create_group(manager.public_key(), created_ms)
        .unwrap();
    (store, manager)
}

/// Serves `store` with `manager` on a free loopback port.
pub async fn serve(
    store: Arc<Store>,
    manager: Arc<Manager>,
    config: server::Config,
) -> server::Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    server::start(store, manager, listener, config)
        .await
        .unwrap()
}

/// A fresh group served in process, in a temporary directory that lives as long as it.
pub struct Registry {
    pub url: String,
    pub client: reqwest::Client,
    pub store: Arc<Store>,
    pub manager: Arc<Manager>,
    pub running: server::Running,
    /// Declared last: dropped after the store is closed.
    pub dir: tempfile::TempDir,
}

impl Registry {
    /// A new group (`group`, created at 1 ms, manager from `seed`) served with `config`.
    pub async fn start(seed: u64, config: server::Config) -> Registry {
        Registry::start_configured(seed, config, |_, _| ()).await
    }

    /// As [`Registry::start`], with `configure` given the group's manager to finish `config`
    /// (a log key derived from it, say) before the registry starts.
    pub async fn start_configured(
        seed: u64,
        mut config: server::Config,
        configure: impl FnOnce(&Manager, &mut server::Config),
    ) -> Registry {
        let dir = tempfile::tempdir().unwrap();
        let (store, manager) = group(dir.path(), seed, 1);
        configure(&manager, &mut config);
        let running = serve(store.clone(), manager.clone(), config).await;
        Registry {
            url: running.url(),
            client: reqwest::Client::new(),
            store,
            manager,
            running,
            dir,
        }
    }

    /// `GET /readyz` once: its status and body.
    pub async fn readyz(&self) -> (StatusCode, String) {
        readyz(&self.client, &self.url).await
    }

    /// Stops like `serve` does, so RocksDB closes before the test process exits.
    pub async fn shutdown(self) {
        self.running.shutdown().await.unwrap();
    }
}

/// Runs `command` to its end and asserts that it succeeded (its stderr in the message).
pub fn succeeds(command: &mut Command) -> Output {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        command.get_args().collect::<Vec<_>>(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `dgsp-registry init --params sha2-128f --data DATA`, the key sealed with `passphrase`,
/// which must succeed.
pub fn init(data: &Path, passphrase: &str) {
    succeeds(
        Command::new(BIN)
            .args(["init", "--params", "sha2-128f", "--data"])
            .arg(data)
            .env("DGSP_KEY_PASSPHRASE", passphrase),
    );
}

/// The manager key `init` wrote in `data`, opened with `passphrase`.
pub fn manager_key(data: &Path, passphrase: &str) -> Arc<Manager> {
    let key = keyfile::read(&data.join("manager.key"), passphrase.as_bytes()).unwrap();
    Arc::new(Manager::new(key))
}

/// A loopback port nothing listens on, for a `serve` child process, and never one this test
/// process handed out before: a standby binds its port only when it takes over, so until then
/// the kernel may offer the same port again, and a second child given it would be mistaken
/// for the first.
pub fn free_port() -> u16 {
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if !handed_out.contains(&port) {
            handed_out.push(port);
            return port;
        }
    }
}

/// `GET url`, with `token` as the bearer when given: the status and the JSON body.
pub async fn get_json(
    client: &reqwest::Client,
    url: String,
    token: Option<&str>,
) -> (StatusCode, Value) {
    let mut request = client.get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let r = request.send().await.unwrap();
    (r.status(), r.json().await.unwrap())
}

/// `GET url`: the body as text (`/metrics`, say).
pub async fn get_text(client: &reqwest::Client, url: String) -> String {
    client.get(url).send().await.unwrap().text().await.unwrap()
}

/// How long a poll goes on before the test fails: `tries` requests, `every` apart. A guard
/// against a hang, not a timing assertion.
#[derive(Clone, Copy, Debug)]
pub struct Polls {
    pub tries: u32,
    pub every: Duration,
}

pub const fn polls(tries: u32, every_ms: u64) -> Polls {
    Polls {
        tries,
        every: Duration::from_millis(every_ms),
    }
}

/// `GET {url}/readyz` once: its status and body.
pub async fn readyz(client: &reqwest::Client, url: &str) -> (StatusCode, String) {
    let r = client.get(format!("{url}/readyz")).send().await.unwrap();
    (r.status(), r.text().await.unwrap())
}

/// Polls `/readyz` until its answer satisfies `done` (panics naming `what` and the last
/// answer after `polls`); returns that answer.
pub async fn wait_readyz_until(
    client: &reqwest::Client,
    url: &str,
    polls: Polls,
    what: &str,
    done: impl Fn(StatusCode, &str) -> bool,
) -> (StatusCode, String) {
    let mut last = None;
    for _ in 0..polls.tries {
        let (status, body) = readyz(client, url).await;
        if done(status, &body) {
            return (status, body);
        }
        last = Some((status, body));
        tokio::time::sleep(polls.every).await;
    }
    panic!("/readyz never answered {what}; last: {last:?}");
}

/// Polls `/readyz` until it answers `status`; returns its body.
pub async fn wait_readyz(
    client: &reqwest::Client,
    url: &str,
    status: StatusCode,
    polls: Polls,
) -> String {
    let what = status.to_string();
    wait_readyz_until(client, url, polls, &what, |s, _| s == status)
        .await
        .1
}

/// Waits until a registry started as a child process at `base` answers `/readyz` with a
/// success (a request that fails, nothing listening yet, is tried again), polling every
/// `every` for at most `within`.
pub async fn wait_serving(client: &reqwest::Client, base: &str, within: Duration, every: Duration) {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Ok(r) = client.get(format!("{base}/readyz")).send().await {
            if r.status().is_success() {
                return;
            }
        }
        tokio::time::sleep(every).await;
    }
    panic!("the registry never became ready");
}

/// Polls `GET {url}/v1/checkpoint` until its status and JSON satisfy `done` (panics naming
/// `what` and the last answer after `polls`); returns that checkpoint.
pub async fn wait_checkpoint(
    client: &reqwest::Client,
    url: &str,
    polls: Polls,
    what: &str,
    done: impl Fn(StatusCode, &Value) -> bool,
) -> Value {
    let mut last = None;
    for _ in 0..polls.tries {
        let (status, cp) = get_json(client, format!("{url}/v1/checkpoint"), None).await;
        if done(status, &cp) {
            return cp;
        }
        last = Some((status, cp));
        tokio::time::sleep(polls.every).await;
    }
    panic!("no checkpoint {what}; last: {last:?}");
}

/// Polls until the newest signed checkpoint covers at least the first `size` entries;
/// returns it.
pub async fn wait_covering(client: &reqwest::Client, url: &str, size: u64, polls: Polls) -> Value {
    let what = format!("covers {size} entries");
    wait_checkpoint(client, url, polls, &what, |status, cp| {
        status.is_success() && cp["size"].as_u64().expect("a checkpoint's size") >= size
    })
    .await
}

/// Reserves `count` certificates of member `id` straight through the writer (no keys, no
/// signing): a member with many zetas to revoke, quickly.
pub async fn reserve_certificates(writer: &dgsp_registry::writer::Writer, id: u64, count: u64) {
    use dgsp_registry::writer::{Command, Outcome};
    let reserved = writer
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
    assert!(
        matches!(reserved, Outcome::Reserved { count: c, .. } if c == count),
        "{reserved:?}"
    );
}
