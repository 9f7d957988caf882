//! The services of end-to-end tests as an operator runs them: the `dgsp-registry` and
//! `dgsp-gateway` binaries beside `dgsp-manager` in the target directory, started on
//! loopback ports never handed out twice, waited for (`/readyz`), stopped with SIGTERM.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A sibling binary of `dgsp-manager` in the target directory.
pub fn binary(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_dgsp-manager")).with_file_name(name);
    assert!(
        path.exists(),
        "{} is missing: build the workspace first (cargo build --workspace, or run scripts/test.sh)",
        path.display()
    );
    path
}

/// A loopback port nothing listens on, never one handed out before in this process (a
/// service binds its port only once it has started, so the kernel may offer it again).
pub fn free_port() -> u16 {
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if !handed_out.contains(&port) {
            handed_out.push(port);
            return port;
        }
    }
}

/// A running service process, stopped with SIGTERM (a clean RocksDB shutdown) on drop.
pub struct Service {
    pub name: &'static str,
    pub child: Child,
    pub url: String,
}

impl Service {
    pub fn start(name: &'static str, bin: &str, args: &[String], env: &[(&str, &str)]) -> Service {
        let listen = args
            .iter()
            .position(|a| a == "--listen")
            .map(|i| args[i + 1].clone())
            .unwrap();
        let mut cmd = Command::new(binary(bin));
        cmd.args(args)
            .env_remove("DGSP_ADMIN_TOKEN")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        Service {
            name,
            child: cmd.spawn().unwrap(),
            url: format!("http://{listen}"),
        }
    }

    /// Waits until `/readyz` answers 200.
    pub async fn ready(&mut self) {
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(r) = client.get(format!("{}/readyz", self.url)).send().await {
                if r.status().is_success() {
                    return;
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("{} exited early: {status}", self.name);
            }
            assert!(
                Instant::now() < deadline,
                "{} never became ready",
                self.name
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn stop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = Command::new("kill")
                .args(["-TERM", &self.child.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(20);
            while let Ok(None) = self.child.try_wait() {
                if Instant::now() > deadline {
                    let _ = self.child.kill();
                    panic!("{} did not stop on SIGTERM", self.name);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let status = self.child.wait().unwrap();
            assert!(status.success(), "{} stopped with {status}", self.name);
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
    }
}

/// `dgsp-registry init` of a sha2-128f group in `data` (key sealed with `passphrase`), and
/// its public key written to `pub_file` (the trust anchor gateways and verifiers pin).
pub fn init_group(data: &Path, passphrase: &str, pub_file: &Path) {
    let status = Command::new(binary("dgsp-registry"))
        .args(["init", "--params", "sha2-128f", "--data"])
        .arg(data)
        .env("DGSP_KEY_PASSPHRASE", passphrase)
        .status()
        .unwrap();
    assert!(status.success());
    let out = Command::new(binary("dgsp-registry"))
        .args(["public-key", "--data"])
        .arg(data)
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::write(pub_file, &out.stdout).unwrap();
}
