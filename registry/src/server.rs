//! A running registry: the writer thread, the publisher task and the HTTP server, started
//! together and stopped in the one order that closes RocksDB cleanly (server drains →
//! publisher stops → last writer handle dropped → writer thread joined).

use std::net::SocketAddr;
use std::sync::Arc;

use dgsp_core::Manager;
use dgsp_http::tls::Listen;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::api::{self, AppState, Shared};
use crate::health::Health;
use crate::journal::{Journal, Lease};
use crate::publisher::{self, PublisherConfig};
use crate::store::{self, Store};
use crate::writer::Writer;

/// Settings of the HTTP side.
pub struct Config {
    /// admin bearer token
    pub admin_token: String,
    /// auditor bearer token, if any
    pub auditor_token: Option<String>,
    /// largest request body in bytes
    pub body_limit: usize,
    /// the publisher's cadence
    pub publisher: PublisherConfig,
    /// most bytes of feed pages in flight across requests (`feed::Budget`)
    pub feed_bytes_in_flight: usize,
    /// where online backups go and the key file they copy (`POST /admin/v1/backup`);
    /// `None` refuses them (`backups-disabled`)
    pub backups: Option<crate::backup::Settings>,
    /// where the log's tiles are published after each checkpoint (`crate::mirror`); `None`:
    /// only served by the registry itself
    pub tiles: Option<Arc<dyn dgsp_tilestore::TileStore>>,
}

/// A started registry.
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    /// `http`, or `https` when it serves TLS.
    scheme: &'static str,
    /// The shared state (store, writer, manager, published snapshots).
    pub state: Shared,
    stop: oneshot::Sender<()>,
    server: JoinHandle<std::io::Result<()>>,
    signer: (tokio::task::AbortHandle, JoinHandle<()>),
    mirror: Option<JoinHandle<()>>,
    writer_thread: std::thread::JoinHandle<()>,
    /// the write lease, what stops its renewals and the task renewing it, with a journal
    lease: Option<(Arc<Lease>, oneshot::Sender<()>, JoinHandle<()>)>,
}

/// Starts the writer, the publisher and the HTTP server on `listener` (a `TcpListener`
/// serves plain HTTP; a [`Listen`] with TLS serves HTTPS). Refuses a store whose
/// projections are not exactly its log (an interrupted rebuild, say).
pub async fn start(
    store: Arc<Store>,
    manager: Arc<Manager>,
    listener: impl Into<Listen>,
    config: Config,
) -> Result<Running, store::Error> {
    start_journaled(store, manager, listener, config, None).await
}

/// [`start`] with every write first made durable in `journal` (object storage), whose
/// lease this process holds: the lease is renewed while the registry runs (its loss halts
/// the registry) and released at a clean shutdown.
pub async fn start_journaled(
    store: Arc<Store>,
    manager: Arc<Manager>,
    listener: impl Into<Listen>,
    config: Config,
    journal: Option<Arc<Journal>>,
) -> Result<Running, store::Error> {
    let listener = listener.into();
    store.projections_current()?;
    let health = Arc::new(match &journal {
        Some(j) => Health::fenced(j.lease().clone()),
        None => Health::default(),
    });
    let lease = journal.as_ref().map(|j| {
        let (lease, halts) = (j.lease().clone(), health.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        let keeper = tokio::spawn(async move {
            if let Some(why) = lease
                .keep_until(async { stopped.await.unwrap_or(()) })
                .await
            {
                halts.halt(why.to_string());
            }
        });
        (j.lease().clone(), stop, keeper)
    });
    let (writer, writer_thread) =
        Writer::start_journaled(store.clone(), manager.clone(), health.clone(), journal)?;
    let published = publisher::load(&store, &manager)?;
    let (checkpoint_interval, clock, witnesses) = (
        config.publisher.checkpoint_interval,
        config.publisher.clock.clone(),
        config.publisher.witnesses.clone(),
    );
    let log_key = config
        .publisher
        .log_key
        .clone()
        .or_else(|| witnesses.as_ref().map(|w| w.log_key().clone()));
    let publisher = tokio::spawn(publisher::run(
        store.clone(),
        writer.clone(),
        manager.clone(),
        published.clone(),
        config.publisher.clone(),
    ));
    // Supervision: a publisher that panics halts the registry like one that fails. The
    // publisher itself is aborted at shutdown (it holds a writer handle).
    let publisher_abort = publisher.abort_handle();
    let supervised = health.clone();
    let supervisor = tokio::spawn(async move {
        if let Err(e) = publisher.await {
            if e.is_panic() {
                supervised.halt("the publisher panicked");
            }
        }
    });
    let signer = (publisher_abort, supervisor);
    // Whether this group's log can be served as tiles at all (every entry fits a bundle).
    let tiles_unavailable = dgsp_wire::tiles::check_params(manager.params())
        .err()
        .map(|e| e.to_string());
    let mirror = match (config.tiles.clone(), &tiles_unavailable) {
        (Some(tiles), None) => Some(tokio::spawn(crate::mirror::run(
            store.clone(),
            published.clone(),
            tiles,
            health.clone(),
        ))),
        (Some(_), Some(why)) => {
            tracing::error!(%why, "the log's tiles are not published");
            None
        }
        (None, _) => None,
    };
    let state = Arc::new(AppState {
        tiles_unavailable,
        store,
        writer,
        issuer: crate::issuance::Issuer::new(manager.clone(), Default::default()),
        manager,
        admin_token: api::token_hash(&config.admin_token),
        auditor_token: config.auditor_token.as_deref().map(api::token_hash),
        metrics: Default::default(),
        published,
        health,
        feed: crate::feed::Budget::new(config.feed_bytes_in_flight),
        backups: config.backups,
        checkpoint_interval,
        clock,
        witnesses,
        log_key,
        started: std::time::Instant::now(),
    });
    let addr = listener.local_addr().map_err(|e| store::Error::Corrupt {
        what: "listener".into(),
        reason: e.to_string(),
    })?;
    let scheme = listener.scheme();
    let (stop, stopped) = oneshot::channel::<()>();
    let app = api::router(state.clone(), config.body_limit);
    let server = tokio::spawn(listener.serve(app, async {
        stopped.await.ok();
    }));
    Ok(Running {
        addr,
        scheme,
        state,
        stop,
        server,
        signer,
        mirror,
        writer_thread,
        lease,
    })
}

impl Running {
    /// The base URL, `http://ADDR` (`https://ADDR` with TLS).
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    /// Serves until `signal` completes, then shuts down cleanly.
    ///
    /// With a journal, a halt (the lease lost or expired, a segment the object store did
    /// not take) also ends serving, and the result is an error naming it: the process
    /// exits, and whatever restarts it (systemd, compose, Kubernetes) starts a registry
    /// that catches up from the bucket and stands by until it holds the lease. Without a
    /// journal a halted registry stays up, refusing writes, for the operator.
    pub async fn serve_until(
        self,
        signal: impl std::future::Future<Output = ()>,
    ) -> std::io::Result<()> {
        let halted = async {
            if self.lease.is_none() {
                return std::future::pending().await;
            }
            loop {
                if let Some(reason) = self.state.health.halted() {
                    return reason;
                }
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
        };
        let halt = tokio::select! {
            () = signal => None,
            reason = halted => Some(reason),
        };
        let stopped = self.shutdown().await;
        match halt {
            Some(reason) => {
                tracing::error!(%reason, "halted with a journal: exiting, so that a restart catches up from the bucket and stands by");
                stopped?;
                Err(std::io::Error::other(format!("halted: {reason}")))
            }
            None => stopped,
        }
    }

    /// Drains in-flight requests, stops signing, ends the writer and closes the database.
    pub async fn shutdown(self) -> std::io::Result<()> {
        let Running {
            state,
            stop,
            server,
            signer,
            mirror,
            writer_thread,
            lease,
            ..
        } = self;
        let _ = stop.send(());
        let served = server.await.map_err(std::io::Error::other)?;
        signer.0.abort();
        let _ = signer.1.await;
        // The mirror holds the store: stopped before the database closes. What it had not
        // published yet, it publishes after the next start.
        if let Some(m) = mirror {
            m.abort();
            let _ = m.await;
        }
        drop(state);
        tokio::task::spawn_blocking(move || writer_thread.join())
            .await
            .map_err(std::io::Error::other)?
            .map_err(|_| std::io::Error::other("the writer thread panicked"))?;
        // Nothing writes any more: a standby may take over at once.
        if let Some((lease, stop, keeper)) = lease {
            // Between renewals, never during one: then the release matches the store.
            let _ = stop.send(());
            let _ = keeper.await;
            lease.release().await;
        }
        served
    }
}

/// Logging and the stop signal: the same for both services (`dgsp-http`).
pub use dgsp_http::process::{init_logging, shutdown_signal};
