//! The token and the environment's proxies (`dgsp_secrets::transport::token_proxy`): a
//! client holding a token goes through the proxy `HTTP_PROXY`, `http_proxy`, `HTTPS_PROXY`,
//! `https_proxy`, `ALL_PROXY` or `all_proxy` names only when that proxy passes the token's
//! rule (https, or a loopback host, or `--allow-plain-http`); any other is refused before a
//! connection, and `NO_PROXY` reaches the host directly. Each case runs the real binaries
//! (`dgsp-manager`, `dgsp-registry backup`) with the variable in the child's environment
//! alone, so no test changes this process's environment.
//!
//! The proxy "elsewhere" is `0.0.0.0`: not loopback by the rule, yet on Linux a connection
//! to it reaches this host, so a recorder listening on loopback sees whatever a client
//! sends it.

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cli_support::{cli, Run};
use crate::logs::ADMIN;
use crate::services;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A listener on loopback that keeps what each connection sent it (up to the end of the
/// request's head, or 1 s of silence) and answers 401 problem+json, which a client does not
/// retry.
struct Recorder {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    async fn start() -> Recorder {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") && got.len() < 64 << 10 {
                        match tokio::time::timeout(Duration::from_secs(1), tcp.read(&mut buf)).await
                        {
                            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
                            _ => break,
                        }
                    }
                    log.lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&got).into_owned());
                    let body = r#"{"type":"about:blank","title":"Unauthorized","status":401,"detail":"recorded"}"#;
                    let answer = format!(
                        "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/problem+json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = tcp.write_all(answer.as_bytes()).await;
                });
            }
        });
        Recorder { port, seen }
    }

    /// What every connection so far sent.
    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    /// Whether any of it carried the admin token.
    fn saw_token(&self) -> bool {
        self.seen().iter().any(|r| {
            r.to_ascii_lowercase().contains(&format!(
                "authorization: bearer {}",
                ADMIN.to_ascii_lowercase()
            ))
        })
    }
}

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

/// `dgsp-manager --json operator member list --registry URL` with the admin token and
/// `env`, no retries.
async fn member_list(url: &str, env: &[(&str, String)], extra: &[&str]) -> Run {
    let mut env = env.to_vec();
    env.push(("DGSP_ADMIN_TOKEN", ADMIN.to_owned()));
    let mut args = vec![
        "operator",
        "member",
        "list",
        "--registry",
        url,
        "--retries",
        "0",
        "--timeout-secs",
        "10",
    ];
    args.extend(extra);
    cli(&env, &args).await
}

/// `dgsp-registry backup --registry URL` with the admin token and `env` alone.
async fn registry_backup(url: &str, env: &[(&str, String)]) -> (i32, String) {
    let mut cmd = Command::new(services::binary("dgsp-registry"));
    cmd.args(["backup", "--registry", url, "--name", "proxied"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("DGSP_ADMIN_TOKEN", ADMIN);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_elsewhere_never_gets_the_token_whichever_variable_names_it() {
    let proxy = Recorder::start().await;
    let registry = Recorder::start().await;
    let elsewhere = format!("http://0.0.0.0:{}", proxy.port);
    let http_url = format!("http://127.0.0.1:{}", registry.port);
    // https: the refusal comes before any connection, so nothing need speak TLS there.
    let https_url = format!("https://127.0.0.1:{}", registry.port);
    for (variable, url) in [
        ("HTTP_PROXY", &http_url),
        ("http_proxy", &http_url),
        ("ALL_PROXY", &http_url),
        ("all_proxy", &http_url),
        ("HTTPS_PROXY", &https_url),
        ("https_proxy", &https_url),
        ("ALL_PROXY", &https_url),
    ] {
        let env = [(variable, elsewhere.clone())];
        let run = member_list(url, &env, &[]).await;
        let (kind, message) = error_of(&run);
        assert_eq!(run.code, 1, "{variable} {url}: {}", run.stderr);
        assert_eq!(kind, "proxy_refused", "{variable} {url}: {message}");
        assert!(
            message.contains("NO_PROXY") && message.contains("--allow-plain-http"),
            "{message}"
        );
        let (code, stderr) = registry_backup(url, &env).await;
        assert_ne!(code, 0, "{variable}: {stderr}");
        assert!(
            stderr.contains("refusing to send the admin token through the proxy"),
            "{variable}: {stderr}"
        );
    }
    assert!(
        proxy.seen().is_empty(),
        "the proxy was reached: {:?}",
        proxy.seen()
    );
    assert!(
        registry.seen().is_empty(),
        "the registry was reached: {:?}",
        registry.seen()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_proxy_goes_direct_and_a_loopback_or_allowed_proxy_is_used() {
    let proxy = Recorder::start().await;
    let registry = Recorder::start().await;
    let elsewhere = format!("http://0.0.0.0:{}", proxy.port);
    let url = format!("http://127.0.0.1:{}", registry.port);

    // NO_PROXY (either spelling) lists the host: the request goes straight to it.
    for no in ["NO_PROXY", "no_proxy"] {
        let env = [
            ("HTTP_PROXY", elsewhere.clone()),
            (no, "127.0.0.1".to_owned()),
        ];
        let run = member_list(&url, &env, &[]).await;
        assert_eq!(error_of(&run).0, "refused", "{no}: {}", run.stderr);
        let (code, stderr) = registry_backup(&url, &env).await;
        assert_ne!(code, 0);
        assert!(stderr.contains("401"), "{no}: {stderr}");
    }
    assert!(proxy.seen().is_empty(), "{:?}", proxy.seen());
    assert_eq!(registry.seen().len(), 4, "{:?}", registry.seen());
    assert!(registry.saw_token());

    // A proxy on loopback passes the rule as a loopback registry does: it is used, and it
    // is where the request (with its token) goes.
    let loopback = format!("http://127.0.0.1:{}", proxy.port);
    let run = member_list(&url, &[("HTTP_PROXY", loopback.clone())], &[]).await;
    assert_eq!(error_of(&run).0, "refused", "{}", run.stderr);
    let (code, _) = registry_backup(&url, &[("ALL_PROXY", loopback)]).await;
    assert_ne!(code, 0);
    let seen = proxy.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(
        seen.iter().all(
            |r| r.starts_with(&format!("GET {url}/")) || r.starts_with(&format!("POST {url}/"))
        ),
        "{seen:?}"
    );
    assert!(proxy.saw_token());

    // --allow-plain-http (the network is trusted) allows a plain proxy elsewhere too.
    let run = member_list(&url, &[("HTTP_PROXY", elsewhere)], &["--allow-plain-http"]).await;
    assert_eq!(error_of(&run).0, "refused", "{}", run.stderr);
    assert_eq!(proxy.seen().len(), 3);
    assert_eq!(registry.seen().len(), 4);
}
