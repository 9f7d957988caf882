//! The bodies of c2sp.org/tlog-witness, both directions.
//!
//! ```text
//! POST <prefix>/add-checkpoint
//!   old <size>\n                  canonical decimal: the size the witness last cosigned, 0 if never
//!   <base64 hash>\n ...           0..=63 lines: the RFC 6962 consistency proof old -> new
//!   \n
//!   <checkpoint note>             the signed note, ending in \n
//! 409, text/x.tlog.size: <size>\n
//! 200: — <name> <base64>\n ...    one or more cosignature lines
//! ```
//!
//! Parsing is strict and bounded: canonical decimals, standard padded base64 of exactly 32
//! bytes per proof hash, at most [`MAX_PROOF_HASHES`] of them, at most [`MAX_REQUEST_BODY`]
//! bytes. The checkpoint note itself is returned as text; its signatures are the caller's to
//! verify (a note parser rejects what this module does not look at).

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

/// The most proof hashes a request may carry (the spec's 63).
pub const MAX_PROOF_HASHES: usize = 63;
/// The largest request body [`AddCheckpoint::parse`] accepts: 16 KiB, omniwitness's limit.
/// (litewitness accepts 10 KiB; a DGSP note with only its ML-DSA-44 log signature is ≈ 3.4 KB
/// and 63 proof hashes 2.8 KB.)
pub const MAX_REQUEST_BODY: usize = 16 * 1024;
/// The most cosignature lines taken from one 200 answer.
pub const MAX_COSIGNATURE_LINES: usize = 16;
/// The longest cosignature line taken, without its `\n` (an ML-DSA-44 line is ≈ 3.3 KB).
pub const MAX_COSIGNATURE_LINE: usize = 8 * 1024;
/// The largest 200 answer body read.
pub const MAX_COSIGNATURE_BODY: usize = 64 * 1024;
/// The largest 409 answer body read (`<u64>\n` is at most 21 bytes).
pub const MAX_CONFLICT_BODY: usize = 32;
/// The content type of a 409 answer.
pub const CONFLICT_CONTENT_TYPE: &str = "text/x.tlog.size";

/// What is wrong with a body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// The body is larger than its cap.
    #[error("body of {len} bytes is over the {max}-byte limit")]
    TooLarge {
        /// The body's length (or the bytes read before giving up).
        len: usize,
        /// The cap.
        max: usize,
    },
    /// The body is not UTF-8.
    #[error("body is not UTF-8")]
    NotUtf8,
    /// The first line is not `old <decimal>`.
    #[error("first line is not `old <size>`")]
    BadOldLine,
    /// A size is not a canonical decimal u64 (no sign, no leading zero, no overflow).
    #[error("not a canonical decimal size: {0:?}")]
    BadSize(String),
    /// A proof line is not standard padded base64 of 32 bytes.
    #[error("proof line {index} is not a base64 32-byte hash")]
    BadProofHash {
        /// Its index among the proof lines.
        index: usize,
    },
    /// More than [`MAX_PROOF_HASHES`] proof lines.
    #[error("more than {MAX_PROOF_HASHES} proof lines")]
    TooManyProofHashes,
    /// No blank line ends the proof.
    #[error("no blank line before the checkpoint")]
    MissingBlankLine,
    /// The checkpoint is empty or does not end in `\n`.
    #[error("the checkpoint note is empty or does not end in a newline")]
    BadCheckpoint,
    /// A 409 body is not `<size>\n`.
    #[error("409 body is not `<size>\\n`")]
    BadConflictBody,
    /// A cosignature line is malformed.
    #[error("cosignature line {index}: {why}")]
    BadCosignatureLine {
        /// Its index in the answer.
        index: usize,
        /// What is wrong.
        why: &'static str,
    },
    /// A 200 answer holds no cosignature line.
    #[error("the answer holds no cosignature line")]
    NoCosignature,
    /// A 200 answer holds more than [`MAX_COSIGNATURE_LINES`] lines.
    #[error("more than {MAX_COSIGNATURE_LINES} cosignature lines")]
    TooManyCosignatures,
}

/// The body of `POST <prefix>/add-checkpoint`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddCheckpoint {
    /// The size the witness last cosigned for this log (0: never, or unknown).
    pub old: u64,
    /// The RFC 6962 consistency proof from `old` to the checkpoint's size: empty when `old` is
    /// 0 or equals the size.
    pub proof: Vec<[u8; 32]>,
    /// The checkpoint note, its signatures included, ending in `\n`.
    pub checkpoint: String,
}

impl AddCheckpoint {
    /// The request body. (A proof longer than [`MAX_PROOF_HASHES`] is written as given; a
    /// witness and [`AddCheckpoint::parse`] refuse it.)
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(24 + self.proof.len() * 45 + self.checkpoint.len());
        out.push_str("old ");
        out.push_str(&self.old.to_string());
        out.push('\n');
        for hash in &self.proof {
            out.push_str(&STANDARD.encode(hash));
            out.push('\n');
        }
        out.push('\n');
        out.push_str(&self.checkpoint);
        out
    }

    /// Parses a request body, strictly (see the module's documentation). Does not judge the
    /// proof against the sizes (a non-empty proof with `old` 0 is the witness's 422) nor the
    /// note's signatures.
    pub fn parse(body: &[u8]) -> Result<AddCheckpoint, ProtocolError> {
        if body.len() > MAX_REQUEST_BODY {
            return Err(ProtocolError::TooLarge {
                len: body.len(),
                max: MAX_REQUEST_BODY,
            });
        }
        let text = std::str::from_utf8(body).map_err(|_| ProtocolError::NotUtf8)?;
        let (first, mut rest) = text.split_once('\n').ok_or(ProtocolError::BadOldLine)?;
        let old = parse_size(
            first
                .strip_prefix("old ")
                .ok_or(ProtocolError::BadOldLine)?,
        )?;
        let mut proof = Vec::new();
        loop {
            let (line, after) = rest
                .split_once('\n')
                .ok_or(ProtocolError::MissingBlankLine)?;
            rest = after;
            if line.is_empty() {
                break;
            }
            if proof.len() == MAX_PROOF_HASHES {
                return Err(ProtocolError::TooManyProofHashes);
            }
            proof.push(parse_hash(line).ok_or(ProtocolError::BadProofHash { index: proof.len() })?);
        }
        if rest.is_empty() || !rest.ends_with('\n') {
            return Err(ProtocolError::BadCheckpoint);
        }
        Ok(AddCheckpoint {
            old,
            proof,
            checkpoint: rest.to_owned(),
        })
    }
}

/// A canonical decimal u64: digits only, no leading zero (but `0`), no overflow.
pub fn parse_size(s: &str) -> Result<u64, ProtocolError> {
    let bad = || ProtocolError::BadSize(s.chars().take(32).collect());
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return Err(bad());
    }
    s.parse().map_err(|_| bad())
}

fn parse_hash(line: &str) -> Option<[u8; 32]> {
    // 32 bytes are 44 base64 characters; anything else is refused before decoding.
    if line.len() != 44 {
        return None;
    }
    STANDARD.decode(line).ok()?.try_into().ok()
}

/// The body of a 409 answer (`text/x.tlog.size`): `<size>\n`.
pub fn encode_conflict(size: u64) -> String {
    format!("{size}\n")
}

/// Parses the body of a 409 answer: exactly `<canonical decimal>\n`.
pub fn parse_conflict(body: &[u8]) -> Result<u64, ProtocolError> {
    if body.len() > MAX_CONFLICT_BODY {
        return Err(ProtocolError::TooLarge {
            len: body.len(),
            max: MAX_CONFLICT_BODY,
        });
    }
    let text = std::str::from_utf8(body).map_err(|_| ProtocolError::BadConflictBody)?;
    let size = text
        .strip_suffix('\n')
        .ok_or(ProtocolError::BadConflictBody)?;
    parse_size(size).map_err(|_| ProtocolError::BadConflictBody)
}

/// Splits a 200 answer into its cosignature lines, each returned without its `\n`. Every line
/// must be `— <name> <base64>` (signed-note: em dash, a key name without whitespace, control
/// characters or `+`, standard base64 of at least a 4-byte key ID and an 8-byte timestamp)
/// and end in `\n`; at least one, at most [`MAX_COSIGNATURE_LINES`], each at most [`MAX_COSIGNATURE_LINE`] bytes.
pub fn split_cosignatures(body: &[u8]) -> Result<Vec<String>, ProtocolError> {
    if body.len() > MAX_COSIGNATURE_BODY {
        return Err(ProtocolError::TooLarge {
            len: body.len(),
            max: MAX_COSIGNATURE_BODY,
        });
    }
    let text = std::str::from_utf8(body).map_err(|_| ProtocolError::NotUtf8)?;
    if text.is_empty() {
        return Err(ProtocolError::NoCosignature);
    }
    let Some(text) = text.strip_suffix('\n') else {
        return Err(ProtocolError::BadCosignatureLine {
            index: text.split('\n').count() - 1,
            why: "does not end in a newline",
        });
    };
    let mut lines = Vec::new();
    for (index, line) in text.split('\n').enumerate() {
        if index == MAX_COSIGNATURE_LINES {
            return Err(ProtocolError::TooManyCosignatures);
        }
        check_cosignature_line(line)
            .map_err(|why| ProtocolError::BadCosignatureLine { index, why })?;
        lines.push(line.to_owned());
    }
    Ok(lines)
}

/// The key name of a cosignature line (`— <name> <base64>`), if it has that shape.
pub fn cosignature_name(line: &str) -> Option<&str> {
    line.strip_prefix("— ")?
        .split_once(' ')
        .map(|(name, _)| name)
}

fn check_cosignature_line(line: &str) -> Result<(), &'static str> {
    if line.len() > MAX_COSIGNATURE_LINE {
        return Err("too long");
    }
    let rest = line.strip_prefix("— ").ok_or("does not start with `— `")?;
    let (name, sig) = rest.split_once(' ').ok_or("no space after the key name")?;
    if name.is_empty()
        || name
            .chars()
            .any(|c| c == '+' || c.is_whitespace() || c.is_control())
    {
        return Err("bad key name");
    }
    let blob = STANDARD
        .decode(sig)
        .map_err(|_| "signature is not base64")?;
    if blob.len() < 12 {
        return Err("signature shorter than a key ID and a timestamp");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTE: &str = "example.com/log\n3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— example.com/log AAAA\n";

    fn req(old: u64, proof: usize) -> AddCheckpoint {
        AddCheckpoint {
            old,
            proof: (0..proof).map(|i| [i as u8; 32]).collect(),
            checkpoint: NOTE.into(),
        }
    }

    #[test]
    fn encode_parse_round_trip() {
        for (old, n) in [(0, 0), (1, 2), (u64::MAX, 63)] {
            let r = req(old, n);
            let body = r.encode();
            assert_eq!(AddCheckpoint::parse(body.as_bytes()), Ok(r));
        }
        let body = req(5, 1).encode();
        assert!(body.starts_with(
            "old 5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\nexample.com/log\n"
        ));
    }

    #[test]
    fn parse_is_strict() {
        let bad = |body: &str| AddCheckpoint::parse(body.as_bytes()).unwrap_err();
        let tail = format!("\n{NOTE}");
        assert_eq!(
            bad(&format!("old 01\n{tail}")),
            ProtocolError::BadSize("01".into())
        );
        assert!(matches!(
            bad(&format!("old +1\n{tail}")),
            ProtocolError::BadSize(_)
        ));
        assert!(matches!(
            bad(&format!("old 18446744073709551616\n{tail}")),
            ProtocolError::BadSize(_)
        ));
        assert!(matches!(
            bad(&format!("old  1\n{tail}")),
            ProtocolError::BadSize(_)
        ));
        assert_eq!(bad(&format!("Old 1\n{tail}")), ProtocolError::BadOldLine);
        assert_eq!(bad("old 1"), ProtocolError::BadOldLine);
        assert_eq!(
            bad("old 1\nAAAA\n"),
            ProtocolError::BadProofHash { index: 0 }
        );
        // 31 bytes, then 32 bytes without padding, then non-canonical trailing bits.
        assert!(matches!(
            bad(&format!("old 1\n{}\n{tail}", STANDARD.encode([0u8; 31]))),
            ProtocolError::BadProofHash { .. }
        ));
        assert!(matches!(
            bad(&format!(
                "old 1\n{}\n{tail}",
                &STANDARD.encode([0u8; 32])[..43]
            )),
            ProtocolError::BadProofHash { .. }
        ));
        assert!(matches!(
            bad(&format!(
                "old 1\n{}B=\n{tail}",
                &STANDARD.encode([0u8; 32])[..42]
            )),
            ProtocolError::BadProofHash { .. }
        ));
        assert_eq!(bad("old 1\n"), ProtocolError::MissingBlankLine);
        assert_eq!(bad("old 1\n\n"), ProtocolError::BadCheckpoint);
        assert_eq!(bad("old 1\n\nno newline"), ProtocolError::BadCheckpoint);
        assert_eq!(
            AddCheckpoint::parse(&[0xff, b'\n']),
            Err(ProtocolError::NotUtf8)
        );
        let too_many = req(1, 64).encode();
        assert_eq!(bad(&too_many), ProtocolError::TooManyProofHashes);
        let big = format!("old 0\n\n{}\n", "x".repeat(MAX_REQUEST_BODY));
        assert!(matches!(bad(&big), ProtocolError::TooLarge { .. }));
    }

    #[test]
    fn conflict_bodies() {
        assert_eq!(encode_conflict(5), "5\n");
        assert_eq!(parse_conflict(b"5\n"), Ok(5));
        assert_eq!(parse_conflict(b"0\n"), Ok(0));
        for bad in [
            &b"5"[..],
            b"05\n",
            b"5\n\n",
            b" 5\n",
            b"-1\n",
            b"",
            b"\xff\n",
        ] {
            assert_eq!(
                parse_conflict(bad),
                Err(ProtocolError::BadConflictBody),
                "{bad:?}"
            );
        }
        assert!(matches!(
            parse_conflict(&[b'1'; 40]),
            Err(ProtocolError::TooLarge { .. })
        ));
    }

    #[test]
    fn cosignature_lines() {
        let blob = STANDARD.encode([7u8; 76]);
        let one = format!("— w1.example/a {blob}");
        let two = format!("— w2.example/b {blob}");
        let lines = split_cosignatures(format!("{one}\n{two}\n").as_bytes()).unwrap();
        assert_eq!(lines, vec![one.clone(), two]);
        assert_eq!(cosignature_name(&one), Some("w1.example/a"));

        assert_eq!(split_cosignatures(b""), Err(ProtocolError::NoCosignature));
        let e = |s: String| split_cosignatures(s.as_bytes()).unwrap_err();
        assert!(matches!(
            e(one.clone()),
            ProtocolError::BadCosignatureLine { index: 0, .. }
        ));
        assert!(matches!(
            e(format!("{one}\n\n")),
            ProtocolError::BadCosignatureLine { index: 1, .. }
        ));
        assert!(matches!(
            e(format!("- w {blob}\n")),
            ProtocolError::BadCosignatureLine { .. }
        ));
        assert!(matches!(
            e(format!("— a+b {blob}\n")),
            ProtocolError::BadCosignatureLine { .. }
        ));
        assert!(matches!(
            e("— w AAAA\n".into()),
            ProtocolError::BadCosignatureLine { .. }
        ));
        assert!(matches!(
            e("— w !!!!\n".into()),
            ProtocolError::BadCosignatureLine { .. }
        ));
        assert!(matches!(
            e(format!("— w {}\n", STANDARD.encode([0u8; 7000]))),
            ProtocolError::BadCosignatureLine { .. }
        ));
        assert_eq!(
            e(format!("{one}\n").repeat(17)),
            ProtocolError::TooManyCosignatures
        );
        assert!(matches!(
            e("x".repeat(MAX_COSIGNATURE_BODY + 1)),
            ProtocolError::TooLarge { .. }
        ));
    }
}
