//! File helpers: `-` for stdin, never overwriting what exists, atomic replacement.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
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

/// Writes `bytes` to a temporary file beside `path`, syncs it, and renames it over `path`
/// (then syncs the directory): readers see the old file or the new one, never a mix.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), Error> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    write_new(&tmp, bytes, mode)?;
    fs::rename(&tmp, path).map_err(io_err(path))?;
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))
}
