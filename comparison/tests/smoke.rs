//! The smoke run end to end, in process: every contender, both sweeps and the member's side
//! on tiny samples, into a temporary directory, with the generated blocks of a copy of
//! docs/comparison.md rewritten.

// The reference `dgsp` 0.1.2, a dev-dependency, as the bench target hands it over.
#[path = "../benches/compare/reference.rs"]
mod reference;

use clap::Parser;
use dgsp_comparison::cli::Options;

#[test]
fn the_smoke_run_writes_every_file_and_every_block() {
    let dir = std::env::temp_dir().join(format!("dgsp-compare-test-{}", std::process::id()));
    let doc = dir.join("doc.md");
    std::fs::create_dir_all(&dir).unwrap();
    let real = dgsp_comparison::run::workspace_root().join("docs/comparison.md");
    std::fs::copy(&real, &doc).unwrap();
    let options = Options::parse_from([
        "dgsp-compare",
        "--smoke",
        "--out",
        dir.to_str().unwrap(),
        "--doc",
        doc.to_str().unwrap(),
    ]);
    let written = dgsp_comparison::run::run(&options, Some(&reference::Reference)).unwrap();
    for name in ["results.md", "results.json"]
        .into_iter()
        .chain(dgsp_comparison::report::PLOTS)
    {
        let path = dir.join(name);
        assert!(written.contains(&path), "{name} not reported");
        assert!(
            std::fs::metadata(&path).unwrap().len() > 100,
            "{name} is empty"
        );
    }
    let text = std::fs::read_to_string(&doc).unwrap();
    for name in ["machine", "headline", "paper", "flat", "device"] {
        let begin = format!("<!-- BEGIN generated:{name} -->\n");
        let at = text.find(&begin).unwrap() + begin.len();
        assert!(
            !text[at..].starts_with("<!-- END"),
            "block {name} left empty"
        );
    }
    assert!(text.contains("| DGSP sha2-128f |"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(json["mode"], "smoke");
    assert!(json["rows"].as_array().unwrap().len() >= 11);
    std::fs::remove_dir_all(&dir).unwrap();
}
