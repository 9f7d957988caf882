//! The freeze attack against `dgsp-manager verify --group-key`, through the real binary. A
//! real registry (signing a checkpoint every second), a proxy that freezes it (drops every
//! entry after the head of that moment, reports that head) and two gateways behind the
//! proxy: one with a 3 s staleness bound, one configured to trust anything for an hour (as
//! a compromised or careless gateway would). A third follows the registry directly. After a
//! revocation:
//! - the direct gateway answers `revoked`, and the CLI refuses (the proof shows it revoked);
//! - the bounded frozen gateway answers `stale`, and the CLI refuses naming that;
//! - the careless frozen gateway still answers `ok, valid: true, stale: false`, so a verifier
//!   trusting it is fooled, but the CLI checking the signed checkpoint's age refuses it
//!   (`checkpoint_age`), exit 3.

use crate::cli_support;
use crate::support;

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use cli_support::{cli, p, shows_revoked, Run};
use dgsp_gateway::anchor::Anchor;
use support::proxy::Proxy;
use support::{gateway_config, gateway_in, wait_for};

async fn verify(gateway: &str, files: &[String; 3], extra: &[&str]) -> Run {
    let mut args = vec![
        "verify",
        "--message",
        &files[0],
        "--signature",
        &files[1],
        "--group-key",
        &files[2],
        "--max-age",
        "3",
    ];
    args.extend_from_slice(extra);
    cli(&[("DGSP_GATEWAY_URL", gateway.to_owned())], &args).await
}

fn failed(run: &Run) -> Vec<String> {
    run.json["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["passed"] == false)
        .map(|c| c["check"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_refuses_a_frozen_gateway_by_the_age_of_its_signed_checkpoint() {
    let reg = support::registry_with_cadence(Duration::from_secs(1)).await;
    let mut bob = reg.member("bob", 1).await;
    let settled = reg.settled().await;
    let group = reg.manager.public_key().clone();
    let proxy = Proxy::start(&reg.feed_url).await;
    let direct = reg
        .follower(|c| c.api.max_staleness = Duration::from_secs(3))
        .await;
    let behind = |staleness: u64| {
        let dir = tempfile::tempdir().unwrap();
        let mut c = gateway_config(&proxy.url, Anchor::Key(Box::new(group.clone())), dir.path());
        c.api.max_staleness = Duration::from_secs(staleness);
        gateway_in(c, dir)
    };
    let bounded = behind(3).await;
    let careless = behind(3600).await;
    for gw in [&bounded, &careless] {
        gw.reach(settled).await;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = |name: &str| tmp.path().join(name);
    std::fs::write(d("order.txt"), b"order 7").unwrap();
    std::fs::write(d("order.sig"), B64.encode(bob.sign(b"order 7").to_bytes())).unwrap();
    std::fs::write(
        d("group.pub"),
        format!("{}\n", B64.encode(group.to_bytes())),
    )
    .unwrap();
    let files = [p(&d("order.txt")), p(&d("order.sig")), p(&d("group.pub"))];

    // Before the freeze, every gateway's evidence passes.
    for gw in [&direct, &bounded, &careless] {
        let files = &files;
        wait_for("a valid verdict", || async move {
            (verify(&gw.url, files, &[]).await.code == 0).then_some(())
        })
        .await;
    }

    proxy.freeze(false).await;
    reg.revoke(bob.id).await;

    // Directly: revoked, shown by the proof the CLI checks itself.
    let run = wait_for("the revocation through the direct gateway", || async {
        let run = verify(&direct.url, &files, &[]).await;
        (run.json["status"] == "revoked").then_some(run)
    })
    .await;
    assert_eq!(run.code, 3);
    assert!(shows_revoked(&run.json), "{}", run.json["checks"]);

    // Behind the frozen proxy, once the last signed checkpoint is older than 3 s.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let run = verify(&bounded.url, &files, &[]).await;
    assert_eq!(run.code, 3, "{}", run.json["checks"]);
    assert_eq!(run.json["status"], "stale");
    assert_eq!(run.json["failed_check"], "gateway_status");
    assert!(
        failed(&run).contains(&"checkpoint_age".to_owned()),
        "{}",
        run.json["checks"]
    );

    // The careless gateway is fooled...
    let fooled = careless
        .verify(b"order 7", &cli_support_sig(&d("order.sig")))
        .await;
    assert_eq!(
        (
            fooled["status"].as_str(),
            fooled["valid"].as_bool(),
            fooled["freshness"]["stale"].as_bool()
        ),
        (Some("ok"), Some(true), Some(false)),
        "{fooled}"
    );
    // ... and so is anyone who trusts it, but not the CLI checking its evidence.
    let trusting = cli(
        &[("DGSP_GATEWAY_URL", careless.url.clone())],
        &["verify", "--message", &files[0], "--signature", &files[1]],
    )
    .await;
    assert_eq!(
        trusting.code, 0,
        "trusting the gateway: {}",
        trusting.stderr
    );
    let run = verify(&careless.url, &files, &[]).await;
    assert_eq!(run.code, 3, "{}", run.json["checks"]);
    assert_eq!(
        run.json["failed_check"], "checkpoint_age",
        "{}",
        run.json["checks"]
    );
    assert_eq!(failed(&run), ["checkpoint_age"]);
    // The text form names the check too.
    let text = std::process::Command::new(env!("CARGO_BIN_EXE_dgsp-manager"))
        .args(["verify", "--message", &files[0], "--signature", &files[1]])
        .args([
            "--group-key",
            &files[2],
            "--max-age",
            "3",
            "--gateway",
            &careless.url,
        ])
        .output()
        .unwrap();
    assert_eq!(text.status.code(), Some(3));
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains("check checkpoint_age failed: too old"),
        "{stdout}"
    );

    for gw in [bounded, careless, direct] {
        gw.shutdown().await;
    }
    reg.shutdown().await;
}

/// The signature in a signature file.
fn cli_support_sig(path: &std::path::Path) -> dgsp_core::Signature {
    let text = std::fs::read_to_string(path).unwrap();
    dgsp_core::Signature::from_bytes(&B64.decode(text.trim()).unwrap()).unwrap()
}
