//! A running gateway: the replica, the follower task and the HTTP server, started together
//! and stopped in the order that closes RocksDB cleanly (server drains → follower stops at a
//! safe point → last replica handle dropped).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use dgsp_http::tls::Listen;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::anchor::{Anchor, ResolveError};
use crate::api::{self, ApiConfig, AppState, Shared};
use crate::clock::WallClock;
use crate::follower::{FollowConfig, Follower};
use crate::layout::Layout;
use crate::pool::{PoolConfig, VerifyPool, DEFAULT_SLOTS_PER_WORKER};
use crate::replica::Replica;
use crate::state::{current, SyncStatus, View};
use crate::tiles::{TileFollower, TilesConfig};
use crate::witness::WitnessPolicy;

/// Everything `serve` is configured with.
#[derive(Clone, Debug)]
pub struct Config {
    /// The registry and how to poll it.
    pub follow: FollowConfig,
    /// The pinned group.
    pub anchor: Anchor,
    /// The replica directory.
    pub data: PathBuf,
    /// HTTP settings.
    pub api: ApiConfig,
    /// Verification threads (0: one per available core, see [`crate::layout`]).
    pub workers: usize,
    /// How long a verify worker may wait to gather more signatures into one engine batch,
    /// only while every other worker is busy ([`PoolConfig::coalesce_wait`]).
    pub coalesce_wait: Duration,
    /// Verifications that may be queued or running at once (0: 64 per worker, and at least
    /// `api.max_batch`); an explicit queue smaller than `api.max_batch` is refused.
    pub queue: usize,
    /// How many times to try reaching the registry to resolve a fingerprint anchor before
    /// giving up (0: forever).
    pub resolve_attempts: u32,
    /// The wall clock the follower and the API measure signed times by, and how far ahead
    /// of it a signed time may be (`--clock-tolerance-ms`); tests step it.
    pub clock: WallClock,
    /// Follow the log through its tiles instead of the registry's feed (`--tiles`): an
    /// empty replica starts from the newest checkpoint and the snapshot it names.
    pub tiles: Option<TilesConfig>,
    /// The witness policy (`--witness-policy`): the registry's checkpoints must carry a
    /// quorum of its witnesses' cosignatures, and answers are fresh only as of such a
    /// checkpoint (docs/witnesses.md, "Gateways"); with `tiles`, the tiles' `checkpoint.witnessed`.
    pub witness_policy: Option<Arc<WitnessPolicy>>,
    /// Be a witness of the group's log (`--witness-key`, `--witness-logs`): serve
    /// `POST /witness/add-checkpoint`, cosigning with this key, the state in the replica
    /// ([`crate::witnessing`]).
    pub witness: Option<crate::witnessing::WitnessConfig>,
}

impl Config {
    /// Defaults for following `registry`, pinned by `anchor`, keeping the replica in `data`.
    pub fn new(registry: impl Into<String>, anchor: Anchor, data: PathBuf) -> Self {
        Config {
            follow: FollowConfig::new(registry),
            anchor,
            data,
            api: ApiConfig::default(),
            workers: 0,
            coalesce_wait: DEFAULT_COALESCE_WAIT,
            queue: 0,
            resolve_attempts: 0,
            clock: WallClock::system(),
            tiles: None,
            witness_policy: None,
            witness: None,
        }
    }
}

/// The default coalescing wait (see docs/gateway.md, "Coalescing").
pub const DEFAULT_COALESCE_WAIT: Duration = Duration::ZERO;

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The replica could not be opened or read.
    #[error(transparent)]
    Replica(#[from] crate::replica::ReplicaError),
    /// The anchor does not match the replica or the registry.
    #[error("trust anchor: {0}")]
    Anchor(String),
    /// Options that cannot work together.
    #[error("configuration: {0}")]
    Config(String),
    /// Anything else (threads, the listener).
    #[error("{0}")]
    Other(String),
}

/// A started gateway.
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    /// `http`, or `https` when it serves TLS.
    scheme: &'static str,
    /// The shared state.
    pub state: Shared,
    stop: watch::Sender<bool>,
    server: JoinHandle<std::io::Result<()>>,
    follower: JoinHandle<()>,
    /// Turns true once the replica is closed ([`Replica::closed`]).
    replica_closed: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// How long [`Running::shutdown`] waits for the replica to close after everything that uses
/// it has stopped.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Opens the replica, pins the group, starts the follower and serves on `listener` (a
/// `TcpListener` serves plain HTTP; a [`Listen`] with TLS serves HTTPS).
pub async fn start(mut config: Config, listener: impl Into<Listen>) -> Result<Running, StartError> {
    let listener = listener.into();
    config.follow.witness_max_age = config.api.max_staleness;
    if let Some(tiles) = config.tiles.as_mut() {
        tiles.witness_max_age = config.api.max_staleness;
    }
    let pool = VerifyPool::new(&PoolConfig {
        workers: workers_for(&config),
        capacity: queue_for(&config)?,
        coalesce_wait: config.coalesce_wait,
    })
    .map_err(|e| StartError::Other(e.to_string()))?;
    // Private whatever the umask: RocksDB creates the replica's files with it.
    dgsp_secrets::dir::create_private(&config.data)
        .map_err(|e| StartError::Other(format!("{}: {e}", config.data.display())))?;
    let replica = Arc::new(Replica::open(&config.data.join("replica"))?);
    let replica_closed = replica.closed();
    let loaded = replica.load()?;
    let wanted = config.anchor.fingerprint();
    let group = match loaded.group.clone() {
        Some(pinned) if pinned.fingerprint() != wanted => {
            return Err(StartError::Anchor(format!(
                "the replica in {} is pinned to group {}, but --group-key names {}; use another --data directory",
                config.data.display(),
                hex::encode(pinned.fingerprint()),
                hex::encode(wanted)
            )))
        }
        Some(pinned) => pinned,
        None => {
            let pk = resolve(&config).await?;
            replica.pin_group(&pk)?;
            pk
        }
    };
    if let Some(policy) = &config.witness_policy {
        check_witnessing(&config, &group, policy.clone()).await?;
    }
    let view = View::resume(group, loaded, config.witness_policy.clone(), &config.clock)
        .map_err(StartError::Anchor)?;
    tracing::info!(
        group = %hex::encode(view.group.fingerprint()),
        applied = view.applied.seq,
        snapshot = view.snapshot.as_ref().map_or(0, |s| s.record.number),
        "replica loaded"
    );
    let view = Arc::new(RwLock::new(Arc::new(view)));
    let status = Arc::new(Mutex::new(SyncStatus::default()));
    let (stop, stopped) = watch::channel(false);
    let witness = config
        .witness
        .as_ref()
        .map(|w| {
            crate::witnessing::start(
                w,
                &current(&view).group,
                config.witness_policy.as_deref(),
                &config.follow,
                replica.clone(),
                stopped.clone(),
            )
        })
        .transpose()
        .map_err(StartError::Config)?;
    let follower = match &config.tiles {
        Some(tiles) => {
            let follower = TileFollower::new(
                tiles.clone(),
                replica.clone(),
                view.clone(),
                status.clone(),
                config.clock.clone(),
            )
            .map_err(|e| StartError::Other(e.to_string()))?;
            tokio::spawn(follower.run(stopped.clone()))
        }
        None => {
            let follower = Follower::new(
                config.follow.clone(),
                replica.clone(),
                view.clone(),
                status.clone(),
                config.clock.clone(),
            )
            .map_err(|e| StartError::Other(e.to_string()))?;
            tokio::spawn(follower.run(stopped.clone()))
        }
    };
    let state = Arc::new(AppState {
        view,
        status,
        replica,
        pool,
        config: config.api.clone(),
        counters: Default::default(),
        http: Default::default(),
        clock: config.clock.clone(),
        witness,
    });
    let addr = listener
        .local_addr()
        .map_err(|e| StartError::Other(e.to_string()))?;
    let app = api::router(state.clone());
    let mut stopped = stopped;
    let scheme = listener.scheme();
    let server = tokio::spawn(listener.serve(app, async move {
        let _ = stopped.changed().await;
    }));
    Ok(Running {
        addr,
        scheme,
        state,
        stop,
        server,
        follower,
        replica_closed,
    })
}

/// With a witness policy, at start: the policy must have a `log` line for this group's
/// log, and the registry's log-key statement, when the registry answers, must verify and
/// name that key (a registry that cannot be reached now is checked by the follower once it
/// connects). Following the tiles, there is no registry to ask: the policy's `log` line is
/// the log key (every witnessed note's log signature is verified under it).
async fn check_witnessing(
    config: &Config,
    group: &dgsp_core::ManagerPublicKey,
    policy: Arc<WitnessPolicy>,
) -> Result<(), StartError> {
    policy
        .log_keys(group)
        .map_err(|e| StartError::Config(format!("--witness-policy: {e}")))?;
    if config.tiles.is_some() {
        return Ok(());
    }
    let client = crate::follower::client(config.follow.timeout, &config.follow.roots)
        .map_err(|e| StartError::Other(e.to_string()))?;
    let group = Arc::new(group.clone());
    match crate::follower::check_log_key(&client, &config.follow, group, policy).await {
        Ok(()) => Ok(()),
        Err(
            e @ (crate::follower::Fault::Unreachable(_) | crate::follower::Fault::HttpStatus(_)),
        ) => {
            tracing::warn!(error = %e, "the registry's log key could not be read at start; the follower checks it once it connects");
            Ok(())
        }
        Err(e) => Err(StartError::Config(format!("--witness-policy: {e}"))),
    }
}

/// The queue capacity: `--queue` when given, which must hold a full batch; otherwise
/// [`DEFAULT_SLOTS_PER_WORKER`] per worker, and never less than one full batch.
fn queue_for(config: &Config) -> Result<usize, StartError> {
    let max_batch = config.api.max_batch;
    match config.queue {
        0 => Ok((DEFAULT_SLOTS_PER_WORKER * workers_for(config)).max(max_batch)),
        n if max_batch > n => Err(StartError::Config(format!(
            "--max-batch {max_batch} is larger than --queue {n}: a full batch could never be accepted; lower --max-batch or raise --queue"
        ))),
        n => Ok(n),
    }
}

/// Verify workers: `config.workers`, or the layout's default for the available cores.
fn workers_for(config: &Config) -> usize {
    Layout::detect(0, config.workers).verify_workers
}

async fn resolve(config: &Config) -> Result<dgsp_core::ManagerPublicKey, StartError> {
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let resolved = match &config.tiles {
            Some(tiles) if !matches!(config.anchor, Anchor::Key(_)) => {
                match crate::tiles::first_entry(tiles).await {
                    Ok(first) => config
                        .anchor
                        .key_from_first_entry(&first)
                        .map_err(ResolveError::Refused),
                    Err(e) => Err(ResolveError::Unavailable(e.to_string())),
                }
            }
            _ => crate::anchor::resolve(&config.anchor, &config.follow).await,
        };
        match resolved {
            Ok(pk) => return Ok(pk),
            Err(ResolveError::Refused(e)) => return Err(StartError::Anchor(e)),
            Err(ResolveError::Unavailable(e)) => {
                if config.resolve_attempts != 0 && attempt >= config.resolve_attempts {
                    return Err(StartError::Anchor(format!(
                        "could not read the group key from the registry: {e}"
                    )));
                }
                tracing::warn!(error = %e, attempt, "waiting for the registry to learn the group key");
                tokio::time::sleep(Duration::from_secs(1).min(config.follow.max_backoff)).await;
            }
        }
    }
}

impl Running {
    /// The base URL, `http://ADDR` (`https://ADDR` with TLS).
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    /// Serves until `signal` completes, then shuts down cleanly.
    pub async fn serve_until(
        self,
        signal: impl std::future::Future<Output = ()>,
    ) -> std::io::Result<()> {
        signal.await;
        self.shutdown().await
    }

    /// Drains in-flight requests, stops the follower at a safe point and closes the replica.
    pub async fn shutdown(self) -> std::io::Result<()> {
        let Running {
            state,
            stop,
            server,
            follower,
            replica_closed,
            ..
        } = self;
        let _ = stop.send(true);
        let served = server.await.map_err(std::io::Error::other)?;
        follower.await.map_err(std::io::Error::other)?;
        drop(state);
        // A blocking task a dropped request left running may still hold the replica: wait
        // until the database is closed (its lock released), so that a restart in the same
        // process, or the caller, finds it free.
        let deadline = tokio::time::Instant::now() + CLOSE_WAIT;
        while !replica_closed.load(std::sync::atomic::Ordering::SeqCst) {
            if tokio::time::Instant::now() > deadline {
                return Err(std::io::Error::other(format!(
                    "the replica is still open {CLOSE_WAIT:?} after shutdown: a task holds it"
                )));
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        served
    }
}
