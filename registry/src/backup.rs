//! Online backups of a running registry, and restores (`docs/deploy.md`, "Backups").
//!
//! A backup is a directory:
//!
//! | file | what |
//! |---|---|
//! | `db/` | a RocksDB checkpoint of the whole database (log, projections, `idem`, `meta`) |
//! | `manager.key` | the encrypted manager key, copied byte for byte (never decrypted), mode 0600 |
//! | `backup.json` | the [`Manifest`]: format, group, parameter set, log head at the checkpoint |
//!
//! **Why a checkpoint taken by the running registry.** `serve` holds RocksDB's exclusive
//! lock, so no second process may open the database for writing; a secondary instance
//! (`open_cf_as_secondary`) could read it but can neither flush nor stop the primary from
//! deleting the files it is copying, so it cannot make a checkpoint safely. The registry
//! itself can: [`Store::checkpoint`] is RocksDB's `Checkpoint`, a consistent point in time
//! taken while the writer keeps committing (every synced batch, entries and projections
//! together, is in it or not), with the table files hard-linked when the target is on the
//! same file system (seconds, whatever the size). So the backup is made by the registry
//! (`POST /admin/v1/backup`, admin token, into its backup directory, `DATA/backups` by
//! default), and `dgsp-registry backup --registry URL` asks for it; with the registry
//! stopped, `dgsp-registry backup --data DIR --to DIR` takes the lock and makes the same
//! backup directly ([`create_offline`]). The online target is a *name* under the directory
//! the operator configured, never a path chosen by the client.
//!
//! **Never half a backup.** The target must not exist or be an empty directory. Everything
//! is written into a hidden sibling (`.NAME.partial-RANDOM`), synced, and renamed into place
//! last; a crash leaves only the hidden directory. [`restore`] likewise copies into a hidden
//! directory, verifies the copy (hash chain and commitments from entry 1, the manifest's
//! head, group and key), and only then renames `db/` into place and links `manager.key`
//! beside it, last: a data directory with a key is a finished restore.
//!
//! Nothing secret is logged: the key file is copied as opaque bytes, the admin token is
//! sent in one header and appears in no message.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};

use crate::keyfile::{self, KeyFileError};
use crate::store::{self, Head, ProjectionState, Store};
use dgsp_secrets::file::{self as secret_file, SecretFileError};
use dgsp_wire::events::Event;
use dgsp_wire::log::now_ms;

/// The manifest's `format` tag.
pub const FORMAT: &str = "dgsp-registry-backup-v1";
/// The manifest's file name in a backup.
pub const MANIFEST_FILE: &str = "backup.json";
/// The checkpointed database's directory name in a backup (and in a data directory).
pub const DB_DIR: &str = "db";
/// The encrypted manager key's file name in a backup.
pub const KEY_FILE: &str = "manager.key";
/// What the manifest's `tool_version` says.
pub const TOOL_VERSION: &str = concat!("dgsp-registry ", env!("CARGO_PKG_VERSION"));
/// Longest backup name.
pub const MAX_NAME: usize = 64;
/// Largest answer read from the registry by [`request`].
const MAX_ANSWER: u64 = 1 << 20;

/// Where a running registry's online backups go, and the key file they copy.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The directory holding the backups (`--backup-dir`, default `DATA/backups`).
    pub dir: PathBuf,
    /// The encrypted manager key the registry was started with.
    pub key_file: PathBuf,
}

/// `backup.json`: what a backup holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = BackupManifest)]
pub struct Manifest {
    /// Always `dgsp-registry-backup-v1`.
    #[schema(example = "dgsp-registry-backup-v1")]
    pub format: String,
    /// SHA3-256 of the group public key (hex), as in the genesis entry.
    pub fingerprint: String,
    /// The group's parameter set.
    #[schema(example = "sha2-128f")]
    pub params: String,
    /// The log head at the checkpoint: seq of its last entry.
    pub head_seq: u64,
    /// Hash of that entry (hex).
    pub head_hash: String,
    /// When the backup was made (Unix ms).
    pub created_unix_ms: u64,
    /// The program that made it.
    #[schema(example = "dgsp-registry 0.1.0")]
    pub tool_version: String,
}

/// `POST /admin/v1/backup` answer.
#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = BackupCreated)]
pub struct Created {
    /// The backup directory, on the registry's host.
    pub path: String,
    /// Its manifest.
    pub manifest: Manifest,
}

/// What [`restore`] put in place.
#[derive(Clone, Debug)]
pub struct Restored {
    /// The new data directory.
    pub data: PathBuf,
    /// Where the encrypted manager key was placed.
    pub key_file: PathBuf,
    /// The backup's manifest (checked against the restored log).
    pub manifest: Manifest,
    /// Whether the restored projections can be served as they are (`serve` rebuilds them
    /// first otherwise).
    pub projections: ProjectionState,
}

/// Why a backup or a restore was refused or failed. Nothing is left that looks finished.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// The target exists and is not an empty directory.
    #[error("{path}: exists and is not empty; backups and restores never write over anything")]
    TargetNotEmpty {
        /// the target
        path: PathBuf,
    },
    /// The target exists and is not a directory (a file, a symbolic link).
    #[error("{path}: exists and is not a directory")]
    TargetNotDirectory {
        /// the target
        path: PathBuf,
    },
    /// The source of a restore is not a backup.
    #[error("{path}: not a registry backup: {reason}")]
    NotABackup {
        /// the directory
        path: PathBuf,
        /// what is missing or wrong
        reason: String,
    },
    /// A backup of a format this program does not read.
    #[error(
        "{path}: backup format {found:?} is not supported (this dgsp-registry reads {FORMAT:?})"
    )]
    UnsupportedFormat {
        /// the directory
        path: PathBuf,
        /// its format tag
        found: String,
    },
    /// The data directory holds no group.
    #[error("{path}: holds no group (no database, or an empty log)")]
    NoGroup {
        /// the data directory or database
        path: PathBuf,
    },
    /// The database lock is held: the registry is serving this data directory.
    #[error("{path}: the database is locked, so the registry is running on it; back it up online with --registry URL")]
    RegistryRunning {
        /// the data directory
        path: PathBuf,
    },
    /// A backup name outside the accepted alphabet or length.
    #[error("backup name {name:?}: 1 to {MAX_NAME} characters A-Z a-z 0-9 . _ -, starting with a letter or digit")]
    BadName {
        /// the name
        name: String,
    },
    /// This registry was started without backup settings.
    #[error("online backups are not enabled on this registry")]
    Disabled,
    /// The key file is not the group's.
    #[error("{key}: the manager key of group {key_fingerprint}, not of the log's group {group_fingerprint}")]
    KeyMismatch {
        /// the key file
        key: PathBuf,
        /// its public key's fingerprint
        key_fingerprint: String,
        /// the genesis entry's fingerprint
        group_fingerprint: String,
    },
    /// The restored log does not match the backup's manifest.
    #[error("{path}: the manifest says {what} {expected}, the restored log has {found}")]
    ManifestMismatch {
        /// the backup
        path: PathBuf,
        /// which field
        what: &'static str,
        /// the manifest's value
        expected: String,
        /// the log's value
        found: String,
    },
    /// A restore would replace an existing key file.
    #[error("{path}: a file already exists there; a restore never replaces a key file")]
    KeyFileExists {
        /// the key file
        path: PathBuf,
    },
    /// The key file was refused or is malformed.
    #[error(transparent)]
    Key(#[from] KeyFileError),
    /// The key file could not be read (refused as a secret file).
    #[error(transparent)]
    Secret(#[from] SecretFileError),
    /// The database failed (or its log does not verify).
    #[error("{path}: {source}")]
    Store {
        /// the database
        path: PathBuf,
        /// the cause
        #[source]
        source: store::Error,
    },
    /// File system error.
    #[error("{path}: {source}")]
    Io {
        /// the file or directory
        path: PathBuf,
        /// the cause
        #[source]
        source: std::io::Error,
    },
    /// The admin token would cross the network in clear: plain `http://` to a host that is
    /// not loopback, without `--allow-plain-http` ([`dgsp_secrets::transport`]). Nothing
    /// was sent.
    #[error(transparent)]
    PlainHttp(#[from] dgsp_secrets::transport::PlainHttpRefused),
    /// The admin token would cross the network in clear through the proxy the environment
    /// names (neither `https://` nor on a loopback host), without `--allow-plain-http`.
    /// Nothing was sent.
    #[error(transparent)]
    Proxy(#[from] dgsp_secrets::transport::ProxyRefused),
    /// The `--ca-file` holds no usable PEM certificate.
    #[error("{path}: not a PEM file of CA certificates: {reason}")]
    CaFile {
        /// the file
        path: PathBuf,
        /// what is wrong
        reason: String,
    },
    /// The registry could not be reached (a refused connection, a certificate this client
    /// does not trust), or answered something unreadable.
    #[error("{url}: {reason}")]
    Http {
        /// the registry
        url: String,
        /// what went wrong
        reason: String,
    },
    /// The registry answered with an error.
    #[error("the registry refused the backup ({status} {kind}): {detail}")]
    Refused {
        /// HTTP status
        status: u16,
        /// the problem type
        kind: String,
        /// its detail
        detail: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
    move |source| BackupError::Io {
        path: path.to_owned(),
        source,
    }
}

fn store_err(path: &Path) -> impl FnOnce(store::Error) -> BackupError + '_ {
    move |source| BackupError::Store {
        path: path.to_owned(),
        source,
    }
}

/// Checks a backup name: 1 to [`MAX_NAME`] characters `A-Z a-z 0-9 . _ -`, the first a
/// letter or digit (so never `.`, `..` or a hidden partial directory).
pub fn check_name(name: &str) -> Result<(), BackupError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(BackupError::BadName {
            name: name.to_owned(),
        })
    }
}

/// The default backup name: the UTC time, `20250131T235959Z`.
pub fn default_name(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// An online backup into the registry's backup directory: `name` (default
/// [`default_name`] of now) under [`Settings::dir`], with the key [`Settings::key_file`].
pub fn create_named(
    store: &Store,
    settings: &Settings,
    name: Option<&str>,
) -> Result<Created, BackupError> {
    let name = name.map_or_else(|| default_name(now_ms()), str::to_owned);
    check_name(&name)?;
    let target = settings.dir.join(&name);
    let manifest = create(store, &settings.key_file, &target)?;
    Ok(Created {
        path: target.display().to_string(),
        manifest,
    })
}

/// A backup of a stopped registry's data directory (it takes the database lock; refused
/// with [`BackupError::RegistryRunning`] while `serve` holds it).
pub fn create_offline(
    data: &Path,
    key_file: &Path,
    target: &Path,
) -> Result<Manifest, BackupError> {
    let db = data.join(DB_DIR);
    if !db.is_dir() {
        return Err(BackupError::NoGroup {
            path: data.to_owned(),
        });
    }
    let store = Store::open(&db).map_err(|e| match &e {
        store::Error::Db(d) if d.as_ref().contains("lock") => BackupError::RegistryRunning {
            path: data.to_owned(),
        },
        _ => BackupError::Store {
            path: db.clone(),
            source: e,
        },
    })?;
    create(&store, key_file, target)
}

/// Backs `store` up, with the encrypted key `key_file`, into `target` (which must not exist
/// or be an empty directory; its parent is created). Safe while the registry serves.
pub fn create(store: &Store, key_file: &Path, target: &Path) -> Result<Manifest, BackupError> {
    check_free(target)?;
    let parent = parent_of(target);
    dgsp_secrets::dir::create_private(parent).map_err(io(parent))?;
    let staging = parent.join(format!(
        ".{}.partial-{}",
        target.file_name().unwrap_or_default().to_string_lossy(),
        random_hex()
    ));
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&staging)
        .map_err(io(&staging))?;
    let made = fill(store, key_file, &staging).and_then(|manifest| {
        sync_dir(&staging)?;
        fs::rename(&staging, target).map_err(|e| rename_error(e, target))?;
        sync_dir(parent)?;
        Ok(manifest)
    });
    match made {
        Ok(manifest) => {
            tracing::info!(
                path = %target.display(),
                head = manifest.head_seq,
                fingerprint = %manifest.fingerprint,
                "backup created"
            );
            Ok(manifest)
        }
        Err(e) => {
            let _ = fs::remove_dir_all(&staging);
            tracing::warn!(path = %target.display(), error = %e, "backup failed");
            Err(e)
        }
    }
}

/// Writes the checkpoint, the key and the manifest into `staging`.
fn fill(store: &Store, key_file: &Path, staging: &Path) -> Result<Manifest, BackupError> {
    let db = staging.join(DB_DIR);
    store.checkpoint(&db).map_err(store_err(&db))?;
    sync_tree(&db)?;
    let key = staging.join(KEY_FILE);
    write_new(&key, &secret_file::read(key_file)?)?;
    let key_fingerprint = hex::encode(keyfile::read_public(&key)?.fingerprint());
    let (fingerprint, params, head) = {
        let checkpoint = Store::open_read_only(&db).map_err(store_err(&db))?;
        let head = checkpoint.head().map_err(store_err(&db))?;
        let (fingerprint, params) = group_of(&checkpoint, &db)?;
        (fingerprint, params, head)
    };
    if key_fingerprint != fingerprint {
        return Err(BackupError::KeyMismatch {
            key: key_file.to_owned(),
            key_fingerprint,
            group_fingerprint: fingerprint,
        });
    }
    let manifest = Manifest {
        format: FORMAT.into(),
        fingerprint,
        params,
        head_seq: head.seq,
        head_hash: hex::encode(head.hash),
        created_unix_ms: now_ms(),
        tool_version: TOOL_VERSION.into(),
    };
    let mut json = serde_json::to_vec_pretty(&manifest).expect("manifests serialize");
    json.push(b'\n');
    write_new(&staging.join(MANIFEST_FILE), &json)?;
    Ok(manifest)
}

/// The group's fingerprint and parameter set, from the genesis entry.
fn group_of(store: &Store, db: &Path) -> Result<(String, String), BackupError> {
    let genesis = store.entry(1).map_err(store_err(db))?;
    match genesis
        .map(|e| e.event())
        .transpose()
        .map_err(|e| BackupError::Store {
            path: db.to_owned(),
            source: e.into(),
        })? {
        Some(Event::GroupCreated {
            params,
            fingerprint,
            ..
        }) => Ok((fingerprint, params.name().to_owned())),
        _ => Err(BackupError::NoGroup {
            path: db.to_owned(),
        }),
    }
}

/// Reads and checks a backup's manifest (format tag; `db/` and `manager.key` present).
pub fn read_manifest(backup: &Path) -> Result<Manifest, BackupError> {
    let not = |reason: String| BackupError::NotABackup {
        path: backup.to_owned(),
        reason,
    };
    let path = backup.join(MANIFEST_FILE);
    let bytes = fs::read(&path).map_err(|e| not(format!("{MANIFEST_FILE}: {e}")))?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| not(format!("{MANIFEST_FILE}: {e}")))?;
    match value.get("format").and_then(|f| f.as_str()) {
        Some(FORMAT) => {}
        Some(other) => {
            return Err(BackupError::UnsupportedFormat {
                path: backup.to_owned(),
                found: other.to_owned(),
            })
        }
        None => return Err(not(format!("{MANIFEST_FILE} has no format tag"))),
    }
    let manifest: Manifest =
        serde_json::from_value(value).map_err(|e| not(format!("{MANIFEST_FILE}: {e}")))?;
    if !backup.join(DB_DIR).is_dir() {
        return Err(not(format!("no {DB_DIR}/ directory")));
    }
    if fs::symlink_metadata(backup.join(KEY_FILE)).is_err() {
        return Err(not(format!("no {KEY_FILE}")));
    }
    Ok(manifest)
}

/// Restores the backup `from` into the new data directory `data` (which must not exist or
/// be empty), the key at `key_file` (the caller's choice, `DATA/manager.key` by default in
/// `dgsp-registry restore`; never replaced). The copy is verified before anything is put in
/// place: the log's hash chain and commitments from entry 1, its head against the
/// manifest's, the group and the key against the manifest.
pub fn restore(from: &Path, data: &Path, key_file: &Path) -> Result<Restored, BackupError> {
    let manifest = read_manifest(from)?;
    check_free(data)?;
    let key_dest = key_file.to_owned();
    if fs::symlink_metadata(&key_dest).is_ok() {
        return Err(BackupError::KeyFileExists { path: key_dest });
    }
    let created = !data.exists();
    dgsp_secrets::dir::create_private(data).map_err(io(data))?;
    let suffix = random_hex();
    let staging = data.join(format!(".{DB_DIR}.restore-partial-{suffix}"));
    let key_dir = parent_of(&key_dest);
    let key_staging = key_dir.join(format!(
        ".{}.restore-partial-{suffix}",
        key_dest.file_name().unwrap_or_default().to_string_lossy()
    ));
    let db = data.join(DB_DIR);
    let mut moved = false;
    let result = (|| {
        copy_tree(from, &from.join(DB_DIR), &staging)?;
        write_new(&key_staging, &secret_file::read(&from.join(KEY_FILE))?)?;
        let key_fingerprint = hex::encode(keyfile::read_public(&key_staging)?.fingerprint());
        let (head, fingerprint, params, projections) = {
            let store = Store::open(&staging).map_err(store_err(&staging))?;
            let head = store.verify_chain().map_err(store_err(&staging))?;
            let (fingerprint, params) = group_of(&store, &staging)?;
            let projections = store.projections().map_err(store_err(&staging))?;
            (head, fingerprint, params, projections)
        };
        check_against(from, &manifest, &head, &fingerprint, &params)?;
        if key_fingerprint != fingerprint {
            return Err(BackupError::KeyMismatch {
                key: from.join(KEY_FILE),
                key_fingerprint,
                group_fingerprint: fingerprint,
            });
        }
        sync_tree(&staging)?;
        fs::rename(&staging, &db).map_err(|e| rename_error(e, &db))?;
        moved = true;
        sync_dir(data)?;
        // Last: a data directory with its key is a finished restore.
        fs::hard_link(&key_staging, &key_dest).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                BackupError::KeyFileExists {
                    path: key_dest.clone(),
                }
            } else {
                BackupError::Io {
                    path: key_dest.clone(),
                    source: e,
                }
            }
        })?;
        let _ = fs::remove_file(&key_staging);
        sync_dir(key_dir)?;
        Ok(projections)
    })();
    match result {
        Ok(projections) => {
            tracing::info!(
                data = %data.display(),
                head = manifest.head_seq,
                fingerprint = %manifest.fingerprint,
                "backup restored"
            );
            Ok(Restored {
                data: data.to_owned(),
                key_file: key_dest,
                manifest,
                projections,
            })
        }
        Err(e) => {
            if moved {
                let _ = fs::rename(&db, &staging);
            }
            let _ = fs::remove_dir_all(&staging);
            let _ = fs::remove_file(&key_staging);
            if created {
                let _ = fs::remove_dir(data);
            }
            Err(e)
        }
    }
}

/// The restored log's head and group against the manifest.
fn check_against(
    backup: &Path,
    manifest: &Manifest,
    head: &Head,
    fingerprint: &str,
    params: &str,
) -> Result<(), BackupError> {
    let checks: [(&'static str, String, String); 4] = [
        (
            "head seq",
            manifest.head_seq.to_string(),
            head.seq.to_string(),
        ),
        (
            "head hash",
            manifest.head_hash.clone(),
            hex::encode(head.hash),
        ),
        (
            "fingerprint",
            manifest.fingerprint.clone(),
            fingerprint.into(),
        ),
        ("params", manifest.params.clone(), params.into()),
    ];
    for (what, expected, found) in checks {
        if expected != found {
            return Err(BackupError::ManifestMismatch {
                path: backup.to_owned(),
                what,
                expected,
                found,
            });
        }
    }
    Ok(())
}

/// How [`request`] reaches the registry: `https://` with the system's roots, or only the
/// CA certificates of `ca_file`; plain `http://` to a host that is not loopback only with
/// `allow_plain_http`.
#[derive(Clone, Debug, Default)]
pub struct Reach {
    /// `--ca-file`: PEM CA certificates to trust instead of the system's roots
    pub ca_file: Option<PathBuf>,
    /// `--allow-plain-http`
    pub allow_plain_http: bool,
}

/// Asks the registry at `url` (its base URL) for an online backup named `name`, with the
/// admin token: `POST /admin/v1/backup`. The token is sent only where [`Reach`] allows
/// (checked before any connection), through a proxy from the environment only when that
/// proxy passes the same rule ([`dgsp_secrets::transport::token_proxy`]), and never after
/// a redirect.
pub async fn request(
    url: &str,
    token: &str,
    name: Option<&str>,
    reach: &Reach,
) -> Result<Created, BackupError> {
    let http = |reason: String| BackupError::Http {
        url: url.to_owned(),
        reason,
    };
    if let Some(n) = name {
        check_name(n)?;
    }
    let parsed = reqwest::Url::parse(url).map_err(|e| http(format!("not a URL: {e}")))?;
    let host = match (parsed.scheme(), parsed.host_str()) {
        ("http" | "https", Some(host)) => host.to_owned(),
        _ => {
            return Err(http(
                "expected http://HOST:PORT or https://HOST:PORT".into(),
            ))
        }
    };
    dgsp_secrets::transport::check_token_destination(
        url,
        parsed.scheme(),
        &host,
        "admin",
        reach.allow_plain_http,
    )?;
    let env_proxy = dgsp_secrets::transport::token_proxy(url, "admin", reach.allow_plain_http)?;
    let body = dgsp_wire::registry_api::BackupRequest {
        name: name.map(str::to_owned),
    };
    let mut builder = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(600))
        .redirect(reqwest::redirect::Policy::none());
    if let Some(path) = &reach.ca_file {
        let ca_error = |reason: String| BackupError::CaFile {
            path: path.clone(),
            reason,
        };
        let pem = fs::read(path).map_err(io(path))?;
        let roots =
            reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| ca_error(e.to_string()))?;
        if roots.is_empty() {
            return Err(ca_error("no certificate in it".into()));
        }
        builder = builder.tls_certs_only(roots);
    }
    if env_proxy.is_none() {
        builder = builder.no_proxy();
    }
    let client = builder.build().map_err(|e| http(causes(&e)))?;
    let answer = client
        .post(format!("{}/admin/v1/backup", url.trim_end_matches('/')))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .map_err(|e| http(causes(&e)))?;
    let status = answer.status().as_u16();
    let bytes = answer.bytes().await.map_err(|e| http(e.to_string()))?;
    if bytes.len() as u64 > MAX_ANSWER {
        return Err(http(format!("an answer of {} bytes", bytes.len())));
    }
    if status == 201 {
        return serde_json::from_slice(&bytes).map_err(|e| http(format!("answer: {e}")));
    }
    let problem: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let text = |k: &str| problem.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    Err(BackupError::Refused {
        status,
        kind: text("type").unwrap_or_default(),
        detail: text("detail")
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes).chars().take(300).collect()),
    })
}

/// An error with its causes (reqwest's own message stops before the reason: an untrusted
/// certificate, a refused connection).
fn causes(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

/// `Ok` if `path` does not exist or is an empty directory.
fn check_free(path: &Path) -> Result<(), BackupError> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(path)(e)),
        Ok(m) if !m.is_dir() => Err(BackupError::TargetNotDirectory {
            path: path.to_owned(),
        }),
        Ok(_) => match fs::read_dir(path).map_err(io(path))?.next() {
            None => Ok(()),
            Some(_) => Err(BackupError::TargetNotEmpty {
                path: path.to_owned(),
            }),
        },
    }
}

/// A finished staging directory renamed onto `target`: a target that appeared meanwhile
/// (another backup of the same name) is refused, never replaced.
fn rename_error(e: std::io::Error, target: &Path) -> BackupError {
    if matches!(e.raw_os_error(), Some(libc::ENOTEMPTY) | Some(libc::EEXIST)) {
        BackupError::TargetNotEmpty {
            path: target.to_owned(),
        }
    } else {
        io(target)(e)
    }
}

fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn random_hex() -> String {
    let mut nonce = [0u8; 8];
    OsRng.fill_bytes(&mut nonce);
    hex::encode(nonce)
}

/// Creates `path` (never over anything) holding `bytes`, mode 0600, synced.
fn write_new(path: &Path, bytes: &[u8]) -> Result<(), BackupError> {
    (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)?;
        f.set_permissions(fs::Permissions::from_mode(0o600))?;
        f.write_all(bytes)?;
        f.sync_all()
    })()
    .map_err(io(path))
}

fn sync_dir(dir: &Path) -> Result<(), BackupError> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))
}

/// Syncs every file under `dir`, then the directories.
fn sync_tree(dir: &Path) -> Result<(), BackupError> {
    for entry in fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        let meta = fs::symlink_metadata(&path).map_err(io(&path))?;
        if meta.is_dir() {
            sync_tree(&path)?;
        } else if meta.is_file() {
            fs::File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(io(&path))?;
        }
    }
    sync_dir(dir)
}

/// Copies the directory `src` of the backup `backup` to the new directory `dst` (mode
/// 0700): regular files and directories only.
fn copy_tree(backup: &Path, src: &Path, dst: &Path) -> Result<(), BackupError> {
    fs::DirBuilder::new()
        .mode(0o700)
        .create(dst)
        .map_err(io(dst))?;
    for entry in fs::read_dir(src).map_err(io(src))? {
        let entry = entry.map_err(io(src))?;
        let (from, to) = (entry.path(), dst.join(entry.file_name()));
        let meta = fs::symlink_metadata(&from).map_err(io(&from))?;
        if meta.is_dir() {
            copy_tree(backup, &from, &to)?;
        } else if meta.is_file() {
            fs::copy(&from, &to).map_err(io(&from))?;
        } else {
            return Err(BackupError::NotABackup {
                path: backup.to_owned(),
                reason: format!("{} is not a regular file", from.display()),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in [
            "20250131T235959Z",
            "a",
            "before-upgrade_2.1",
            &"x".repeat(MAX_NAME),
        ] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "a/b",
            "-x",
            "a b",
            &"x".repeat(MAX_NAME + 1),
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn default_names_are_utc_stamps() {
        assert_eq!(default_name(0), "19700101T000000Z");
        assert_eq!(default_name(951_782_400_000), "20000229T000000Z");
        assert_eq!(default_name(1_767_225_599_999), "20251231T235959Z");
    }
}
