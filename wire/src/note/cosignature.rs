//! Cosignatures (`c2sp.org/tlog-cosignature`) and the log's own ML-DSA-44 checkpoint
//! signature (`c2sp.org/tlog-checkpoint`: "Logs SHOULD use ML-DSA-44 cosignatures").
//!
//! A cosignature's signature bytes are `u64 timestamp (big-endian, POSIX seconds) ||
//! signature`. ML-DSA-44 (type `0x06`) signs the TLS-encoded `cosigned_message`
//! ([`cosigned_message`]), which leaves extension lines out; Ed25519 (type `0x04`) signs
//! `"cosignature/v1\n" || "time <ts>\n" || body`, extension lines included. A plain
//! Ed25519 note signature (type `0x01`) signs the body and carries no timestamp.

use std::fmt;

use ed25519_dalek::Verifier as _;
use ml_dsa::{EncodedSignature, EncodedVerifyingKey, MlDsa44, Signer as _};

use super::checkpoint_body::CheckpointBody;
use super::signed_note::{is_valid_key_name, SignatureLine, SIGNATURE_LINE_START};
use super::vkey::{KeyKind, Vkey, MLDSA44_PUBLIC_KEY_LEN};

/// The 12-byte label that starts an ML-DSA-44 `cosigned_message`.
pub const COSIGNED_MESSAGE_LABEL: &[u8; 12] = b"subtree/v1\n\0";

/// The first line of an Ed25519 cosignature's signed message.
pub const ED25519_COSIGNATURE_HEADER: &str = "cosignature/v1\n";

/// Length of an ML-DSA-44 signature (FIPS 204).
pub const MLDSA44_SIGNATURE_LEN: usize = 2420;

/// Largest timestamp a cosignature may carry (2^63 - 1).
pub const MAX_TIMESTAMP: u64 = i64::MAX as u64;

/// Why a cosignature could not be made or was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CosignatureError {
    /// The cosigner name or the origin is empty, over 255 bytes, or not a valid key name.
    #[error("cosigner name or origin must be 1 to 255 bytes (and a valid key name)")]
    Name,
    /// The timestamp is over 2^63 - 1.
    #[error("timestamp over 2^63 - 1")]
    Timestamp,
    /// The line is not by this key (name or key id differ).
    #[error("the signature line is not by this key")]
    KeyMismatch,
    /// The signature bytes have the wrong length for the key type.
    #[error("wrong signature length for the key type")]
    Length,
    /// The signature does not verify.
    #[error("the signature does not verify")]
    BadSignature,
    /// ML-DSA signing failed (rejection sampling ran out; not expected in practice).
    #[error("ML-DSA-44 signing failed")]
    Signing,
}

/// The TLS-encoded `cosigned_message` an ML-DSA-44 cosignature signs:
/// `"subtree/v1\n\0" || u8 len || cosigner_name || u64 timestamp || u8 len || origin ||
/// u64 start || u64 end || root`, integers big-endian. A checkpoint is the subtree
/// `start = 0`, `end = size`.
pub fn cosigned_message(
    cosigner_name: &str,
    timestamp: u64,
    origin: &str,
    start: u64,
    end: u64,
    root: &[u8; 32],
) -> Result<Vec<u8>, CosignatureError> {
    let name_len = u8::try_from(cosigner_name.len()).map_err(|_| CosignatureError::Name)?;
    let origin_len = u8::try_from(origin.len()).map_err(|_| CosignatureError::Name)?;
    if name_len == 0 || origin_len == 0 {
        return Err(CosignatureError::Name);
    }
    if timestamp > MAX_TIMESTAMP {
        return Err(CosignatureError::Timestamp);
    }
    let mut m = Vec::with_capacity(12 + 1 + cosigner_name.len() + 8 + 1 + origin.len() + 48);
    m.extend_from_slice(COSIGNED_MESSAGE_LABEL);
    m.push(name_len);
    m.extend_from_slice(cosigner_name.as_bytes());
    m.extend_from_slice(&timestamp.to_be_bytes());
    m.push(origin_len);
    m.extend_from_slice(origin.as_bytes());
    m.extend_from_slice(&start.to_be_bytes());
    m.extend_from_slice(&end.to_be_bytes());
    m.extend_from_slice(root);
    Ok(m)
}

/// The message an Ed25519 cosignature (type `0x04`) signs:
/// `"cosignature/v1\n" || "time <timestamp>\n" || body` (the whole checkpoint body).
pub fn ed25519_cosigned_message(timestamp: u64, body: &str) -> Vec<u8> {
    format!("{ED25519_COSIGNATURE_HEADER}time {timestamp}\n{body}").into_bytes()
}

fn split_timestamp(sig: &[u8], len: usize) -> Result<(u64, &[u8]), CosignatureError> {
    if sig.len() != 8 + len {
        return Err(CosignatureError::Length);
    }
    let (ts, rest) = sig.split_at(8);
    let mut b = [0u8; 8];
    b.copy_from_slice(ts);
    let ts = u64::from_be_bytes(b);
    if ts > MAX_TIMESTAMP {
        return Err(CosignatureError::Timestamp);
    }
    Ok((ts, rest))
}

/// Verifies `line` as `vkey`'s signature on the checkpoint `cp`; returns its timestamp
/// (0 for an Ed25519 note signature, type `0x01`, which carries none). The line's name and
/// key id must be `vkey`'s.
pub fn verify_signature_line(
    vkey: &Vkey,
    cp: &CheckpointBody,
    line: &SignatureLine,
) -> Result<u64, CosignatureError> {
    if line.name != vkey.name || line.key_id != vkey.key_id {
        return Err(CosignatureError::KeyMismatch);
    }
    match &vkey.kind {
        KeyKind::Ed25519(pk) => {
            let sig: [u8; 64] = line
                .sig
                .as_slice()
                .try_into()
                .map_err(|_| CosignatureError::Length)?;
            verify_ed25519(pk, cp.to_body().as_bytes(), &sig)?;
            Ok(0)
        }
        KeyKind::Ed25519Cosignature(pk) => {
            let (ts, sig) = split_timestamp(&line.sig, 64)?;
            let sig: [u8; 64] = sig.try_into().map_err(|_| CosignatureError::Length)?;
            verify_ed25519(pk, &ed25519_cosigned_message(ts, &cp.to_body()), &sig)?;
            Ok(ts)
        }
        KeyKind::MlDsa44Cosignature(pk) => {
            let (ts, sig) = split_timestamp(&line.sig, MLDSA44_SIGNATURE_LEN)?;
            let msg = cosigned_message(&vkey.name, ts, &cp.origin, 0, cp.size, &cp.root)?;
            let enc =
                EncodedSignature::<MlDsa44>::try_from(sig).map_err(|_| CosignatureError::Length)?;
            let sig =
                ml_dsa::Signature::<MlDsa44>::decode(&enc).ok_or(CosignatureError::BadSignature)?;
            let enc_pk = EncodedVerifyingKey::<MlDsa44>::try_from(&pk[..])
                .map_err(|_| CosignatureError::Length)?;
            let vk = ml_dsa::VerifyingKey::<MlDsa44>::decode(&enc_pk);
            if vk.verify_with_context(&msg, &[], &sig) {
                Ok(ts)
            } else {
                Err(CosignatureError::BadSignature)
            }
        }
    }
}

/// The length in bytes of a signature line by `vkey` that verifies, its newline included:
/// `— <name> base64(key id || [timestamp ||] signature)\n`. Every verifying line by one key
/// has this length (its name is the key's, its signature of the type's fixed length), so a
/// note's size is known before its lines are chosen.
pub fn signature_line_len(vkey: &Vkey) -> usize {
    let sig_len = match vkey.kind {
        KeyKind::Ed25519(_) => 64,
        KeyKind::Ed25519Cosignature(_) => 8 + 64,
        KeyKind::MlDsa44Cosignature(_) => 8 + MLDSA44_SIGNATURE_LEN,
    };
    let blob = 4 + sig_len;
    SIGNATURE_LINE_START.len() + vkey.name.len() + 1 + blob.div_ceil(3) * 4 + 1
}

/// The timestamp a cosignature line carries (its first 8 signature bytes, big-endian),
/// unverified; `None` if it is too short to carry one.
pub fn cosignature_timestamp(line: &SignatureLine) -> Option<u64> {
    let ts: [u8; 8] = line.sig.get(..8)?.try_into().ok()?;
    Some(u64::from_be_bytes(ts))
}

/// Whether `vkey`'s signature covers a checkpoint's extension lines: Ed25519 note
/// signatures (`0x01`) and cosignatures (`0x04`) sign the whole body; an ML-DSA-44
/// cosignature (`0x06`) signs only origin, size and root.
pub fn covers_extensions(vkey: &Vkey) -> bool {
    !matches!(vkey.kind, KeyKind::MlDsa44Cosignature(_))
}

fn verify_ed25519(pk: &[u8; 32], msg: &[u8], sig: &[u8; 64]) -> Result<(), CosignatureError> {
    let vk =
        ed25519_dalek::VerifyingKey::from_bytes(pk).map_err(|_| CosignatureError::BadSignature)?;
    vk.verify(msg, &ed25519_dalek::Signature::from_bytes(sig))
        .map_err(|_| CosignatureError::BadSignature)
}

/// An ML-DSA-44 cosigner (type `0x06`): a witness, or a log signing its own checkpoint
/// (then its name is the log's origin). The secret key is zeroized on drop and never
/// printed.
pub struct MlDsaCosigner {
    name: String,
    key: Box<ml_dsa::SigningKey<MlDsa44>>,
    vkey: Vkey,
}

impl fmt::Debug for MlDsaCosigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MlDsaCosigner")
            .field("name", &self.name)
            .field("key_id", &hex::encode(self.vkey.key_id))
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl MlDsaCosigner {
    /// The cosigner `name` with the ML-DSA-44 key generated from `seed`
    /// (`ML-DSA.KeyGen_internal`, FIPS 204): the same seed gives the same key.
    pub fn from_seed(name: &str, seed: &[u8; 32]) -> Result<MlDsaCosigner, CosignatureError> {
        if !is_valid_key_name(name) || name.len() > 255 {
            return Err(CosignatureError::Name);
        }
        let seed = zeroize::Zeroizing::new(ml_dsa::B32::from(*seed));
        let key = Box::new(ml_dsa::SigningKey::<MlDsa44>::from_seed(&seed));
        let pk: [u8; MLDSA44_PUBLIC_KEY_LEN] = ml_dsa::Keypair::verifying_key(&*key)
            .encode()
            .as_slice()
            .try_into()
            .map_err(|_| CosignatureError::Length)?;
        let vkey = Vkey::new(name, KeyKind::MlDsa44Cosignature(Box::new(pk)))
            .map_err(|_| CosignatureError::Name)?;
        Ok(MlDsaCosigner {
            name: name.to_owned(),
            key,
            vkey,
        })
    }

    /// The key name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The verifier key, parsed.
    pub fn verifier(&self) -> &Vkey {
        &self.vkey
    }

    /// The verifier key text `<name>+<key id>+base64(0x06 || public key)`.
    pub fn vkey(&self) -> String {
        self.vkey.to_string()
    }

    /// The signature line over the checkpoint (`origin`, `size`, `root`) at
    /// `timestamp_s` (deterministic ML-DSA-44, empty context).
    pub fn signature_line(
        &self,
        origin: &str,
        size: u64,
        root: &[u8; 32],
        timestamp_s: u64,
    ) -> Result<SignatureLine, CosignatureError> {
        let msg = cosigned_message(&self.name, timestamp_s, origin, 0, size, root)?;
        let sig = self
            .key
            .try_sign(&msg)
            .map_err(|_| CosignatureError::Signing)?;
        let mut blob = timestamp_s.to_be_bytes().to_vec();
        blob.extend_from_slice(sig.encode().as_slice());
        Ok(SignatureLine {
            name: self.name.clone(),
            key_id: self.vkey.key_id,
            sig: blob,
        })
    }

    /// The whole signature line `— <name> base64(key id || timestamp || signature)\n`
    /// over the checkpoint (`origin`, `size`, `root`) at `timestamp_s`.
    pub fn cosign(
        &self,
        origin: &str,
        size: u64,
        root: &[u8; 32],
        timestamp_s: u64,
    ) -> Result<String, CosignatureError> {
        Ok(self
            .signature_line(origin, size, root, timestamp_s)?
            .to_line())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::note::signed_note::SignedNote;
    use base64::engine::general_purpose::STANDARD as B64;
    use base64::Engine as _;

    #[test]
    fn cosigned_message_known_answer() {
        let m = cosigned_message("w", 0x0102030405060708, "o/l", 0, 5, &[0xaa; 32]).unwrap();
        let mut want: Vec<u8> = b"subtree/v1\n\0".to_vec();
        want.extend_from_slice(&[1, b'w']);
        want.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        want.extend_from_slice(&[3, b'o', b'/', b'l']);
        want.extend_from_slice(&[0; 8]);
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 5]);
        want.extend_from_slice(&[0xaa; 32]);
        assert_eq!(m, want);
        assert_eq!(m.len(), 12 + 2 + 8 + 4 + 16 + 32);
        assert_eq!(
            cosigned_message("", 1, "o", 0, 1, &[0; 32]),
            Err(CosignatureError::Name)
        );
        assert_eq!(
            cosigned_message("w", 1, &"o".repeat(256), 0, 1, &[0; 32]),
            Err(CosignatureError::Name)
        );
        assert_eq!(
            cosigned_message("w", 1 << 63, "o", 0, 1, &[0; 32]),
            Err(CosignatureError::Timestamp)
        );
    }

    #[test]
    fn signature_line_len_is_the_length_of_a_verifying_line() {
        let w = MlDsaCosigner::from_seed("example.com/w", &[3; 32]).unwrap();
        for (size, ts) in [(1, 1), (9, 1_700_000_000), (u64::MAX, MAX_TIMESTAMP)] {
            let line = w.cosign("o", size, &[4; 32], ts).unwrap();
            assert_eq!(line.len(), signature_line_len(w.verifier()));
        }
        let ed = Vkey::new("e", KeyKind::Ed25519Cosignature([1; 32])).unwrap();
        let blob = B64.encode([0u8; 4 + 8 + 64]);
        assert_eq!(
            signature_line_len(&ed),
            format!("\u{2014} e {blob}\n").len()
        );
        let note = Vkey::new("n", KeyKind::Ed25519([1; 32])).unwrap();
        let blob = B64.encode([0u8; 4 + 64]);
        assert_eq!(
            signature_line_len(&note),
            format!("\u{2014} n {blob}\n").len()
        );
        let line = w.signature_line("o", 1, &[4; 32], 77).unwrap();
        assert_eq!(cosignature_timestamp(&line), Some(77));
        assert!(!covers_extensions(w.verifier()));
        assert!(covers_extensions(&ed) && covers_extensions(&note));
    }

    #[test]
    fn ed25519_message_known_answer() {
        assert_eq!(
            ed25519_cosigned_message(1700000000, "o\n1\nAA==\nx\n"),
            b"cosignature/v1\ntime 1700000000\no\n1\nAA==\nx\n".to_vec()
        );
    }

    #[test]
    fn mldsa_cosignatures_round_trip_and_bind_everything() {
        let w = MlDsaCosigner::from_seed("example.com/w", &[3; 32]).unwrap();
        let again = MlDsaCosigner::from_seed("example.com/w", &[3; 32]).unwrap();
        assert_eq!(w.vkey(), again.vkey());
        assert!(w.vkey().starts_with("example.com/w+"));
        assert_eq!(Vkey::parse(&w.vkey()).as_ref(), Ok(w.verifier()));
        let debug = format!("{w:?}");
        assert!(debug.contains("redacted") && !debug.contains("SigningKey"));

        let cp = CheckpointBody::plain("example.com/log", 9, [4; 32]);
        let line_text = w
            .cosign(&cp.origin, cp.size, &cp.root, 1_700_000_000)
            .unwrap();
        assert!(line_text.starts_with("\u{2014} example.com/w ") && line_text.ends_with('\n'));
        let note = SignedNote::parse(&format!("{}\n{line_text}", cp.to_body())).unwrap();
        let line = &note.signatures[0];
        assert_eq!(line.sig.len(), 8 + MLDSA44_SIGNATURE_LEN);
        assert_eq!(
            verify_signature_line(w.verifier(), &cp, line),
            Ok(1_700_000_000)
        );
        // Extension lines are not signed by ML-DSA-44 cosignatures.
        let mut ext = cp.clone();
        ext.extensions.push("time 5".into());
        assert_eq!(
            verify_signature_line(w.verifier(), &ext, line),
            Ok(1_700_000_000)
        );
        // Another size, root or origin, or a changed timestamp: refused.
        for other in [
            CheckpointBody::plain("example.com/log", 10, [4; 32]),
            CheckpointBody::plain("example.com/log", 9, [5; 32]),
            CheckpointBody::plain("example.com/log2", 9, [4; 32]),
        ] {
            assert_eq!(
                verify_signature_line(w.verifier(), &other, line),
                Err(CosignatureError::BadSignature)
            );
        }
        let mut later = line.clone();
        later.sig[7] ^= 1;
        assert_eq!(
            verify_signature_line(w.verifier(), &cp, &later),
            Err(CosignatureError::BadSignature)
        );
        let mut short = line.clone();
        short.sig.pop();
        assert_eq!(
            verify_signature_line(w.verifier(), &cp, &short),
            Err(CosignatureError::Length)
        );
        let mut huge_ts = line.clone();
        huge_ts.sig[0] = 0x80;
        assert_eq!(
            verify_signature_line(w.verifier(), &cp, &huge_ts),
            Err(CosignatureError::Timestamp)
        );
        // Another key: mismatch by id; same name with another key: mismatch too.
        let x = MlDsaCosigner::from_seed("example.com/w", &[4; 32]).unwrap();
        assert_eq!(
            verify_signature_line(x.verifier(), &cp, line),
            Err(CosignatureError::KeyMismatch)
        );
        assert!(MlDsaCosigner::from_seed("a b", &[0; 32]).is_err());
        assert!(MlDsaCosigner::from_seed(&"a".repeat(256), &[0; 32]).is_err());
    }

    /// RFC 8032 section 7.1, test 1: the key, and a signature made with its secret key.
    fn rfc8032_key() -> ed25519_dalek::SigningKey {
        let sk: [u8; 32] =
            hex::decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
                .unwrap()
                .try_into()
                .unwrap();
        ed25519_dalek::SigningKey::from_bytes(&sk)
    }

    #[test]
    fn ed25519_signatures_verify() {
        use ed25519_dalek::Signer as _;
        let sk = rfc8032_key();
        let pk = sk.verifying_key().to_bytes();
        let cp = CheckpointBody::plain("example.com/log", 9, [4; 32]);

        let cosigner = Vkey::new("w", KeyKind::Ed25519Cosignature(pk)).unwrap();
        let ts = 1_700_000_000u64;
        let sig = sk.sign(&ed25519_cosigned_message(ts, &cp.to_body()));
        let mut blob = ts.to_be_bytes().to_vec();
        blob.extend_from_slice(&sig.to_bytes());
        let line = SignatureLine {
            name: "w".into(),
            key_id: cosigner.key_id,
            sig: blob,
        };
        assert_eq!(verify_signature_line(&cosigner, &cp, &line), Ok(ts));
        // The Ed25519 cosignature covers extension lines.
        let mut ext = cp.clone();
        ext.extensions.push("x".into());
        assert_eq!(
            verify_signature_line(&cosigner, &ext, &line),
            Err(CosignatureError::BadSignature)
        );

        let log = Vkey::new("example.com/log", KeyKind::Ed25519(pk)).unwrap();
        let line = SignatureLine {
            name: "example.com/log".into(),
            key_id: log.key_id,
            sig: sk.sign(cp.to_body().as_bytes()).to_bytes().to_vec(),
        };
        assert_eq!(verify_signature_line(&log, &cp, &line), Ok(0));
        assert_eq!(
            verify_signature_line(&log, &ext, &line),
            Err(CosignatureError::BadSignature)
        );
    }
}
