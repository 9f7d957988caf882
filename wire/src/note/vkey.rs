//! Verifier keys (`c2sp.org/signed-note`): `<name>+<8 hex key id>+base64(type || key)`,
//! with the key id `SHA-256(name || 0x0A || type || key)[:4]`.

use std::fmt;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use sha2::{Digest, Sha256};

use super::signed_note::is_valid_key_name;

/// Type byte: Ed25519 signature over the note text.
pub const TYPE_ED25519: u8 = 0x01;
/// Type byte: timestamped Ed25519 cosignature (`c2sp.org/tlog-cosignature`).
pub const TYPE_ED25519_COSIGNATURE: u8 = 0x04;
/// Type byte: timestamped ML-DSA-44 (sub)tree cosignature (`c2sp.org/tlog-cosignature`).
pub const TYPE_MLDSA44_COSIGNATURE: u8 = 0x06;

/// Length of an ML-DSA-44 public key (FIPS 204).
pub const MLDSA44_PUBLIC_KEY_LEN: usize = 1312;

/// A verifier key's algorithm and public key.
#[derive(Clone, PartialEq, Eq)]
pub enum KeyKind {
    /// `0x01`: Ed25519 over the note text (a log's note signature).
    Ed25519([u8; 32]),
    /// `0x04`: timestamped Ed25519 cosignature.
    Ed25519Cosignature([u8; 32]),
    /// `0x06`: timestamped ML-DSA-44 cosignature (also a log's own checkpoint signature).
    MlDsa44Cosignature(Box<[u8; MLDSA44_PUBLIC_KEY_LEN]>),
}

impl fmt::Debug for KeyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            KeyKind::Ed25519(_) => "Ed25519",
            KeyKind::Ed25519Cosignature(_) => "Ed25519Cosignature",
            KeyKind::MlDsa44Cosignature(_) => "MlDsa44Cosignature",
        };
        write!(f, "{name}({})", hex::encode(&self.public_key()[..8]))
    }
}

impl KeyKind {
    /// The type byte.
    pub fn type_byte(&self) -> u8 {
        match self {
            KeyKind::Ed25519(_) => TYPE_ED25519,
            KeyKind::Ed25519Cosignature(_) => TYPE_ED25519_COSIGNATURE,
            KeyKind::MlDsa44Cosignature(_) => TYPE_MLDSA44_COSIGNATURE,
        }
    }

    /// The public key bytes.
    pub fn public_key(&self) -> &[u8] {
        match self {
            KeyKind::Ed25519(k) | KeyKind::Ed25519Cosignature(k) => k,
            KeyKind::MlDsa44Cosignature(k) => &k[..],
        }
    }

    /// Whether the signatures carry a timestamp (the cosignature types).
    pub fn is_timestamped(&self) -> bool {
        !matches!(self, KeyKind::Ed25519(_))
    }

    fn from_type_and_key(type_byte: u8, key: &[u8]) -> Result<KeyKind, VkeyError> {
        match type_byte {
            TYPE_ED25519 | TYPE_ED25519_COSIGNATURE => {
                let k: [u8; 32] = key.try_into().map_err(|_| VkeyError::KeyLength)?;
                ed25519_dalek::VerifyingKey::from_bytes(&k).map_err(|_| VkeyError::BadKey)?;
                Ok(if type_byte == TYPE_ED25519 {
                    KeyKind::Ed25519(k)
                } else {
                    KeyKind::Ed25519Cosignature(k)
                })
            }
            TYPE_MLDSA44_COSIGNATURE => {
                let k: [u8; MLDSA44_PUBLIC_KEY_LEN] =
                    key.try_into().map_err(|_| VkeyError::KeyLength)?;
                Ok(KeyKind::MlDsa44Cosignature(Box::new(k)))
            }
            other => Err(VkeyError::UnsupportedType(other)),
        }
    }
}

/// A verifier key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vkey {
    /// The key name (for a log: its origin).
    pub name: String,
    /// The key id.
    pub key_id: [u8; 4],
    /// Algorithm and public key.
    pub kind: KeyKind,
}

/// Why a verifier key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VkeyError {
    /// Not `<name>+<hex>+<base64>`.
    #[error("a verifier key is <name>+<8 hex key id>+<base64 key>")]
    Format,
    /// The key name is empty or holds whitespace, `+` or control characters.
    #[error("invalid key name")]
    Name,
    /// The key id is not 8 lower-case hex digits.
    #[error("the key id is not 8 lower-case hex digits")]
    KeyIdFormat,
    /// The key id is not the one computed from name, type and key.
    #[error("the key id does not match the key")]
    KeyIdMismatch,
    /// The base64 part does not decode.
    #[error("the key is not base64")]
    Base64,
    /// A type byte this implementation does not verify.
    #[error("unsupported key type 0x{0:02x}")]
    UnsupportedType(u8),
    /// Wrong public key length for the type.
    #[error("wrong public key length for the key type")]
    KeyLength,
    /// Not a valid public key (Ed25519: not a curve point).
    #[error("not a valid public key")]
    BadKey,
}

/// The recommended key id: `SHA-256(name || 0x0A || type || key)[:4]`.
pub fn key_id(name: &str, type_byte: u8, key: &[u8]) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([0x0a, type_byte]);
    h.update(key);
    let d = h.finalize();
    [d[0], d[1], d[2], d[3]]
}

impl Vkey {
    /// A verifier key named `name` for `kind`, with the recommended key id.
    pub fn new(name: &str, kind: KeyKind) -> Result<Vkey, VkeyError> {
        if !is_valid_key_name(name) {
            return Err(VkeyError::Name);
        }
        Ok(Vkey {
            name: name.to_owned(),
            key_id: key_id(name, kind.type_byte(), kind.public_key()),
            kind,
        })
    }

    /// Parses `<name>+<8 hex key id>+base64(type || key)`; the key id must be the
    /// recommended one.
    pub fn parse(text: &str) -> Result<Vkey, VkeyError> {
        let mut parts = text.splitn(3, '+');
        let (Some(name), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(VkeyError::Format);
        };
        if !is_valid_key_name(name) {
            return Err(VkeyError::Name);
        }
        if id.len() != 8 || !id.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(VkeyError::KeyIdFormat);
        }
        let mut key_id_bytes = [0u8; 4];
        hex::decode_to_slice(id, &mut key_id_bytes).map_err(|_| VkeyError::KeyIdFormat)?;
        let raw = B64.decode(key).map_err(|_| VkeyError::Base64)?;
        let (&type_byte, key) = raw.split_first().ok_or(VkeyError::KeyLength)?;
        let kind = KeyKind::from_type_and_key(type_byte, key)?;
        if key_id(name, type_byte, key) != key_id_bytes {
            return Err(VkeyError::KeyIdMismatch);
        }
        Ok(Vkey {
            name: name.to_owned(),
            key_id: key_id_bytes,
            kind,
        })
    }
}

impl fmt::Display for Vkey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut raw = vec![self.kind.type_byte()];
        raw.extend_from_slice(self.kind.public_key());
        write!(
            f,
            "{}+{}+{}",
            self.name,
            hex::encode(self.key_id),
            B64.encode(raw)
        )
    }
}

impl std::str::FromStr for Vkey {
    type Err = VkeyError;
    fn from_str(s: &str) -> Result<Vkey, VkeyError> {
        Vkey::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8032 test 1's public key.
    const ED_PK: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

    fn ed_key() -> [u8; 32] {
        hex::decode(ED_PK).unwrap().try_into().unwrap()
    }

    #[test]
    fn key_id_is_sha256_of_name_newline_type_key() {
        let k = ed_key();
        let mut pre = b"w1\n\x04".to_vec();
        pre.extend_from_slice(&k);
        let d = Sha256::digest(&pre);
        assert_eq!(key_id("w1", 4, &k), d[..4]);
    }

    #[test]
    fn formats_and_parses() {
        for kind in [
            KeyKind::Ed25519(ed_key()),
            KeyKind::Ed25519Cosignature(ed_key()),
            KeyKind::MlDsa44Cosignature(Box::new([7; MLDSA44_PUBLIC_KEY_LEN])),
        ] {
            let v = Vkey::new("example.com/w", kind).unwrap();
            let text = v.to_string();
            let (name, rest) = text.split_once('+').unwrap();
            assert_eq!(name, "example.com/w");
            assert_eq!(&rest[..8], hex::encode(v.key_id));
            assert_eq!(Vkey::parse(&text), Ok(v.clone()));
            assert_eq!(text.parse::<Vkey>(), Ok(v));
        }
        // The base64 of type || key, exactly.
        let v = Vkey::new("w1", KeyKind::Ed25519Cosignature(ed_key())).unwrap();
        let mut raw = vec![4u8];
        raw.extend_from_slice(&ed_key());
        assert_eq!(
            v.to_string(),
            format!(
                "w1+{}+{}",
                hex::encode(key_id("w1", 4, &ed_key())),
                B64.encode(raw)
            )
        );
    }

    #[test]
    fn refuses_bad_keys() {
        let good = Vkey::new("w1", KeyKind::Ed25519Cosignature(ed_key()))
            .unwrap()
            .to_string();
        let (_, rest) = good.split_once('+').unwrap();
        let (id, key) = rest.split_once('+').unwrap();
        let other_id = if id == "00000000" {
            "00000001"
        } else {
            "00000000"
        };
        let b64 = |t: u8, k: &[u8]| {
            let mut v = vec![t];
            v.extend_from_slice(k);
            B64.encode(v)
        };
        let with =
            |t: u8, k: &[u8]| format!("w1+{}+{}", hex::encode(key_id("w1", t, k)), b64(t, k));
        for (bad, want) in [
            ("w1".to_owned(), VkeyError::Format),
            (format!("w1+{id}"), VkeyError::Format),
            (format!("+{id}+{key}"), VkeyError::Name),
            (format!("w 1+{id}+{key}"), VkeyError::Name),
            (
                format!("w1+{}+{key}", id.to_uppercase()),
                VkeyError::KeyIdFormat,
            ),
            (format!("w1+{}+{key}", &id[..6]), VkeyError::KeyIdFormat),
            (format!("w1+{other_id}+{key}"), VkeyError::KeyIdMismatch),
            (format!("w1+{id}+!!"), VkeyError::Base64),
            (format!("w1+{id}+"), VkeyError::KeyLength),
            (with(0x02, &ed_key()), VkeyError::UnsupportedType(2)),
            (with(0x04, &ed_key()[..31]), VkeyError::KeyLength),
            (with(0x06, &[1; 1311]), VkeyError::KeyLength),
        ] {
            assert_eq!(Vkey::parse(&bad), Err(want), "{bad:?}");
        }
        // Not a curve point: y = 2 has no x on edwards25519.
        let mut not_point = [0u8; 32];
        not_point[0] = 2;
        assert_eq!(Vkey::parse(&with(0x01, &not_point)), Err(VkeyError::BadKey));
        assert_eq!(
            Vkey::new("a+b", KeyKind::Ed25519(ed_key())),
            Err(VkeyError::Name)
        );
    }
}
