//! The command tree (clap). Grouped by who runs it: `operator` (the group manager's admin
//! API), `member` (a local wallet), `verify` / `judge` / `check-proof` (anyone), `audit`
//! (anyone holding the auditor token or an export file).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Operate, use, verify and audit a DGSP group.
///
/// DGSP is a post-quantum group signature scheme: members sign anonymously, anyone verifies
/// against the group key, the manager can open a signature to its signer, anyone can judge
/// that opening, and revoking a member invalidates all its signatures.
///
/// A typical life: the operator runs `operator join alice --out alice.join.json`; alice runs
/// `member keygen --join alice.join.json`, then `member csr --count 10 --out alice.csr.json`;
/// the operator runs `operator issue alice.csr.json --out alice.certs.json`; alice runs
/// `member import alice.certs.json` and `member sign report.pdf --out report.sig`; anyone
/// runs `verify --message report.pdf --signature report.sig`; an auditor runs `audit`.
/// See docs/walkthrough.md for the whole path with copy-pasteable commands.
#[derive(Debug, Parser)]
#[command(
    name = "dgsp-manager",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// Print one JSON document on stdout instead of human-readable text (for scripts).
    /// Errors are then a JSON object on stderr: {"error": {"kind", "message", ...}}.
    #[arg(long, global = true)]
    pub json: bool,

    /// Config file (TOML: registry, gateway, admin_token, auditor_token, wallet).
    /// Defaults to $XDG_CONFIG_HOME/dgsp-manager/config.toml when that exists. A file
    /// holding a token must be a regular file, not a symbolic link, that other users cannot
    /// access (chmod 600).
    #[arg(long, global = true, env = "DGSP_MANAGER_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The group manager's operations, through the registry's admin API.
    #[command(subcommand)]
    Operator(OperatorCommand),
    /// A member's wallet: keys, certificate requests, certificates, signing.
    #[command(subcommand)]
    Member(MemberCommand),
    /// Verify a signature through a gateway (revocation checked against its signed snapshot).
    Verify(VerifyArgs),
    /// Judge an opening: does proof `pi` show that member `id` made this signature?
    Judge(JudgeArgs),
    /// Check a revocation proof offline against a signed snapshot and the group key.
    CheckProof(CheckProofArgs),
    /// Replay a registry's whole log (its feed, an export file, or its published C2SP tiles
    /// with --tiles) and check the manager's conduct.
    Audit(AuditArgs),
    /// Print shell completions (bash, zsh, fish, elvish, powershell) to stdout.
    Completions {
        /// the shell
        shell: clap_complete::Shell,
    },
}

/// How every command that talks to a service behaves on the network.
#[derive(Debug, Clone, Args)]
pub struct HttpArgs {
    /// Per-request timeout in seconds.
    #[arg(
        long,
        env = "DGSP_HTTP_TIMEOUT_SECS",
        default_value_t = 30,
        value_name = "SECS"
    )]
    pub timeout_secs: u64,
    /// How many times to retry a request that failed with 503, 429, 408, 502, 504, a
    /// timeout or a connection error (every call is safe to repeat: reads, and writes that
    /// carry one Idempotency-Key for all attempts).
    #[arg(long, env = "DGSP_HTTP_RETRIES", default_value_t = 5, value_name = "N")]
    pub retries: u32,
    /// For https:// URLs, trust only the CA certificates in this PEM file (a private CA,
    /// docs/deploy.md "TLS"), not the system's trust store.
    #[arg(long, env = "DGSP_CA_FILE", value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Send the admin or auditor token over plain http:// to a host that is not loopback,
    /// where anyone on the network can read it. Refused otherwise; only on a network you
    /// trust.
    #[arg(long, env = "DGSP_ALLOW_PLAIN_HTTP", action = clap::ArgAction::SetTrue,
          value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_plain_http: bool,
}

impl Default for HttpArgs {
    /// What the command line gives without these flags: 30 s, 5 retries, the system's
    /// trust store, no token over plain HTTP off loopback.
    fn default() -> Self {
        HttpArgs {
            timeout_secs: 30,
            retries: 5,
            ca_file: None,
            allow_plain_http: false,
        }
    }
}

impl HttpArgs {
    /// A client for `url` with these settings, sending `token` if given.
    pub fn client(
        &self,
        url: &str,
        token: Option<crate::client::Token>,
    ) -> Result<crate::client::Client, crate::client::ClientError> {
        let transport =
            crate::client::Transport::new(self.ca_file.as_deref(), self.allow_plain_http)?;
        crate::client::Client::connect(
            url,
            token,
            std::time::Duration::from_secs(self.timeout_secs.max(1)),
            self.retries,
            &transport,
        )
    }
}

/// Where the registry is and how to authenticate.
#[derive(Debug, Clone, Args)]
pub struct RegistryArgs {
    /// Registry base URL (http or https).
    #[arg(long, env = "DGSP_REGISTRY_URL", value_name = "URL")]
    pub registry: Option<String>,
    /// Admin bearer token. Other users can see a command line in the process list and shell
    /// history keeps it (a warning is printed): prefer $DGSP_ADMIN_TOKEN, --token-file or
    /// the config file. Sources, first found wins: --token, $DGSP_ADMIN_TOKEN,
    /// --token-file, the config file.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// File holding the admin token: a regular file, not a symbolic link, that other users
    /// cannot access (chmod 600).
    #[arg(long, env = "DGSP_ADMIN_TOKEN_FILE", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// timeout and retries
    #[command(flatten)]
    pub http: HttpArgs,
}

/// Operator commands.
#[derive(Debug, Subcommand)]
pub enum OperatorCommand {
    /// Admit members. Prints each member's id and cid*; with --out, writes the join file a
    /// member needs for `member keygen` (one per member: `DIR/USERNAME.join.json` when
    /// several are joined, else the given file).
    Join {
        /// usernames to admit (all or none)
        usernames: Vec<String>,
        /// read usernames from a file, one per line (blank lines and #comments skipped)
        #[arg(long, value_name = "FILE", conflicts_with = "usernames")]
        file: Option<PathBuf>,
        /// where to write join files (a file for one member, a directory for several)
        #[arg(long, value_name = "PATH")]
        out: Option<PathBuf>,
        /// registry connection
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Certify the WOTS+ keys of a member's CSR file; writes the certificates file the
    /// member imports.
    Issue {
        /// the CSR file from `member csr`
        csr: PathBuf,
        /// certificates file to write
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// registry connection
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Revoke a member: every certificate it holds, for good (idempotent).
    Revoke {
        /// which member
        #[command(flatten)]
        member: MemberRef,
        /// do not ask for confirmation
        #[arg(long, short = 'y')]
        yes: bool,
        /// registry connection
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Open a valid signature to its signer. Prints id, username, pi and the judge command a
    /// third party can run. The opening is recorded in the log.
    Open {
        /// the signed message (file, or - for stdin)
        #[arg(long, value_name = "FILE")]
        message: PathBuf,
        /// the signature file (base64 text or raw encoding)
        #[arg(long, value_name = "FILE")]
        signature: PathBuf,
        /// registry connection
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Members: show one, or list all.
    #[command(subcommand)]
    Member(OperatorMemberCommand),
    /// The log: export it for auditors.
    #[command(subcommand)]
    Log(LogCommand),
    /// Registry health, log head, latest checkpoint and snapshot.
    Status {
        /// registry connection
        #[command(flatten)]
        registry: RegistryArgs,
    },
}

/// A member by id or username.
#[derive(Debug, Clone, Args)]
#[group(required = true, multiple = false)]
pub struct MemberRef {
    /// member id
    #[arg(long)]
    pub id: Option<u64>,
    /// username
    #[arg(long)]
    pub username: Option<String>,
}

/// `operator member ...`
#[derive(Debug, Subcommand)]
pub enum OperatorMemberCommand {
    /// One member's record.
    Show {
        /// which member
        #[command(flatten)]
        member: MemberRef,
        /// registry connection
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// All members, in id order.
    List {
        /// only active (not revoked) members
        #[arg(long)]
        active: bool,
        /// registry connection
        #[command(flatten)]
        registry: RegistryArgs,
    },
}

/// `operator log ...`
#[derive(Debug, Subcommand)]
pub enum LogCommand {
    /// Write the whole log (with private parts: auditor or admin token) as JSON Lines, one
    /// entry per line, for `audit --file`. Written to a temporary file and renamed when
    /// complete, so a partial export never looks whole.
    Export {
        /// file to write
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// the public feed only (no token; private parts appear as commitments)
        #[arg(long)]
        public: bool,
        /// registry connection
        #[command(flatten)]
        registry: RegistryArgs,
    },
}

/// Where the wallet is and how to unlock it.
#[derive(Debug, Clone, Args)]
pub struct WalletArgs {
    /// Wallet file (encrypted at rest; its lock and use journal sit beside it).
    #[arg(long, env = "DGSP_WALLET", value_name = "FILE")]
    pub wallet: Option<PathBuf>,
    /// Read the wallet passphrase from this file (first line) instead of
    /// $DGSP_WALLET_PASSPHRASE or a prompt: a regular file, not a symbolic link, that other
    /// users cannot access (chmod 600).
    #[arg(long, env = "DGSP_WALLET_PASSPHRASE_FILE", value_name = "FILE")]
    pub passphrase_file: Option<PathBuf>,
}

/// Member (wallet) commands.
#[derive(Debug, Subcommand)]
pub enum MemberCommand {
    /// Create a wallet from the join file the operator gave you (asks for a new passphrase).
    Keygen {
        /// the join file from `operator join --out`
        #[arg(long, value_name = "FILE")]
        join: PathBuf,
        /// which wallet
        #[command(flatten)]
        wallet: WalletArgs,
    },
    /// Prepare N one-time keys and write the certificate request to send to the operator.
    Csr {
        /// how many certificates to request (each signs exactly one message)
        #[arg(long, default_value_t = 10)]
        count: usize,
        /// CSR file to write
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// which wallet
        #[command(flatten)]
        wallet: WalletArgs,
    },
    /// Import the certificates file the operator sent back (each is checked first).
    Import {
        /// the certificates file from `operator issue`
        certificates: PathBuf,
        /// which wallet
        #[command(flatten)]
        wallet: WalletArgs,
    },
    /// Sign a file (or stdin with -) with an unused certificate. The certificate is marked
    /// used on disk before the signature is written, so it can never sign twice.
    Sign {
        /// the message file, or - for stdin
        message: PathBuf,
        /// where to write the signature (base64 text); stdout if absent
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// which wallet
        #[command(flatten)]
        wallet: WalletArgs,
    },
    /// Certificates left, used and pending.
    Status {
        /// which wallet
        #[command(flatten)]
        wallet: WalletArgs,
    },
}

/// Which gateway to ask.
#[derive(Debug, Clone, Args)]
pub struct GatewayArgs {
    /// Gateway base URL.
    #[arg(long, env = "DGSP_GATEWAY_URL", value_name = "URL")]
    pub gateway: Option<String>,
    /// timeout and retries
    #[command(flatten)]
    pub http: HttpArgs,
}

/// `verify`
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// the signed message (file, or - for stdin)
    #[arg(long, value_name = "FILE")]
    pub message: PathBuf,
    /// the signature file (base64 text or raw encoding)
    #[arg(long, value_name = "FILE")]
    pub signature: PathBuf,
    /// trust nothing the gateway says that can be checked, given this group key file: verify
    /// the signature here, the answer's signed checkpoint (group key, origin, --max-age,
    /// --clock-tolerance-ms), the snapshot it names (fetched by number: signature, number and
    /// record hash) and the revocation proof against it for the signature's own zeta; any
    /// failure is a negative verdict (exit 3) naming the check
    #[arg(long, value_name = "FILE")]
    pub group_key: Option<String>,
    /// with --group-key: the oldest acceptable checkpoint, in seconds (at least 1)
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_age: u64,
    /// with --group-key: how far, in milliseconds, the checkpoint's signed time may be ahead
    /// of this machine's clock; further ahead is refused (check `future_checkpoint`): one of
    /// the two clocks is wrong, and a note from the future says nothing about freshness
    #[arg(long, value_name = "MS", default_value_t = dgsp_verifier::evidence::DEFAULT_CLOCK_TOLERANCE_MS)]
    pub clock_tolerance_ms: u64,
    /// with --group-key: the lowest acceptable snapshot number (e.g. one you know includes a
    /// revocation)
    #[arg(long, value_name = "N", requires = "group_key")]
    pub min_snapshot: Option<u64>,
    /// with --group-key: a witness policy (C2SP tlog-policy, docs/witnesses.md) whose `log`
    /// line names the group's log key; the answer must then carry a witnessed checkpoint of
    /// the same tree that meets its quorum with cosignatures no older than --max-age (checks
    /// `witnessed_checkpoint`, `witness_quorum`)
    #[arg(long, value_name = "FILE", requires = "group_key")]
    pub witness_policy: Option<PathBuf>,
    /// with --witness-policy: the group key's statement naming its log key (as the
    /// registry's GET /v1/log/key serves it); the policy's log line must name that key
    #[arg(long, value_name = "FILE", requires = "witness_policy")]
    pub log_key_statement: Option<PathBuf>,
    /// shared options
    #[command(flatten)]
    pub gateway: GatewayArgs,
}

/// `judge`
#[derive(Debug, Args)]
pub struct JudgeArgs {
    /// the signed message (file, or - for stdin)
    #[arg(long, value_name = "FILE")]
    pub message: PathBuf,
    /// the signature file (base64 text or raw encoding)
    #[arg(long, value_name = "FILE")]
    pub signature: PathBuf,
    /// the member id the manager named
    #[arg(long)]
    pub id: u64,
    /// the opening proof the manager gave (base64 or hex)
    #[arg(long)]
    pub pi: String,
    /// judge locally against this group key file instead of asking a gateway (wins over
    /// --gateway / DGSP_GATEWAY_URL)
    #[arg(long, value_name = "FILE")]
    pub group_key: Option<PathBuf>,
    /// shared options
    #[command(flatten)]
    pub gateway: GatewayArgs,
}

/// `check-proof`
#[derive(Debug, Args)]
pub struct CheckProofArgs {
    /// the group public key file
    #[arg(long, value_name = "FILE")]
    pub group_key: PathBuf,
    /// the signed snapshot (JSON, as GET /v1/revocations/snapshots/{n} serves it)
    #[arg(long, value_name = "FILE")]
    pub snapshot: PathBuf,
    /// the zeta the proof is about (hex or base64url)
    #[arg(long)]
    pub zeta: String,
    /// the proof (file holding the JSON answer of GET /v1/revocations/{zeta}/proof, or
    /// the proof itself in base64)
    #[arg(long, value_name = "FILE")]
    pub proof: PathBuf,
}

/// `audit`
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// an export file (JSON Lines from `operator log export`) instead of a registry (wins
    /// over --registry / DGSP_REGISTRY_URL)
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// registry base URL to read the feed from
    #[arg(long, env = "DGSP_REGISTRY_URL", value_name = "URL")]
    pub registry: Option<String>,
    /// read the log as C2SP tlog-tiles instead of the feed: the base under which
    /// `checkpoint` and `tile/...` are served (a registry's http://HOST/v1/log, a static
    /// server or CDN over a published directory or bucket) or a local directory (a path or
    /// file://PATH). Checks every bundle and hash tile against the entries, the served
    /// checkpoint's signature and root, and the consistency proof between successive
    /// checkpoints; tiles carry no private parts (the member checks that need them are
    /// skipped)
    #[arg(long, value_name = "URL", conflicts_with = "file")]
    pub tiles: Option<String>,
    /// auditor (or admin) token: without it private parts are missing and the checks that
    /// need them are reported as skipped. On the command line other users can see it (a
    /// warning is printed): prefer $DGSP_AUDITOR_TOKEN, --token-file or the config file.
    /// Sources, first found wins: --token, $DGSP_AUDITOR_TOKEN, --token-file, the config
    /// file's auditor_token
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// file holding the auditor token: a regular file, not a symbolic link, that other users
    /// cannot access (chmod 600)
    #[arg(long, env = "DGSP_AUDITOR_TOKEN_FILE", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// pin the group: a key file or its 64-hex fingerprint (else entry 1 is trusted and its
    /// fingerprint printed; --compare requires it)
    #[arg(long, value_name = "KEY")]
    pub group_key: Option<String>,
    /// compare the views of these registries and gateways instead of replaying the log:
    /// each URL's GET /v1/checkpoint is verified under the group key (and its witnessed
    /// note under the log key), and every two views must be joined by a consistency proof
    /// (computed from the log source: --tiles, else --registry's /v1/log). Two views that
    /// no proof joins are a split_view, with both notes as evidence. `witness:PREFIX` names
    /// a witness instead (needs --witness-policy): GET PREFIX/<hex SHA-256(origin)>/checkpoint
    /// (a gateway with --witness-key serves it at PREFIX = <gateway URL>/witness), the newest
    /// checkpoint it cosigned, verified under the policy's log and witness keys, is one more
    /// view
    #[arg(long, value_name = "URL", num_args = 1.., conflicts_with = "file")]
    pub compare: Vec<String>,
    /// with --compare: a witness policy (C2SP tlog-policy, docs/witnesses.md) whose log
    /// line names the group's log key: every view must then serve a witnessed note
    /// cosigned by its quorum (no maximum age)
    #[arg(long, value_name = "FILE", requires = "compare")]
    pub witness_policy: Option<PathBuf>,
    /// timeout and retries
    #[command(flatten)]
    pub http: HttpArgs,
}
