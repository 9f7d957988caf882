//! A pass-through HTTP proxy on loopback between a registry and a gateway, which can
//! **freeze** the registry as the gateway sees it: every request still goes through, but feed
//! pages lose every entry after a fixed head and report that head as `head_seq`, and (in the
//! replaying variant) `/v1/checkpoint` keeps answering the note the registry served at the
//! moment of the freeze. This is the attack signed time defeats: nothing the proxy can do
//! makes an old state look recent.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use dgsp_registry::api::public::Entries;

/// What the proxy does to answers.
#[derive(Clone, Debug, Default)]
struct Freeze {
    /// Entries after this are dropped, and this is the head reported.
    head: Option<u64>,
    /// The `/v1/checkpoint` answer to replay, if replaying.
    note: Option<Bytes>,
}

#[derive(Clone)]
struct Shared {
    upstream: String,
    client: reqwest::Client,
    freeze: Arc<Mutex<Freeze>>,
}

/// A running proxy.
pub struct Proxy {
    /// Its base URL (give this to the gateway as its registry).
    pub url: String,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

async fn forward(State(s): State<Shared>, uri: Uri) -> Response {
    let path_and_query = uri.path_and_query().map_or("/", |p| p.as_str());
    let freeze = s.freeze.lock().unwrap().clone();
    if uri.path() == "/v1/checkpoint" {
        if let Some(note) = freeze.note {
            return ([(header::CONTENT_TYPE, "application/json")], note).into_response();
        }
    }
    let upstream = match s
        .client
        .get(format!("{}{path_and_query}", s.upstream))
        .send()
        .await
    {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    let status = StatusCode::from_u16(upstream.status().as_u16()).unwrap();
    let content_type = upstream
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_owned();
    let mut body = upstream.bytes().await.unwrap_or_default();
    if let (Some(head), "/v1/log/entries", true) = (freeze.head, uri.path(), status.is_success()) {
        if let Ok(mut page) = serde_json::from_slice::<Entries>(&body) {
            page.entries.retain(|e| e.seq <= head);
            page.head_seq = head;
            body = serde_json::to_vec(&page).unwrap().into();
        }
    }
    (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

impl Proxy {
    /// Starts a proxy in front of `upstream` (a base URL), passing everything through.
    pub async fn start(upstream: &str) -> Proxy {
        let shared = Shared {
            upstream: upstream.trim_end_matches('/').to_owned(),
            client: reqwest::Client::new(),
            freeze: Arc::default(),
        };
        let app = axum::Router::new()
            .fallback(forward)
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Proxy { url, shared, task }
    }

    /// Freezes the registry at its current head; with `replay`, also keeps serving its
    /// current checkpoint note. Returns the head frozen at.
    pub async fn freeze(&self, replay: bool) -> u64 {
        let up = &self.shared.upstream;
        let client = &self.shared.client;
        let note = client
            .get(format!("{up}/v1/checkpoint"))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let page: Entries = client
            .get(format!("{up}/v1/log/entries?after=0&limit=1"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        *self.shared.freeze.lock().unwrap() = Freeze {
            head: Some(page.head_seq),
            note: replay.then_some(note),
        };
        page.head_seq
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
