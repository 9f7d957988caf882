//! A gateway replica whose latest signed snapshot covers N random revoked zetas, for
//! measuring the real `dgsp-gateway` process on it (docs/benchmarks.md, "The revoked set at
//! 10^8"; `scripts/measure-gateway-rss.sh` runs the whole measurement).
//!
//! ```text
//! cargo run --release -p dgsp-gateway --example replica_rss -- write --out DIR --zetas N [--seed S]
//! ```
//!
//! `write` makes a throwaway group (a fresh manager key, `sha2-128f`, the registry's default)
//! and writes, through the gateway's own [`Replica`] API only:
//! - `DIR/group.pub`: the group public key, as `dgsp-registry public-key` prints it (what
//!   `--group-key` pins);
//! - `DIR/data/replica`: the replica a gateway with `--data DIR/data` resumes from: the group
//!   pinned; a log of `R + 2` entries (`R = ceil(N / 1024)`: entry 1 the group's creation,
//!   entries 2..=R+1 revocations of 1024 zetas each, entry R+2 the snapshot), stored as the
//!   follower stores an applied range (the entries' hashes and the Merkle tree's tile-level
//!   hashes, [`Replica::commit`]); the checkpoint note over that tree, signed by the group key
//!   now and naming the snapshot; the N zetas in the `zetas` column (`zeta -> be64 seq` of
//!   the revocation entry that revoked it, the entries taking the zetas in turn, so each
//!   entry's zetas are spread over the key space as a member's are); and snapshot 1, signed
//!   by the group key, whose root and count are those of [`RevocationSet`] over the N zetas.
//!   The entries are synthetic (their leaf is the hash of a label, not of a registry entry):
//!   a gateway never reads entries back at start, it checks the note's signature and root
//!   against the stored tree and rebuilds the set from the zetas against the snapshot
//!   ([`dgsp_gateway::state::View::resume`]).
//!
//! The zetas are drawn already in ascending order (exponential spacings of the top 64 bits,
//! the low 64 bits uniform: an ordered uniform sample, no sort needed) from a seeded
//! generator, twice: once into one vector the set is built from (for its root and count;
//! the set then freed), once again in batches of 2^20, each written by [`Replica::commit`]
//! as a range of no new entries that adds revocations (the last one adds the snapshot). The
//! tool's memory is bounded by the set (~17 B per zeta), not by the write.
//!
//! The replica is then opened once more and closed, so that RocksDB replays its write-ahead
//! log and flushes it to table files in this process, not at the measured gateway's start.
//!
//! It prints one JSON line: where it wrote, the counts, a revoked zeta and an absent one to
//! ask the gateway about, its own peak memory and timings.
//!
//! The gateway's answers about those zetas are checked offline with `dgsp-manager
//! check-proof` (the script does it).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use clap::{Parser, Subcommand};
use dgsp_core::checkpoint::{origin_for, Checkpoint, SnapshotRef};
use dgsp_core::revocation::{RevocationSet, SnapshotRecord};
use dgsp_core::{Manager, ParamSet, Zeta};
use dgsp_gateway::replica::{Applied, Replica, Update};
use dgsp_wire::log::Hash;
use dgsp_wire::merkle::{leaf_hash, node_hash, Frontier};
use rand_core::{OsRng, RngCore};
use serde_json::json;

/// Zetas per revocation entry of the synthetic log.
const ZETAS_PER_ENTRY: u64 = 1024;
/// Zetas per write ([`Replica::commit`] of one batch).
const BATCH: usize = 1 << 20;

#[derive(Parser)]
#[command(about = "A gateway replica whose signed snapshot covers N revoked zetas")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Writes DIR/group.pub and the replica DIR/data/replica (DIR/data must not exist).
    Write {
        /// The directory to write into.
        #[arg(long)]
        out: PathBuf,
        /// Revoked zetas.
        #[arg(long)]
        zetas: u64,
        /// The generator's seed (default: random; printed).
        #[arg(long)]
        seed: Option<u64>,
    },
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Write { out, zetas, seed } => write(&out, zetas, seed),
    };
    match result {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// SplitMix64: a small seeded generator (the zetas need to be uniform, not secret).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// `n` uniform random zetas in strictly ascending order: the top 64 bits advance by
/// exponential spacings (at least 1) whose mean leaves ten standard deviations of room
/// below 2^64, the low 64 bits are uniform.
struct SortedZetas {
    rng: SplitMix,
    high: u64,
    mean: f64,
    left: u64,
}

impl SortedZetas {
    fn new(seed: u64, n: u64) -> Self {
        let n_f = n as f64;
        SortedZetas {
            rng: SplitMix(seed),
            high: 0,
            mean: 2f64.powi(64) / (n_f + 10.0 * n_f.sqrt() + 10.0),
            left: n,
        }
    }
}

impl Iterator for SortedZetas {
    type Item = Zeta;

    fn next(&mut self) -> Option<Zeta> {
        self.left = self.left.checked_sub(1)?;
        // In (0, 1]: 53 random bits, never 0.
        let u = ((self.rng.next() >> 11) + 1) as f64 / (1u64 << 53) as f64;
        let step = ((-u.ln()) * self.mean) as u64;
        self.high = self
            .high
            .checked_add(step.max(1))
            .expect("the spacings passed 2^64 (about 1e-23 likely): run again with another --seed");
        let mut z = [0u8; 16];
        z[..8].copy_from_slice(&self.high.to_be_bytes());
        z[8..].copy_from_slice(&self.rng.next().to_be_bytes());
        Some(Zeta(z))
    }
}

/// The process's `VmHWM` / `VmRSS` in kB.
fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn write(out: &Path, n: u64, seed: Option<u64>) -> Result<String, String> {
    let t0 = Instant::now();
    let data = out.join("data");
    if data.exists() {
        return Err(format!("{} exists: give a new --out", data.display()));
    }
    let seed = seed.unwrap_or_else(|| OsRng.next_u64());
    let manager = Manager::generate(ParamSet::Sha2_128f, &mut OsRng);
    let pk = manager.public_key().clone();

    // Pass 1: the set, for the snapshot's root and count.
    let len = usize::try_from(n).map_err(|_| "--zetas does not fit this machine")?;
    let mut zetas = Vec::with_capacity(len);
    zetas.extend(SortedZetas::new(seed, n));
    let revoked_probe = zetas.get(len / 2).copied();
    let generated_s = t0.elapsed().as_secs_f64();
    let set = RevocationSet::from_sorted_vec(zetas).map_err(|e| e.to_string())?;
    let set_s = t0.elapsed().as_secs_f64() - generated_s;
    let set_bytes = set.memory_bytes();
    let absent_probe = loop {
        let mut z = [0u8; 16];
        OsRng.fill_bytes(&mut z);
        if !set.contains(&Zeta(z)) {
            break Zeta(z);
        }
    };
    let (count, root) = (set.len(), set.root());
    drop(set);
    if count != n {
        return Err(format!("the set holds {count} zetas, {n} were drawn"));
    }

    // The synthetic log: entry 1 the group, 2..=R+1 the revocations, R+2 the snapshot.
    let revocations = n.div_ceil(ZETAS_PER_ENTRY).max(1);
    let entries = revocations + 2;
    let log_seq = revocations + 1;
    let time = now_ms();
    let record = SnapshotRecord::genesis(pk.fingerprint(), log_seq, count, root, time);
    let snapshot = manager.sign_snapshot(&record);
    snapshot
        .verify(&pk)
        .map_err(|e| format!("the snapshot just signed: {e}"))?;
    let mut tree = Frontier::new();
    let (mut hashes, mut leaves) = (Vec::new(), Vec::new());
    let mut chain: Hash = [0u8; 32];
    for seq in 1..=entries {
        let leaf = leaf_hash(format!("replica_rss synthetic entry {seq}").as_bytes());
        chain = node_hash(&chain, &leaf);
        tree.push(leaf);
        leaves.push(leaf);
        hashes.push((seq, chain));
    }
    let checkpoint = Checkpoint {
        origin: origin_for(&pk),
        size: entries,
        root: tree.root(),
        time_unix_ms: Some(time),
        snapshot: Some(SnapshotRef::of(&record)),
    };
    let note = manager.sign_checkpoint(&checkpoint);
    pk.verify_checkpoint(&note)
        .map_err(|e| format!("the note just signed: {e}"))?;
    let applied = Applied {
        seq: entries,
        hash: chain,
        time_ms: time,
    };

    // The replica, as the gateway would open it.
    dgsp_secrets::dir::create_private(&data).map_err(|e| format!("{}: {e}", data.display()))?;
    let t_write = Instant::now();
    let replica = Replica::open(&data.join("replica")).map_err(|e| e.to_string())?;
    replica.pin_group(&pk).map_err(|e| e.to_string())?;
    let range = |revocations: Vec<(Zeta, u64)>, last: bool| Update {
        hashes: Vec::new(),
        leaves: Vec::new(),
        tree: tree.clone(),
        applied,
        revocations,
        snapshots: if last {
            vec![Arc::new(snapshot.clone())]
        } else {
            Vec::new()
        },
        checkpoint: note.clone(),
        witnessed: None,
    };
    replica
        .commit(&Update {
            hashes,
            leaves,
            ..range(Vec::new(), n == 0)
        })
        .map_err(|e| format!("the log: {e}"))?;
    // Pass 2: the same zetas, written in order, a batch per commit.
    let mut again = SortedZetas::new(seed, n).zip(0u64..).peekable();
    let mut written = 0u64;
    let mut same_probe = revoked_probe.is_none();
    while again.peek().is_some() {
        let batch: Vec<(Zeta, u64)> = again
            .by_ref()
            .take(BATCH)
            .map(|(z, i)| {
                if i == n / 2 {
                    same_probe = revoked_probe == Some(z);
                }
                (z, 2 + i % revocations)
            })
            .collect();
        written += batch.len() as u64;
        let last = again.peek().is_none();
        replica
            .commit(&range(batch, last))
            .map_err(|e| format!("zetas: {e}"))?;
    }
    drop(replica);
    if written != n || !same_probe {
        return Err("the second pass did not draw the same zetas".into());
    }
    // Opened once more and closed: RocksDB replays the write-ahead log into memtables at
    // open and flushes them to table files, here rather than in the gateway measured (the
    // last writes, up to a memtable's 64 MiB per column family, would otherwise be
    // replayed at its start, as after any gateway's last writes before a restart).
    drop(Replica::open(&data.join("replica")).map_err(|e| e.to_string())?);
    let write_s = t_write.elapsed().as_secs_f64();
    let group_key = out.join("group.pub");
    std::fs::write(&group_key, format!("{}\n", B64.encode(pk.to_bytes())))
        .map_err(|e| format!("{}: {e}", group_key.display()))?;
    Ok(json!({
        "out": out,
        "data": data,
        "group_key": group_key,
        "params": manager.params().name(),
        "zetas": n,
        "seed": seed,
        "entries": entries,
        "snapshot": { "number": 1, "log_seq": log_seq, "count": count, "root": hex::encode(root) },
        "revoked_probe": revoked_probe.map(|z| hex::encode(z.as_bytes())),
        "absent_probe": hex::encode(absent_probe.as_bytes()),
        "set_memory_bytes": set_bytes,
        "generate_s": round(generated_s),
        "set_s": round(set_s),
        "write_s": round(write_s),
        "tool_vm_hwm_kb": status_kb("VmHWM:"),
    })
    .to_string())
}

fn round(s: f64) -> f64 {
    (s * 100.0).round() / 100.0
}
