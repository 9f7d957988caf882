//! The JSON form of a signed revocation snapshot, as the registry serves it
//! (`/v1/revocations/snapshot`, `/v1/revocations/snapshots/{n}`) and as `snapshot_published`
//! log entries carry it: the record's fields for reading, and `encoded`, the binary
//! encoding that is what gets verified (docs/revocation-proofs.md).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::revocation::SignedSnapshot;
use serde_json::{json, Value};

/// The JSON form of `s`.
pub fn snapshot_json(s: &SignedSnapshot) -> Value {
    let r = &s.record;
    json!({
        "record": {
            "group": hex::encode(r.group),
            "number": r.number,
            "log_seq": r.log_seq,
            "count": r.count,
            "root": hex::encode(r.root),
            "prev_hash": hex::encode(r.prev_hash),
            "time_unix_ms": r.time_unix_ms,
        },
        "signature": B64.encode(&s.signature),
        "encoded": B64.encode(s.to_bytes()),
    })
}

/// The form a `snapshot_published` log entry carries: [`snapshot_json`] without the detached
/// `signature`, which `encoded` already holds. Once is enough in the log: every log entry
/// must fit an entry bundle of the tiles (65535 bytes, `docs/format.md`), and the signature
/// twice in base64 does not for the sets with the largest signatures. Served snapshots keep
/// both fields.
pub fn snapshot_entry_json(s: &SignedSnapshot) -> Value {
    let mut v = snapshot_json(s);
    if let Some(o) = v.as_object_mut() {
        o.remove("signature");
    }
    v
}

/// Parses [`snapshot_json`] (or [`snapshot_entry_json`]) output. Only `encoded` is read: the readable fields are a
/// convenience and are never trusted. `None` when it is missing or not a signed snapshot.
/// (The signature is not checked here: [`SignedSnapshot::verify`] does that.)
pub fn snapshot_from_json(v: &Value) -> Option<SignedSnapshot> {
    let bytes = B64.decode(v.get("encoded")?.as_str()?).ok()?;
    SignedSnapshot::from_bytes(&bytes).ok()
}
