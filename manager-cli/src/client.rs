//! HTTP client for the registry and gateways (being written; API fixed).

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// placeholder
    #[error("{0}")]
    Other(String),
}

impl ClientError {
    /// Short stable name.
    pub fn kind(&self) -> &'static str {
        "http"
    }
}

/// A client for one base URL.
#[derive(Clone, Debug)]
pub struct Client {}

impl Client {
    /// A client for `base` with an optional bearer token.
    pub fn new(
        _base: &str,
        _token: Option<String>,
        _timeout: Duration,
        _retries: u32,
    ) -> Result<Client, ClientError> {
        unimplemented!()
    }

    /// GET `path` with `query`, retried on transient failures.
    pub async fn get_json<T: DeserializeOwned>(
        &self,
        _path: &str,
        _query: &[(&str, String)],
    ) -> Result<T, ClientError> {
        unimplemented!()
    }

    /// POST `body` to `path` with an Idempotency-Key, retried on transient failures.
    pub async fn post_json<B: Serialize, T: DeserializeOwned>(
        &self,
        _path: &str,
        _body: &B,
    ) -> Result<T, ClientError> {
        unimplemented!()
    }
}
