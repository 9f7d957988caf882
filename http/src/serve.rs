//! Serving a router on a listener, plain or TLS, so that a silent or slow client holds up
//! nobody: the one accept loop of both services ([`crate::tls::Listen::serve`]).
//!
//! - **Accepting never waits.** The loop accepts a connection, sets `TCP_NODELAY`
//!   ([`crate::listener`]) and hands it to a task of its own; whatever that connection does
//!   next (its TLS handshake, its request) happens there.
//! - **At most [`Limits::max_connections`] open connections** per listener: one accepted
//!   past it is closed at once (logged at debug level, with a warning at most once a minute
//!   saying how many were closed), and the ones already open keep being served.
//! - **TLS handshakes** come in two parts. The ClientHello is read without a slot (rustls
//!   parses it and does no cryptography), at most [`MAX_CLIENT_HELLO_BYTES`] of it: an idle
//!   socket or a client trickling its ClientHello costs only its connection until its
//!   timeout. The rest of the handshake (the key exchange and signature, the client's
//!   answer) takes one of [`Limits::max_handshakes`] slots, which bound that work. When
//!   every slot is taken, the newcomer evicts the handshake that has held its slot longest,
//!   if that one has held it at least [`Limits::handshake_evict_after`] (the evicted
//!   connection is closed); only when every slot is younger is the newcomer closed, never
//!   queued. So a client that stalls after its ClientHello keeps a slot only until someone
//!   needs it, and a burst of fast handshakes is not churned. A client has
//!   [`Limits::handshake_timeout`] from the accept to the end of its handshake.
//! - **A header-read timeout on every connection** ([`Limits::header_read_timeout`]): a
//!   request's head (request line and headers) must arrive within it, or the connection is
//!   closed. The timer runs whenever the connection waits for a request, so it is also how
//!   long an idle keep-alive connection is kept.
//! - **Shutdown** is axum's graceful one: once the shutdown future completes, nothing more
//!   is accepted, every connection finishes the request it is serving and closes, and
//!   serving ends once all have closed (a connection still in its handshake is
//!   dropped).

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_rustls::{LazyConfigAcceptor, StartHandshake};

use crate::tls::Tls;

/// Default of [`Limits::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;

/// Default of [`Limits::header_read_timeout`].
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Default of [`Limits::handshake_timeout`].
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Default of [`Limits::max_handshakes`].
pub const DEFAULT_MAX_HANDSHAKES: usize = 256;

/// Default of [`Limits::handshake_evict_after`].
pub const DEFAULT_HANDSHAKE_EVICT_AFTER: Duration = Duration::from_millis(250);

/// The most bytes a TLS client may send before its ClientHello is complete (a ClientHello
/// with a post-quantum key share is about 1.5 KB); past it the connection is closed.
pub const MAX_CLIENT_HELLO_BYTES: usize = 16 * 1024;

/// What one listener allows its clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most connections open at once (`--max-connections`); at least 1.
    pub max_connections: usize,
    /// How long a request's head may take to arrive, and how long an idle keep-alive
    /// connection is kept (`--header-read-timeout-ms`).
    pub header_read_timeout: Duration,
    /// How long a TLS client has from the accept to the end of its handshake
    /// (`--tls-handshake-timeout-ms`).
    pub handshake_timeout: Duration,
    /// The most TLS handshakes past their ClientHello at once (the module's
    /// documentation); at least 1.
    pub max_handshakes: usize,
    /// When every handshake slot is taken, a new handshake evicts the one that has held its
    /// slot longest if that one has held it at least this long; else the new one is closed.
    pub handshake_evict_after: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            max_handshakes: DEFAULT_MAX_HANDSHAKES,
            handshake_evict_after: DEFAULT_HANDSHAKE_EVICT_AFTER,
        }
    }
}

/// Serves `app` on `tcp` (HTTPS with `tls`) within `limits` until `shutdown` completes,
/// then shuts down gracefully (the module's documentation).
pub(crate) async fn serve(
    tcp: TcpListener,
    tls: Option<Arc<Tls>>,
    limits: Limits,
    app: axum::Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let connections = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let handshakes = Arc::new(Slots::new(&limits));
    // `true` once shutting down; every connection task holds a receiver of `closed`, so
    // `closed_tx.closed()` completes when the last one has ended.
    let (stop_tx, stop_rx) = watch::channel(false);
    let (closed_tx, closed_rx) = watch::channel(());
    let mut full = Full::default();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = tcp.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    accept_error(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            full.refused(peer, limits.max_connections);
            drop(stream);
            continue;
        };
        crate::listener::no_delay(&stream);
        let conn = Connection {
            peer,
            limits,
            app: app.clone(),
            stop: stop_rx.clone(),
            _closed: closed_rx.clone(),
            _permit: permit,
        };
        match &tls {
            None => {
                tokio::spawn(conn.serve(stream));
            }
            Some(tls) => {
                tokio::spawn(conn.handshake(stream, tls.clone(), handshakes.clone()));
            }
        }
    }
    drop(tcp);
    let _ = stop_tx.send(true);
    drop(closed_rx);
    closed_tx.closed().await;
    Ok(())
}

/// One accepted connection, its slot among the listener's connections held until it ends.
struct Connection {
    peer: SocketAddr,
    limits: Limits,
    app: axum::Router,
    stop: watch::Receiver<bool>,
    _closed: watch::Receiver<()>,
    _permit: OwnedSemaphorePermit,
}

impl Connection {
    /// The TLS handshake within the handshake timeout: the ClientHello without a slot, the
    /// rest in one of `slots` (the module's documentation); then [`serve`](Self::serve).
    async fn handshake(self, tcp: TcpStream, tls: Arc<Tls>, slots: Arc<Slots>) {
        let peer = self.peer;
        let handshake = async {
            // rustls reads and parses the ClientHello and does no cryptography: an idle or
            // trickling client waits here for its timeout, holding no slot.
            let hello = LazyConfigAcceptor::new(
                rustls::server::Acceptor::default(),
                HelloCap { tcp, read: 0 },
            )
            .await?;
            let StartHandshake { accepted, io, .. } = hello;
            let Some((_slot, evicted)) = slots.take() else {
                return Err(std::io::Error::other(
                    "every handshake slot is taken, none for longer than the eviction age",
                ));
            };
            // What rustls read past the ClientHello stays in `accepted`.
            let rest = StartHandshake::from_parts(accepted, io.tcp)
                .into_stream(tls.acceptor().config().clone());
            tokio::select! {
                done = rest => done,
                _ = evicted => Err(std::io::Error::other(
                    "evicted: every handshake slot was wanted and this one held its slot longest",
                )),
            }
        };
        let mut stop = self.stop.clone();
        let done = tokio::select! {
            done = tokio::time::timeout(self.limits.handshake_timeout, handshake) => done,
            _ = stop.wait_for(|&stop| stop) => return,
        };
        match done {
            Ok(Ok(tls)) => self.serve(tls).await,
            Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
            Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
        }
    }

    /// HTTP/1.1 on `io` with the header-read timeout, until the client closes, a timeout
    /// closes it, or a shutdown lets its request finish.
    async fn serve<I>(self, io: I)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let app = self.app;
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let mut app = app.clone();
            async move {
                // A router is always ready: no `poll_ready` needed.
                tower_service::Service::call(&mut app, req).await
            }
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_read_timeout);
        let conn = builder.serve_connection(TokioIo::new(io), service);
        let mut conn = std::pin::pin!(conn);
        let mut stop = self.stop;
        let mut stopping = false;
        loop {
            tokio::select! {
                served = conn.as_mut() => {
                    if let Err(e) = served {
                        tracing::debug!(peer = %self.peer, error = %e, "connection ended");
                    }
                    return;
                }
                _ = stop.wait_for(|&stop| stop), if !stopping => {
                    stopping = true;
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// A listener's TLS handshake slots: who holds one since when, and how to evict it.
struct Slots {
    max: usize,
    evict_after: Duration,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    /// By when the slot was taken (and a number, unique): the first is the oldest. Each
    /// sender tells its holder it is evicted.
    by_age: BTreeMap<(Instant, u64), oneshot::Sender<()>>,
    next: u64,
}

/// A slot held, given back when dropped (unless it was evicted, and so given back already).
struct Slot {
    slots: Arc<Slots>,
    key: (Instant, u64),
}

impl Slots {
    fn new(limits: &Limits) -> Slots {
        Slots {
            max: limits.max_handshakes.max(1),
            evict_after: limits.handshake_evict_after,
            held: Mutex::new(Held::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot, and what completes if it is evicted; evicts the oldest holder when every
    /// slot is taken and it has held its slot at least `evict_after`; `None` when every
    /// holder is younger.
    fn take(self: &Arc<Self>) -> Option<(Slot, oneshot::Receiver<()>)> {
        let now = Instant::now();
        let mut held = self.lock();
        while held.by_age.len() >= self.max {
            let oldest = held.by_age.first_entry()?;
            if now.saturating_duration_since(oldest.key().0) < self.evict_after {
                return None;
            }
            // Its holder may be gone already (its drop waits for this lock): nothing to do.
            let _ = oldest.remove().send(());
        }
        let key = (now, held.next);
        held.next += 1;
        let (evict, evicted) = oneshot::channel();
        held.by_age.insert(key, evict);
        Some((
            Slot {
                slots: self.clone(),
                key,
            },
            evicted,
        ))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.lock().by_age.remove(&self.key);
    }
}

/// A TLS connection until its ClientHello is complete: at most [`MAX_CLIENT_HELLO_BYTES`]
/// read from it.
struct HelloCap {
    tcp: TcpStream,
    read: usize,
}

impl AsyncRead for HelloCap {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.tcp).poll_read(cx, buf))?;
        self.read += buf.filled().len() - before;
        if self.read > MAX_CLIENT_HELLO_BYTES {
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("over {MAX_CLIENT_HELLO_BYTES} bytes before the ClientHello was complete"),
            )));
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for HelloCap {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

/// Connections closed at the cap since the last warning, and when that warning was.
#[derive(Default)]
struct Full {
    refused: u64,
    warned: Option<tokio::time::Instant>,
}

impl Full {
    const WARN_EVERY: Duration = Duration::from_secs(60);

    fn refused(&mut self, peer: SocketAddr, max: usize) {
        self.refused += 1;
        tracing::debug!(%peer, max_connections = max, "connection closed: the listener is at its connection limit");
        let now = tokio::time::Instant::now();
        if self
            .warned
            .is_none_or(|w| now.duration_since(w) >= Self::WARN_EVERY)
        {
            tracing::warn!(
                max_connections = max,
                closed = self.refused,
                "at the connection limit (--max-connections): new connections are closed at once"
            );
            self.refused = 0;
            self.warned = Some(now);
        }
    }
}

/// What axum's own TCP listener does on an accept error: a connection that went away
/// before it was accepted is skipped; anything else (out of file descriptors) is logged
/// and retried after a pause, so that the loop does not spin.
async fn accept_error(e: std::io::Error) {
    use std::io::ErrorKind::*;
    if matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accepting a connection failed");
    tokio::time::sleep(Duration::from_secs(1)).await;
}
