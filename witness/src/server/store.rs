//! Where a witness keeps, per log origin, the tree it last cosigned ([`WitnessStore`]): a
//! directory of its own ([`DirStore`]), and an in-memory store for tests ([`MemoryStore`]).

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The tree a witness last cosigned for one origin: its size and RFC 6962 root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TreeHead {
    /// The tree size.
    pub size: u64,
    /// The RFC 6962 root of the first `size` entries.
    pub root: [u8; 32],
}

/// A store failed (I/O, corruption). The text is for the operator's log; it is never sent to
/// a client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("witness store: {0}")]
pub struct StoreError(pub String);

/// The witness's durable state: per origin, the [`TreeHead`] it last cosigned.
///
/// The contract, which [`Witness`](super::Witness) relies on for the spec's atomicity
/// ("checking the old size against the latest checkpoint and persisting the new checkpoint
/// must be performed atomically"):
///
/// - [`compare_and_set`](WitnessStore::compare_and_set) is **one atomic step** against
///   every other writer of the same store, in this process or any other: it writes `new`
///   only if the origin's value is exactly `expected` (`None`: no value), and says whether it
///   did. Two calls with the same `expected` and different `new` never both return `true`.
/// - It returns `Ok(true)` only once `new` is **durable** (survives a crash or power loss as
///   far as the store can promise: RocksDB, a synced write or a WAL the operator accepts);
///   the witness hands out the cosignature only after that.
/// - With `expected == Some(new)` (a resubmitted tree, the log's cadence) the store may
///   skip the write, but must still answer `true` only if the value is `new` at that moment.
/// - Only origins the witness is configured for are ever written (unknown origins are
///   answered 404 before the store is touched), so the store holds one small entry per
///   known log.
/// - Errors are errors (`Err`), never `Ok(false)`: `false` means "another writer got there
///   first".
pub trait WitnessStore: Send + Sync {
    /// The tree last cosigned for `origin`, `None` if never.
    fn get(&self, origin: &str) -> Result<Option<TreeHead>, StoreError>;

    /// Atomically: if `origin`'s value is `expected`, make it `new` (durably) and return
    /// `true`; otherwise change nothing and return `false`.
    fn compare_and_set(
        &self,
        origin: &str,
        expected: Option<TreeHead>,
        new: TreeHead,
    ) -> Result<bool, StoreError>;
}

/// A [`WitnessStore`] in memory (tests, or a witness whose state may be lost). Cloning is
/// not offered: share it with an `Arc`.
#[derive(Debug, Default)]
pub struct MemoryStore {
    heads: Mutex<HashMap<String, TreeHead>>,
    writes: Mutex<u64>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// How many times a value was written (a resubmitted tree is not written).
    pub fn writes(&self) -> u64 {
        *self.writes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl WitnessStore for MemoryStore {
    fn get(&self, origin: &str) -> Result<Option<TreeHead>, StoreError> {
        let heads = self.heads.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(heads.get(origin).copied())
    }

    fn compare_and_set(
        &self,
        origin: &str,
        expected: Option<TreeHead>,
        new: TreeHead,
    ) -> Result<bool, StoreError> {
        let mut heads = self.heads.lock().unwrap_or_else(PoisonError::into_inner);
        if heads.get(origin).copied() != expected {
            return Ok(false);
        }
        if expected != Some(new) {
            heads.insert(origin.to_owned(), new);
            *self.writes.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        }
        Ok(true)
    }
}

/// The first line of a [`DirStore`]'s `heads` file.
pub const STATE_FORMAT: &str = "dgsp-witness-state/v1";

/// The file of a [`DirStore`] that holds the trees.
const HEADS: &str = "heads";
/// The file of a [`DirStore`] that one process holds locked while it uses the state.
const LOCK: &str = "lock";
/// The file of a [`DirStore`] that holds the log-key statement kept with the state.
const LOG_KEY: &str = "log-key";
/// The most bytes a kept log-key statement may have (a DGSP statement: a 1.8 KB vkey and a
/// SPHINCS+ signature of at most 49 856 bytes, base64).
pub const MAX_LOG_KEY_STATEMENT: usize = 128 * 1024;
/// The most origins a state file may hold (a witness cosigns for a few logs).
const MAX_ORIGINS: usize = 1024;

/// A [`WitnessStore`] in a directory of its own, meant to live with the witness's key and
/// apart from any data that may be rebuilt or lost (a gateway's replica):
///
/// ```text
/// <dir>/heads   dgsp-witness-state/v1\n then one `<origin> <size> <64 hex root>\n` per log
/// <dir>/lock    locked (flock) by the one process using the state
/// <dir>/log-key the newest statement binding the log's key its owner accepted (optional)
/// ```
///
/// A compare-and-set writes the whole file anew (a temporary file, synced, renamed into
/// place, the directory synced) before it returns `true`; one process at a time holds the
/// lock (a second [`open`](DirStore::open) is refused), and a mutex orders the writers
/// within it. A missing or unreadable `heads` is an error, never an empty state: an empty
/// state is only ever made by [`create`](DirStore::create).
#[derive(Debug)]
pub struct DirStore {
    dir: PathBuf,
    heads: Mutex<BTreeMap<String, TreeHead>>,
    /// Held locked for the store's lifetime.
    _lock: File,
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError(format!("{what} {}: {e}", path.display()))
}

impl DirStore {
    /// Whether `dir` holds a state (its `heads` file exists).
    pub fn exists(dir: &Path) -> bool {
        dir.join(HEADS).exists()
    }

    /// Opens the state in `dir`; refused if it holds none, if its file is malformed, or if
    /// another process holds it.
    pub fn open(dir: &Path) -> Result<DirStore, StoreError> {
        let path = dir.join(HEADS);
        let text = fs::read_to_string(&path).map_err(|e| io_error("reading", &path, e))?;
        let heads =
            parse_heads(&text).map_err(|why| StoreError(format!("{}: {why}", path.display())))?;
        let lock = lock(dir)?;
        Ok(DirStore {
            dir: dir.to_owned(),
            heads: Mutex::new(heads),
            _lock: lock,
        })
    }

    /// Makes a new state in `dir` (created, mode 0700, if missing) holding `initial`, and
    /// opens it; refused if `dir` already holds one.
    pub fn create(dir: &Path, initial: &[(String, TreeHead)]) -> Result<DirStore, StoreError> {
        if !dir.is_dir() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| io_error("creating", dir, e))?;
        }
        let lock = lock(dir)?;
        if DirStore::exists(dir) {
            return Err(StoreError(format!(
                "{} already holds a witness state",
                dir.display()
            )));
        }
        let heads: BTreeMap<String, TreeHead> = initial.iter().cloned().collect();
        let store = DirStore {
            dir: dir.to_owned(),
            heads: Mutex::new(BTreeMap::new()),
            _lock: lock,
        };
        store.write(&heads)?;
        *store.heads.lock().unwrap_or_else(PoisonError::into_inner) = heads;
        Ok(store)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log-key statement kept with the state ([`keep_log_key_statement`]), `None` if
    /// none was. The store does not judge it: its owner verifies it as it verified it before
    /// keeping it. Refused over [`MAX_LOG_KEY_STATEMENT`] bytes or not UTF-8.
    ///
    /// [`keep_log_key_statement`]: DirStore::keep_log_key_statement
    pub fn log_key_statement(&self) -> Result<Option<String>, StoreError> {
        use std::io::Read as _;
        let path = self.dir.join(LOG_KEY);
        let f = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error("reading", &path, e)),
        };
        let mut bytes = Vec::new();
        f.take(MAX_LOG_KEY_STATEMENT as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| io_error("reading", &path, e))?;
        if bytes.len() > MAX_LOG_KEY_STATEMENT {
            return Err(StoreError(format!(
                "{}: over {MAX_LOG_KEY_STATEMENT} bytes",
                path.display()
            )));
        }
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| StoreError(format!("{}: not UTF-8", path.display())))
    }

    /// Keeps `statement` (the log-key statement its owner verified and accepted) with the
    /// state, durably, in place of the one kept before; refused over
    /// [`MAX_LOG_KEY_STATEMENT`] bytes.
    pub fn keep_log_key_statement(&self, statement: &str) -> Result<(), StoreError> {
        if statement.len() > MAX_LOG_KEY_STATEMENT {
            return Err(StoreError(format!(
                "a log-key statement of {} bytes, over {MAX_LOG_KEY_STATEMENT}",
                statement.len()
            )));
        }
        self.write_file(LOG_KEY, statement.as_bytes())
    }

    /// Writes `heads` as the state, durably.
    fn write(&self, heads: &BTreeMap<String, TreeHead>) -> Result<(), StoreError> {
        let mut text = format!("{STATE_FORMAT}\n");
        for (origin, h) in heads {
            let root: String = h.root.iter().map(|b| format!("{b:02x}")).collect();
            text.push_str(&format!("{origin} {} {root}\n", h.size));
        }
        self.write_file(HEADS, text.as_bytes())
    }

    /// Writes the file `name` of the directory durably: a temporary file, synced, renamed
    /// over `name`, the directory synced.
    fn write_file(&self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let tmp = self.dir.join(format!("{name}.tmp"));
        let path = self.dir.join(name);
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| io_error("writing", &tmp, e))?;
        f.write_all(bytes)
            .and_then(|()| f.sync_all())
            .map_err(|e| io_error("writing", &tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| io_error("renaming into", &path, e))?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_error("syncing", &self.dir, e))
    }
}

/// Opens and locks `dir/lock` (refused while another process holds it).
fn lock(dir: &Path) -> Result<File, StoreError> {
    let path = dir.join(LOCK);
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(|e| io_error("opening", &path, e))?;
    f.try_lock().map_err(|e| {
        StoreError(format!(
            "{}: the witness state is in use by another process ({e})",
            dir.display()
        ))
    })?;
    Ok(f)
}

/// Parses a `heads` file strictly.
fn parse_heads(text: &str) -> Result<BTreeMap<String, TreeHead>, String> {
    let mut lines = text
        .strip_suffix('\n')
        .ok_or("no final newline")?
        .split('\n');
    if lines.next() != Some(STATE_FORMAT) {
        return Err(format!(
            "not a witness state (first line is not {STATE_FORMAT})"
        ));
    }
    let mut heads = BTreeMap::new();
    for (i, line) in lines.enumerate() {
        let bad = || format!("line {} is not `<origin> <size> <64 hex root>`", i + 2);
        let mut f = line.split(' ');
        let (Some(origin), Some(size), Some(root), None) = (f.next(), f.next(), f.next(), f.next())
        else {
            return Err(bad());
        };
        let size: u64 = size
            .parse()
            .ok()
            .filter(|n: &u64| n.to_string() == size)
            .ok_or_else(bad)?;
        let mut r = [0u8; 32];
        if root.len() != 64 || origin.is_empty() {
            return Err(bad());
        }
        for (j, byte) in r.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&root[2 * j..2 * j + 2], 16).map_err(|_| bad())?;
        }
        if heads.len() == MAX_ORIGINS
            || heads
                .insert(origin.to_owned(), TreeHead { size, root: r })
                .is_some()
        {
            return Err(format!("line {}: a second or one origin too many", i + 2));
        }
    }
    Ok(heads)
}

impl WitnessStore for DirStore {
    fn get(&self, origin: &str) -> Result<Option<TreeHead>, StoreError> {
        let heads = self.heads.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(heads.get(origin).copied())
    }

    fn compare_and_set(
        &self,
        origin: &str,
        expected: Option<TreeHead>,
        new: TreeHead,
    ) -> Result<bool, StoreError> {
        let mut heads = self.heads.lock().unwrap_or_else(PoisonError::into_inner);
        if heads.get(origin).copied() != expected {
            return Ok(false);
        }
        if expected == Some(new) {
            return Ok(true);
        }
        let mut next = heads.clone();
        next.insert(origin.to_owned(), new);
        self.write(&next)?;
        *heads = next;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dir_store_is_durable_exclusive_and_never_empty_by_accident() {
        let tmp = std::env::temp_dir().join(format!(
            "dgsp-witness-dir-store-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        let dir = tmp.join("state");
        let a = TreeHead {
            size: 3,
            root: [0xab; 32],
        };
        let b = TreeHead {
            size: 5,
            root: [1; 32],
        };
        assert!(!DirStore::exists(&dir));
        assert!(
            DirStore::open(&dir).is_err(),
            "no state is not an empty state"
        );
        let s = DirStore::create(&dir, &[("o".into(), a)]).unwrap();
        assert!(DirStore::exists(&dir));
        assert_eq!(s.get("o"), Ok(Some(a)));
        // One process at a time; a second create is refused.
        assert!(DirStore::open(&dir).unwrap_err().0.contains("in use"));
        assert!(DirStore::create(&dir, &[]).is_err());
        assert_eq!(s.compare_and_set("o", None, b), Ok(false));
        assert_eq!(s.compare_and_set("o", Some(a), b), Ok(true));
        assert_eq!(s.compare_and_set("p", None, a), Ok(true));
        drop(s);
        let s = DirStore::open(&dir).unwrap();
        assert_eq!((s.get("o"), s.get("p")), (Ok(Some(b)), Ok(Some(a))));
        assert_eq!(s.get("q"), Ok(None));
        // A log-key statement is kept beside the trees, replaced, read back after a reopen.
        assert_eq!(s.log_key_statement(), Ok(None));
        s.keep_log_key_statement("first\n").unwrap();
        s.keep_log_key_statement("second\n").unwrap();
        assert!(s
            .keep_log_key_statement(&"x".repeat(MAX_LOG_KEY_STATEMENT + 1))
            .is_err());
        drop(s);
        let s = DirStore::open(&dir).unwrap();
        assert_eq!(s.log_key_statement(), Ok(Some("second\n".to_owned())));
        fs::write(dir.join(LOG_KEY), "y".repeat(MAX_LOG_KEY_STATEMENT + 1)).unwrap();
        assert!(s.log_key_statement().is_err(), "over the cap");
        fs::write(dir.join(LOG_KEY), "second\n").unwrap();
        drop(s);
        let text = fs::read_to_string(dir.join(HEADS)).unwrap();
        assert_eq!(
            text,
            format!(
                "{STATE_FORMAT}\no 5 {}\np 3 {}\n",
                "01".repeat(32),
                "ab".repeat(32)
            )
        );
        // A damaged file is an error, never an empty state.
        for bad in [
            String::new(),
            "other\n".to_owned(),
            format!("{STATE_FORMAT}\no 05 {}\n", "01".repeat(32)),
            format!("{STATE_FORMAT}\no 5 {}\n", "01".repeat(31)),
            format!(
                "{STATE_FORMAT}\no 5 {}\no 6 {}\n",
                "01".repeat(32),
                "01".repeat(32)
            ),
            format!("{STATE_FORMAT}\no 5 {}", "01".repeat(32)),
        ] {
            fs::write(dir.join(HEADS), &bad).unwrap();
            assert!(DirStore::open(&dir).is_err(), "{bad:?}");
        }
        fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn compare_and_set_is_compare_and_set() {
        let s = MemoryStore::new();
        let a = TreeHead {
            size: 1,
            root: [1; 32],
        };
        let b = TreeHead {
            size: 1,
            root: [2; 32],
        };
        assert_eq!(s.get("o"), Ok(None));
        assert_eq!(s.compare_and_set("o", Some(a), b), Ok(false));
        assert_eq!(s.compare_and_set("o", None, a), Ok(true));
        assert_eq!(s.compare_and_set("o", None, b), Ok(false));
        assert_eq!(s.get("o"), Ok(Some(a)));
        assert_eq!(s.compare_and_set("o", Some(a), a), Ok(true));
        assert_eq!(s.writes(), 1);
        assert_eq!(s.compare_and_set("o", Some(b), b), Ok(false));
        assert_eq!(s.get("other"), Ok(None));
    }
}
