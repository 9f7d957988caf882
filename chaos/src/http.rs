//! The suite's reads of the services: probes (health, readiness, freshness, the newest
//! checkpoint, metrics), which give up after 3 s and say nothing about why, and the reads the
//! checks depend on (log pages, proofs), which wait up to 30 s and say why they failed.

use std::time::Duration;

use serde::de::DeserializeOwned;

/// How long a probe may take.
const PROBE: Duration = Duration::from_secs(3);
/// How long a read the checks depend on may take.
const READ: Duration = Duration::from_secs(30);

async fn probe(http: &reqwest::Client, url: &str) -> Option<reqwest::Response> {
    http.get(url).timeout(PROBE).send().await.ok()
}

/// The status `url` answers with (0 when unanswered).
pub async fn status(http: &reqwest::Client, url: &str) -> u16 {
    probe(http, url).await.map_or(0, |r| r.status().as_u16())
}

/// The status and body `url` answers with; `None` when unanswered.
pub async fn text(http: &reqwest::Client, url: &str) -> Option<(u16, String)> {
    let r = probe(http, url).await?;
    let status = r.status().as_u16();
    Some((status, r.text().await.ok()?))
}

/// The status and body `url` answers with, the body read as `T`; `None` when unanswered or
/// not a `T`.
pub async fn json<T: DeserializeOwned>(http: &reqwest::Client, url: &str) -> Option<(u16, T)> {
    let (status, body) = text(http, url).await?;
    Some((status, serde_json::from_str(&body).ok()?))
}

/// `url`'s 2xx answer as `T`, asked with `token` as the bearer when given; otherwise why
/// not (unanswered, another status with its body, or not a `T`).
pub async fn read<T: DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
    token: Option<&str>,
) -> Result<T, String> {
    let mut req = http.get(url).timeout(READ);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let r = req.send().await.map_err(|e| format!("{url}: {e}"))?;
    if !r.status().is_success() {
        let s = r.status();
        let body = r.text().await.unwrap_or_default();
        return Err(format!("{url}: {s}: {body}"));
    }
    r.json().await.map_err(|e| format!("{url}: {e}"))
}
