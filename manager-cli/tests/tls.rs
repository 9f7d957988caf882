//! `dgsp-manager` and HTTPS, with the real binary against a registry served in process over
//! TLS with certificates made here (`dgsp_http::tls::test_certs`; docs/deploy.md, "TLS"):
//! with the CA in `--ca-file` the operator's commands work; with another CA, with the
//! system's trust store, or against an expired certificate they fail at once with a `tls`
//! error (never retried); and a token is never sent over plain http:// to a host that is not
//! loopback unless `--allow-plain-http` says so: refused before any connection, naming the
//! flag.

use crate::cli_support;
use crate::logs;
use crate::services;

use std::time::{Duration, Instant};

use cli_support::{cli, expect, p, Run};
use dgsp_http::tls::test_certs::{TestCa, Validity};
use dgsp_http::tls::Tls;
use logs::{Registry, ADMIN, AUDITOR};
use serde_json::Value;

/// The `--json` error of a failed run: (kind, message).
fn error_of(run: &Run) -> (String, String) {
    let e: Value = serde_json::from_str(run.stderr.trim()).unwrap_or(Value::Null);
    (
        e["error"]["kind"].as_str().unwrap_or_default().to_owned(),
        e["error"]["message"]
            .as_str()
            .unwrap_or(&run.stderr)
            .to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_speaks_https_with_its_ca_and_refuses_a_wrong_ca_or_an_expired_certificate() {
    let certs = tempfile::tempdir().unwrap();
    let ca = TestCa::new("dgsp test CA");
    let ca_file = certs.path().join("ca.pem");
    ca.write_pem(&ca_file);
    let files = ca.write_server(certs.path(), "registry", Validity::Now);
    let registry = Registry::start_over_tls(Tls::load(files).unwrap(), &ca).await;
    let url = registry.url.clone();
    assert!(url.starts_with("https://"), "{url}");
    let env = [("DGSP_ADMIN_TOKEN", ADMIN.to_owned())];

    // The CA given (flag or variable): joined, and the status read.
    let joined = expect(
        &env,
        0,
        &[
            "operator",
            "join",
            "alice",
            "--registry",
            &url,
            "--ca-file",
            &p(&ca_file),
        ],
    )
    .await;
    assert_eq!(joined["members"][0]["username"], "alice", "{joined}");
    let with_env = [
        ("DGSP_ADMIN_TOKEN", ADMIN.to_owned()),
        ("DGSP_CA_FILE", p(&ca_file)),
        ("DGSP_REGISTRY_URL", url.clone()),
    ];
    expect(&with_env, 0, &["operator", "status"]).await;

    // Another CA, or the system's trust store (which does not know the test CA): a `tls`
    // error at once, though 5 retries are allowed.
    let other = TestCa::new("another CA");
    let other_file = certs.path().join("other.pem");
    other.write_pem(&other_file);
    for ca_args in [vec!["--ca-file".to_owned(), p(&other_file)], vec![]] {
        let mut args = vec![
            "operator",
            "join",
            "bob",
            "--registry",
            &url,
            "--retries",
            "5",
        ];
        args.extend(ca_args.iter().map(String::as_str));
        let started = Instant::now();
        let run = cli(&env, &args).await;
        assert_eq!(run.code, 1, "{}", run.stderr);
        let (kind, message) = error_of(&run);
        assert_eq!(kind, "tls", "{message}");
        assert!(message.contains("certificate"), "{message}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "retried: {message}"
        );
    }

    // A CA file without a certificate.
    let run = cli(
        &env,
        &[
            "operator",
            "status",
            "--registry",
            &url,
            "--ca-file",
            &p(certs.path().join("registry.key").as_path()),
        ],
    )
    .await;
    assert_eq!(error_of(&run).0, "ca_file", "{}", run.stderr);

    // An expired certificate, from the trusted CA.
    let expired = ca.write_server(certs.path(), "expired", Validity::Expired);
    let stale = Registry::start_over_tls(Tls::load(expired).unwrap(), &ca).await;
    let run = cli(
        &env,
        &[
            "operator",
            "status",
            "--registry",
            &stale.url,
            "--ca-file",
            &p(&ca_file),
        ],
    )
    .await;
    let (kind, message) = error_of(&run);
    assert_eq!(kind, "tls", "{message}");
    assert!(message.contains("expired"), "{message}");

    // The token went nowhere it should not: bob never joined.
    let members = expect(&with_env, 0, &["operator", "member", "list"]).await;
    assert_eq!(
        members["members"].as_array().map(Vec::len),
        Some(1),
        "{members}"
    );
    stale.finish().await;
    registry.finish().await;
}

#[tokio::test]
async fn no_token_over_plain_http_off_loopback_unless_allowed() {
    // An unroutable address: a connection would hang until the timeout; the refusal comes
    // first, naming the flag, for the admin token and the auditor token alike.
    let admin = [("DGSP_ADMIN_TOKEN", ADMIN.to_owned())];
    let auditor = [("DGSP_AUDITOR_TOKEN", AUDITOR.to_owned())];
    let started = Instant::now();
    for (env, args, token) in [
        (
            &admin,
            vec!["operator", "member", "list", "--registry"],
            "admin",
        ),
        (
            &admin,
            vec!["operator", "join", "carol", "--registry"],
            "admin",
        ),
        (&auditor, vec!["audit", "--registry"], "auditor"),
    ] {
        let mut args = args;
        args.extend(["http://10.255.255.1:1", "--timeout-secs", "30"]);
        let run = cli(env, &args).await;
        let (kind, message) = error_of(&run);
        assert_eq!(run.code, 1);
        assert_eq!(kind, "plain_http_refused", "{message}");
        assert!(message.contains("--allow-plain-http"), "{message}");
        assert!(message.contains(&format!("{token} token")), "{message}");
    }
    assert!(started.elapsed() < Duration::from_secs(10));

    // Allowed (flag or variable), the request is made: 0.0.0.0 is not loopback, and nothing
    // listens on that port, so the answer is a refused connection.
    let port = services::free_port();
    let url = format!("http://0.0.0.0:{port}");
    let refused = cli(&admin, &["operator", "member", "list", "--registry", &url]).await;
    assert_eq!(error_of(&refused).0, "plain_http_refused");
    for (env, extra) in [
        (
            vec![("DGSP_ADMIN_TOKEN", ADMIN.to_owned())],
            Some("--allow-plain-http"),
        ),
        (
            vec![
                ("DGSP_ADMIN_TOKEN", ADMIN.to_owned()),
                ("DGSP_ALLOW_PLAIN_HTTP", "1".to_owned()),
            ],
            None,
        ),
    ] {
        let mut args = vec![
            "operator",
            "member",
            "list",
            "--registry",
            &url,
            "--retries",
            "0",
        ];
        args.extend(extra);
        let run = cli(&env, &args).await;
        let (kind, message) = error_of(&run);
        assert_eq!(kind, "unreachable", "{message}");
    }

    // Without a token (`status` reads public routes), plain HTTP anywhere is not refused.
    let run = cli(
        &admin,
        &["operator", "status", "--registry", &url, "--retries", "0"],
    )
    .await;
    assert_eq!(error_of(&run).0, "unreachable", "{}", run.stderr);
}
