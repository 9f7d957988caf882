//! A registry played by wiremock over a real, honestly signed log: it serves a prefix of the
//! log at `/v1/log/entries` and whatever signed note the test sets at `/v1/checkpoint`, and
//! records the page sizes asked for. The test signs its own cadence notes with the group
//! manager ([`Log::note`]) at the times it chooses, so replays, contradictions and staleness
//! can be staged exactly.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use dgsp_core::checkpoint::{origin_for, Checkpoint, SnapshotRef};
use dgsp_core::Manager;
use dgsp_registry::api::public::Entries;
use dgsp_registry::publisher::snapshot_from_json;
use dgsp_wire::log::{unhex32, Entry, GENESIS_PREV};
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// What a registry serves at `/v1/checkpoint` (its `CheckpointInfo`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Note {
    /// Entries covered.
    pub size: u64,
    /// Hash of entry `size` (hex).
    pub head: String,
    /// When it was signed (Unix ms), as the note says.
    pub time_unix_ms: u64,
    /// The signed note.
    pub note: String,
    /// The witnessed note of the same tree, when the registry has witnesses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witnessed: Option<String>,
}

/// A whole log (from entry 1) and the manager that signed it.
#[derive(Clone)]
pub struct Log {
    /// The entries, public parts only (index = seq - 1).
    pub entries: Vec<Entry>,
    /// The group manager (signs test notes).
    pub manager: Arc<Manager>,
}

impl Log {
    /// Entry `seq`.
    pub fn at(&self, seq: u64) -> &Entry {
        &self.entries[seq as usize - 1]
    }

    /// The snapshot reference of the latest `snapshot_published` entry among the first
    /// `size` entries, if one.
    pub fn snapshot_in(&self, size: u64) -> Option<SnapshotRef> {
        self.entries[..size as usize]
            .iter()
            .rfind(|e| e.kind == "snapshot_published")
            .map(|e| SnapshotRef::of(&snapshot_from_json(&e.public["snapshot"]).unwrap().record))
    }

    /// A note of the first `size` entries signed at `time` (Unix ms), naming `snapshot`.
    pub fn note_naming(&self, size: u64, time: u64, snapshot: Option<SnapshotRef>) -> Note {
        let leaves: Vec<_> = self.entries[..size as usize]
            .iter()
            .map(dgsp_wire::tiles::leaf_of)
            .collect();
        let head = dgsp_wire::merkle::root(&leaves);
        let note = self.manager.sign_checkpoint(&Checkpoint {
            origin: origin_for(self.manager.public_key()),
            size,
            root: head,
            time_unix_ms: Some(time),
            snapshot,
        });
        Note {
            size,
            head: hex::encode(head),
            time_unix_ms: time,
            note,
            witnessed: None,
        }
    }

    /// An honest note of the first `size` entries signed at `time`.
    pub fn note(&self, size: u64, time: u64) -> Note {
        self.note_naming(size, time, self.snapshot_in(size))
    }

    /// The signed time of the last checkpoint entry in the log (Unix ms).
    pub fn last_checkpoint_time(&self) -> u64 {
        self.entries
            .iter()
            .rev()
            .find(|e| e.kind == "checkpoint")
            .and_then(|e| {
                self.manager
                    .public_key()
                    .verify_checkpoint(e.public["note"].as_str()?)
                    .ok()?
                    .time_unix_ms
            })
            .unwrap()
    }
}

/// Re-links `entries` from index `from` on (each `prev_hash` and `hash` recomputed); the
/// entries must be a whole log from seq 1 (index = seq - 1).
pub fn relink(entries: &mut [Entry], from: usize) {
    let mut prev = match from {
        0 => GENESIS_PREV,
        i => unhex32(&entries[i - 1].hash).unwrap(),
    };
    for (i, e) in entries.iter_mut().enumerate().skip(from) {
        e.seq = i as u64 + 1;
        let hash = e.compute_hash(&prev);
        e.prev_hash = hex::encode(prev);
        e.hash = hex::encode(hash);
        prev = hash;
    }
}

/// `count` entries of an unknown kind after `log`, each carrying `pad` bytes, chained on and
/// never checkpointed (a registry that only grows its feed).
pub fn padded(log: &[Entry], count: usize, pad: usize) -> Vec<Entry> {
    let mut out = log.to_vec();
    let template = log.last().unwrap().clone();
    for _ in 0..count {
        let mut e = template.clone();
        e.kind = "member_joined".into();
        e.public = json!({"padding": "x".repeat(pad)});
        e.commitment = None;
        e.private = None;
        out.push(e);
    }
    relink(&mut out, log.len());
    out
}

struct State {
    entries: Vec<Entry>,
    checkpoint: Option<Note>,
    /// `limit` of every feed request, in order.
    limits: Vec<usize>,
    /// While set, the feed answers with this status instead of a page.
    feed_status: Option<u16>,
    /// The log-key statement served at `/v1/log/key` (`None`: 404).
    log_key: Option<String>,
}

/// The mock registry.
#[derive(Clone)]
pub struct MockRegistry {
    state: Arc<Mutex<State>>,
    /// Base URL.
    pub url: String,
    _server: Arc<MockServer>,
}

struct FeedResponder(Arc<Mutex<State>>);

impl Respond for FeedResponder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let param = |name: &str| {
            request
                .url
                .query_pairs()
                .find(|(k, _)| k == name)
                .and_then(|(_, v)| v.parse::<u64>().ok())
        };
        let after = param("after").unwrap_or(0);
        let limit = param("limit").unwrap_or(100) as usize;
        let mut st = self.0.lock().unwrap();
        st.limits.push(limit);
        if let Some(status) = st.feed_status {
            return ResponseTemplate::new(status);
        }
        let page = Entries {
            entries: st
                .entries
                .iter()
                .filter(|e| e.seq > after)
                .take(limit)
                .cloned()
                .collect(),
            head_seq: st.entries.last().map_or(0, |e| e.seq),
        };
        ResponseTemplate::new(200).set_body_json(page)
    }
}

struct CheckpointResponder(Arc<Mutex<State>>);

impl Respond for CheckpointResponder {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        match &self.0.lock().unwrap().checkpoint {
            Some(info) => ResponseTemplate::new(200).set_body_json(info),
            None => ResponseTemplate::new(503),
        }
    }
}

struct LogKeyResponder(Arc<Mutex<State>>);

impl Respond for LogKeyResponder {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        match &self.0.lock().unwrap().log_key {
            Some(statement) => ResponseTemplate::new(200).set_body_string(statement.clone()),
            None => ResponseTemplate::new(404),
        }
    }
}

impl MockRegistry {
    /// Serves `entries` and no checkpoint note (503) until told otherwise.
    pub async fn start(entries: Vec<Entry>) -> MockRegistry {
        let server = MockServer::builder()
            .disable_request_recording()
            .start()
            .await;
        let state = Arc::new(Mutex::new(State {
            entries,
            checkpoint: None,
            limits: Vec::new(),
            feed_status: None,
            log_key: None,
        }));
        Mock::given(method("GET"))
            .and(path("/v1/log/entries"))
            .respond_with(FeedResponder(state.clone()))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/v1/checkpoint"))
            .respond_with(CheckpointResponder(state.clone()))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/v1/log/key"))
            .respond_with(LogKeyResponder(state.clone()))
            .mount(&server)
            .await;
        MockRegistry {
            state,
            url: server.uri(),
            _server: Arc::new(server),
        }
    }

    /// Serves `entries` from now on.
    pub fn serve(&self, entries: Vec<Entry>) {
        self.state.lock().unwrap().entries = entries;
    }

    /// Answers feed requests with `status` from now on (`None`: pages again).
    pub fn feed_status(&self, status: Option<u16>) {
        self.state.lock().unwrap().feed_status = status;
    }

    /// Serves `info` at `/v1/checkpoint` from now on (`None`: 503).
    pub fn note(&self, info: Option<Note>) {
        self.state.lock().unwrap().checkpoint = info;
    }

    /// Serves `statement` at `/v1/log/key` from now on (`None`: 404).
    pub fn log_key(&self, statement: Option<String>) {
        self.state.lock().unwrap().log_key = statement;
    }

    /// The `limit` of every feed request so far.
    pub fn limits(&self) -> Vec<usize> {
        self.state.lock().unwrap().limits.clone()
    }
}
