//! The revoked set at scale (issue 30, item 3): resident bytes per zeta, the time to apply
//! one member's revocation, and the transient growth of a revocation at the certificate cap,
//! each size measured in a fresh child process so one size's peak never hides another's.
//!
//! ```text
//! cargo run --release -p dgsp-core --example revset_memory -- 1000000 10000000 100000000
//! ```
//!
//! Arguments: the sizes N to measure (default 10^6 and 10^7); `--no-cap` skips the
//! revocation at the certificate cap; `--worn R` applies R revocations of N/1000 zetas each
//! (through clones, as the gateway does) before it, so the members at the cap meet a set
//! whose buckets hold zetas of several versions. For each N the program runs itself again as a child
//! (`--child N`), which:
//!
//! 1. builds the set of N random zetas (ChaCha20, seed N) as the gateway does at start
//!    (`RevocationSet::from_zetas` over a `Vec`), drops the input, and reads `VmRSS` and
//!    `VmHWM` from `/proc/self/status` (Linux): **resident bytes per zeta** is the growth
//!    of `VmRSS` over the process before the build, divided by N; the peak includes the
//!    input vector (16 bytes per zeta) and the sort;
//! 2. applies one member's revocation the way the gateway's follower does
//!    (`gateway/src/follower/apply.rs`): clone the served set, insert the member's zetas into
//!    the clone, compute the root, both sets alive until the clone replaces the served one.
//!    Members of 8, 64 and 1024 random zetas (fresh ones each time), 7 applies each from
//!    the same served set; it prints the median and the slowest;
//! 3. times `prove(z).to_bytes()` for 1001 revoked and 1001 absent zetas (median, and the
//!    mean proof size);
//! 4. applies one member at the certificate cap (the registry's `MAX_CERTIFICATES_PER_MEMBER`,
//!    2^20 zetas: every bucket touched), once, with the peak reset just before
//!    (`/proc/self/clear_refs` = 5): the **transient growth** is the peak's growth over the
//!    `VmRSS` before the apply, as a share of the set's resident bytes from step 1; then a
//!    second one from the first one's result (whose new zetas the next version shares).
//!
//! The parent prints each child's lines as they come and a summary table at the end.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dgsp_core::revocation::RevocationSet;
use dgsp_core::Zeta;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// Members' sizes for the apply time (zetas per revocation).
const MEMBERS: [usize; 3] = [8, 64, 1024];
/// Applies per member size.
const REPEATS: usize = 7;
/// One member at the certificate cap (`dgsp_registry::writer::MAX_CERTIFICATES_PER_MEMBER`).
const CAP: usize = 1 << 20;

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `n` random zetas, made in place (no second buffer: the build's peak is the set's).
fn random_zetas(rng: &mut ChaCha20Rng, n: usize) -> Vec<Zeta> {
    let mut zetas = vec![Zeta([0; 16]); n];
    for z in &mut zetas {
        rng.fill_bytes(&mut z.0);
    }
    zetas
}

/// Resets `VmHWM` to the current `VmRSS` (Linux 4.0+); false where it is not allowed.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// What the follower does for one revocation: clone the served set, insert, root; the clone
/// is returned so the caller decides when the served set goes.
fn apply(served: &RevocationSet, zetas: &[Zeta]) -> (RevocationSet, Duration) {
    let t = Instant::now();
    let mut next = served.clone();
    next.insert(zetas);
    std::hint::black_box(next.root());
    (next, t.elapsed())
}

/// Median time of `prove` + `to_bytes` for revoked and for absent zetas (the gateway's proof
/// answer), with the proof sizes.
fn prove_times(n: usize, set: &RevocationSet, rng: &mut ChaCha20Rng) {
    let absent = random_zetas(rng, 1001);
    let revoked: Vec<Zeta> = set.iter().step_by((n / 1001).max(1)).copied().collect();
    for (kind, zetas) in [("inclusion", &revoked), ("non_membership", &absent)] {
        let mut times = Vec::with_capacity(zetas.len());
        let mut bytes = 0;
        for z in zetas.iter() {
            let t = Instant::now();
            let proof = std::hint::black_box(set.prove(z).to_bytes());
            times.push(t.elapsed());
            bytes += proof.len();
        }
        times.sort();
        println!(
            "RESULT n={n} prove={kind} median_us={:.1} mean_bytes={:.0}",
            times[times.len() / 2].as_secs_f64() * 1e6,
            bytes as f64 / zetas.len().max(1) as f64,
        );
    }
}

fn child(n: usize, cap: bool, worn: usize) {
    let mut rng = ChaCha20Rng::seed_from_u64(n as u64);
    let rss_before = status_kib("VmRSS:");
    let t = Instant::now();
    let served = RevocationSet::from_zetas(random_zetas(&mut rng, n));
    let built = t.elapsed();
    let (rss, peak) = (status_kib("VmRSS:"), status_kib("VmHWM:"));
    let resident = rss.saturating_sub(rss_before) * 1024;
    println!(
        "RESULT n={n} build_s={:.2} rss_mib={:.1} peak_mib={:.1} resident_b_per_zeta={:.2} \
         memory_bytes_per_zeta={:.2}",
        built.as_secs_f64(),
        mib(rss),
        mib(peak),
        resident as f64 / n as f64,
        served.memory_bytes() as f64 / n as f64,
    );
    for k in MEMBERS {
        let mut times = Vec::with_capacity(REPEATS);
        let mut grow = 0;
        for _ in 0..REPEATS {
            let zetas = random_zetas(&mut rng, k);
            let base = status_kib("VmRSS:");
            let reset = reset_peak();
            let (next, took) = apply(&served, &zetas);
            if reset {
                grow = grow.max(status_kib("VmHWM:").saturating_sub(base));
            }
            assert_eq!(next.len(), served.len() + k as u64, "random zetas collided");
            times.push(took);
        }
        times.sort();
        println!(
            "RESULT n={n} member={k} apply_median_ms={:.2} apply_max_ms={:.2} peak_growth_mib={:.1}",
            ms(times[REPEATS / 2]),
            ms(times[REPEATS - 1]),
            mib(grow),
        );
    }
    prove_times(n, &served, &mut rng);
    let mut served = served;
    if worn > 0 {
        // Wear the set the way a gateway's would be after a while: `worn` revocations of
        // N/1000 zetas each, every one through a clone of the served set (so each lands
        // beside zetas another version shares, and later ones compact).
        let t = Instant::now();
        for _ in 0..worn {
            let zetas = random_zetas(&mut rng, (n / 1000).max(1));
            served = apply(&served, &zetas).0;
        }
        println!(
            "RESULT n={n} worn_rounds={worn} of={} worn_s={:.1} rss_mib={:.1}",
            (n / 1000).max(1),
            t.elapsed().as_secs_f64(),
            mib(status_kib("VmRSS:")),
        );
    }
    if cap {
        // Two members at the cap in a row: the second starts from the first one's result
        // (its new zetas still beside the shared ones).
        for which in ["first", "second"] {
            let zetas = random_zetas(&mut rng, CAP);
            let base = status_kib("VmRSS:");
            let reset = reset_peak();
            let (next, took) = apply(&served, &zetas);
            let both = status_kib("VmRSS:");
            let peak = status_kib("VmHWM:");
            let growth = peak.saturating_sub(base) * 1024;
            println!(
                "RESULT n={n} member={CAP} ({which}) apply_ms={:.1} rss_before_mib={:.1} \
                 rss_both_mib={:.1} peak_growth_mib={:.1} transient_growth_pct={:.1} \
                 peak_reset={reset}",
                ms(took),
                mib(base),
                mib(both),
                mib(peak.saturating_sub(base)),
                100.0 * growth as f64 / resident.max(1) as f64,
            );
            served = next;
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cap = !args.iter().any(|a| a == "--no-cap");
    let worn: usize = args
        .iter()
        .position(|a| a == "--worn")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(0);
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let n = args
            .get(i + 1)
            .and_then(|a| a.parse().ok())
            .expect("--child N");
        child(n, cap, worn);
        return;
    }
    let mut sizes: Vec<usize> = args
        .iter()
        .enumerate()
        .filter(|(i, _)| *i == 0 || args[i - 1] != "--worn")
        .filter_map(|(_, a)| a.parse().ok())
        .collect();
    if sizes.is_empty() {
        sizes = vec![1_000_000, 10_000_000];
    }
    let exe = std::env::current_exe().expect("own executable");
    let mut results = Vec::new();
    for n in sizes {
        let mut cmd = Command::new(&exe);
        cmd.arg("--child").arg(n.to_string()).stdout(Stdio::piped());
        if !cap {
            cmd.arg("--no-cap");
        }
        if worn > 0 {
            cmd.arg("--worn").arg(worn.to_string());
        }
        let mut child = cmd.spawn().expect("spawn the child");
        let out = child.stdout.take().expect("piped stdout");
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            println!("{line}");
            results.push(line);
        }
        let status = child.wait().expect("wait for the child");
        if !status.success() {
            eprintln!("child for n={n} failed: {status}");
        }
    }
    println!("\nsummary:");
    for line in results {
        println!("  {}", line.trim_start_matches("RESULT "));
    }
}
