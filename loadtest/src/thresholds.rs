//! The pass/fail rules of every scenario, in one table: a regression of the gateway fails the
//! run. Measured on the 2-core CI machine with headroom (docs/benchmarks.md, "Load tests");
//! `--smoke` keeps every correctness rule and loosens only the time and throughput rules,
//! which a run of a few seconds on a busy machine cannot hold.

use crate::load::Scenario;

/// The bounds of one scenario.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct Bounds {
    /// Closed loop at saturation: 95th percentile of the answer time, ms.
    pub saturation_p95_ms: f64,
    /// Closed loop at saturation: 99th percentile, ms.
    pub saturation_p99_ms: f64,
    /// Open-loop probe at a fraction of saturation: median from the scheduled send time, ms.
    pub probe_p50_ms: f64,
    /// Open-loop probe: 99th percentile from the scheduled send time, ms.
    pub probe_p99_ms: f64,
    /// Items verified per second through the gateway over the raw core's on the same
    /// fixtures and cores, when the load generator shares the gateway's cores (fewer than
    /// 4 cores); `None` for scenarios without cryptography (reads).
    pub min_ratio_shared: Option<f64>,
    /// The same when the generator runs on cores of its own.
    pub min_ratio_pinned: Option<f64>,
}

/// Every scenario answers every request as its fixture says: no failed request at all.
pub const MAX_ERROR_RATE: f64 = 0.0;

/// The bounds of `scenario`, loosened for a smoke run.
pub fn bounds(scenario: Scenario, smoke: bool) -> Bounds {
    let b = match scenario {
        // One signature per request; the closed loop runs 16 users on 2 cores.
        Scenario::Verify | Scenario::VerifyBinary | Scenario::Mixed => Bounds {
            saturation_p95_ms: 60.0,
            saturation_p99_ms: 100.0,
            probe_p50_ms: 5.0,
            probe_p99_ms: 25.0,
            min_ratio_shared: Some(0.3),
            min_ratio_pinned: Some(0.7),
        },
        // 32 signatures per request.
        Scenario::Batch => Bounds {
            saturation_p95_ms: 200.0,
            saturation_p99_ms: 300.0,
            probe_p50_ms: 40.0,
            probe_p99_ms: 150.0,
            min_ratio_shared: Some(0.4),
            min_ratio_pinned: Some(0.8),
        },
        // The judge verifies the signature and the opening: about a verify's cost.
        Scenario::Judge => Bounds {
            saturation_p95_ms: 60.0,
            saturation_p99_ms: 100.0,
            probe_p50_ms: 5.0,
            probe_p99_ms: 25.0,
            min_ratio_shared: Some(0.25),
            min_ratio_pinned: Some(0.6),
        },
        // No cryptography: the HTTP path, the revoked set and the tile store.
        Scenario::Reads => Bounds {
            saturation_p95_ms: 30.0,
            saturation_p99_ms: 60.0,
            probe_p50_ms: 2.0,
            probe_p99_ms: 20.0,
            min_ratio_shared: None,
            min_ratio_pinned: None,
        },
    };
    if smoke {
        Bounds {
            saturation_p95_ms: b.saturation_p95_ms * 10.0,
            saturation_p99_ms: b.saturation_p99_ms * 10.0,
            probe_p50_ms: b.probe_p50_ms * 20.0,
            probe_p99_ms: b.probe_p99_ms * 20.0,
            min_ratio_shared: b.min_ratio_shared.map(|r| r / 10.0),
            min_ratio_pinned: b.min_ratio_pinned.map(|r| r / 10.0),
        }
    } else {
        b
    }
}

/// The goose rules for the closed-loop run (judged by goose itself, at the end of the run,
/// and shown in its HTML report).
pub fn goose_rules(b: &Bounds) -> Vec<String> {
    vec![
        format!("error-rate<={MAX_ERROR_RATE}%"),
        format!("p95<{}ms", b.saturation_p95_ms),
        format!("p99<{}ms", b.saturation_p99_ms),
    ]
}

#[cfg(test)]
mod tests {
    use goose::config::{GooseConfiguration, GooseDefault, GooseDefaultType};
    use goose::GooseAttack;

    use super::*;

    #[test]
    fn every_goose_rule_parses_and_smoke_only_loosens_time_and_ratio() {
        for s in Scenario::ALL {
            let (full, smoke) = (bounds(s, false), bounds(s, true));
            assert!(smoke.saturation_p99_ms > full.saturation_p99_ms);
            assert!(smoke.probe_p99_ms > full.probe_p99_ms);
            assert_eq!(
                smoke.min_ratio_shared.is_some(),
                full.min_ratio_shared.is_some()
            );
            for rule in goose_rules(&full).iter().chain(&goose_rules(&smoke)) {
                let attack = GooseAttack::initialize_with_config(GooseConfiguration::default())
                    .expect("a goose attack");
                if let Err(e) = attack.set_default(GooseDefault::Threshold, rule.as_str()) {
                    panic!("{rule}: {e}");
                }
            }
        }
    }
}
