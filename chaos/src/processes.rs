//! The services under test, as real processes on loopback: one registry on the faked clock
//! and the gateways following it, each started, killed (SIGKILL or SIGTERM) and restarted
//! on the same port and data directory.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

use crate::group::Group;

/// The three binaries.
#[derive(Clone, Debug)]
pub struct Binaries {
    /// `dgsp-registry`
    pub registry: PathBuf,
    /// `dgsp-gateway`
    pub gateway: PathBuf,
    /// `dgsp-manager`
    pub manager: PathBuf,
}

impl Binaries {
    /// The binaries in `dir`, each checked to exist.
    pub fn in_dir(dir: &Path) -> Result<Self, String> {
        let get = |name: &str| {
            let p = dir.join(name);
            if p.is_file() {
                Ok(p)
            } else {
                Err(format!(
                    "{} not found: build it first (cargo build -p dgsp-registry -p dgsp-gateway -p dgsp-manager) or pass --bin-dir",
                    p.display()
                ))
            }
        };
        Ok(Binaries {
            registry: get("dgsp-registry")?,
            gateway: get("dgsp-gateway")?,
            manager: get("dgsp-manager")?,
        })
    }
}

/// A free port on 127.0.0.1 (bound and released: another process could take it in
/// between, which a start then reports).
pub fn free_addr() -> Result<SocketAddr, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))
}

/// How to stop a service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SIGKILL: no shutdown code runs (a crash, the OOM killer, a power cut for the
    /// process).
    Kill,
    /// SIGTERM: a clean shutdown (waited for up to 15 s, then SIGKILL).
    Term,
}

/// One service process, restartable with the same command line.
pub struct Service {
    /// `registry`, `gateway-1`, ...
    pub name: String,
    /// Its base URL.
    pub url: String,
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(String, String)>,
    log: PathBuf,
    child: Option<Child>,
    /// Times started.
    pub starts: u32,
}

impl Service {
    /// A service not yet started.
    pub fn new(
        name: &str,
        addr: SocketAddr,
        program: &Path,
        args: Vec<OsString>,
        env: Vec<(String, String)>,
        log: PathBuf,
    ) -> Self {
        Service {
            name: name.into(),
            url: format!("http://{addr}"),
            program: program.to_owned(),
            args,
            env,
            log,
            child: None,
            starts: 0,
        }
    }

    /// Its log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// The id of its process, while one was spawned and not stopped.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(|c| c.id())
    }

    /// Sends `signal` to its process (SIGSTOP, SIGCONT), if one runs.
    pub fn signal(&self, signal: libc::c_int) {
        if let Some(pid) = self.pid() {
            // SAFETY: kill(2) on the id of a child this process spawned and has not
            // reaped yet (so the id cannot have been reused).
            unsafe {
                libc::kill(pid as libc::pid_t, signal);
            }
        }
    }

    /// The value that follows `flag` in its command line.
    pub fn arg(&self, flag: &str) -> Option<&Path> {
        let i = self.args.iter().position(|a| a == flag)?;
        self.args.get(i + 1).map(Path::new)
    }

    /// Replaces the value that follows `flag` in its command line (the next start uses it).
    pub fn set_arg(&mut self, flag: &str, value: OsString) {
        if let Some(i) = self.args.iter().position(|a| a == flag) {
            if let Some(v) = self.args.get_mut(i + 1) {
                *v = value;
            }
        }
    }

    /// The last error line its current (or last) start logged.
    pub fn last_error(&self) -> String {
        last_error(&self.log)
    }

    /// Spawns it, its output appended to its log after a line saying which start this is.
    pub fn spawn(&mut self, why: &str) -> Result<(), String> {
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        self.starts += 1;
        let _ = writeln!(
            log,
            "==== dgsp-chaos: start {} of {} ({why}) at {} ms",
            self.starts,
            self.name,
            dgsp_wire::log::now_ms()
        );
        let err = log
            .try_clone()
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        let mut command = Command::new(&self.program);
        // SAFETY: prctl(2) is async-signal-safe; the closure only asks the kernel to kill
        // the service when the thread that spawned it (a runtime worker, alive as long as
        // the suite) dies, so a suite killed by a CI timeout leaves no service behind.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = command
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("{}: {e}", self.program.display()))?;
        self.child = Some(child);
        Ok(())
    }

    /// Whether the process is running (it may have exited on its own).
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Stops it and waits for it to exit.
    pub async fn stop(&mut self, how: Stop) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Some(pid) = child.id() {
            let sig = match how {
                Stop::Kill => libc::SIGKILL,
                Stop::Term => libc::SIGTERM,
            };
            // SAFETY: kill(2) on the id of a child this process spawned and has not
            // reaped yet (so the id cannot have been reused). SIGCONT after the signal: a
            // process the suite froze (SIGSTOP) handles SIGTERM only once it runs.
            unsafe {
                libc::kill(pid as libc::pid_t, sig);
                libc::kill(pid as libc::pid_t, libc::SIGCONT);
            }
        }
        if tokio::time::timeout(Duration::from_secs(15), child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    }

    /// Waits until `path` answers 200 (`/readyz` for ready, `/healthz` for listening), up
    /// to `timeout`; fails if the process exits first.
    pub async fn wait_for(
        &mut self,
        http: &reqwest::Client,
        path: &str,
        timeout: Duration,
    ) -> Result<Duration, String> {
        let started = Instant::now();
        let url = format!("{}{path}", self.url);
        loop {
            if (200..300).contains(&crate::http::status(http, &url).await) {
                return Ok(started.elapsed());
            }
            if !self.running() {
                return Err(format!(
                    "{} exited before {path} answered 200 ({}); see {}",
                    self.name,
                    last_error(&self.log),
                    self.log.display()
                ));
            }
            if started.elapsed() > timeout {
                return Err(format!(
                    "{}: {path} did not answer 200 within {:.0} s; see {}",
                    self.name,
                    timeout.as_secs_f64(),
                    self.log.display()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The last line of `log` that reports an error, since the suite's last start line (for a
/// start that failed, or a process that exited).
fn last_error(log: &Path) -> String {
    let text = std::fs::read(log).unwrap_or_default();
    String::from_utf8_lossy(&text)
        .lines()
        .rev()
        .take_while(|l| !l.starts_with("==== dgsp-chaos: start"))
        .find(|l| l.starts_with("error") || l.contains("ERROR") || l.contains("panicked"))
        .unwrap_or("no error line")
        .chars()
        .take(300)
        .collect()
}

/// The settings of the services.
#[derive(Clone, Debug)]
pub struct Settings {
    /// `--checkpoint-interval-secs` of the registry.
    pub cadence_secs: u64,
    /// `--poll-ms` of the gateways.
    pub poll_ms: u64,
    /// `--max-staleness-secs` of the gateways.
    pub max_staleness_secs: u64,
    /// How far ahead a note may be signed, and how far behind its last signed time the
    /// registry's clock may fall, in ms: the services' own tolerance (their default, not
    /// passed to them).
    pub clock_tolerance_ms: u64,
    /// The journal scenario's `--lease-ttl-ms` of the registries (`None`: one registry,
    /// no journal).
    pub lease_ttl_ms: Option<u64>,
}

/// Where a journaled registry keeps its journal (a bucket of the tests' SeaweedFS, reached
/// at `endpoint`: the registry's fault proxy), and its manager key.
pub struct Bucket<'a> {
    /// `--tiles-s3-endpoint`
    pub endpoint: String,
    /// `--tiles-s3-bucket`
    pub bucket: &'a str,
    /// `--tiles-s3-prefix`
    pub prefix: &'a str,
    /// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
    pub credentials: (&'a str, &'a str),
    /// `--key-file`: outside every data directory, so that a standby on an empty one has it
    pub key_file: &'a Path,
}

/// A registry of the journal scenario: `serve` on `data` (the group's own directory, or an
/// empty one: a standby), its journal and lease in `bucket` (`--lease-ttl-ms` of
/// `settings`), on the real clock.
pub fn journaled_registry(
    bins: &Binaries,
    group: &Group,
    state: &Path,
    settings: &Settings,
    name: &str,
    data: &Path,
    bucket: &Bucket<'_>,
) -> Result<Service, String> {
    let addr = free_addr()?;
    let ttl = settings.lease_ttl_ms.unwrap_or(15_000);
    let args: Vec<OsString> = vec![
        "serve".into(),
        "--data".into(),
        data.into(),
        "--listen".into(),
        addr.to_string().into(),
        "--checkpoint-interval-secs".into(),
        settings.cadence_secs.to_string().into(),
        "--key-file".into(),
        bucket.key_file.into(),
        "--tiles-s3-bucket".into(),
        bucket.bucket.into(),
        "--tiles-s3-endpoint".into(),
        bucket.endpoint.clone().into(),
        "--tiles-s3-prefix".into(),
        bucket.prefix.into(),
        "--lease-ttl-ms".into(),
        ttl.to_string().into(),
    ];
    let env = vec![
        (
            "DGSP_KEY_PASSPHRASE_FILE".into(),
            group.passphrase.display().to_string(),
        ),
        (
            "DGSP_ADMIN_TOKEN_FILE".into(),
            group.admin_token_file.display().to_string(),
        ),
        ("AWS_ACCESS_KEY_ID".into(), bucket.credentials.0.into()),
        ("AWS_SECRET_ACCESS_KEY".into(), bucket.credentials.1.into()),
    ];
    Ok(Service::new(
        name,
        addr,
        &bins.registry,
        args,
        env,
        state.join(format!("{name}.log")),
    ))
}

/// The registry's service: `serve` on the faked clock.
pub fn registry(
    bins: &Binaries,
    group: &Group,
    state: &Path,
    settings: &Settings,
    clock_env: Vec<(String, String)>,
) -> Result<Service, String> {
    let addr = free_addr()?;
    let args: Vec<OsString> = vec![
        "serve".into(),
        "--data".into(),
        group.data.clone().into(),
        "--listen".into(),
        addr.to_string().into(),
        "--checkpoint-interval-secs".into(),
        settings.cadence_secs.to_string().into(),
    ];
    let mut env = vec![
        (
            "DGSP_KEY_PASSPHRASE_FILE".into(),
            group.passphrase.display().to_string(),
        ),
        (
            "DGSP_ADMIN_TOKEN_FILE".into(),
            group.admin_token_file.display().to_string(),
        ),
    ];
    env.extend(clock_env);
    Ok(Service::new(
        "registry",
        addr,
        &bins.registry,
        args,
        env,
        state.join("registry.log"),
    ))
}

/// Gateway number `i` (from 1), following `registry_url`, on the real clock.
pub fn gateway(
    bins: &Binaries,
    group: &Group,
    state: &Path,
    settings: &Settings,
    registry_url: &str,
    i: usize,
) -> Result<Service, String> {
    let addr = free_addr()?;
    let args: Vec<OsString> = vec![
        "serve".into(),
        "--registry".into(),
        registry_url.into(),
        "--group-key".into(),
        group.public_key.clone().into(),
        "--data".into(),
        state.join(format!("gateway-{i}")).into(),
        "--listen".into(),
        addr.to_string().into(),
        "--poll-ms".into(),
        settings.poll_ms.to_string().into(),
        "--max-staleness-secs".into(),
        settings.max_staleness_secs.to_string().into(),
        // Two small processes on a small machine: the registry needs the cores.
        "--workers".into(),
        "1".into(),
        "--http-threads".into(),
        "1".into(),
    ];
    Ok(Service::new(
        &format!("gateway-{i}"),
        addr,
        &bins.gateway,
        args,
        Vec::new(),
        state.join(format!("gateway-{i}.log")),
    ))
}
