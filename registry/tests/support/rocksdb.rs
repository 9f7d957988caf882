//! RocksDB's own record of the options a database runs with, for the tests that check an
//! option reached it (the registry's store; the gateway's replica includes this file too).

use std::path::Path;

/// The value of `name` in the newest `OPTIONS-*` file RocksDB wrote in `dir`.
pub fn option(dir: &Path, name: &str) -> Option<String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("OPTIONS-")
        })
        .collect();
    files.sort();
    let text = std::fs::read_to_string(files.last().expect("an OPTIONS file")).unwrap();
    let prefix = format!("{name}=");
    text.lines()
        .find_map(|l| l.trim().strip_prefix(&prefix).map(str::to_owned))
}
