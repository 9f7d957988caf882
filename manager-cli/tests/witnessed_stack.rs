//! Witnessed, end to end through the real binaries and two real witnesses (omniwitness and
//! litewitness, built from the Go module proxy by `scripts/witnesses.sh`), under a 2-of-2
//! policy in every trust root (registry, gateways, the CLI's checks of the gateways'
//! answers, the Rust SDK's offline check):
//!
//! 1. the member flow: join → keygen → CSR → issue → import → sign → `verify` through
//!    gateway 1, every check passing, `witness_quorum` included;
//! 2. a witness that stops answering (litewitness, SIGSTOP): gateway 1's answers go stale
//!    after its maximum age; when it answers again (SIGCONT), they are fresh again;
//! 3. a split view: the manager's key serves a second history (a copy of the registry's
//!    data, extended differently: carol joins the honest one, mallory the fork).
//!    - (a) Submitted to the same witnesses, the fork is refused by **both**: its `/readyz`
//!      names each as failing with a 422, a 409 or "larger than the tree submitted" (a
//!      409 that showed the witness holds a larger tree), and its
//!      `dgsp_registry_witness_up` is 0 and `…_consecutive_failures` keeps rising for
//!      each after mallory's join;
//!    - (b) it never reaches quorum: at every poll its `/v1/checkpoint` is the pre-fork one
//!      (size and witnessed note no larger than at the fork);
//!    - (c) served anyway (the fork run without witnesses: what a dishonest manager would do;
//!      no witnessed note, or one with the log's signature alone), gateway 2 following it
//!      never answers valid, not at any poll (neither its own `valid` nor the CLI's), goes
//!      stale and names the fault in `/readyz` (`unwitnessed_checkpoint`, or
//!      `witness_quorum` for a log-only witnessed note), the CLI the same check;
//!    - (d) gateway 2's live answer, saved to a file, is refused offline by the Rust SDK
//!      (`TrustRoot::with_witness_policy` + `check_answer`) with `witnessed_checkpoint` or
//!      `witness_quorum` failed. Python and JS are not run here (their packages are built by
//!      `sdk/python/test.sh` and `sdk/js/test.sh`, not by `cargo test`): they refuse the
//!      same cases through the shared conformance vectors "fips205: no witnessed
//!      checkpoint, witness policy required" and "fips205: witnessed, one cosignature
//!      short" (`sdk/vectors/conformance.json`);
//!    - (e) `audit --compare` (the honest registry, the fork, gateway 1, the honest log as
//!      source) exits 3 with a `split_view` naming the fork, carrying the fork's note and
//!      the honest note of the other side as evidence;
//! 4. revocation under the quorum: `operator revoke` of alice on the honest registry;
//!    gateway 1 (restarted to follow it) answers `revoked`, and the CLI's own checks of that
//!    answer all pass, `witnessed_checkpoint` and `witness_quorum` included (the witnessed
//!    note covers the revocation), except the two that say revoked: `gateway_status` and
//!    `revocation_proof` ("IS revoked"); `operator open` names alice and `judge` through
//!    gateway 1 accepts the opening.
//!
//! `DGSP_SKIP_WITNESSES=1` skips it, saying so.

use crate::cli_support;
use crate::services;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use cli_support::{cli, expect, open_and_judge, p, shows_revoked};
use dgsp_witness::test_server::TestWitnesses;
use serde_json::Value;
use services::{binary, free_port, init_group, Service};

const ADMIN: &str = "admin-token-for-the-witnessed-stack";
const PASSPHRASE: &str = "a long passphrase for the manager key";
/// The gateways' maximum age (s): short, so that staleness shows within the test.
const MAX_AGE: &str = "6";

fn registry(name: &'static str, data: &Path, policy: Option<&Path>) -> Service {
    let mut args = vec![
        "serve".to_owned(),
        "--data".into(),
        p(data),
        "--listen".into(),
        format!("127.0.0.1:{}", free_port()),
        "--checkpoint-interval-secs".into(),
        "1".into(),
        "--witness-timeout-ms".into(),
        "1500".into(),
    ];
    if let Some(policy) = policy {
        args.extend(["--witness-policy".into(), p(policy)]);
    }
    Service::start(
        name,
        "dgsp-registry",
        &args,
        &[
            ("DGSP_KEY_PASSPHRASE", PASSPHRASE),
            ("DGSP_ADMIN_TOKEN", ADMIN),
        ],
    )
}

fn gateway(name: &'static str, registry: &str, dir: &Path, group: &Path, policy: &Path) -> Service {
    Service::start(
        name,
        "dgsp-gateway",
        &[
            "serve".into(),
            "--registry".into(),
            registry.into(),
            "--group-key".into(),
            p(group),
            "--witness-policy".into(),
            p(policy),
            "--data".into(),
            p(dir),
            "--listen".into(),
            format!("127.0.0.1:{}", free_port()),
            "--poll-ms".into(),
            "100".into(),
            "--max-staleness-secs".into(),
            MAX_AGE.into(),
        ],
        &[],
    )
}

/// `GET url` as JSON (Null when it does not answer 200 with JSON).
async fn get(url: String) -> Value {
    match reqwest::get(url).await {
        Ok(r) if r.status().is_success() => r.json().await.unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

/// Polls `what` until `done` holds (at most `within`); returns the last value.
async fn until<F, Fut>(
    within: Duration,
    what: &str,
    mut f: F,
    done: impl Fn(&Value) -> bool,
) -> Value
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    let deadline = Instant::now() + within;
    loop {
        let v = f().await;
        if done(&v) {
            return v;
        }
        assert!(Instant::now() < deadline, "{what}: never; last {v}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn witnessed_member_flow_outage_and_split_view() {
    let tmp = tempfile::tempdir().unwrap();
    let d = |name: &str| tmp.path().join(name);

    // The group, its trust anchor and its log key.
    init_group(&d("group"), PASSPHRASE, &d("group.pub"));
    let out = Command::new(binary("dgsp-registry"))
        .args(["log-key", "--data", &p(&d("group"))])
        .env("DGSP_KEY_PASSPHRASE", PASSPHRASE)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).unwrap();
    let vkey = printed
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("vkey "))
        .expect("log-key prints the vkey first")
        .to_owned();

    let Some(witnesses) = TestWitnesses::start("witnessed stack", &[&vkey]) else {
        return;
    };
    let policy = witnesses.policy_path.clone();

    let mut reg = registry("registry", &d("group"), Some(&policy));
    reg.ready().await;
    let mut g1 = gateway("gateway-1", &reg.url, &d("g1"), &d("group.pub"), &policy);
    g1.ready().await;

    // 1. The member flow, every check including the quorum.
    let operator = [
        ("DGSP_REGISTRY_URL", reg.url.clone()),
        ("DGSP_ADMIN_TOKEN", ADMIN.to_owned()),
    ];
    let wallet = [
        ("DGSP_WALLET", p(&d("alice.wallet"))),
        (
            "DGSP_WALLET_PASSPHRASE",
            "alice has a long passphrase".to_owned(),
        ),
        ("DGSP_WALLET_KDF", "1024,1,1".to_owned()),
    ];
    expect(
        &operator,
        0,
        &["operator", "join", "alice", "bob", "--out", &p(&d("joins"))],
    )
    .await;
    let join = p(&d("joins").join("alice.join.json"));
    expect(&wallet, 0, &["member", "keygen", "--join", &join]).await;
    let (csr, certs) = (p(&d("alice.csr.json")), p(&d("alice.certs.json")));
    expect(
        &wallet,
        0,
        &["member", "csr", "--count", "2", "--out", &csr],
    )
    .await;
    expect(&operator, 0, &["operator", "issue", &csr, "--out", &certs]).await;
    expect(&wallet, 0, &["member", "import", &certs]).await;
    std::fs::write(d("alice.txt"), "alice's statement").unwrap();
    expect(
        &wallet,
        0,
        &[
            "member",
            "sign",
            &p(&d("alice.txt")),
            "--out",
            &p(&d("alice.sig")),
        ],
    )
    .await;
    let verify_args = |policy: &Path| {
        vec![
            "verify".to_owned(),
            "--message".into(),
            p(&d("alice.txt")),
            "--signature".into(),
            p(&d("alice.sig")),
            "--group-key".into(),
            p(&d("group.pub")),
            "--witness-policy".into(),
            p(policy),
            "--max-age".into(),
            MAX_AGE.into(),
        ]
    };
    let args = verify_args(&policy);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let on = |gw: &Service| [("DGSP_GATEWAY_URL", gw.url.clone())];
    let verify_on = |gw: &Service| {
        let env = on(gw);
        let args = args.clone();
        async move { cli(&env, &args).await.json }
    };
    let ok = until(
        Duration::from_secs(30),
        "alice valid through gateway 1",
        || verify_on(&g1),
        |v| v["valid"] == true,
    )
    .await;
    let checks = ok["checks"].as_array().unwrap();
    assert!(
        checks
            .iter()
            .any(|c| c["check"] == "witness_quorum" && c["passed"] == true),
        "{ok}"
    );
    assert!(
        ok["freshness"]["checkpoint"]["witnessed"].is_string(),
        "{ok}"
    );

    // 2. litewitness stops answering: gateway 1's answers go stale; it returns: fresh again.
    witnesses.freeze_litewitness();
    let stale = until(
        Duration::from_secs(30),
        "stale while litewitness is down",
        || verify_on(&g1),
        |v| v["valid"] == false && v["freshness"]["stale"] == true,
    )
    .await;
    assert!(stale["failed_check"].is_string(), "{stale}");
    witnesses.thaw_litewitness();
    until(
        Duration::from_secs(30),
        "fresh again once litewitness answers",
        || verify_on(&g1),
        |v| v["valid"] == true,
    )
    .await;

    // 3. A second history. The registry's data as it is now, copied; both go on differently.
    let size_at_fork = get(format!("{}/v1/checkpoint", reg.url)).await["size"]
        .as_u64()
        .unwrap();
    reg.stop();
    let cp = Command::new("cp")
        .args(["-a", &p(&d("group")), &p(&d("fork"))])
        .status()
        .unwrap();
    assert!(cp.success());
    let mut reg = registry("registry", &d("group"), Some(&policy));
    reg.ready().await;
    let operator = [
        ("DGSP_REGISTRY_URL", reg.url.clone()),
        ("DGSP_ADMIN_TOKEN", ADMIN.to_owned()),
    ];
    expect(
        &operator,
        0,
        &["operator", "join", "carol", "--out", &p(&d("joins-a"))],
    )
    .await;
    until(
        Duration::from_secs(30),
        "the honest history witnessed past the fork",
        || get(format!("{}/v1/checkpoint", reg.url)),
        |v| v["size"].as_u64() > Some(size_at_fork) && v["witnessed"].is_string(),
    )
    .await;

    // The second history, submitted to the same witnesses: refused, never published.
    let mut fork = registry("fork", &d("fork"), Some(&policy));
    let fork_operator = [
        ("DGSP_REGISTRY_URL", fork.url.clone()),
        ("DGSP_ADMIN_TOKEN", ADMIN.to_owned()),
    ];
    // Not ready (its newest checkpoint is only the one before the fork, and ages): wait
    // for it to answer at all.
    until(
        Duration::from_secs(30),
        "the fork registry answers",
        || get(format!("{}/v1/checkpoint", fork.url)),
        |v| v.is_object(),
    )
    .await;
    expect(
        &fork_operator,
        0,
        &["operator", "join", "mallory", "--out", &p(&d("joins-b"))],
    )
    .await;
    let failures_at_join = {
        let m = text(format!("{}/metrics", fork.url)).await;
        WITNESSES.map(|w| witness_metric(&m, "consecutive_failures", w).unwrap_or(0))
    };
    // (a) and (b), polled together: every poll, the fork has published nothing past the
    // fork; done once both witnesses have refused it again and again since mallory joined.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (metrics, readyz) = loop {
        let served = get(format!("{}/v1/checkpoint", fork.url)).await;
        assert!(
            served["size"].as_u64() <= Some(size_at_fork),
            "the fork published a checkpoint past the fork without a quorum: {served}"
        );
        if let Some(w) = served["witnessed"].as_str() {
            let size: u64 = w.lines().nth(1).unwrap().parse().unwrap();
            assert!(size <= size_at_fork, "the fork's witnessed note: {w}");
        }
        let metrics = text(format!("{}/metrics", fork.url)).await;
        let readyz = text(format!("{}/readyz", fork.url)).await;
        let refused = WITNESSES.iter().zip(failures_at_join).all(|(w, before)| {
            witness_metric(&metrics, "up", w) == Some(0)
                && witness_metric(&metrics, "consecutive_failures", w) >= Some(before + 3)
                && refusal(&readyz, w).is_some()
        });
        if refused {
            break (metrics, readyz);
        }
        assert!(
            Instant::now() < deadline,
            "the witnesses never both refused the fork: {readyz}\n{metrics}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for w in WITNESSES {
        let why = refusal(&readyz, w).unwrap();
        assert!(
            why.contains("422:")
                || why.contains("409:")
                || why.contains("larger than the tree submitted"),
            "{w} did not refuse the fork with a 409 or a 422: {why}\n{metrics}"
        );
        eprintln!("the fork, refused by {w}: {why}");
    }
    let served = get(format!("{}/v1/checkpoint", fork.url)).await;
    assert!(
        served["size"].as_u64() <= Some(size_at_fork),
        "the fork published a checkpoint past the fork without a quorum: {served}"
    );

    // Served anyway: the same key, no witnesses.
    fork.stop();
    let mut fork = registry("fork", &d("fork"), None);
    fork.ready().await;
    let forked = until(
        Duration::from_secs(30),
        "the fork's own checkpoint past the fork",
        || get(format!("{}/v1/checkpoint", fork.url)),
        |v| v["size"].as_u64() > Some(size_at_fork),
    )
    .await;
    // No witness cosigned it: no witnessed note, or (a registry that signs its log-key note
    // without witnesses) one with the log's signature line alone.
    if let Some(w) = forked["witnessed"].as_str() {
        let lines = w.split("\n\n").nth(1).unwrap_or_default();
        assert_eq!(lines.lines().count(), 1, "a cosigned fork: {w}");
    }

    // (c) A gateway following the fork never answers valid, at any poll, and goes stale.
    let mut g2 = gateway("gateway-2", &fork.url, &d("g2"), &d("group.pub"), &policy);
    let started = Instant::now();
    let max_age = Duration::from_secs(MAX_AGE.parse().unwrap());
    let mut polls = 0;
    let mut refusal_seen = None;
    while refusal_seen.is_none() || started.elapsed() < max_age + Duration::from_secs(1) {
        let v = verify_on(&g2).await;
        polls += 1;
        assert_ne!(v["valid"], true, "gateway 2 (poll {polls}): valid: {v}");
        assert_ne!(
            v["gateway_valid"], true,
            "gateway 2 (poll {polls}) said valid itself: {v}"
        );
        if v["valid"] == false && v["freshness"]["stale"] == true {
            refusal_seen = Some(v.clone());
        }
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "gateway 2 never refused the fork as stale: {v}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let answer = refusal_seen.unwrap();
    assert!(answer["failed_check"].is_string(), "{answer}");
    // Named: no witnessed note (`witnessed_checkpoint`), or one no witness cosigned
    // (`witness_quorum`).
    let witness_check = answer["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            (c["check"] == "witnessed_checkpoint" || c["check"] == "witness_quorum")
                && c["passed"] == false
        })
        .cloned();
    assert!(witness_check.is_some(), "{answer}");
    eprintln!(
        "gateway 2: {polls} answers in {:?}, none valid; failed check {}",
        started.elapsed(),
        answer["failed_check"]
    );
    let body = text(format!("{}/readyz", g2.url)).await;
    assert!(
        body.contains("unwitnessed_checkpoint") || body.contains("witness_quorum"),
        "{body}"
    );

    // (d) Gateway 2's live answer, saved, and refused offline by the Rust SDK by name.
    let message = std::fs::read(d("alice.txt")).unwrap();
    let signature = dgsp_manager::documents::read_signature(&d("alice.sig")).unwrap();
    let live = reqwest::Client::new()
        .post(format!("{}/v1/verify", g2.url))
        .json(&serde_json::json!({
            "message": B64.encode(&message),
            "signature": B64.encode(signature.to_bytes()),
        }))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    std::fs::write(d("g2-answer.json"), &live).unwrap();
    let group_key = match dgsp_manager::io::read_anchor(&p(&d("group.pub"))).unwrap() {
        dgsp_wire::anchor::Anchor::Key(k) => *k,
        _ => panic!("group.pub is not a key"),
    };
    let root = dgsp_verifier::TrustRoot::new(group_key)
        .with_witness_policy(&std::fs::read_to_string(&policy).unwrap(), None)
        .unwrap();
    let report = root
        .check_answer(
            &message,
            &signature.to_bytes(),
            &std::fs::read(d("g2-answer.json")).unwrap(),
            None,
            &dgsp_verifier::Policy::max_age_secs(
                MAX_AGE.parse().unwrap(),
                dgsp_wire::log::now_ms(),
            ),
        )
        .unwrap();
    assert!(
        report.witnesses_checked && !report.valid,
        "{:?}",
        report.checks
    );
    let sdk_check = report
        .checks
        .0
        .iter()
        .find(|c| {
            !c.passed
                && (c.check == dgsp_verifier::evidence::WITNESSED_CHECKPOINT
                    || c.check == dgsp_verifier::evidence::WITNESS_QUORUM)
        })
        .unwrap_or_else(|| panic!("no witness check failed: {:?}", report.checks));
    eprintln!(
        "the Rust SDK refuses gateway 2's saved answer: {}: {}",
        sdk_check.check, sdk_check.detail
    );

    // (e) audit --compare: the two histories, both notes as evidence.
    let run = cli(
        &[],
        &[
            "audit",
            "--group-key",
            &p(&d("group.pub")),
            "--compare",
            &reg.url,
            &fork.url,
            &g1.url,
            "--registry",
            &reg.url,
        ],
    )
    .await;
    let short = |v: &Value| v.to_string().chars().take(2000).collect::<String>();
    assert_eq!(run.code, 3, "{} {}", short(&run.json), run.stderr);
    // The fork is reported as a split (against the honest registry or the log source,
    // whichever it is compared with), its own signed note and the honest side's among the
    // evidence.
    let root_line = |note: &str| note.lines().nth(2).unwrap().to_owned();
    let honest_sources = [
        reg.url.clone(),
        g1.url.clone(),
        format!("{}/v1/log", reg.url),
    ];
    let split = run.json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "split_view")
        .find(|f| f["urls"].as_array().unwrap().iter().any(|u| u == &fork.url))
        .unwrap_or_else(|| panic!("no split view naming the fork: {}", short(&run.json)));
    let evidence = split["evidence"].as_array().unwrap();
    assert_eq!(evidence.len(), 2, "{split}");
    let (fork_side, honest_side) = if evidence[0]["url"] == fork.url.as_str() {
        (&evidence[0], &evidence[1])
    } else {
        (&evidence[1], &evidence[0])
    };
    assert_eq!(fork_side["url"], fork.url.as_str(), "{split}");
    let fork_note = fork_side["note"].as_str().unwrap();
    let honest_url = honest_side["url"].as_str().unwrap();
    assert!(
        honest_sources
            .iter()
            .any(|u| honest_url.starts_with(u.as_str())),
        "{split}"
    );
    let honest_note = honest_side["note"].as_str().unwrap();
    // Both notes verbatim: the same group's origin, two trees no proof joins.
    assert!(!fork_note.is_empty() && !honest_note.is_empty(), "{split}");
    assert_eq!(
        fork_note.lines().next(),
        honest_note.lines().next(),
        "{split}"
    );
    assert_ne!(fork_side["root"], honest_side["root"], "{split}");
    assert_ne!(root_line(fork_note), root_line(honest_note), "{split}");
    eprintln!(
        "audit --compare: split between {} and {honest_url}: {}",
        fork.url, split["detail"]
    );

    // 4. Revocation under the quorum, through gateway 1 following the honest registry
    // (restarted on its replica: the registry it followed moved to another port in 3).
    g1.stop();
    let mut g1 = gateway("gateway-1", &reg.url, &d("g1"), &d("group.pub"), &policy);
    g1.ready().await;
    until(
        Duration::from_secs(30),
        "alice valid through gateway 1 before the revocation",
        || verify_on(&g1),
        |v| v["valid"] == true,
    )
    .await;
    let before = get(format!("{}/v1/checkpoint", reg.url)).await["size"]
        .as_u64()
        .unwrap();
    expect(
        &operator,
        0,
        &["operator", "revoke", "--username", "alice", "--yes"],
    )
    .await;
    let revoked = until(
        Duration::from_secs(30),
        "alice revoked through gateway 1, under the quorum",
        || verify_on(&g1),
        |v| v["status"] == "revoked",
    )
    .await;
    assert!(shows_revoked(&revoked), "{revoked}");
    // Every check passes but the gateway's word and the proof, both saying revoked.
    let checks = revoked["checks"].as_array().unwrap();
    for c in checks {
        let expected_to_fail = c["check"] == "gateway_status" || c["check"] == "revocation_proof";
        assert_eq!(c["passed"], !expected_to_fail, "{c}: {revoked}");
    }
    for check in ["witnessed_checkpoint", "witness_quorum"] {
        assert!(
            checks.iter().any(|c| c["check"] == check),
            "no {check}: {revoked}"
        );
    }
    let witnessed = revoked["freshness"]["checkpoint"]["witnessed"]
        .as_str()
        .unwrap_or_else(|| panic!("no witnessed note: {revoked}"));
    let witnessed_size: u64 = witnessed.lines().nth(1).unwrap().parse().unwrap();
    assert!(witnessed_size > before, "{witnessed}");
    let opened = open_and_judge(&operator, &on(&g1), &d("alice.txt"), &d("alice.sig")).await;
    assert_eq!(opened["username"], "alice", "{opened}");

    for s in [&mut g2, &mut fork, &mut g1, &mut reg] {
        s.stop();
    }
}

/// The witnesses of the test policy, by their names in it.
const WITNESSES: [&str; 2] = ["omniwitness", "litewitness"];

/// `GET url` as text (empty when it does not answer).
async fn text(url: String) -> String {
    match reqwest::get(url).await {
        Ok(r) => r.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// The value of `dgsp_registry_witness_<name>{witness="<witness>"}` in a `/metrics` text.
fn witness_metric(metrics: &str, name: &str, witness: &str) -> Option<u64> {
    let prefix = format!("dgsp_registry_witness_{name}{{witness=\"{witness}\"}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|v| v as u64)
}

/// Why the registry's `/readyz` says `witness` is failing (`<name> failing (N× in a row:
/// <why>)`), if it does.
fn refusal<'a>(readyz: &'a str, witness: &str) -> Option<&'a str> {
    let start = readyz.find(&format!("{witness} failing ("))?;
    let rest = &readyz[start..];
    let end = rest
        .find(", omniwitness")
        .or_else(|| rest.find(", litewitness"))
        .unwrap_or(rest.len());
    // In a 503's problem JSON the summary ends the `detail` string.
    Some(rest[..end].trim_end_matches(['"', '}', '\n']))
}
