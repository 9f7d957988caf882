//! Certificate issuance over real HTTP on loopback: an abandoned request stops signing (and
//! its retry continues where it stopped), concurrent retries share one signing job, and a
//! retry after completion is answered from kept certificates without signing. Everything is
//! observed through `/metrics`, never through timing.

use crate::support;

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::{Certificate, CidStar, CsrItem, MemberKey, ParamSet};
use dgsp_registry::api;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::Registry;

const ADMIN: &str = "admin-token-for-tests";
/// The parameter set of every `support::group`.
const PARAMS: ParamSet = ParamSet::Sha2_128f;
/// The largest issuance the API accepts: seconds of signing on a small machine.
const KEYS: usize = api::admin::MAX_ISSUE;

async fn start() -> Registry {
    Registry::start(5, support::config(ADMIN)).await
}

/// A member's certificate request: the member key, its CSR items and the request body.
struct Csr {
    id: u64,
    member: MemberKey,
    items: Vec<CsrItem>,
    body: Value,
}

impl Registry {
    async fn join(&self, username: &str, keys: usize) -> Csr {
        let joined: Value = self
            .client
            .post(format!("{}/admin/v1/members", self.url))
            .bearer_auth(ADMIN)
            .json(&json!({ "username": username }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = joined["id"].as_u64().unwrap();
        let cid_star = CidStar::from_slice(
            PARAMS,
            &B64.decode(joined["cid_star"].as_str().unwrap()).unwrap(),
        )
        .unwrap();
        let member = MemberKey::generate(PARAMS, id, cid_star, &mut ChaCha20Rng::seed_from_u64(id));
        let items = member.csr(keys, &mut ChaCha20Rng::seed_from_u64(100 + id));
        let pks: Vec<String> = items
            .iter()
            .map(|i| B64.encode(i.wots_pk().as_bytes()))
            .collect();
        let body = json!({"cid_star": joined["cid_star"], "wots_pks": pks});
        Csr {
            id,
            member,
            items,
            body,
        }
    }

    fn issue(&self, csr: &Csr, key: Option<&str>) -> reqwest::RequestBuilder {
        let mut r = self
            .client
            .post(format!(
                "{}/admin/v1/members/{}/certificates",
                self.url, csr.id
            ))
            .bearer_auth(ADMIN)
            .json(&csr.body);
        if let Some(key) = key {
            r = r.header("Idempotency-Key", key);
        }
        r
    }

    /// Issues and returns `(first_counter, certificates as sent)`.
    async fn issue_ok(&self, csr: &Csr, key: Option<&str>) -> (u64, Vec<String>) {
        let r = self.issue(csr, key).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let v: Value = r.json().await.unwrap();
        let certs = v["certificates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_owned())
            .collect();
        (v["first_counter"].as_u64().unwrap(), certs)
    }

    /// A sample (no labels) or labelled series of `/metrics`, e.g.
    /// `dgsp_registry_issuance_retries_served_total{source="kept"}`.
    async fn metric(&self, series: &str) -> u64 {
        let text = support::get_text(&self.client, format!("{}/metrics", self.url)).await;
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no series {series} in\n{text}"))
            .parse()
            .unwrap()
    }

    /// Polls `/metrics` until `series` satisfies `ok` (panics after two minutes: a hang,
    /// not a timing assertion).
    async fn wait_for(&self, series: &str, ok: impl Fn(u64) -> bool) -> u64 {
        for _ in 0..12_000 {
            let v = self.metric(series).await;
            if ok(v) {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{series} never reached the expected value");
    }

    /// Checks that `certs` are valid certificates of `csr`'s keys for counters `first..`:
    /// the member imports each one (SPHINCS+ verified) and its zeta is the counter's.
    fn check(&self, csr: &Csr, first: u64, certs: &[String]) {
        assert_eq!(certs.len(), csr.items.len());
        let zetas = self
            .manager
            .zetas(csr.id, first..first + certs.len() as u64);
        for ((item, cert), zeta) in csr.items.iter().zip(certs).zip(zetas) {
            let cert = Certificate::from_bytes(&B64.decode(cert).unwrap()).unwrap();
            assert_eq!(cert.zeta(), &zeta);
            csr.member
                .import(
                    self.manager.public_key(),
                    CsrItem::from_seed(&csr.member, item.wots_seed().clone()),
                    &cert,
                )
                .unwrap();
        }
    }
}

const SIGNED: &str = "dgsp_registry_issuance_certificates_signed_total";
const STARTED: &str = "dgsp_registry_issuance_jobs_started_total";
const CANCELLED: &str = "dgsp_registry_issuance_jobs_cancelled_total";
const RESUMED: &str = "dgsp_registry_issuance_jobs_resumed_total";
const RUNNING: &str = "dgsp_registry_issuance_jobs_running";
const KEPT_BYTES: &str = "dgsp_registry_issuance_kept_bytes";
const IN_FLIGHT: &str = "dgsp_registry_issuance_retries_served_total{source=\"in_flight\"}";
const KEPT: &str = "dgsp_registry_issuance_retries_served_total{source=\"kept\"}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_issuance_stops_signing_and_its_retry_continues_where_it_stopped() {
    let reg = start().await;
    let csr = reg.join("alice", KEYS).await;

    // The client gives up once signing is under way: its request future is dropped, the
    // connection closes, the handler is dropped.
    let request = reg.issue(&csr, Some("issue-alice-1")).send();
    let client = tokio::spawn(request);
    reg.wait_for(SIGNED, |n| n > 0).await;
    client.abort();
    assert!(client.await.unwrap_err().is_cancelled());

    // The job stops at its next chunk: far fewer than 1024 signatures, and no more after.
    reg.wait_for(RUNNING, |n| n == 0).await;
    assert_eq!(reg.metric(CANCELLED).await, 1);
    let signed = reg.metric(SIGNED).await;
    assert!(
        signed < KEYS as u64,
        "signed {signed} of {KEYS}: not cancelled"
    );
    assert!(
        reg.metric(KEPT_BYTES).await > 0,
        "the signed prefix is kept"
    );

    // The retry (same key: same counters) signs only what is missing.
    let (first, certs) = reg.issue_ok(&csr, Some("issue-alice-1")).await;
    assert_eq!(first, 0);
    assert_eq!(reg.metric(RESUMED).await, 1);
    assert_eq!(reg.metric(STARTED).await, 2);
    assert_eq!(
        reg.metric(SIGNED).await,
        KEYS as u64,
        "no certificate signed twice"
    );
    reg.check(&csr, first, &certs);
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_retries_share_one_job_and_a_later_retry_is_answered_from_kept_certificates() {
    let reg = start().await;
    let csr = reg.join("bob", KEYS).await;

    // Two requests with the same key at once: one reservation, one signing job.
    let (a, b) = tokio::join!(
        reg.issue_ok(&csr, Some("issue-bob-1")),
        reg.issue_ok(&csr, Some("issue-bob-1"))
    );
    assert_eq!(reg.metric(STARTED).await, 1);
    assert_eq!(reg.metric(IN_FLIGHT).await, 1);
    assert_eq!(reg.metric(SIGNED).await, KEYS as u64);
    assert_eq!(a, b, "both get the same certificates");
    reg.check(&csr, a.0, &a.1);

    // A retry after completion: no new job, no signature, the same bytes.
    let c = reg.issue_ok(&csr, Some("issue-bob-1")).await;
    assert_eq!(c, a);
    assert_eq!(reg.metric(KEPT).await, 1);
    assert_eq!(reg.metric(STARTED).await, 1);
    assert_eq!(reg.metric(SIGNED).await, KEYS as u64);

    // Without an idempotency key nothing is kept (nobody can ask for that range again),
    // and the same body gets new counters, freshly signed.
    let kept = reg.metric(KEPT_BYTES).await;
    let few = reg.join("carol", 4).await;
    let (first, certs) = reg.issue_ok(&few, None).await;
    reg.check(&few, first, &certs);
    let (again, _) = reg.issue_ok(&few, None).await;
    assert_eq!(again, first + 4);
    assert_eq!(reg.metric(STARTED).await, 3);
    assert_eq!(reg.metric(SIGNED).await, KEYS as u64 + 8);
    assert_eq!(reg.metric(KEPT_BYTES).await, kept);
    reg.shutdown().await;
}
