//! Witnessed, end to end through the real binaries and two real witnesses (omniwitness and
//! litewitness, built from the Go module proxy by `scripts/witnesses.sh`), under a 2-of-2
//! policy in every trust root (registry, gateways, the CLI's offline checks):
//!
//! 1. the member flow (join → CSR → issue → sign → verify → revoke) verifies through a
//!    gateway with every check, the witness quorum included;
//! 2. a witness that stops answering: the registry publishes nothing newer and the gateway's
//!    answers go stale after its maximum age; when it answers again, they are fresh again;
//! 3. a split view: the manager's key serves a second history (a copy of the registry's data
//!    taken earlier, extended differently). Submitted to the witnesses, it is refused and
//!    never reaches quorum; served anyway (a registry run without witnesses: what a dishonest
//!    manager would do), a gateway following it refuses it (named fault) and goes stale, the
//!    CLI refuses its answers (named check), and `audit --compare` reports the split with
//!    both notes.
//!
//! `DGSP_SKIP_WITNESSES=1` skips it, saying so.

#[path = "support/cli.rs"]
mod cli_support;
#[path = "support/services.rs"]
mod services;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use cli_support::{cli, expect, p};
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
    let honest = until(
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
    let refused = until(
        Duration::from_secs(30),
        "the witnesses refuse the fork",
        || async {
            let r = reqwest::get(format!("{}/metrics", fork.url)).await.unwrap();
            Value::String(r.text().await.unwrap())
        },
        |v| {
            let m = v.as_str().unwrap();
            m.contains("dgsp_registry_witness_up{witness=\"omniwitness\"} 0")
                || m.contains("dgsp_registry_witness_up{witness=\"litewitness\"} 0")
        },
    )
    .await;
    let served = get(format!("{}/v1/checkpoint", fork.url)).await;
    assert!(
        served["size"].as_u64() <= Some(size_at_fork),
        "the fork published a checkpoint past the fork without a quorum: {served}\n{refused}"
    );
    let readyz = reqwest::get(format!("{}/readyz", fork.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    eprintln!("the fork registry's /readyz: {readyz}");

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
    assert!(forked["witnessed"].is_null(), "{forked}");

    // A gateway following the fork refuses it and never says valid past its maximum age.
    let mut g2 = gateway("gateway-2", &fork.url, &d("g2"), &d("group.pub"), &policy);
    let started = Instant::now();
    let answer = until(
        Duration::from_secs(40),
        "gateway 2 refuses the fork",
        || verify_on(&g2),
        |v| v["valid"] == false && v["freshness"]["stale"] == true,
    )
    .await;
    assert!(answer["failed_check"].is_string(), "{answer}");
    let witnessed_check = answer["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "witnessed_checkpoint")
        .cloned()
        .unwrap_or_default();
    assert_eq!(witnessed_check["passed"], false, "{answer}");
    eprintln!(
        "gateway 2 stale {:?} after it started: failed check {}",
        started.elapsed(),
        answer["failed_check"]
    );
    let ready = reqwest::get(format!("{}/readyz", g2.url)).await.unwrap();
    let body = ready.text().await.unwrap();
    assert!(body.contains("unwitnessed_checkpoint"), "{body}");

    // audit --compare: the two histories, both notes as evidence.
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
    // whichever it is compared with), its own signed note among the evidence.
    let fork_root = forked["note"].as_str().unwrap().lines().nth(2).unwrap();
    let splits: Vec<&Value> = run.json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "split_view")
        .collect();
    assert!(
        splits.iter().any(|f| {
            f["urls"].as_array().unwrap().iter().any(|u| u == &fork.url)
                && f["evidence"].to_string().contains(fork_root)
        }),
        "no split view naming the fork with its note: {}",
        short(&run.json)
    );
    let honest_root = honest["note"].as_str().unwrap().lines().nth(2).unwrap();
    assert_ne!(honest_root, fork_root);
    for s in [&mut g2, &mut fork, &mut g1, &mut reg] {
        s.stop();
    }
}
