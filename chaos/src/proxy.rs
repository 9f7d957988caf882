//! The suite's own TCP forwarders on loopback, for the journal scenario (`crate::journal`):
//!
//! - [`FaultProxy`]: between one registry and SeaweedFS. It forwards bytes both ways and,
//!   when told, holds what the registry sends ([`Fault::Delay`]), forwards nothing
//!   ([`Fault::Hang`]: the bytes
//!   wait until the fault ends, as across a partition that heals), closes every connection
//!   ([`Fault::Drop`]), or answers each request itself with `503 Slow Down`
//!   ([`Fault::Unavailable`]: it reads just enough HTTP/1.1 — the head and a
//!   `Content-Length` body — to answer).
//! - [`Front`]: the one registry address the gateways and the clients use, as a load
//!   balancer in front of a writer and its standby would be: every new connection goes to
//!   a registry whose `/readyz` answered 200 at the last health check (in turn when several
//!   do), and the connections to a registry are closed once it stops being ready.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How long a connection to the upstream may take.
const CONNECT: Duration = Duration::from_secs(5);
/// Largest request head the 503 answerer reads.
const MAX_HEAD: usize = 64 * 1024;
/// How long the 503 answerer waits for a request.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);
/// How often the front checks each registry's `/readyz`, and how long it waits.
const HEALTH_EVERY: Duration = Duration::from_millis(200);
const HEALTH_TIMEOUT: Duration = Duration::from_secs(1);

/// What a [`FaultProxy`] does to the traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Bytes forwarded as they come.
    Pass,
    /// Every byte the registry sends held this long before it is forwarded (a slow link
    /// that still answers at once: the delay of a byte is the one in force when it was
    /// read).
    Delay(Duration),
    /// Nothing forwarded: bytes wait until the fault ends, then go on.
    Hang,
    /// Open connections closed; new ones closed as soon as accepted.
    Drop,
    /// Open connections closed; each new connection's request answered `503` by the proxy.
    Unavailable,
}

impl Fault {
    /// Its name in the summary.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Pass => "pass",
            Fault::Delay(_) => "delay",
            Fault::Hang => "hang",
            Fault::Drop => "drop",
            Fault::Unavailable => "503",
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct State {
    fault: Fault,
    /// Bumped to close every open connection.
    epoch: u64,
}

/// Counts of what a proxy did.
#[derive(Default)]
pub struct ProxyStats {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections closed by a `Drop` (open ones and refused new ones).
    pub dropped: AtomicU64,
    /// Requests answered 503.
    pub answered_503: AtomicU64,
}

/// A forwarder from a loopback port to `upstream`, with faults (see the module).
pub struct FaultProxy {
    addr: SocketAddr,
    state: watch::Sender<State>,
    /// What it did.
    pub stats: Arc<ProxyStats>,
    accept: JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl FaultProxy {
    /// A proxy on a free loopback port, forwarding to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Result<Arc<FaultProxy>, String> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("the fault proxy: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let (state, rx) = watch::channel(State {
            fault: Fault::Pass,
            epoch: 0,
        });
        let stats = Arc::new(ProxyStats::default());
        let accept = tokio::spawn(accept_loop(listener, upstream, rx, stats.clone()));
        Ok(Arc::new(FaultProxy {
            addr,
            state,
            stats,
            accept,
        }))
    }

    /// `http://127.0.0.1:port`, for the registry's `--tiles-s3-endpoint`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Puts `fault` in force; `Drop` and `Unavailable` close the open connections.
    pub fn set(&self, fault: Fault) {
        self.state.send_modify(|s| {
            if matches!(fault, Fault::Drop | Fault::Unavailable) {
                s.epoch += 1;
            }
            s.fault = fault;
        });
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    state: watch::Receiver<State>,
    stats: Arc<ProxyStats>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        stats.connections.fetch_add(1, Ordering::Relaxed);
        let now = *state.borrow();
        match now.fault {
            Fault::Drop => {
                stats.dropped.fetch_add(1, Ordering::Relaxed);
                drop(client);
            }
            Fault::Unavailable => {
                let stats = stats.clone();
                tokio::spawn(async move {
                    if tokio::time::timeout(ANSWER_WITHIN, answer_503(client))
                        .await
                        .is_ok_and(|r| r.is_ok())
                    {
                        stats.answered_503.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
            _ => {
                let (state, stats) = (state.clone(), stats.clone());
                tokio::spawn(async move {
                    let killed = closed_by_epoch(state.clone(), now.epoch);
                    tokio::select! {
                        () = forward(client, upstream, state) => {}
                        () = killed => { stats.dropped.fetch_add(1, Ordering::Relaxed); }
                    }
                });
            }
        }
    }
}

/// Resolves once the epoch moves past `epoch` (or the proxy is gone).
async fn closed_by_epoch(mut state: watch::Receiver<State>, epoch: u64) {
    let _ = state.wait_for(|s| s.epoch != epoch).await;
}

/// Forwards `client` to `upstream` and back, with the faults in force.
async fn forward(client: TcpStream, upstream: SocketAddr, state: watch::Receiver<State>) {
    let Ok(Ok(server)) = tokio::time::timeout(CONNECT, TcpStream::connect(upstream)).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    tokio::join!(
        pump(cr, sw, state.clone(), true),
        pump(sr, cw, state, false)
    );
}

/// One direction: what is read is queued with the time it may leave (now, or, when
/// `delayed`, now plus the delay in force), and written at that time unless the link hangs;
/// the end of the stream is passed on once the queue is empty.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    state: watch::Receiver<State>,
    delayed: bool,
) {
    let (tx, mut rx) = mpsc::channel::<(Instant, Vec<u8>)>(256);
    let reading = state.clone();
    let reader = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let delay = match reading.borrow().fault {
                Fault::Delay(d) if delayed => d,
                _ => Duration::ZERO,
            };
            if tx
                .send((Instant::now() + delay, buf[..n].to_vec()))
                .await
                .is_err()
            {
                break;
            }
        }
    };
    let mut writing = state;
    let writer = async move {
        while let Some((due, bytes)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if writing.wait_for(|s| s.fault != Fault::Hang).await.is_err() {
                return;
            }
            if to.write_all(&bytes).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}

/// Reads one HTTP/1.1 request (its head, and a body of its `Content-Length`, discarded)
/// and answers `503 Slow Down` as S3 does when it sheds load, then closes.
async fn answer_503(mut client: TcpStream) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let end = loop {
        let n = client.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if head.len() > MAX_HEAD {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
    };
    let text = String::from_utf8_lossy(&head[..end]);
    let length = text
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let mut left = length.saturating_sub((head.len() - end) as u64);
    while left > 0 {
        let n = client.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        left = left.saturating_sub(n as u64);
    }
    let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>\
                <Message>Please reduce your request rate.</Message></Error>";
    let answer = format!(
        "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\
         Retry-After: 1\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(answer.as_bytes()).await?;
    client.shutdown().await
}

/// The registries' one address (see the module): new connections to a ready registry, in
/// turn; open ones closed when their registry stops being ready.
pub struct Front {
    addr: SocketAddr,
    inner: Arc<FrontState>,
    tasks: Vec<JoinHandle<()>>,
}

/// What the front's tasks share.
struct FrontState {
    /// Whether each registry answered `/readyz` 200 at its last check.
    ready: watch::Sender<Vec<bool>>,
    /// Connections routed to each registry.
    routed: Vec<AtomicU64>,
    /// Connections that found no registry at all.
    unrouted: AtomicU64,
}

impl Drop for Front {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Front {
    /// A front on a free loopback port for the registries at `upstreams`, health-checked
    /// with `http`.
    pub async fn start(
        upstreams: Vec<SocketAddr>,
        http: reqwest::Client,
    ) -> Result<Arc<Front>, String> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("the front: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let inner = Arc::new(FrontState {
            ready: watch::channel(vec![false; upstreams.len()]).0,
            routed: upstreams.iter().map(|_| AtomicU64::new(0)).collect(),
            unrouted: AtomicU64::new(0),
        });
        let mut tasks = Vec::new();
        for (i, up) in upstreams.iter().enumerate() {
            let (inner, http, url) = (inner.clone(), http.clone(), format!("http://{up}/readyz"));
            tasks.push(tokio::spawn(async move {
                loop {
                    let ok = http
                        .get(&url)
                        .timeout(HEALTH_TIMEOUT)
                        .send()
                        .await
                        .is_ok_and(|r| r.status().as_u16() == 200);
                    inner.ready.send_if_modified(|r| {
                        let changed = r[i] != ok;
                        r[i] = ok;
                        changed
                    });
                    tokio::time::sleep(HEALTH_EVERY).await;
                }
            }));
        }
        let shared = inner.clone();
        tasks.push(tokio::spawn(async move {
            let next = AtomicUsize::new(0);
            let ups = Arc::new(upstreams);
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let ready = shared.ready.borrow().clone();
                let up: Vec<usize> = (0..ups.len()).filter(|&i| ready[i]).collect();
                let order: Vec<usize> = if up.is_empty() {
                    (0..ups.len()).collect()
                } else {
                    let start = next.fetch_add(1, Ordering::Relaxed) % up.len();
                    up[start..].iter().chain(&up[..start]).copied().collect()
                };
                let (shared, ups) = (shared.clone(), ups.clone());
                tokio::spawn(async move { shared.route(client, &ups, &order).await });
            }
        }));
        Ok(Arc::new(Front { addr, inner, tasks }))
    }

    /// `http://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Whether each registry answered `/readyz` 200 at its last check.
    pub fn ready(&self) -> Vec<bool> {
        self.inner.ready.borrow().clone()
    }

    /// Connections routed to each registry, and to none.
    pub fn routed(&self) -> (Vec<u64>, u64) {
        (
            self.inner
                .routed
                .iter()
                .map(|r| r.load(Ordering::Relaxed))
                .collect(),
            self.inner.unrouted.load(Ordering::Relaxed),
        )
    }
}

impl FrontState {
    /// Forwards `client` to the first registry of `order` that accepts a connection; the
    /// connection is closed when that registry, ready when chosen, stops being ready.
    async fn route(&self, client: TcpStream, ups: &[SocketAddr], order: &[usize]) {
        let mut ready = self.ready.subscribe();
        for &i in order {
            let connect = TcpStream::connect(ups[i]);
            let Ok(Ok(server)) = tokio::time::timeout(Duration::from_millis(500), connect).await
            else {
                continue;
            };
            self.routed[i].fetch_add(1, Ordering::Relaxed);
            let was_ready = ready.borrow()[i];
            let (mut client, mut server) = (client, server);
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let gone = async {
                if was_ready {
                    let _ = ready.wait_for(|r| !r[i]).await;
                } else {
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                () = gone => {}
            }
            return;
        }
        self.unrouted.fetch_add(1, Ordering::Relaxed);
    }
}
