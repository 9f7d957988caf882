//! Online backup and restore, with the real binary (`docs/deploy.md`, "Backups").
//!
//! A group is served and written to; `dgsp-registry backup --registry` takes one backup while
//! joins keep coming and one once the registry is quiet. Each restores into a new directory
//! that `verify` passes, whose projections a `rebuild` reproduces byte for byte (and, for the
//! quiet one, equal the original's), and that serves the same group at the manifest's head.
//! Then the refusals: a non-empty target (online, offline, restore), a locked data directory,
//! a directory that is not a backup, a manifest that does not match its log.

use crate::support;

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_registry::backup::Manifest;
use dgsp_registry::store::{ProjectionState, Store, ViewRecord};
use rand_core::{OsRng, RngCore};
use serde_json::{json, Value};

const PASSPHRASE: &str = "backup test passphrase";
const TOKEN: &str = "backup-test-admin-token";

/// `dgsp-registry ARGS` with the passphrase and token in its environment and no other
/// DGSP_ setting inherited.
fn registry<S: AsRef<OsStr>>(args: &[S]) -> Command {
    let mut c = Command::new(support::BIN);
    c.args(args)
        .env("DGSP_KEY_PASSPHRASE", PASSPHRASE)
        .env("DGSP_ADMIN_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in [
        "DGSP_DATA",
        "DGSP_KEY_FILE",
        "DGSP_REGISTRY_URL",
        "DGSP_BACKUP_DIR",
        "DGSP_ADMIN_TOKEN_FILE",
        "DGSP_KEY_PASSPHRASE_FILE",
    ] {
        c.env_remove(var);
    }
    c
}

fn run(mut c: Command) -> Output {
    c.output().unwrap()
}

/// Runs, asserts success, returns stdout.
fn ok<S: AsRef<OsStr>>(args: &[S]) -> String {
    let out = run(registry(args));
    assert!(
        out.status.success(),
        "{:?}: {}",
        args.iter().map(|a| a.as_ref()).collect::<Vec<_>>(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs, asserts failure, returns stderr.
fn refused<S: AsRef<OsStr>>(args: &[S]) -> String {
    let out = run(registry(args));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "{:?} succeeded: {}",
        args.iter().map(|a| a.as_ref()).collect::<Vec<_>>(),
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

/// `dgsp-registry restore --from FROM --data DATA`, which must fail: its stderr.
fn restore_refused(from: &Path, data: &Path) -> String {
    refused(&[
        OsStr::new("restore"),
        OsStr::new("--from"),
        p(from),
        OsStr::new("--data"),
        p(data),
    ])
}

/// `dgsp-registry backup --data DATA --to TO` (offline), which must fail: its stderr.
fn backup_refused(data: &Path, to: &Path) -> String {
    refused(&[
        OsStr::new("backup"),
        OsStr::new("--data"),
        p(data),
        OsStr::new("--to"),
        p(to),
    ])
}

fn p(path: &Path) -> &OsStr {
    path.as_os_str()
}

/// A `serve` child process, stopped with SIGTERM (killed if a test fails first).
struct Server {
    child: Option<Child>,
    url: String,
}

impl Server {
    fn start(data: &Path, rt: &tokio::runtime::Runtime) -> Server {
        let listen = format!("127.0.0.1:{}", support::free_port());
        let mut c = registry(&[
            OsStr::new("serve"),
            OsStr::new("--data"),
            p(data),
            OsStr::new("--listen"),
            OsStr::new(&listen),
            OsStr::new("--checkpoint-interval-secs"),
            OsStr::new("1"),
        ]);
        c.stdout(Stdio::null()).stderr(Stdio::inherit());
        let server = Server {
            child: Some(c.spawn().unwrap()),
            url: format!("http://{listen}"),
        };
        let (within, every) = (Duration::from_secs(60), Duration::from_millis(50));
        let client = reqwest::Client::new();
        rt.block_on(support::wait_serving(&client, &server.url, within, every));
        server
    }

    fn stop(mut self) {
        let mut child = self.child.take().unwrap();
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        assert!(
            child.wait().unwrap().success(),
            "serve exited with an error"
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

async fn post(client: &reqwest::Client, url: String, body: Value) -> Value {
    let r = client
        .post(url)
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    r.json().await.unwrap()
}

async fn get(client: &reqwest::Client, url: String) -> Value {
    let r = client.get(url).bearer_auth(TOKEN).send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    r.json().await.unwrap()
}

fn manifest(backup: &Path) -> Manifest {
    serde_json::from_slice(&std::fs::read(backup.join("backup.json")).unwrap()).unwrap()
}

fn views(data: &Path) -> (Vec<ViewRecord>, u64) {
    let store = Store::open(&data.join("db")).unwrap();
    assert_eq!(store.projections().unwrap(), ProjectionState::Current);
    (store.dump_views().unwrap(), store.head().unwrap().seq)
}

/// Restores `backup` into `data`, checks `verify` and that a rebuild reproduces the
/// restored projections byte for byte; returns them.
fn restore_and_check(backup: &Path, data: &Path) -> Vec<ViewRecord> {
    let m = manifest(backup);
    let out = ok(&[
        OsStr::new("restore"),
        OsStr::new("--from"),
        p(backup),
        OsStr::new("--data"),
        p(data),
    ]);
    assert!(out.contains(&m.fingerprint), "{out}");
    assert!(out.contains(&m.head_hash), "{out}");
    let verified = ok(&[OsStr::new("verify"), OsStr::new("--data"), p(data)]);
    assert_eq!(
        verified.lines().next().unwrap_or_default(),
        format!("log verified: {} entries, head {}", m.head_seq, m.head_hash)
    );
    assert!(
        verified.contains("snapshots and checkpoints verified"),
        "{verified}"
    );
    let (restored, head) = views(data);
    assert_eq!(head, m.head_seq);
    ok(&[OsStr::new("rebuild"), OsStr::new("--data"), p(data)]);
    let (rebuilt, _) = views(data);
    assert_eq!(
        rebuilt, restored,
        "a rebuild reproduces the restored projections"
    );
    let key = std::fs::metadata(data.join("manager.key")).unwrap();
    assert_eq!(key.permissions().mode() & 0o777, 0o600);
    restored
}

/// Waits until the registry appends nothing more by itself: its newest signed checkpoint
/// covers the head, twice, a cadence apart.
async fn quiet(client: &reqwest::Client, url: &str) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "the registry never went quiet");
        let head = get(client, format!("{url}/v1/group")).await["head_seq"]
            .as_u64()
            .unwrap();
        let r = client
            .get(format!("{url}/v1/checkpoint"))
            .send()
            .await
            .unwrap();
        let size = if r.status().is_success() {
            r.json::<Value>().await.unwrap()["size"].as_u64().unwrap()
        } else {
            0
        };
        if size == head {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            let again = get(client, format!("{url}/v1/group")).await["head_seq"]
                .as_u64()
                .unwrap();
            if again == head {
                return head;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn an_online_backup_restores_verifies_rebuilds_and_serves() {
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let orig = tmp.path().join("orig");
    ok(&[
        OsStr::new("init"),
        OsStr::new("--params"),
        OsStr::new("sha2-128f"),
        OsStr::new("--data"),
        p(&orig),
    ]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::new();
    let server = Server::start(&orig, &rt);
    let url = server.url.clone();

    // Members, certificates for two of them, one revoked.
    rt.block_on(async {
        let joined = post(
            &client,
            format!("{url}/admin/v1/members/bulk"),
            json!({"usernames": ["alice", "bob", "carol", "dave", "erin"]}),
        )
        .await;
        for m in &joined["members"].as_array().unwrap()[..2] {
            let pks: Vec<String> = (0..2)
                .map(|_| {
                    let mut pk = [0u8; 16];
                    OsRng.fill_bytes(&mut pk);
                    B64.encode(pk)
                })
                .collect();
            let issued = post(
                &client,
                format!("{url}/admin/v1/members/{}/certificates", m["id"]),
                json!({"cid_star": m["cid_star"], "wots_pks": pks}),
            )
            .await;
            assert_eq!(issued["certificates"].as_array().unwrap().len(), 2);
        }
        post(
            &client,
            format!("{url}/admin/v1/members/1/revoke"),
            json!({}),
        )
        .await;
    });

    // An online backup while joins keep coming.
    let stop = Arc::new(AtomicBool::new(false));
    let loaded = Arc::new(AtomicU64::new(0));
    let load = rt.spawn({
        let (client, url, stop, loaded) =
            (client.clone(), url.clone(), stop.clone(), loaded.clone());
        async move {
            while !stop.load(Ordering::SeqCst) {
                let n = loaded.load(Ordering::SeqCst);
                post(
                    &client,
                    format!("{url}/admin/v1/members"),
                    json!({"username": format!("load-{n}")}),
                )
                .await;
                loaded.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    while loaded.load(Ordering::SeqCst) < 3 {
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = ok(&["backup", "--registry", &url, "--name", "during-writes"]);
    let during_load = loaded.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Ordering::SeqCst);
    rt.block_on(load).unwrap();
    let backups = orig.join("backups");
    let live = backups.join("during-writes");
    assert!(out.contains(&live.display().to_string()), "{out}");
    let m = manifest(&live);
    assert_eq!(m.format, "dgsp-registry-backup-v1");
    assert_eq!(m.params, "sha2-128f");
    assert!(m.head_seq > 8, "{m:?}");
    assert!(
        out.contains(&format!("head {} {}", m.head_seq, m.head_hash)),
        "{out}"
    );
    assert_eq!(
        std::fs::read(live.join("manager.key")).unwrap(),
        std::fs::read(orig.join("manager.key")).unwrap(),
        "the key is copied as is"
    );
    let key_mode = std::fs::metadata(live.join("manager.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(key_mode & 0o777, 0o600);
    let dir_mode = std::fs::metadata(&live).unwrap().permissions().mode();
    assert_eq!(dir_mode & 0o777, 0o700);

    // Quiet: a second backup whose head is the original's final head.
    let head = rt.block_on(quiet(&client, &url));
    let out = ok(&["backup", "--registry", &url, "--name", "quiet"]);
    let quiet_backup = backups.join("quiet");
    assert!(out.contains(&quiet_backup.display().to_string()), "{out}");
    let m = manifest(&quiet_backup);
    assert_eq!(m.head_seq, head);

    // Refusals while it serves: the same name again (nothing touched), and a direct backup
    // of the locked data directory.
    let before = std::fs::read(quiet_backup.join("backup.json")).unwrap();
    let err = refused(&["backup", "--registry", &url, "--name", "quiet"]);
    assert!(err.contains("409") && err.contains("not empty"), "{err}");
    assert_eq!(
        std::fs::read(quiet_backup.join("backup.json")).unwrap(),
        before
    );
    let err = refused(&["backup", "--registry", &url, "--name", "../escape"]);
    assert!(err.contains("backup name"), "{err}");
    let err = backup_refused(&orig, &tmp.path().join("offline-while-running"));
    assert!(err.contains("locked"), "{err}");
    assert!(!tmp.path().join("offline-while-running").exists());
    let err = run({
        let mut c = registry(&["backup", "--registry", &url, "--name", "no-token"]);
        c.env_remove("DGSP_ADMIN_TOKEN")
            .env("DGSP_ADMIN_TOKEN", "wrong-token-0123456789");
        c
    });
    assert!(!err.status.success());
    assert!(String::from_utf8_lossy(&err.stderr).contains("401"));
    assert!(!backups.join("no-token").exists());
    server.stop();
    let leftovers: Vec<_> = std::fs::read_dir(&backups)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut names = leftovers.clone();
    names.sort();
    assert_eq!(
        names,
        ["during-writes", "quiet"],
        "no partial backup is left"
    );

    let (original, original_head) = views(&orig);
    assert_eq!(
        original_head, head,
        "nothing was appended after the quiet backup"
    );

    // The backup taken under load restores and verifies.
    restore_and_check(&live, &tmp.path().join("restored-live"));
    eprintln!(
        "backup under load: head {} after {during_load} concurrent joins",
        manifest(&live).head_seq
    );

    // The quiet one equals the original byte for byte, and serves the same group.
    let restored = tmp.path().join("restored");
    assert_eq!(restore_and_check(&quiet_backup, &restored), original);
    let server = Server::start(&restored, &rt);
    rt.block_on(async {
        let group = get(&client, format!("{}/v1/group", server.url)).await;
        assert_eq!(group["fingerprint"], m.fingerprint.as_str());
        assert_eq!(group["params"], "sha2-128f");
        assert_eq!(group["head_seq"].as_u64(), Some(m.head_seq));
        assert_eq!(group["head_hash"], m.head_hash.as_str());
        let revoked = get(&client, format!("{}/admin/v1/members/1", server.url)).await;
        assert_eq!(revoked["active"], false);
        let joined = post(
            &client,
            format!("{}/admin/v1/members", server.url),
            json!({"username": "after-restore"}),
        )
        .await;
        assert_eq!(
            joined["id"].as_u64(),
            Some(5 + loaded.load(Ordering::SeqCst))
        );
    });
    server.stop();

    // Registry stopped: a direct backup, into an empty directory.
    let offline = tmp.path().join("offline");
    std::fs::create_dir(&offline).unwrap();
    let out = ok(&[
        OsStr::new("backup"),
        OsStr::new("--data"),
        p(&restored),
        OsStr::new("--to"),
        p(&offline),
    ]);
    let (_, restored_head) = views(&restored);
    assert_eq!(manifest(&offline).head_seq, restored_head);
    assert!(out.contains(&offline.display().to_string()), "{out}");

    // Refusals: a non-empty target, a non-empty data directory, not a backup, a manifest
    // that does not match its log.
    let full = tmp.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("keep"), b"keep").unwrap();
    let err = backup_refused(&restored, &full);
    assert!(err.contains("not empty"), "{err}");
    let err = restore_refused(&quiet_backup, &full);
    assert!(err.contains("not empty"), "{err}");
    let names: Vec<_> = std::fs::read_dir(&full)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["keep"], "nothing was added");
    assert_eq!(std::fs::read(full.join("keep")).unwrap(), b"keep");

    let nowhere = tmp.path().join("nowhere");
    let err = restore_refused(&orig, &nowhere);
    assert!(err.contains("not a registry backup"), "{err}");
    assert!(!nowhere.exists());

    let tampered = tmp.path().join("tampered");
    assert!(Command::new("cp")
        .arg("-a")
        .arg(&quiet_backup)
        .arg(&tampered)
        .status()
        .unwrap()
        .success());
    let mut t: Value =
        serde_json::from_slice(&std::fs::read(tampered.join("backup.json")).unwrap()).unwrap();
    t["head_seq"] = json!(m.head_seq + 1);
    std::fs::write(tampered.join("backup.json"), t.to_string()).unwrap();
    let err = restore_refused(&tampered, &nowhere);
    assert!(err.contains("head seq"), "{err}");
    assert!(!nowhere.exists(), "a failed restore leaves nothing");

    t["format"] = json!("dgsp-registry-backup-v9");
    std::fs::write(tampered.join("backup.json"), t.to_string()).unwrap();
    let err = restore_refused(&tampered, &nowhere);
    assert!(err.contains("not supported"), "{err}");
    eprintln!("backup test: {:.1} s", started.elapsed().as_secs_f64());
}
