//! The S3 backend, over the `object_store` crate (Apache-2.0): SigV4 signing, bounded
//! retries with exponential backoff on 5xx / 429 / timeouts, a timeout on every request.
//!
//! - `put_new` and `put_if(Absent)` send `If-None-Match: *` (`PutMode::Create`);
//! - `put_if(Matches(etag))` sends `If-Match: <etag>` (`PutMode::Update`, with
//!   `S3ConditionalPut::ETagMatch`); S3's 404 on a missing key counts as a failed
//!   precondition, its occasional 409 on concurrent conditional writes is retried.
//!
//! The server must honour both headers (AWS S3 since 2024, Cloudflare R2, SeaweedFS; not
//! S3Proxy 2.6: docs/tilestore.md).
//!
//! Every write carries the `Cache-Control` that [`S3Config::cache_control`] chooses for its
//! key (`Attribute::CacheControl`): the bucket then answers every read with it, as a CDN in
//! front of it needs. The registry chooses `dgsp_wire::tiles::cache_control`.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder, S3ConditionalPut};
use object_store::path::Path as OsPath;
use object_store::{
    Attribute, Attributes, BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt, PutMode,
    PutOptions, PutPayload, RetryConfig, UpdateVersion,
};

use crate::{
    validate_key, validate_prefix, Created, Error, Object, Precondition, Reader, Result, TileStore,
    Version, LIST_LIMIT,
};

/// S3 credentials. `Debug` never shows the secret or the session token.
#[derive(Clone)]
pub struct S3Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl S3Credentials {
    /// From `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and (optional) `AWS_SESSION_TOKEN`.
    pub fn from_env() -> Result<Self> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
            (Some(access_key_id), Some(secret_access_key)) => Ok(S3Credentials {
                access_key_id,
                secret_access_key,
                session_token: var("AWS_SESSION_TOKEN"),
            }),
            _ => Err(Error::Config(
                "no S3 credentials: give them in the configuration or set AWS_ACCESS_KEY_ID and \
                 AWS_SECRET_ACCESS_KEY"
                    .into(),
            )),
        }
    }
}

impl fmt::Debug for S3Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// Where and how to reach the bucket.
#[derive(Clone, Debug)]
pub struct S3Config {
    /// `http(s)://host:port` of an S3-compatible server; `None` for AWS S3 itself (the
    /// regional endpoint of `region`).
    pub endpoint: Option<String>,
    /// The signing region (`us-east-1` for most S3-compatible servers, `auto` for R2).
    pub region: String,
    pub bucket: String,
    /// Path-style URLs (`endpoint/bucket/key`) rather than virtual-hosted ones
    /// (`bucket.endpoint/key`); most self-hosted servers want path style.
    pub path_style: bool,
    /// Every key is stored under `prefix/` (empty: at the bucket's root). Same syntax as a
    /// key.
    pub prefix: String,
    /// `None`: from the environment ([`S3Credentials::from_env`]) when the store is opened.
    pub credentials: Option<S3Credentials>,
    /// Limit of one HTTP request, from connecting to the end of the body.
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    /// Retries of a request that failed with 5xx, 429 or a timeout (exponential backoff).
    pub max_retries: usize,
    /// No retry starts later than this after the first try.
    pub retry_timeout: Duration,
    /// The `Cache-Control` stored with each object written, chosen by its key (without the
    /// prefix); `None`: objects are stored without one.
    pub cache_control: Option<CacheControl>,
}

/// Chooses the `Cache-Control` of the object at a key (relative to the store's prefix).
pub type CacheControl = fn(&str) -> &'static str;

impl S3Config {
    /// A configuration with the defaults: AWS endpoint, `us-east-1`, path style, no prefix,
    /// credentials from the environment, 30 s per request (5 s to connect), 5 retries within
    /// 60 s, no `Cache-Control`.
    pub fn new(bucket: impl Into<String>) -> Self {
        S3Config {
            endpoint: None,
            region: "us-east-1".into(),
            bucket: bucket.into(),
            path_style: true,
            prefix: String::new(),
            credentials: None,
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            max_retries: 5,
            retry_timeout: Duration::from_secs(60),
            cache_control: None,
        }
    }
}

/// A tile store in an S3-compatible bucket.
pub struct S3 {
    inner: AmazonS3,
    /// `prefix/` or empty.
    prefix: String,
    described: String,
    cache_control: Option<CacheControl>,
}

impl fmt::Debug for S3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3")
            .field("store", &self.described)
            .finish_non_exhaustive()
    }
}

fn s3_err(op: &'static str, key: &str, e: object_store::Error) -> Error {
    Error::S3 {
        op,
        key: key.to_owned(),
        source: Box::new(e),
    }
}

fn etag(op: &'static str, key: &str, tag: Option<String>) -> Result<Version> {
    match tag {
        Some(t) if !t.is_empty() => Ok(Version::new(t)),
        _ => Err(Error::Protocol {
            op,
            key: key.to_owned(),
            detail: "the answer has no ETag".into(),
        }),
    }
}

impl S3 {
    /// The `GET` of `key` (its body not yet read), or `None` when there is none.
    async fn get_object(&self, key: &str) -> Result<Option<object_store::GetResult>> {
        validate_key(key)?;
        let path = self.path(key)?;
        match self.inner.get(&path).await {
            Ok(r) => Ok(Some(r)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(s3_err("get", key, e)),
        }
    }

    /// Builds the client (no request is sent: a wrong endpoint or credentials show at the
    /// first operation).
    pub fn open(cfg: S3Config) -> Result<Self> {
        if cfg.bucket.is_empty() {
            return Err(Error::Config("the S3 bucket name is empty".into()));
        }
        let prefix = cfg.prefix.trim_end_matches('/');
        if !prefix.is_empty() {
            validate_key(prefix).map_err(|e| Error::Config(format!("S3 key prefix: {e}")))?;
        }
        let creds = match cfg.credentials {
            Some(c) => c,
            None => S3Credentials::from_env()?,
        };
        let mut client = ClientOptions::new()
            .with_timeout(cfg.request_timeout)
            .with_connect_timeout(cfg.connect_timeout);
        let mut builder = AmazonS3Builder::new()
            .with_region(&cfg.region)
            .with_bucket_name(&cfg.bucket)
            .with_virtual_hosted_style_request(!cfg.path_style)
            .with_access_key_id(creds.access_key_id)
            .with_secret_access_key(creds.secret_access_key)
            .with_conditional_put(S3ConditionalPut::ETagMatch)
            .with_retry(RetryConfig {
                backoff: BackoffConfig {
                    init_backoff: Duration::from_millis(100),
                    max_backoff: Duration::from_secs(5),
                    base: 2.0,
                },
                max_retries: cfg.max_retries,
                retry_timeout: cfg.retry_timeout,
            });
        if let Some(token) = creds.session_token {
            builder = builder.with_token(token);
        }
        let where_ = match &cfg.endpoint {
            Some(ep) => {
                let ep = ep.trim_end_matches('/');
                if !(ep.starts_with("http://") || ep.starts_with("https://")) {
                    return Err(Error::Config(format!(
                        "S3 endpoint {ep:?}: give a URL beginning with http:// or https://"
                    )));
                }
                if ep.starts_with("http://") {
                    client = client.with_allow_http(true);
                }
                builder = builder.with_endpoint(ep);
                ep.to_owned()
            }
            None => format!("AWS {}", cfg.region),
        };
        let inner = builder
            .with_client_options(client)
            .build()
            .map_err(|e| Error::Config(format!("S3: {e}")))?;
        let described = format!(
            "s3://{}/{} ({where_})",
            cfg.bucket,
            if prefix.is_empty() { "" } else { prefix }
        );
        Ok(S3 {
            inner,
            prefix: if prefix.is_empty() {
                String::new()
            } else {
                format!("{prefix}/")
            },
            described,
            cache_control: cfg.cache_control,
        })
    }

    fn path(&self, key: &str) -> Result<OsPath> {
        OsPath::parse(format!("{}{key}", self.prefix)).map_err(|_| Error::InvalidKey {
            key: key.to_owned(),
            reason: "refused by the S3 path rules",
        })
    }

    async fn put_mode(
        &self,
        op: &'static str,
        key: &str,
        bytes: Bytes,
        mode: PutMode,
    ) -> std::result::Result<Version, PutFailure> {
        let path = self.path(key).map_err(PutFailure::Other)?;
        let mut attributes = Attributes::new();
        if let Some(choose) = self.cache_control {
            attributes.insert(Attribute::CacheControl, choose(key).into());
        }
        let opts = PutOptions {
            mode,
            attributes,
            ..Default::default()
        };
        match self
            .inner
            .put_opts(&path, PutPayload::from(bytes), opts)
            .await
        {
            Ok(r) => etag(op, key, r.e_tag).map_err(PutFailure::Other),
            Err(object_store::Error::AlreadyExists { .. }) => Err(PutFailure::Exists),
            Err(object_store::Error::Precondition { .. }) => Err(PutFailure::Precondition),
            Err(e) => Err(PutFailure::Other(s3_err(op, key, e))),
        }
    }
}

enum PutFailure {
    Exists,
    Precondition,
    Other(Error),
}

#[async_trait::async_trait]
impl TileStore for S3 {
    async fn get(&self, key: &str) -> Result<Option<Object>> {
        let Some(res) = self.get_object(key).await? else {
            return Ok(None);
        };
        let version = etag("get", key, res.meta.e_tag.clone())?;
        let bytes = res.bytes().await.map_err(|e| s3_err("get", key, e))?;
        Ok(Some(Object { bytes, version }))
    }

    /// Streams the body as it arrives: a reader that stops (a cap, a header that says what
    /// follows) drops the answer and nothing more is read. The `Content-Length` is the
    /// reader's reported size.
    async fn read(&self, key: &str) -> Result<Option<Reader>> {
        let Some(res) = self.get_object(key).await? else {
            return Ok(None);
        };
        let size = res.meta.size;
        let key = key.to_owned();
        let chunks = res.into_stream().map_err(move |e| s3_err("get", &key, e));
        Ok(Some(Reader::new(Some(size), chunks)))
    }

    async fn put_new(&self, key: &str, bytes: Bytes) -> Result<Created> {
        validate_key(key)?;
        // Exists, then deleted before we read it: try again (twice at most).
        for _ in 0..3 {
            match self
                .put_mode("put_new", key, bytes.clone(), PutMode::Create)
                .await
            {
                Ok(v) => return Ok(Created::New(v)),
                Err(PutFailure::Exists | PutFailure::Precondition) => {}
                Err(PutFailure::Other(e)) => return Err(e),
            }
            match self.get(key).await? {
                Some(obj) if obj.bytes == bytes => return Ok(Created::AlreadySame(obj.version)),
                Some(_) => {
                    return Err(Error::Conflict {
                        key: key.to_owned(),
                    })
                }
                None => continue,
            }
        }
        Err(Error::Conflict {
            key: key.to_owned(),
        })
    }

    async fn put_if(&self, key: &str, bytes: Bytes, pre: Precondition) -> Result<Version> {
        validate_key(key)?;
        let mode = match pre {
            Precondition::Absent => PutMode::Create,
            Precondition::Matches(v) => PutMode::Update(UpdateVersion {
                e_tag: Some(v.as_str().to_owned()),
                version: None,
            }),
        };
        match self.put_mode("put_if", key, bytes, mode).await {
            Ok(v) => Ok(v),
            Err(PutFailure::Exists | PutFailure::Precondition) => Err(Error::PreconditionFailed {
                key: key.to_owned(),
            }),
            Err(PutFailure::Other(e)) => Err(e),
        }
    }

    async fn put(&self, key: &str, bytes: Bytes) -> Result<Version> {
        validate_key(key)?;
        match self.put_mode("put", key, bytes, PutMode::Overwrite).await {
            Ok(v) => Ok(v),
            Err(PutFailure::Other(e)) => Err(e),
            Err(PutFailure::Exists | PutFailure::Precondition) => Err(Error::Protocol {
                op: "put",
                key: key.to_owned(),
                detail: "a precondition failure on an unconditional PUT".into(),
            }),
        }
    }

    async fn delete(&self, key: &str) -> Result<()> {
        validate_key(key)?;
        let path = self.path(key)?;
        match self.inner.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(s3_err("delete", key, e)),
        }
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>> {
        validate_prefix(prefix)?;
        // object_store lists whole "directories": list the deepest one the prefix names
        // completely and filter on the rest of the prefix here.
        let dir = match prefix.rsplit_once('/') {
            Some((dir, _)) => format!("{}{dir}", self.prefix),
            None => self.prefix.trim_end_matches('/').to_owned(),
        };
        let dir_path = if dir.is_empty() {
            None
        } else {
            Some(OsPath::parse(&dir).map_err(|_| Error::InvalidKey {
                key: prefix.to_owned(),
                reason: "refused by the S3 path rules",
            })?)
        };
        let mut stream = self.inner.list(dir_path.as_ref());
        let mut out = Vec::new();
        while let Some(meta) = stream
            .try_next()
            .await
            .map_err(|e| s3_err("list", prefix, e))?
        {
            let full = meta.location.as_ref();
            let Some(key) = full.strip_prefix(self.prefix.as_str()) else {
                continue;
            };
            if !key.starts_with(prefix) || validate_key(key).is_err() {
                continue;
            }
            if out.len() >= LIST_LIMIT {
                return Err(Error::ListTooLarge {
                    prefix: prefix.to_owned(),
                    limit: LIST_LIMIT,
                });
            }
            out.push(key.to_owned());
        }
        out.sort();
        Ok(out)
    }

    fn describe(&self) -> String {
        self.described.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_of_the_configuration_hides_the_secrets() {
        let mut cfg = S3Config::new("b");
        cfg.credentials = Some(S3Credentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI-SECRET".into(),
            session_token: Some("TOKEN-SECRET".into()),
        });
        let shown = format!("{cfg:?}");
        assert!(shown.contains("AKIDEXAMPLE"), "{shown}");
        assert!(!shown.contains("SECRET"), "{shown}");
        let store = S3::open(cfg).unwrap();
        assert!(!format!("{store:?}").contains("SECRET"));
    }

    #[test]
    fn bad_configurations_are_refused() {
        let creds = S3Credentials {
            access_key_id: "a".into(),
            secret_access_key: "s".into(),
            session_token: None,
        };
        let mut cfg = S3Config::new("b");
        cfg.credentials = Some(creds.clone());
        cfg.endpoint = Some("127.0.0.1:9000".into());
        assert!(matches!(S3::open(cfg.clone()), Err(Error::Config(_))));
        cfg.endpoint = None;
        cfg.prefix = "../x".into();
        assert!(matches!(S3::open(cfg.clone()), Err(Error::Config(_))));
        cfg.prefix = "a/b/".into();
        let s = S3::open(cfg.clone()).unwrap();
        assert_eq!(s.prefix, "a/b/");
        cfg.bucket = String::new();
        assert!(matches!(S3::open(cfg), Err(Error::Config(_))));
    }
}
