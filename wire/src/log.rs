//! Log entries: the hash chain that makes a group's history tamper-evident.
//!
//! ```text
//! commitment = SHA3-256("DGSP-v1:commit" || salt || canonical(private payload))
//! hash       = SHA3-256("DGSP-v1:log" || prev_hash || canonical({seq, time_ms, kind, v, public, commitment}))
//! ```
//!
//! `canonical` is JSON with object keys sorted bytewise, no whitespace, integers only (the
//! payloads contain no floats). The first entry's `prev_hash` is 32 zero bytes. Anyone holding
//! the public feed can recompute every hash; an auditor with the private parts can also
//! check each commitment. Full format: docs/event-log.md.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha3::{Digest, Sha3_256};

use crate::events::{Event, EventError, Private, SCHEMA_VERSION};

/// A 32-byte hash.
pub type Hash = [u8; 32];

/// The `prev_hash` of the first entry.
pub const GENESIS_PREV: Hash = [0u8; 32];

/// One entry of the log, as stored and as served (the feed drops `private`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Entry {
    /// Position in the log, from 1.
    pub seq: u64,
    /// When the registry appended it (Unix milliseconds).
    pub time_ms: u64,
    /// Event kind name.
    pub kind: String,
    /// Payload schema version.
    pub v: u32,
    /// Public payload.
    pub public: Value,
    /// Salted commitment to the private payload (hex), if the event has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commitment: Option<String>,
    /// The private payload and its salt: stored, shown to auditors only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private: Option<Private>,
    /// Hash of the previous entry (hex).
    pub prev_hash: String,
    /// This entry's hash (hex).
    pub hash: String,
}

/// A broken link in the chain.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ChainError {
    /// Entries out of order or missing.
    #[error("entry {found} where {expected} was expected")]
    Gap {
        /// expected seq
        expected: u64,
        /// found seq
        found: u64,
    },
    /// `prev_hash` is not the previous entry's hash.
    #[error("entry {0}: prev_hash does not match the previous entry")]
    BadPrev(u64),
    /// `hash` is not the hash of the entry.
    #[error("entry {0}: hash does not match its contents")]
    BadHash(u64),
    /// The private payload does not match the commitment.
    #[error("entry {0}: private payload does not match its commitment")]
    BadCommitment(u64),
    /// A field is not valid hex of the right length.
    #[error("entry {seq}: field {field} is not 32 bytes of hex")]
    BadHex {
        /// entry
        seq: u64,
        /// field
        field: &'static str,
    },
}

impl Entry {
    /// Seals `event` as entry `seq` after `prev`, with 16 fresh random bytes from the OS as
    /// the commitment's salt (feature `os-rng`: the registry's way).
    #[cfg(feature = "os-rng")]
    pub fn seal(seq: u64, time_ms: u64, event: &Event, prev: &Hash) -> Entry {
        use rand_core::{OsRng, RngCore};
        let mut salt = [0u8; 16];
        OsRng.fill_bytes(&mut salt);
        Entry::seal_with_salt(seq, time_ms, event, prev, salt)
    }

    /// Seals `event` as entry `seq` after `prev`. `salt` makes the commitment to the private
    /// part hiding: it must be 16 fresh random bytes per entry.
    pub fn seal_with_salt(
        seq: u64,
        time_ms: u64,
        event: &Event,
        prev: &Hash,
        salt: [u8; 16],
    ) -> Entry {
        let (public, private) = event.split();
        let private = private.map(|payload| Private {
            salt: hex::encode(salt),
            payload,
        });
        let commitment = private.as_ref().map(|p| hex::encode(commit(p)));
        let mut e = Entry {
            seq,
            time_ms,
            kind: event.kind().to_owned(),
            v: SCHEMA_VERSION,
            public,
            commitment,
            private,
            prev_hash: hex::encode(prev),
            hash: String::new(),
        };
        e.hash = hex::encode(e.compute_hash(prev));
        e
    }

    /// The hash this entry must have, given the previous hash.
    pub fn compute_hash(&self, prev: &Hash) -> Hash {
        // The hashed object borrows the public payload (it can hold 10^5 zetas or a signed
        // snapshot) instead of copying it into a `Value`.
        let (seq, time_ms, v) = (self.seq.into(), self.time_ms.into(), self.v.into());
        let kind = Value::from(self.kind.as_str());
        let commitment = self.commitment.as_deref().map_or(Value::Null, Value::from);
        let mut fields = vec![
            ("seq", &seq),
            ("time_ms", &time_ms),
            ("kind", &kind),
            ("v", &v),
            ("public", &self.public),
            ("commitment", &commitment),
        ];
        let mut bytes = Vec::new();
        write_object(&mut fields, &mut bytes);
        let mut h = Sha3_256::new();
        h.update(b"DGSP-v1:log");
        h.update(prev);
        h.update(bytes);
        h.finalize().into()
    }

    /// This entry's hash, decoded.
    pub fn hash_bytes(&self) -> Result<Hash, ChainError> {
        unhex32(&self.hash).ok_or(ChainError::BadHex {
            seq: self.seq,
            field: "hash",
        })
    }

    /// Checks this entry as the successor of `(prev_seq, prev_hash)`: position, link, hash,
    /// and the commitment when the private part is present.
    pub fn check(&self, prev_seq: u64, prev: &Hash) -> Result<(), ChainError> {
        if self.seq != prev_seq + 1 {
            return Err(ChainError::Gap {
                expected: prev_seq + 1,
                found: self.seq,
            });
        }
        let link = unhex32(&self.prev_hash).ok_or(ChainError::BadHex {
            seq: self.seq,
            field: "prev_hash",
        })?;
        if &link != prev {
            return Err(ChainError::BadPrev(self.seq));
        }
        if self.hash_bytes()? != self.compute_hash(prev) {
            return Err(ChainError::BadHash(self.seq));
        }
        match (&self.private, &self.commitment) {
            (Some(p), Some(c)) if hex::encode(commit(p)) != *c => {
                Err(ChainError::BadCommitment(self.seq))
            }
            (Some(_), None) => Err(ChainError::BadCommitment(self.seq)),
            _ => Ok(()),
        }
    }

    /// The entry without its private part (what the public feed serves).
    pub fn redacted(&self) -> Entry {
        Entry {
            private: None,
            ..self.clone()
        }
    }

    /// The event, with upcasting of old schema versions. Fails with
    /// [`EventError::Redacted`] for a redacted entry whose event needs the private part.
    pub fn event(&self) -> Result<Event, EventError> {
        Event::from_parts(
            &self.kind,
            self.v,
            &self.public,
            self.private.as_ref().map(|p| &p.payload),
        )
    }
}

fn commit(p: &Private) -> Hash {
    let mut h = Sha3_256::new();
    h.update(b"DGSP-v1:commit");
    h.update(hex::decode(&p.salt).unwrap_or_default());
    h.update(canonical(&p.payload));
    h.finalize().into()
}

/// The current Unix time in milliseconds (what [`Entry::time_ms`] holds). Not on
/// `wasm32-unknown-unknown`, which has no clock: a browser passes its own time.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub fn now_ms() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Decodes 64 hex characters.
pub fn unhex32(s: &str) -> Option<Hash> {
    unhex(s)
}

/// Decodes exactly `2 * N` hex characters (a zeta is `unhex::<16>`).
pub fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    hex::decode_to_slice(s, &mut out).ok()?;
    Some(out)
}

/// Canonical JSON: object keys sorted bytewise, no insignificant whitespace.
pub fn canonical(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(map) => {
            let mut fields: Vec<(&str, &Value)> =
                map.iter().map(|(k, v)| (k.as_str(), v)).collect();
            write_object(&mut fields, out);
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => serde_json::to_writer(&mut *out, scalar).expect("scalars serialize"),
    }
}

/// Writes the object with these (distinct) keys, sorted bytewise.
fn write_object(fields: &mut [(&str, &Value)], out: &mut Vec<u8>) {
    fields.sort_unstable_by_key(|(k, _)| *k);
    out.push(b'{');
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, k).expect("strings serialize");
        out.push(b':');
        write_canonical(v, out);
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_sorts_keys_at_every_depth() {
        let v = json!({"b": 1, "a": {"d": [true, null, "x"], "c": 2}});
        assert_eq!(
            canonical(&v),
            br#"{"a":{"c":2,"d":[true,null,"x"]},"b":1}"#.to_vec()
        );
    }

    #[test]
    fn the_hash_is_the_documented_formula() {
        let e = Entry::seal_with_salt(
            4,
            12,
            &Event::MemberRevoked {
                id: 1,
                counter: 1,
                first: 0,
                zetas: vec!["ab".repeat(16)],
            },
            &[9u8; 32],
            [5; 16],
        );
        let object = json!({
            "seq": e.seq, "time_ms": e.time_ms, "kind": e.kind, "v": e.v,
            "public": e.public, "commitment": e.commitment,
        });
        let mut h = Sha3_256::new();
        h.update(b"DGSP-v1:log");
        h.update([9u8; 32]);
        h.update(canonical(&object));
        assert_eq!(e.hash_bytes().unwrap(), <Hash>::from(h.finalize()));
    }

    #[test]
    fn chain_checks_catch_every_kind_of_edit() {
        let e1 = Entry::seal_with_salt(
            1,
            10,
            &Event::MemberJoined {
                id: 0,
                username: "a".into(),
            },
            &GENESIS_PREV,
            [1; 16],
        );
        e1.check(0, &GENESIS_PREV).unwrap();
        let h1 = e1.hash_bytes().unwrap();
        let e2 = Entry::seal_with_salt(
            2,
            11,
            &Event::MemberJoined {
                id: 1,
                username: "b".into(),
            },
            &h1,
            [2; 16],
        );
        e2.check(1, &h1).unwrap();
        e2.redacted().check(1, &h1).unwrap();

        assert_eq!(
            e2.check(0, &GENESIS_PREV),
            Err(ChainError::Gap {
                expected: 1,
                found: 2
            })
        );
        assert_eq!(e2.check(1, &GENESIS_PREV), Err(ChainError::BadPrev(2)));
        let mut t = e2.clone();
        t.time_ms += 1;
        assert_eq!(t.check(1, &h1), Err(ChainError::BadHash(2)));
        let mut t = e2.clone();
        t.private.as_mut().unwrap().payload = json!({"id": 1, "username": "mallory"});
        assert_eq!(t.check(1, &h1), Err(ChainError::BadCommitment(2)));
        // Commitments hide: the same payload sealed with another salt commits differently.
        let again = Entry::seal_with_salt(
            2,
            11,
            &Event::MemberJoined {
                id: 1,
                username: "b".into(),
            },
            &h1,
            [3; 16],
        );
        assert_ne!(again.commitment, e2.commitment);
        assert_eq!(
            e2.event().unwrap(),
            Event::MemberJoined {
                id: 1,
                username: "b".into()
            }
        );
    }
}
