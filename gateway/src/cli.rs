//! Command-line interface of `dgsp-gateway` (clap; every option also from the environment).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::api::{ApiConfig, DEFAULT_BODY_LIMIT, DEFAULT_MAX_BATCH, DEFAULT_MAX_MESSAGE};
use crate::clock::WallClock;
use crate::follower::MAX_PENDING_BYTES;
use crate::layout::Layout;
use crate::server::Config;

/// The public DGSP verification gateway: follows a group's registry, checks everything it
/// applies against the pinned group key, and answers verify and judge requests with the
/// signed snapshot and revocation proof they were checked against.
#[derive(Debug, Parser)]
#[command(name = "dgsp-gateway", version, about, long_about = None)]
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
    /// Follow a registry and serve the public API.
    Serve(Box<ServeArgs>),
    /// Print the OpenAPI document (what openapi/gateway.json must contain).
    Openapi,
    /// Write a new witness key file (for `serve --witness-key`) and print the witness's
    /// verifier key, for the `witness` line of a log's policy.
    WitnessKey(WitnessKeyArgs),
    /// Print the verifier key of a witness key file.
    WitnessVkey {
        /// The witness key file.
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
    },
}

/// `witness-key` options.
#[derive(Debug, clap::Args)]
pub struct WitnessKeyArgs {
    /// Where to write the key (created with mode 0600; an existing file is never
    /// overwritten). Its empty witness state is made beside it, in `<FILE>.state`.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The witness's name: the key name in its vkey and cosignatures (e.g. this gateway's
    /// host name). Stored in the file: the same key under another name is another witness.
    #[arg(long)]
    pub name: String,
}

/// `serve` options.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The registry's base URL (its feed is followed unless --tiles is given).
    #[arg(long, env = "DGSP_REGISTRY_URL", required_unless_present = "tiles")]
    pub registry: Option<String>,
    /// Follow the log through its C2SP tiles and snapshot bundles under this http(s) base
    /// URL (the registry's `/v1/log`, or a static server or bucket its mirror writes to)
    /// instead of the feed: an empty replica starts from the newest checkpoint and the
    /// snapshot it names, without replaying the log.
    /// `s3://BUCKET/PREFIX` reads the bucket directly with credentials (AWS_ACCESS_KEY_ID,
    /// AWS_SECRET_ACCESS_KEY), at --tiles-s3-endpoint.
    #[arg(long, env = "DGSP_GATEWAY_TILES_URL", value_name = "URL")]
    pub tiles: Option<String>,
    /// The S3 endpoint of an `s3://` --tiles (default: AWS); path-style requests.
    #[arg(long, env = "DGSP_GATEWAY_TILES_S3_ENDPOINT", value_name = "URL")]
    pub tiles_s3_endpoint: Option<String>,
    /// The S3 region of an `s3://` --tiles.
    #[arg(
        long,
        env = "DGSP_GATEWAY_TILES_S3_REGION",
        default_value = "us-east-1",
        value_name = "REGION"
    )]
    pub tiles_s3_region: String,
    /// Trust anchor: a file with the group public key (as `dgsp-registry public-key`
    /// prints it) or the key's SHA3-256 fingerprint (64 hex characters).
    #[arg(long, env = "DGSP_GROUP_KEY")]
    pub group_key: String,
    /// Replica directory (created if missing; pinned to one group).
    #[arg(long, env = "DGSP_GATEWAY_DATA")]
    pub data: PathBuf,
    /// Address to listen on.
    #[arg(long, env = "DGSP_GATEWAY_LISTEN", default_value = "127.0.0.1:7400")]
    pub listen: SocketAddr,
    /// Verification threads (0: one per available core; affinity and cgroup CPU quota
    /// honoured).
    #[arg(long, env = "DGSP_GATEWAY_WORKERS", default_value_t = 0)]
    pub workers: usize,
    /// HTTP runtime threads (0: a quarter of the available cores, at least 1).
    #[arg(long, env = "DGSP_GATEWAY_HTTP_THREADS", default_value_t = 0)]
    pub http_threads: usize,
    /// Longest wait, in microseconds, for a verify worker to gather more signatures into one
    /// engine batch; only taken while every other worker is busy (0: never wait).
    #[arg(long, env = "DGSP_GATEWAY_COALESCE_US", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub coalesce_us: u64,
    /// Verifications that may be queued or running at once before requests get 503
    /// (0: 64 per worker, and at least --max-batch); must be at least --max-batch.
    #[arg(long, env = "DGSP_GATEWAY_QUEUE", default_value_t = 0)]
    pub queue: usize,
    /// Most signatures in one batch request.
    #[arg(long, env = "DGSP_GATEWAY_MAX_BATCH", default_value_t = DEFAULT_MAX_BATCH)]
    pub max_batch: usize,
    /// Largest accepted request body, in bytes: a batch's limit, and the most any request
    /// may send.
    #[arg(long, env = "DGSP_MAX_BODY_BYTES", default_value_t = DEFAULT_BODY_LIMIT)]
    pub max_body_bytes: usize,
    /// Largest message a single /v1/verify or /v1/judge carries, in bytes: their body limit
    /// is its base64 plus twice the largest signature (docs/gateway.md, "Limits").
    #[arg(long, env = "DGSP_GATEWAY_MAX_MESSAGE_BYTES", default_value_t = DEFAULT_MAX_MESSAGE)]
    pub max_message_bytes: usize,
    /// Most memory held by feed entries fetched but not yet covered by a signed checkpoint,
    /// by their parsed size, in bytes; beyond it the feed is refused (`pending_limit`). With
    /// --tiles: the most one step's entries hold (a step ends at a checkpoint within it).
    #[arg(long, env = "DGSP_GATEWAY_MAX_PENDING_BYTES", default_value_t = MAX_PENDING_BYTES)]
    pub max_pending_bytes: usize,
    /// A state whose newest signed checkpoint (by the registry's signed time) is older than
    /// this many seconds is stale: verify answers `stale` with no verdict and /readyz fails.
    #[arg(long, env = "DGSP_GATEWAY_MAX_STALENESS_SECS", default_value_t = 60)]
    pub max_staleness_secs: u64,
    /// How far, in milliseconds, a signed checkpoint's time may be ahead of this machine's
    /// clock: a checkpoint further ahead is refused (fault `future_checkpoint`, /readyz not
    /// ready) and a state whose checkpoint is that far ahead is stale.
    #[arg(long, env = "DGSP_GATEWAY_CLOCK_TOLERANCE_MS", default_value_t = crate::clock::DEFAULT_CLOCK_TOLERANCE_MS)]
    pub clock_tolerance_ms: u64,
    /// Give verdicts from a stale state anyway, marked `stale: true` with a detail saying so
    /// (for operators who prefer availability; /readyz still fails).
    #[arg(long, env = "DGSP_GATEWAY_SERVE_STALE", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false, num_args = 0..=1, default_missing_value = "true")]
    pub serve_stale: bool,
    /// Serve the verification page from this directory at /verify/ (the output of
    /// `sdk/js/build.sh`: the page and its WebAssembly verifier); no page without it.
    #[arg(long, env = "DGSP_GATEWAY_WEB_DIR", value_name = "DIR")]
    pub web_dir: Option<PathBuf>,
    /// A witness policy (C2SP tlog-policy: `log`, `witness`, `group`, `quorum` lines): the
    /// registry's checkpoints must come with a witnessed note cosigned by the policy's
    /// quorum, its `log` line must name this group's log key (as the registry's
    /// `GET /v1/log/key` states it), and answers are fresh only as of such a checkpoint,
    /// its cosignatures no older than --max-staleness-secs (docs/witnesses.md, "Gateways").
    /// With --tiles: the tiles' `checkpoint.witnessed`, and the log key is the policy's
    /// `log` line (no registry statement is read).
    #[arg(long, env = "DGSP_WITNESS_POLICY", value_name = "FILE")]
    pub witness_policy: Option<PathBuf>,
    /// Be a witness of the group's log (c2sp.org/tlog-witness) with the key in this file
    /// (`dgsp-gateway witness-key` writes one): serve `POST /witness/add-checkpoint`
    /// (submission prefix `<this gateway's URL>/witness`), the state kept in --witness-state.
    /// The log's key comes from a `log` line of --witness-policy or --witness-logs, else
    /// from the registry's `GET /v1/log/key` verified under the group key.
    #[arg(long, env = "DGSP_GATEWAY_WITNESS_KEY", value_name = "FILE")]
    pub witness_key: Option<PathBuf>,
    /// With --witness-key: a tlog-policy file whose `log` lines name further logs to
    /// witness (its other lines are not used; it needs a `quorum` line, `quorum none` will
    /// do).
    #[arg(
        long,
        env = "DGSP_GATEWAY_WITNESS_LOGS",
        value_name = "FILE",
        requires = "witness_key"
    )]
    pub witness_logs: Option<PathBuf>,
    /// With --witness-key: the directory of the witness's state (the tree it last cosigned
    /// per log), kept with the key and apart from --data (a lost replica is rebuilt; a
    /// lost witness state would let it cosign any tree from old 0 again). Default: the
    /// key file's path with `.state` appended (`dgsp-gateway witness-key` makes it there).
    #[arg(
        long,
        env = "DGSP_GATEWAY_WITNESS_STATE",
        value_name = "DIR",
        requires = "witness_key"
    )]
    pub witness_state: Option<PathBuf>,
    /// With --witness-key: make a new witness state if --witness-state holds none (from the
    /// trees the replica holds, if any), instead of refusing to start. Only for a key that
    /// has never cosigned, or whose cosignatures count nowhere yet.
    #[arg(
        long,
        env = "DGSP_GATEWAY_WITNESS_INIT_STATE",
        requires = "witness_key"
    )]
    pub witness_init_state: bool,
    /// Pause between feed polls once caught up, in milliseconds.
    #[arg(long, env = "DGSP_GATEWAY_POLL_MS", default_value_t = 500)]
    pub poll_ms: u64,
    /// Stall timeout towards the registry, in seconds: connecting, waiting for an answer,
    /// and any pause while reading one (a feed page may take 30 times this in all).
    #[arg(long, env = "DGSP_GATEWAY_REGISTRY_TIMEOUT_SECS", default_value_t = 10)]
    pub registry_timeout_secs: u64,
    /// Trust only the CA certificates in this PEM file, not the system's roots, for an
    /// https:// --registry (and an https:// --tiles URL): a registry serving a certificate
    /// of a private CA (docs/deploy.md, "TLS").
    #[arg(long, env = "DGSP_REGISTRY_CA_FILE", value_name = "FILE")]
    pub registry_ca_file: Option<PathBuf>,
    /// Serve HTTPS with this certificate chain: PEM, the server's certificate first, then
    /// its intermediates. Read again, with the key, on SIGHUP (no restart; a file that does
    /// not load keeps the certificate in force, and the error is logged).
    #[arg(
        long,
        env = "DGSP_GATEWAY_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1). A secret file: a
    /// regular file, not a symbolic link, that other users cannot access (chmod 600).
    #[arg(
        long,
        env = "DGSP_GATEWAY_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
    /// Most connections open at once; one accepted past it is closed at once, and the
    /// open ones keep being served (docs/deploy.md, "Connections"). Keep it under the
    /// process's file descriptor limit (`LimitNOFILE=` in the systemd unit).
    #[arg(long, env = "DGSP_GATEWAY_MAX_CONNECTIONS", value_name = "N",
          default_value_t = dgsp_http::serve::DEFAULT_MAX_CONNECTIONS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub max_connections: usize,
    /// How long a request's head (request line and headers) may take to arrive before
    /// the connection is closed; also how long an idle keep-alive connection is kept.
    /// Milliseconds, 100 to 600000.
    #[arg(long, env = "DGSP_GATEWAY_HEADER_READ_TIMEOUT_MS", value_name = "MS",
          default_value_t = dgsp_http::serve::DEFAULT_HEADER_READ_TIMEOUT.as_millis() as u64,
          value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub header_read_timeout_ms: u64,
    /// With --tls-cert: how long a client has, from its connection, to finish its TLS
    /// handshake. Milliseconds, 100 to 600000.
    #[arg(long, env = "DGSP_GATEWAY_TLS_HANDSHAKE_TIMEOUT_MS", value_name = "MS",
          default_value_t = dgsp_http::serve::DEFAULT_HANDSHAKE_TIMEOUT.as_millis() as u64,
          value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub tls_handshake_timeout_ms: u64,
}

impl ServeArgs {
    /// The listener's limits (`--max-connections`, `--header-read-timeout-ms`,
    /// `--tls-handshake-timeout-ms`): `dgsp_http::serve`.
    pub fn listener_limits(&self) -> dgsp_http::serve::Limits {
        dgsp_http::serve::Limits {
            max_connections: self.max_connections,
            header_read_timeout: std::time::Duration::from_millis(self.header_read_timeout_ms),
            handshake_timeout: std::time::Duration::from_millis(self.tls_handshake_timeout_ms),
            ..Default::default()
        }
    }

    /// `--tls-cert` and `--tls-key`, when given (both or neither).
    pub fn tls_files(&self) -> Option<dgsp_http::tls::TlsFiles> {
        Some(dgsp_http::tls::TlsFiles {
            cert: self.tls_cert.clone()?,
            key: self.tls_key.clone()?,
        })
    }

    /// The thread layout these options give on this machine.
    pub fn layout(&self) -> Layout {
        Layout::detect(self.http_threads, self.workers)
    }

    /// The server configuration these options describe.
    pub fn config(&self) -> Result<Config, String> {
        let is_http = |u: &str| u.starts_with("http://") || u.starts_with("https://");
        let tiles_s3 = self.tiles.as_deref().and_then(|u| u.strip_prefix("s3://"));
        let tiles_http = self.tiles.clone().filter(|_| tiles_s3.is_none());
        for (flag, url) in [("--registry", &self.registry), ("--tiles", &tiles_http)] {
            if let Some(url) = url.as_deref().filter(|u| !is_http(u)) {
                return Err(format!(
                    "{flag} {url}: expected an http:// or https:// URL{}",
                    if flag == "--tiles" {
                        " (or s3://BUCKET/PREFIX)"
                    } else {
                        ""
                    }
                ));
            }
        }
        if self.tiles_s3_endpoint.is_some() && tiles_s3.is_none() {
            return Err("--tiles-s3-endpoint: only with an s3:// --tiles".into());
        }
        let store = tiles_s3
            .map(|rest| {
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                let mut cfg = dgsp_tilestore::S3Config::new(bucket);
                cfg.endpoint = self.tiles_s3_endpoint.clone();
                cfg.region = self.tiles_s3_region.clone();
                cfg.prefix = prefix.trim_end_matches('/').to_owned();
                dgsp_tilestore::S3::open(cfg)
                    .map(|s| {
                        std::sync::Arc::new(s) as std::sync::Arc<dyn dgsp_tilestore::TileStore>
                    })
                    .map_err(|e| format!("--tiles {}: {e}", self.tiles.as_deref().unwrap_or("")))
            })
            .transpose()?;
        if self.max_batch == 0 {
            return Err("--max-batch must be at least 1".into());
        }
        if self.queue != 0 && self.max_batch > self.queue {
            return Err(format!(
                "--max-batch {} is larger than --queue {}: a full batch could never be accepted; lower --max-batch or raise --queue",
                self.max_batch, self.queue
            ));
        }
        if let Some(dir) = &self.web_dir {
            check_web_dir(dir)?;
        }
        if self.max_staleness_secs == 0 {
            return Err("--max-staleness-secs must be at least 1".into());
        }
        let witness_policy = self
            .witness_policy
            .as_deref()
            .map(crate::witness::WitnessPolicy::load)
            .transpose()?;
        let witness = self
            .witness_key
            .as_deref()
            .map(|key| {
                crate::witnessing::WitnessConfig::load(
                    key,
                    self.witness_logs.as_deref(),
                    self.witness_state.as_deref(),
                    self.witness_init_state,
                )
            })
            .transpose()?;
        let anchor = crate::anchor::parse(&self.group_key)?;
        let mut c = Config::new(
            self.registry.clone().unwrap_or_default(),
            anchor,
            self.data.clone(),
        );
        c.workers = self.workers;
        c.coalesce_wait = Duration::from_micros(self.coalesce_us);
        c.queue = self.queue;
        c.api = ApiConfig {
            body_limit: self.max_body_bytes,
            max_message: self.max_message_bytes,
            max_batch: self.max_batch,
            max_staleness: Duration::from_secs(self.max_staleness_secs),
            serve_stale: self.serve_stale,
            web_dir: self.web_dir.clone(),
        };
        c.clock =
            WallClock::system().with_tolerance(Duration::from_millis(self.clock_tolerance_ms));
        c.follow.poll = Duration::from_millis(self.poll_ms.max(10));
        c.follow.timeout = Duration::from_secs(self.registry_timeout_secs.max(1));
        c.follow.max_pending_bytes = self.max_pending_bytes;
        if let Some(path) = &self.registry_ca_file {
            c.follow.roots =
                crate::follower::read_roots(path).map_err(|e| format!("--registry-ca-file {e}"))?;
        }
        c.witness_policy = witness_policy.map(std::sync::Arc::new);
        c.witness = witness;
        c.tiles = self.tiles.as_ref().map(|url| {
            let mut t = crate::tiles::TilesConfig::new(url);
            t.poll = c.follow.poll;
            t.timeout = c.follow.timeout;
            t.roots = c.follow.roots.clone();
            // The tiles' steps hold their entries as the feed holds its pending ones.
            t.max_bytes = c.follow.max_pending_bytes;
            t.store = store;
            t
        });
        Ok(c)
    }
}

/// `--web-dir` must be a directory reached without a symbolic link: the page is served from
/// no link (`api::page`), so a path through one would answer 404 to every request. Said at
/// start, with the path to give instead.
fn check_web_dir(dir: &std::path::Path) -> Result<(), String> {
    let absolute =
        std::path::absolute(dir).map_err(|e| format!("--web-dir {}: {e}", dir.display()))?;
    let real = std::fs::canonicalize(&absolute)
        .map_err(|e| format!("--web-dir {}: {e}", dir.display()))?;
    if !real.is_dir() {
        return Err(format!("--web-dir {}: not a directory", dir.display()));
    }
    if real != absolute {
        return Err(format!(
            "--web-dir {}: the path goes through a symbolic link, and the page is never served through one; give its real path, {}",
            dir.display(),
            real.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_web_dir;

    #[test]
    fn a_web_dir_through_a_symbolic_link_is_refused_at_start_with_its_real_path() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let real = base.join("page");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, base.join("linked")).unwrap();
        check_web_dir(&real).unwrap();
        let err = check_web_dir(&base.join("linked")).unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
        assert!(err.contains(&real.display().to_string()), "{err}");
        assert!(check_web_dir(&base.join("missing")).is_err());
        std::fs::write(base.join("file"), "x").unwrap();
        assert!(check_web_dir(&base.join("file"))
            .unwrap_err()
            .contains("not a directory"));
    }
}
