//! The signer-only build (`comparison/signer`, binary `dgsp-sign-only`): built with the
//! workspace's `signer` profile (size-optimised, fat LTO, `panic = "abort"`, stripped) for
//! this machine and for `wasm32-wasip1`, weighed, run natively to read its peak memory, and
//! timed from inside both builds (the WebAssembly one under Node's WASI, the runner the
//! verifier's WebAssembly tests use: `scripts/wasi-run.mjs`).

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
/// Signatures timed per run of a build (`--time`); the median is reported.
pub const TIMED_SIGNATURES: usize = 101;

/// How a build of the probe is started.
#[derive(Clone, Copy, Debug)]
pub enum Runner<'a> {
    /// The native binary itself.
    Native(&'a Path),
    /// The WebAssembly module under Node's WASI (`node scripts/wasi-run.mjs MODULE`).
    Wasi {
        /// The `.wasm` module.
        module: &'a Path,
        /// The workspace (for `scripts/wasi-run.mjs`).
        workspace: &'a Path,
    },
}

impl Runner<'_> {
    fn command(&self) -> Command {
        match self {
            Runner::Native(bin) => Command::new(bin),
            Runner::Wasi { module, workspace } => {
                let mut c = Command::new("node");
                c.arg("--no-warnings")
                    .arg(workspace.join("scripts/wasi-run.mjs"))
                    .arg(module);
                c
            }
        }
    }

    fn name(&self) -> String {
        match self {
            Runner::Native(bin) => bin.display().to_string(),
            Runner::Wasi { module, .. } => format!("node (WASI) {}", module.display()),
        }
    }
}

/// Why WebAssembly cannot be run here, if it cannot: Node.js 20 or later (`node:wasi`,
/// preview 1) is needed.
pub fn wasi_unavailable() -> Option<String> {
    let out = Command::new("node")
        .args(["-p", "process.versions.node.split('.')[0]"])
        .output();
    match out {
        Err(e) => Some(format!(
            "node: {e} (Node.js 20 or later runs the WebAssembly build)"
        )),
        Ok(o) => match String::from_utf8_lossy(&o.stdout).trim().parse::<u32>() {
            Ok(major) if major >= 20 => None,
            Ok(major) => Some(format!(
                "Node.js {major} has no WASI preview 1; 20 or later is needed"
            )),
            Err(_) => Some("node did not say its version".into()),
        },
    }
}

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
    let (signature, stderr) = run_with(&Runner::Native(binary), &["--memory"], input)?;
    let peak_rss_kib = stderr
        .lines()
        .find_map(|l| l.strip_prefix("vmhwm_kib="))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| CompareError::Probe(format!("no vmhwm_kib in: {stderr}")))?;
    Ok((signature, Run { peak_rss_kib }))
}

/// Runs a build with `--time` [`TIMED_SIGNATURES`] on `input`: the signature it wrote and
/// the median wall time of one signature (decode the slot, rebuild the key, sign), in ns.
pub fn time(runner: &Runner<'_>, input: &[u8]) -> Result<(Vec<u8>, u64), CompareError> {
    let n = TIMED_SIGNATURES.to_string();
    let (signature, stderr) = run_with(runner, &["--time", &n], input)?;
    if signature.is_empty() {
        return Err(CompareError::Probe(format!(
            "{} refused the request: {}",
            runner.name(),
            stderr.trim()
        )));
    }
    let ns = stderr
        .lines()
        .find_map(|l| l.strip_prefix("sign_ns="))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| {
            CompareError::Probe(format!("no sign_ns from {}: {stderr}", runner.name()))
        })?;
    Ok((signature, ns))
}

/// Starts the probe with `args`, writes `input` to it and returns what it wrote on stdout
/// (empty when it failed) and on stderr.
fn run_with(
    runner: &Runner<'_>,
    args: &[&str],
    input: &[u8],
) -> Result<(Vec<u8>, String), CompareError> {
    let name = PathBuf::from(runner.name());
    let mut child = runner
        .command()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(CompareError::io(&name))?;
    child
        .stdin
        .take()
        .ok_or_else(|| CompareError::Probe("no stdin".into()))?
        .write_all(input)
        .map_err(CompareError::io(&name))?;
    let out = child.wait_with_output().map_err(CompareError::io(&name))?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let signature = if out.status.success() {
        out.stdout
    } else {
        Vec::new()
    };
    Ok((signature, stderr))
}
