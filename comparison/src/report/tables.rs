//! The Markdown tables of a run.

use std::fmt::Write as _;

use crate::device::Device;
use crate::format::{estimate, grouped, time_ns};
use crate::machine::Machine;
use crate::measure::Estimate;
use crate::results::{Kind, Row, Sweep};
use crate::scale;
use crate::schemes::{dgsp, sphincs};

fn est(e: Option<&Estimate>) -> String {
    e.map(estimate).unwrap_or_else(|| "—".into())
}

fn b(n: usize) -> String {
    grouped(n as u64)
}

/// The machine, the run and how it was measured, as a bullet list.
pub fn machine(m: &Machine, command: &str, date: &str, seconds: f64, budget: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "- **CPU**: {} ({} cores usable, {} memory)",
        m.cpu, m.cores, m.memory
    );
    let _ = writeln!(
        s,
        "- **CPU features used by the contenders**: {}",
        m.features.join(", ")
    );
    let _ = writeln!(s, "- **dgsp-core hash kernels**: {}", m.dgsp_kernels);
    let _ = writeln!(
        s,
        "- **OS / compiler / build**: {}, {}, {} profile",
        m.os, m.rustc, m.profile
    );
    let _ = writeln!(
        s,
        "- **Command**: `{command}` ({date}, {:.0} s wall)",
        seconds
    );
    if let Some(load) = m.load_at_start {
        let _ = writeln!(
            s,
            "- **Load**: 1-minute load average {load:.2} at the start (the machine is shared: \
             other processes' load shows in the intervals)"
        );
    }
    let _ = writeln!(s, "- **Sampling**: {budget}");
    s
}

/// The rows of the headline table, in order: present ones only.
fn headline_rows(rows: &[Row]) -> Vec<&Row> {
    let wanted: [(&str, &str); 12] = [
        ("Ed25519", "RFC 8032"),
        ("ECDSA", "P-256, SHA-256"),
        ("BLS", "BLS12-381 min-pk"),
        ("ML-DSA", "ML-DSA-44"),
        ("ML-DSA", "ML-DSA-65"),
        ("BBS", "BLS12-381-SHA-256"),
        ("SPHINCS+", "sha2-128f"),
        ("SLH-DSA", "slh-dsa-sha2-128f"),
        ("DGSP", "sha2-128f"),
        ("DGSP", "slh-dsa-sha2-128f"),
        ("DGSP", "shake-256f"),
        ("dgsp 0.1.2", "shake-256f"),
    ];
    wanted
        .iter()
        .filter_map(|(s, v)| rows.iter().find(|r| r.scheme == *s && r.variant == *v))
        .collect()
}

/// The headline table: sizes and the three times of the named schemes and of DGSP and the
/// raw hash-based signature on the 128f sets (and shake-256f, the reference's set).
pub fn headline(rows: &[Row]) -> String {
    let mut s = String::from(
        "| scheme | kind | public key | signer's secret | signature | keygen | sign | verify | DGSP offline part, per signature |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in headline_rows(rows) {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.label(),
            r.kind.describe(),
            b(r.sizes.public_key),
            b(r.sizes.secret_key),
            b(r.sizes.signature),
            estimate(&r.keygen),
            estimate(&r.sign),
            estimate(&r.verify),
            est(r.extra(dgsp::op::OFFLINE)),
        );
    }
    s.push_str(
        "\nSizes in bytes. Times: mean per call ±half-width of its 95 % confidence interval, one \
         thread. DGSP: keygen is the group manager's, the signer's secret is the member key (each \
         signature also takes one wallet slot, below), sign is the online part; the reference \
         dgsp 0.1.2's sign computes its one-time key from the seed first, so compare it with \
         DGSP's \"sign, key recomputed from its seed\" (the member's side, below); BBS: keygen is the \
         issuer's, sign is a presentation proof that discloses nothing (the \"signature\" a \
         verifier checks), the signer's secret is the credential and its attribute.\n",
    );
    s
}

/// Every DGSP set: sizes.
pub fn dgsp_sizes(rows: &[Row]) -> String {
    let mut s = String::from(
        "| set | group public key | member key | manager secret key | certificate | signature | wallet bytes per unused certificate |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows.iter().filter(|r| r.scheme == "DGSP") {
        let size = |n| r.extra_size(n).map(b).unwrap_or_else(|| "—".into());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.variant,
            b(r.sizes.public_key),
            b(r.sizes.secret_key),
            size(dgsp::size::MANAGER_SK),
            size(dgsp::size::CERTIFICATE),
            b(r.sizes.signature),
            size(dgsp::size::WALLET_SLOT),
        );
    }
    s
}

/// Every DGSP set: times.
pub fn dgsp_times(rows: &[Row]) -> String {
    let mut s = String::from(
        "| set | manager keygen | join + member key | CSR (1) | issue (1) | import (1) | offline total | sign (online) | sign from a wallet slot | sign, key recomputed from its seed | verify | open | judge |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows.iter().filter(|r| r.scheme == "DGSP") {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.variant,
            estimate(&r.keygen),
            est(r.extra(dgsp::op::JOIN)),
            est(r.extra(dgsp::op::CSR)),
            est(r.extra(dgsp::op::ISSUE)),
            est(r.extra(dgsp::op::IMPORT)),
            est(r.extra(dgsp::op::OFFLINE)),
            estimate(&r.sign),
            est(r.extra(dgsp::op::WALLET_SIGN)),
            est(r.extra(dgsp::op::SIGN_FROM_SEED)),
            estimate(&r.verify),
            est(r.extra(dgsp::op::OPEN)),
            est(r.extra(dgsp::op::JUDGE)),
        );
    }
    s
}

/// Raw SPHINCS+ / SLH-DSA, every set present.
pub fn raw_hash(rows: &[Row]) -> String {
    let mut s = String::from(
        "| scheme | set | library | public key | secret key | signature | keygen | sign | verify (library) | verify (dgsp-core native) |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows
        .iter()
        .filter(|r| matches!(r.kind, Kind::Sphincs | Kind::SlhDsa))
    {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.scheme,
            r.variant,
            r.library,
            b(r.sizes.public_key),
            b(r.sizes.secret_key),
            b(r.sizes.signature),
            estimate(&r.keygen),
            estimate(&r.sign),
            estimate(&r.verify),
            est(r.extra(sphincs::NATIVE_VERIFY)),
        );
    }
    s
}

/// The named schemes in full, with their extra operations and notes.
pub fn others(rows: &[Row]) -> String {
    let mut s = String::from(
        "| scheme | library | public key | signer's secret | signature | keygen | sign | verify |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    let named: Vec<&Row> = rows
        .iter()
        .filter(|r| {
            matches!(
                r.kind,
                Kind::Classical | Kind::ClassicalAnonymous | Kind::Lattice | Kind::Reference
            )
        })
        .collect();
    for r in &named {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            r.label(),
            r.library,
            b(r.sizes.public_key),
            b(r.sizes.secret_key),
            b(r.sizes.signature),
            estimate(&r.keygen),
            estimate(&r.sign),
            estimate(&r.verify),
        );
    }
    s.push_str("\n| scheme | operation | time |\n|---|---|---:|\n");
    for r in &named {
        for e in &r.extra {
            let _ = writeln!(
                s,
                "| {} | {} | {} |",
                r.label(),
                e.name,
                estimate(&e.estimate)
            );
        }
    }
    s.push('\n');
    for r in &named {
        for e in &r.extra_sizes {
            let _ = writeln!(s, "- {}: {} {} bytes", r.label(), e.name, b(e.bytes));
        }
        for n in &r.notes {
            let _ = writeln!(s, "- {}: {n}", r.label());
        }
    }
    s
}

/// The group-size sweep.
pub fn group(sweep: &Sweep) -> String {
    use scale::group::{op, value};
    let mut s = String::from(
        "| group size | members when timed | verify | verify, 1-member group (alternately) | open | open, 1-member group (alternately) | PLM lookup + reservation | issue 1 certificate | join | revoke (1 certificate) | resident bytes per member |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for p in &sweep.points {
        let _ = writeln!(
            s,
            "| 2^{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            (p.at as f64).log2().round() as u32,
            grouped(p.value(value::MEMBERS).unwrap_or(0.0) as u64),
            est(p.op(op::VERIFY)),
            est(p.op(op::VERIFY_BASE)),
            est(p.op(op::OPEN)),
            est(p.op(op::OPEN_BASE)),
            est(p.op(op::PLM)),
            est(p.op(op::ISSUE)),
            est(p.op(op::JOIN)),
            est(p.op(op::REVOKE)),
            p.value(value::BYTES_PER_MEMBER)
                .filter(|v| *v > 0.0 && p.at >= 1 << 15)
                .map(|v| format!("{v:.0}"))
                .unwrap_or_else(|| "—".into()),
        );
    }
    notes(&mut s, sweep);
    s
}

/// The revoked-list sweep.
pub fn revoked(sweep: &Sweep) -> String {
    use scale::revoked::{op, value};
    let mut s = String::from(
        "| revoked zetas | verify (valid) | verify, empty list (alternately) | verify (revoked, refused) | non-membership proof: make | proof: check | proof bytes | commitment build (one run) | commitment memory |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for p in &sweep.points {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            grouped(p.at),
            est(p.op(op::VERIFY)),
            est(p.op(op::VERIFY_EMPTY)),
            est(p.op(op::VERIFY_REVOKED)),
            est(p.op(op::PROVE)),
            est(p.op(op::CHECK)),
            p.value(value::PROOF_BYTES)
                .map(|v| grouped(v as u64))
                .unwrap_or_else(|| "—".into()),
            p.value(value::COMMIT_SECONDS)
                .map(|v| time_ns(v * 1e9))
                .unwrap_or_else(|| "—".into()),
            p.value(value::COMMIT_BYTES)
                .map(|v| crate::format::bytes(v as usize))
                .unwrap_or_else(|| "—".into()),
        );
    }
    notes(&mut s, sweep);
    s
}

fn notes(s: &mut String, sweep: &Sweep) {
    s.push('\n');
    let _ = writeln!(s, "Parameter set: {}.", sweep.params);
    for n in &sweep.notes {
        let _ = writeln!(s, "- {n}");
    }
}

/// The ratio `a / b` of two estimates and the half-width of its 95 % interval (relative
/// half-widths added in quadrature).
fn ratio(a: &Estimate, b: &Estimate) -> (f64, f64) {
    let r = a.mean_ns / b.mean_ns;
    let h = (a.relative_half_width().powi(2) + b.relative_half_width().powi(2)).sqrt();
    (r, r * h)
}

/// How flat verification stayed: at every point the operation against its baseline timed
/// alternately (a group of one member, an empty revoked list), and the growth of the proof
/// check.
pub fn flat(group: Option<&Sweep>, revoked: Option<&Sweep>) -> String {
    let mut s = String::new();
    let paired = |s: &mut String,
                  what: &str,
                  sweep: &Sweep,
                  op: &str,
                  base: &str,
                  base_name: &str,
                  at: &dyn Fn(u64) -> String| {
        let pairs: Vec<(u64, &Estimate, &Estimate)> = sweep
            .points
            .iter()
            .filter_map(|p| Some((p.at, p.op(op)?, p.op(base)?)))
            .collect();
        let Some(&(last_at, last, last_base)) = pairs.last() else {
            return;
        };
        let ratios: Vec<f64> = pairs
            .iter()
            .map(|(_, a, b)| a.mean_ns / b.mean_ns)
            .collect();
        let (lo, hi) = ratios
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
        let (r, h) = ratio(last, last_base);
        let means: Vec<f64> = pairs.iter().map(|(_, a, _)| a.mean_ns).collect();
        let (mlo, mhi) = means
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), m| (lo.min(*m), hi.max(*m)));
        let _ = writeln!(
            s,
            "- **{what}**: at {} {} against {} {base_name}, timed alternately: ratio \
             **{r:.3} ± {h:.3}**; over all {} points the ratio stays within {lo:.3}-{hi:.3} \
             (the means themselves, timed at different moments: {}-{}).",
            at(last_at),
            estimate(last),
            estimate(last_base),
            pairs.len(),
            time_ns(mlo),
            time_ns(mhi),
        );
    };
    let members = |n: u64| format!("2^{} members", (n as f64).log2().round() as u32);
    let zetas = |n: u64| format!("{} revoked zetas", grouped(n));
    if let Some(g) = group {
        use scale::group::op;
        paired(
            &mut s,
            "verify against group size",
            g,
            op::VERIFY,
            op::VERIFY_BASE,
            "in a group of one member",
            &members,
        );
        paired(
            &mut s,
            "open against group size",
            g,
            op::OPEN,
            op::OPEN_BASE,
            "in a group of one member",
            &members,
        );
    }
    if let Some(r) = revoked {
        use scale::revoked::op;
        paired(
            &mut s,
            "verify against revoked zetas",
            r,
            op::VERIFY,
            op::VERIFY_EMPTY,
            "with an empty list",
            &zetas,
        );
        let checks: Vec<(u64, &Estimate)> = r
            .points
            .iter()
            .filter_map(|p| Some((p.at, p.op(op::CHECK)?)))
            .collect();
        if let (Some(first), Some(last), true) = (checks.first(), checks.last(), checks.len() > 1) {
            let _ = writeln!(
                s,
                "- **non-membership proof check** (offline verifiers, this project's snapshots): \
                 {} at {} → {} at {}: it grows with the logarithm of the list, not with the \
                 list.",
                estimate(first.1),
                zetas(first.0),
                estimate(last.1),
                zetas(last.0),
            );
        }
    }
    s
}

/// The member's side.
pub fn device(d: &Device, rows: &[Row]) -> String {
    let mut s = String::from(
        "| set | member key | certificate | wallet bytes per unused certificate | signature | heap peak: decode slot + sign | heap peak: sign | signer-only process peak RSS | one signature, signer-only build: native | the same in WebAssembly (Node WASI) |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let ns = |v: Option<u64>| v.map(|n| time_ns(n as f64)).unwrap_or_else(|| "—".into());
    for m in &d.sets {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            m.params,
            b(m.member_key_bytes),
            b(m.certificate_bytes),
            b(m.wallet_slot_bytes),
            b(m.signature_bytes),
            b(m.heap_decode_sign),
            b(m.heap_sign),
            m.probe_peak_rss_kib
                .map(|k| format!("{} KiB", grouped(k)))
                .unwrap_or_else(|| "—".into()),
            ns(m.native_sign_ns),
            ns(m.wasm_sign_ns),
        );
    }
    if let Some(why) = &d.wasm_not_run {
        let _ = writeln!(s, "\nThe WebAssembly build was not run: {why}.");
    }
    if let Some(r) = &d.reference {
        let sign = rows
            .iter()
            .find(|row| row.kind == Kind::Reference)
            .map(|row| estimate(&row.sign))
            .unwrap_or_else(|| "—".into());
        let _ = writeln!(
            s,
            "\n**Reference `dgsp` 0.1.2, {}** (no wallet format; what a member must keep, the \
             WOTS+ seed and the certificate): {} bytes per unused certificate; heap peak of \
             `DGSP::sign`: {} bytes; the signature and certificate it handles are passed by value \
             ({} bytes on the stack); sign {}.",
            r.params,
            b(r.per_certificate_bytes),
            b(r.heap_sign),
            b(r.by_value_bytes),
            sign,
        );
        // The reference's sign takes the one-time key's seed and recomputes the key: the
        // DGSP row doing the same is the one to set beside it.
        let twin = rows
            .iter()
            .find(|row| row.scheme == "DGSP" && row.variant == r.params);
        let ours = twin.and_then(|row| row.extra(dgsp::op::SIGN_FROM_SEED));
        let reference = rows.iter().find(|row| row.kind == Kind::Reference);
        if let (Some(ours), Some(reference)) = (ours, reference) {
            let _ = writeln!(
                s,
                "\nLike with like: the reference's `sign` takes the one-time key's seed and \
                 computes the key again before signing; DGSP {} doing the same takes {} \
                 ({:.2}× the reference's). From a wallet slot, where the key was computed \
                 once (at the CSR) and the certificate checked once (at import), DGSP signs \
                 in {}.",
                r.params,
                estimate(ours),
                ours.mean_ns / reference.sign.mean_ns,
                est(twin.and_then(|row| row.extra(dgsp::op::WALLET_SIGN))),
            );
        }
    }
    if !d.builds.is_empty() {
        s.push_str("\n| signer-only build (`cargo build --profile signer -p dgsp-signer-probe`) | size |\n|---|---:|\n");
        for build in &d.builds {
            let size = match (build.bytes, &build.failure) {
                (Some(n), _) => format!("{} bytes", grouped(n)),
                (None, Some(why)) => format!("not built: {why}"),
                (None, None) => "—".into(),
            };
            let _ = writeln!(s, "| {} | {} |", build.target, size);
        }
    }
    if let Some(k) = d.probe_baseline_kib {
        let _ = writeln!(
            s,
            "\nThe native signer-only process refusing an empty request peaks at {} KiB resident \
             (its baseline: the binary, the C runtime, stdin/stdout buffers).",
            grouped(k)
        );
    }
    s
}
