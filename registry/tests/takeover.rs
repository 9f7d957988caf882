//! The registry survives its disk: with the journal in object storage, eleven writers in
//! turn serve under load, each replaced by a standby that started on an empty data
//! directory with only the bucket and the manager key. Ten of them are killed (`SIGKILL`,
//! counted and asserted); one is frozen (`SIGSTOP`) past its lease and then thawed.
//! Afterwards: every acknowledged write is in the log read back from the bucket, member ids
//! continue without a gap, every checkpoint seen before a kill is extended by the next one
//! (RFC 6962 consistency proofs), and at no time did two registries write: every 100 ms
//! while a writer lives, its standby does not listen and the lease object names the
//! writer's pid (not released); the thawed writer refuses the write it is sent instead of
//! forking the log, and the lease names its successor until it exits.
//!
//! With S3, every object the registries wrote carries the `Cache-Control` that `/v1/log/`
//! serves it with (`dgsp_wire::tiles::cache_control`), read back over plain signed HTTP.
//!
//! Runs against the tests' S3 server (SeaweedFS, `scripts/s3.sh`); under `DGSP_SKIP_S3=1`
//! it runs against a local directory instead, and says so.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dgsp_registry::journal;
use dgsp_registry::store::Store;
use dgsp_tilestore::TileStore;
use dgsp_wire::merkle;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde_json::json;
use support::load::{client_loop, post_ok, Acked};

const TOKEN: &str = "takeover-test-admin-token";
const PASSPHRASE: &str = "takeover test passphrase";
/// Short enough for eleven takeovers in a minute, long enough that a loaded 2-core machine
/// (SeaweedFS, two registries and the clients on it) renews in time: at 1 s, a renewal
/// delayed past 0.8 s under other builds halted a writer that was meant to live.
const TTL_MS: u64 = 3000;
/// Writers replaced: all SIGKILLed but the frozen one.
const ROUNDS: u64 = 11;
/// The round whose writer is frozen instead of killed.
const FROZEN_ROUND: u64 = 4;
/// The issue asks for the takeover under load, with SIGKILL, at least ten times.
const MIN_KILLS: u64 = 10;
/// How often the "never two writers" checks run while a writer lives.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// Where the journal lives: the command-line arguments and environment that name it, and
/// a handle on it for the checks.
struct Bucket {
    args: Vec<String>,
    env: Vec<(String, String)>,
    tiles: Arc<dyn TileStore>,
    what: String,
    /// The S3 server and the prefix, for reading objects over plain HTTP.
    s3: Option<(dgsp_tilestore::test_server::S3Env, String)>,
}

fn bucket(dir: &Path) -> Bucket {
    match dgsp_tilestore::test_server::s3_env("registry takeover") {
        Some(s3) => {
            let cfg = s3.config("takeover");
            let (id, secret) = s3.credentials();
            let args = vec![
                "--tiles-s3-bucket".into(),
                s3.bucket().into(),
                "--tiles-s3-endpoint".into(),
                s3.endpoint().into(),
                "--tiles-s3-prefix".into(),
                cfg.prefix.clone(),
            ];
            let what = format!("S3 at {} (prefix {})", s3.endpoint(), cfg.prefix);
            Bucket {
                args,
                env: vec![
                    ("AWS_ACCESS_KEY_ID".into(), id.into()),
                    ("AWS_SECRET_ACCESS_KEY".into(), secret.into()),
                ],
                s3: Some((s3.clone(), cfg.prefix.clone())),
                tiles: Arc::new(dgsp_tilestore::S3::open(cfg).unwrap()),
                what,
            }
        }
        None => {
            let store = dir.join("bucket");
            eprintln!(
                "takeover test: DGSP_SKIP_S3=1, running against a LOCAL DIRECTORY ({}); the S3 backend is NOT tested in this run",
                store.display()
            );
            Bucket {
                args: vec![
                    "--tiles-dir".into(),
                    store.display().to_string(),
                    "--journal".into(),
                    "on".into(),
                ],
                env: Vec::new(),
                tiles: Arc::new(dgsp_tilestore::LocalDir::open(&store).unwrap()),
                what: format!("a local directory {}", store.display()),
                s3: None,
            }
        }
    }
}

/// A `serve` process on an empty (or given) data directory, writing its log to `log`.
fn start(b: &Bucket, data: &Path, key: &Path, port: u16, log: &Path) -> Child {
    start_with(b, data, key, port, log, &[])
}

/// [`start`], with `extra` arguments.
fn start_with(
    b: &Bucket,
    data: &Path,
    key: &Path,
    port: u16,
    log: &Path,
    extra: &[String],
) -> Child {
    let out = std::fs::File::create(log).unwrap();
    let mut c = Command::new(support::BIN);
    c.args(["serve", "--data"])
        .arg(data)
        .arg("--key-file")
        .arg(key)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--lease-ttl-ms", &TTL_MS.to_string()])
        .args(["--checkpoint-interval-secs", "1"])
        .args(&b.args)
        .args(extra)
        .env("DGSP_KEY_PASSPHRASE", PASSPHRASE)
        .env("DGSP_ADMIN_TOKEN", TOKEN)
        .env("RUST_LOG", "info")
        .stdout(out.try_clone().unwrap())
        .stderr(out);
    for (k, v) in &b.env {
        c.env(k, v);
    }
    c.spawn().unwrap()
}

/// Whether anything accepts connections on `port`.
fn listening(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_millis(200),
    )
    .is_ok()
}

/// The registry's newest checkpoint: (size, root).
async fn checkpoint(
    client: &reqwest::Client,
    base: &str,
    group: &dgsp_core::ManagerPublicKey,
) -> Option<(u64, [u8; 32])> {
    let r = client
        .get(format!("{base}/v1/log/checkpoint"))
        .send()
        .await
        .ok()?;
    if !r.status().is_success() {
        return None;
    }
    let note = r.text().await.ok()?;
    let cp = group.verify_checkpoint(&note).unwrap();
    Some((cp.size, cp.root))
}

/// The lease object as the bucket holds it now: (holder's pid, released); `None` when it
/// cannot be read (absent, or the store did not answer this time).
async fn lease_holder(tiles: &dyn TileStore) -> Option<(u32, bool)> {
    let obj = tiles.get(journal::lease::LEASE_KEY).await.ok()??;
    let r: journal::lease::Record = serde_json::from_slice(&obj.bytes).ok()?;
    Some((r.pid, r.released))
}

/// What [`never_two_writers`] saw in one round.
#[derive(Debug, Default)]
struct Watched {
    samples: u64,
    /// samples in which the lease object was read
    lease_read: u64,
    violations: Vec<String>,
}

/// Every [`SAMPLE_EVERY`] until `stop`: the standby on `standby_port` does not listen, and
/// the lease object names the writer (`writer_pid`) and is not released.
async fn never_two_writers(
    tiles: Arc<dyn TileStore>,
    writer_pid: u32,
    standby_port: u16,
    stop: Arc<AtomicBool>,
) -> Watched {
    let mut w = Watched::default();
    let standby = std::net::SocketAddr::from(([127, 0, 0, 1], standby_port));
    while !stop.load(Ordering::SeqCst) {
        let t = Instant::now();
        w.samples += 1;
        let connect = tokio::net::TcpStream::connect(standby);
        if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_millis(200), connect).await {
            w.violations
                .push(format!("sample {}: the standby listens", w.samples));
        }
        match lease_holder(tiles.as_ref()).await {
            Some((pid, false)) if pid == writer_pid => w.lease_read += 1,
            Some((pid, released)) => {
                w.lease_read += 1;
                w.violations.push(format!(
                    "sample {}: the lease names pid {pid} (released: {released}), not the writer's {writer_pid}",
                    w.samples
                ));
            }
            None => {}
        }
        tokio::time::sleep(SAMPLE_EVERY.saturating_sub(t.elapsed())).await;
    }
    w
}

struct Registry {
    child: Child,
    port: u16,
    log: PathBuf,
}

/// A failing assertion must not leave registries running: killed when dropped.
impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until `r` answers `/readyz` with 200; on timeout, fails with its log.
async fn serving(client: &reqwest::Client, r: &Registry) {
    let base = format!("http://127.0.0.1:{}", r.port);
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(resp) = client.get(format!("{base}/readyz")).send().await {
            if resp.status().is_success() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "the registry on port {} never became ready\n{}",
        r.port,
        log_tail(&r.log)
    );
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_takes_over_after_sigkill_losing_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let b = bucket(dir.path());
    eprintln!("takeover test: the journal is in {}", b.what);
    // The group and its key; every registry gets the key file and an empty data directory,
    // except the first, which holds the group `init` created (uploaded at its start).
    let first_data = dir.path().join("r0");
    support::init(&first_data, PASSPHRASE);
    let key = dir.path().join("manager.key");
    std::fs::copy(first_data.join("manager.key"), &key).unwrap();
    let manager = support::manager_key(&first_data, PASSPHRASE);
    let group = manager.public_key().clone();

    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let acked = Arc::new(Mutex::new(Acked::default()));
    let mut rng = ChaCha20Rng::seed_from_u64(20_261_126);
    let spawn = |n: u64, data: PathBuf| {
        let port = support::free_port();
        let log = dir.path().join(format!("r{n}.log"));
        Registry {
            child: start(&b, &data, &key, port, &log),
            port,
            log,
        }
    };
    let mut writer = spawn(0, first_data);
    // Each standby starts once the writer serves: one started while the lease is free (at
    // the start, or racing the standby meant to take over) could take it first, which is
    // correct but not the takeover this test times.
    let mut standby: Option<Registry> = None;
    let mut checkpoints: Vec<(u64, [u8; 32])> = Vec::new();
    let mut takeovers = Vec::new();
    let (mut kills, mut frozen, mut samples) = (0u64, 0u64, 0u64);
    for round in 0..ROUNDS {
        let base = format!("http://127.0.0.1:{}", writer.port);
        let since = Instant::now();
        serving(&client, &writer).await;
        if round > 0 {
            takeovers.push(since.elapsed());
        }
        let next = standby.insert(spawn(round + 1, dir.path().join(format!("r{}", round + 1))));
        // Never two writers, sampled all the time this writer lives.
        let stop = Arc::new(AtomicBool::new(false));
        let watch = tokio::spawn(never_two_writers(
            b.tiles.clone(),
            writer.child.id(),
            next.port,
            stop.clone(),
        ));
        // Load, while the standby stands by without listening.
        let workers: Vec<_> = (0..4)
            .map(|w| {
                tokio::spawn(client_loop(
                    client.clone(),
                    base.clone(),
                    TOKEN,
                    format!("w{w}-r{round}"),
                    20_261_126 + w * 1000 + round,
                    acked.clone(),
                ))
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(300 + u64::from(rng.next_u32() % 700))).await;
        assert!(
            !listening(next.port),
            "round {round}: the standby listens while the writer lives\n{}",
            log_tail(&next.log)
        );
        if let Some(cp) = checkpoint(&client, &base, &group).await {
            checkpoints.push(cp);
        }
        stop.store(true, Ordering::SeqCst);
        let watched = watch.await.unwrap();
        assert!(
            watched.violations.is_empty() && watched.lease_read > 0,
            "round {round}: two writers, or the lease never read: {watched:?}\nstandby:\n{}",
            log_tail(&next.log)
        );
        samples += watched.samples;
        if round == FROZEN_ROUND {
            // Frozen, not dead: the standby takes over; thawed, the old writer must not
            // write (its lease expired; its segment names are taken).
            let pid = writer.child.id() as i32;
            unsafe_free_kill(pid, "STOP");
            serving(&client, next).await;
            unsafe_free_kill(pid, "CONT");
            let url = format!("{base}/admin/v1/members");
            let late = post_ok(
                &client,
                TOKEN,
                url,
                Some(&json!({"username": "late-writer"})),
            )
            .await;
            assert!(
                late.is_none(),
                "a writer that lost its lease acknowledged a write: {late:?}\n{}",
                log_tail(&writer.log)
            );
            let said = std::fs::read_to_string(&writer.log).unwrap_or_default();
            assert!(
                said.contains("registry halted") && said.contains("lease"),
                "the thawed writer did not halt on its lease\n{}",
                log_tail(&writer.log)
            );
            // ...and exits, for whatever restarts it to start a standby; until it does, the
            // lease names its successor at every sample.
            let successor = next.child.id();
            let deadline = Instant::now() + Duration::from_secs(10);
            let status = loop {
                if let Some(status) = writer.child.try_wait().unwrap() {
                    break status;
                }
                samples += 1;
                if let Some((pid, released)) = lease_holder(b.tiles.as_ref()).await {
                    assert!(
                        pid == successor && !released,
                        "the thawed writer's lease: pid {pid} (released: {released}), not its successor's {successor}"
                    );
                }
                assert!(Instant::now() < deadline, "the halted writer did not exit");
                tokio::time::sleep(SAMPLE_EVERY).await;
            };
            assert!(!status.success(), "a halted writer exits with an error");
            frozen += 1;
        } else {
            writer.child.kill().unwrap(); // SIGKILL
            kills += 1;
        }
        writer.child.wait().unwrap();
        for w in workers {
            w.await.unwrap();
        }
        writer = standby_taken(&mut standby);
    }
    assert!(
        kills >= MIN_KILLS,
        "{kills} writers SIGKILLed, fewer than {MIN_KILLS}"
    );
    assert_eq!(frozen, 1, "one writer frozen and thawed");
    // The last writer serves; one more checkpoint after the last takeover.
    let base = format!("http://127.0.0.1:{}", writer.port);
    serving(&client, &writer).await;
    let last = checkpoints.last().copied().unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match checkpoint(&client, &base, &group).await {
            Some(cp) if cp.0 > last.0 => {
                checkpoints.push(cp);
                break;
            }
            _ if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            other => panic!("no checkpoint after the last takeover: {other:?}"),
        }
    }
    // The new writer's mirror continued from the bucket's checkpoint, not from tile 0.
    let said = std::fs::read_to_string(&writer.log).unwrap_or_default();
    assert!(
        said.contains("already holds this log's tiles"),
        "the mirror of the writer that took over did not continue from the bucket's checkpoint\n{}",
        log_tail(&writer.log)
    );
    // A clean stop releases the lease.
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(writer.child.id().to_string())
        .status();
    writer.child.wait().unwrap();

    // Every object the registries wrote carries the `Cache-Control` /v1/log/ serves it with.
    let cache_checked = match &b.s3 {
        Some((s3, prefix)) => cache_headers(b.tiles.as_ref(), s3, prefix).await,
        None => "not checked (no S3)".to_owned(),
    };
    // The log, as the bucket holds it, read into a fresh database.
    let restored = tempfile::tempdir().unwrap();
    let store = Store::open(restored.path()).unwrap();
    let key = journal::JournalKey::derive(manager.secret_key());
    let read = journal::catch_up(b.tiles.as_ref(), &key, &store, None)
        .await
        .unwrap();
    let head = store.verify_chain().unwrap();
    assert_eq!(read.journal_head, head.seq);
    let acked = acked.lock().unwrap();
    assert!(
        acked.joined.len() > 100,
        "real load ({} joins)",
        acked.joined.len()
    );
    for (name, id) in &acked.joined {
        assert_eq!(
            store.id_of(name).unwrap(),
            Some(*id),
            "acknowledged join of {name} lost"
        );
    }
    for (id, end) in &acked.issued {
        let m = store.member(*id).unwrap().unwrap();
        assert!(
            m.counter >= *end,
            "acknowledged issuance for member {id} lost"
        );
    }
    for id in &acked.revoked {
        let m = store.member(*id).unwrap().unwrap();
        assert!(!m.active, "acknowledged revocation of member {id} lost");
    }
    // Ids continue: every id from 0 to the count is a member, none twice.
    let members = store.count("members").unwrap();
    for id in 0..members {
        assert!(
            store.member(id).unwrap().is_some(),
            "member id {id} missing: ids jumped"
        );
    }
    assert_eq!(
        store.id_of("late-writer").unwrap(),
        None,
        "the thawed writer forked the log"
    );
    // Every checkpoint is a prefix of the log the bucket holds, each extends the one before.
    let mut prev: Option<(u64, [u8; 32])> = None;
    for &(size, root) in &checkpoints {
        assert_eq!(
            store.tree_root(size).unwrap(),
            root,
            "checkpoint at {size}: other root"
        );
        if let Some((old, old_root)) = prev {
            let proof = store.consistency_proof(old, size).unwrap();
            merkle::verify_consistency(old, size, &old_root, &root, &proof)
                .unwrap_or_else(|e| panic!("checkpoint {size} does not extend {old}: {e}"));
        }
        prev = Some((size, root));
    }
    takeovers.sort();
    eprintln!(
        "takeover test ({}): {kills} writers killed (SIGKILL), {frozen} frozen past its lease and thawed ({ROUNDS} takeovers); never two writers in {samples} samples; {} joins, {} issuances, {} revocations acknowledged, all in the bucket's log of {} entries; {} checkpoints consistent; Cache-Control {cache_checked}; takeover (kill or freeze to serving, lease ttl {TTL_MS} ms) median {:?}, max {:?}",
        b.what,
        acked.joined.len(),
        acked.issued.len(),
        acked.revoked.len(),
        head.seq,
        checkpoints.len(),
        takeovers[takeovers.len() / 2],
        takeovers.last().unwrap(),
    );
}

/// Reads the checkpoint, the first hash tile, entry bundle and snapshot bundle, the lease
/// and the first journal segment over plain signed HTTP: each carries
/// `dgsp_wire::tiles::cache_control` of its key. Says what it checked.
async fn cache_headers(
    tiles: &dyn TileStore,
    s3: &dgsp_tilestore::test_server::S3Env,
    prefix: &str,
) -> String {
    let mut keys = vec![
        "checkpoint".to_owned(),
        journal::lease::LEASE_KEY.to_owned(),
    ];
    for dir in ["tile/0/", "tile/entries/", "snapshot/", journal::PREFIX] {
        let first = tiles.list(dir).await.unwrap().into_iter().next();
        keys.push(first.unwrap_or_else(|| panic!("no object under {dir}")));
    }
    for key in &keys {
        let got = s3.get_header(&format!("{prefix}/{key}"), "cache-control");
        assert_eq!(
            got.as_deref(),
            Some(dgsp_wire::tiles::cache_control(key)),
            "Cache-Control of {key}"
        );
    }
    format!("as /v1/log/ on {}", keys.join(", "))
}

/// The standby of this round, now the writer.
fn standby_taken(standby: &mut Option<Registry>) -> Registry {
    standby.take().expect("every round starts a standby")
}

/// `kill -SIG pid` through the `kill` program (no `unsafe` in tests).
fn unsafe_free_kill(pid: i32, sig: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{sig} {pid}");
}

/// A standby sent SIGHUP while it stands by (a certificate rotation reaching every
/// registry) keeps standing by, and takes over when the writer dies, serving the TLS
/// certificate its files hold then, not the one they held when it started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_survives_sighup_and_takes_over_with_the_rotated_certificate() {
    use dgsp_http::tls::test_certs::{write_files, TestCa, Validity};
    let dir = tempfile::tempdir().unwrap();
    let b = bucket(dir.path());
    let first_data = dir.path().join("r0");
    support::init(&first_data, PASSPHRASE);
    let key = dir.path().join("manager.key");
    std::fs::copy(first_data.join("manager.key"), &key).unwrap();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let port = support::free_port();
    let log = dir.path().join("r0.log");
    let mut writer = Registry {
        child: start(&b, &first_data, &key, port, &log),
        port,
        log,
    };
    serving(&client, &writer).await;
    // The standby serves HTTPS once it takes over; its files are rotated while it waits.
    let (old_ca, new_ca) = (TestCa::new("ca at start"), TestCa::new("ca after rotation"));
    let files = old_ca.write_server(dir.path(), "standby", Validity::Now);
    let tls = [
        "--tls-cert".to_owned(),
        files.cert.display().to_string(),
        "--tls-key".to_owned(),
        files.key.display().to_string(),
    ];
    let port = support::free_port();
    let log = dir.path().join("r1.log");
    let mut standby = Registry {
        child: start_with(&b, &dir.path().join("r1"), &key, port, &log, &tls),
        port,
        log,
    };
    // Standing by: it has read the journal and watches the lease.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&standby.log)
        .unwrap_or_default()
        .contains("standing by")
    {
        assert!(
            Instant::now() < deadline,
            "the standby never stood by\n{}",
            log_tail(&standby.log)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (cert, tls_key) = new_ca.server(Validity::Now);
    write_files(&files, &cert, &tls_key);
    for _ in 0..3 {
        unsafe_free_kill(standby.child.id() as i32, "HUP");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        standby.child.try_wait().unwrap().is_none(),
        "SIGHUP ended a standby\n{}",
        log_tail(&standby.log)
    );
    assert!(
        !listening(standby.port),
        "the standby listens while the writer lives"
    );
    unsafe_free_kill(writer.child.id() as i32, "KILL");
    let _ = writer.child.wait();
    let trusting = |ca: &TestCa| {
        reqwest::Client::builder()
            .tls_certs_only(reqwest::Certificate::from_pem_bundle(ca.pem().as_bytes()).unwrap())
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap()
    };
    let url = format!("https://127.0.0.1:{}/readyz", standby.port);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match trusting(&new_ca).get(&url).send().await {
            Ok(r) if r.status().is_success() => break,
            other => assert!(
                Instant::now() < deadline,
                "the standby never served HTTPS with the rotated certificate: {other:?}\n{}",
                log_tail(&standby.log)
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        trusting(&old_ca).get(&url).send().await.is_err(),
        "the new writer served the certificate its files held at start"
    );
}
