//! SIGHUP reloads the certificate of a server started with `Listen::with_tls`, without a
//! restart: in a test binary of its own, since the signal goes to the whole process.

use axum::routing::get;
use axum::Router;
use dgsp_http::tls::test_certs::{write_files, TestCa, Validity};
use dgsp_http::tls::{Listen, Tls};

fn client(ca: &TestCa) -> reqwest::Client {
    let roots = reqwest::Certificate::from_pem_bundle(ca.pem().as_bytes()).unwrap();
    reqwest::Client::builder()
        .tls_certs_only(roots)
        .build()
        .unwrap()
}

#[tokio::test]
async fn sighup_serves_the_new_certificate_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let old_ca = TestCa::new("old CA");
    let files = old_ca.write_server(dir.path(), "server", Validity::Now);
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "https://localhost:{}/hello",
        tcp.local_addr().unwrap().port()
    );
    // The handler is installed here, before serving: a SIGHUP from now on reloads.
    let listen = Listen::with_tls(tcp, Tls::load(files.clone()).unwrap()).unwrap();
    let app = Router::new().route("/hello", get(|| async { "hello" }));
    tokio::spawn(listen.serve(app, std::future::pending()));
    assert!(client(&old_ca).get(&url).send().await.is_ok());

    let new_ca = TestCa::new("new CA");
    let (cert, key) = new_ca.server(Validity::Now);
    write_files(&files, &cert, &key);
    // Not before the signal: the files changed, the certificate in force did not.
    assert!(client(&old_ca).get(&url).send().await.is_ok());
    let status = std::process::Command::new("kill")
        .args(["-HUP", &std::process::id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut served_new = false;
    for _ in 0..100 {
        if client(&new_ca).get(&url).send().await.is_ok() {
            served_new = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        served_new,
        "the new certificate was not served after SIGHUP"
    );
    assert!(client(&old_ca).get(&url).send().await.is_err());
}
