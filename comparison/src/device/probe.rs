//! The signer-only build (`comparison/signer`, binary `dgsp-sign-only`): built with the
//! workspace's `signer` profile (size-optimised, fat LTO, `panic = "abort"`, stripped) for
//! this machine and for `wasm32-wasip1`, weighed, and run natively to read its peak memory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Serialize;

use crate::error::CompareError;

/// The package and binary.
pub const PACKAGE: &str = "dgsp-signer-probe";
/// The binary's name.
pub const BINARY: &str = "dgsp-sign-only";
/// The cargo profile.
pub const PROFILE: &str = "signer";
/// The small target tried besides the host.
pub const WASM_TARGET: &str = "wasm32-wasip1";

/// One build of the probe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Build {
    /// `native` or the target triple.
    pub target: String,
    /// The artifact, when it built.
    #[serde(skip)]
    pub path: Option<PathBuf>,
    /// Its size in bytes, when it built.
    pub bytes: Option<u64>,
    /// Why not, when it did not.
    pub failure: Option<String>,
}

/// Builds the probe for `target` (`None`: the host) with the `signer` profile.
pub fn build(workspace: &Path, target: Option<&str>) -> Build {
    let name = target.unwrap_or("native").to_string();
    let failed = |why: String| Build {
        target: name.clone(),
        path: None,
        bytes: None,
        failure: Some(why),
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(workspace)
        .args(["build", "--locked", "--profile", PROFILE, "-p", PACKAGE]);
    if let Some(t) = target {
        cmd.args(["--target", t]);
    }
    let out = match cmd.stdout(Stdio::null()).output() {
        Ok(o) => o,
        Err(e) => return failed(format!("{cargo}: {e}")),
    };
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
        return failed(format!("cargo build failed: {last}"));
    }
    let dir = match target_dir(workspace) {
        Ok(d) => d,
        Err(e) => return failed(e.to_string()),
    };
    let path = match target {
        Some(t) => dir.join(t).join(PROFILE).join(format!("{BINARY}.wasm")),
        None => dir.join(PROFILE).join(BINARY),
    };
    match std::fs::metadata(&path) {
        Ok(m) => Build {
            target: name,
            bytes: Some(m.len()),
            path: Some(path),
            failure: None,
        },
        Err(e) => failed(format!("{}: {e}", path.display())),
    }
}

/// Cargo's target directory for this workspace (`cargo metadata`).
fn target_dir(workspace: &Path) -> Result<PathBuf, CompareError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(workspace)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .output()
        .map_err(|e| CompareError::Probe(format!("cargo metadata: {e}")))?;
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    meta["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| CompareError::Probe("cargo metadata has no target_directory".into()))
}

/// What one run of the native probe reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Run {
    /// Peak resident set of the process (`VmHWM`), KiB.
    pub peak_rss_kib: u64,
}

/// Runs the native probe on `input` and returns the signature it wrote and its peak memory.
pub fn run(binary: &Path, input: &[u8]) -> Result<(Vec<u8>, Run), CompareError> {
    let mut child = Command::new(binary)
        .arg("--memory")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(CompareError::io(binary))?;
    child
        .stdin
        .take()
        .ok_or_else(|| CompareError::Probe("no stdin".into()))?
        .write_all(input)
        .map_err(CompareError::io(binary))?;
    let out = child.wait_with_output().map_err(CompareError::io(binary))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let peak_rss_kib = stderr
        .lines()
        .find_map(|l| l.strip_prefix("vmhwm_kib="))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| CompareError::Probe(format!("no vmhwm_kib in: {stderr}")))?;
    let signature = if out.status.success() {
        out.stdout
    } else {
        Vec::new()
    };
    Ok((signature, Run { peak_rss_kib }))
}
