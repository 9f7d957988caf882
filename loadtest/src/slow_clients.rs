//! Slow clients: many TCP connections that hold a server's resources while sending nothing
//! or next to nothing, each watched until the server closes it (what `idle` holds against
//! the services while the open loop measures a normal client).
//!
//! - [`Kind::Idle`]: connects and sends nothing. On a TLS listener, a client that never
//!   sends its ClientHello.
//! - [`Kind::Slowloris`]: a request line and headers that never end (`GET /healthz
//!   HTTP/1.1`, a `Host` header, then an endless header value), one byte per trickle
//!   interval.
//! - [`Kind::SlowHello`]: the start of a TLS ClientHello record (a 512-byte record that is
//!   never completed), one byte per trickle interval.
//!
//! They run on a thread and a single-threaded Tokio runtime of their own, so that thousands
//! of sockets cost the caller's runtime nothing. Each connection's record says when it was
//! connected (or why not), when and how the server ended it (end of stream, reset, a write
//! refused), and the first bytes the server sent, if any (an error answer before closing).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, watch, Semaphore};

/// How a slow client behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Connect, send nothing.
    Idle,
    /// An HTTP request head that never ends, one byte at a time.
    Slowloris,
    /// A TLS ClientHello record that never ends, one byte at a time.
    SlowHello,
}

impl Kind {
    /// What it sends, in order, one byte per trickle interval; after the last byte it
    /// repeats the last one (an endless header value, or the record's zero padding).
    fn bytes(self) -> &'static [u8] {
        match self {
            Kind::Idle => b"",
            Kind::Slowloris => b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a",
            // A handshake record of 512 bytes (16 03 01 02 00), a ClientHello of 508
            // (01 00 01 fc), version TLS 1.2 (03 03), then the random: zeros.
            Kind::SlowHello => &[
                0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x00,
            ],
        }
    }

    /// The kind in words.
    pub fn describe(self, tls: bool) -> &'static str {
        match (self, tls) {
            (Kind::Idle, false) => "idle TCP: sends nothing",
            (Kind::Idle, true) => "silent TLS: no ClientHello",
            (Kind::Slowloris, _) => "slowloris: a request head byte by byte",
            (Kind::SlowHello, _) => "slow TLS: a ClientHello byte by byte",
        }
    }
}

/// One group of slow clients: `count` connections of `kind` to `addr`.
#[derive(Debug, Clone)]
pub struct Group {
    /// The listener's name in the report.
    pub listener: String,
    /// Where to connect.
    pub addr: SocketAddr,
    /// How the clients behave.
    pub kind: Kind,
    /// How many.
    pub count: usize,
}

/// How the clients connect and trickle.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// A connection not established after this long is given up (`connect: timeout`).
    pub connect_timeout: Duration,
    /// Connection attempts in progress at once.
    pub connect_parallel: usize,
    /// The interval between two bytes of a trickling client.
    pub trickle: Duration,
}

/// How a connection ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum End {
    /// The server closed it (end of stream).
    Closed,
    /// The server reset it (or it failed otherwise while reading).
    Reset,
    /// A byte could not be written: the server had closed it.
    WriteRefused,
    /// Still open when the clients were stopped.
    StillOpen,
}

/// One connection's story.
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    /// Its group (index into the groups given to [`SlowClients::start`]).
    pub group: usize,
    /// When it was established, seconds after the start; none: never.
    pub connected_s: Option<f64>,
    /// Why it could not connect (`timeout`, `refused`, `too many open files`, …).
    pub connect_error: Option<String>,
    /// How it ended (absent when it never connected).
    pub end: Option<End>,
    /// When it ended, seconds after the start (absent while still open).
    pub ended_s: Option<f64>,
    /// Bytes it sent.
    pub sent: u64,
    /// The first line of what the server sent, if anything.
    pub answer: Option<String>,
}

impl Record {
    /// Ended by the server (closed, reset or refusing writes).
    pub fn ended_by_server(&self) -> bool {
        matches!(self.end, Some(End::Closed | End::Reset | End::WriteRefused))
    }

    /// Seconds from connecting to the server ending it.
    pub fn lifetime_s(&self) -> Option<f64> {
        if !self.ended_by_server() {
            return None;
        }
        Some(self.ended_s? - self.connected_s?)
    }
}

/// Counts of the clients' connections right now.
#[derive(Debug, Default)]
struct Counts {
    /// Attempts finished (connected or failed).
    attempted: AtomicUsize,
    /// Connected and not yet ended.
    open: AtomicUsize,
}

/// Slow clients running on their own thread.
pub struct SlowClients {
    counts: Arc<Counts>,
    total: usize,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Vec<Record>>>,
}

impl SlowClients {
    /// Starts connecting every group's clients (at most `connect_parallel` attempts at
    /// once) and holds them. Errors only when the thread or its runtime cannot start.
    pub fn start(groups: Vec<Group>, opts: Options) -> std::io::Result<SlowClients> {
        let counts = Arc::new(Counts::default());
        let total = groups.iter().map(|g| g.count).sum();
        let (stop_tx, stop_rx) = oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let c = counts.clone();
        let thread = std::thread::Builder::new()
            .name("slow-clients".into())
            .spawn(move || runtime.block_on(run(groups, opts, c, stop_rx)))?;
        Ok(SlowClients {
            counts,
            total,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// Connection attempts finished so far.
    pub fn attempted(&self) -> usize {
        self.counts.attempted.load(Ordering::SeqCst)
    }

    /// Connections open right now (connected, not ended).
    pub fn open(&self) -> usize {
        self.counts.open.load(Ordering::SeqCst)
    }

    /// Waits until every attempt has finished, or `limit` has passed; whether they all did.
    pub async fn all_attempted(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while self.attempted() < self.total {
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }

    /// Stops them (closing what is still open) and returns every connection's record, in
    /// group order.
    pub fn stop(mut self) -> Vec<Record> {
        self.finish()
    }

    fn finish(&mut self) -> Vec<Record> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.thread
            .take()
            .map(|t| t.join().unwrap_or_default())
            .unwrap_or_default()
    }
}

impl Drop for SlowClients {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The clients' runtime: every connection a task; on `stop`, each still open is recorded as
/// such and dropped.
async fn run(
    groups: Vec<Group>,
    opts: Options,
    counts: Arc<Counts>,
    stop: oneshot::Receiver<()>,
) -> Vec<Record> {
    let t0 = Instant::now();
    let connecting = Arc::new(Semaphore::new(opts.connect_parallel.max(1)));
    let (stopping_tx, stopping) = watch::channel(false);
    let mut tasks = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        for _ in 0..g.count {
            let (connecting, counts, stopping) =
                (connecting.clone(), counts.clone(), stopping.clone());
            let (addr, kind) = (g.addr, g.kind);
            tasks.push(tokio::spawn(async move {
                one(gi, addr, kind, opts, t0, connecting, counts, stopping).await
            }));
        }
    }
    let _ = stop.await;
    let _ = stopping_tx.send(true);
    let mut records = Vec::with_capacity(tasks.len());
    for t in tasks {
        if let Ok(r) = t.await {
            records.push(r);
        }
    }
    records
}

#[allow(clippy::too_many_arguments)]
async fn one(
    group: usize,
    addr: SocketAddr,
    kind: Kind,
    opts: Options,
    t0: Instant,
    connecting: Arc<Semaphore>,
    counts: Arc<Counts>,
    mut stopping: watch::Receiver<bool>,
) -> Record {
    let mut rec = Record {
        group,
        connected_s: None,
        connect_error: None,
        end: None,
        ended_s: None,
        sent: 0,
        answer: None,
    };
    let since = |t0: Instant| t0.elapsed().as_secs_f64();
    let connected = {
        let _permit = connecting.acquire().await;
        tokio::select! {
            r = tokio::time::timeout(opts.connect_timeout, TcpStream::connect(addr)) => Some(r),
            () = stopped(&mut stopping) => None,
        }
    };
    let mut sock = match connected {
        Some(Ok(Ok(s))) => s,
        other => {
            rec.connect_error = Some(match other {
                Some(Ok(Err(e))) => connect_error(&e),
                Some(Err(_)) => "timeout".into(),
                _ => "stopped".into(),
            });
            counts.attempted.fetch_add(1, Ordering::SeqCst);
            return rec;
        }
    };
    rec.connected_s = Some(since(t0));
    counts.open.fetch_add(1, Ordering::SeqCst);
    counts.attempted.fetch_add(1, Ordering::SeqCst);

    let bytes = kind.bytes();
    let mut ticks = tokio::time::interval(opts.trickle);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut buf = [0u8; 512];
    let mut heard = Vec::new();
    let end = loop {
        tokio::select! {
            () = stopped(&mut stopping) => break End::StillOpen,
            r = sock.read(&mut buf) => match r {
                Ok(0) => break End::Closed,
                Ok(n) => {
                    if heard.len() < 256 {
                        heard.extend_from_slice(&buf[..n.min(256 - heard.len())]);
                    }
                }
                Err(_) => break End::Reset,
            },
            _ = ticks.tick(), if !bytes.is_empty() => {
                let i = (rec.sent as usize).min(bytes.len() - 1);
                if sock.write_all(&bytes[i..=i]).await.is_err() {
                    break End::WriteRefused;
                }
                rec.sent += 1;
            }
        }
    };
    if end != End::StillOpen {
        rec.ended_s = Some(since(t0));
    }
    rec.end = Some(end);
    rec.answer = (!heard.is_empty()).then(|| {
        let text = String::from_utf8_lossy(&heard);
        text.lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(80)
            .collect()
    });
    counts.open.fetch_sub(1, Ordering::SeqCst);
    rec
}

/// Returns once the clients are told to stop.
async fn stopped(stopping: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is dropped here: it must not live across an await.
    let _ = stopping.wait_for(|s| *s).await;
}

/// A connect error in a few words; the local ones (out of descriptors or ports) named so
/// that a report can tell the load generator's limits from the server's.
fn connect_error(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(24) => LOCAL_NO_FILES.into(),
        Some(99) => LOCAL_NO_PORTS.into(),
        _ => match e.kind() {
            std::io::ErrorKind::ConnectionRefused => "refused".into(),
            std::io::ErrorKind::ConnectionReset => "reset".into(),
            std::io::ErrorKind::TimedOut => "timeout".into(),
            _ => e.to_string(),
        },
    }
}

/// The connect error of a process out of file descriptors (EMFILE).
pub const LOCAL_NO_FILES: &str = "local: too many open files";
/// The connect error of a machine out of ephemeral ports (EADDRNOTAVAIL).
pub const LOCAL_NO_PORTS: &str = "local: no ephemeral port";

/// What one group's connections did.
#[derive(Debug, Clone, Serialize)]
pub struct GroupSummary {
    /// The listener.
    pub listener: String,
    /// The kind.
    pub kind: Kind,
    /// Asked for.
    pub asked: usize,
    /// Established.
    pub connected: usize,
    /// Not established, by reason.
    pub connect_errors: BTreeMap<String, usize>,
    /// Ended by the server: closed, reset, or refusing a write.
    pub ended_by_server: usize,
    /// Of those, by how.
    pub ends: BTreeMap<String, usize>,
    /// Seconds from connecting to the server's end of it: the first, the median and the
    /// last (none ended: absent).
    pub lifetime_s: Option<[f64; 3]>,
    /// When the server ended them, seconds after the clients started: the first and the
    /// last.
    pub ended_at_s: Option<[f64; 2]>,
    /// What the server said before closing, and how often.
    pub answers: BTreeMap<String, usize>,
    /// Still open when the clients were stopped.
    pub still_open: usize,
    /// Bytes sent, all connections together.
    pub sent: u64,
}

/// Sums the records per group.
pub fn summarise(groups: &[Group], records: &[Record]) -> Vec<GroupSummary> {
    groups
        .iter()
        .enumerate()
        .map(|(gi, g)| {
            let mine: Vec<&Record> = records.iter().filter(|r| r.group == gi).collect();
            let mut s = GroupSummary {
                listener: g.listener.clone(),
                kind: g.kind,
                asked: g.count,
                connected: mine.iter().filter(|r| r.connected_s.is_some()).count(),
                connect_errors: BTreeMap::new(),
                ended_by_server: 0,
                ends: BTreeMap::new(),
                lifetime_s: None,
                ended_at_s: None,
                answers: BTreeMap::new(),
                still_open: 0,
                sent: mine.iter().map(|r| r.sent).sum(),
            };
            let mut lifetimes = Vec::new();
            let mut ended_at = Vec::new();
            for r in &mine {
                if let Some(e) = &r.connect_error {
                    *s.connect_errors.entry(e.clone()).or_default() += 1;
                }
                if let Some(a) = &r.answer {
                    *s.answers.entry(a.clone()).or_default() += 1;
                }
                match &r.end {
                    Some(End::StillOpen) => s.still_open += 1,
                    Some(e) => {
                        let how = serde_json::to_value(e)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_owned))
                            .unwrap_or_default();
                        *s.ends.entry(how).or_default() += 1;
                    }
                    None => {}
                }
                if let Some(l) = r.lifetime_s() {
                    s.ended_by_server += 1;
                    lifetimes.push(l);
                    ended_at.extend(r.ended_s);
                }
            }
            lifetimes.sort_by(f64::total_cmp);
            ended_at.sort_by(f64::total_cmp);
            if let (Some(first), Some(last)) = (lifetimes.first(), lifetimes.last()) {
                s.lifetime_s = Some([*first, lifetimes[(lifetimes.len() - 1) / 2], *last]);
            }
            if let (Some(first), Some(last)) = (ended_at.first(), ended_at.last()) {
                s.ended_at_s = Some([*first, *last]);
            }
            s
        })
        .collect()
}

/// The kernel's counters of full accept queues (`/proc/net/netstat`: `ListenOverflows`,
/// `ListenDrops`, `TCPReqQFullDoCookies`, `TCPReqQFullDrop`), machine-wide; none where
/// they cannot be read. A connection answered with a SYN cookie while its listener's queue
/// was full may be dropped by the server without the client hearing of it: an idle client
/// then looks open although the server never accepted it.
pub fn accept_queue_counters() -> Option<BTreeMap<String, u64>> {
    let text = std::fs::read_to_string("/proc/net/netstat").ok()?;
    let mut lines = text.lines().filter(|l| l.starts_with("TcpExt:"));
    let (names, values) = (lines.next()?, lines.next()?);
    let wanted = [
        "ListenOverflows",
        "ListenDrops",
        "TCPReqQFullDoCookies",
        "TCPReqQFullDrop",
    ];
    Some(
        names
            .split_whitespace()
            .zip(values.split_whitespace())
            .filter(|(n, _)| wanted.contains(n))
            .filter_map(|(n, v)| Some((n.to_owned(), v.parse().ok()?)))
            .collect(),
    )
}

/// The soft and hard limits on this process's open files (`/proc/self/limits`; none where
/// it cannot be read). `unlimited` reads as `u64::MAX`.
pub fn open_files_limit() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    let mut nums = line["Max open files".len()..].split_whitespace().map(|w| {
        if w == "unlimited" {
            Some(u64::MAX)
        } else {
            w.parse().ok()
        }
    });
    Some((nums.next()??, nums.next()??))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    fn opts() -> Options {
        Options {
            connect_timeout: Duration::from_secs(5),
            connect_parallel: 8,
            trickle: Duration::from_millis(20),
        }
    }

    /// A server that reads what each connection sends and closes it `after` its accept
    /// (none: never), having written `say` first; it reports what each connection sent.
    async fn server(
        after: Option<Duration>,
        say: &'static [u8],
    ) -> (SocketAddr, tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let (mut s, _) = l.accept().await.unwrap();
                let tx = tx.clone();
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    let mut buf = [0u8; 64];
                    let deadline = after.map(|d| tokio::time::Instant::now() + d);
                    loop {
                        let read = s.read(&mut buf);
                        let r = match deadline {
                            Some(d) => match tokio::time::timeout_at(d, read).await {
                                Ok(r) => r,
                                Err(_) => break,
                            },
                            None => read.await,
                        };
                        match r {
                            Ok(0) | Err(_) => break,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let _ = s.write_all(say).await;
                    let _ = tx.send(got);
                });
            }
        });
        (addr, rx)
    }

    /// A server that closes every connection after 300 ms: every client of every kind is
    /// recorded as ended by it, about 300 ms after connecting, with what it said; the
    /// trickling ones sent their bytes in order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connections_the_server_closes_are_recorded_with_their_time() {
        let (addr, mut sent) = server(
            Some(Duration::from_millis(300)),
            b"HTTP/1.1 408 Request Timeout\r\n\r\n",
        )
        .await;
        let groups: Vec<Group> = [Kind::Idle, Kind::Slowloris, Kind::SlowHello]
            .into_iter()
            .map(|kind| Group {
                listener: "test".into(),
                addr,
                kind,
                count: 5,
            })
            .collect();
        let clients = SlowClients::start(groups.clone(), opts()).unwrap();
        assert!(clients.all_attempted(Duration::from_secs(5)).await);
        // Wait for the server's closes (generous: they come at 300 ms).
        let deadline = Instant::now() + Duration::from_secs(10);
        while clients.open() > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let records = clients.stop();
        assert_eq!(records.len(), 15);
        let summary = summarise(&groups, &records);
        for s in &summary {
            assert_eq!(
                (s.connected, s.ended_by_server, s.still_open),
                (5, 5, 0),
                "{s:?}"
            );
            let [first, _, last] = s.lifetime_s.unwrap();
            assert!(first >= 0.29 && last < 5.0, "{s:?}");
        }
        // An idle client reads the server's last words; a trickling one may find the
        // connection reset instead (a close with its bytes unread).
        assert_eq!(
            summary[0].answers.get("HTTP/1.1 408 Request Timeout"),
            Some(&5),
            "{summary:?}"
        );
        // What the server read: nothing from the idle ones, a prefix of the request head
        // or of the record from the others.
        let mut got = Vec::new();
        while let Ok(g) = sent.try_recv() {
            got.push(g);
        }
        assert_eq!(got.len(), 15);
        let prefix_of =
            |g: &[u8], of: &[u8]| !g.is_empty() && of.starts_with(&g[..g.len().min(of.len())]);
        let head = Kind::Slowloris.bytes();
        let hello = Kind::SlowHello.bytes();
        assert_eq!(got.iter().filter(|g| g.is_empty()).count(), 5, "{got:?}");
        assert_eq!(
            got.iter().filter(|g| prefix_of(g, head)).count(),
            5,
            "{got:?}"
        );
        assert_eq!(
            got.iter().filter(|g| prefix_of(g, hello)).count(),
            5,
            "{got:?}"
        );
    }

    /// A server that never closes: every connection is still open when the clients stop,
    /// none counted as ended by the server; a port nobody listens on is refused.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connections_held_to_the_end_and_refused_ones() {
        let (addr, _sent) = server(None, b"").await;
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let groups = vec![
            Group {
                listener: "open".into(),
                addr,
                kind: Kind::Slowloris,
                count: 4,
            },
            Group {
                listener: "closed".into(),
                addr: closed,
                kind: Kind::Idle,
                count: 3,
            },
        ];
        let clients = SlowClients::start(groups.clone(), opts()).unwrap();
        assert!(clients.all_attempted(Duration::from_secs(5)).await);
        assert_eq!(clients.open(), 4);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let summary = summarise(&groups, &clients.stop());
        assert_eq!((summary[0].connected, summary[0].still_open), (4, 4));
        assert_eq!(summary[0].ended_by_server, 0);
        assert!(summary[0].lifetime_s.is_none());
        assert!(summary[0].sent >= 4, "{:?}", summary[0]);
        assert_eq!(summary[1].connected, 0);
        assert_eq!(
            summary[1].connect_errors.get("refused"),
            Some(&3),
            "{:?}",
            summary[1]
        );
    }

    #[test]
    fn reads_the_accept_queue_counters() {
        let c = accept_queue_counters().unwrap();
        assert!(c.contains_key("ListenOverflows"), "{c:?}");
    }

    #[test]
    fn reads_the_open_files_limit() {
        let (soft, hard) = open_files_limit().unwrap();
        assert!(soft > 0 && soft <= hard, "{soft} {hard}");
    }
}
