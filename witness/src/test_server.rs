//! The real witnesses of the tests: omniwitness and litewitness, run by
//! `scripts/witnesses.sh` on loopback (`docs/witnesses.md`).
//!
//! - [`TestWitnesses::start`] runs `scripts/witnesses.sh install` once per process (cached in
//!   `~/.cache/dgsp/tools`; ≈ 2 min cold: it builds both from the Go module proxy), then
//!   `start DIR PORT PID` with `DGSP_WITNESS_LOG_VKEYS` set to the given log vkeys, on free
//!   loopback ports never handed out twice in this process, in a fresh directory.
//! - The handle stops both (`witnesses.sh stop DIR`) and removes the directory when dropped;
//!   a test process killed outright takes them with it (the script watches this process's
//!   pid, its `OWNER_PID` argument, and kills them within about a second).
//! - Witnesses that cannot be had FAIL with the reason. Only `DGSP_SKIP_WITNESSES=1` skips:
//!   [`TestWitnesses::start`] then says `SKIPPED` on stderr and returns `None`.
//!
//! Each start is a separate pair of witnesses with fresh state, so tests never see each
//! other's logs.
//!
//! [`LoopbackWitness`] is an in-process witness on a loopback port, for tests that need
//! many witnesses or bad ones and no Go: an honest one ([`dgsp_witness::server::Witness`]
//! with a memory store and an injectable clock), or one that answers every request with
//! the same 200 body (a forged or oversized answer).

use std::collections::HashSet;
use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// A running pair of test witnesses.
#[derive(Debug)]
pub struct TestWitnesses {
    /// omniwitness's submission prefix (`http://127.0.0.1:PORT`).
    pub omni_url: String,
    /// omniwitness's vkey (its cosignatures are ML-DSA-44, type 0x06).
    pub omni_vkey: String,
    /// litewitness's submission prefix (`http://127.0.0.1:PORT+2`).
    pub lite_url: String,
    /// litewitness's vkey (its cosignatures are Ed25519, type 0x04).
    pub lite_vkey: String,
    /// A C2SP tlog-policy file: the logs, both witnesses, both required.
    pub policy_path: PathBuf,
    /// The witnesses' directory (keys, databases, logs).
    pub dir: PathBuf,
}

/// Why the test witnesses could not be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("test witnesses: {0}")]
pub struct HarnessError(pub String);

static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
/// Base ports handed out in this process (each uses base..=base+2).
static PORTS: Mutex<Option<HashSet<u16>>> = Mutex::new(None);
static STARTS: AtomicU32 = AtomicU32::new(0);

impl TestWitnesses {
    /// Starts both witnesses for the logs `log_vkeys` (C2SP vkeys; the key name is the origin).
    /// `None` only under `DGSP_SKIP_WITNESSES=1`, said on stderr with `test`'s name.
    ///
    /// # Panics
    ///
    /// When the witnesses cannot be had (the test fails with the reason); see
    /// [`TestWitnesses::try_start`].
    pub fn start(test: &str, log_vkeys: &[&str]) -> Option<TestWitnesses> {
        match Self::try_start(test, log_vkeys) {
            Ok(w) => w,
            Err(e) => {
                panic!("{test}: {e}\n(DGSP_SKIP_WITNESSES=1 skips the real-witness tests, loudly)")
            }
        }
    }

    /// As [`TestWitnesses::start`], with the failure as an error.
    pub fn try_start(
        test: &str,
        log_vkeys: &[&str],
    ) -> Result<Option<TestWitnesses>, HarnessError> {
        if skipped(test) {
            return Ok(None);
        }
        INSTALLED
            .get_or_init(install)
            .clone()
            .map_err(HarnessError)?;
        let n = STARTS.fetch_add(1, Ordering::Relaxed);
        // Short: litewitness's ssh-agent socket lives under it (a Unix socket path).
        let dir = std::env::temp_dir().join(format!("dgsp-w-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| HarnessError(format!("creating {}: {e}", dir.display())))?;
        let mut last_err = String::new();
        for attempt in 0..3 {
            let port = free_base_port(attempt)
                .ok_or_else(|| HarnessError("no 3 free loopback ports in 21000..53000".into()))?;
            let out = Command::new("bash")
                .arg(script())
                .arg("start")
                .arg(&dir)
                .arg(port.to_string())
                .arg(std::process::id().to_string())
                .env("DGSP_WITNESS_LOG_VKEYS", log_vkeys.join(" "))
                .stdin(Stdio::null())
                .stderr(Stdio::inherit())
                .output()
                .map_err(|e| HarnessError(format!("running scripts/witnesses.sh start: {e}")))?;
            if out.status.success() {
                let stdout = String::from_utf8_lossy(&out.stdout);
                return match parse_start_output(&stdout, dir.clone()) {
                    Ok(w) => Ok(Some(w)),
                    Err(e) => {
                        stop(&dir);
                        Err(e)
                    }
                };
            }
            stop(&dir);
            last_err = format!(
                "scripts/witnesses.sh start {} {port} failed ({}); its output is above",
                dir.display(),
                out.status
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(HarnessError(last_err))
    }
}

impl TestWitnesses {
    /// Freezes litewitness (`SIGSTOP`): it keeps its connections and answers nothing, as a
    /// witness that stops answering does, until [`TestWitnesses::thaw_litewitness`].
    pub fn freeze_litewitness(&self) {
        self.signal_litewitness("STOP");
    }

    /// Lets a frozen litewitness answer again (`SIGCONT`), its state intact.
    pub fn thaw_litewitness(&self) {
        self.signal_litewitness("CONT");
    }

    fn signal_litewitness(&self, sig: &str) {
        let pid_file = self.dir.join("litewitness/litewitness.pid");
        let pid = std::fs::read_to_string(&pid_file)
            .unwrap_or_else(|e| panic!("{}: {e}", pid_file.display()));
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(pid.trim())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill -{sig} {} (litewitness)", pid.trim());
    }
}

impl Drop for TestWitnesses {
    fn drop(&mut self) {
        stop(&self.dir);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn skipped(test: &str) -> bool {
    if std::env::var("DGSP_SKIP_WITNESSES").as_deref() != Ok("1") {
        return false;
    }
    // Straight to stderr: the test harness captures `eprintln!` of passing tests.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: {test} against the real witnesses: DGSP_SKIP_WITNESSES=1 (omniwitness and \
         litewitness are NOT tested in this run)"
    );
    true
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/witnesses.sh")
}

fn install() -> Result<(), String> {
    // The script's own progress goes to stderr; its stdout too, so that nothing lands in a
    // test's captured output by surprise.
    let status = Command::new("bash")
        .arg(script())
        .arg("install")
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()))
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| format!("running scripts/witnesses.sh install: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "scripts/witnesses.sh install failed ({status}); its output is above (it needs \
             `go` and the Go module proxy the first time)"
        ))
    }
}

fn stop(dir: &Path) {
    let _ = Command::new("bash")
        .arg(script())
        .arg("stop")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// A base port whose 3 ports are free now and that this process never handed out.
fn free_base_port(attempt: u32) -> Option<u16> {
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
        ^ std::process::id().rotate_left(16)
        ^ attempt.wrapping_mul(0x9e37_79b9);
    let mut guard = PORTS.lock().unwrap_or_else(|e| e.into_inner());
    let taken = guard.get_or_insert_with(HashSet::new);
    for i in 0..400u32 {
        let base = 21_000 + (seed.wrapping_add(i.wrapping_mul(7919)) % 8_000) * 4;
        let base = u16::try_from(base).ok()?;
        if taken.contains(&base) {
            continue;
        }
        if (base..=base + 2).all(|p| TcpListener::bind(("127.0.0.1", p)).is_ok()) {
            taken.insert(base);
            return Some(base);
        }
    }
    None
}

fn parse_start_output(out: &str, dir: PathBuf) -> Result<TestWitnesses, HarnessError> {
    let get = |name: &str| {
        out.lines()
            .filter_map(|l| l.strip_prefix("export "))
            .filter_map(|l| l.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_owned())
            .ok_or_else(|| {
                HarnessError(format!(
                    "scripts/witnesses.sh start printed no {name}: {out:?}"
                ))
            })
    };
    Ok(TestWitnesses {
        omni_url: get("DGSP_TEST_WITNESS_OMNI_URL")?,
        omni_vkey: get("DGSP_TEST_WITNESS_OMNI_VKEY")?,
        lite_url: get("DGSP_TEST_WITNESS_LITE_URL")?,
        lite_vkey: get("DGSP_TEST_WITNESS_LITE_VKEY")?,
        policy_path: PathBuf::from(get("DGSP_TEST_WITNESS_POLICY")?),
        dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_never_handed_out_twice() {
        let a: HashSet<u16> = (0..20).filter_map(free_base_port).collect();
        assert_eq!(a.len(), 20);
    }

    #[test]
    fn start_output() {
        let out = "export DGSP_TEST_WITNESS_OMNI_URL=http://127.0.0.1:1\n\
                   export DGSP_TEST_WITNESS_OMNI_VKEY=o+01020304+Bg==\n\
                   export DGSP_TEST_WITNESS_LITE_URL=http://127.0.0.1:3\n\
                   export DGSP_TEST_WITNESS_LITE_VKEY=l+01020304+BA==\n\
                   export DGSP_TEST_WITNESS_POLICY=/tmp/x/policy\n";
        let w = parse_start_output(out, PathBuf::from("/nonexistent-dgsp-w")).unwrap();
        assert_eq!(w.lite_url, "http://127.0.0.1:3");
        assert_eq!(w.policy_path, PathBuf::from("/tmp/x/policy"));
        std::mem::forget(w); // nothing runs: no stop
        assert!(parse_start_output("", PathBuf::new()).is_err());
    }
}

/// What a [`LoopbackWitness`] answers.
#[derive(Clone)]
pub enum LoopbackAnswer {
    /// The witness's own answers ([`crate::server::Witness`], memory store), its
    /// cosignatures dated by this clock (Unix seconds; called once per cosignature).
    Honest(crate::server::UnixClock),
    /// 200 with this body to every request.
    Fixed(String),
}

/// An in-process witness on `127.0.0.1`, served until dropped.
#[derive(Debug)]
pub struct LoopbackWitness {
    /// Its submission prefix (`http://127.0.0.1:PORT`).
    pub url: String,
    /// Its verifier key (ML-DSA-44, type 0x06).
    pub vkey: String,
    task: tokio::task::JoinHandle<()>,
}

impl LoopbackWitness {
    /// A witness named `name` with the ML-DSA-44 key of `seed`, cosigning for `logs`
    /// (when honest), answering as `answer` says.
    pub async fn start(
        name: &str,
        seed: [u8; 32],
        logs: crate::server::KnownLogs,
        answer: LoopbackAnswer,
    ) -> LoopbackWitness {
        use axum::routing::post;
        let key = dgsp_wire::note::MlDsaCosigner::from_seed(name, &seed)
            .unwrap_or_else(|e| panic!("witness name {name:?}: {e}"));
        let vkey = key.vkey();
        let router = match answer {
            LoopbackAnswer::Honest(clock) => {
                let store = std::sync::Arc::new(crate::server::MemoryStore::new());
                crate::server::router(std::sync::Arc::new(crate::server::Witness::new(
                    key, logs, store, clock,
                )))
            }
            LoopbackAnswer::Fixed(body) => axum::Router::new().route(
                "/add-checkpoint",
                post(move || {
                    let body = body.clone();
                    async move { body }
                }),
            ),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        LoopbackWitness { url, vkey, task }
    }
}

impl Drop for LoopbackWitness {
    fn drop(&mut self) {
        self.task.abort();
    }
}
