//! The gateway and HTTPS (docs/deploy.md, "TLS"), with certificates made here
//! (`dgsp_http::tls::test_certs`): a gateway follows a registry that serves HTTPS with a
//! certificate of a private CA, trusting that CA (`--registry-ca-file`), and serves HTTPS
//! itself; a gateway trusting another CA applies nothing and reports the registry
//! unreachable, naming the certificate.

use crate::support;

use dgsp_gateway::anchor::Anchor;
use dgsp_gateway::server as gw;
use dgsp_http::tls::test_certs::{TestCa, Validity};
use dgsp_http::tls::{Listen, Tls};
use support::{gateway_config, registry_over_tls, wait_for, Gateway};

fn client(ca: &TestCa) -> reqwest::Client {
    let roots = reqwest::Certificate::from_pem_bundle(ca.pem().as_bytes()).unwrap();
    reqwest::Client::builder()
        .tls_certs_only(roots)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_follows_an_https_registry_with_its_ca_and_serves_https_itself() {
    let certs = tempfile::tempdir().unwrap();
    let ca = TestCa::new("dgsp test CA");
    let ca_file = certs.path().join("ca.pem");
    ca.write_pem(&ca_file);
    let registry_tls = Tls::load(ca.write_server(certs.path(), "registry", Validity::Now)).unwrap();
    let reg = registry_over_tls(registry_tls, &ca).await;
    assert!(reg.url.starts_with("https://"), "{}", reg.url);
    let mut alice = reg.member("alice", 2).await;
    let group = reg.manager.public_key().clone();

    // Trusting the registry's CA (what --registry-ca-file reads), serving its own HTTPS.
    let data = tempfile::tempdir().unwrap();
    let mut config = gateway_config(&reg.url, Anchor::Key(Box::new(group.clone())), data.path());
    config.follow.roots = dgsp_gateway::follower::read_roots(&ca_file).unwrap();
    let gateway_tls = Tls::load(ca.write_server(certs.path(), "gateway", Validity::Now)).unwrap();
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let running = gw::start(config, Listen::with_tls_no_signal(tcp, gateway_tls))
        .await
        .unwrap();
    let mut gateway = Gateway::wrap(running);
    gateway.client = client(&ca);
    assert!(gateway.url.starts_with("https://"), "{}", gateway.url);
    let settled = reg.settled().await;
    gateway.reach(settled).await;
    let sig = alice.sign(b"over TLS");
    let answer = gateway.verify(b"over TLS", &sig).await;
    assert_eq!(answer["status"], "ok", "{answer}");
    // Plain HTTP to its port gets no page.
    let plain = reqwest::get(format!("http://{}/readyz", gateway.addr())).await;
    assert!(plain.is_err() || !plain.unwrap().status().is_success());

    // Trusting another CA: the handshake fails, nothing is applied, the fault names it.
    let other = TestCa::new("another CA");
    let other_file = certs.path().join("other.pem");
    other.write_pem(&other_file);
    let data = tempfile::tempdir().unwrap();
    let mut config = gateway_config(&reg.url, Anchor::Key(Box::new(group)), data.path());
    config.follow.roots = dgsp_gateway::follower::read_roots(&other_file).unwrap();
    let untrusting = support::gateway(config).await;
    let fault = wait_for("the certificate refused", || {
        let status = untrusting.state().status.clone();
        async move {
            let fault = status.lock().unwrap().fault.clone()?;
            Some(fault)
        }
    })
    .await;
    assert_eq!(fault.kind, "unreachable", "{fault:?}");
    assert!(fault.detail.contains("certificate"), "{fault:?}");
    assert_eq!(untrusting.applied().await, 0);

    // A CA file without a certificate is refused at start.
    let err = dgsp_gateway::follower::read_roots(&certs.path().join("gateway.key")).unwrap_err();
    assert!(
        err.contains("CA certificates") || err.contains("no certificate"),
        "{err}"
    );

    untrusting.shutdown().await;
    gateway.shutdown().await;
    reg.shutdown().await;
}
