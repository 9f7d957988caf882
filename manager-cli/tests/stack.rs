//! End to end through the real binaries, as an operator would run them: `dgsp-registry init`
//! → `dgsp-registry serve` + two `dgsp-gateway serve` → (dgsp-manager) join → CSR → issue →
//! sign → verify on both gateways → revoke → both report `revoked` with a proof checked
//! offline → open → judge → audit; then every process is stopped (SIGTERM) and started again
//! on the same data directories, and the state must have survived.
//!
//! The registry and gateway binaries are taken from the same target directory as
//! `dgsp-manager` (`cargo test --workspace` builds them; `scripts/test.sh` does).

use crate::cli_support;
use crate::services;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use cli_support::{cli, expect, open_and_judge, p, shows_revoked};
use serde_json::Value;
use services::{free_port, init_group, Service};

const ADMIN: &str = "admin-token-for-the-stack-test";
const AUDITOR: &str = "auditor-token-for-the-stack-test";
const PASSPHRASE: &str = "a long passphrase for the manager key";

/// The registry and two gateways on fixed ports and data directories.
struct Stack {
    dir: PathBuf,
    ports: [u16; 3],
}

impl Stack {
    async fn start(&self) -> [Service; 3] {
        let data = |n: &str| p(&self.dir.join(n));
        let listen = |port: u16| format!("127.0.0.1:{port}");
        let mut registry = Service::start(
            "registry",
            "dgsp-registry",
            &[
                "serve".into(),
                "--data".into(),
                data("group"),
                "--listen".into(),
                listen(self.ports[0]),
            ],
            &[
                ("DGSP_KEY_PASSPHRASE", PASSPHRASE),
                ("DGSP_ADMIN_TOKEN", ADMIN),
                ("DGSP_AUDITOR_TOKEN", AUDITOR),
            ],
        );
        registry.ready().await;
        let gateway = |name: &'static str, dir: &str, port: u16| {
            Service::start(
                name,
                "dgsp-gateway",
                &[
                    "serve".into(),
                    "--registry".into(),
                    registry.url.clone(),
                    "--group-key".into(),
                    data("group.pub"),
                    "--data".into(),
                    data(dir),
                    "--listen".into(),
                    listen(port),
                    "--poll-ms".into(),
                    "100".into(),
                ],
                &[],
            )
        };
        let mut a = gateway("gateway-a", "gateway-a", self.ports[1]);
        let mut b = gateway("gateway-b", "gateway-b", self.ports[2]);
        a.ready().await;
        b.ready().await;
        [registry, a, b]
    }
}

/// Verifies through one gateway until the answer has status `want` (the gateway follows the
/// registry within a poll or two); returns the final answer.
async fn verify_until(env: &[(&str, String)], args: &[&str], want: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let run = cli(env, args).await;
        if run.json["status"] == want {
            return run.json;
        }
        assert!(
            Instant::now() < deadline,
            "never {want}: {} {}",
            run.json,
            run.stderr
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binaries_through_a_revocation_and_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let d = |name: &str| dir.join(name);

    // init, and the trust anchor the gateways pin.
    init_group(&d("group"), PASSPHRASE, &d("group.pub"));

    let stack = Stack {
        dir: dir.clone(),
        ports: [free_port(), free_port(), free_port()],
    };
    let [mut registry, mut gw_a, mut gw_b] = stack.start().await;
    let operator = [
        ("DGSP_REGISTRY_URL", registry.url.clone()),
        ("DGSP_ADMIN_TOKEN", ADMIN.to_owned()),
    ];
    let wallet = |name: &str| {
        [
            ("DGSP_WALLET", p(&d(&format!("{name}.wallet")))),
            (
                "DGSP_WALLET_PASSPHRASE",
                format!("{name} has a long passphrase"),
            ),
            ("DGSP_WALLET_KDF", "1024,1,1".to_owned()),
        ]
    };
    let on = |gw: &Service| [("DGSP_GATEWAY_URL", gw.url.clone())];

    // join → keygen → CSR → issue → import → sign, for alice and bob.
    expect(
        &operator,
        0,
        &["operator", "join", "alice", "bob", "--out", &p(&d("joins"))],
    )
    .await;
    for name in ["alice", "bob"] {
        let w = wallet(name);
        let join = p(&d("joins").join(format!("{name}.join.json")));
        expect(&w, 0, &["member", "keygen", "--join", &join]).await;
        let csr = p(&d(&format!("{name}.csr.json")));
        let certs = p(&d(&format!("{name}.certs.json")));
        expect(&w, 0, &["member", "csr", "--count", "2", "--out", &csr]).await;
        expect(&operator, 0, &["operator", "issue", &csr, "--out", &certs]).await;
        expect(&w, 0, &["member", "import", &certs]).await;
        std::fs::write(d(&format!("{name}.txt")), format!("{name}'s statement")).unwrap();
        expect(
            &w,
            0,
            &[
                "member",
                "sign",
                &p(&d(&format!("{name}.txt"))),
                "--out",
                &p(&d(&format!("{name}.sig"))),
            ],
        )
        .await;
    }
    let verify = |name: &str| {
        vec![
            "verify".to_owned(),
            "--message".into(),
            p(&d(&format!("{name}.txt"))),
            "--signature".into(),
            p(&d(&format!("{name}.sig"))),
            "--group-key".into(),
            p(&d("group.pub")),
        ]
    };
    let (alice_verify, bob_verify) = (verify("alice"), verify("bob"));
    let alice_args: Vec<&str> = alice_verify.iter().map(String::as_str).collect();
    let bob_args: Vec<&str> = bob_verify.iter().map(String::as_str).collect();

    // Both gateways say valid.
    for gw in [&gw_a, &gw_b] {
        let answer = verify_until(&on(gw), &alice_args, "ok").await;
        assert_eq!(
            (answer["valid"].as_bool(), answer.get("failed_check")),
            (Some(true), None),
            "{answer}"
        );
    }

    // Revoke alice: both gateways report revoked, with proofs that check offline.
    expect(
        &operator,
        0,
        &["operator", "revoke", "--username", "alice", "--yes"],
    )
    .await;
    for gw in [&gw_a, &gw_b] {
        let answer = verify_until(&on(gw), &alice_args, "revoked").await;
        assert!(shows_revoked(&answer), "{answer}");
        let answer = verify_until(&on(gw), &bob_args, "ok").await;
        assert_eq!(
            (answer["valid"].as_bool(), answer.get("failed_check")),
            (Some(true), None),
            "{answer}"
        );
    }

    // Open alice's signature and judge the opening (gateway and local).
    let opened = open_and_judge(&operator, &on(&gw_b), &d("alice.txt"), &d("alice.sig")).await;
    assert_eq!(opened["username"], "alice");

    // The audit passes, from the live registry (auditor token).
    let auditor = [
        ("DGSP_REGISTRY_URL", registry.url.clone()),
        ("DGSP_AUDITOR_TOKEN", AUDITOR.to_owned()),
    ];
    let audit_args = ["audit", "--group-key", &p(&d("group.pub"))];
    let before = expect(&auditor, 0, &audit_args).await;
    assert_eq!(before["violations"], serde_json::json!([]));
    let members_before = expect(&operator, 0, &["operator", "member", "list"]).await;
    let wallet_before = expect(&wallet("bob"), 0, &["member", "status"]).await;

    // Stop everything (SIGTERM, clean exits) and start again on the same data.
    for s in [&mut gw_a, &mut gw_b, &mut registry] {
        s.stop();
    }
    let [registry, gw_a, gw_b] = stack.start().await;
    for gw in [&gw_a, &gw_b] {
        let answer = verify_until(&on(gw), &alice_args, "revoked").await;
        assert!(shows_revoked(&answer), "{answer}");
        verify_until(&on(gw), &bob_args, "ok").await;
    }
    assert_eq!(
        expect(&operator, 0, &["operator", "member", "list"]).await,
        members_before
    );
    assert_eq!(
        expect(&wallet("bob"), 0, &["member", "status"]).await,
        wallet_before
    );
    let after = expect(&auditor, 0, &audit_args).await;
    assert_eq!(after["violations"], serde_json::json!([]));
    assert!(after["entries"].as_u64() >= before["entries"].as_u64());
    // Bob's second certificate still signs, and the restarted gateways accept it.
    expect(
        &wallet("bob"),
        0,
        &[
            "member",
            "sign",
            &p(&d("bob.txt")),
            "--out",
            &p(&d("bob2.sig")),
        ],
    )
    .await;
    let bob2 = [
        "verify",
        "--message",
        &p(&d("bob.txt")),
        "--signature",
        &p(&d("bob2.sig")),
    ];
    verify_until(&on(&gw_a), &bob2, "ok").await;
    for mut s in [gw_a, gw_b, registry] {
        s.stop();
    }
}
