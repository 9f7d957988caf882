//! `dgsp-sign-only`: reads one framed [`Request`](dgsp_signer_probe::Request) on stdin,
//! writes the signature's bytes on stdout. With `--memory` it also prints its own peak
//! resident set (`VmHWM`, Linux) on stderr as `vmhwm_kib=N` before exiting, whether it
//! signed or refused, which `dgsp-compare` reports as the signer's peak memory. With
//! `--time N` it then signs the same request N more times (decoding it each time, as a
//! wallet decodes its slot) and prints the median wall time of one as `sign_ns=T`: the same
//! binary natively and in WebAssembly, timed from inside. Exit status 1 and a reason on
//! stderr when the request is refused.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let memory = args.iter().any(|a| a == "--memory");
    let repeat = match args.iter().position(|a| a == "--time") {
        None => 0,
        Some(i) => match args.get(i + 1).and_then(|n| n.parse::<usize>().ok()) {
            Some(n) if n > 0 => n,
            _ => {
                eprintln!("dgsp-sign-only: --time takes a positive count");
                return ExitCode::FAILURE;
            }
        },
    };
    let signed = sign_stdin();
    if let (Some(input), true) = (&signed, repeat > 0) {
        let mut times: Vec<u128> = (0..repeat)
            .map(|_| {
                let start = Instant::now();
                let signed = dgsp_signer_probe::Request::decode(input)
                    .and_then(|r| dgsp_signer_probe::sign(&r));
                std::hint::black_box(signed.ok());
                start.elapsed().as_nanos()
            })
            .collect();
        times.sort_unstable();
        eprintln!("sign_ns={}", times[times.len() / 2]);
    }
    if memory {
        if let Some(kib) = peak_rss_kib() {
            eprintln!("vmhwm_kib={kib}");
        }
    }
    if signed.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Signs the request on stdin once, writing the signature on stdout; returns the input (for
/// `--time`) when it signed, `None` after saying why not on stderr.
fn sign_stdin() -> Option<Vec<u8>> {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("dgsp-sign-only: reading stdin: {e}");
        return None;
    }
    let signature = match dgsp_signer_probe::Request::decode(&input)
        .and_then(|r| dgsp_signer_probe::sign(&r))
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("dgsp-sign-only: {e}");
            return None;
        }
    };
    if let Err(e) = std::io::stdout().write_all(&signature) {
        eprintln!("dgsp-sign-only: writing stdout: {e}");
        return None;
    }
    Some(input)
}

/// `VmHWM` from `/proc/self/status`: the peak resident set of this process, in KiB.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
