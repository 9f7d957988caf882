//! The registry's wall clock, moved under it while it runs: libfaketime (Debian's
//! `libfaketime`) preloaded into the registry reads its offset from a file at every call
//! (`FAKETIME_TIMESTAMP_FILE`, `FAKETIME_NO_CACHE=1`), so rewriting the file jumps the
//! running process's clock forward or back. The monotonic clock is left alone
//! (`FAKETIME_DONT_FAKE_MONOTONIC=1`): timers and cadences keep real time, only the time
//! the registry writes into entries and signs into checkpoints moves.

use std::path::{Path, PathBuf};

/// Where Debian (and derivatives) install the library, tried in order when
/// `--faketime-lib` is not given.
pub const FAKETIME_CANDIDATES: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
];

/// Finds the library: the path given, else the first candidate that exists.
pub fn find_library(given: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = given {
        return if p.is_file() {
            Ok(p.to_owned())
        } else {
            Err(format!("--faketime-lib {}: no such file", p.display()))
        };
    }
    FAKETIME_CANDIDATES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "libfaketime not found (looked at {}): install Debian's 'libfaketime' package \
                 (scripts/chaos.sh does) or pass --faketime-lib",
                FAKETIME_CANDIDATES.join(", ")
            )
        })
}

/// The offset of the registry's clock from the real one.
pub struct Clock {
    file: PathBuf,
    library: PathBuf,
}

impl Clock {
    /// A clock at offset 0, its file written.
    pub fn new(file: PathBuf, library: PathBuf) -> Result<Self, String> {
        let c = Clock { file, library };
        c.set_ms(0)?;
        Ok(c)
    }

    /// The environment that puts a process on this clock.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), self.library.display().to_string()),
            (
                "FAKETIME_TIMESTAMP_FILE".into(),
                self.file.display().to_string(),
            ),
            ("FAKETIME_NO_CACHE".into(), "1".into()),
            ("FAKETIME_DONT_FAKE_MONOTONIC".into(), "1".into()),
        ]
    }

    /// Moves the clock to `offset_ms` from real time (written to a temporary file and
    /// renamed, so the library never reads half a line).
    pub fn set_ms(&self, offset_ms: i64) -> Result<(), String> {
        let sign = if offset_ms < 0 { '-' } else { '+' };
        let abs = offset_ms.unsigned_abs();
        let text = format!("{sign}{}.{:03}\n", abs / 1000, abs % 1000);
        let tmp = self.file.with_extension("tmp");
        std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &self.file).map_err(|e| format!("{}: {e}", self.file.display()))
    }
}
