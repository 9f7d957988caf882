//! A silent or slow client holds up nobody (`dgsp_http::serve`), on real connections on
//! loopback: silent sockets before a TLS client do not delay it; a request head that does
//! not arrive within the header-read timeout closes its connection, plain or TLS; past the
//! connection cap a new connection is closed while the open ones are served; past the
//! handshake slots a handshake is closed, not queued; a shutdown lets the request in flight
//! finish.
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
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
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
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
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
async fn past_the_handshake_slots_a_handshake_is_closed_not_queued() {
    let dir = tempfile::tempdir().unwrap();
    let (listen, _ca) = tls_listen(dir.path()).await;
    let limits = Limits {
        max_handshakes: 1,
        handshake_timeout: Duration::from_secs(60),
        ..Limits::default()
    };
    let addr = serve(listen.with_limits(limits));
    // Two clients each send the first bytes of a TLS record and stall: one holds the only
    // slot until its handshake timeout, the other is closed at once.
    let mut a = TcpStream::connect(addr).await.unwrap();
    let mut b = TcpStream::connect(addr).await.unwrap();
    a.write_all(&[0x16, 0x03, 0x01]).await.unwrap();
    b.write_all(&[0x16, 0x03, 0x01]).await.unwrap();
    let (mut buf_a, mut buf_b) = (Vec::new(), Vec::new());
    let a_closed = tokio::time::timeout(DEADLINE, async {
        tokio::select! {
            _ = a.read_to_end(&mut buf_a) => true,
            _ = b.read_to_end(&mut buf_b) => false,
        }
    })
    .await
    .expect("neither stalled handshake was closed: the second waited for a slot");
    // The other still holds its slot: open, nothing to read.
    let open = if a_closed { &b } else { &a };
    let mut byte = [0u8; 1];
    match open.try_read(&mut byte) {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the handshake holding the slot ended too: {other:?}"),
    }
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
