//! `dgsp-registry`: see `dgsp-registry --help`.

use std::process::ExitCode;
use std::sync::Arc;

use base64::Engine;
use clap::Parser;
use dgsp_core::{Manager, ManagerSecretKey};
use dgsp_registry::api;
use dgsp_registry::backup;
use dgsp_registry::cli::{self, Cli, Command};
use dgsp_registry::journal;
use dgsp_registry::keyfile::{self, KdfParams};
use dgsp_registry::publisher::PublisherConfig;
use dgsp_registry::server;
use dgsp_registry::store::{ProjectionState, Store};
use dgsp_registry::witnessing;
use dgsp_wire::events::Event;
use dgsp_wire::log;

type Fallible = Result<(), String>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    server::init_logging(&cli.log_format);
    let result = match cli.command {
        Command::Init { params, data, key } => init(params, &data, &key),
        Command::Serve {
            data,
            listen,
            key,
            admin_token,
            admin_token_file,
            auditor_token,
            auditor_token_file,
            max_body_bytes,
            feed_bytes_in_flight,
            checkpoint_interval_secs,
            clock_tolerance_ms,
            backup_dir,
            tiles_dir,
            tiles_s3_bucket,
            tiles_s3_endpoint,
            tiles_s3_region,
            tiles_s3_prefix,
            journal,
            lease_ttl_ms,
            witnesses,
            tls,
            listener,
        } => token(admin_token, admin_token_file).and_then(|admin| {
            let tiles = match (tiles_dir, tiles_s3_bucket) {
                (Some(dir), _) => Some(dgsp_tilestore::StoreConfig::Local(dir)),
                (None, Some(bucket)) => {
                    let mut cfg = dgsp_tilestore::S3Config::new(bucket);
                    cfg.endpoint = tiles_s3_endpoint;
                    cfg.region = tiles_s3_region;
                    cfg.prefix = tiles_s3_prefix;
                    // Every object with the `Cache-Control` /v1/log/ serves it with.
                    cfg.cache_control = Some(dgsp_wire::tiles::cache_control);
                    Some(dgsp_tilestore::StoreConfig::S3(Box::new(cfg)))
                }
                (None, None) => None,
            };
            let auditor = auditor_token_of(auditor_token, auditor_token_file)?;
            let backups = backup::Settings {
                dir: backup_dir.unwrap_or_else(|| data.join("backups")),
                key_file: key.path(&data),
            };
            serve(
                &data,
                (listen, tls.files(), listener.limits()),
                &key,
                admin,
                auditor,
                (max_body_bytes, feed_bytes_in_flight),
                PublisherConfig {
                    checkpoint_interval: std::time::Duration::from_secs(checkpoint_interval_secs),
                    clock_tolerance: std::time::Duration::from_millis(clock_tolerance_ms),
                    ..PublisherConfig::default()
                },
                backups,
                tiles,
                Durability {
                    mode: journal,
                    lease_ttl: std::time::Duration::from_millis(lease_ttl_ms),
                },
                &witnesses,
            )
        }),
        Command::LogKey {
            data,
            key,
            generation,
        } => read_key(&data, &key).and_then(|sk| {
            let manager = Manager::new(sk);
            let log_key = witnessing::LogKey::derive(&manager, generation, log::now_ms())?;
            println!("vkey {}", log_key.vkey());
            println!();
            print!("{}", log_key.statement);
            Ok(())
        }),
        Command::Backup(args) => make_backup(args),
        Command::Restore {
            from,
            data,
            key_file,
        } => restore(&from, &data, key_file.as_deref()),
        Command::Rebuild { data } => rebuild(&data),
        Command::Openapi => {
            print!("{}", api::openapi::document());
            Ok(())
        }
        Command::Verify { data } => verify(&data),
        Command::PublicKey { data, key_file } => {
            keyfile::read_public(&cli::key_path(&data, key_file.as_deref()))
                .map_err(|e| e.to_string())
                .map(|pk| {
                    println!(
                        "{}",
                        base64::engine::general_purpose::STANDARD.encode(pk.to_bytes())
                    );
                    println!("fingerprint {}", hex::encode(pk.fingerprint()));
                })
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn open_store(data: &std::path::Path) -> Result<Store, String> {
    // Private whatever the umask: RocksDB creates its files with it.
    dgsp_secrets::dir::create_private(data).map_err(|e| format!("{}: {e}", data.display()))?;
    Store::open(&data.join("db")).map_err(|e| format!("{}: {e}", data.display()))
}

fn init(
    params: dgsp_core::ParamSet,
    data: &std::path::Path,
    key: &dgsp_registry::cli::KeyArgs,
) -> Fallible {
    let passphrase = key.passphrase().map_err(|e| e.to_string())?;
    let store = open_store(data)?;
    if store.head().map_err(|e| e.to_string())?.seq > 0 {
        return Err(format!(
            "{} already holds a group; refusing to overwrite it",
            data.display()
        ));
    }
    let key_path = key.path(data);
    tracing::info!(%params, "generating the manager key");
    let sk = ManagerSecretKey::generate(params, &mut rand_core::OsRng);
    keyfile::write(&key_path, &sk, passphrase.as_bytes(), KdfParams::default())
        .map_err(|e| e.to_string())?;
    let pk = sk.public_key();
    store
        .create_group(&pk, log::now_ms())
        .map_err(|e| e.to_string())?;
    println!(
        "group created: {params}, fingerprint {}",
        hex::encode(pk.fingerprint())
    );
    println!("manager key: {} (encrypted)", key_path.display());
    Ok(())
}

/// Reads the manager key (`--key-file`, default DATA/manager.key) with its passphrase.
fn read_key(
    data: &std::path::Path,
    key: &dgsp_registry::cli::KeyArgs,
) -> Result<ManagerSecretKey, String> {
    let passphrase = key.passphrase().map_err(|e| e.to_string())?;
    keyfile::read(&key.path(data), passphrase.as_bytes()).map_err(|e| e.to_string())
}

/// Checks `sk` is the key of the group in `store`.
fn check_group(
    data: &std::path::Path,
    sk: ManagerSecretKey,
    store: &Store,
) -> Result<Manager, String> {
    let genesis = store.entry(1).map_err(|e| e.to_string())?.ok_or_else(|| {
        format!(
            "{} holds no group: run 'dgsp-registry init' first (or, with a journal, point it at the bucket holding the group)",
            data.display()
        )
    })?;
    let expected = hex::encode(sk.public_key().fingerprint());
    match genesis.event().map_err(|e| e.to_string())? {
        Event::GroupCreated { fingerprint, .. } if fingerprint == expected => Ok(Manager::new(sk)),
        _ => Err("the manager key does not belong to the group in this data directory".into()),
    }
}

/// The admin token (required): `--admin-token` (warned about), `DGSP_ADMIN_TOKEN`, or the
/// secret file `--admin-token-file`; at least 16 characters.
fn token(direct: Option<String>, file: Option<std::path::PathBuf>) -> Result<String, String> {
    let admin = cli::Token::Admin;
    match admin.resolve(direct, file.as_deref()) {
        Ok(Some(t)) => Ok(t.as_str().to_owned()),
        Ok(None) => Err(admin.missing().to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// The auditor token (optional), from the same kinds of sources with the same rules.
fn auditor_token_of(
    direct: Option<String>,
    file: Option<std::path::PathBuf>,
) -> Result<Option<String>, String> {
    cli::Token::Auditor
        .resolve(direct, file.as_deref())
        .map(|t| t.map(|t| t.as_str().to_owned()))
        .map_err(|e| e.to_string())
}

/// `--journal` and the lease's time to live.
struct Durability {
    mode: cli::JournalMode,
    lease_ttl: std::time::Duration,
}

#[allow(clippy::too_many_arguments)]
fn serve(
    data: &std::path::Path,
    (listen, tls, limits): (
        std::net::SocketAddr,
        Option<dgsp_http::tls::TlsFiles>,
        dgsp_http::serve::Limits,
    ),
    key: &dgsp_registry::cli::KeyArgs,
    admin: String,
    auditor_token: Option<String>,
    (body_limit, feed_bytes_in_flight): (usize, usize),
    publisher: PublisherConfig,
    backups: backup::Settings,
    tiles: Option<dgsp_tilestore::StoreConfig>,
    durability: Durability,
    witness_args: &cli::WitnessArgs,
) -> Fallible {
    use cli::JournalMode;
    use dgsp_tilestore::StoreConfig;
    // First: SIGHUP, whose default action would end the process. A standby (which may
    // stand by for months) is not the one to die of a certificate rotation: the TLS files
    // are read again when it takes over, and SIGHUP reloads them from then on (`Listen`).
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let mut hangups = rt
        .block_on(async { tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) })
        .map_err(|e| format!("the SIGHUP handler: {e}"))?;
    let standing_by = rt.spawn(async move {
        while hangups.recv().await.is_some() {
            tracing::info!("SIGHUP before serving: the TLS files are read when serving starts");
        }
    });
    // A certificate or key that does not load stops the start before anything else.
    if let Some(files) = &tls {
        dgsp_http::tls::Tls::load(files.clone()).map_err(|e| format!("TLS: {e}"))?;
    }
    let journaled = match (durability.mode, &tiles) {
        (JournalMode::Off, _) | (JournalMode::Auto, None | Some(StoreConfig::Local(_))) => false,
        (JournalMode::On | JournalMode::Auto, Some(_)) => true,
        (JournalMode::On, None) => {
            return Err("--journal on: needs --tiles-dir or --tiles-s3-bucket".into())
        }
    };
    let tiles = tiles
        .map(|t| t.open().map_err(|e| format!("the tile store: {e}")))
        .transpose()?;
    let mut store = open_store(data)?;
    let state = store.projections().map_err(|e| e.to_string())?;
    if state != ProjectionState::Current {
        // Never serve projections that are not exactly the log: finish the rebuild first.
        tracing::warn!(%state, "rebuilding the projections before serving");
        run_rebuild(&mut store)?;
    }
    let store = Arc::new(store);
    // The key first: a standby's data directory is empty until the journal is read.
    let sk = read_key(data, key)?;
    let journal = match (&tiles, journaled) {
        (Some(tiles), true) => Some(take_over(
            &rt,
            tiles.clone(),
            &sk,
            &store,
            durability.lease_ttl,
        )?),
        _ => None,
    };
    // Read now, not at start: a standby may have waited through certificate rotations.
    let tls = match tls.map(dgsp_http::tls::Tls::load).transpose() {
        Ok(tls) => tls,
        Err(e) => {
            if let Some(j) = &journal {
                rt.block_on(j.lease().release());
            }
            return Err(format!("TLS: {e}"));
        }
    };
    let manager = match check_group(data, sk, &store) {
        Ok(m) => Arc::new(m),
        Err(e) => {
            // Not serving after all: let a standby have the lease at once.
            if let Some(j) = &journal {
                rt.block_on(j.lease().release());
            }
            return Err(e);
        }
    };
    if tiles.is_some() {
        dgsp_wire::tiles::check_params(manager.params()).map_err(|e| {
            format!("--tiles-dir / --tiles-s3-bucket: {e}; this group's log cannot be published as tiles (docs/format.md, \"Entries that would not fit\")")
        })?;
    }
    let mut publisher = publisher;
    let log_key = Arc::new(witnessing::LogKey::derive(
        &manager,
        witness_args.log_key_generation,
        publisher.clock.now_ms(),
    )?);
    publisher.log_key = Some(log_key.clone());
    if let Some(path) = &witness_args.witness_policy {
        let policy = std::fs::read_to_string(path)
            .map_err(|e| format!("--witness-policy {}: {e}", path.display()))?;
        let vkey = log_key.vkey();
        let w = witnessing::Witnesses::new(
            log_key,
            &policy,
            std::time::Duration::from_millis(witness_args.witness_timeout_ms),
            publisher.clock.clone(),
        )
        .map_err(|e| format!("--witness-policy {}: {e}", path.display()))?;
        tracing::info!(
            policy = %path.display(),
            log_key = %vkey,
            "checkpoints are published once the policy's quorum of witnesses cosigns them"
        );
        publisher.witnesses = Some(Arc::new(w));
    }
    let head = store.head().map_err(|e| e.to_string())?;
    rt.block_on(async move {
        // `Listen` handles SIGHUP from here on.
        standing_by.abort();
        let tcp = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| format!("{listen}: {e}"))?;
        let listener = dgsp_http::tls::Listen::new(tcp, tls)
            .map_err(|e| format!("the SIGHUP handler: {e}"))?
            .with_limits(limits);
        let scheme = listener.scheme();
        let params = manager.params();
        let config = server::Config {
            admin_token: admin,
            auditor_token,
            body_limit,
            publisher,
            feed_bytes_in_flight,
            backups: Some(backups),
            tiles,
        };
        let running = server::start_journaled(store, manager, listener, config, journal)
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!(%listen, %scheme, %params, head = head.seq, "registry serving");
        running
            .serve_until(server::shutdown_signal())
            .await
            .map_err(|e| e.to_string())
    })?;
    tracing::info!("registry stopped");
    Ok(())
}

/// With a journal: restores what the bucket holds beyond the local log, stands by (catching
/// up) until this process holds the write lease, then brings the local log and the journal
/// together (docs/event-log.md, "The journal").
fn take_over(
    rt: &tokio::runtime::Runtime,
    tiles: Arc<dyn dgsp_tilestore::TileStore>,
    sk: &ManagerSecretKey,
    store: &Arc<Store>,
    ttl: std::time::Duration,
) -> Result<Arc<journal::Journal>, String> {
    let key = Arc::new(journal::JournalKey::derive(sk));
    let fail = |e: journal::JournalError| format!("the journal in {}: {e}", tiles.describe());
    rt.block_on(async {
        let started = std::time::Instant::now();
        let first = journal::catch_up(tiles.as_ref(), &key, store, None)
            .await
            .map_err(fail)?;
        tracing::info!(
            restored = first.restored,
            journal_head = first.journal_head,
            ms = started.elapsed().as_millis() as u64,
            "read the journal"
        );
        let lease = journal::Lease::acquire(tiles.clone(), ttl, || {
            let (tiles, key, store) = (tiles.clone(), key.clone(), store.clone());
            async move {
                match journal::catch_up(tiles.as_ref(), &key, &store, None).await {
                    Ok(c) if c.restored > 0 => {
                        tracing::info!(
                            restored = c.restored,
                            head = c.journal_head,
                            "standby caught up"
                        )
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "standby: reading the journal failed"),
                }
            }
        })
        .await;
        let caught_up = match journal::catch_up(tiles.as_ref(), &key, store, Some(&lease)).await {
            Ok(done) => journal::check_head(&key, store, &lease, done.journal_head).map(|()| done),
            Err(e) => Err(e),
        };
        let done = match caught_up {
            Ok(done) => done,
            Err(e) => {
                // Not serving after all: let a standby have the lease at once.
                lease.release().await;
                return Err(fail(e));
            }
        };
        tracing::info!(
            restored = done.restored,
            uploaded = done.uploaded,
            journal_head = done.journal_head,
            ms = started.elapsed().as_millis() as u64,
            "holding the write lease; the local log and the journal agree"
        );
        Ok(Arc::new(journal::Journal::new(
            tiles.clone(),
            key.clone(),
            lease,
            rt.handle().clone(),
        )))
    })
}

fn rebuild(data: &std::path::Path) -> Fallible {
    let mut store = open_store(data)?;
    let n = run_rebuild(&mut store)?;
    println!("rebuilt the projections from {n} log entries");
    Ok(())
}

/// Runs (or resumes) a rebuild, logging progress about every 5 seconds.
fn run_rebuild(store: &mut Store) -> Result<u64, String> {
    let state = store.projections().map_err(|e| e.to_string())?;
    if let ProjectionState::RebuildInterrupted { position, head } = state {
        tracing::info!(position, head, "resuming an interrupted rebuild");
    }
    let started = std::time::Instant::now();
    let mut last = started;
    store
        .rebuild(|done, head| {
            if last.elapsed() >= std::time::Duration::from_secs(5) {
                last = std::time::Instant::now();
                tracing::info!(
                    done,
                    head,
                    secs = started.elapsed().as_secs(),
                    "rebuilding the projections"
                );
            }
        })
        .map_err(|e| e.to_string())
}

/// Checks the hash chain and, in the same pass, replays every snapshot and checkpoint
/// against the log's revocations (`dgsp_wire::coverage`): names each that breaks a rule,
/// and fails unless the newest snapshot and checkpoint hold (a repaired log passes, its old
/// findings listed).
fn verify(data: &std::path::Path) -> Fallible {
    use dgsp_wire::coverage::{Coverage, State};
    let store = open_store(data)?;
    let mut coverage = None;
    let head = store
        .verify_chain_with(|e| {
            if e.seq == 1 {
                coverage = dgsp_wire::follow::group_key(e).map(Coverage::new);
            }
            if let Some(c) = coverage.as_mut() {
                c.push(e);
            }
        })
        .map_err(|e| e.to_string())?;
    println!(
        "log verified: {} entries, head {}",
        head.seq,
        hex::encode(head.hash)
    );
    let coverage = coverage.ok_or("entry 1 does not carry the group's public key")?;
    for finding in coverage.findings() {
        println!("violation: {finding}");
    }
    match coverage.state() {
        State::Clean => {
            println!("snapshots and checkpoints verified: every checkpoint names a snapshot holding every revocation it covers");
            Ok(())
        }
        State::Repaired => {
            println!(
                "repaired: the newest snapshot and checkpoint hold every logged revocation; the {} violation(s) above are history (docs/checkpoints.md, \"Recovering a log\")",
                coverage.findings().len()
            );
            Ok(())
        }
        State::Broken => Err(format!(
            "the newest snapshot or checkpoint omits logged revocations ({} violation(s) above); `dgsp-registry serve` publishes a corrected snapshot first thing (docs/checkpoints.md, \"Recovering a log\")",
            coverage.findings().len()
        )),
    }
}

/// `--to` given: a direct backup of `--data` (registry stopped); else an online one asked
/// of `--registry`.
fn make_backup(a: cli::BackupArgs) -> Fallible {
    if let Some(to) = a.to {
        let data = a
            .data
            .ok_or("--to backs up a stopped registry's data directory: give --data DIR too")?;
        let key_file = cli::key_path(&data, a.key_file.as_deref());
        let m = backup::create_offline(&data, &key_file, &to).map_err(|e| e.to_string())?;
        print_backup(&to.display().to_string(), &m);
        return Ok(());
    }
    let Some(url) = a.registry else {
        return Err("which registry? online: --registry URL (or DGSP_REGISTRY_URL); registry stopped: --data DIR --to DIR".into());
    };
    let admin = token(a.admin_token, a.admin_token_file)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let reach = backup::Reach {
        ca_file: a.ca_file,
        allow_plain_http: a.allow_plain_http,
    };
    let created = rt
        .block_on(backup::request(&url, &admin, a.name.as_deref(), &reach))
        .map_err(|e| e.to_string())?;
    print_backup(&created.path, &created.manifest);
    Ok(())
}

fn print_backup(path: &str, m: &backup::Manifest) {
    println!("backup created: {path}");
    println!("group {} ({})", m.fingerprint, m.params);
    println!("head {} {}", m.head_seq, m.head_hash);
}

fn restore(
    from: &std::path::Path,
    data: &std::path::Path,
    key_file: Option<&std::path::Path>,
) -> Fallible {
    let key_file = cli::key_path(data, key_file);
    let r = backup::restore(from, data, &key_file).map_err(|e| e.to_string())?;
    let m = &r.manifest;
    println!("restored {} into {}", from.display(), r.data.display());
    println!("group {} ({})", m.fingerprint, m.params);
    println!(
        "log verified: {} entries, head {} (the backup's manifest head)",
        m.head_seq, m.head_hash
    );
    println!(
        "manager key: {} (encrypted, as backed up)",
        r.key_file.display()
    );
    if r.projections != ProjectionState::Current {
        println!("{}: 'serve' rebuilds them first", r.projections);
    }
    Ok(())
}
