//! `dgsp-registry init` picks the parameter set: `--params`, else `DGSP_PARAMS`, else the
//! measured default; both families (spec sections 1 and 7) are accepted by name, and a wrong
//! name is refused with the accepted names, creating nothing.

use std::path::Path;
use std::process::{Command, Output};

use dgsp_core::{ParamSet, Standard};
use dgsp_registry::cli::DEFAULT_PARAMS;
use dgsp_registry::keyfile;

const BIN: &str = env!("CARGO_BIN_EXE_dgsp-registry");
const PASSPHRASE: &str = "init test passphrase";

fn init(data: &Path, params: Option<&str>, env: Option<&str>) -> Output {
    let mut c = Command::new(BIN);
    c.arg("init").arg("--data").arg(data);
    if let Some(p) = params {
        c.args(["--params", p]);
    }
    c.env_remove("DGSP_PARAMS");
    if let Some(e) = env {
        c.env("DGSP_PARAMS", e);
    }
    c.env("DGSP_KEY_PASSPHRASE", PASSPHRASE)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

fn params_of(data: &Path) -> ParamSet {
    keyfile::read_public(&data.join("manager.key"))
        .unwrap()
        .params()
}

#[test]
fn init_takes_the_flag_then_the_environment_then_the_default() {
    let tmp = tempfile::tempdir().unwrap();
    let default: ParamSet = DEFAULT_PARAMS.parse().unwrap();

    let a = tmp.path().join("a");
    let out = init(&a, None, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(params_of(&a), default);

    let b = tmp.path().join("b");
    let out = init(&b, None, Some("slh-dsa-shake-128f"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(params_of(&b), ParamSet::SlhDsaShake128f);
    assert_eq!(params_of(&b).standard(), Standard::Fips205);

    let c = tmp.path().join("c");
    let out = init(&c, Some("shake-128f"), Some("slh-dsa-shake-128f"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(params_of(&c), ParamSet::Shake128f);

    let d = tmp.path().join("d");
    let out = init(&d, Some("slh-dsa-sha2-128x"), None);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("slh-dsa-sha2-128x") && err.contains("slh-dsa-"),
        "{err}"
    );
    assert!(
        !d.join("manager.key").exists(),
        "a refused init wrote a key"
    );
}
