//! The events of a group's history and their payloads.
//!
//! Each event splits into a **public** part (everyone sees it in the feed) and a
//! **private** part (usernames, the id behind a revocation, certificate counts), which the
//! feed shows only as a salted commitment. The split, the kind names and the payload
//! schema versions are part of the log format (docs/event-log.md).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use dgsp_core::{MemberId, ParamSet};

/// The payload schema version written today. Version 2 added `digest` to
/// `signature_opened`; the other kinds are the same as in version 1.
pub const SCHEMA_VERSION: u32 = 2;

/// The most zetas one `member_revoked` entry carries: its public form stays under the
/// 65535 bytes of an entry bundle (`docs/format.md`, "Entries that would not fit"): a zeta
/// is 35 bytes of JSON (32 hex characters, quotes, comma), 1800 of them 63000 bytes, with
/// the rest of the entry (about 400 bytes) well inside the limit.
pub const MAX_ZETAS_PER_ENTRY: usize = 1800;

/// A group event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The first entry of every log: which group this is.
    GroupCreated {
        /// parameter set
        params: ParamSet,
        /// the group public key (base64 of its encoding)
        public_key: String,
        /// SHA3-256 of the public key encoding (hex)
        fingerprint: String,
    },
    /// A member was admitted.
    MemberJoined {
        /// assigned id
        id: MemberId,
        /// unique username
        username: String,
    },
    /// Counter values `first..first + count` were issued to member `id`.
    CertificatesIssued {
        /// member
        id: MemberId,
        /// first counter value
        first: u64,
        /// number of certificates
        count: u64,
        /// SHA3-256 (hex) of each certified WOTS+ public key, in counter order
        wots_pk_digests: Vec<String>,
    },
    /// Member `id` was revoked; `zetas` (hex) are its certificates' serial numbers.
    ///
    /// A revocation of more than [`MAX_ZETAS_PER_ENTRY`] certificates is written as several
    /// consecutive `member_revoked` entries in one batch ([`Event::revocation`]), each with
    /// the next zetas in counter order and `first`, the counter of its first zeta, so that
    /// every entry fits an entry bundle (65535 bytes; `docs/format.md`).
    MemberRevoked {
        /// member
        id: MemberId,
        /// its counter at revocation: the number of zetas over all of its parts
        counter: u64,
        /// the counter of this entry's first zeta (0 for the first or only part; written
        /// to the private payload only when not 0)
        first: u64,
        /// the revoked zetas of this entry, hex, in counter order
        zetas: Vec<String>,
    },
    /// The manager opened a signature.
    SignatureOpened {
        /// the signature (base64 of its encoding)
        signature: String,
        /// SHA3-256 of the message (hex): lets whoever holds the message match it
        message_digest: String,
        /// the DGSP digest `d = HL("msg", rho || message)` (hex) the signature's WOTS+ key
        /// signed: what an auditor needs to judge the opening without the message. `None`
        /// for openings logged before schema version 2, which cannot be judged from the log.
        digest: Option<String>,
        /// the signer
        id: MemberId,
        /// the opening proof (hex)
        pi: String,
    },
    /// A signed revocation snapshot was published.
    SnapshotPublished {
        /// the signed snapshot, as published (JSON object)
        snapshot: Value,
    },
    /// A signed checkpoint of the log head was published.
    Checkpoint {
        /// number of entries covered
        size: u64,
        /// head hash (hex)
        head: String,
        /// the signed note text
        note: String,
    },
}

/// Why stored parts could not be turned back into an event.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// Unknown kind name.
    #[error("unknown event kind {0:?}")]
    UnknownKind(String),
    /// A schema version this build cannot read.
    #[error("event kind {kind} has schema version {v}, this build reads up to {SCHEMA_VERSION}")]
    FutureVersion {
        /// kind
        kind: String,
        /// version found
        v: u32,
    },
    /// A payload field is missing or has the wrong type.
    #[error("malformed {kind} payload: {reason}")]
    Malformed {
        /// kind
        kind: String,
        /// what is wrong
        reason: String,
    },
    /// The private part is needed but not available (public feed without auditor token).
    #[error("the private payload of this {0} entry is not available")]
    Redacted(String),
}

impl Event {
    /// The `member_revoked` events of revoking member `id` whose certificates have `zetas`
    /// (hex, in counter order): one event, or one per [`MAX_ZETAS_PER_ENTRY`] zetas, each
    /// naming the counter of its first zeta. Always at least one (a member without
    /// certificates is revoked by an event with no zetas).
    pub fn revocation(id: MemberId, zetas: &[String]) -> Vec<Event> {
        let counter = zetas.len() as u64;
        if zetas.is_empty() {
            return vec![Event::MemberRevoked {
                id,
                counter,
                first: 0,
                zetas: Vec::new(),
            }];
        }
        zetas
            .chunks(MAX_ZETAS_PER_ENTRY)
            .enumerate()
            .map(|(i, chunk)| Event::MemberRevoked {
                id,
                counter,
                first: (i * MAX_ZETAS_PER_ENTRY) as u64,
                zetas: chunk.to_vec(),
            })
            .collect()
    }

    /// The first event of `group`'s log.
    pub fn group_created(group: &dgsp_core::ManagerPublicKey) -> Event {
        use base64::Engine;
        Event::GroupCreated {
            params: group.params(),
            public_key: base64::engine::general_purpose::STANDARD.encode(group.to_bytes()),
            fingerprint: hex::encode(group.fingerprint()),
        }
    }

    /// The kind name stored in the log.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::GroupCreated { .. } => "group_created",
            Event::MemberJoined { .. } => "member_joined",
            Event::CertificatesIssued { .. } => "certificates_issued",
            Event::MemberRevoked { .. } => "member_revoked",
            Event::SignatureOpened { .. } => "signature_opened",
            Event::SnapshotPublished { .. } => "snapshot_published",
            Event::Checkpoint { .. } => "checkpoint",
        }
    }

    /// Splits into `(public, private)` payload objects (keys sorted by `serde_json`).
    pub fn split(&self) -> (Value, Option<Value>) {
        match self {
            Event::GroupCreated {
                params,
                public_key,
                fingerprint,
            } => (
                json!({"params": params, "public_key": public_key, "fingerprint": fingerprint}),
                None,
            ),
            Event::MemberJoined { id, username } => {
                (json!({}), Some(json!({"id": id, "username": username})))
            }
            Event::CertificatesIssued {
                id,
                first,
                count,
                wots_pk_digests,
            } => (
                json!({}),
                Some(
                    json!({"id": id, "first": first, "count": count, "wots_pk_digests": wots_pk_digests}),
                ),
            ),
            Event::MemberRevoked {
                id,
                counter,
                first,
                zetas,
            } => (
                json!({"zetas": zetas}),
                Some(if *first == 0 {
                    json!({"id": id, "counter": counter})
                } else {
                    json!({"id": id, "counter": counter, "first": first})
                }),
            ),
            Event::SignatureOpened {
                signature,
                message_digest,
                digest,
                id,
                pi,
            } => {
                let mut public = json!({"signature": signature, "message_digest": message_digest, "id": id, "pi": pi});
                if let Some(d) = digest {
                    public["digest"] = json!(d);
                }
                (public, None)
            }
            Event::SnapshotPublished { snapshot } => (json!({"snapshot": snapshot}), None),
            Event::Checkpoint { size, head, note } => {
                (json!({"size": size, "head": head, "note": note}), None)
            }
        }
    }

    /// Rebuilds an event from its stored parts, upcasting older schema versions.
    pub fn from_parts(
        kind: &str,
        v: u32,
        public: &Value,
        private: Option<&Value>,
    ) -> Result<Event, EventError> {
        if v > SCHEMA_VERSION {
            return Err(EventError::FutureVersion {
                kind: kind.into(),
                v,
            });
        }
        let private_owned;
        let private = match (v, private) {
            (0, Some(p)) => {
                private_owned = upcast_v0(kind, p)?;
                Some(&private_owned)
            }
            (_, p) => p,
        };
        let f = Fields {
            kind,
            public,
            private,
        };
        Ok(match kind {
            "group_created" => Event::GroupCreated {
                params: f.public_str("params")?.parse().map_err(|e| f.bad(e))?,
                public_key: f.public_str("public_key")?,
                fingerprint: f.public_str("fingerprint")?,
            },
            "member_joined" => Event::MemberJoined {
                id: f.private_u64("id")?,
                username: f.private_str("username")?,
            },
            "certificates_issued" => Event::CertificatesIssued {
                id: f.private_u64("id")?,
                first: f.private_u64("first")?,
                count: f.private_u64("count")?,
                wots_pk_digests: f.strings(f.private()?, "wots_pk_digests")?,
            },
            "member_revoked" => Event::MemberRevoked {
                id: f.private_u64("id")?,
                counter: f.private_u64("counter")?,
                first: match f.private()?.get("first") {
                    None => 0,
                    Some(_) => f.private_u64("first")?,
                },
                zetas: f.strings(public, "zetas")?,
            },
            "signature_opened" => Event::SignatureOpened {
                signature: f.public_str("signature")?,
                message_digest: f.public_str("message_digest")?,
                // Version 1 did not record it; from version 2 it is required.
                digest: if v >= 2 {
                    Some(f.public_str("digest")?)
                } else {
                    None
                },
                id: f.get(public, "id")?.as_u64().ok_or_else(|| f.bad("id"))?,
                pi: f.public_str("pi")?,
            },
            "snapshot_published" => Event::SnapshotPublished {
                snapshot: f.get(public, "snapshot")?.clone(),
            },
            "checkpoint" => Event::Checkpoint {
                size: f
                    .get(public, "size")?
                    .as_u64()
                    .ok_or_else(|| f.bad("size"))?,
                head: f.public_str("head")?,
                note: f.public_str("note")?,
            },
            other => return Err(EventError::UnknownKind(other.into())),
        })
    }
}

/// Schema version 0 (the pre-release log format) named a member's fields `uid` and `name`;
/// version 1 renamed them to `id` and `username`. Other kinds are unchanged.
fn upcast_v0(kind: &str, private: &Value) -> Result<Value, EventError> {
    let mut p = private.clone();
    if let Some(obj) = p.as_object_mut() {
        if let Some(uid) = obj.remove("uid") {
            obj.insert("id".into(), uid);
        }
        if kind == "member_joined" {
            if let Some(name) = obj.remove("name") {
                obj.insert("username".into(), name);
            }
        }
        Ok(p)
    } else {
        Err(EventError::Malformed {
            kind: kind.into(),
            reason: "private payload is not an object".into(),
        })
    }
}

struct Fields<'a> {
    kind: &'a str,
    public: &'a Value,
    private: Option<&'a Value>,
}

impl Fields<'_> {
    fn bad(&self, what: impl std::fmt::Display) -> EventError {
        EventError::Malformed {
            kind: self.kind.into(),
            reason: format!("bad field {what}"),
        }
    }

    fn private(&self) -> Result<&Value, EventError> {
        self.private
            .ok_or_else(|| EventError::Redacted(self.kind.into()))
    }

    fn get<'v>(&self, obj: &'v Value, key: &str) -> Result<&'v Value, EventError> {
        obj.get(key).ok_or_else(|| EventError::Malformed {
            kind: self.kind.into(),
            reason: format!("missing field {key}"),
        })
    }

    fn public_str(&self, key: &str) -> Result<String, EventError> {
        Ok(self
            .get(self.public, key)?
            .as_str()
            .ok_or_else(|| self.bad(key))?
            .to_owned())
    }

    fn private_str(&self, key: &str) -> Result<String, EventError> {
        Ok(self
            .get(self.private()?, key)?
            .as_str()
            .ok_or_else(|| self.bad(key))?
            .to_owned())
    }

    fn private_u64(&self, key: &str) -> Result<u64, EventError> {
        self.get(self.private()?, key)?
            .as_u64()
            .ok_or_else(|| self.bad(key))
    }

    fn strings(&self, obj: &Value, key: &str) -> Result<Vec<String>, EventError> {
        self.get(obj, key)?
            .as_array()
            .ok_or_else(|| self.bad(key))?
            .iter()
            .map(|s| s.as_str().map(str::to_owned).ok_or_else(|| self.bad(key)))
            .collect()
    }
}

/// Serde helper for the stored form of an entry's private part.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Private {
    /// 16 random bytes (hex) that make the commitment hiding.
    pub salt: String,
    /// the private payload object
    pub payload: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Event> {
        vec![
            Event::GroupCreated {
                params: ParamSet::Sha2_128f,
                public_key: "AAAA".into(),
                fingerprint: "ff".repeat(32),
            },
            Event::MemberJoined {
                id: 3,
                username: "alice".into(),
            },
            Event::CertificatesIssued {
                id: 3,
                first: 0,
                count: 2,
                wots_pk_digests: vec!["aa".into(), "bb".into()],
            },
            Event::MemberRevoked {
                id: 3,
                counter: 2,
                first: 0,
                zetas: vec!["00".repeat(16)],
            },
            Event::MemberRevoked {
                id: 3,
                counter: 1900,
                first: 1800,
                zetas: vec!["00".repeat(16)],
            },
            Event::SignatureOpened {
                signature: "AA==".into(),
                message_digest: "01".repeat(32),
                digest: Some("04".repeat(16)),
                id: 3,
                pi: "02".repeat(16),
            },
            Event::SnapshotPublished {
                snapshot: json!({"number": 1}),
            },
            Event::Checkpoint {
                size: 9,
                head: "03".repeat(32),
                note: "n".into(),
            },
        ]
    }

    #[test]
    fn every_event_round_trips_through_its_parts() {
        for e in samples() {
            let (public, private) = e.split();
            let back =
                Event::from_parts(e.kind(), SCHEMA_VERSION, &public, private.as_ref()).unwrap();
            assert_eq!(back, e);
        }
    }

    #[test]
    fn a_stored_v0_member_joined_is_upcast() {
        // The pre-release format, as it was written to disk.
        let v0: Value = serde_json::from_str(r#"{"uid": 7, "name": "bob"}"#).unwrap();
        let e = Event::from_parts("member_joined", 0, &json!({}), Some(&v0)).unwrap();
        assert_eq!(
            e,
            Event::MemberJoined {
                id: 7,
                username: "bob".into()
            }
        );
        let v0: Value = serde_json::from_str(r#"{"uid": 7, "counter": 4}"#).unwrap();
        let e = Event::from_parts("member_revoked", 0, &json!({"zetas": []}), Some(&v0)).unwrap();
        assert_eq!(
            e,
            Event::MemberRevoked {
                id: 7,
                counter: 4,
                first: 0,
                zetas: vec![]
            }
        );
    }

    #[test]
    fn a_v1_opening_has_no_digest_and_v2_requires_one() {
        let public = json!({"signature": "AA==", "message_digest": "01", "id": 3, "pi": "02"});
        let e = Event::from_parts("signature_opened", 1, &public, None).unwrap();
        assert!(matches!(e, Event::SignatureOpened { digest: None, .. }));
        assert!(matches!(
            Event::from_parts("signature_opened", 2, &public, None),
            Err(EventError::Malformed { .. })
        ));
    }

    #[test]
    fn refusals_are_typed() {
        assert!(matches!(
            Event::from_parts("nope", 1, &json!({}), None),
            Err(EventError::UnknownKind(_))
        ));
        assert!(matches!(
            Event::from_parts("member_joined", SCHEMA_VERSION + 1, &json!({}), None),
            Err(EventError::FutureVersion { .. })
        ));
        assert!(matches!(
            Event::from_parts("member_joined", 1, &json!({}), None),
            Err(EventError::Redacted(_))
        ));
        assert!(matches!(
            Event::from_parts(
                "member_joined",
                1,
                &json!({}),
                Some(&json!({"id": "x", "username": "a"}))
            ),
            Err(EventError::Malformed { .. })
        ));
    }
}
