//! Running the `dgsp-manager` binary from tests: `--json` output parsed, exit code kept.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// What a run of the binary came to.
pub struct Run {
    /// exit code
    pub code: i32,
    /// stdout parsed as JSON (Null if it was not JSON)
    pub json: Value,
    /// stderr
    pub stderr: String,
}

/// Runs `dgsp-manager --json <args>` with only `env` (and PATH) in its environment.
pub async fn cli(env: &[(&str, String)], args: &[&str]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dgsp-manager"));
    cmd.arg("--json").args(args).env_clear();
    cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    Run {
        code: out.status.code().unwrap_or(-1),
        json: serde_json::from_str(&stdout).unwrap_or(Value::Null),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs and requires exit code `code`; returns the JSON output.
pub async fn expect(env: &[(&str, String)], code: i32, args: &[&str]) -> Value {
    let run = cli(env, args).await;
    assert_eq!(
        run.code, code,
        "dgsp-manager {args:?}: exit {} (stdout {}, stderr {})",
        run.code, run.json, run.stderr
    );
    run.json
}

/// A path as an argument.
pub fn p(path: &Path) -> String {
    path.display().to_string()
}

/// `operator open` of `signature` over `message` (with the operator's `operator` env), then
/// `judge` of that opening through the gateway of `judge_env`; both must succeed. Returns
/// the opening (`username`, `id`, `pi_hex`, …).
pub async fn open_and_judge(
    operator: &[(&str, String)],
    judge_env: &[(&str, String)],
    message: &Path,
    signature: &Path,
) -> Value {
    let (message, signature) = (p(message), p(signature));
    let opened = expect(
        operator,
        0,
        &[
            "operator",
            "open",
            "--message",
            &message,
            "--signature",
            &signature,
        ],
    )
    .await;
    let id = opened["id"].as_u64().unwrap().to_string();
    let pi = opened["pi_hex"].as_str().unwrap().to_owned();
    expect(
        judge_env,
        0,
        &[
            "judge",
            "--message",
            &message,
            "--signature",
            &signature,
            "--id",
            &id,
            "--pi",
            &pi,
        ],
    )
    .await;
    opened
}

/// Whether a `verify --group-key --json` report is negative because the revocation proof,
/// checked by the CLI itself, shows the signature's zeta revoked.
pub fn shows_revoked(report: &Value) -> bool {
    report["valid"] == false
        && report["checks"].as_array().is_some_and(|checks| {
            checks.iter().any(|c| {
                c["check"] == "revocation_proof"
                    && c["passed"] == false
                    && c["detail"]
                        .as_str()
                        .is_some_and(|d| d.contains("IS revoked"))
            })
        })
}
