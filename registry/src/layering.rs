//! The layering of the crate's modules, checked: `LAYERS` gives each module its layer and
//! a module may use `crate::X` only for modules of a lower layer (lib.rs's table).

use std::path::{Path, PathBuf};

/// Each module's layer: it may use `crate::X` only for modules of a lower layer.
const LAYERS: &[(&str, u8)] = &[
    ("health", 0),
    ("keyfile", 0),
    ("store", 1),
    ("journal", 2),
    ("witnessing", 2),
    ("writer", 3),
    ("publisher", 4),
    ("issuance", 4),
    ("feed", 4),
    ("views", 4),
    ("backup", 4),
    ("api", 5),
    ("mirror", 5),
    ("server", 6),
    ("cli", 7),
];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The first path segment of every `crate::` path in `code` (`crate::{a, b::c}` gives
/// `a` and `b`).
fn crate_paths(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `dgsp_crate::`, not this crate
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            let mut depth = 0;
            let mut start = 0;
            for (k, c) in group[..end].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.push(ident(&group[start..k]));
                        start = k + 1;
                    }
                    _ => {}
                }
            }
            found.push(ident(&group[start..end]));
        } else {
            found.push(ident(rest));
        }
    }
    found.retain(|m| !m.is_empty() && m != "self");
    found
}

#[test]
fn crate_paths_are_read() {
    assert_eq!(
        crate_paths("use crate::store::{self, Store}; x: crate::feed::Budget, dgsp_crate::x"),
        ["store", "feed"]
    );
    assert_eq!(
        crate_paths("use crate::{writer, api::admin};"),
        ["writer", "api"]
    );
}

/// No module uses one of its own layer or above: the module graph has no cycle, and
/// `store` knows nothing of backups, `backup` nothing of the command line.
#[test]
fn imports_go_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut wrong = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let top = rel.iter().next().unwrap().to_str().unwrap();
        let module = top.strip_suffix(".rs").unwrap_or(top);
        if matches!(module, "lib" | "main" | "layering") {
            continue;
        }
        let own = layer(module)
            .unwrap_or_else(|| panic!("{}: module {module} has no layer in LAYERS", rel.display()));
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for used in crate_paths(line) {
                if used == module {
                    continue;
                }
                match layer(&used) {
                    Some(l) if l < own => {}
                    Some(l) => wrong.push(format!(
                        "{}:{}: {module} (layer {own}) uses crate::{used} (layer {l})",
                        rel.display(),
                        n + 1
                    )),
                    None => wrong.push(format!(
                        "{}:{}: crate::{used} is not a module with a layer",
                        rel.display(),
                        n + 1
                    )),
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that go up:\n{}",
        wrong.join("\n")
    );
}
