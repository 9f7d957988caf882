//! Where `dgsp-manager` takes a bearer token from, through the real binary against a mock
//! registry: token files and config files holding tokens must be private regular files (a
//! group- or world-readable one, or a symbolic link, is refused before any request); a token
//! on the command line works but draws a warning; one from the environment does not.

use crate::cli_support as cli;

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

use cli::p;
use serde_json::{json, Value};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "admin-token-of-the-mock-registry";

/// A registry that answers `GET /admin/v1/members/0` only with the right bearer token.
async fn registry() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/admin/v1/members/0"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": 0, "username": "alice", "active": true, "certificates_issued": 3,
            "revoked_at": null
        })))
        .mount(&server)
        .await;
    server
}

fn write(path: &Path, text: &str, mode: u32) {
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn show(extra: &[String]) -> Vec<String> {
    let mut args: Vec<String> = ["operator", "member", "show", "--id", "0", "--retries", "0"]
        .map(String::from)
        .to_vec();
    args.extend_from_slice(extra);
    args
}

/// Runs `dgsp-manager --json ARGS`; the error kind (if any), the output and stderr.
async fn run(env: &[(&str, String)], args: &[String]) -> (i32, Value, String) {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = cli::cli(env, &args).await;
    (r.code, r.json, r.stderr)
}

fn error_kind(stderr: &str) -> String {
    stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["error"]["kind"].as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("<no error in {stderr:?}>"))
}

fn warnings(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["warning"]["kind"].as_str().map(str::to_owned))
        .collect()
}

/// Asserts the run was refused (kind `kind`) naming `file`, and never reached the registry.
async fn refused(server: &MockServer, run: (i32, Value, String), kind: &str, file: &Path) {
    let (code, _, stderr) = run;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(error_kind(&stderr), kind, "{stderr}");
    assert!(stderr.contains(&p(file)), "names the file: {stderr}");
    if kind == "too_open" {
        assert!(
            stderr.contains(&format!("chmod 600 {}", p(file))),
            "{stderr}"
        );
    }
    assert!(
        server.received_requests().await.unwrap().is_empty(),
        "nothing is sent before the token is accepted"
    );
}

#[tokio::test]
async fn token_files_must_be_private_regular_files() {
    let server = registry().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admin-token");
    let url = ("DGSP_REGISTRY_URL", server.uri());

    write(&file, &format!("{TOKEN}\n"), 0o600);
    let (code, json, stderr) = run(
        std::slice::from_ref(&url),
        &show(&["--token-file".into(), p(&file)]),
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json["username"], "alice");
    assert!(warnings(&stderr).is_empty(), "{stderr}");
    // Through the environment variable as well.
    let (code, _, stderr) = run(
        &[url.clone(), ("DGSP_ADMIN_TOKEN_FILE", p(&file))],
        &show(&[]),
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    server.reset().await;
    let server = registry().await;
    let url = ("DGSP_REGISTRY_URL", server.uri());

    for mode in [0o640, 0o644] {
        write(&file, TOKEN, mode);
        let r = run(
            std::slice::from_ref(&url),
            &show(&["--token-file".into(), p(&file)]),
        )
        .await;
        assert!(r.2.contains(&format!("mode {mode:04o}")), "{}", r.2);
        refused(&server, r, "too_open", &file).await;
        let r = run(
            &[url.clone(), ("DGSP_ADMIN_TOKEN_FILE", p(&file))],
            &show(&[]),
        )
        .await;
        refused(&server, r, "too_open", &file).await;
    }
    write(&file, TOKEN, 0o600);
    let link = dir.path().join("token-link");
    symlink(&file, &link).unwrap();
    let r = run(
        std::slice::from_ref(&url),
        &show(&["--token-file".into(), p(&link)]),
    )
    .await;
    refused(&server, r, "symlink", &link).await;

    // The audit command's --token-file follows the same rules.
    write(&file, TOKEN, 0o644);
    let r = run(
        std::slice::from_ref(&url),
        &["audit", "--retries", "0", "--token-file", &p(&file)].map(String::from),
    )
    .await;
    refused(&server, r, "too_open", &file).await;
}

#[tokio::test]
async fn a_token_on_the_command_line_is_warned_about_and_the_environment_is_not() {
    let server = registry().await;
    let url = ("DGSP_REGISTRY_URL", server.uri());
    let (code, json, stderr) = run(
        std::slice::from_ref(&url),
        &show(&["--token".into(), TOKEN.into()]),
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json["id"], 0);
    assert_eq!(warnings(&stderr), vec!["token_on_command_line"], "{stderr}");
    assert!(
        !stderr.contains(TOKEN),
        "the warning does not repeat the token"
    );

    let (code, _, stderr) = run(
        &[url.clone(), ("DGSP_ADMIN_TOKEN", TOKEN.into())],
        &show(&[]),
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(warnings(&stderr).is_empty(), "{stderr}");

    // Without --json: one line on stderr, the result on stdout.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_dgsp-manager"));
    cmd.args(show(&["--token".into(), TOKEN.into()]))
        .env_clear()
        .env("DGSP_REGISTRY_URL", server.uri());
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.starts_with("warning: --token puts the token on the command line"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_config_file_holding_a_token_must_be_private_and_not_a_link() {
    let server = registry().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    let with_token = format!("registry = {:?}\nadmin_token = {TOKEN:?}\n", server.uri());

    write(&config, &with_token, 0o600);
    let (code, json, stderr) = with_config(&config).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json["username"], "alice");
    server.reset().await;
    let server = registry().await;
    let with_token = format!("registry = {:?}\nadmin_token = {TOKEN:?}\n", server.uri());

    for mode in [0o640, 0o644] {
        write(&config, &with_token, mode);
        refused(&server, with_config(&config).await, "too_open", &config).await;
    }
    write(&config, &with_token, 0o600);
    let link = dir.path().join("config-link.toml");
    symlink(&config, &link).unwrap();
    refused(&server, with_config(&link).await, "symlink", &link).await;

    // Without a token the config file is no secret: readable by others, or a link, is fine.
    let plain = dir.path().join("plain.toml");
    write(&plain, &format!("registry = {:?}\n", server.uri()), 0o644);
    let plain_link = dir.path().join("plain-link.toml");
    symlink(&plain, &plain_link).unwrap();
    for c in [&plain, &plain_link] {
        let (code, _, stderr) = run(
            &[("DGSP_ADMIN_TOKEN", TOKEN.into())],
            &[vec!["--config".to_owned(), p(c)], show(&[])].concat(),
        )
        .await;
        assert_eq!(code, 0, "{}: {stderr}", c.display());
    }
}

/// `operator member show` with `--config FILE` and nothing else in the environment.
async fn with_config(config: &Path) -> (i32, Value, String) {
    run(
        &[],
        &[vec!["--config".to_owned(), p(config)], show(&[])].concat(),
    )
    .await
}
