//! The command line: what a run does, and the line that runs its schedule again.

use std::path::{Path, PathBuf};

use clap::Parser;
use dgsp_core::ParamSet;

use crate::processes::Settings;

/// The chaos suite: the real registry and gateways under concurrent clients with
/// disconnects and retries, SIGKILLs, restarts and clock jumps; then the invariants.
#[derive(Debug, Parser)]
#[command(name = "dgsp-chaos", version, about)]
pub struct Args {
    /// Directory holding dgsp-registry, dgsp-gateway and dgsp-manager (default: this
    /// program's own directory, the cargo target's debug or release directory).
    #[arg(long, env = "DGSP_CHAOS_BIN_DIR")]
    pub bin_dir: Option<PathBuf>,
    /// Seed of every decision the run makes (default: random; always printed).
    #[arg(long, env = "DGSP_CHAOS_SEED")]
    pub seed: Option<u64>,
    /// Length of the chaos phase in seconds (setup, quiescing and the checks come on top).
    #[arg(long, env = "DGSP_CHAOS_SECONDS", default_value_t = 120,
          value_parser = clap::value_parser!(u64).range(10..=86_400))]
    pub duration_secs: u64,
    /// Parameter set of the group.
    #[arg(long, default_value = "sha2-128f")]
    pub params: ParamSet,
    /// Gateways following the registry.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=8))]
    pub gateways: u64,
    /// Members joined (with one certificate each) before the chaos starts.
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u64).range(2..=10_000))]
    pub members: u64,
    /// The registry's --checkpoint-interval-secs (the cadence).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=60))]
    pub checkpoint_interval_secs: u64,
    /// The gateways' --poll-ms.
    #[arg(long, default_value_t = 200)]
    pub poll_ms: u64,
    /// The gateways' --max-staleness-secs.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub max_staleness_secs: u64,
    /// How far ahead a signed time may be, and behind the last one the registry's clock may
    /// fall, in seconds (the services' tolerance).
    #[arg(long, default_value_t = 5)]
    pub clock_tolerance_secs: u64,
    /// Allowance on top of one cadence plus one poll for a gateway to reach the registry's
    /// latest checkpoint after quiescing, in ms (the gateway verifies a SPHINCS+ note and
    /// the entries on a shared machine).
    #[arg(long, default_value_t = 2000)]
    pub catch_up_grace_ms: u64,
    /// The libfaketime library (default: Debian's path).
    #[arg(long, env = "DGSP_FAKETIME_LIB")]
    pub faketime_lib: Option<PathBuf>,
    /// Where the group, the replicas and the logs go (default: a new directory under the
    /// temporary directory; kept when the run fails).
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// Keep the state directory even when the run passes.
    #[arg(long)]
    pub keep_state: bool,
    /// The journal scenario (docs/chaos.md): a writer and a standby on one bucket of the
    /// tests' SeaweedFS (`scripts/s3.sh`), each through a fault proxy of the suite's own
    /// (delay, hang, drop, 503), behind one front; the writer frozen past its lease and
    /// thawed, either one SIGKILLed; no clock faults. Without it: one registry, no journal.
    #[arg(long)]
    pub journal: bool,
    /// The journal scenario's --lease-ttl-ms of the registries.
    #[arg(long, default_value_t = 3000, value_parser = clap::value_parser!(u64).range(500..=60_000))]
    pub lease_ttl_ms: u64,
}

impl Args {
    /// The command line that runs this schedule again.
    pub fn reproduce(&self, seed: u64, bin_dir: &Path) -> String {
        let me = std::env::current_exe()
            .map_or_else(|_| "dgsp-chaos".into(), |p| p.display().to_string());
        let journal = if self.journal {
            format!(" --journal --lease-ttl-ms {}", self.lease_ttl_ms)
        } else {
            String::new()
        };
        format!(
            "{me} --bin-dir {} --seed {seed} --duration-secs {} --params {} \
             --gateways {} --members {} --checkpoint-interval-secs {} --poll-ms {} --max-staleness-secs {} \
             --clock-tolerance-secs {} --catch-up-grace-ms {}{journal}",
            bin_dir.display(),
            self.duration_secs,
            self.params,
            self.gateways,
            self.members,
            self.checkpoint_interval_secs,
            self.poll_ms,
            self.max_staleness_secs,
            self.clock_tolerance_secs,
            self.catch_up_grace_ms
        )
    }

    /// The services' settings.
    pub fn settings(&self) -> Settings {
        Settings {
            cadence_secs: self.checkpoint_interval_secs,
            poll_ms: self.poll_ms,
            max_staleness_secs: self.max_staleness_secs,
            clock_tolerance_ms: self.clock_tolerance_secs * 1000,
            lease_ttl_ms: self.journal.then_some(self.lease_ttl_ms),
        }
    }
}
