//! Secret files through the real `dgsp-registry` binary: the key passphrase file, the
//! manager key file and the admin and auditor token files are refused when group- or
//! world-readable or a symbolic link, with the path, the mode and the fix in the message;
//! private regular files are used; short tokens are refused; a token on the command line
//! is accepted with a warning, one from the environment silently.

use crate::support;

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const PASSPHRASE: &str = "a long passphrase for the secrets test";
const ADMIN: &str = "admin-token-for-the-secrets-test";
const AUDITOR: &str = "auditor-token-for-the-secrets-test";

/// `dgsp-registry ARGS` with a clean environment (PATH and `env` only).
fn registry(env: &[(&str, &str)], args: &[&str]) -> Command {
    let mut cmd = Command::new(support::BIN);
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RUST_LOG", "info");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

fn run(env: &[(&str, &str)], args: &[&str]) -> Output {
    registry(env, args).output().unwrap()
}

/// stdout and stderr together (logs go to stdout, errors to stderr).
fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn write(path: &Path, contents: &str, mode: u32) -> PathBuf {
    fs::write(path, contents).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    path.to_owned()
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Asserts the run failed because `path` is too open (mode `mode`), naming the fix.
fn refused_too_open(out: &Output, path: &Path, mode: u32) {
    let t = text(out);
    assert!(!out.status.success(), "accepted a {mode:o} file: {t}");
    assert!(t.contains(&format!("mode {mode:04o}")), "{t}");
    assert!(t.contains(&format!("chmod 600 {}", path.display())), "{t}");
}

fn refused_symlink(out: &Output, path: &Path) {
    let t = text(out);
    assert!(!out.status.success(), "followed a symlink: {t}");
    assert!(t.contains(&format!("{}: refusing", path.display())), "{t}");
    assert!(t.contains("symbolic link"), "{t}");
}

/// A group created by the real binary with a private passphrase file, shared by the tests
/// that need one (created once: Argon2id with the default cost).
struct Group {
    _dir: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
    pass: PathBuf,
}

fn group() -> Group {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_owned();
    let data = root.join("group");
    let pass = write(&root.join("passphrase"), &format!("{PASSPHRASE}\n"), 0o600);
    let out = run(
        &[],
        &[
            "init",
            "--params",
            "sha2-128f",
            "--data",
            s(&data),
            "--passphrase-file",
            s(&pass),
        ],
    );
    assert!(out.status.success(), "init: {}", text(&out));
    Group {
        _dir: dir,
        root,
        data,
        pass,
    }
}

#[test]
fn a_passphrase_file_must_be_private_and_not_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("group");
    let init = |pass: &Path| {
        run(
            &[],
            &[
                "init",
                "--params",
                "sha2-128f",
                "--data",
                s(&data),
                "--passphrase-file",
                s(pass),
            ],
        )
    };
    let pass = write(&dir.path().join("pass"), PASSPHRASE, 0o600);
    for mode in [0o640, 0o644] {
        chmod(&pass, mode);
        refused_too_open(&init(&pass), &pass, mode);
        assert!(!data.join("manager.key").exists(), "nothing created");
    }
    chmod(&pass, 0o600);
    let link = dir.path().join("pass-link");
    symlink(&pass, &link).unwrap();
    refused_symlink(&init(&link), &link);
    assert!(!data.join("manager.key").exists());
    // Through the environment variable too.
    let out = run(
        &[("DGSP_KEY_PASSPHRASE_FILE", s(&link))],
        &["init", "--params", "sha2-128f", "--data", s(&data)],
    );
    refused_symlink(&out, &link);

    let out = init(&pass);
    assert!(out.status.success(), "{}", text(&out));
    let key = data.join("manager.key");
    assert_eq!(
        fs::symlink_metadata(&key).unwrap().permissions().mode() & 0o7777,
        0o600,
        "the key file is created 0600"
    );
}

#[test]
fn the_key_file_and_the_token_files_must_be_private_and_not_links() {
    let g = group();
    let key = g.data.join("manager.key");
    let public_key = |key: &Path| {
        run(
            &[],
            &["public-key", "--data", s(&g.data), "--key-file", s(key)],
        )
    };
    let out = public_key(&key);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("fingerprint"));
    for mode in [0o640, 0o644] {
        chmod(&key, mode);
        refused_too_open(&public_key(&key), &key, mode);
    }
    chmod(&key, 0o600);
    let link = g.root.join("key-link");
    symlink(&key, &link).unwrap();
    refused_symlink(&public_key(&link), &link);
    // `serve` reads the key the same way (the tokens are fine here).
    let admin = write(&g.root.join("admin"), ADMIN, 0o600);
    let out = run(
        &[("DGSP_KEY_PASSPHRASE_FILE", s(&g.pass))],
        &[
            "serve",
            "--data",
            s(&g.data),
            "--key-file",
            s(&link),
            "--admin-token-file",
            s(&admin),
            "--listen",
            "127.0.0.1:0",
        ],
    );
    refused_symlink(&out, &link);

    // Token files: refused before anything is opened.
    let serve = |env: &[(&str, &str)], extra: &[&str]| {
        let mut args = vec!["serve", "--data", s(&g.data), "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let mut env = env.to_vec();
        env.push(("DGSP_KEY_PASSPHRASE_FILE", s(&g.pass)));
        run(&env, &args)
    };
    for mode in [0o640, 0o644] {
        chmod(&admin, mode);
        refused_too_open(
            &serve(&[], &["--admin-token-file", s(&admin)]),
            &admin,
            mode,
        );
        refused_too_open(
            &serve(&[("DGSP_ADMIN_TOKEN_FILE", s(&admin))], &[]),
            &admin,
            mode,
        );
    }
    chmod(&admin, 0o600);
    let admin_link = g.root.join("admin-link");
    symlink(&admin, &admin_link).unwrap();
    refused_symlink(
        &serve(&[], &["--admin-token-file", s(&admin_link)]),
        &admin_link,
    );

    let auditor = write(&g.root.join("auditor"), AUDITOR, 0o600);
    for mode in [0o640, 0o644] {
        chmod(&auditor, mode);
        let out = serve(
            &[("DGSP_AUDITOR_TOKEN_FILE", s(&auditor))],
            &["--admin-token-file", s(&admin)],
        );
        refused_too_open(&out, &auditor, mode);
    }
    chmod(&auditor, 0o600);
    let auditor_link = g.root.join("auditor-link");
    symlink(&auditor, &auditor_link).unwrap();
    refused_symlink(
        &serve(
            &[],
            &[
                "--admin-token-file",
                s(&admin),
                "--auditor-token-file",
                s(&auditor_link),
            ],
        ),
        &auditor_link,
    );
}

#[test]
fn short_tokens_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let admin = write(&dir.path().join("admin"), ADMIN, 0o600);
    let short = write(&dir.path().join("short"), "fifteen-chars!!\n", 0o600);
    let serve = |env: &[(&str, &str)], extra: &[&str]| {
        let mut args = vec!["serve", "--data", s(dir.path()), "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        run(env, &args)
    };
    for out in [
        serve(
            &[],
            &[
                "--admin-token-file",
                s(&admin),
                "--auditor-token-file",
                s(&short),
            ],
        ),
        serve(
            &[("DGSP_AUDITOR_TOKEN", "fifteen-chars!!")],
            &["--admin-token-file", s(&admin)],
        ),
    ] {
        let t = text(&out);
        assert!(!out.status.success(), "{t}");
        assert!(
            t.contains("the auditor token must be at least 16 characters (this one has 15)"),
            "{t}"
        );
    }
    let out = serve(&[], &["--admin-token-file", s(&short)]);
    assert!(text(&out).contains("the admin token must be at least 16 characters"));
    let out = serve(&[], &[]);
    assert!(text(&out).contains("no admin token"), "{}", text(&out));
}

/// A running registry, killed on drop; its output goes to `log`.
struct Serving {
    child: Child,
    base: String,
    log: PathBuf,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serving {
    fn start(g: &Group, name: &str, env: &[(&str, &str)], extra: &[&str]) -> Serving {
        let port = support::free_port();
        let listen = format!("127.0.0.1:{port}");
        let log = g.root.join(format!("{name}.log"));
        let mut args = vec!["serve", "--data", s(&g.data), "--listen", &listen];
        args.extend_from_slice(extra);
        let mut env = env.to_vec();
        env.push(("DGSP_KEY_PASSPHRASE_FILE", s(&g.pass)));
        let out = fs::File::create(&log).unwrap();
        let child = registry(&env, &args)
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let serving = Serving {
            child,
            base: format!("http://{listen}"),
            log,
        };
        serving.wait_ready();
        serving
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if status(&format!("{}/readyz", self.base), None) == Some(200) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the registry did not become ready: {}", self.output());
    }

    fn output(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The status of GET `path` with `token`.
    fn get(&self, path: &str, token: &str) -> u16 {
        status(&format!("{}{path}", self.base), Some(token)).expect("the registry answers")
    }
}

/// The status of a GET of `url` (with a bearer `token`), blocking; `None` when nothing
/// answers.
fn status(url: &str, token: Option<&str>) -> Option<u16> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut req = reqwest::Client::new().get(url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send().await.ok().map(|r| r.status().as_u16())
    })
}

#[test]
fn private_token_files_are_used_and_command_line_tokens_warned_about() {
    let g = group();
    let admin = write(&g.root.join("admin"), &format!("{ADMIN}\n"), 0o600);
    let auditor = write(&g.root.join("auditor"), &format!("  {AUDITOR}  \n"), 0o400);

    // From 0600 / 0400 files: both tokens work, and nothing is warned about.
    let r = Serving::start(
        &g,
        "files",
        &[("DGSP_AUDITOR_TOKEN_FILE", s(&auditor))],
        &["--admin-token-file", s(&admin)],
    );
    assert_eq!(r.get("/admin/v1/members", ADMIN), 200);
    assert_eq!(r.get("/admin/v1/members", AUDITOR), 401);
    assert_eq!(r.get("/v1/log/entries", AUDITOR), 200);
    assert_eq!(r.get("/v1/log/entries", "not-the-auditor-token"), 401);
    assert!(!r.output().contains("command line"), "{}", r.output());
    drop(r);

    // From the environment: silent.
    let r = Serving::start(
        &g,
        "env",
        &[("DGSP_ADMIN_TOKEN", ADMIN), ("DGSP_AUDITOR_TOKEN", AUDITOR)],
        &[],
    );
    assert_eq!(r.get("/admin/v1/members", ADMIN), 200);
    assert_eq!(r.get("/v1/log/entries", AUDITOR), 200);
    assert!(!r.output().contains("command line"), "{}", r.output());
    drop(r);

    // On the command line: accepted, with one warning per token.
    let r = Serving::start(
        &g,
        "flags",
        &[],
        &["--admin-token", ADMIN, "--auditor-token", AUDITOR],
    );
    assert_eq!(r.get("/admin/v1/members", ADMIN), 200);
    assert_eq!(r.get("/v1/log/entries", AUDITOR), 200);
    let out = r.output();
    for flag in ["--admin-token", "--auditor-token"] {
        assert!(
            out.lines()
                .any(|l| l.contains("WARN") && l.contains(&format!("{flag} puts the"))),
            "{flag}: {out}"
        );
    }
    assert!(
        !out.contains(ADMIN) && !out.contains(AUDITOR),
        "tokens not logged: {out}"
    );
}
