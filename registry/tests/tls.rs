//! The registry over HTTPS, with the real binary and certificates made here
//! (`dgsp_http::tls::test_certs`; docs/deploy.md, "TLS"): `serve --tls-cert --tls-key`
//! refuses a key file others can read; `backup --registry https://...` works with the CA
//! in `--ca-file` and is refused with another CA, with the system's roots, and once the
//! server's certificate has expired; SIGHUP makes the running server take a renewed
//! certificate, without a restart. And the admin token never goes over plain http:// to a
//! host that is not loopback without `--allow-plain-http`, refused before any connection.

use crate::support;

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use dgsp_http::tls::test_certs::{write_files, TestCa, Validity};

const PASSPHRASE: &str = "tls test passphrase";
const TOKEN: &str = "tls-test-admin-token";

/// `dgsp-registry ARGS` with the passphrase and token in its environment and no other
/// DGSP_ setting inherited.
fn registry<S: AsRef<OsStr>>(args: &[S]) -> Command {
    let mut c = Command::new(support::BIN);
    c.args(args)
        .env("DGSP_KEY_PASSPHRASE", PASSPHRASE)
        .env("DGSP_ADMIN_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in [
        "DGSP_DATA",
        "DGSP_KEY_FILE",
        "DGSP_REGISTRY_URL",
        "DGSP_BACKUP_DIR",
        "DGSP_ADMIN_TOKEN_FILE",
        "DGSP_KEY_PASSPHRASE_FILE",
        "DGSP_TLS_CERT",
        "DGSP_TLS_KEY",
        "DGSP_CA_FILE",
        "DGSP_ALLOW_PLAIN_HTTP",
    ] {
        c.env_remove(var);
    }
    c
}

fn output<S: AsRef<OsStr>>(args: &[S]) -> Output {
    registry(args).output().unwrap()
}

/// `backup --registry URL --name NAME [--ca-file CA]`: its output.
fn backup(url: &str, name: &str, ca: Option<&Path>) -> Output {
    let mut args = vec![
        OsStr::new("backup"),
        OsStr::new("--registry"),
        OsStr::new(url),
        OsStr::new("--name"),
        OsStr::new(name),
    ];
    if let Some(ca) = ca {
        args.extend([OsStr::new("--ca-file"), ca.as_os_str()]);
    }
    output(&args)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A `serve` child process, killed when dropped (a test that failed first).
struct Server(Option<Child>);

impl Server {
    fn signal(&self, signal: &str) {
        let pid = self.0.as_ref().unwrap().id().to_string();
        let status = Command::new("kill").args([signal, &pid]).status().unwrap();
        assert!(status.success());
    }

    /// SIGTERM: it must exit cleanly.
    fn stop(mut self) {
        self.signal("-TERM");
        let mut child = self.0.take().unwrap();
        assert!(
            child.wait().unwrap().success(),
            "serve exited with an error"
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn client(ca: &TestCa) -> reqwest::Client {
    let roots = reqwest::Certificate::from_pem_bundle(ca.pem().as_bytes()).unwrap();
    reqwest::Client::builder()
        .tls_certs_only(roots)
        .build()
        .unwrap()
}

#[test]
fn serve_over_https_back_up_with_the_ca_and_take_a_renewed_certificate_on_sighup() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    support::init(&data, PASSPHRASE);
    let ca = TestCa::new("dgsp test CA");
    let ca_file = tmp.path().join("ca.pem");
    ca.write_pem(&ca_file);
    let files = ca.write_server(tmp.path(), "registry", Validity::Now);
    let port = support::free_port();
    let listen = format!("127.0.0.1:{port}");
    let serve_args = [
        OsStr::new("serve"),
        OsStr::new("--data"),
        data.as_os_str(),
        OsStr::new("--listen"),
        OsStr::new(&listen),
        OsStr::new("--tls-cert"),
        files.cert.as_os_str(),
        OsStr::new("--tls-key"),
        files.key.as_os_str(),
    ];

    // A key file others can read: refused at start, naming the fix.
    std::fs::set_permissions(&files.key, std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = output(&serve_args);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("chmod 600"), "{}", stderr(&out));
    std::fs::set_permissions(&files.key, std::fs::Permissions::from_mode(0o600)).unwrap();

    let mut c = registry(&serve_args);
    c.stdout(Stdio::null()).stderr(Stdio::inherit());
    let server = Server(Some(c.spawn().unwrap()));
    let url = format!("https://localhost:{port}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(support::wait_serving(
        &client(&ca),
        &url,
        Duration::from_secs(60),
        Duration::from_millis(50),
    ));

    // The CA given: the backup is made.
    let out = backup(&url, "over-tls", Some(&ca_file));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(data.join("backups/over-tls/backup.json").exists());

    // Another CA, or the system's roots (which do not know the test CA): refused in the
    // handshake, before the token is sent; no backup.
    let other = TestCa::new("another CA");
    let other_file = tmp.path().join("other-ca.pem");
    other.write_pem(&other_file);
    for (name, ca) in [
        ("wrong-ca", Some(other_file.as_path())),
        ("system-roots", None),
    ] {
        let out = backup(&url, name, ca);
        assert!(!out.status.success(), "{name}");
        let err = stderr(&out);
        assert!(err.contains("certificate"), "{name}: {err}");
        assert!(!data.join("backups").join(name).exists());
    }
    // A CA file that holds no certificate.
    let out = backup(&url, "bad-ca-file", Some(&files.key));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("CA certificates"), "{}", stderr(&out));

    // A renewal by another CA, then SIGHUP: the same process serves the new certificate.
    let renewed = TestCa::new("renewing CA");
    let renewed_file = tmp.path().join("renewed-ca.pem");
    renewed.write_pem(&renewed_file);
    let (cert, key) = renewed.server(Validity::Now);
    write_files(&files, &cert, &key);
    server.signal("-HUP");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = backup(&url, "after-sighup", Some(&renewed_file));
        if out.status.success() {
            break;
        }
        assert!(Instant::now() < deadline, "{}", stderr(&out));
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = backup(&url, "old-ca", Some(&ca_file));
    assert!(!out.status.success());

    // An expired certificate (reloaded the same way): refused.
    let (cert, key) = renewed.server(Validity::Expired);
    write_files(&files, &cert, &key);
    server.signal("-HUP");
    let deadline = Instant::now() + Duration::from_secs(30);
    let err = loop {
        let out = backup(&url, "expired", Some(&renewed_file));
        if !out.status.success() {
            break stderr(&out);
        }
        assert!(
            Instant::now() < deadline,
            "the expired certificate was never served"
        );
        std::fs::remove_dir_all(data.join("backups/expired")).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(err.contains("expired"), "{err}");
    assert!(!data.join("backups/expired").exists());

    // SIGTERM: a clean stop after all those reloads.
    server.stop();
}

#[test]
fn the_admin_token_never_goes_over_plain_http_off_loopback_unless_allowed() {
    // An unroutable address: a connection attempt would hang until the connect timeout
    // (10 s); the refusal comes first, at once, naming the flag.
    let started = Instant::now();
    let out = backup("http://10.255.255.1:1", "plain", None);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("--allow-plain-http") && err.contains("not loopback"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(5), "{err}");

    // 0.0.0.0 is not loopback either (refused); allowed, the request is made, and fails
    // only because nothing listens there.
    let port = support::free_port();
    let url = format!("http://0.0.0.0:{port}");
    let err = stderr(&backup(&url, "plain", None));
    assert!(err.contains("--allow-plain-http"), "{err}");
    for allow in [
        registry(&["backup", "--registry", &url, "--allow-plain-http"]),
        {
            let mut c = registry(&["backup", "--registry", &url]);
            c.env("DGSP_ALLOW_PLAIN_HTTP", "1");
            c
        },
    ] {
        let mut allow = allow;
        let out = allow.output().unwrap();
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(!err.contains("--allow-plain-http"), "{err}");
        assert!(err.to_lowercase().contains("connect"), "{err}");
    }
}
