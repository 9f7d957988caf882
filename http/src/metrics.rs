//! Prometheus metrics in the text exposition format: per-route request counters and time
//! (a middleware), and helpers that write one gauge or counter with its help and type.
//!
//! Every label comes from a fixed set, so no request can grow the table: the route is the
//! matched route template (or `unmatched`), the method one of [`METHODS`] (any other is
//! counted as `OTHER`), the status a `u16`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;

/// The method labels: the methods HTTP defines (RFC 9110, and PATCH from RFC 5789). A
/// request with any other method, of any length, is counted as [`OTHER_METHOD`].
pub const METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT",
];

/// The method label of every method not in [`METHODS`].
pub const OTHER_METHOD: &str = "OTHER";

/// The label of `method`: itself when it is one of [`METHODS`], else [`OTHER_METHOD`].
pub fn method_label(method: &axum::http::Method) -> &'static str {
    METHODS
        .into_iter()
        .find(|m| *m == method.as_str())
        .unwrap_or(OTHER_METHOD)
}

/// `(method, route, status)`.
type RequestKey = (&'static str, String, u16);

/// Request counters and latency sums (seconds) per method, route and status.
#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<RequestKey, (u64, f64)>>,
}

impl Metrics {
    /// Runs the request, counting it by method, matched route and status, with its time.
    pub async fn observe(&self, req: Request, next: Next) -> Response {
        let route = req
            .extensions()
            .get::<MatchedPath>()
            .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
        let method = method_label(req.method());
        let start = Instant::now();
        let resp = next.run(req).await;
        let secs = start.elapsed().as_secs_f64();
        if let Ok(mut m) = self.requests.lock() {
            let e = m
                .entry((method, route, resp.status().as_u16()))
                .or_default();
            e.0 += 1;
            e.1 += secs;
        }
        resp
    }

    /// Writes `<prefix>_http_requests_total` and `<prefix>_http_request_seconds_sum`.
    pub fn render_requests(&self, prefix: &str, out: &mut String) {
        let snapshot: Vec<_> = self
            .requests
            .lock()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), *v)).collect())
            .unwrap_or_default();
        out.push_str(&format!(
            "# HELP {prefix}_http_requests_total HTTP requests by route and status.\n# TYPE {prefix}_http_requests_total counter\n"
        ));
        for ((method, route, status), (n, _)) in &snapshot {
            out.push_str(&format!(
                "{prefix}_http_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {n}\n"
            ));
        }
        out.push_str(&format!(
            "# HELP {prefix}_http_request_seconds_sum Time spent answering, by route and status.\n# TYPE {prefix}_http_request_seconds_sum counter\n"
        ));
        for ((method, route, status), (_, secs)) in &snapshot {
            out.push_str(&format!(
                "{prefix}_http_request_seconds_sum{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {secs}\n"
            ));
        }
    }
}

/// Writes one gauge with its help and type lines.
pub fn gauge(out: &mut String, name: &str, help: &str, v: impl std::fmt::Display) {
    out.push_str(&format!(
        "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}\n"
    ));
}

/// Writes one counter with its help and type lines.
pub fn counter(out: &mut String, name: &str, help: &str, v: impl std::fmt::Display) {
    out.push_str(&format!(
        "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}\n"
    ));
}
