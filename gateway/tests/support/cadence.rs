//! Stand-in for the registry's checkpoint cadence until it lands on main (the registry will
//! sign a checkpoint of its head every `--checkpoint-interval-secs`, even when nothing is
//! written, and serve the newest at `GET /v1/checkpoint`; docs/checkpoints.md). A front on
//! loopback passes every request through to the real registry, except `/v1/checkpoint`,
//! which it answers with a note the group manager signs every `interval`, exactly as the
//! contract says: the log head, the signing time (strictly increasing), and the latest
//! snapshot among the covered entries, signed only when every revocation among them is in
//! that snapshot. Once the registry signs at a cadence itself, `registry_with_cadence` sets
//! its interval and this module goes.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use dgsp_core::checkpoint::{origin_for, Checkpoint, SnapshotRef};
use dgsp_core::Manager;
use dgsp_registry::log::{now_ms, unhex32};
use dgsp_registry::publisher::snapshot_from_json;
use dgsp_registry::store::Store;
use serde_json::{json, Value};

#[derive(Clone)]
struct Shared {
    upstream: String,
    client: reqwest::Client,
    note: Arc<Mutex<Option<Value>>>,
}

/// A running front.
pub struct CadenceFront {
    /// Its base URL.
    pub url: String,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

async fn forward(State(s): State<Shared>, method: Method, uri: Uri, body: Bytes) -> Response {
    if uri.path() == "/v1/checkpoint" {
        if let Some(note) = s.note.lock().unwrap().clone() {
            return axum::Json(note).into_response();
        }
    }
    let path_and_query = uri.path_and_query().map_or("/", |p| p.as_str());
    let url = format!("{}{path_and_query}", s.upstream);
    let request = s
        .client
        .request(
            reqwest::Method::from_bytes(method.as_str().as_bytes()).unwrap(),
            url,
        )
        .body(body);
    match request.send().await {
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
        Ok(r) => {
            let status = StatusCode::from_u16(r.status().as_u16()).unwrap();
            let content_type = r
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/json")
                .to_owned();
            let body = r.bytes().await.unwrap_or_default();
            (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
        }
    }
}

/// The note the registry would sign now. Signed only while the log is settled (its last
/// entry is the registry's own `checkpoint` entry, so nothing is waiting for a snapshot or a
/// checkpoint), at a time later than that checkpoint's and than `last`: like the registry's
/// own notes, later notes never cover fewer entries.
fn sign_head(store: &Store, manager: &Manager, now: u64, last: u64) -> Option<(Value, u64)> {
    let entries = store.entries_after(0, usize::MAX).ok()?;
    let head = entries.last().filter(|e| e.kind == "checkpoint")?;
    let logged = manager
        .public_key()
        .verify_checkpoint(head.public["note"].as_str()?)
        .ok()?;
    let snapshot = entries
        .iter()
        .rfind(|e| e.kind == "snapshot_published")
        .and_then(|e| snapshot_from_json(&e.public["snapshot"]));
    let last_revocation = entries
        .iter()
        .rfind(|e| e.kind == "member_revoked")
        .map_or(0, |e| e.seq);
    if snapshot.as_ref().map_or(0, |s| s.record.log_seq) < last_revocation {
        return None;
    }
    let time = now.max(last + 1).max(logged.time_unix_ms? + 1);
    let hash = unhex32(&head.hash)?;
    let note = manager.sign_checkpoint(&Checkpoint {
        origin: origin_for(manager.public_key()),
        size: head.seq,
        head: hash,
        time_unix_ms: Some(time),
        snapshot: snapshot.map(|s| SnapshotRef::of(&s.record)),
    });
    Some((
        json!({"size": head.seq, "head": hex::encode(hash), "time_unix_ms": time, "note": note}),
        time,
    ))
}

impl CadenceFront {
    /// Starts a front for the registry at `upstream` whose store and manager are given,
    /// signing a note of its head every `interval`.
    pub async fn start(
        upstream: &str,
        store: Arc<Store>,
        manager: Arc<Manager>,
        interval: Duration,
    ) -> CadenceFront {
        let shared = Shared {
            upstream: upstream.trim_end_matches('/').to_owned(),
            client: reqwest::Client::new(),
            note: Arc::default(),
        };
        let note = shared.note.clone();
        let signer = tokio::spawn(async move {
            let mut last = 0u64;
            loop {
                let (store, manager) = (store.clone(), manager.clone());
                let now = now_ms();
                let signed =
                    tokio::task::spawn_blocking(move || sign_head(&store, &manager, now, last))
                        .await
                        .unwrap();
                if let Some((value, time)) = signed {
                    last = time;
                    *note.lock().unwrap() = Some(value);
                }
                tokio::time::sleep(interval).await;
            }
        });
        let app = axum::Router::new().fallback(forward).with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        CadenceFront {
            url,
            tasks: vec![signer, server],
        }
    }
}

impl Drop for CadenceFront {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}
