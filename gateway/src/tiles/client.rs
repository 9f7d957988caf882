//! Reading the log's tiles over HTTP(S): any base URL that serves the C2SP tlog-tiles
//! layout (`checkpoint`, `tile/...`) and the snapshot bundles (`snapshot/<N>`): the
//! registry's `/v1/log`, a static server over the directory its mirror writes, or a bucket.
//! Or straight from a tile store (`s3://BUCKET/PREFIX`: the bucket read with credentials,
//! as the registry's mirror writes it). Every read is bounded in bytes and in time.

use std::sync::Arc;
use std::time::Duration;

use dgsp_tilestore::TileStore;

use crate::follower::fetch::{client, read_bounded, PAGE_DEADLINE_TIMEOUTS};
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

    /// `GET base/path`, at most `max` bytes (a larger object is [`Fault::BadTile`]); an
    /// error status is [`Fault::HttpStatus`].
    pub async fn get(&self, path: &str, max: usize) -> Result<Fetched, Fault> {
        let deadline = self.timeout.saturating_mul(PAGE_DEADLINE_TIMEOUTS);
        tokio::time::timeout(deadline, self.get_within(path, max))
            .await
            .unwrap_or_else(|_| {
                Err(Fault::Unreachable(format!(
                    "{}/{path} took longer than {deadline:?}",
                    self.base
                )))
            })
    }

    async fn get_within(&self, path: &str, max: usize) -> Result<Fetched, Fault> {
        let url = format!("{}/{path}", self.base);
        if let Some(store) = &self.store {
            let obj = store
                .get(path)
                .await
                .map_err(|e| Fault::Unreachable(format!("{url}: {e}")))?
                .ok_or(Fault::HttpStatus(404))?;
            if obj.bytes.len() > max {
                return Err(Fault::BadTile {
                    path: path.to_owned(),
                    detail: format!("larger than the {max} bytes it can hold"),
                });
            }
            // A store has no cache lifetime: the follower's own poll interval applies.
            return Ok(Fetched {
                bytes: obj.bytes.to_vec(),
                max_age: None,
            });
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
        let bytes = read_bounded(resp, max)
            .await?
            .ok_or_else(|| Fault::BadTile {
                path: path.to_owned(),
                detail: format!("larger than the {max} bytes it can hold"),
            })?;
        Ok(Fetched { bytes, max_age })
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
