//! `dgsp-sign-only`: reads one framed [`Request`](dgsp_signer_probe::Request) on stdin,
//! writes the signature's bytes on stdout. With `--memory` it also prints its own peak
//! resident set (`VmHWM`, Linux) on stderr as `vmhwm_kib=N` before exiting, whether it
//! signed or refused, which `dgsp-compare` reports as the signer's peak memory. Exit status 1
//! and a reason on stderr when the request is refused.

use std::io::{Read, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let memory = std::env::args().skip(1).any(|a| a == "--memory");
    let status = sign_stdin();
    if memory {
        if let Some(kib) = peak_rss_kib() {
            eprintln!("vmhwm_kib={kib}");
        }
    }
    status
}

fn sign_stdin() -> ExitCode {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("dgsp-sign-only: reading stdin: {e}");
        return ExitCode::FAILURE;
    }
    let signature = match dgsp_signer_probe::Request::decode(&input)
        .and_then(|r| dgsp_signer_probe::sign(&r))
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("dgsp-sign-only: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = std::io::stdout().write_all(&signature) {
        eprintln!("dgsp-sign-only: writing stdout: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// `VmHWM` from `/proc/self/status`: the peak resident set of this process, in KiB.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
