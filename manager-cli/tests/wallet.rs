//! The member wallet through the real `dgsp-manager` binary, with the test playing the
//! operator (a core `Manager`): the full path and every refusal; concurrent signers never
//! share a certificate; signers killed at random points, or aborted at each crash point,
//! never make a certificate sign twice.

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::{InMemoryRevokedList, Manager, ParamSet, Signature, WotsPk};
use dgsp_manager::documents::{
    CertificatesFile, CsrFile, JoinFile, CERTIFICATES_FORMAT, CSR_FORMAT, JOIN_FORMAT,
};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::Value;

const PASS: &str = "correct horse battery staple";
const ID: u64 = 7;

/// A wallet in a temp dir, and the manager that certifies its keys.
struct Fixture {
    dir: tempfile::TempDir,
    wallet: PathBuf,
    manager: Manager,
    counter: u64,
    files: u32,
}

/// One run of the binary.
struct Run {
    ok: bool,
    json: Value,
    stdout: Vec<u8>,
    stderr: String,
}

impl Run {
    fn from(out: Output) -> Run {
        Run {
            ok: out.status.success(),
            json: serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// The `kind` of a `--json` error.
    fn kind(&self) -> String {
        serde_json::from_str::<Value>(self.stderr.trim())
            .ok()
            .and_then(|v| v["error"]["kind"].as_str().map(str::to_owned))
            .unwrap_or_else(|| format!("<no json error: {}>", self.stderr))
    }
}

impl Fixture {
    fn new(seed: u64) -> Fixture {
        Fixture::of(ParamSet::Sha2_128f, seed)
    }

    fn of(params: ParamSet, seed: u64) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let wallet = dir.path().join("wallet.json");
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Fixture {
            manager: Manager::generate(params, &mut rng),
            dir,
            wallet,
            counter: 0,
            files: 0,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn fresh(&mut self, stem: &str) -> PathBuf {
        self.files += 1;
        self.path(&format!("{stem}-{}", self.files))
    }

    /// `dgsp-manager --json member <args> --wallet W` with a clean, cheap environment.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_dgsp-manager"));
        cmd.arg("--json")
            .arg("member")
            .args(args)
            .arg("--wallet")
            .arg(&self.wallet)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("XDG_CONFIG_HOME", self.dir.path())
            .env("XDG_DATA_HOME", self.dir.path())
            .env("DGSP_WALLET_PASSPHRASE", PASS)
            .env("DGSP_WALLET_KDF", "64,1,1")
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Run {
        Run::from(self.cmd(args).output().unwrap())
    }

    fn ok(&self, args: &[&str]) -> Value {
        let run = self.run(args);
        assert!(run.ok, "member {args:?} failed: {}", run.stderr);
        run.json
    }

    fn refused(&self, args: &[&str], kind: &str) -> Run {
        let run = self.run(args);
        assert!(!run.ok, "member {args:?} should fail");
        assert_eq!(run.kind(), kind, "member {args:?}: {}", run.stderr);
        run
    }

    fn join_file(&self) -> PathBuf {
        let pk = self.manager.public_key();
        let join = JoinFile {
            format: JOIN_FORMAT.into(),
            id: ID,
            username: "alice".into(),
            cid_star: B64.encode(self.manager.cid_star(ID).as_bytes()),
            group_public_key: B64.encode(pk.to_bytes()),
            fingerprint: hex::encode(pk.fingerprint()),
        };
        let path = self.path("alice.join.json");
        if !path.exists() {
            fs::write(&path, serde_json::to_vec(&join).unwrap()).unwrap();
        }
        path
    }

    fn keygen(&self) {
        let join = self.join_file();
        let out = self.ok(&["keygen", "--join", join.to_str().unwrap()]);
        assert_eq!(out["id"], ID);
    }

    /// `member csr --count n`; returns the CSR file's WOTS+ keys.
    fn csr(&mut self, n: usize) -> Vec<WotsPk> {
        let file = self.fresh("req.json");
        self.ok(&[
            "csr",
            "--count",
            &n.to_string(),
            "--out",
            file.to_str().unwrap(),
        ]);
        let csr: CsrFile = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
        assert_eq!(csr.format, CSR_FORMAT);
        assert_eq!(csr.id, ID);
        let params = self.manager.params();
        assert_eq!(csr.params, params);
        assert_eq!(
            B64.decode(&csr.cid_star).unwrap(),
            self.manager.cid_star(ID).as_bytes()
        );
        csr.wots_pks
            .iter()
            .map(|pk| WotsPk::from_slice(params, &B64.decode(pk).unwrap()).unwrap())
            .collect()
    }

    /// Plays `operator issue`: certifies `pks`, writes the certificates file.
    fn issue(&mut self, pks: &[WotsPk]) -> PathBuf {
        let certs = self.manager.certify(ID, self.counter, pks);
        let file = CertificatesFile {
            format: CERTIFICATES_FORMAT.into(),
            id: ID,
            first_counter: self.counter,
            wots_pks: pks.iter().map(|p| B64.encode(p.as_bytes())).collect(),
            certificates: certs.iter().map(|c| B64.encode(c.to_bytes())).collect(),
        };
        self.counter += pks.len() as u64;
        let path = self.fresh("certs.json");
        fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
        path
    }

    /// keygen, then `n` certificates requested, issued and imported.
    fn ready(seed: u64, n: usize) -> Fixture {
        Fixture::ready_of(ParamSet::Sha2_128f, seed, n)
    }

    fn ready_of(params: ParamSet, seed: u64, n: usize) -> Fixture {
        let mut f = Fixture::of(params, seed);
        f.keygen();
        let pks = f.csr(n);
        let certs = f.issue(&pks);
        let out = f.ok(&["import", certs.to_str().unwrap()]);
        assert_eq!(out["imported"], n);
        f
    }

    fn counts(&self) -> Value {
        self.ok(&["status"])["counts"].clone()
    }

    fn sign_to(&self, file: &Path) -> Run {
        let msg = self.message();
        self.run(&[
            "sign",
            msg.to_str().unwrap(),
            "--out",
            file.to_str().unwrap(),
        ])
    }

    fn message(&self) -> PathBuf {
        let path = self.path("message.txt");
        if !path.exists() {
            fs::write(&path, b"the quarterly report").unwrap();
        }
        path
    }

    /// Reads a signature file and checks it verifies under the group key.
    fn verified(&self, file: &Path) -> Signature {
        let sig = dgsp_manager::documents::read_signature(file).unwrap();
        self.manager
            .public_key()
            .verify(b"the quarterly report", &sig, &InMemoryRevokedList::new())
            .unwrap();
        sig
    }

    /// Every complete signature file in the directory (a killed run may leave none, or a
    /// partial file that is not a signature).
    fn all_signatures(&self) -> Vec<Signature> {
        let mut sigs = Vec::new();
        for entry in fs::read_dir(self.dir.path()).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with("sig") {
                if let Ok(sig) = dgsp_manager::documents::read_signature(&path) {
                    self.verified(&path);
                    sigs.push(sig);
                }
            }
        }
        sigs
    }
}

fn count(v: &Value, field: &str) -> u64 {
    v[field]
        .as_u64()
        .unwrap_or_else(|| panic!("no {field} in {v}"))
}

fn assert_distinct(sigs: &[Signature]) {
    let zetas: HashSet<[u8; 16]> = sigs.iter().map(|s| *s.zeta().as_bytes()).collect();
    assert_eq!(
        zetas.len(),
        sigs.len(),
        "two signatures share a certificate"
    );
}

#[test]
fn full_path_and_refusals() {
    let mut f = Fixture::new(1);
    f.keygen();
    let mode = fs::metadata(&f.wallet).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let text = fs::read_to_string(&f.wallet).unwrap();
    let clear: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(clear["format"], "dgsp-wallet-v1");
    assert_eq!(clear["id"], ID);
    assert_eq!(
        clear["group_fingerprint"],
        hex::encode(f.manager.public_key().fingerprint())
    );
    assert_eq!(
        clear["kdf"]["m_kib"], 64,
        "the test KDF variable is honoured"
    );
    let join = f.join_file();
    f.refused(
        &["keygen", "--join", join.to_str().unwrap()],
        "wallet_exists",
    );

    // Bad counts write nothing.
    let req = f.path("bad-req.json");
    f.refused(
        &["csr", "--count", "0", "--out", req.to_str().unwrap()],
        "input",
    );
    f.refused(
        &["csr", "--count", "1025", "--out", req.to_str().unwrap()],
        "input",
    );
    assert!(!req.exists());

    let pks = f.csr(5);
    assert_eq!(pks.len(), 5);
    assert_eq!(count(&f.counts(), "pending"), 5);

    // A certificates file with one bad certificate is refused whole: nothing stored.
    let good = f.issue(&pks);
    let mut doc: CertificatesFile = serde_json::from_slice(&fs::read(&good).unwrap()).unwrap();
    let mut cert = B64.decode(&doc.certificates[3]).unwrap();
    let last = cert.len() - 1;
    cert[last] ^= 1;
    doc.certificates[3] = B64.encode(cert);
    let tampered = f.path("tampered.json");
    fs::write(&tampered, serde_json::to_vec(&doc).unwrap()).unwrap();
    let run = f.refused(
        &["import", tampered.to_str().unwrap()],
        "certificate_refused",
    );
    assert!(run.stderr.contains("certificate 4"), "{}", run.stderr);
    let c = f.counts();
    assert_eq!(
        (count(&c, "certified_unused"), count(&c, "pending")),
        (0, 5)
    );
    // Certificates for keys this wallet never asked for, and another member's file.
    let stranger = WotsPk::from_slice(ParamSet::Sha2_128f, &[9u8; 16]).unwrap();
    let foreign = f.issue(&[stranger]);
    f.refused(
        &["import", foreign.to_str().unwrap()],
        "certificate_refused",
    );
    doc.id = ID + 1;
    let other = f.path("other-member.json");
    fs::write(&other, serde_json::to_vec(&doc).unwrap()).unwrap();
    f.refused(&["import", other.to_str().unwrap()], "wrong_member");
    // A CSR given to import is named as such.
    let run = f.refused(&["import", f.path("req.json-1").to_str().unwrap()], "input");
    assert!(run.stderr.contains("dgsp-csr-v1"), "{}", run.stderr);

    let out = f.ok(&["import", good.to_str().unwrap()]);
    assert_eq!(
        (count(&out, "imported"), count(&out, "already_imported")),
        (5, 0)
    );
    let out = f.ok(&["import", good.to_str().unwrap()]);
    assert_eq!(
        (count(&out, "imported"), count(&out, "already_imported")),
        (0, 5),
        "importing again changes nothing"
    );

    // Sign to a file, and from stdin to stdout (text form).
    let sig1 = f.path("sig-1");
    let out = f.sign_to(&sig1);
    assert!(out.ok, "{}", out.stderr);
    assert_eq!(count(&out.json["counts"], "certified_unused"), 4);
    let s1 = f.verified(&sig1);
    assert_eq!(out.json["zeta"], hex::encode(s1.zeta().as_bytes()));
    let cmd = f.cmd(&["sign", "-"]);
    let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
    let mut plain = Command::new(cmd.get_program());
    plain.args(args.iter().skip(1)); // without --json: the signature text on stdout
    plain
        .env_clear()
        .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))));
    let mut child = plain
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"the quarterly report").unwrap();
    let run = Run::from(child.wait_with_output().unwrap());
    assert!(run.ok, "{}", run.stderr);
    fs::write(f.path("sig-2"), &run.stdout).unwrap();
    let s2 = f.verified(&f.path("sig-2"));
    assert_distinct(&[s1, s2]);
    // An existing --out is refused before any certificate is used.
    assert!(!f.sign_to(&sig1).ok);
    let c = f.counts();
    assert_eq!(
        (
            count(&c, "certified_unused"),
            count(&c, "used"),
            count(&c, "pending")
        ),
        (3, 2, 0)
    );

    // Wrong passphrase; a passphrase file; too-open files.
    let run = Run::from(
        f.cmd(&["status"])
            .env("DGSP_WALLET_PASSPHRASE", "not the passphrase at all")
            .output()
            .unwrap(),
    );
    assert_eq!(run.kind(), "wrong_passphrase");
    let pass_file = f.path("pass.txt");
    fs::write(&pass_file, format!("{PASS}\nignored second line\n")).unwrap();
    fs::set_permissions(&pass_file, fs::Permissions::from_mode(0o600)).unwrap();
    let run = Run::from(
        f.cmd(&["status", "--passphrase-file", pass_file.to_str().unwrap()])
            .env_remove("DGSP_WALLET_PASSPHRASE")
            .output()
            .unwrap(),
    );
    assert!(run.ok, "{}", run.stderr);
    fs::set_permissions(&f.wallet, fs::Permissions::from_mode(0o644)).unwrap();
    f.refused(&["status"], "too_open");
    fs::set_permissions(&f.wallet, fs::Permissions::from_mode(0o640)).unwrap();
    f.refused(&["status"], "too_open");
    fs::set_permissions(&f.wallet, fs::Permissions::from_mode(0o600)).unwrap();

    // Use up the rest; then the clear error.
    for i in 3..=5 {
        assert!(f.sign_to(&f.path(&format!("sig-{i}"))).ok);
    }
    let run = f.refused(&["sign", f.message().to_str().unwrap()], "wallet_exhausted");
    for hint in ["member csr", "operator issue", "member import", "5 used"] {
        assert!(
            run.stderr.contains(hint),
            "{hint:?} missing: {}",
            run.stderr
        );
    }
    // With certificates requested but not imported, it says so.
    f.csr(2);
    let run = f.refused(&["sign", f.message().to_str().unwrap()], "wallet_exhausted");
    assert!(
        run.stderr.contains("2 requested but not imported"),
        "{}",
        run.stderr
    );
    let c = f.counts();
    assert_eq!(
        (
            count(&c, "certified_unused"),
            count(&c, "used"),
            count(&c, "pending")
        ),
        (0, 5, 2)
    );
    let sigs = f.all_signatures();
    assert_eq!(sigs.len(), 5);
    assert_distinct(&sigs);
    // No secret in the clear, and the member key is never printed.
    let status = f.run(&["status"]);
    assert!(!String::from_utf8_lossy(&status.stdout).contains("seed"));
}

/// A FIPS 205 group (spec section 7): the wallet imports SLH-DSA-signed certificates and
/// signs; certificates signed by the round 3.1 twin's manager (same sizes) are refused.
#[test]
fn a_fips205_wallet_imports_and_signs() {
    let mut f = Fixture::ready_of(ParamSet::SlhDsaSha2_128f, 21, 2);
    let sig_file = f.path("sig-fips");
    let run = f.sign_to(&sig_file);
    assert!(run.ok, "{}", run.stderr);
    assert_eq!(f.verified(&sig_file).params(), ParamSet::SlhDsaSha2_128f);

    let pks = f.csr(1);
    let twin = Manager::generate(ParamSet::Sha2_128f, &mut ChaCha8Rng::seed_from_u64(22));
    let certs = twin.certify(ID, f.counter, &[]);
    assert!(certs.is_empty());
    let twin_pks: Vec<WotsPk> = pks
        .iter()
        .map(|p| WotsPk::from_slice(ParamSet::Sha2_128f, p.as_bytes()).unwrap())
        .collect();
    let file = CertificatesFile {
        format: CERTIFICATES_FORMAT.into(),
        id: ID,
        first_counter: f.counter,
        wots_pks: pks.iter().map(|p| B64.encode(p.as_bytes())).collect(),
        certificates: twin
            .certify(ID, f.counter, &twin_pks)
            .iter()
            .map(|c| B64.encode(c.to_bytes()))
            .collect(),
    };
    let path = f.fresh("twin-certs.json");
    fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
    let run = f.run(&["import", path.to_str().unwrap()]);
    assert!(
        !run.ok,
        "a round 3.1 certificate was imported into a FIPS 205 wallet"
    );
    assert!(
        run.stderr.contains("family mismatch") || run.stderr.contains("sha2-128f"),
        "{}",
        run.stderr
    );
}

#[test]
fn join_file_refusals() {
    let f = Fixture::new(2);
    let join = f.join_file();
    let mut doc: JoinFile = serde_json::from_slice(&fs::read(&join).unwrap()).unwrap();
    doc.fingerprint = "00".repeat(32);
    let bad = f.path("bad.join.json");
    fs::write(&bad, serde_json::to_vec(&doc).unwrap()).unwrap();
    f.refused(
        &["keygen", "--join", bad.to_str().unwrap()],
        "fingerprint_mismatch",
    );
    let run = Run::from(
        f.cmd(&["keygen", "--join", join.to_str().unwrap()])
            .env("DGSP_WALLET_PASSPHRASE", "short")
            .output()
            .unwrap(),
    );
    assert_eq!(run.kind(), "weak_passphrase");
    assert!(!f.wallet.exists(), "a refused keygen writes no wallet");
    f.refused(&["status"], "wallet_not_found");
}

#[test]
fn concurrent_signers_never_share_a_certificate() {
    const CERTS: usize = 20;
    const PROCS: usize = 8;
    const EACH: usize = 4;
    let f = Fixture::ready(3, CERTS);
    let results: Vec<Run> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..PROCS)
            .map(|p| {
                let f = &f;
                s.spawn(move || {
                    (0..EACH)
                        .map(|k| f.sign_to(&f.path(&format!("sig-{p}-{k}"))))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let ok = results.iter().filter(|r| r.ok).count();
    assert_eq!(ok, CERTS.min(PROCS * EACH));
    for r in results.iter().filter(|r| !r.ok) {
        assert_eq!(r.kind(), "wallet_exhausted");
    }
    let sigs = f.all_signatures();
    assert_eq!(sigs.len(), CERTS);
    assert_distinct(&sigs);
    let c = f.counts();
    assert_eq!(
        (count(&c, "used"), count(&c, "certified_unused")),
        (CERTS as u64, 0)
    );
}

#[test]
fn signers_killed_at_random_points_never_reuse_a_certificate() {
    const CERTS: usize = 40;
    const KILLS: usize = 32;
    let f = Fixture::ready(4, CERTS);
    // How long a sign takes here (the slowest of three), to spread the kills over its run.
    let span = (0..3)
        .map(|k| {
            let start = Instant::now();
            assert!(f.sign_to(&f.path(&format!("sig-timing-{k}"))).ok);
            start.elapsed().as_micros().max(1000) as u32
        })
        .max()
        .unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    let msg = f.message();
    for i in 0..KILLS {
        let out = f.path(&format!("sig-killed-{i}"));
        let mut child = f
            .cmd(&[
                "sign",
                msg.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Half the kills anywhere in the run, half in its second half, where the slot is
        // chosen, recorded and used.
        let from = if i % 2 == 0 { 0 } else { span / 2 };
        let delay = from + rng.next_u32() % (span + span / 4 - from);
        std::thread::sleep(Duration::from_micros(u64::from(delay)));
        let _ = child.kill(); // SIGKILL; fails only if it already exited
        child.wait().unwrap();
    }
    // Sign until the wallet says none is left.
    let mut i = 0;
    loop {
        let run = f.sign_to(&f.path(&format!("sig-after-{i}")));
        if !run.ok {
            assert_eq!(run.kind(), "wallet_exhausted", "{}", run.stderr);
            break;
        }
        i += 1;
        assert!(i <= CERTS, "more signatures than certificates");
    }
    let sigs = f.all_signatures();
    assert_distinct(&sigs);
    let c = f.counts();
    let used = count(&c, "used");
    assert_eq!(count(&c, "certified_unused"), 0);
    assert_eq!(
        used, CERTS as u64,
        "used + unused is exactly the certificates"
    );
    let after = i;
    let killed_with_output = sigs.len() - 3 - after;
    eprintln!(
        "sign takes ~{span} us; {KILLS} kills: {killed_with_output} finished anyway, {} used a \
         certificate without a signature, {} before using one",
        CERTS - sigs.len(),
        KILLS - killed_with_output - (CERTS - sigs.len())
    );
    assert!(sigs.len() as u64 <= used);
    assert!(
        sigs.len() > KILLS / 2,
        "most slots were used by signers that finished"
    );
}

#[test]
fn aborts_at_each_crash_point_never_reuse_a_certificate() {
    // (point, whether the certificate ends up used)
    let points = [
        ("before-journal", false),
        ("torn-record", true),
        ("after-journal-write", true),
        ("after-fsync", true),
        ("before-output", true),
    ];
    let f = Fixture::ready(5, points.len() * 2);
    let mut used = 0;
    for (i, (point, uses)) in points.iter().enumerate() {
        let out = f.path(&format!("sig-crash-{i}"));
        let msg = f.message();
        let run = Run::from(
            f.cmd(&[
                "sign",
                msg.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ])
            .env("DGSP_WALLET_TEST_CRASH", point)
            .output()
            .unwrap(),
        );
        assert!(!run.ok, "{point}: the crash point did not fire");
        assert!(!out.exists(), "{point}: no signature is written");
        let status = f.ok(&["status"]);
        used += u64::from(*uses);
        assert_eq!(count(&status["counts"], "used"), used, "{point}");
        assert_eq!(
            status["journal_repaired"],
            *point == "torn-record",
            "{point}"
        );
        // The next signer takes another certificate.
        assert!(f.sign_to(&f.path(&format!("sig-next-{i}"))).ok, "{point}");
        used += 1;
    }
    let sigs = f.all_signatures();
    assert_eq!(sigs.len(), points.len());
    assert_distinct(&sigs);
    let c = f.counts();
    assert_eq!(count(&c, "used"), used);
    assert_eq!(
        count(&c, "certified_unused"),
        (points.len() * 2) as u64 - used
    );
}

#[test]
fn damaged_missing_or_rolled_back_journals_refuse_to_sign() {
    let mut f = Fixture::ready(6, 6);
    let journal = f.path("wallet.json.used");
    assert!(f.sign_to(&f.path("sig-a")).ok);
    assert!(f.sign_to(&f.path("sig-b")).ok);

    // Garbage at the end (a torn append): resolved conservatively, one more slot used.
    let mut torn = fs::read(&journal).unwrap();
    torn.extend_from_slice(b"u 00000");
    fs::write(&journal, &torn).unwrap();
    let status = f.ok(&["status"]);
    assert_eq!(status["journal_repaired"], true);
    assert_eq!(count(&status["counts"], "used"), 3);
    assert_eq!(
        f.ok(&["status"])["journal_repaired"],
        false,
        "repaired for good"
    );
    let good = fs::read(&journal).unwrap();

    // A damaged record followed by valid ones: refuse.
    let mut damaged = good.clone();
    let first_record = damaged.iter().position(|&b| b == b'\n').unwrap() + 1;
    damaged[first_record + 20] ^= 1;
    fs::write(&journal, &damaged).unwrap();
    f.refused(&["sign", f.message().to_str().unwrap()], "journal_corrupt");
    f.refused(&["status"], "journal_corrupt");
    fs::write(&journal, &good).unwrap();

    // A rewrite (csr) folds the journal in; then an older journal is refused.
    f.csr(1);
    fs::write(&journal, &good[..first_record + 78]).unwrap();
    f.refused(
        &["sign", f.message().to_str().unwrap()],
        "journal_rolled_back",
    );
    fs::write(&journal, &good).unwrap();
    assert_eq!(count(&f.counts(), "used"), 3);

    // Missing journal, or one of another wallet: refuse.
    fs::remove_file(&journal).unwrap();
    f.refused(&["sign", f.message().to_str().unwrap()], "journal_missing");
    let mut foreign = good.clone();
    foreign[30] = if foreign[30] == b'0' { b'1' } else { b'0' };
    fs::write(&journal, &foreign).unwrap();
    fs::set_permissions(&journal, fs::Permissions::from_mode(0o600)).unwrap();
    f.refused(&["sign", f.message().to_str().unwrap()], "journal_corrupt");
    fs::write(&journal, &good).unwrap();
    assert!(f.sign_to(&f.path("sig-c")).ok);
    let c = f.counts();
    assert_eq!((count(&c, "used"), count(&c, "certified_unused")), (4, 2));
    assert_distinct(&f.all_signatures());
}

/// The wallet, its use journal and a passphrase file are secret files: a group- or
/// world-readable one, or a symbolic link (even to a private file), is refused with the
/// path, the mode and the fix; private regular files are used.
#[test]
fn the_wallet_files_must_be_private_regular_files() {
    let f = Fixture::new(41);
    f.keygen();
    // Created 0600, atomically: no temporary file is left beside them.
    let journal = PathBuf::from(format!("{}.used", f.wallet.display()));
    for file in [&f.wallet, &journal] {
        let meta = fs::symlink_metadata(file).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(
            meta.permissions().mode() & 0o7777,
            0o600,
            "{}",
            file.display()
        );
    }
    let leftovers: Vec<_> = fs::read_dir(f.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let status = |pass_file: Option<&Path>| {
        let mut cmd = f.cmd(&["status"]);
        if let Some(p) = pass_file {
            cmd.arg("--passphrase-file")
                .arg(p)
                .env_remove("DGSP_WALLET_PASSPHRASE");
        }
        Run::from(cmd.output().unwrap())
    };
    let refused = |run: Run, kind: &str, path: &Path| {
        assert!(!run.ok);
        assert_eq!(run.kind(), kind, "{}", run.stderr);
        assert!(
            run.stderr.contains(&path.display().to_string()),
            "names the file: {}",
            run.stderr
        );
        if kind == "too_open" {
            assert!(run.stderr.contains("chmod 600"), "{}", run.stderr);
        }
    };
    assert!(status(None).ok);

    let pass = f.path("pass.txt");
    fs::write(&pass, format!("{PASS}\n")).unwrap();
    for mode in [0o640, 0o644] {
        fs::set_permissions(&pass, fs::Permissions::from_mode(mode)).unwrap();
        let run = status(Some(&pass));
        assert!(
            run.stderr.contains(&format!("mode {mode:04o}")),
            "{}",
            run.stderr
        );
        refused(run, "too_open", &pass);
    }
    fs::set_permissions(&pass, fs::Permissions::from_mode(0o600)).unwrap();
    let run = status(Some(&pass));
    assert!(run.ok, "{}", run.stderr);
    let link = f.path("pass-link");
    std::os::unix::fs::symlink(&pass, &link).unwrap();
    refused(status(Some(&link)), "symlink", &link);

    // The wallet file itself: a link to the (private) wallet is not followed.
    let real = f.path("real-wallet.json");
    fs::rename(&f.wallet, &real).unwrap();
    std::os::unix::fs::symlink(&real, &f.wallet).unwrap();
    refused(status(None), "symlink", &f.wallet);
    fs::remove_file(&f.wallet).unwrap();
    fs::rename(&real, &f.wallet).unwrap();
    assert!(status(None).ok);

    // The use journal.
    for mode in [0o640, 0o644] {
        fs::set_permissions(&journal, fs::Permissions::from_mode(mode)).unwrap();
        refused(status(None), "too_open", &journal);
    }
    fs::set_permissions(&journal, fs::Permissions::from_mode(0o600)).unwrap();
    let real = f.path("real-journal");
    fs::rename(&journal, &real).unwrap();
    std::os::unix::fs::symlink(&real, &journal).unwrap();
    refused(status(None), "symlink", &journal);
    fs::remove_file(&journal).unwrap();
    fs::rename(&real, &journal).unwrap();
    assert!(status(None).ok);
}
