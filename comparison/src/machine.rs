//! The machine a run measured on: CPU model and the instruction-set features the contenders'
//! fast paths use, cores, memory, OS, compiler and build profile.

use serde::Serialize;

/// What the report prints about the machine.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Machine {
    /// `/proc/cpuinfo`'s model name.
    pub cpu: String,
    /// Features detected at run time (SHA-NI, AES-NI, AVX2, AVX-512, ADX, BMI2, ...).
    pub features: Vec<&'static str>,
    /// The hash kernels dgsp-core selected on this CPU.
    pub dgsp_kernels: String,
    /// Cores this process may use.
    pub cores: usize,
    /// Total memory, as `/proc/meminfo` says.
    pub memory: String,
    /// Kernel release.
    pub os: String,
    /// `rustc -V` of the toolchain on the PATH.
    pub rustc: String,
    /// `release` or `debug` (the build of this program).
    pub profile: &'static str,
    /// `/proc/loadavg`'s 1-minute load when the run started (other processes compete for
    /// the cores: the intervals show the noise, this says how busy the machine was).
    pub load_at_start: Option<f64>,
}

impl Machine {
    /// Reads everything now.
    pub fn detect() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = field(&cpuinfo, "model name").unwrap_or_else(|| "unknown CPU".into());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory = field(&meminfo, "MemTotal")
            .and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| format!("{:.1} GiB", kib as f64 / (1024.0 * 1024.0)))
            .unwrap_or_else(|| "unknown".into());
        let os = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| format!("Linux {}", s.trim()))
            .unwrap_or_else(|_| std::env::consts::OS.into());
        let rustc = std::process::Command::new("rustc")
            .arg("-V")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        Machine {
            cpu,
            features: features(),
            dgsp_kernels: dgsp_core::hazmat::cpu_features_used(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory,
            os,
            rustc,
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
            load_at_start: load_average(),
        }
    }

    /// One line: `AMD EPYC, 2 cores, 23.4 GiB; sha aes avx2 ...`.
    pub fn summary(&self) -> String {
        format!(
            "{}, {} cores, {}; {}",
            self.cpu,
            self.cores,
            self.memory,
            self.features.join(" ")
        )
    }
}

/// The 1-minute load average now.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn field(text: &str, name: &str) -> Option<String> {
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

#[cfg(target_arch = "x86_64")]
fn features() -> Vec<&'static str> {
    let mut out = Vec::new();
    macro_rules! probe {
        ($($f:tt),*) => {$(
            if std::arch::is_x86_feature_detected!($f) {
                out.push($f);
            }
        )*};
    }
    probe!(
        "sse4.2",
        "aes",
        "pclmulqdq",
        "sha",
        "avx2",
        "bmi2",
        "adx",
        "avx512f",
        "avx512vl",
        "avx512ifma",
        "vaes",
        "gfni"
    );
    out
}

#[cfg(not(target_arch = "x86_64"))]
fn features() -> Vec<&'static str> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_something() {
        let m = Machine::detect();
        assert!(m.cores >= 1);
        assert!(!m.dgsp_kernels.is_empty());
        assert!(m.summary().contains("cores"));
        assert_eq!(
            field("model name\t: X Y\nflags: a", "model name"),
            Some("X Y".into())
        );
    }
}
