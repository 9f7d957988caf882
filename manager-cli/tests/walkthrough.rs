//! The whole life of a group through the `dgsp-manager` binary, against a real registry and
//! gateway on loopback (RocksDB in temp dirs): join → keygen → CSR → issue → import → sign →
//! verify (with an offline proof check) → open → judge → revoke → revoked with a proof that
//! checks offline → export → audit. The same path as docs/walkthrough.md.

use crate::cli_support;
use crate::support;

use std::path::PathBuf;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use cli_support::{cli, expect, p};
use support::{registry, wait_for, ADMIN};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_join_to_a_revoked_member_and_a_passed_audit() {
    let reg = registry().await;
    let gw = reg.follower(|_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| -> PathBuf { dir.path().join(name) };
    let group_key = d("group.pub");
    std::fs::write(
        &group_key,
        format!("{}\n", B64.encode(reg.manager.public_key().to_bytes())),
    )
    .unwrap();
    let operator = [
        ("DGSP_REGISTRY_URL", reg.url.clone()),
        ("DGSP_ADMIN_TOKEN", ADMIN.to_owned()),
        ("DGSP_GATEWAY_URL", gw.url.clone()),
    ];
    let member = [
        ("DGSP_WALLET", p(&d("alice.wallet"))),
        (
            "DGSP_WALLET_PASSPHRASE",
            "correct horse battery staple".to_owned(),
        ),
        ("DGSP_WALLET_KDF", "1024,1,1".to_owned()),
    ];
    let anyone = [("DGSP_GATEWAY_URL", gw.url.clone())];

    // Operator: admit two members, one join file each.
    let joined = expect(
        &operator,
        0,
        &["operator", "join", "alice", "bob", "--out", &p(&d("joins"))],
    )
    .await;
    assert_eq!(joined["members"][0]["username"], "alice");
    let alice = joined["members"][0]["id"].as_u64().unwrap();
    let join_file = d("joins").join("alice.join.json");
    assert!(join_file.exists());

    // Member: wallet, CSR; operator: certificates; member: import, sign.
    expect(&member, 0, &["member", "keygen", "--join", &p(&join_file)]).await;
    expect(
        &member,
        0,
        &[
            "member",
            "csr",
            "--count",
            "3",
            "--out",
            &p(&d("alice.csr.json")),
        ],
    )
    .await;
    let issued = expect(
        &operator,
        0,
        &[
            "operator",
            "issue",
            &p(&d("alice.csr.json")),
            "--out",
            &p(&d("alice.certs.json")),
        ],
    )
    .await;
    assert_eq!(issued["count"], 3);
    expect(
        &member,
        0,
        &["member", "import", &p(&d("alice.certs.json"))],
    )
    .await;
    std::fs::write(d("report.txt"), b"quarterly report, final").unwrap();
    expect(
        &member,
        0,
        &[
            "member",
            "sign",
            &p(&d("report.txt")),
            "--out",
            &p(&d("report.sig")),
        ],
    )
    .await;

    // Anyone: verify through the gateway, re-checking its proof offline.
    let head = reg.settled().await;
    gw.reach(head).await;
    let verify_args = [
        "verify",
        "--message",
        &p(&d("report.txt")),
        "--signature",
        &p(&d("report.sig")),
        "--group-key",
        &p(&group_key),
    ];
    let verified = expect(&anyone, 0, &verify_args).await;
    assert_eq!(verified["valid"], true);
    assert_eq!(verified["status"], "ok");
    assert_eq!(verified.get("failed_check"), None, "{verified}");
    assert!(
        verified["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["passed"] == true),
        "{verified}"
    );
    // Another message with the same signature is refused (exit 3).
    std::fs::write(d("forged.txt"), b"quarterly report, edited").unwrap();
    let forged = expect(
        &anyone,
        3,
        &[
            "verify",
            "--message",
            &p(&d("forged.txt")),
            "--signature",
            &p(&d("report.sig")),
        ],
    )
    .await;
    assert_eq!(forged["valid"], false);

    // Operator: open it; anyone: judge the opening (gateway and locally).
    let opened = expect(
        &operator,
        0,
        &[
            "operator",
            "open",
            "--message",
            &p(&d("report.txt")),
            "--signature",
            &p(&d("report.sig")),
        ],
    )
    .await;
    assert_eq!(opened["id"].as_u64(), Some(alice));
    assert_eq!(opened["username"], "alice");
    let pi = opened["pi_hex"].as_str().unwrap().to_owned();
    assert!(opened["judge_command"]
        .as_str()
        .unwrap()
        .contains(&format!("--pi {pi}")));
    let id = alice.to_string();
    let judge = |id: String, how: Vec<String>| {
        let mut args = vec![
            "judge".to_owned(),
            "--message".into(),
            p(&d("report.txt")),
            "--signature".into(),
            p(&d("report.sig")),
            "--id".into(),
            id,
            "--pi".into(),
            pi.clone(),
        ];
        args.extend(how);
        args
    };
    for how in [vec![], vec!["--group-key".to_owned(), p(&group_key)]] {
        let args = judge(id.clone(), how.clone());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(expect(&anyone, 0, &refs).await["correct"], true);
        let args = judge((alice + 1).to_string(), how);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(expect(&anyone, 3, &refs).await["correct"], false);
    }

    // Operator: revoke alice; the gateway reports her signature revoked, with a proof that
    // checks offline.
    let revoked = expect(
        &operator,
        0,
        &["operator", "revoke", "--username", "alice", "--yes"],
    )
    .await;
    assert_eq!(revoked["zetas"].as_array().unwrap().len(), 3);
    let (env, args) = (&anyone, &verify_args);
    let verdict = wait_for("the gateway reports the revocation", || async move {
        let run = cli(env, args).await;
        (run.code == 3).then_some(run.json)
    })
    .await;
    assert_eq!(verdict["status"], "revoked");
    assert!(cli_support::shows_revoked(&verdict), "{verdict}");
    let zeta = verdict["zeta"].as_str().unwrap();
    let zeta_hex = hex::encode(B64.decode(zeta).unwrap());
    let (_, proof) = gw.get(&format!("/v1/revocations/{zeta_hex}/proof")).await;
    let n = proof["snapshot"]["number"].as_u64().unwrap();
    let (_, snapshot) = gw.get(&format!("/v1/revocations/snapshots/{n}")).await;
    std::fs::write(d("proof.json"), proof.to_string()).unwrap();
    std::fs::write(d("snapshot.json"), snapshot.to_string()).unwrap();
    let checked = expect(
        &anyone,
        0,
        &[
            "check-proof",
            "--group-key",
            &p(&group_key),
            "--snapshot",
            &p(&d("snapshot.json")),
            "--zeta",
            &zeta_hex,
            "--proof",
            &p(&d("proof.json")),
        ],
    )
    .await;
    assert_eq!(checked["revoked"], true);

    // Operator views.
    let list = expect(&operator, 0, &["operator", "member", "list"]).await;
    let members = list["members"].as_array().unwrap();
    assert_eq!(members.len(), 2);
    assert_eq!(members[0]["active"], false);
    assert_eq!(members[1]["active"], true);
    let bob = expect(
        &operator,
        0,
        &["operator", "member", "show", "--username", "bob"],
    )
    .await;
    assert_eq!(bob["id"].as_u64(), Some(alice + 1));
    let status = expect(&operator, 0, &["operator", "status"]).await;
    assert!(status["head_seq"].as_u64().unwrap() >= head);

    // Auditor: export the log, audit the file and the live registry.
    expect(
        &operator,
        0,
        &["operator", "log", "export", "--out", &p(&d("log.jsonl"))],
    )
    .await;
    // With a registry URL in the environment too: --file wins.
    let report = expect(
        &operator,
        0,
        &[
            "audit",
            "--file",
            &p(&d("log.jsonl")),
            "--group-key",
            &p(&group_key),
        ],
    )
    .await;
    assert_eq!(report["violations"], serde_json::json!([]));
    let auditor = [
        ("DGSP_REGISTRY_URL", reg.url.clone()),
        ("DGSP_AUDITOR_TOKEN", ADMIN.to_owned()),
    ];
    let report = expect(&auditor, 0, &["audit"]).await;
    assert_eq!(report["violations"], serde_json::json!([]));

    // Refusals are typed and say what to do.
    let run = cli(
        &[
            ("DGSP_REGISTRY_URL", reg.url.clone()),
            ("DGSP_ADMIN_TOKEN", "wrong".to_owned()),
        ],
        &["operator", "join", "carol"],
    )
    .await;
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("\"refused\""), "{}", run.stderr);
    assert!(run.stderr.contains("401"), "{}", run.stderr);
    let run = cli(&[], &["operator", "status"]).await;
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("DGSP_REGISTRY_URL"), "{}", run.stderr);

    gw.shutdown().await;
    reg.shutdown().await;
}
