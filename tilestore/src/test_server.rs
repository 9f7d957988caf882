//! The S3 server of the tests.
//!
//! - `DGSP_TEST_S3_ENDPOINT` set: that server is used (with `DGSP_TEST_S3_BUCKET`,
//!   `_REGION`, `_ACCESS_KEY`, `_SECRET_KEY`, `_PATH_STYLE`; the defaults are those of
//!   `scripts/s3.sh`), for example one started by hand with
//!   `eval "$(scripts/s3.sh start DIR PORT)"`, or a real bucket.
//! - Else the first test that needs it runs `scripts/s3.sh install` and `start` (one server
//!   per test binary, on free loopback ports, stopped when the binary exits: an `atexit`
//!   handler, and the script's watcher of this process's pid for a binary killed outright).
//! - A server that cannot be had FAILS the test with the reason. Only `DGSP_SKIP_S3=1`
//!   skips the S3 half of the tests, saying `SKIPPED` on stderr.
//!
//! Every test works under its own random key prefix, so runs never see each other's objects.
//!
//! Built for this crate's tests and, with the `test-server` feature, for the tests of the
//! crates that use a tile store (the registry's takeover test).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::{S3Config, S3Credentials};

/// Where the tests' S3 server is and how to reach it.
#[derive(Clone, Debug)]
pub struct S3Env {
    endpoint: String,
    bucket: String,
    region: String,
    access_key: String,
    secret_key: String,
    path_style: bool,
}

impl S3Env {
    /// The endpoint URL.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The access key id and secret (test credentials, not secrets).
    pub fn credentials(&self) -> (&str, &str) {
        (&self.access_key, &self.secret_key)
    }

    /// The value of header `name` in the server's answer to a plain, SigV4-signed HTTP
    /// `GET` of `object` (its full key in the bucket: the store's prefix, `/`, the key),
    /// made with `curl --aws-sigv4` as `scripts/s3.sh` makes its requests; `None` when the
    /// answer has no such header. Panics unless the answer is 200.
    pub fn get_header(&self, object: &str, name: &str) -> Option<String> {
        let url = format!(
            "{}/{}/{object}",
            self.endpoint.trim_end_matches('/'),
            self.bucket
        );
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "10", "-o", "/dev/null", "-D", "-"])
            .arg("--aws-sigv4")
            .arg(format!("aws:amz:{}:s3", self.region))
            .arg("--user")
            .arg(format!("{}:{}", self.access_key, self.secret_key))
            .args(["-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"])
            .arg(&url)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("running curl for {url}: {e}"));
        let head = String::from_utf8_lossy(&out.stdout);
        let status = head.lines().next().unwrap_or_default();
        assert!(
            out.status.success() && status.split_whitespace().nth(1) == Some("200"),
            "GET {url}: {status:?} ({}; stderr {})",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        head.lines().skip(1).find_map(|line| {
            let (k, v) = line.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }

    /// A configuration for a fresh, unique key prefix named after `test`.
    pub fn config(&self, test: &str) -> S3Config {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let mut cfg = S3Config::new(&self.bucket);
        cfg.endpoint = Some(self.endpoint.clone());
        cfg.region = self.region.clone();
        cfg.path_style = self.path_style;
        cfg.prefix = format!("dgsp-tilestore-test/{}-{nanos}/{test}", std::process::id());
        cfg.credentials = Some(S3Credentials {
            access_key_id: self.access_key.clone(),
            secret_access_key: self.secret_key.clone(),
            session_token: None,
        });
        cfg
    }
}

const DEFAULT_BUCKET: &str = "dgsp-test";
const DEFAULT_REGION: &str = "us-east-1";
const DEFAULT_ACCESS_KEY: &str = "dgsptestkey";
const DEFAULT_SECRET_KEY: &str = "dgsptestsecret-not-a-secret";

static SERVER: OnceLock<Result<S3Env, String>> = OnceLock::new();
/// The directory of the server this binary started (read by the `atexit` handler).
static STARTED_DIR: OnceLock<PathBuf> = OnceLock::new();

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The S3 server to test against; `None` only under `DGSP_SKIP_S3=1` (said loudly). Panics
/// (fails the test) with the reason when there is none.
pub fn s3_env(test: &str) -> Option<S3Env> {
    if env("DGSP_SKIP_S3").as_deref() == Some("1") {
        // Straight to stderr: the test harness captures `eprintln!` of passing tests.
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: {test} against S3: DGSP_SKIP_S3=1 (the S3 backend is NOT tested in this run)"
        );
        return None;
    }
    match SERVER.get_or_init(find_or_start) {
        Ok(env) => Some(env.clone()),
        Err(why) => panic!(
            "{test}: no S3 server for the tests: {why}\n(set DGSP_TEST_S3_ENDPOINT to use a \
             running one, or DGSP_SKIP_S3=1 to skip the S3 tests, loudly)"
        ),
    }
}

fn find_or_start() -> Result<S3Env, String> {
    if let Some(endpoint) = env("DGSP_TEST_S3_ENDPOINT") {
        return Ok(S3Env {
            endpoint,
            bucket: env("DGSP_TEST_S3_BUCKET").unwrap_or(DEFAULT_BUCKET.into()),
            region: env("DGSP_TEST_S3_REGION").unwrap_or(DEFAULT_REGION.into()),
            access_key: env("DGSP_TEST_S3_ACCESS_KEY").unwrap_or(DEFAULT_ACCESS_KEY.into()),
            secret_key: env("DGSP_TEST_S3_SECRET_KEY").unwrap_or(DEFAULT_SECRET_KEY.into()),
            path_style: env("DGSP_TEST_S3_PATH_STYLE").as_deref() != Some("0"),
        });
    }
    start_server()
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/s3.sh")
}

/// A base port whose 11 ports (`scripts/s3.sh start`) are free now.
fn free_base_port(attempt: u32) -> Option<u16> {
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
        ^ std::process::id().rotate_left(16)
        ^ attempt.wrapping_mul(0x9e37_79b9);
    for i in 0..200u32 {
        let base = 20_000 + (seed.wrapping_add(i.wrapping_mul(7919)) % 2_000) * 16;
        let base = u16::try_from(base).ok()?;
        if (base..=base + 10).all(|p| TcpListener::bind(("127.0.0.1", p)).is_ok()) {
            return Some(base);
        }
    }
    None
}

extern "C" fn stop_at_exit() {
    if let Some(dir) = STARTED_DIR.get() {
        if let Ok(pid) = std::fs::read_to_string(dir.join("weed.pid")) {
            if let Ok(pid) = pid.trim().parse::<libc::pid_t>() {
                // SAFETY: kill(2) with a pid read from our own pid file; no memory involved.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
        if let Ok(pid) = std::fs::read_to_string(dir.join("watch.pid")) {
            if let Ok(pid) = pid.trim().parse::<libc::pid_t>() {
                // SAFETY: as above.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn start_server() -> Result<S3Env, String> {
    let script = script();
    let status = Command::new("bash")
        .arg(&script)
        .arg("install")
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| format!("running {} install: {e}", script.display()))?;
    if !status.success() {
        return Err(format!(
            "{} install failed ({status}); its output is above",
            script.display()
        ));
    }
    let dir = std::env::temp_dir().join(format!("dgsp-tilestore-s3-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let mut last_err = String::new();
    for attempt in 0..3 {
        let Some(port) = free_base_port(attempt) else {
            return Err("no 11 free loopback ports found in 20000..52000".into());
        };
        let out = Command::new("bash")
            .arg(&script)
            .arg("start")
            .arg(&dir)
            .arg(port.to_string())
            .arg(std::process::id().to_string())
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("running {} start: {e}", script.display()))?;
        if out.status.success() {
            let _ = STARTED_DIR.set(dir.clone());
            // SAFETY: registers a plain `extern "C" fn` to run at exit.
            unsafe {
                libc::atexit(stop_at_exit);
            }
            return parse_start_output(&String::from_utf8_lossy(&out.stdout));
        }
        last_err = format!(
            "{} start {} {port} failed ({}); its output is above",
            script.display(),
            dir.display(),
            out.status
        );
    }
    Err(last_err)
}

fn parse_start_output(out: &str) -> Result<S3Env, String> {
    let get = |name: &str| {
        out.lines()
            .filter_map(|l| l.strip_prefix("export "))
            .filter_map(|l| l.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_owned())
            .ok_or_else(|| format!("scripts/s3.sh start printed no {name}: {out:?}"))
    };
    Ok(S3Env {
        endpoint: get("DGSP_TEST_S3_ENDPOINT")?,
        bucket: get("DGSP_TEST_S3_BUCKET")?,
        region: get("DGSP_TEST_S3_REGION")?,
        access_key: get("DGSP_TEST_S3_ACCESS_KEY")?,
        secret_key: get("DGSP_TEST_S3_SECRET_KEY")?,
        path_style: true,
    })
}
