//! Private data directories: the services' data directories (the registry's log and
//! manager key, a gateway's replica) and backups are created mode 0700, whatever the
//! process umask, so RocksDB's files under them (created with the umask, often 0644) are
//! not readable by other local users.

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

/// Creates `path` and any missing parent, each new one mode 0700 (the umask can only take
/// permissions away, and 0700 has none for group and others). A directory that already
/// exists is left as it is: its mode is the operator's choice.
pub fn create_private(path: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn new_directories_are_0700_and_existing_ones_are_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let deep = tmp.path().join("a/b/c");
        create_private(&deep).unwrap();
        for p in [tmp.path().join("a"), tmp.path().join("a/b"), deep.clone()] {
            assert_eq!(mode(&p), 0o700, "{}", p.display());
        }
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        create_private(&open).unwrap();
        assert_eq!(mode(&open), 0o755);
        // Again on the same path: not an error.
        create_private(&deep).unwrap();
    }
}
