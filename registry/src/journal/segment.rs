//! One journal segment: the entries of one committed batch (private parts included) and
//! the idempotency answers recorded with them, encrypted and authenticated under a key
//! derived from the manager key.
//!
//! ```text
//! object  = "DGSJ" || 0x01 || nonce (24 random bytes) || XChaCha20-Poly1305(plaintext)
//! aad     = "DGSP-v1:journal" || 0x00 || group fingerprint (32) || object key (UTF-8)
//! key     = SHA3-256("DGSP-v1:registry-journal-key" || manager secret key bytes)
//! plaintext = JSON {"first": seq, "entries": [entry, ...], "idem": [[key, base64], ...]}
//! ```
//!
//! The object key is in the authenticated data, so a segment moved to another name (or to
//! another group's bucket) does not open.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use dgsp_core::ManagerSecretKey;
use dgsp_secrets::envelope::{self, NONCE_LEN};
use dgsp_tilestore::Bytes;
use dgsp_wire::log::Entry;
use serde::{Deserialize, Serialize};
use sha3::{Digest, Sha3_256};
use zeroize::Zeroizing;

/// The first bytes of every segment object.
const MAGIC: &[u8; 5] = b"DGSJ\x01";

/// Why a segment object was refused.
#[derive(Debug, thiserror::Error)]
pub enum SegmentError {
    /// Not a segment object at all.
    #[error("not a journal segment (bad magic or too short)")]
    Format,
    /// The authentication failed: another group's key, another object's name, or altered
    /// bytes.
    #[error(
        "does not open under this group's journal key (written for another group or object name, or altered)"
    )]
    Authentication,
    /// The plaintext is not a segment document.
    #[error("unreadable contents: {0}")]
    Contents(String),
    /// The segment's entries do not begin at its name or are not consecutive.
    #[error("entries out of place: {0}")]
    Placement(String),
}

/// The symmetric key of a group's journal, and the group it belongs to.
pub struct JournalKey {
    key: Zeroizing<[u8; 32]>,
    group: [u8; 32],
}

impl JournalKey {
    /// Derives the journal key of the group whose manager key is `sk`.
    pub fn derive(sk: &ManagerSecretKey) -> JournalKey {
        let secret = sk.to_bytes();
        let mut h = Sha3_256::new();
        h.update(b"DGSP-v1:registry-journal-key");
        h.update(secret.as_slice());
        let mut key = Zeroizing::new([0u8; 32]);
        key.copy_from_slice(&h.finalize());
        JournalKey {
            key,
            group: sk.public_key().fingerprint(),
        }
    }

    /// The tag that authenticates a journal head (`seq`, `hash`) recorded in the lease:
    /// `SHA3-256(key || "DGSP-v1:journal-head" || 0x00 || group || seq (8 bytes, big
    /// endian) || hash)`, hex. SHA3 is a MAC when keyed by a prefix (no length extension).
    pub fn head_tag(&self, seq: u64, hash: &[u8; 32]) -> String {
        let mut h = Sha3_256::new();
        h.update(self.key.as_slice());
        h.update(b"DGSP-v1:journal-head\0");
        h.update(self.group);
        h.update(seq.to_be_bytes());
        h.update(hash);
        hex::encode(h.finalize())
    }

    /// Whether `tag` is [`head_tag`](Self::head_tag) of (`seq`, `hash`) (compared in
    /// constant time).
    pub fn head_tag_matches(&self, seq: u64, hash: &[u8; 32], tag: &str) -> bool {
        use subtle::ConstantTimeEq;
        let want = self.head_tag(seq, hash);
        want.len() == tag.len() && bool::from(want.as_bytes().ct_eq(tag.as_bytes()))
    }

    fn aad(&self, name: &str) -> Vec<u8> {
        let mut aad = b"DGSP-v1:journal\0".to_vec();
        aad.extend_from_slice(&self.group);
        aad.extend_from_slice(name.as_bytes());
        aad
    }

    /// Encrypts the segment of `entries` (consecutive, non-empty) and `idem` as the object
    /// named `name`; borrowed, so the writer seals its batch without copying it.
    pub fn seal(&self, name: &str, entries: &[Entry], idem: &[(String, Vec<u8>)]) -> Bytes {
        use rand_core::{OsRng, RngCore};
        let mut nonce = [0u8; NONCE_LEN];
        OsRng.fill_bytes(&mut nonce);
        let doc = Doc {
            first: entries.first().map_or(0, |e| e.seq),
            entries,
            idem: idem
                .iter()
                .map(|(k, v)| (k.clone(), B64.encode(v)))
                .collect(),
        };
        let plain = Zeroizing::new(serde_json::to_vec(&doc).expect("segments serialize"));
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&envelope::seal(&self.key, &nonce, &plain, &self.aad(name)));
        Bytes::from(out)
    }

    /// Decrypts and checks the object `name` that must hold the segment beginning at
    /// `first`: non-empty, entries `first, first + 1, ...` (their chain is the caller's to
    /// check against the entry before).
    pub fn open(&self, name: &str, first: u64, bytes: &[u8]) -> Result<Segment, SegmentError> {
        let body = bytes
            .strip_prefix(MAGIC.as_slice())
            .ok_or(SegmentError::Format)?;
        if body.len() < NONCE_LEN {
            return Err(SegmentError::Format);
        }
        let (nonce, ciphertext) = body.split_at(NONCE_LEN);
        let plain = envelope::open(&self.key, nonce, ciphertext, &self.aad(name))
            .ok_or(SegmentError::Authentication)?;
        let doc: OwnedDoc =
            serde_json::from_slice(&plain).map_err(|e| SegmentError::Contents(e.to_string()))?;
        if doc.first != first {
            return Err(SegmentError::Placement(format!(
                "says it begins at {}, named for {first}",
                doc.first
            )));
        }
        if doc.entries.is_empty() {
            return Err(SegmentError::Placement("no entries".into()));
        }
        for (i, e) in doc.entries.iter().enumerate() {
            if e.seq != first + i as u64 {
                return Err(SegmentError::Placement(format!(
                    "entry {} where {} belongs",
                    e.seq,
                    first + i as u64
                )));
            }
        }
        let idem = doc
            .idem
            .into_iter()
            .map(|(k, v)| {
                B64.decode(v.as_bytes())
                    .map(|v| (k, v))
                    .map_err(|e| SegmentError::Contents(format!("idempotency answer: {e}")))
            })
            .collect::<Result<_, _>>()?;
        Ok(Segment {
            first,
            entries: doc.entries,
            idem,
        })
    }
}

/// The contents of one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// seq of the first entry (the object is named after it)
    pub first: u64,
    /// consecutive entries, private parts included
    pub entries: Vec<Entry>,
    /// idempotency answers recorded with them: key, stored answer bytes
    pub idem: Vec<(String, Vec<u8>)>,
}

impl Segment {
    /// seq of the last entry.
    pub fn last(&self) -> u64 {
        self.first + self.entries.len() as u64 - 1
    }
}

#[derive(Serialize)]
struct Doc<'a> {
    first: u64,
    entries: &'a [Entry],
    idem: Vec<(String, String)>,
}

#[derive(Deserialize)]
struct OwnedDoc {
    first: u64,
    entries: Vec<Entry>,
    idem: Vec<(String, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use dgsp_core::ParamSet;
    use dgsp_wire::events::Event;
    use dgsp_wire::log::GENESIS_PREV;
    use rand_core::SeedableRng;

    fn key(seed: u64) -> JournalKey {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        JournalKey::derive(&ManagerSecretKey::generate(ParamSet::Sha2_128f, &mut rng))
    }

    fn segment(first: u64, n: u64) -> Segment {
        let mut prev = GENESIS_PREV;
        let entries = (first..first + n)
            .map(|seq| {
                let ev = Event::MemberJoined {
                    id: seq,
                    username: format!("u{seq}"),
                };
                let e = Entry::seal(seq, 1_700_000_000_000 + seq, &ev, &prev);
                prev = e.hash_bytes().unwrap();
                e
            })
            .collect();
        Segment {
            first,
            entries,
            idem: vec![("k1".into(), b"{\"outcome\":1}".to_vec())],
        }
    }

    #[test]
    fn round_trip_keeps_private_parts_and_answers() {
        let k = key(1);
        let s = segment(5, 3);
        assert!(s.entries[0].private.is_some(), "joins carry a private part");
        let bytes = k.seal("private/journal/5", &s.entries, &s.idem);
        assert_eq!(k.open("private/journal/5", 5, &bytes).unwrap(), s);
        assert_eq!(s.last(), 7);
        // The private parts do not appear in clear.
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("u5"), "usernames are encrypted");
    }

    #[test]
    fn refused_under_another_key_name_or_byte() {
        let (k, other) = (key(1), key(2));
        let s = segment(5, 2);
        let bytes = k.seal("private/journal/5", &s.entries, &s.idem);
        assert!(matches!(
            other.open("private/journal/5", 5, &bytes),
            Err(SegmentError::Authentication)
        ));
        assert!(matches!(
            k.open("private/journal/6", 5, &bytes),
            Err(SegmentError::Authentication)
        ));
        let mut altered = bytes.to_vec();
        let last = altered.len() - 1;
        altered[last] ^= 1;
        assert!(matches!(
            k.open("private/journal/5", 5, &altered),
            Err(SegmentError::Authentication)
        ));
        assert!(matches!(
            k.open("private/journal/5", 5, b"DGSJ"),
            Err(SegmentError::Format)
        ));
    }

    #[test]
    fn refused_when_named_for_another_seq() {
        let k = key(1);
        let s = segment(5, 2);
        let bytes = k.seal("private/journal/9", &s.entries, &s.idem);
        assert!(matches!(
            k.open("private/journal/9", 9, &bytes),
            Err(SegmentError::Placement(_))
        ));
    }
}
