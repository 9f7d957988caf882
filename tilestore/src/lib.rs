//! The tile store: where the registry publishes its log as C2SP tlog-tiles (immutable hash
//! tiles and entry bundles, a mutable `checkpoint`) and keeps its write lease.
//!
//! Two backends behind one object-safe trait, [`TileStore`] (hold it as
//! `Arc<dyn TileStore>`):
//! - [`LocalDir`]: a directory; atomic writes (temporary file, fsync, `link`/`rename`, fsync
//!   of the directory), compare-and-swap serialised across processes by an `flock`, versions
//!   are the hex SHA-256 of the content, symbolic links below the root refused.
//! - [`S3`]: S3-compatible object storage through the `object_store` crate; create-if-absent
//!   is `If-None-Match: *`, compare-and-swap is `If-Match: <ETag>`; versions are ETags.
//!
//! Nothing here knows about tiles: keys are relative slash paths checked by
//! [`validate_key`]. See `docs/tilestore.md`.

mod error;
mod local;
mod s3;

#[cfg(test)]
mod contract_tests;
#[cfg(any(test, feature = "test-server"))]
pub mod test_server;

use std::fmt;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::{Stream, TryStreamExt};

pub use bytes::Bytes;
pub use error::{BoxError, Error, Result};
pub use local::LocalDir;
pub use s3::{CacheControl, S3Config, S3Credentials, S3};

/// The most keys one [`TileStore::list`] call returns; more is [`Error::ListTooLarge`]
/// (list a narrower prefix).
pub const LIST_LIMIT: usize = 100_000;

/// The longest key accepted, in bytes (S3 allows 1024, including the store's key prefix).
pub const MAX_KEY_LEN: usize = 512;

/// An opaque version of a stored object: the ETag on S3 (quotes included, as the server
/// sends it), the hex SHA-256 of the content in a local directory. Compare versions only
/// with versions from the same store.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Version(String);

impl Version {
    /// Wraps a version string as a backend reports it.
    pub fn new(v: impl Into<String>) -> Self {
        Version(v.into())
    }

    /// The version string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Version({})", self.0)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A stored object: its bytes and its version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    pub bytes: Bytes,
    pub version: Version,
}

/// An object's bytes as they arrive ([`TileStore::read`]): read chunk by chunk, so that a
/// reader can stop at any point (at a cap, or once a header tells it what follows) without
/// the rest being read or held.
pub struct Reader {
    size: Option<u64>,
    chunks: Pin<Box<dyn Stream<Item = Result<Bytes>> + Send>>,
}

impl fmt::Debug for Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader")
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl Reader {
    /// A reader of `chunks`, of `size` bytes as the backend reports it.
    pub fn new(
        size: Option<u64>,
        chunks: impl Stream<Item = Result<Bytes>> + Send + 'static,
    ) -> Self {
        Reader {
            size,
            chunks: Box::pin(chunks),
        }
    }

    /// A reader of bytes already held.
    pub fn from_bytes(bytes: Bytes) -> Self {
        let size = Some(bytes.len() as u64);
        Reader::new(size, futures_util::stream::iter([Ok(bytes)]))
    }

    /// The object's size as the backend reported it before any byte was read (S3: its
    /// `Content-Length`; a directory: the file's length). A claim, not a bound: readers
    /// still count what arrives.
    pub fn size(&self) -> Option<u64> {
        self.size
    }

    /// The next chunk, `None` at the end.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>> {
        self.chunks.try_next().await
    }

    /// The rest of the object, at most `max` bytes: [`Error::TooLarge`] (for `key`) as soon
    /// as it is known to be larger (its reported size, or the bytes that arrived), without
    /// reading further. Nothing is allocated on the reported size's claim.
    pub async fn read_to_end(mut self, key: &str, max: usize) -> Result<Bytes> {
        let too_large = || Error::TooLarge {
            key: key.to_owned(),
            max,
        };
        if self.size.is_some_and(|n| n > max as u64) {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = self.chunk().await? {
            if body.len().saturating_add(chunk.len()) > max {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Bytes::from(body))
    }
}

/// What [`TileStore::put_new`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Created {
    /// The key was absent and now holds the bytes.
    New(Version),
    /// The key already held exactly these bytes (an idempotent retry): nothing was written.
    AlreadySame(Version),
}

impl Created {
    /// The version of the stored object.
    pub fn version(&self) -> &Version {
        match self {
            Created::New(v) | Created::AlreadySame(v) => v,
        }
    }
}

/// The condition of a [`TileStore::put_if`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Precondition {
    /// The key must not exist (S3 `If-None-Match: *`).
    Absent,
    /// The key must exist with this version (S3 `If-Match`).
    Matches(Version),
}

/// The storage of a tile log: immutable objects, compare-and-swap objects, listing.
///
/// Every method validates its key first ([`Error::InvalidKey`]). Writes are atomic: a
/// reader sees the old bytes or the new ones, never a part.
#[async_trait::async_trait]
pub trait TileStore: Send + Sync + fmt::Debug {
    /// The object at `key`, or `None` when there is none. Reads it whole: for objects
    /// whose size someone else chose, use [`get_bounded`](Self::get_bounded).
    async fn get(&self, key: &str) -> Result<Option<Object>>;

    /// The object at `key` as its bytes arrive, or `None` when there is none. The default
    /// reads it whole first ([`get`](Self::get)); both backends stream.
    async fn read(&self, key: &str) -> Result<Option<Reader>> {
        Ok(self.get(key).await?.map(|o| Reader::from_bytes(o.bytes)))
    }

    /// The bytes of the object at `key`, at most `max`: a larger one is
    /// [`Error::TooLarge`], refused on its reported size or as soon as more than `max` bytes
    /// arrived, without reading the rest ([`Reader::read_to_end`]).
    async fn get_bounded(&self, key: &str, max: usize) -> Result<Option<Bytes>> {
        match self.read(key).await? {
            None => Ok(None),
            Some(r) => r.read_to_end(key, max).await.map(Some),
        }
    }

    /// Creates `key` only if it is absent. When it exists: [`Created::AlreadySame`] if it
    /// holds exactly `bytes` (a retry of the same immutable write), else
    /// [`Error::Conflict`]. An existing object is never replaced.
    async fn put_new(&self, key: &str, bytes: Bytes) -> Result<Created>;

    /// Compare-and-swap: writes `bytes` only if `pre` holds, else
    /// [`Error::PreconditionFailed`]; returns the new version. Of many concurrent writers
    /// with the same precondition at most one succeeds.
    ///
    /// On S3 a request retried after a lost answer can report `PreconditionFailed` for a
    /// write that did happen: on that error read the key again before concluding.
    async fn put_if(&self, key: &str, bytes: Bytes, pre: Precondition) -> Result<Version>;

    /// Unconditional create-or-overwrite; returns the new version.
    async fn put(&self, key: &str, bytes: Bytes) -> Result<Version>;

    /// Removes `key`; a missing key is not an error.
    async fn delete(&self, key: &str) -> Result<()>;

    /// Every key that starts with `prefix` (a plain string prefix: `tile/0/` or `tile/0/x0`;
    /// empty lists everything), sorted. At most [`LIST_LIMIT`] keys, else
    /// [`Error::ListTooLarge`]. Paginated inside.
    async fn list(&self, prefix: &str) -> Result<Vec<String>>;

    /// Where the store is, for logs (no secrets): `file:///srv/tiles`,
    /// `s3://bucket/prefix (endpoint http://127.0.0.1:8333)`.
    fn describe(&self) -> String;
}

/// Which store to open: a configuration value the services can carry.
#[derive(Clone, Debug)]
pub enum StoreConfig {
    /// A local directory (created if missing).
    Local(PathBuf),
    /// An S3-compatible bucket.
    S3(Box<S3Config>),
}

impl StoreConfig {
    /// Opens the store.
    pub fn open(&self) -> Result<Arc<dyn TileStore>> {
        Ok(match self {
            StoreConfig::Local(dir) => Arc::new(LocalDir::open(dir)?),
            StoreConfig::S3(cfg) => Arc::new(S3::open((**cfg).clone())?),
        })
    }
}

fn invalid(key: &str, reason: &'static str) -> Error {
    Error::InvalidKey {
        key: key.chars().take(MAX_KEY_LEN).collect(),
        reason,
    }
}

fn check_segment(key: &str, seg: &str, partial: bool) -> Result<()> {
    if seg.is_empty() {
        if partial {
            return Ok(());
        }
        return Err(invalid(
            key,
            "empty path segment (leading, trailing or doubled '/')",
        ));
    }
    if seg.starts_with('.') {
        // Also rules out `.` and `..`; names beginning with a dot are the store's own
        // (temporary files, the lock file).
        return Err(invalid(key, "a path segment begins with '.'"));
    }
    if let Some(c) = seg
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(invalid(
            key,
            if c.is_ascii_graphic() {
                "character outside [A-Za-z0-9._-] and '/'"
            } else {
                "non-printable or non-ASCII character"
            },
        ));
    }
    Ok(())
}

/// Checks a key: non-empty, at most [`MAX_KEY_LEN`] bytes, segments separated by single `/`
/// (none leading or trailing), each of `[A-Za-z0-9._-]` and not beginning with `.` (so no
/// `.` or `..`). `tile/0/x001/234.p/5`, `tile/entries/000`, `checkpoint`, `lease` pass.
pub fn validate_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(invalid(key, "empty key"));
    }
    if key.len() > MAX_KEY_LEN {
        return Err(invalid(key, "longer than 512 bytes"));
    }
    if key.starts_with('/') {
        return Err(invalid(key, "begins with '/' (keys are relative)"));
    }
    key.split('/')
        .try_for_each(|seg| check_segment(key, seg, false))
}

/// Checks a list prefix: empty, or a key's beginning (it may end with `/` or in the middle
/// of a segment); the same characters as [`validate_key`].
pub fn validate_prefix(prefix: &str) -> Result<()> {
    if prefix.is_empty() {
        return Ok(());
    }
    if prefix.len() > MAX_KEY_LEN {
        return Err(invalid(prefix, "longer than 512 bytes"));
    }
    if prefix.starts_with('/') {
        return Err(invalid(prefix, "begins with '/' (keys are relative)"));
    }
    let segs: Vec<&str> = prefix.split('/').collect();
    let last = segs.len() - 1;
    segs.iter()
        .enumerate()
        .try_for_each(|(i, seg)| check_segment(prefix, seg, i == last))
}

#[cfg(test)]
mod reader_tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A stream that never ends and reports no size is read only up to the cap: the chunk
    /// that passes it is the last one asked for.
    #[tokio::test]
    async fn an_unsized_stream_is_read_up_to_the_cap() {
        let pulled = Arc::new(AtomicUsize::new(0));
        let counter = pulled.clone();
        let endless = futures_util::stream::repeat_with(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(Bytes::from_static(&[1; 1000]))
        });
        let r = Reader::new(None, endless);
        match r.read_to_end("k", 10_500).await {
            Err(Error::TooLarge { key, max }) => assert_eq!((key.as_str(), max), ("k", 10_500)),
            other => panic!("{other:?}"),
        }
        assert_eq!(pulled.load(Ordering::SeqCst), 11);
        // Within the cap, every byte.
        let chunks = futures_util::stream::iter((0..5).map(|_| Ok(Bytes::from_static(b"ab"))));
        let got = Reader::new(Some(1 << 40), chunks)
            .read_to_end("k", 10)
            .await;
        assert!(
            matches!(got, Err(Error::TooLarge { .. })),
            "a reported size over the cap"
        );
        let chunks = futures_util::stream::iter((0..5).map(|_| Ok(Bytes::from_static(b"ab"))));
        let got = Reader::new(None, chunks)
            .read_to_end("k", 10)
            .await
            .unwrap();
        assert_eq!(got, Bytes::from_static(b"ababababab"));
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;

    #[test]
    fn good_keys_pass() {
        for k in [
            "checkpoint",
            "lease",
            "tile/0/x001/234.p/5",
            "tile/entries/000",
            "tile/entries/x001/x234/067.p/128",
            "a-b_c.d",
        ] {
            validate_key(k).unwrap_or_else(|e| panic!("{k}: {e}"));
        }
        for p in ["", "tile/", "tile/0/x0", "checkpoint"] {
            validate_prefix(p).unwrap_or_else(|e| panic!("{p}: {e}"));
        }
    }

    #[test]
    fn bad_keys_refused() {
        let long = "a".repeat(MAX_KEY_LEN + 1);
        for k in [
            "",
            "/abs",
            "tile/",
            "tile//0",
            "..",
            "tile/../x",
            "./x",
            "tile/.hidden",
            ".tilestore.lock",
            "sp ace",
            "back\\slash",
            "q?x",
            "t\u{e9}",
            "nul\0",
            "new\nline",
            long.as_str(),
        ] {
            match validate_key(k) {
                Err(Error::InvalidKey { .. }) => {}
                other => panic!("{k:?}: {other:?}"),
            }
        }
        for p in ["/x", "a//b", "../", "a/../b", "a/.x", "a b"] {
            assert!(
                matches!(validate_prefix(p), Err(Error::InvalidKey { .. })),
                "{p:?}"
            );
        }
    }
}
