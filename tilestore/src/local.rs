//! The local directory backend.
//!
//! Layout: a key `a/b/c` is the file `ROOT/a/b/c`. The store's own files begin with a dot
//! (keys never do): `ROOT/.tilestore.lock` and temporary files `.tmp-*` beside their target.
//!
//! - Every write goes to a temporary file in the target's directory, is fsynced, then put in
//!   place with `link` (create-if-absent: an existing name is never replaced) or `rename`
//!   (overwrite), and the directory is fsynced.
//! - Compare-and-swap, overwrite and delete hold an exclusive `flock` on the lock file, so
//!   they are atomic across processes (and across handles in one process) sharing the root.
//!   `put_new` needs no lock: `link` is atomic.
//! - Below the root no symbolic link is followed: parent directories are checked with
//!   `lstat`, files are opened with `O_NOFOLLOW`. The root itself may be reached through a
//!   link: it is resolved once, when the store is opened.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::{
    validate_key, validate_prefix, Created, Error, Object, Precondition, Reader, Result, TileStore,
    Version, LIST_LIMIT,
};

const LOCK_FILE: &str = ".tilestore.lock";

/// Bytes read from a file at a time by [`TileStore::read`].
const READ_CHUNK: usize = 1 << 20;

/// A tile store in a local directory (see the module documentation for the guarantees).
#[derive(Debug, Clone)]
pub struct LocalDir {
    root: PathBuf,
}

fn version_of(bytes: &[u8]) -> Version {
    Version::new(hex::encode(Sha256::digest(bytes)))
}

fn is_symlink_loop(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl LocalDir {
    /// Opens (creating it, 0755, if missing) the store at `root`.
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        let root = root.as_ref();
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(root)
            .map_err(|e| Error::io("create directory", root, e))?;
        let root = fs::canonicalize(root).map_err(|e| Error::io("resolve", root, e))?;
        if !fs::metadata(&root)
            .map_err(|e| Error::io("stat", &root, e))?
            .is_dir()
        {
            return Err(Error::NotRegular {
                path: root,
                expected: "directory",
            });
        }
        let store = LocalDir { root };
        // Create the lock file now, so that a read-only mistake shows at start.
        drop(store.open_lock_file()?);
        Ok(store)
    }

    /// The (resolved) root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn open_lock_file(&self) -> Result<File> {
        let path = self.root.join(LOCK_FILE);
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| {
                if is_symlink_loop(&e) {
                    Error::Symlink { path: path.clone() }
                } else {
                    Error::io("open lock file", &path, e)
                }
            })
    }

    /// Holds the store's exclusive lock until the returned file is dropped.
    fn lock(&self) -> Result<File> {
        let f = self.open_lock_file()?;
        f.lock()
            .map_err(|e| Error::io("lock", self.root.join(LOCK_FILE), e))?;
        Ok(f)
    }

    /// The directory that holds `key` (checked: no links, only directories), created when
    /// `create` is set; `None` when a directory on the way is missing and `create` is not.
    fn parent_dir(&self, key: &str, create: bool) -> Result<Option<PathBuf>> {
        let mut dir = self.root.clone();
        let mut segs: Vec<&str> = key.split('/').collect();
        segs.pop();
        for seg in segs {
            let parent = dir.clone();
            dir.push(seg);
            match fs::symlink_metadata(&dir) {
                Ok(m) if m.file_type().is_symlink() => return Err(Error::Symlink { path: dir }),
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(Error::NotRegular {
                        path: dir,
                        expected: "directory",
                    })
                }
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    if !create {
                        return Ok(None);
                    }
                    match fs::DirBuilder::new().mode(0o755).create(&dir) {
                        Ok(()) => sync_dir(&parent)?,
                        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                            // Created concurrently: check what it is.
                            let m = fs::symlink_metadata(&dir)
                                .map_err(|e| Error::io("stat", &dir, e))?;
                            if m.file_type().is_symlink() {
                                return Err(Error::Symlink { path: dir });
                            }
                            if !m.is_dir() {
                                return Err(Error::NotRegular {
                                    path: dir,
                                    expected: "directory",
                                });
                            }
                        }
                        Err(e) => return Err(Error::io("create directory", &dir, e)),
                    }
                }
                Err(e) => return Err(Error::io("stat", &dir, e)),
            }
        }
        Ok(Some(dir))
    }

    fn file_name(key: &str) -> &str {
        key.rsplit('/').next().unwrap_or(key)
    }

    /// Reads the object at `dir/name`, not following a link.
    fn read_at(dir: &Path, name: &str) -> Result<Option<Object>> {
        let Some((mut f, len, path)) = Self::open_at(dir, name)? else {
            return Ok(None);
        };
        let mut buf = Vec::with_capacity(len as usize);
        f.read_to_end(&mut buf)
            .map_err(|e| Error::io("read", &path, e))?;
        let version = version_of(&buf);
        Ok(Some(Object {
            bytes: Bytes::from(buf),
            version,
        }))
    }

    /// Opens the regular file at `dir/name` for reading, not following a link: the file,
    /// its length and its path.
    fn open_at(dir: &Path, name: &str) -> Result<Option<(File, u64, PathBuf)>> {
        let path = dir.join(name);
        let f = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) if is_symlink_loop(&e) => return Err(Error::Symlink { path }),
            Err(e) => return Err(Error::io("open", &path, e)),
        };
        let meta = f.metadata().map_err(|e| Error::io("stat", &path, e))?;
        if !meta.is_file() {
            return Err(Error::NotRegular {
                path,
                expected: "regular file",
            });
        }
        Ok(Some((f, meta.len(), path)))
    }

    /// Writes `bytes` to a new, fsynced temporary file in `dir`; returns its path.
    fn write_temp(dir: &Path, bytes: &[u8]) -> Result<PathBuf> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!(
            ".tmp-{}-{}-{nanos}",
            std::process::id(),
            TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let path = dir.join(name);
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| Error::io("create temporary file", &path, e))?;
        let res = f
            .write_all(bytes)
            .and_then(|()| f.sync_all())
            .map_err(|e| Error::io("write temporary file", &path, e));
        if let Err(e) = res {
            let _ = fs::remove_file(&path);
            return Err(e);
        }
        Ok(path)
    }

    /// Links `tmp` to `dir/name` if that name is free; the temporary name is removed either
    /// way. `Ok(false)`: the name exists.
    fn link_new(dir: &Path, name: &str, tmp: &Path) -> Result<bool> {
        let target = dir.join(name);
        let res = fs::hard_link(tmp, &target);
        let _ = fs::remove_file(tmp);
        match res {
            Ok(()) => {
                sync_dir(dir)?;
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(Error::io("link", &target, e)),
        }
    }

    fn replace(dir: &Path, name: &str, tmp: &Path) -> Result<()> {
        let target = dir.join(name);
        if let Err(e) = fs::rename(tmp, &target) {
            let _ = fs::remove_file(tmp);
            return Err(Error::io("rename", &target, e));
        }
        sync_dir(dir)
    }

    fn get_blocking(&self, key: &str) -> Result<Option<Object>> {
        match self.parent_dir(key, false)? {
            None => Ok(None),
            Some(dir) => Self::read_at(&dir, Self::file_name(key)),
        }
    }

    fn put_new_blocking(&self, key: &str, bytes: &[u8]) -> Result<Created> {
        let dir = self.parent_dir(key, true)?.expect("created");
        let name = Self::file_name(key);
        let tmp = Self::write_temp(&dir, bytes)?;
        if Self::link_new(&dir, name, &tmp)? {
            return Ok(Created::New(version_of(bytes)));
        }
        match Self::read_at(&dir, name)? {
            Some(obj) if obj.bytes.as_ref() == bytes => Ok(Created::AlreadySame(obj.version)),
            Some(_) => Err(Error::Conflict {
                key: key.to_owned(),
            }),
            // It existed when linking: only a delete since then makes it vanish.
            None => Err(Error::Conflict {
                key: key.to_owned(),
            }),
        }
    }

    fn put_if_blocking(&self, key: &str, bytes: &[u8], pre: &Precondition) -> Result<Version> {
        let dir = self.parent_dir(key, true)?.expect("created");
        let name = Self::file_name(key);
        let _lock = self.lock()?;
        let failed = || Error::PreconditionFailed {
            key: key.to_owned(),
        };
        match pre {
            Precondition::Absent => {
                let tmp = Self::write_temp(&dir, bytes)?;
                if !Self::link_new(&dir, name, &tmp)? {
                    return Err(failed());
                }
            }
            Precondition::Matches(want) => {
                match Self::read_at(&dir, name)? {
                    Some(cur) if &cur.version == want => {}
                    _ => return Err(failed()),
                }
                let tmp = Self::write_temp(&dir, bytes)?;
                Self::replace(&dir, name, &tmp)?;
            }
        }
        Ok(version_of(bytes))
    }

    fn put_blocking(&self, key: &str, bytes: &[u8]) -> Result<Version> {
        let dir = self.parent_dir(key, true)?.expect("created");
        let name = Self::file_name(key);
        let _lock = self.lock()?;
        // A link where the file should be would be replaced by rename, not followed; refuse
        // it all the same, as every other operation does.
        let target = dir.join(name);
        if let Ok(m) = fs::symlink_metadata(&target) {
            if m.file_type().is_symlink() {
                return Err(Error::Symlink { path: target });
            }
        }
        let tmp = Self::write_temp(&dir, bytes)?;
        Self::replace(&dir, name, &tmp)?;
        Ok(version_of(bytes))
    }

    fn delete_blocking(&self, key: &str) -> Result<()> {
        let Some(dir) = self.parent_dir(key, false)? else {
            return Ok(());
        };
        let path = dir.join(Self::file_name(key));
        let _lock = self.lock()?;
        match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io("stat", &path, e)),
            Ok(m) if m.is_dir() => {
                return Err(Error::NotRegular {
                    path,
                    expected: "regular file",
                })
            }
            Ok(_) => {}
        }
        match fs::remove_file(&path) {
            Ok(()) => sync_dir(&dir),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io("remove", &path, e)),
        }
    }

    fn list_blocking(&self, prefix: &str) -> Result<Vec<String>> {
        // Start at the deepest directory the prefix names completely.
        let (dir_part, _) = prefix.rsplit_once('/').unwrap_or(("", prefix));
        let start = if dir_part.is_empty() {
            Some(self.root.clone())
        } else {
            // `parent_dir` of "dir_part/x" is the directory "dir_part".
            self.parent_dir(&format!("{dir_part}/x"), false)?
        };
        let mut out = Vec::new();
        if let Some(start) = start {
            let rel = if dir_part.is_empty() {
                String::new()
            } else {
                format!("{dir_part}/")
            };
            walk(&start, &rel, prefix, &mut out)?;
        }
        out.sort();
        Ok(out)
    }
}

/// Collects the regular files below `dir` (whose key prefix is `rel`) that start with
/// `prefix`, skipping the store's own dot files and anything that is not a valid key.
fn walk(dir: &Path, rel: &str, prefix: &str, out: &mut Vec<String>) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io("read directory", dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("read directory", dir, e))?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let key = format!("{rel}{name}");
        let ft = entry
            .file_type()
            .map_err(|e| Error::io("stat", entry.path(), e))?;
        if ft.is_dir() {
            let sub = format!("{key}/");
            // Descend only where keys below can still match the prefix.
            if sub.starts_with(prefix) || prefix.starts_with(&sub) {
                walk(&entry.path(), &sub, prefix, out)?;
            }
        } else if ft.is_file() && key.starts_with(prefix) && validate_key(&key).is_ok() {
            if out.len() >= LIST_LIMIT {
                return Err(Error::ListTooLarge {
                    prefix: prefix.to_owned(),
                    limit: LIST_LIMIT,
                });
            }
            out.push(key);
        }
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io("fsync directory", dir, e))
}

impl LocalDir {
    async fn blocking<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(LocalDir) -> Result<T> + Send + 'static,
    {
        let me = self.clone();
        tokio::task::spawn_blocking(move || f(me))
            .await
            .map_err(|e| Error::Task(e.to_string()))?
    }
}

#[async_trait::async_trait]
impl TileStore for LocalDir {
    async fn get(&self, key: &str) -> Result<Option<Object>> {
        validate_key(key)?;
        let key = key.to_owned();
        self.blocking(move |s| s.get_blocking(&key)).await
    }

    /// Reads the file in chunks of [`READ_CHUNK`] bytes, each on a blocking thread, as they
    /// are asked for; its length is the reported size.
    async fn read(&self, key: &str) -> Result<Option<Reader>> {
        validate_key(key)?;
        let name = key.to_owned();
        let opened = self
            .blocking(move |s| match s.parent_dir(&name, false)? {
                None => Ok(None),
                Some(dir) => Self::open_at(&dir, Self::file_name(&name)),
            })
            .await?;
        let Some((file, len, path)) = opened else {
            return Ok(None);
        };
        let chunks = futures_util::stream::try_unfold(file, move |mut f| {
            let path = path.clone();
            async move {
                let (f, buf) = tokio::task::spawn_blocking(move || {
                    let mut buf = vec![0; READ_CHUNK];
                    let n = f.read(&mut buf).map_err(|e| Error::io("read", &path, e))?;
                    buf.truncate(n);
                    Ok::<_, Error>((f, buf))
                })
                .await
                .map_err(|e| Error::Task(e.to_string()))??;
                Ok((!buf.is_empty()).then(|| (Bytes::from(buf), f)))
            }
        });
        Ok(Some(Reader::new(Some(len), chunks)))
    }

    async fn put_new(&self, key: &str, bytes: Bytes) -> Result<Created> {
        validate_key(key)?;
        let key = key.to_owned();
        self.blocking(move |s| s.put_new_blocking(&key, &bytes))
            .await
    }

    async fn put_if(&self, key: &str, bytes: Bytes, pre: Precondition) -> Result<Version> {
        validate_key(key)?;
        let key = key.to_owned();
        self.blocking(move |s| s.put_if_blocking(&key, &bytes, &pre))
            .await
    }

    async fn put(&self, key: &str, bytes: Bytes) -> Result<Version> {
        validate_key(key)?;
        let key = key.to_owned();
        self.blocking(move |s| s.put_blocking(&key, &bytes)).await
    }

    async fn delete(&self, key: &str) -> Result<()> {
        validate_key(key)?;
        let key = key.to_owned();
        self.blocking(move |s| s.delete_blocking(&key)).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>> {
        validate_prefix(prefix)?;
        let prefix = prefix.to_owned();
        self.blocking(move |s| s.list_blocking(&prefix)).await
    }

    fn describe(&self) -> String {
        format!("file://{}", self.root.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn symlinks_below_the_root_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), b"outside").unwrap();
        let root = tempfile::tempdir().unwrap();
        let store = LocalDir::open(root.path()).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("tile")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret"),
            root.path().join("checkpoint"),
        )
        .unwrap();

        for res in [
            store.get("tile/secret").await.map(|_| ()),
            store
                .put_new("tile/x", Bytes::from_static(b"x"))
                .await
                .map(|_| ()),
            store
                .put("tile/x", Bytes::from_static(b"x"))
                .await
                .map(|_| ()),
            store.get("checkpoint").await.map(|_| ()),
            store
                .put("checkpoint", Bytes::from_static(b"x"))
                .await
                .map(|_| ()),
            store
                .put_if(
                    "checkpoint",
                    Bytes::from_static(b"x"),
                    Precondition::Matches(version_of(b"outside")),
                )
                .await
                .map(|_| ()),
            store.list("tile/").await.map(|_| ()),
        ] {
            assert!(matches!(res, Err(Error::Symlink { .. })), "{res:?}");
        }
        // put_new over a link: the link exists, its target is never read through it.
        let res = store
            .put_new("checkpoint", Bytes::from_static(b"outside"))
            .await;
        assert!(matches!(res, Err(Error::Symlink { .. })), "{res:?}");
        assert_eq!(fs::read(outside.path().join("secret")).unwrap(), b"outside");
        assert!(!outside.path().join("x").exists());
        // The links are not listed.
        assert_eq!(store.list("").await.unwrap(), Vec::<String>::new());
    }

    #[tokio::test]
    async fn versions_are_content_hashes_and_no_temp_files_remain() {
        let root = tempfile::tempdir().unwrap();
        let store = LocalDir::open(root.path()).unwrap();
        let c = store
            .put_new("tile/0/000", Bytes::from_static(b"abc"))
            .await
            .unwrap();
        assert_eq!(
            c.version().as_str(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        store
            .put_new("tile/0/000", Bytes::from_static(b"abc"))
            .await
            .unwrap();
        let _ = store
            .put_new("tile/0/000", Bytes::from_static(b"abd"))
            .await
            .unwrap_err();
        let names: Vec<_> = fs::read_dir(root.path().join("tile/0"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["000"]);
    }

    #[test]
    fn a_second_handle_on_the_same_root_waits_for_the_lock() {
        // flock locks belong to the open file description: two handles in one process
        // exclude each other as two processes do.
        let root = tempfile::tempdir().unwrap();
        let a = LocalDir::open(root.path()).unwrap();
        let b = LocalDir::open(root.path()).unwrap();
        let held = a.lock().unwrap();
        let f = b.open_lock_file().unwrap();
        assert!(matches!(f.try_lock(), Err(fs::TryLockError::WouldBlock)));
        drop(held);
        f.try_lock().unwrap();
    }
}
