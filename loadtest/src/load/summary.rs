//! `load.json`: what one goose run measured, in this tool's terms.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use goose::metrics::{GooseMetrics, GooseRequestMetricTimingData};
use serde::{Deserialize, Serialize};

use super::mixed::MixedAnalysis;
use super::Args;
use crate::thresholds::Bounds;

/// One kind of request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestStats {
    /// Method and name, as goose reports it.
    pub name: String,
    /// Requests answered (successes and failures).
    pub count: usize,
    /// Failed requests: no answer, an error status, or an answer that differs from the
    /// fixture.
    pub failures: usize,
    /// Requests per second over the run.
    pub per_s: f64,
    /// Answer time percentiles and the slowest, ms.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p999_ms: f64,
    /// The slowest, ms.
    pub max_ms: f64,
}

/// A goose rule and its outcome.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rule {
    /// The rule, as goose parsed it.
    pub rule: String,
    /// What was observed.
    pub observed: String,
    /// Whether it held.
    pub passed: bool,
}

/// The summary of one closed-loop run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadSummary {
    /// The scenario.
    pub scenario: String,
    /// goose's version.
    pub goose: String,
    /// When the run started (Unix ms).
    pub started_unix_ms: u64,
    /// Users (concurrency).
    pub users: usize,
    /// Seconds measured (goose's, after every user had started).
    pub seconds: f64,
    /// Every request kind.
    pub requests: Vec<RequestStats>,
    /// The request kind the scenario is about (its throughput and tail are the run's).
    pub primary: String,
    /// Items (signatures) per request of the primary kind.
    pub items_per_request: usize,
    /// Items per second of the primary kind.
    pub items_per_s: f64,
    /// Distinct items the fixtures held for this scenario.
    pub distinct_items: usize,
    /// Items taken; above `distinct_items`, items were sent again.
    pub items_sent: usize,
    /// The goose rules and their outcome.
    pub rules: Vec<Rule>,
    /// The most frequent errors, with their counts.
    pub errors: Vec<(String, usize)>,
    /// mixed: the revocation checks.
    pub mixed: Option<MixedAnalysis>,
    /// The bounds this run was held to.
    pub bounds: Bounds,
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

fn stats(name: &str, t: &GooseRequestMetricTimingData, failures: usize, secs: f64) -> RequestStats {
    RequestStats {
        name: name.to_owned(),
        count: t.counter,
        failures,
        per_s: t.counter as f64 / secs,
        p50_ms: ms(t.percentile_us(0.5)),
        p90_ms: ms(t.percentile_us(0.9)),
        p99_ms: ms(t.percentile_us(0.99)),
        p999_ms: ms(t.percentile_us(0.999)),
        max_ms: ms(t.maximum_time_us),
    }
}

/// Summarises a finished goose run.
#[allow(clippy::too_many_arguments)]
pub fn summarise(
    a: &Args,
    m: &GooseMetrics,
    items_per_request: usize,
    distinct_items: usize,
    items_sent: usize,
    started: SystemTime,
    mixed: Option<MixedAnalysis>,
    bounds: Bounds,
) -> LoadSummary {
    let seconds = if m.duration > 0 {
        m.duration as f64
    } else {
        a.secs as f64
    };
    let mut requests: Vec<RequestStats> = m
        .requests
        .iter()
        .map(|(name, r)| stats(name, &r.raw_data, r.fail_count, seconds))
        .collect();
    requests.sort_by(|x, y| y.count.cmp(&x.count).then_with(|| x.name.cmp(&y.name)));
    // The scenario's own request: the most frequent one (a revocation or a tile read never
    // outnumbers the verifications or proofs around it).
    let primary = requests.first().map(|r| r.name.clone()).unwrap_or_default();
    let items_per_s = requests.first().map_or(0.0, |r| {
        (r.count - r.failures) as f64 * items_per_request as f64 / seconds
    });
    let mut errors: Vec<(String, usize)> = m
        .errors
        .values()
        .map(|e| (format!("{}: {}", e.name, e.error), e.occurrences))
        .collect();
    errors.sort_by_key(|e| std::cmp::Reverse(e.1));
    errors.truncate(10);
    LoadSummary {
        scenario: a.scenario.name().to_owned(),
        goose: "0.19".into(),
        started_unix_ms: started
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        users: a.users,
        seconds,
        requests,
        primary,
        items_per_request,
        items_per_s,
        distinct_items,
        items_sent,
        rules: m
            .thresholds
            .iter()
            .map(|t| Rule {
                rule: t.rule.clone(),
                observed: t.observed.clone(),
                passed: t.passed,
            })
            .collect(),
        errors,
        mixed,
        bounds,
    }
}

impl LoadSummary {
    /// The primary request kind's numbers.
    pub fn primary(&self) -> Option<&RequestStats> {
        self.requests.iter().find(|r| r.name == self.primary)
    }

    /// What makes the run wrong whatever the machine: failed requests, and for mixed any
    /// breach of the revocation rules or a run that revoked nobody.
    pub fn correctness_failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        let failed: usize = self.requests.iter().map(|r| r.failures).sum();
        if failed > 0 {
            let total: usize = self.requests.iter().map(|r| r.count).sum();
            let top: Vec<String> = self
                .errors
                .iter()
                .take(3)
                .map(|(e, n)| format!("{n}× {e}"))
                .collect();
            out.push(format!(
                "{failed} of {total} requests failed ({})",
                top.join("; ")
            ));
        }
        if self.requests.iter().all(|r| r.count == 0) {
            out.push("no request was answered".into());
        }
        if let Some(m) = &self.mixed {
            if m.revocations == 0 {
                out.push("mixed: no revocation went through".into());
            }
            if m.answers_revoked == 0 {
                out.push("mixed: no answer about a revoked member said revoked".into());
            }
            if m.breaches > 0 {
                out.push(format!(
                    "mixed: {} breaches of the revocation rules: {}",
                    m.breaches,
                    m.listed.join("; ")
                ));
            }
        }
        out
    }

    /// The human summary.
    pub fn text(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(
            t,
            "goose {}: {} users, {:.0} s; items sent {} of {} distinct{}",
            self.goose,
            self.users,
            self.seconds,
            self.items_sent,
            self.distinct_items,
            if self.items_sent > self.distinct_items {
                " (wrapped around: some were sent again)"
            } else {
                ""
            }
        );
        for r in &self.requests {
            let _ = writeln!(
                t,
                "  {}: {} ({:.0}/s) · p50 {:.2} ms · p90 {:.2} · p99 {:.2} · p99.9 {:.2} · max {:.1} · failed {}",
                r.name, r.count, r.per_s, r.p50_ms, r.p90_ms, r.p99_ms, r.p999_ms, r.max_ms, r.failures
            );
        }
        if self.items_per_request > 1 {
            let _ = writeln!(t, "  = {:.0} items/s", self.items_per_s);
        }
        for r in &self.rules {
            let _ = writeln!(
                t,
                "  rule {}: {} ({})",
                r.rule,
                if r.passed { "passed" } else { "FAILED" },
                r.observed
            );
        }
        if let Some(m) = &self.mixed {
            let _ = writeln!(
                t,
                "  mixed: {} members revoked ({} more sent, never acknowledged; acknowledged in {:.1} ms median, {:.1} max); {} answers about them, {} revoked, {} past the {} ms bound; revoked answers began {:.0} ms (median), {:.0} (p90), {:.0} (max) after the acknowledgement; {} never seen revoked; {} breaches",
                m.revocations,
                m.unacknowledged,
                m.revoke_ack_ms[0],
                m.revoke_ack_ms[1],
                m.answers,
                m.answers_revoked,
                m.answers_past_bound,
                m.bound_ms,
                m.propagation_ms[0],
                m.propagation_ms[1],
                m.propagation_ms[2],
                m.never_seen_revoked,
                m.breaches
            );
        }
        t
    }
}
