//! The gateway's thread layout: how many threads serve HTTP (the tokio runtime) and how many
//! verify (the pool), sized together from the cores this process may use.
//!
//! "Cores" is [`std::thread::available_parallelism`], which on Linux honours the CPU
//! affinity mask (`taskset`, cpusets) and cgroup CPU quotas (a Kubernetes `limits.cpu` of 4
//! gives 4), rounded down, at least 1. Both counts can be set explicitly
//! (`--http-threads`, `--workers`).
//!
//! The default gives every core to verification and a quarter of them (at least one) to
//! HTTP: a verify costs ~5× (sha2-128f) to ~10× (shake-256f) the CPU of reading its request
//! and writing the answer, so more HTTP threads only add runnable threads that compete for
//! the same cores (docs/gateway.md, "Thread layout"; numbers in docs/benchmarks.md).

/// Threads of each kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The cores this process may use.
    pub cores: usize,
    /// tokio runtime worker threads (HTTP, the follower).
    pub http_threads: usize,
    /// Verification pool threads.
    pub verify_workers: usize,
}

impl Layout {
    /// The layout for `cores` cores with explicit counts where non-zero.
    pub fn for_cores(cores: usize, http_threads: usize, verify_workers: usize) -> Layout {
        let cores = cores.max(1);
        Layout {
            cores,
            http_threads: match http_threads {
                0 => cores.div_ceil(4),
                n => n,
            },
            verify_workers: match verify_workers {
                0 => cores,
                n => n,
            },
        }
    }

    /// The layout for the cores available to this process.
    pub fn detect(http_threads: usize, verify_workers: usize) -> Layout {
        Layout::for_cores(available_cores(), http_threads, verify_workers)
    }
}

/// The cores this process may use (affinity and cgroup quota honoured), at least 1.
fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} cores: {} HTTP threads, {} verify workers",
            self.cores, self.http_threads, self.verify_workers
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Layout;

    #[test]
    fn defaults_scale_with_the_cores_and_explicit_counts_win() {
        assert_eq!(
            Layout::for_cores(1, 0, 0),
            Layout {
                cores: 1,
                http_threads: 1,
                verify_workers: 1
            }
        );
        let l = Layout::for_cores(16, 0, 0);
        assert_eq!((l.http_threads, l.verify_workers), (4, 16));
        let l = Layout::for_cores(2, 0, 0);
        assert_eq!((l.http_threads, l.verify_workers), (1, 2));
        let l = Layout::for_cores(0, 3, 5);
        assert_eq!((l.cores, l.http_threads, l.verify_workers), (1, 3, 5));
    }
}
