//! HTTPS over real connections on loopback, with certificates made here (`tls::test_certs`):
//! a client trusting the CA is served; one trusting another CA, and one shown an expired
//! certificate, are refused in the handshake; the key file is refused when others can read
//! it; a reload swaps the certificate for new connections, and a reload that fails keeps
//! the certificate in force. (SIGHUP: `tls_sighup.rs`, a process of its own.)

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use dgsp_http::tls::test_certs::{write_files, TestCa, Validity};
use dgsp_http::tls::{Listen, Tls, TlsError, TlsFiles};

/// Serves a one-route app with `tls` on loopback (no SIGHUP handler); its port.
async fn serve(tls: Arc<Tls>) -> u16 {
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = tcp.local_addr().unwrap().port();
    let listen = Listen::with_tls_no_signal(tcp, tls);
    assert_eq!(listen.scheme(), "https");
    let app = Router::new().route("/hello", get(|| async { "hello over TLS" }));
    tokio::spawn(listen.serve(app, std::future::pending()));
    port
}

/// A client trusting only `ca`.
fn client(ca: &TestCa) -> reqwest::Client {
    let roots = reqwest::Certificate::from_pem_bundle(ca.pem().as_bytes()).unwrap();
    reqwest::Client::builder()
        .tls_certs_only(roots)
        .build()
        .unwrap()
}

/// The whole chain of causes of a failed request, for matching on rustls' reason.
fn causes(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(c) = source {
        s.push_str(": ");
        s.push_str(&c.to_string());
        source = c.source();
    }
    s
}

#[tokio::test]
async fn a_good_certificate_serves_and_a_wrong_ca_or_an_expired_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("dgsp test CA");
    let good = ca.write_server(dir.path(), "good", Validity::Now);
    let port = serve(Tls::load(good).unwrap()).await;
    // By name and by IP address (the certificate names both).
    for host in ["localhost", "127.0.0.1"] {
        let body = client(&ca)
            .get(format!("https://{host}:{port}/hello"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(body, "hello over TLS", "{host}");
    }
    // Plain HTTP to the TLS port: no answer (the handshake fails), never the page.
    let plain = reqwest::get(format!("http://127.0.0.1:{port}/hello")).await;
    assert!(plain.is_err() || !plain.unwrap().status().is_success());

    let other = TestCa::new("another CA");
    let err = client(&other)
        .get(format!("https://localhost:{port}/hello"))
        .send()
        .await
        .unwrap_err();
    let why = causes(&err);
    assert!(why.contains("UnknownIssuer"), "{why}");

    let expired = ca.write_server(dir.path(), "expired", Validity::Expired);
    let port = serve(Tls::load(expired).unwrap()).await;
    let err = client(&ca)
        .get(format!("https://localhost:{port}/hello"))
        .send()
        .await
        .unwrap_err();
    let why = causes(&err);
    assert!(why.contains("certificate expired"), "{why}");
}

#[tokio::test]
async fn a_key_file_others_can_read_a_missing_one_or_the_wrong_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("dgsp test CA");
    let files = ca.write_server(dir.path(), "server", Validity::Now);
    std::fs::set_permissions(&files.key, std::fs::Permissions::from_mode(0o644)).unwrap();
    match Tls::load(files.clone()) {
        Err(TlsError::Key(e)) => assert_eq!(e.kind(), "too_open", "{e}"),
        other => panic!("expected the key file refused, got {other:?}"),
    }
    std::fs::set_permissions(&files.key, std::fs::Permissions::from_mode(0o600)).unwrap();
    Tls::load(files.clone()).unwrap();

    // A symbolic link to a good key file: refused, as every secret file is.
    let link = dir.path().join("link.key");
    std::os::unix::fs::symlink(&files.key, &link).unwrap();
    let linked = TlsFiles {
        cert: files.cert.clone(),
        key: link,
    };
    assert!(matches!(Tls::load(linked), Err(TlsError::Key(_))));

    // Another server's key with this certificate.
    let other = ca.write_server(dir.path(), "other", Validity::Now);
    let mixed = TlsFiles {
        cert: files.cert.clone(),
        key: other.key.clone(),
    };
    let err = Tls::load(mixed).unwrap_err();
    assert!(matches!(err, TlsError::Refused { .. }), "{err}");

    // A certificate file without a certificate.
    let empty = TlsFiles {
        cert: other.key.clone(),
        key: other.key,
    };
    let err = Tls::load(empty).unwrap_err();
    assert!(matches!(err, TlsError::Malformed { .. }), "{err}");
}

#[tokio::test]
async fn reload_swaps_the_certificate_and_a_failed_reload_keeps_the_one_in_force() {
    let dir = tempfile::tempdir().unwrap();
    let old_ca = TestCa::new("old CA");
    let files = old_ca.write_server(dir.path(), "server", Validity::Now);
    let tls = Tls::load(files.clone()).unwrap();
    let port = serve(tls.clone()).await;
    let url = format!("https://localhost:{port}/hello");
    assert!(client(&old_ca).get(&url).send().await.is_ok());

    // A broken key file: the reload fails, the old certificate is still served.
    std::fs::write(&files.cert, "not a certificate").unwrap();
    assert!(tls.reload().is_err());
    assert!(client(&old_ca).get(&url).send().await.is_ok());

    // A renewal by another CA: new connections get the new certificate.
    let new_ca = TestCa::new("new CA");
    let (cert, key) = new_ca.server(Validity::Now);
    write_files(&files, &cert, &key);
    tls.reload().unwrap();
    assert!(client(&new_ca).get(&url).send().await.is_ok());
    assert!(client(&old_ca).get(&url).send().await.is_err());
}
