//! Writing a new secret file: created private (0600), atomically, never over anything.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use rand_core::{OsRng, RngCore};

/// Creates `path` holding `bytes`, mode 0600, atomically and without replacing anything:
/// the bytes go to a fresh temporary file beside it (created exclusively, mode 0600 set on
/// the descriptor so the umask cannot widen or narrow it, synced), which is then hard-linked
/// to `path` (failing if anything, even a dangling link, is there) and unlinked; the
/// directory is synced last. Something already at `path` is `AlreadyExists`, whose text
/// says `what` is never overwritten ("key files", say).
pub fn write_new(path: &Path, bytes: &[u8], what: &str) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let exists = || {
        io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("a file already exists here; {what} are never overwritten"),
        )
    };
    if fs::symlink_metadata(path).is_ok() {
        return Err(exists());
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.tmp-{:016x}", OsRng.next_u64()));
    let result = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.set_permissions(fs::Permissions::from_mode(0o600))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::hard_link(&tmp, path).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => exists(),
            _ => e,
        })
    })();
    let _ = fs::remove_file(&tmp);
    result?;
    fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn private_new_and_never_over_anything() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        write_new(&path, b"secret", "key files").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"secret");
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        let err = write_new(&path, b"other", "key files").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert!(err.to_string().contains("key files are never overwritten"));
        assert_eq!(fs::read(&path).unwrap(), b"secret");
        let link = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
        assert!(write_new(&link, b"x", "key files").is_err());
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
