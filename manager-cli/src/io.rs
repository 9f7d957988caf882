//! File helpers: `-` for stdin, never overwriting what exists, atomic creation and
//! replacement.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::error::Error;

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_owned(),
        source,
    }
}

/// Reads a whole file, or stdin when `path` is `-`.
pub fn read_input(path: &Path) -> Result<Vec<u8>, Error> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(io_err(path))?;
        Ok(buf)
    } else {
        fs::read(path).map_err(io_err(path))
    }
}

/// Creates `path` with `bytes` (refusing to overwrite) and syncs it.
pub fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), Error> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|source| match source.kind() {
            std::io::ErrorKind::AlreadyExists => Error::input(
                path,
                "already exists; remove it or choose another name (files are never overwritten)",
            ),
            _ => Error::Io {
                path: path.to_owned(),
                source,
            },
        })?;
    f.write_all(bytes).map_err(io_err(path))?;
    f.sync_all().map_err(io_err(path))
}

/// A file written under a temporary name beside its destination and renamed over it by
/// [`AtomicFile::commit`] (after an fsync, then a directory fsync): readers see the old file
/// or the whole new one, never a part. Dropped without `commit`, the temporary file is
/// removed.
pub struct AtomicFile {
    dest: std::path::PathBuf,
    tmp: std::path::PathBuf,
    file: Option<fs::File>,
}

impl AtomicFile {
    /// Starts writing what will become `path` (mode `mode`).
    pub fn create(path: &Path, mode: u32) -> Result<AtomicFile, Error> {
        let dir = parent(path);
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        let _ = fs::remove_file(&tmp);
        let file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)
            .map_err(io_err(&tmp))?;
        // Exactly `mode`, whatever the umask (set on the descriptor).
        file.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(io_err(&tmp))?;
        Ok(AtomicFile {
            dest: path.to_owned(),
            tmp,
            file: Some(file),
        })
    }

    /// Syncs the data, renames it over the destination and syncs the directory.
    pub fn commit(mut self) -> Result<(), Error> {
        let file = self.file.take().expect("committed once");
        file.sync_all().map_err(io_err(&self.tmp))?;
        drop(file);
        fs::rename(&self.tmp, &self.dest).map_err(io_err(&self.dest))?;
        let dir = parent(&self.dest);
        fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io_err(dir))
    }
}

impl AtomicFile {
    /// Like [`AtomicFile::commit`], but never replaces anything: the file is hard-linked
    /// into place, which fails if the destination exists (even as a dangling link); the
    /// temporary name is removed either way.
    pub fn commit_new(mut self) -> Result<(), Error> {
        let file = self.file.take().expect("committed once");
        let linked = file
            .sync_all()
            .map_err(io_err(&self.tmp))
            .and_then(|()| {
                fs::hard_link(&self.tmp, &self.dest).map_err(|source| match source.kind() {
                    std::io::ErrorKind::AlreadyExists => Error::input(
                        &self.dest,
                        "already exists; remove it or choose another name (files are never overwritten)",
                    ),
                    _ => Error::Io {
                        path: self.dest.clone(),
                        source,
                    },
                })
            });
        drop(file);
        let _ = fs::remove_file(&self.tmp);
        linked?;
        let dir = parent(&self.dest);
        fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io_err(dir))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.as_mut().expect("not committed").write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().expect("not committed").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

fn parent(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Creates `path` holding `bytes` with mode `mode`, atomically (readers and crashes see no
/// file or the whole file) and never over an existing file: [`AtomicFile::commit_new`].
pub fn write_new_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), Error> {
    let mut f = AtomicFile::create(path, mode)?;
    f.write_all(bytes).map_err(io_err(path))?;
    f.commit_new()
}

/// [`AtomicFile`] for a buffer already in memory.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), Error> {
    let mut f = AtomicFile::create(path, mode)?;
    f.write_all(bytes).map_err(io_err(path))?;
    f.commit()
}

/// A trust anchor from its command-line form (`--group-key`): 64 hex characters are a
/// fingerprint, anything else names a group key file, read here.
pub fn read_anchor(arg: &str) -> Result<dgsp_wire::anchor::Anchor, String> {
    dgsp_wire::anchor::Anchor::from_arg(arg, |path| std::fs::read(path))
}
