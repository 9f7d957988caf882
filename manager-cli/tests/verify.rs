//! `dgsp-manager verify --group-key` trusts nothing it can check. A lying gateway, played by
//! wiremock from a real gateway's honest answer, edits one thing at a time; each must be a
//! negative verdict (exit 3) naming the check that failed: a checkpoint older than
//! `--max-age`, one signed further ahead of this clock than `--clock-tolerance-ms`, a
//! checkpoint naming another snapshot than the proof's (or the right number
//! with another record hash), a checkpoint not signed by the group, a tampered proof, a
//! signature that does not verify here although the gateway says valid, a snapshot below
//! `--min-snapshot`, and a stale answer. The honest answer passes every check.

use crate::cli_support;
use crate::support;

use std::path::Path;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use cli_support::{cli, p, Run};
use dgsp_core::checkpoint::{origin_for, Checkpoint, SnapshotRef};
use dgsp_core::{Manager, ParamSet};
use dgsp_registry::publisher::snapshot_from_json;
use dgsp_wire::log::now_ms;
use serde_json::{json, Value};
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Serves `answer` for every verify and the real `snapshots` (index = number - 1).
async fn lie(server: &MockServer, answer: &Value, snapshots: &[Value]) {
    server.reset().await;
    Mock::given(method("POST"))
        .and(path("/v1/verify"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(server)
        .await;
    for (i, s) in snapshots.iter().enumerate() {
        Mock::given(method("GET"))
            .and(path(format!("/v1/revocations/snapshots/{}", i + 1)))
            .respond_with(ResponseTemplate::new(200).set_body_json(s))
            .mount(server)
            .await;
    }
    Mock::given(method("GET"))
        .and(path_regex("^/v1/revocations/snapshots/.*$"))
        .respond_with(ResponseTemplate::new(404))
        .mount(server)
        .await;
}

/// `answer` with its checkpoint note replaced by `note`.
fn with_note(answer: &Value, note: &str) -> Value {
    let mut a = answer.clone();
    a["freshness"]["checkpoint"]["note"] = json!(note);
    a
}

/// Runs `verify --group-key` (and `extra`) against the lying gateway.
async fn verify(gateway: &str, dir: &Path, message: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "verify",
        "--message",
        message,
        "--signature",
        "sig",
        "--group-key",
        "group.pub",
    ];
    args.extend_from_slice(extra);
    let args: Vec<String> = args
        .iter()
        .map(|a| match *a {
            "sig" | "group.pub" | "report.txt" | "forged.txt" => p(&dir.join(a)),
            other => other.to_owned(),
        })
        .collect();
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    cli(&[("DGSP_GATEWAY_URL", gateway.to_owned())], &refs).await
}

/// Requires a negative verdict whose first failed check is `check` with `words` in its
/// detail.
fn refused(run: &Run, check: &str, words: &str) {
    let checks = &run.json["checks"];
    assert_eq!(run.code, 3, "{checks} {}", run.stderr);
    assert_eq!(run.json["valid"], false, "{checks}");
    assert_eq!(run.json["failed_check"], check, "{checks}");
    let failed = run.json["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == check)
        .unwrap();
    assert_eq!(failed["passed"], false);
    assert!(
        failed["detail"].as_str().unwrap().contains(words),
        "{check}: {failed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_lie_of_a_gateway_is_a_negative_verdict_naming_the_check() {
    let reg = support::registry().await;
    let mut alice = reg.member("alice", 1).await;
    for name in ["bob", "carol"] {
        let m = reg.member(name, 1).await;
        reg.settled().await;
        reg.revoke(m.id).await;
        reg.settled().await;
    }
    let gw = reg.follower(|_| {}).await;
    let manager = reg.manager.clone();
    let group = manager.public_key().clone();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("group.pub"),
        format!("{}\n", B64.encode(group.to_bytes())),
    )
    .unwrap();
    std::fs::write(dir.join("report.txt"), b"the report").unwrap();
    std::fs::write(dir.join("forged.txt"), b"another report").unwrap();
    let sig = alice.sign(b"the report");
    std::fs::write(dir.join("sig"), B64.encode(sig.to_bytes())).unwrap();

    // The honest answer and every snapshot, from the real gateway.
    let honest = gw.verify(b"the report", &sig).await;
    assert_eq!(honest["status"], "ok", "{honest}");
    let n = honest["revocation"]["snapshot"]["number"].as_u64().unwrap();
    assert!(n >= 2, "{honest}");
    let mut snapshots = Vec::new();
    for k in 1..=n {
        snapshots.push(gw.get(&format!("/v1/revocations/snapshots/{k}")).await.1);
    }
    let record = |k: u64| {
        snapshot_from_json(&snapshots[k as usize - 1])
            .unwrap()
            .record
    };
    let covered = group
        .verify_checkpoint(honest["freshness"]["checkpoint"]["note"].as_str().unwrap())
        .unwrap();
    // Notes as the registry would sign them at `time`, naming `snapshot`.
    let note = |signer: &Manager, time: u64, snapshot: SnapshotRef| {
        signer.sign_checkpoint(&Checkpoint {
            time_unix_ms: Some(time),
            snapshot: Some(snapshot),
            origin: origin_for(&group),
            ..covered.clone()
        })
    };
    let current = SnapshotRef::of(&record(n));
    let fresh = with_note(&honest, &note(&manager, now_ms(), current));
    let server = MockServer::start().await;
    let url = server.uri();

    // The honest answer, with a note signed now: every check passes.
    lie(&server, &fresh, &snapshots).await;
    let run = verify(&url, dir, "report.txt", &[]).await;
    assert_eq!(run.code, 0, "{} {}", run.json["checks"], run.stderr);
    assert_eq!(
        (
            run.json["valid"].as_bool(),
            run.json["gateway_valid"].as_bool()
        ),
        (Some(true), Some(true))
    );
    let names: Vec<&str> = run.json["checks"]
        .as_array()
        .unwrap()
        .iter()
        .inspect(|c| assert_eq!(c["passed"], true, "{c}"))
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "gateway_status",
            "signature",
            "checkpoint_signature",
            "checkpoint_age",
            "future_checkpoint",
            "snapshot_signature",
            "snapshot_named",
            "revocation_proof"
        ]
    );

    // A checkpoint two minutes old: refused at the default --max-age, accepted at 300.
    let old = with_note(&honest, &note(&manager, now_ms() - 120_000, current));
    lie(&server, &old, &snapshots).await;
    refused(
        &verify(&url, dir, "report.txt", &[]).await,
        "checkpoint_age",
        "too old",
    );
    let run = verify(&url, dir, "report.txt", &["--max-age", "300"]).await;
    assert_eq!(run.code, 0, "{}", run.json["checks"]);

    // A checkpoint signed ten minutes ahead of this clock (a registry whose clock runs
    // ahead): its age is 0, yet it is refused at the default tolerance; accepted only by a
    // caller who tolerates that much skew.
    let ahead = with_note(&honest, &note(&manager, now_ms() + 600_000, current));
    lie(&server, &ahead, &snapshots).await;
    let run = verify(&url, dir, "report.txt", &[]).await;
    refused(&run, "future_checkpoint", "ahead of this clock");
    let age = &run.json["checks"][3];
    assert_eq!(
        (age["check"].as_str(), age["passed"].as_bool()),
        (Some("checkpoint_age"), Some(true)),
        "the age alone would have let it through: {age}"
    );
    let run = verify(&url, dir, "report.txt", &["--clock-tolerance-ms", "900000"]).await;
    assert_eq!(run.code, 0, "{}", run.json["checks"]);
    // Within the default tolerance (clocks 2 s apart): accepted.
    let near = with_note(&honest, &note(&manager, now_ms() + 2_000, current));
    lie(&server, &near, &snapshots).await;
    let run = verify(&url, dir, "report.txt", &[]).await;
    assert_eq!(run.code, 0, "{}", run.json["checks"]);

    // A checkpoint naming the previous snapshot while the proof is against the latest.
    let previous = SnapshotRef::of(&record(n - 1));
    lie(
        &server,
        &with_note(&honest, &note(&manager, now_ms(), previous)),
        &snapshots,
    )
    .await;
    refused(
        &verify(&url, dir, "report.txt", &[]).await,
        "snapshot_named",
        &format!(
            "proof is against snapshot {n}, the checkpoint names snapshot {}",
            n - 1
        ),
    );

    // The right number with another record hash.
    let mut other_hash = current;
    other_hash.hash[0] ^= 1;
    lie(
        &server,
        &with_note(&honest, &note(&manager, now_ms(), other_hash)),
        &snapshots,
    )
    .await;
    refused(
        &verify(&url, dir, "report.txt", &[]).await,
        "snapshot_named",
        "another record hash",
    );

    // A checkpoint signed by someone else's key.
    let stranger = Manager::generate(ParamSet::Sha2_128f, &mut rand_core::OsRng);
    lie(
        &server,
        &with_note(&honest, &note(&stranger, now_ms(), current)),
        &snapshots,
    )
    .await;
    refused(
        &verify(&url, dir, "report.txt", &[]).await,
        "checkpoint_signature",
        "no signature by this group's key",
    );

    // A tampered proof.
    let mut tampered = fresh.clone();
    let mut proof = B64
        .decode(tampered["revocation"]["proof"]["encoded"].as_str().unwrap())
        .unwrap();
    let last = proof.len() - 1;
    proof[last] ^= 1;
    tampered["revocation"]["proof"]["encoded"] = json!(B64.encode(proof));
    lie(&server, &tampered, &snapshots).await;
    refused(
        &verify(&url, dir, "report.txt", &[]).await,
        "revocation_proof",
        "",
    );

    // "Valid" for a message the signature does not sign.
    lie(&server, &fresh, &snapshots).await;
    refused(
        &verify(&url, dir, "forged.txt", &[]).await,
        "signature",
        "yet the gateway said it was valid",
    );

    // A snapshot older than the caller requires.
    let min = (n + 1).to_string();
    refused(
        &verify(&url, dir, "report.txt", &["--min-snapshot", &min]).await,
        "min_snapshot",
        "older than the minimum snapshot",
    );

    // A stale answer is no verdict.
    let mut stale = fresh.clone();
    stale["status"] = json!("stale");
    stale["valid"] = json!(false);
    stale["freshness"]["stale"] = json!(true);
    lie(&server, &stale, &snapshots).await;
    refused(
        &verify(&url, dir, "report.txt", &[]).await,
        "gateway_status",
        "stale",
    );

    // --max-age 0 is a usage error.
    let run = verify(&url, dir, "report.txt", &["--max-age", "0"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);

    gw.shutdown().await;
    reg.shutdown().await;
}
