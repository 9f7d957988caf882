//! Reading the log's tiles over HTTP(S): any base URL that serves the C2SP tlog-tiles
//! layout (`checkpoint`, `tile/...`) and the snapshot bundles (`snapshot/<N>`): the
//! registry's `/v1/log`, a static server over the directory its mirror writes, or a bucket.
//! Or straight from a tile store (`s3://BUCKET/PREFIX`: the bucket read with credentials,
//! as the registry's mirror writes it). Every read is bounded in bytes and in time.

use std::sync::Arc;
use std::time::Duration;

use dgsp_tilestore::TileStore;

use crate::follower::fetch::{client, PAGE_DEADLINE_TIMEOUTS};
use crate::follower::Fault;

/// A reader of one tiles base: an HTTP(S) URL, or a tile store.
#[derive(Clone, Debug)]
pub struct TileClient {
    base: String,
    http: reqwest::Client,
    /// read through this store instead of HTTP
    store: Option<Arc<dyn TileStore>>,
    timeout: Duration,
}

/// An object as read, with the `max-age` its `Cache-Control` gives.
#[derive(Debug)]
pub struct Fetched {
    /// The body.
    pub bytes: Vec<u8>,
    /// `Cache-Control: max-age`, if given.
    pub max_age: Option<Duration>,
}

impl TileClient {
    /// A client for `base` (trailing `/` dropped); `timeout` bounds connecting and every
    /// stall, and [`PAGE_DEADLINE_TIMEOUTS`] of it a whole object. An `https://` base's
    /// certificate must chain to `roots` when given, else to the system's roots.
    pub fn new(
        base: &str,
        timeout: Duration,
        roots: &[reqwest::Certificate],
    ) -> Result<Self, Fault> {
        Ok(TileClient {
            base: base.trim_end_matches('/').to_owned(),
            http: client(timeout, roots)?,
            store: None,
            timeout,
        })
    }

    /// A reader of `store` (named `base` in logs and faults), with the same bounds.
    pub fn from_store(
        base: &str,
        store: Arc<dyn TileStore>,
        timeout: Duration,
    ) -> Result<Self, Fault> {
        let mut c = TileClient::new(base, timeout, &[])?;
        c.store = Some(store);
        Ok(c)
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `GET base/path`, at most `max` bytes (a larger object is [`Fault::BadTile`], refused
    /// without reading past `max`); an error status is [`Fault::HttpStatus`].
    pub async fn get(&self, path: &str, max: usize) -> Result<Fetched, Fault> {
        self.within(path, async {
            let (body, max_age) = self.open(path).await?;
            let bytes = body.read_to_end(max).await?.ok_or_else(|| Fault::BadTile {
                path: path.to_owned(),
                detail: format!("larger than the {max} bytes it can hold"),
            })?;
            Ok(Fetched { bytes, max_age })
        })
        .await
    }

    /// Runs `read`, a read of `path` (or several), within the deadline of one object:
    /// [`PAGE_DEADLINE_TIMEOUTS`] stall timeouts.
    pub async fn within<T>(
        &self,
        path: &str,
        read: impl std::future::Future<Output = Result<T, Fault>>,
    ) -> Result<T, Fault> {
        let deadline = self.timeout.saturating_mul(PAGE_DEADLINE_TIMEOUTS);
        tokio::time::timeout(deadline, read)
            .await
            .unwrap_or_else(|_| {
                Err(Fault::Unreachable(format!(
                    "{}/{path} took longer than {deadline:?}",
                    self.base
                )))
            })
    }

    /// Starts reading `base/path`: its body, to be read as it arrives, and the `max-age` its
    /// `Cache-Control` gives. Bound it with [`TileClient::within`].
    pub async fn open(&self, path: &str) -> Result<(Body, Option<Duration>), Fault> {
        let url = format!("{}/{path}", self.base);
        if let Some(store) = &self.store {
            let reader = store
                .read(path)
                .await
                .map_err(|e| Fault::Unreachable(format!("{url}: {e}")))?
                .ok_or(Fault::HttpStatus(404))?;
            // A store has no cache lifetime: the follower's own poll interval applies.
            return Ok((Body::Store { reader, url }, None));
        }
        let resp = self
            .http
            .get(&url)
            .send()
            .await
            .map_err(|e| crate::follower::fetch::unreachable(&url, &e))?;
        let status = resp.status();
        if !status.is_success() {
            tracing::debug!(%url, status = status.as_u16(), "tiles: error status");
            return Err(Fault::HttpStatus(status.as_u16()));
        }
        let max_age = resp
            .headers()
            .get(reqwest::header::CACHE_CONTROL)
            .and_then(|v| v.to_str().ok())
            .and_then(max_age);
        Ok((Body::http(resp), max_age))
    }
}

/// The body of an object being read ([`TileClient::open`]), chunk by chunk: a reader that
/// stops drops it, and nothing more is read.
pub enum Body {
    /// An HTTP answer.
    Http {
        /// the answer, its body being read
        resp: reqwest::Response,
        /// its `Content-Length`, read before any of the body (reqwest's counts down)
        size: Option<u64>,
    },
    /// A tile store's object.
    Store {
        /// its bytes as they arrive
        reader: dgsp_tilestore::Reader,
        /// where it is, for faults
        url: String,
    },
}

impl Body {
    /// The body of `resp`, none of it read yet.
    pub fn http(resp: reqwest::Response) -> Self {
        let size = resp.content_length();
        Body::Http { resp, size }
    }

    /// The size the server or store reported before sending (a claim: what arrives is
    /// still counted).
    pub fn size(&self) -> Option<u64> {
        match self {
            Body::Http { size, .. } => *size,
            Body::Store { reader, .. } => reader.size(),
        }
    }

    /// The next chunk, `None` at the end.
    pub async fn chunk(&mut self) -> Result<Option<dgsp_tilestore::Bytes>, Fault> {
        match self {
            Body::Http { resp, .. } => resp
                .chunk()
                .await
                .map_err(|e| Fault::MalformedPage(format!("reading the body: {e}"))),
            Body::Store { reader, url } => reader
                .chunk()
                .await
                .map_err(|e| Fault::Unreachable(format!("{url}: {e}"))),
        }
    }

    /// The rest of the body, unless it is over `max` bytes: then `Ok(None)`, known from the
    /// reported size or as soon as more than `max` bytes arrived, and nothing more is read.
    pub async fn read_to_end(mut self, max: usize) -> Result<Option<Vec<u8>>, Fault> {
        if self.size().is_some_and(|n| n > max as u64) {
            return Ok(None);
        }
        let mut body = Vec::new();
        while let Some(chunk) = self.chunk().await? {
            if body.len() + chunk.len() > max {
                return Ok(None);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Some(body))
    }
}

/// The `max-age` of a `Cache-Control` value.
pub fn max_age(value: &str) -> Option<Duration> {
    value.split(',').find_map(|d| {
        let secs = d.trim().strip_prefix("max-age=")?;
        secs.trim().parse().ok().map(Duration::from_secs)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn max_age_is_read_from_cache_control() {
        use std::time::Duration;
        assert_eq!(
            super::max_age("public, max-age=2"),
            Some(Duration::from_secs(2))
        );
        assert_eq!(super::max_age("no-cache"), None);
    }
}
