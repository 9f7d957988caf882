//! Command-line interface of `dgsp-registry` (clap, every secret from env or a file).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};
use zeroize::Zeroizing;

use dgsp_core::ParamSet;

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
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a new group: manager keys (encrypted at rest) and the genesis log entry.
    Init {
        /// Parameter set, e.g. sha2-128f or shake-256f.
        #[arg(long, value_parser = parse_params)]
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
        /// Admin API bearer token (at least 16 characters).
        #[arg(long, env = "DGSP_ADMIN_TOKEN", hide_env_values = true)]
        admin_token: Option<String>,
        /// File holding the admin token (alternative to --admin-token).
        #[arg(long, env = "DGSP_ADMIN_TOKEN_FILE")]
        admin_token_file: Option<PathBuf>,
        /// Auditor token: reveals private log payloads in the feed.
        #[arg(long, env = "DGSP_AUDITOR_TOKEN", hide_env_values = true)]
        auditor_token: Option<String>,
        /// Largest accepted request body, in bytes.
        #[arg(long, env = "DGSP_MAX_BODY_BYTES", default_value_t = crate::api::DEFAULT_BODY_LIMIT)]
        max_body_bytes: usize,
        /// Longest time between two signed checkpoints, even when nothing is written: the
        /// freshness verifiers can demand (docs/checkpoints.md). 1 to 3600.
        #[arg(long, env = "DGSP_CHECKPOINT_INTERVAL_SECS", default_value_t = 15,
              value_parser = clap::value_parser!(u64).range(1..=3600))]
        checkpoint_interval_secs: u64,
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

/// Where the manager key is and how to unlock it.
#[derive(Debug, Args)]
pub struct KeyArgs {
    /// Encrypted manager key file (default DATA/manager.key).
    #[arg(long, env = "DGSP_KEY_FILE")]
    pub key_file: Option<PathBuf>,
    /// File holding the key passphrase; or set DGSP_KEY_PASSPHRASE.
    #[arg(long, env = "DGSP_KEY_PASSPHRASE_FILE")]
    pub passphrase_file: Option<PathBuf>,
}

impl KeyArgs {
    /// The key file path.
    pub fn path(&self, data: &Path) -> PathBuf {
        key_path(data, self.key_file.as_deref())
    }

    /// The passphrase, from the file or `DGSP_KEY_PASSPHRASE`.
    pub fn passphrase(&self) -> Result<Zeroizing<String>, String> {
        if let Some(f) = &self.passphrase_file {
            let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
            return Ok(Zeroizing::new(
                text.trim_end_matches(['\n', '\r']).to_owned(),
            ));
        }
        std::env::var("DGSP_KEY_PASSPHRASE")
            .map(Zeroizing::new)
            .map_err(|_| {
                "no key passphrase: set DGSP_KEY_PASSPHRASE or pass --passphrase-file".to_owned()
            })
    }
}

/// The manager key file: `key_file` if given, else `DATA/manager.key`.
pub fn key_path(data: &Path, key_file: Option<&Path>) -> PathBuf {
    key_file.map_or_else(|| data.join("manager.key"), Path::to_path_buf)
}

fn parse_params(s: &str) -> Result<ParamSet, String> {
    s.parse().map_err(|e: dgsp_core::DecodeError| e.to_string())
}
