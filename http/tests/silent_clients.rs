//! A silent or slow client holds up nobody (`dgsp_http::serve`), on real connections on
//! loopback: silent sockets before a TLS client do not delay it; clients trickling their
//! ClientHello or stalled in it take no handshake slot; handshakes stalled after their
//! ClientHello are evicted for new clients; when every slot is young a new handshake is
//! closed, not queued; a ClientHello over its byte cap is closed; a request head that does
//! not arrive within the header-read timeout closes its connection, plain or TLS; past the
//! connection cap a new connection is closed while the open ones are served; a shutdown
//! lets the request in flight finish.
//!
//! Every bound here is a generous deadline for something that happens in milliseconds
//! (or at a timeout set to well under it), never a measurement.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use dgsp_http::serve::Limits;
use dgsp_http::tls::test_certs::{TestCa, Validity};
use dgsp_http::tls::{Listen, Tls};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Generous: what takes milliseconds here, or a timeout of at most a second.
const DEADLINE: Duration = Duration::from_secs(10);

fn app() -> Router {
    Router::new().route("/healthz", get(|| async { "ok" }))
}

/// Serves [`app`] on `listen` until never; its address.
fn serve(listen: Listen) -> SocketAddr {
    let addr = listen.local_addr().unwrap();
    tokio::spawn(listen.serve(app(), std::future::pending()));
    addr
}

async fn bind() -> tokio::net::TcpListener {
    tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()
}

/// A TLS listener with a new CA's certificate, and that CA.
async fn tls_listen(dir: &std::path::Path) -> (Listen, TestCa) {
    let ca = TestCa::new("dgsp test CA");
    let files = ca.write_server(dir, "server", Validity::Now);
    let listen = Listen::with_tls_no_signal(bind().await, Tls::load(files).unwrap());
    (listen, ca)
}

fn client(ca: &TestCa) -> reqwest::Client {
    let roots = reqwest::Certificate::from_pem_bundle(ca.pem().as_bytes()).unwrap();
    reqwest::Client::builder()
        .tls_certs_only(roots)
        .build()
        .unwrap()
}

/// A rustls client trusting `ca`.
fn client_config(ca: &TestCa) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(ca.pem().as_bytes()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    Arc::new(config)
}

/// What a TLS client trusting `ca` sends first: its ClientHello for `localhost`.
fn client_hello(ca: &TestCa) -> Vec<u8> {
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(client_config(ca), name).unwrap();
    let mut hello = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut hello).unwrap();
    }
    assert!(hello.len() > 100, "{} bytes", hello.len());
    hello
}

/// A connection that has sent a whole ClientHello and stalls, once the server has answered
/// it (so its handshake is past the ClientHello, in a slot).
async fn stalled_after_hello(addr: SocketAddr, hello: &[u8]) -> TcpStream {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(hello).await.unwrap();
    let mut byte = [0u8; 1];
    let n = tokio::time::timeout(DEADLINE, tcp.read(&mut byte))
        .await
        .expect("the server did not answer a whole ClientHello")
        .unwrap();
    assert_eq!(
        n, 1,
        "the server closed a handshake that had a slot to take"
    );
    tcp
}

/// Whether `tcp` is still open: whatever the server sent is read until nothing more comes
/// for a moment; end of file or an error is `false`.
async fn still_open(tcp: &mut TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_millis(300), tcp.read(&mut buf)).await {
            Err(_) => return true,
            Ok(Ok(0)) | Ok(Err(_)) => return false,
            Ok(Ok(_)) => {}
        }
    }
}

/// Twenty `GET /healthz` over TLS in a row, each on a new connection (so each is a new
/// handshake) and each answered 200 within 5 s.
async fn twenty_tls_requests_are_served(addr: SocketAddr, ca: &TestCa) {
    let roots = reqwest::Certificate::from_pem_bundle(ca.pem().as_bytes()).unwrap();
    let client = reqwest::Client::builder()
        .tls_certs_only(roots)
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let url = format!("https://localhost:{}/healthz", addr.port());
    for i in 0..20 {
        let answer = tokio::time::timeout(
            Duration::from_secs(5),
            client
                .get(&url)
                .header(reqwest::header::CONNECTION, "close")
                .send(),
        )
        .await
        .unwrap_or_else(|_| panic!("request {i} was held up"))
        .unwrap_or_else(|e| panic!("request {i} was refused: {e:?}"));
        assert_eq!(answer.status(), 200, "request {i}");
        assert_eq!(answer.text().await.unwrap(), "ok", "request {i}");
    }
}

/// Whether the server closes `io` within [`DEADLINE`]: end of file (or a reset) with no
/// answer. A read that only times out is `false`.
async fn closed_by_server(io: &mut (impl AsyncRead + Unpin)) -> bool {
    let mut got = Vec::new();
    match tokio::time::timeout(DEADLINE, io.read_to_end(&mut got)).await {
        Ok(Ok(_)) => {
            assert!(
                !got.starts_with(b"HTTP/1.1 200"),
                "served: {}",
                String::from_utf8_lossy(&got)
            );
            true
        }
        Ok(Err(e)) => e.kind() == std::io::ErrorKind::ConnectionReset,
        Err(_) => false,
    }
}

/// `GET /healthz` with `Connection: close` on `io`: whether it was answered 200.
async fn served(io: &mut (impl AsyncRead + tokio::io::AsyncWrite + Unpin)) -> bool {
    if io
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .await
        .is_err()
    {
        return false;
    }
    let mut got = Vec::new();
    match tokio::time::timeout(DEADLINE, io.read_to_end(&mut got)).await {
        Ok(Ok(_)) => got.starts_with(b"HTTP/1.1 200"),
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_silent_sockets_do_not_hold_up_a_tls_client() {
    let dir = tempfile::tempdir().unwrap();
    let (listen, ca) = tls_listen(dir.path()).await;
    // More silent sockets than handshake slots: none takes a slot, and each is dropped at
    // the handshake timeout.
    let limits = Limits {
        handshake_timeout: Duration::from_secs(2),
        ..Limits::default()
    };
    assert!(limits.max_handshakes < 300);
    let addr = serve(listen.with_limits(limits));
    let mut silent = Vec::new();
    for _ in 0..300 {
        silent.push(TcpStream::connect(addr).await.unwrap());
    }
    let answer = tokio::time::timeout(
        Duration::from_secs(5),
        client(&ca)
            .get(format!("https://localhost:{}/healthz", addr.port()))
            .send(),
    )
    .await
    .expect("the TLS client was held up behind the silent sockets")
    .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.text().await.unwrap(), "ok");
    // And the silent ones are dropped at the handshake timeout.
    assert!(closed_by_server(&mut silent[0]).await);
    assert!(closed_by_server(&mut silent[299]).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_slow_in_their_client_hello_take_no_handshake_slot() {
    let dir = tempfile::tempdir().unwrap();
    let (listen, ca) = tls_listen(dir.path()).await;
    let limits = Limits {
        max_handshakes: 8,
        handshake_timeout: Duration::from_secs(60),
        ..Limits::default()
    };
    let addr = serve(listen.with_limits(limits));
    let hello = client_hello(&ca);
    // As many clients as slots trickle a real ClientHello, a byte every 100 ms; as many
    // again send the first bytes of a TLS record header and stall.
    let mut slow = Vec::new();
    for _ in 0..limits.max_handshakes {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(&hello[..1]).await.unwrap();
        let hello = hello.clone();
        slow.push(tokio::spawn(async move {
            for byte in &hello[1..] {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if tcp.write_all(&[*byte]).await.is_err() {
                    return;
                }
            }
        }));
    }
    let mut stalled = Vec::new();
    for _ in 0..limits.max_handshakes {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(&[0x16, 0x03, 0x01]).await.unwrap();
        stalled.push(tcp);
    }
    // Time for the server to see every slow client's first bytes (before it could take a
    // slot for them, the normal client would have come first).
    tokio::time::sleep(Duration::from_millis(300)).await;
    twenty_tls_requests_are_served(addr, &ca).await;
    // The stalled ones are still waiting for their timeout, not closed.
    for tcp in &mut stalled {
        assert!(still_open(tcp).await);
    }
    for task in &slow {
        assert!(!task.is_finished(), "a trickling client was closed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshakes_stalled_after_their_client_hello_are_evicted_for_new_clients() {
    let dir = tempfile::tempdir().unwrap();
    let (listen, ca) = tls_listen(dir.path()).await;
    let limits = Limits {
        max_handshakes: 8,
        handshake_timeout: Duration::from_secs(60),
        ..Limits::default()
    };
    let addr = serve(listen.with_limits(limits));
    let hello = client_hello(&ca);
    // Every slot held by a client that sent its ClientHello and stalls...
    let mut stalled = Vec::new();
    for _ in 0..limits.max_handshakes {
        stalled.push(stalled_after_hello(addr, &hello).await);
    }
    // ...for longer than the eviction age.
    tokio::time::sleep(limits.handshake_evict_after * 2).await;
    twenty_tls_requests_are_served(addr, &ca).await;
    // The first new client took the slot of the oldest stalled one, which was closed (well
    // before the handshake timeout); each later one found that slot free again, so the
    // other stalled ones keep theirs.
    assert!(
        closed_by_server(&mut stalled[0]).await,
        "the oldest stalled handshake kept its slot"
    );
    for (i, tcp) in stalled.iter_mut().enumerate().skip(1) {
        assert!(still_open(tcp).await, "stalled handshake {i} was closed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_hello_over_its_byte_cap_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let (listen, _ca) = tls_listen(dir.path()).await;
    let limits = Limits {
        handshake_timeout: Duration::from_secs(60),
        ..Limits::default()
    };
    let addr = serve(listen.with_limits(limits));
    // A record of 16 384 bytes opening a ClientHello of 65 535, then 4 KiB more of it: past
    // the cap, though the ClientHello is not complete.
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let mut bytes = vec![0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0x00, 0xff, 0xff];
    bytes.resize(5 + 0x4000, 0);
    bytes.extend_from_slice(&[0x16, 0x03, 0x01, 0x10, 0x00]);
    bytes.resize(bytes.len() + 0x1000, 0);
    assert!(bytes.len() > dgsp_http::serve::MAX_CLIENT_HELLO_BYTES + 4096);
    // The server may close it while it is being written.
    let _ = tcp.write_all(&bytes).await;
    assert!(
        closed_by_server(&mut tcp).await,
        "the oversized ClientHello was kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_requests_are_closed_by_the_header_read_timeout() {
    let limits = Limits {
        header_read_timeout: Duration::from_millis(500),
        ..Limits::default()
    };
    let addr = serve(Listen::from(bind().await).with_limits(limits));
    let mut half = Vec::new();
    for _ in 0..50 {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(b"GET /healthz HT").await.unwrap();
        half.push(tcp);
    }
    // A whole request meanwhile is answered at once.
    let mut whole = TcpStream::connect(addr).await.unwrap();
    assert!(served(&mut whole).await);
    for (i, tcp) in half.iter_mut().enumerate() {
        assert!(
            closed_by_server(tcp).await,
            "half-sent connection {i} still open"
        );
    }
    // A connection that sends nothing at all is closed the same way (the timer is also
    // how long an idle keep-alive connection is kept).
    let mut idle = TcpStream::connect(addr).await.unwrap();
    assert!(closed_by_server(&mut idle).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_sent_request_over_tls_is_closed_by_the_header_read_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (listen, ca) = tls_listen(dir.path()).await;
    let limits = Limits {
        header_read_timeout: Duration::from_millis(500),
        ..Limits::default()
    };
    let addr = serve(listen.with_limits(limits));
    let connector = tokio_rustls::TlsConnector::from(client_config(&ca));
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let mut tls = connector.connect(name, tcp).await.unwrap();
    tls.write_all(b"GET /healthz HT").await.unwrap();
    tls.flush().await.unwrap();
    let mut got = Vec::new();
    let read = tokio::time::timeout(DEADLINE, tls.read_to_end(&mut got)).await;
    // The server closes it: end of file, or rustls' complaint that it came without a
    // close_notify. Never an answer, never still open at the deadline.
    let read = read.expect("the half-sent request over TLS is still open");
    assert!(!got.starts_with(b"HTTP/1.1 200"));
    if let Err(e) = read {
        assert!(
            matches!(
                e.kind(),
                std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
            ),
            "{e}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_connection_cap_a_new_connection_is_closed_and_the_open_ones_are_served() {
    let limits = Limits {
        max_connections: 2,
        header_read_timeout: Duration::from_secs(60),
        ..Limits::default()
    };
    let addr = serve(Listen::from(bind().await).with_limits(limits));
    let mut first = TcpStream::connect(addr).await.unwrap();
    let _second = TcpStream::connect(addr).await.unwrap();
    // Accepted in order: the third is past the cap.
    let mut third = TcpStream::connect(addr).await.unwrap();
    assert!(
        closed_by_server(&mut third).await,
        "the connection past the cap was kept"
    );
    // The open ones are served...
    assert!(served(&mut first).await);
    // ...and once one has closed, its slot takes a new connection.
    let start = tokio::time::Instant::now();
    loop {
        let mut next = TcpStream::connect(addr).await.unwrap();
        if served(&mut next).await {
            break;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "the closed connection's slot was not freed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_handshake_slots_a_handshake_is_closed_while_every_slot_is_young() {
    let dir = tempfile::tempdir().unwrap();
    let (listen, ca) = tls_listen(dir.path()).await;
    let limits = Limits {
        max_handshakes: 1,
        handshake_timeout: Duration::from_secs(60),
        handshake_evict_after: Duration::from_secs(60),
        ..Limits::default()
    };
    let addr = serve(listen.with_limits(limits));
    let hello = client_hello(&ca);
    // One client holds the only slot, younger than the eviction age: the next one is
    // closed at once, not queued, and the first keeps its slot.
    let mut a = stalled_after_hello(addr, &hello).await;
    let mut b = TcpStream::connect(addr).await.unwrap();
    b.write_all(&hello).await.unwrap();
    assert!(
        closed_by_server(&mut b).await,
        "the second handshake waited for a slot"
    );
    assert!(
        still_open(&mut a).await,
        "the handshake holding the slot ended"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_lets_the_request_in_flight_finish_then_serving_ends() {
    let tcp = bind().await;
    let addr = tcp.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let entered = Arc::new(tokio::sync::Notify::new());
    let handler = entered.clone();
    let app = Router::new().route(
        "/slow",
        get(move || async move {
            handler.notify_one();
            tokio::time::sleep(Duration::from_millis(300)).await;
            "slow"
        }),
    );
    let server = tokio::spawn(Listen::from(tcp).serve(app, async {
        stopped.await.ok();
    }));
    let slow = tokio::spawn(reqwest::get(format!("http://{addr}/slow")));
    // Shut down while the request is being handled.
    tokio::time::timeout(DEADLINE, entered.notified())
        .await
        .expect("the request never reached its handler");
    stop.send(()).unwrap();
    let answer = slow.await.unwrap().unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.text().await.unwrap(), "slow");
    tokio::time::timeout(DEADLINE, server)
        .await
        .expect("serving did not end after the shutdown")
        .unwrap()
        .unwrap();
    assert!(TcpStream::connect(addr).await.is_err(), "still accepting");
}
