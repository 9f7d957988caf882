//! Command-line interface of `dgsp-registry` (clap). Secrets come from the environment or
//! from files read through [`secret_file`]; a token given on the command line is accepted
//! with a warning.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};
use zeroize::Zeroizing;

use dgsp_core::ParamSet;

use dgsp_secrets::file::{self as secret_file, SecretFileError};

/// The DGSP group manager's registry: an event-sourced log of joins, certificates,
/// revocations and openings, served over HTTP.
#[derive(Debug, Parser)]
#[command(name = "dgsp-registry", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Log format.
    #[arg(long, global = true, env = "DGSP_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
}

/// Subcommands.
// Parsed once per process: the size of `Serve`, the largest variant, costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a new group: manager keys (encrypted at rest) and the genesis log entry.
    Init {
        /// Parameter set: a FIPS 205 SLH-DSA set (slh-dsa-sha2-128f, slh-dsa-shake-256s, ...;
        /// the standard) or a SPHINCS+ round 3.1 set (sha2-128f, shake-256s, ...). `f` sets
        /// sign fast with large signatures, `s` sets small and slow. See docs/parameter-sets.md.
        #[arg(long, env = "DGSP_PARAMS", value_parser = parse_params, default_value = DEFAULT_PARAMS)]
        params: ParamSet,
        /// Data directory (created if missing; must not hold a group yet).
        #[arg(long, env = "DGSP_DATA")]
        data: PathBuf,
        /// Manager key location and passphrase.
        #[command(flatten)]
        key: KeyArgs,
    },
    /// Serve the admin and public APIs.
    Serve {
        /// Data directory of an initialised group.
        #[arg(long, env = "DGSP_DATA")]
        data: PathBuf,
        /// Address to listen on.
        #[arg(long, env = "DGSP_LISTEN", default_value = "127.0.0.1:7300")]
        listen: SocketAddr,
        /// Manager key location and passphrase.
        #[command(flatten)]
        key: KeyArgs,
        /// Admin API bearer token (at least 16 characters). Prefer the environment variable
        /// DGSP_ADMIN_TOKEN or --admin-token-file: a token given here is visible to other
        /// users in the process list and kept in shell history (a warning is logged).
        #[arg(long, value_name = "TOKEN")]
        admin_token: Option<String>,
        /// File holding the admin token (used when neither --admin-token nor
        /// DGSP_ADMIN_TOKEN is set). A regular file, not a symbolic link, that other users
        /// cannot access (chmod 600).
        #[arg(long, env = "DGSP_ADMIN_TOKEN_FILE", value_name = "FILE")]
        admin_token_file: Option<PathBuf>,
        /// Auditor token (at least 16 characters): reveals private log payloads in the feed.
        /// Prefer DGSP_AUDITOR_TOKEN or --auditor-token-file (see --admin-token).
        #[arg(long, value_name = "TOKEN")]
        auditor_token: Option<String>,
        /// File holding the auditor token (used when neither --auditor-token nor
        /// DGSP_AUDITOR_TOKEN is set); same rules as --admin-token-file.
        #[arg(long, env = "DGSP_AUDITOR_TOKEN_FILE", value_name = "FILE")]
        auditor_token_file: Option<PathBuf>,
        /// Largest accepted body of a bulk join (POST /admin/v1/members/bulk), in bytes; every
        /// other route has a limit sized to what it carries (docs/deploy.md, "Limits").
        #[arg(long, env = "DGSP_MAX_BODY_BYTES", default_value_t = dgsp_http::router::DEFAULT_BODY_LIMIT)]
        max_body_bytes: usize,
        /// Most bytes of log feed pages in flight across all requests (built, or being sent
        /// to clients): beyond it pages get smaller, then requests get 503 with Retry-After.
        /// At least 48 MiB, so that an entry at the certificate cap (~37 MB) can be served.
        #[arg(long, env = "DGSP_FEED_BYTES_IN_FLIGHT", default_value_t = crate::feed::DEFAULT_BYTES_IN_FLIGHT,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(crate::feed::MIN_BYTES_IN_FLIGHT as u64..=1 << 40))]
        feed_bytes_in_flight: usize,
        /// Longest time between two signed checkpoints, even when nothing is written: the
        /// freshness verifiers can demand (docs/checkpoints.md). 1 to 3600.
        #[arg(long, env = "DGSP_CHECKPOINT_INTERVAL_SECS", default_value_t = 15,
              value_parser = clap::value_parser!(u64).range(1..=3600))]
        checkpoint_interval_secs: u64,
        /// How far the clock may read behind the last signed time before the registry
        /// halts instead of signing (a clock stepped back, or one that ran ahead and was
        /// corrected): milliseconds, 0 to 600000 (docs/checkpoints.md, "What the registry guarantees").
        #[arg(long, env = "DGSP_CLOCK_TOLERANCE_MS", default_value_t = dgsp_core::checkpoint::DEFAULT_CLOCK_TOLERANCE_MS,
              value_parser = clap::value_parser!(u64).range(0..=600_000))]
        clock_tolerance_ms: u64,
        /// Where online backups (`dgsp-registry backup --registry`, `POST /admin/v1/backup`)
        /// are written, one directory per backup (default DATA/backups). On the data
        /// directory's file system, a backup hard-links the database files and takes seconds.
        #[arg(long, env = "DGSP_BACKUP_DIR", value_name = "DIR")]
        backup_dir: Option<PathBuf>,
        /// Also publish the log's tiles (C2SP tlog-tiles: `checkpoint`, `tile/...`) into this
        /// directory after each checkpoint, for any static server or CDN to serve
        /// (docs/format.md, "Tiles"). The registry serves the same layout at /v1/log/.
        #[arg(
            long,
            env = "DGSP_TILES_DIR",
            value_name = "DIR",
            conflicts_with = "tiles_s3_bucket"
        )]
        tiles_dir: Option<PathBuf>,
        /// Also publish the log's tiles into this S3-compatible bucket (credentials from
        /// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; docs/tilestore.md).
        #[arg(long, env = "DGSP_TILES_S3_BUCKET", value_name = "BUCKET")]
        tiles_s3_bucket: Option<String>,
        /// The S3 endpoint (default: AWS); path-style requests.
        #[arg(
            long,
            env = "DGSP_TILES_S3_ENDPOINT",
            value_name = "URL",
            requires = "tiles_s3_bucket"
        )]
        tiles_s3_endpoint: Option<String>,
        /// The S3 region.
        #[arg(
            long,
            env = "DGSP_TILES_S3_REGION",
            default_value = "us-east-1",
            value_name = "REGION"
        )]
        tiles_s3_region: String,
        /// A key prefix inside the bucket (e.g. `logs/group-a`).
        #[arg(
            long,
            env = "DGSP_TILES_S3_PREFIX",
            default_value = "",
            value_name = "PREFIX"
        )]
        tiles_s3_prefix: String,
        /// Keep the log durable in the tile store (docs/event-log.md, "The journal"): every
        /// write is acknowledged only once the store holds it, as an encrypted segment under
        /// `private/`; one registry at a time writes, holding a lease there, and a registry
        /// started on an empty data directory with the manager key restores the log from the
        /// store and stands by until the lease is free. `auto`: on with --tiles-s3-bucket,
        /// off with --tiles-dir.
        #[arg(long, env = "DGSP_JOURNAL", value_enum, default_value = "auto")]
        journal: JournalMode,
        /// The write lease's time to live: a standby takes over about 1.2 times this after
        /// the writer stops renewing it; a writer that cannot renew it for 0.8 times this
        /// stops writing.
        #[arg(
            long,
            env = "DGSP_LEASE_TTL_MS",
            default_value_t = 15_000,
            value_name = "MS",
            value_parser = clap::value_parser!(u64).range(200..=600_000)
        )]
        lease_ttl_ms: u64,
        /// Witnesses (docs/witnesses.md).
        #[command(flatten)]
        witnesses: WitnessArgs,
        /// HTTPS (docs/deploy.md, "TLS").
        #[command(flatten)]
        tls: TlsArgs,
        /// What a client may hold of the listener (docs/deploy.md, "Connections").
        #[command(flatten)]
        listener: ListenerArgs,
    },
    /// Print the group's ML-DSA-44 log key (its vkey, for witnesses' configuration and
    /// policy `log` lines) and the statement the group key signs naming it.
    LogKey {
        /// Data directory (for the default key file).
        #[arg(long, env = "DGSP_DATA")]
        data: PathBuf,
        /// Manager key location and passphrase.
        #[command(flatten)]
        key: KeyArgs,
        /// Which generation of the log key (docs/witnesses.md, "Key rotation").
        #[arg(long, env = "DGSP_LOG_KEY_GENERATION", default_value_t = 0)]
        generation: u64,
    },
    /// Back the group up into a new directory, online or with the registry stopped.
    ///
    /// A consistent checkpoint of the database, the encrypted manager key (copied as is) and
    /// a manifest (docs/deploy.md, "Backups"). Online, while the registry serves:
    /// --registry URL (the registry writes the backup under its --backup-dir). Registry
    /// stopped: --data DIR --to DIR.
    Backup(BackupArgs),
    /// Restore a backup into a new data directory, verified before it is put in place.
    ///
    /// Checks the copy's log (hash chain and commitments from the first entry), its head
    /// against the backup's manifest, the group and the key.
    Restore {
        /// The backup directory (made by `dgsp-registry backup`).
        #[arg(long, value_name = "BACKUP")]
        from: PathBuf,
        /// The new data directory (must not exist or be empty).
        #[arg(long, env = "DGSP_DATA")]
        data: PathBuf,
        /// Where to put the encrypted manager key (default DATA/manager.key); never replaced.
        #[arg(long, env = "DGSP_KEY_FILE")]
        key_file: Option<PathBuf>,
    },
    /// Replay the log into fresh projections (registry stopped). Crash-safe: run it again
    /// after an interruption and it resumes; `serve` finishes an interrupted one first.
    Rebuild {
        /// Data directory.
        #[arg(long, env = "DGSP_DATA")]
        data: PathBuf,
    },
    /// Verify the log's hash chain and commitments from the first entry.
    Verify {
        /// Data directory.
        #[arg(long, env = "DGSP_DATA")]
        data: PathBuf,
    },
    /// Print the OpenAPI document of the registry's HTTP API (JSON).
    Openapi,
    /// Print the group public key (standard base64) and its fingerprint.
    PublicKey {
        /// Data directory.
        #[arg(long, env = "DGSP_DATA")]
        data: PathBuf,
        /// Key file (default DATA/manager.key).
        #[arg(long, env = "DGSP_KEY_FILE")]
        key_file: Option<PathBuf>,
    },
}

/// `backup`: online (`--registry`) or direct (`--data` and `--to`, registry stopped).
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The running registry (https://HOST:PORT, or http://): ask it for an online backup.
    /// Needs the admin token, which is never sent over plain http:// to a host that is not
    /// loopback unless --allow-plain-http is given.
    #[arg(long, env = "DGSP_REGISTRY_URL", value_name = "URL")]
    pub registry: Option<String>,
    /// Online, https: trust only the CA certificates in this PEM file (a private CA), not
    /// the system's roots.
    #[arg(long, env = "DGSP_CA_FILE", value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Online: send the admin token over plain http:// to a host that is not loopback
    /// (where anyone on the network can read it). Only on a network you trust.
    #[arg(long, env = "DGSP_ALLOW_PLAIN_HTTP", action = clap::ArgAction::SetTrue,
          value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_plain_http: bool,
    /// Online: the backup's name under the registry's backup directory (1 to 64
    /// characters A-Z a-z 0-9 . _ -; default the UTC time, 20250131T235959Z).
    #[arg(long)]
    pub name: Option<String>,
    /// Admin API bearer token (online). Prefer DGSP_ADMIN_TOKEN or --admin-token-file:
    /// a token given here is visible in the process list (a warning is logged).
    #[arg(long, value_name = "TOKEN")]
    pub admin_token: Option<String>,
    /// File holding the admin token (online; used when neither --admin-token nor
    /// DGSP_ADMIN_TOKEN is set); private to its owner (chmod 600).
    #[arg(long, env = "DGSP_ADMIN_TOKEN_FILE", value_name = "FILE")]
    pub admin_token_file: Option<PathBuf>,
    /// Registry stopped: back up this data directory directly (refused while the
    /// registry holds its lock).
    #[arg(long, env = "DGSP_DATA")]
    pub data: Option<PathBuf>,
    /// Registry stopped: the new backup directory (must not exist or be empty). Given,
    /// the backup is made directly, even if --registry is set.
    #[arg(long, value_name = "DIR")]
    pub to: Option<PathBuf>,
    /// Registry stopped: the encrypted manager key file (default DATA/manager.key).
    #[arg(long, env = "DGSP_KEY_FILE")]
    pub key_file: Option<PathBuf>,
}

/// `serve` over HTTPS (docs/deploy.md, "TLS"); without these, plain HTTP.
#[derive(Debug, Args)]
pub struct TlsArgs {
    /// Serve HTTPS with this certificate chain: PEM, the server's certificate first, then
    /// its intermediates. Read again, with the key, on SIGHUP (no restart; a file that does
    /// not load keeps the certificate in force, and the error is logged).
    #[arg(long, env = "DGSP_TLS_CERT", value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1). A secret file: a
    /// regular file, not a symbolic link, that other users cannot access (chmod 600).
    #[arg(long, env = "DGSP_TLS_KEY", value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

impl TlsArgs {
    /// The files, when both are given.
    pub fn files(&self) -> Option<dgsp_http::tls::TlsFiles> {
        Some(dgsp_http::tls::TlsFiles {
            cert: self.tls_cert.clone()?,
            key: self.tls_key.clone()?,
        })
    }
}

/// `serve`'s bounds on connections (docs/deploy.md, "Connections"): `dgsp_http::serve`.
#[derive(Debug, Args)]
pub struct ListenerArgs {
    /// Most connections open at once; one accepted past it is closed at once, and the
    /// open ones keep being served. Keep it under the process's file descriptor limit
    /// (`LimitNOFILE=` in the systemd unit).
    #[arg(long, env = "DGSP_MAX_CONNECTIONS", value_name = "N",
          default_value_t = dgsp_http::serve::DEFAULT_MAX_CONNECTIONS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub max_connections: usize,
    /// How long a request's head (request line and headers) may take to arrive before
    /// the connection is closed; also how long an idle keep-alive connection is kept.
    /// Milliseconds, 100 to 600000.
    #[arg(long, env = "DGSP_HEADER_READ_TIMEOUT_MS", value_name = "MS",
          default_value_t = dgsp_http::serve::DEFAULT_HEADER_READ_TIMEOUT.as_millis() as u64,
          value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub header_read_timeout_ms: u64,
    /// With --tls-cert: how long a client has, from its connection, to finish its TLS
    /// handshake. Milliseconds, 100 to 600000.
    #[arg(long, env = "DGSP_TLS_HANDSHAKE_TIMEOUT_MS", value_name = "MS",
          default_value_t = dgsp_http::serve::DEFAULT_HANDSHAKE_TIMEOUT.as_millis() as u64,
          value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub tls_handshake_timeout_ms: u64,
}

impl ListenerArgs {
    /// The listener's limits these flags give.
    pub fn limits(&self) -> dgsp_http::serve::Limits {
        dgsp_http::serve::Limits {
            max_connections: self.max_connections,
            header_read_timeout: std::time::Duration::from_millis(self.header_read_timeout_ms),
            handshake_timeout: std::time::Duration::from_millis(self.tls_handshake_timeout_ms),
            ..Default::default()
        }
    }
}

/// `serve`'s witnesses.
#[derive(Debug, Args)]
pub struct WitnessArgs {
    /// A C2SP tlog-policy file naming the witnesses (with their submission URLs) and the
    /// quorum that must cosign each checkpoint before it is published; its `log` line must
    /// name this registry's log key (`dgsp-registry log-key` prints it). Without it,
    /// checkpoints are published unwitnessed.
    #[arg(long, env = "DGSP_WITNESS_POLICY", value_name = "FILE")]
    pub witness_policy: Option<PathBuf>,
    /// Which generation of the log key signs the witnessed checkpoints (docs/witnesses.md,
    /// "Key rotation").
    #[arg(long, env = "DGSP_LOG_KEY_GENERATION", default_value_t = 0)]
    pub log_key_generation: u64,
    /// How long one witness has to answer one add-checkpoint request.
    #[arg(long, env = "DGSP_WITNESS_TIMEOUT_MS", default_value_t = 5000, value_name = "MS",
        value_parser = clap::value_parser!(u64).range(100..=120_000))]
    pub witness_timeout_ms: u64,
}

/// Where the manager key is and how to unlock it.
#[derive(Debug, Args)]
pub struct KeyArgs {
    /// Encrypted manager key file (default DATA/manager.key).
    #[arg(long, env = "DGSP_KEY_FILE")]
    pub key_file: Option<PathBuf>,
    /// File holding the key passphrase (its text without the final line break); or set
    /// DGSP_KEY_PASSPHRASE. A regular file, not a symbolic link, that other users cannot
    /// access (chmod 600).
    #[arg(long, env = "DGSP_KEY_PASSPHRASE_FILE", value_name = "FILE")]
    pub passphrase_file: Option<PathBuf>,
}

/// The environment variable holding the key passphrase (when no file is given).
pub const PASSPHRASE_ENV: &str = "DGSP_KEY_PASSPHRASE";

impl KeyArgs {
    /// The key file path.
    pub fn path(&self, data: &Path) -> PathBuf {
        key_path(data, self.key_file.as_deref())
    }

    /// The passphrase, from the file (checked by [`secret_file`]) or [`PASSPHRASE_ENV`].
    pub fn passphrase(&self) -> Result<Zeroizing<String>, SecretError> {
        if let Some(f) = &self.passphrase_file {
            let text = secret_file::read_text(f)?;
            return Ok(Zeroizing::new(
                text.trim_end_matches(['\n', '\r']).to_owned(),
            ));
        }
        match std::env::var(PASSPHRASE_ENV) {
            Ok(p) => Ok(Zeroizing::new(p)),
            Err(std::env::VarError::NotUnicode(_)) => Err(SecretError::NotUnicode {
                var: PASSPHRASE_ENV,
            }),
            Err(std::env::VarError::NotPresent) => Err(SecretError::Missing {
                what: "key passphrase",
                how: "set DGSP_KEY_PASSPHRASE or pass --passphrase-file (DGSP_KEY_PASSPHRASE_FILE)",
            }),
        }
    }
}

/// Why a passphrase or token could not be had.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// Its file was refused or could not be read.
    #[error(transparent)]
    File(#[from] SecretFileError),
    /// None was given.
    #[error("no {what}: {how}")]
    Missing {
        /// which secret
        what: &'static str,
        /// where it may come from
        how: &'static str,
    },
    /// Too short to resist guessing.
    #[error("the {what} must be at least {min} characters (this one has {found})")]
    TooShort {
        /// which secret
        what: &'static str,
        /// the minimum
        min: usize,
        /// its length
        found: usize,
    },
    /// The environment variable holding it is not UTF-8.
    #[error("${var} is not valid UTF-8")]
    NotUnicode {
        /// the variable
        var: &'static str,
    },
}

/// The shortest admin or auditor token accepted.
pub const MIN_TOKEN_LEN: usize = 16;

/// One of the registry's bearer tokens, and where it may come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Token {
    /// `--admin-token`, `DGSP_ADMIN_TOKEN`, `--admin-token-file` / `DGSP_ADMIN_TOKEN_FILE`
    Admin,
    /// `--auditor-token`, `DGSP_AUDITOR_TOKEN`, `--auditor-token-file` /
    /// `DGSP_AUDITOR_TOKEN_FILE`
    Auditor,
}

impl Token {
    /// Human name.
    pub fn name(self) -> &'static str {
        match self {
            Token::Admin => "admin token",
            Token::Auditor => "auditor token",
        }
    }

    /// The environment variable holding the token itself.
    pub fn env(self) -> &'static str {
        match self {
            Token::Admin => "DGSP_ADMIN_TOKEN",
            Token::Auditor => "DGSP_AUDITOR_TOKEN",
        }
    }

    /// The command-line flag holding the token itself.
    pub fn flag(self) -> &'static str {
        match self {
            Token::Admin => "--admin-token",
            Token::Auditor => "--auditor-token",
        }
    }

    /// The error for a required token that was not given.
    pub fn missing(self) -> SecretError {
        SecretError::Missing {
            what: self.name(),
            how: match self {
                Token::Admin => {
                    "set DGSP_ADMIN_TOKEN or pass --admin-token-file (DGSP_ADMIN_TOKEN_FILE)"
                }
                Token::Auditor => {
                    "set DGSP_AUDITOR_TOKEN or pass --auditor-token-file (DGSP_AUDITOR_TOKEN_FILE)"
                }
            },
        }
    }

    /// The token from the first of: `flag` (the command-line value: a warning is logged,
    /// as other users can read it in the process list), the environment variable, `file`
    /// (checked by [`secret_file`]; surrounding whitespace removed). `None` when none is
    /// given; a token shorter than [`MIN_TOKEN_LEN`] is refused.
    pub fn resolve(
        self,
        flag: Option<String>,
        file: Option<&Path>,
    ) -> Result<Option<Zeroizing<String>>, SecretError> {
        let token = if let Some(t) = flag {
            tracing::warn!(
                "{} puts the {} on the command line, where other users can read it (ps, /proc) and shell history keeps it; use {} or {}-file instead",
                self.flag(),
                self.name(),
                self.env(),
                self.flag()
            );
            Zeroizing::new(t)
        } else if let Some(t) = std::env::var_os(self.env()).filter(|v| !v.is_empty()) {
            Zeroizing::new(
                t.into_string()
                    .map_err(|_| SecretError::NotUnicode { var: self.env() })?,
            )
        } else if let Some(f) = file {
            secret_file::read_token(f)?
        } else {
            return Ok(None);
        };
        let found = token.chars().count();
        if found < MIN_TOKEN_LEN {
            return Err(SecretError::TooShort {
                what: self.name(),
                min: MIN_TOKEN_LEN,
                found,
            });
        }
        Ok(Some(token))
    }
}

/// The manager key file: `key_file` if given, else `DATA/manager.key`.
pub fn key_path(data: &Path, key_file: Option<&Path>) -> PathBuf {
    key_file.map_or_else(|| data.join("manager.key"), Path::to_path_buf)
}

/// The parameter set of `init` when none is given: chosen by measurement (docs/parameter-sets.md).
pub const DEFAULT_PARAMS: &str = "sha2-128f";

fn parse_params(s: &str) -> Result<ParamSet, String> {
    s.parse().map_err(|e: dgsp_core::DecodeError| e.to_string())
}

/// Whether the registry keeps its log durable in the tile store (`--journal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum JournalMode {
    /// on with an S3 bucket, off with a local directory
    Auto,
    /// always (needs --tiles-dir or --tiles-s3-bucket)
    On,
    /// never: writes are durable on the local disk only
    Off,
}
