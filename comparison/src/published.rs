//! Published figures, cited (not measured here): the timing table of the DGSP paper's
//! artifact, the `dgsp` 0.1.2 README ("DGSP Timing Benchmarks", `sphincs_shake_256f`,
//! in-memory, batch size 1), which its authors describe as reproducing the paper's benchmark
//! configurations (ePrint 2025/760). Machine: Intel Core i7-4702MQ at 2.20 GHz, one core,
//! hyper-threading and turbo boost off, Ubuntu 24.04, Rust 1.84.0, mean of 100 runs.

use std::fmt::Write as _;

use crate::format::{estimate, time_ns};
use crate::results::Row;
use crate::schemes::dgsp::op;

/// Where the figures come from.
pub const SOURCE: &str = "dgsp 0.1.2 README, \"DGSP Timing Benchmarks\" (the paper's artifact; \
     ePrint 2025/760): Intel Core i7-4702MQ @ 2.20 GHz, one core, no hyper-threading or turbo, \
     Rust 1.84.0, mean of 100 runs, in-memory stores, batch size 1";

/// `(operation, ms at 2^10 members, ms at 2^25 members)` for shake-256f.
pub const SHAKE_256F_MS: [(&str, f64, f64); 9] = [
    ("manager keygen", 3.0521, 3.0536),
    ("join", 0.0030, 0.0029),
    ("CSR, 1 item", 1.3630, 1.3626),
    ("issue 1 certificate", 61.451, 61.552),
    ("sign", 1.3875, 1.3886),
    ("verify", 2.7706, 2.7808),
    ("open", 0.6798, 0.6987),
    ("judge", 0.6917, 0.7014),
    ("revoke", 0.0007, 0.0008),
];

/// The published figures beside ours on shake-256f (our `dgsp-core` row and the reference
/// measured in the same run), as a Markdown table.
pub fn table(rows: &[Row]) -> String {
    let ours = rows
        .iter()
        .find(|r| r.scheme == "DGSP" && r.variant == "shake-256f");
    let reference = rows.iter().find(|r| r.scheme == "dgsp 0.1.2");
    let mut s = String::from(
        "| operation (shake-256f) | published, 2^10 members | published, 2^25 members | dgsp 0.1.2, this machine | dgsp-core, this machine |\n\
         |---|---:|---:|---:|---:|\n",
    );
    for (name, small, large) in SHAKE_256F_MS {
        let here = |r: Option<&Row>| -> String {
            let r = match r {
                Some(r) => r,
                None => return "—".into(),
            };
            let e = match name {
                "manager keygen" => Some(&r.keygen),
                "sign" => Some(&r.sign),
                "verify" => Some(&r.verify),
                "join" => r.extra(op::JOIN),
                "CSR, 1 item" => r.extra(op::CSR),
                "issue 1 certificate" => r.extra(op::ISSUE),
                "open" => r.extra(op::OPEN),
                "judge" => r.extra(op::JUDGE),
                _ => None,
            };
            e.map(estimate).unwrap_or_else(|| "—".into())
        };
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {} | {} |",
            time_ns(small * 1e6),
            time_ns(large * 1e6),
            here(reference),
            here(ours),
        );
    }
    let _ = writeln!(
        s,
        "\nPublished: {SOURCE}. This machine: see above; dgsp 0.1.2 was measured for keygen, sign \
         and verify only (the complete interleaved comparison is in docs/benchmarks.md). Our join \
         includes the member's key generation; our open verifies the signature first."
    );
    s
}
