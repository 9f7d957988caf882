//! Prometheus metrics in the text exposition format: the registry's gauges and counters, on
//! top of the request metrics both services share (`dgsp_http::metrics`).

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use dgsp_witness::WitnessStatus;

use super::Shared;

pub use dgsp_http::metrics::{counter, gauge, Metrics};

/// The certificate signing jobs (`crate::issuance`).
fn render_issuance(s: &Shared, out: &mut String) {
    let st = s.issuer.stats();
    let p = "dgsp_registry_issuance";
    counter(
        out,
        &format!("{p}_jobs_started_total"),
        "Certificate signing jobs started.",
        st.jobs_started,
    );
    counter(
        out,
        &format!("{p}_jobs_cancelled_total"),
        "Signing jobs stopped early because no request waited for them any more.",
        st.jobs_cancelled,
    );
    counter(
        out,
        &format!("{p}_jobs_resumed_total"),
        "Signing jobs that continued from what a cancelled attempt had signed.",
        st.jobs_resumed,
    );
    out.push_str(&format!(
        "# HELP {p}_retries_served_total Issuance requests answered without a signing job of their own, by source.\n# TYPE {p}_retries_served_total counter\n\
         {p}_retries_served_total{{source=\"in_flight\"}} {}\n{p}_retries_served_total{{source=\"kept\"}} {}\n",
        st.served_in_flight, st.served_kept
    ));
    counter(
        out,
        &format!("{p}_certificates_signed_total"),
        "Certificates signed (SPHINCS+ signatures).",
        st.certificates_signed,
    );
    gauge(
        out,
        &format!("{p}_jobs_running"),
        "Signing jobs under way.",
        st.jobs_running,
    );
    gauge(
        out,
        &format!("{p}_kept_bytes"),
        "Bytes of certificates kept for retries.",
        st.kept_bytes,
    );
}

/// One labelled gauge per witness of the policy.
fn render_witnesses(w: &crate::witnessing::Witnesses, out: &mut String) {
    let status = w.status();
    let p = "dgsp_registry_witness";
    let family =
        |out: &mut String, name: &str, help: &str, value: &dyn Fn(&WitnessStatus) -> String| {
            out.push_str(&format!(
                "# HELP {p}_{name} {help}\n# TYPE {p}_{name} gauge\n"
            ));
            for st in &status {
                out.push_str(&format!(
                    "{p}_{name}{{witness=\"{}\"}} {}\n",
                    label(&st.name),
                    value(st)
                ));
            }
        };
    family(
        out,
        "up",
        "1 if the witness cosigned the last checkpoint submitted to it, 0 if that failed or none was yet.",
        &|st| u8::from(st.last_error.is_none() && st.last_success_unix.is_some()).to_string(),
    );
    family(
        out,
        "consecutive_failures",
        "Submissions to the witness failed in a row since its last cosignature.",
        &|st| st.consecutive_failures.to_string(),
    );
    family(
        out,
        "cosigned_size",
        "The tree size the witness last cosigned, as far as the registry knows (0: unknown).",
        &|st| st.size.to_string(),
    );
    family(
        out,
        "last_cosigned_unix_seconds",
        "When the witness last cosigned (POSIX seconds; 0: never since the start).",
        &|st| st.last_success_unix.unwrap_or(0).to_string(),
    );
}

/// A Prometheus label value: backslash, double quote and newline escaped.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Middleware: counts every request by method, matched route and status.
pub async fn track(State(s): State<Shared>, req: Request, next: Next) -> Response {
    s.metrics.observe(req, next).await
}

/// `GET /metrics`.
pub async fn render(State(s): State<Shared>) -> impl IntoResponse {
    let mut out = String::new();
    s.metrics.render_requests("dgsp_registry", &mut out);
    let head = s.store.head().map(|h| h.seq).unwrap_or(0);
    gauge(
        &mut out,
        "dgsp_registry_log_head_seq",
        "Sequence number of the last log entry.",
        head,
    );
    gauge(
        &mut out,
        "dgsp_registry_members",
        "Members ever joined.",
        s.store.count("members").unwrap_or(0),
    );
    gauge(
        &mut out,
        "dgsp_registry_revoked_zetas",
        "Revoked certificate serial numbers.",
        s.store.count("revoked").unwrap_or(0),
    );
    gauge(
        &mut out,
        "dgsp_registry_halted",
        "1 once the registry halted after a failure (writes refused until restarted).",
        u64::from(s.health.halted().is_some()),
    );
    render_issuance(&s, &mut out);
    if let Some(w) = &s.witnesses {
        render_witnesses(w, &mut out);
    }
    {
        let p = crate::publisher::read(&s.published);
        let number = p.snapshot.as_ref().map_or(0, |snap| snap.record.number);
        gauge(
            &mut out,
            "dgsp_registry_snapshot_number",
            "Latest signed revocation snapshot.",
            number,
        );
        if let Some(c) = &p.checkpoint {
            gauge(
                &mut out,
                "dgsp_registry_checkpoint_size",
                "Entries covered by the newest signed checkpoint.",
                c.checkpoint.size,
            );
            let age = c.checkpoint.age_ms(dgsp_wire::log::now_ms()).unwrap_or(0);
            gauge(
                &mut out,
                "dgsp_registry_checkpoint_age_seconds",
                "Age of the newest signed checkpoint (its signed time against this clock).",
                age as f64 / 1e3,
            );
        }
        gauge(
            &mut out,
            "dgsp_registry_checkpoint_sign_ms",
            "Time to sign the last checkpoint (ms).",
            p.last_checkpoint_sign_ms,
        );
        gauge(
            &mut out,
            "dgsp_registry_snapshot_root_ms",
            "Time to the new root after the last revocation batch (ms).",
            p.last_root_ms,
        );
        gauge(
            &mut out,
            "dgsp_registry_snapshot_sign_ms",
            "Time to sign the last snapshot (ms).",
            p.last_sign_ms,
        );
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out)
}
