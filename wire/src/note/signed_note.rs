//! C2SP signed notes (`c2sp.org/signed-note`): a text, a blank line, signature lines
//! `— <key name> base64(key id (4 bytes) || signature)\n`.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

/// Most signature lines a note may carry (the spec asks verifiers to accept at least 16).
pub const MAX_SIGNATURES: usize = 32;

/// Largest note accepted, in bytes (ML-DSA-44 lines are 3.3 KB each).
pub const MAX_NOTE_BYTES: usize = 64 * 1024;

/// The em dash and space that start a signature line.
pub const SIGNATURE_LINE_START: &str = "\u{2014} ";

/// One signature line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureLine {
    /// The key name.
    pub name: String,
    /// The key id (first 4 bytes of the base64 blob).
    pub key_id: [u8; 4],
    /// The signature bytes after the key id (for a cosignature: timestamp || signature).
    pub sig: Vec<u8>,
}

/// A parsed signed note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedNote {
    /// The signed text: every line before the blank line, each with its newline.
    pub body: String,
    /// The signature lines, in order.
    pub signatures: Vec<SignatureLine>,
}

/// Why a signed note (or a signature line) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    /// Over [`MAX_NOTE_BYTES`].
    #[error("the note is over {MAX_NOTE_BYTES} bytes")]
    TooLarge,
    /// Over [`MAX_SIGNATURES`] signature lines.
    #[error("the note carries over {MAX_SIGNATURES} signature lines")]
    TooManySignatures,
    /// No signature line.
    #[error("the note carries no signature line")]
    NoSignatures,
    /// Not well formed.
    #[error("malformed note: {0}")]
    Malformed(&'static str),
}

/// A key name as signed notes allow it: non-empty, no whitespace, no `+`, no control
/// characters.
pub fn is_valid_key_name(name: &str) -> bool {
    !name.is_empty()
        && !name
            .chars()
            .any(|c| c.is_whitespace() || c == '+' || c.is_control())
}

impl SignatureLine {
    /// The line, with its newline: `— <name> base64(key id || sig)\n`.
    pub fn to_line(&self) -> String {
        let mut blob = self.key_id.to_vec();
        blob.extend_from_slice(&self.sig);
        format!("{SIGNATURE_LINE_START}{} {}\n", self.name, B64.encode(blob))
    }

    /// Parses one line, without its newline.
    pub fn parse(line: &str) -> Result<SignatureLine, NoteError> {
        let (name, blob) = line
            .strip_prefix(SIGNATURE_LINE_START)
            .and_then(|rest| rest.split_once(' '))
            .ok_or(NoteError::Malformed("signature line"))?;
        if !is_valid_key_name(name) {
            return Err(NoteError::Malformed("signature key name"));
        }
        let blob = B64
            .decode(blob)
            .map_err(|_| NoteError::Malformed("signature base64"))?;
        if blob.len() < 5 {
            return Err(NoteError::Malformed("signature too short"));
        }
        let mut key_id = [0u8; 4];
        key_id.copy_from_slice(&blob[..4]);
        Ok(SignatureLine {
            name: name.to_owned(),
            key_id,
            sig: blob[4..].to_vec(),
        })
    }
}

/// Parses signature lines (each ending in `\n`), such as a witness's answer to
/// `add-checkpoint`; at least one, at most [`MAX_SIGNATURES`].
pub fn parse_signature_lines(text: &str) -> Result<Vec<SignatureLine>, NoteError> {
    if text.len() > MAX_NOTE_BYTES {
        return Err(NoteError::TooLarge);
    }
    if text.is_empty() {
        return Err(NoteError::NoSignatures);
    }
    let lines = text
        .strip_suffix('\n')
        .ok_or(NoteError::Malformed("no final newline"))?;
    let mut out = Vec::new();
    for line in lines.split('\n') {
        if out.len() == MAX_SIGNATURES {
            return Err(NoteError::TooManySignatures);
        }
        out.push(SignatureLine::parse(line)?);
    }
    Ok(out)
}

impl SignedNote {
    /// Parses a note; [`SignedNote::to_text`] gives back the same bytes.
    pub fn parse(text: &str) -> Result<SignedNote, NoteError> {
        if text.len() > MAX_NOTE_BYTES {
            return Err(NoteError::TooLarge);
        }
        if text.chars().any(|c| c.is_control() && c != '\n') {
            return Err(NoteError::Malformed("control character"));
        }
        let (body, sigs) = text
            .split_once("\n\n")
            .ok_or(NoteError::Malformed("no blank line"))?;
        if body.is_empty() {
            return Err(NoteError::Malformed("empty text"));
        }
        let signatures = parse_signature_lines(sigs)?;
        let note = SignedNote {
            body: format!("{body}\n"),
            signatures,
        };
        if note.to_text() != text {
            // Non-canonical base64 padding and the like: one note, one text.
            return Err(NoteError::Malformed("not in canonical form"));
        }
        Ok(note)
    }

    /// The note's text: the body, a blank line, the signature lines.
    pub fn to_text(&self) -> String {
        let mut out = format!("{}\n", self.body);
        for s in &self.signatures {
            out.push_str(&s.to_line());
        }
        out
    }

    /// The signature lines by the key (`name`, `key_id`).
    pub fn signatures_by<'a>(
        &'a self,
        name: &'a str,
        key_id: &'a [u8; 4],
    ) -> impl Iterator<Item = &'a SignatureLine> + 'a {
        self.signatures
            .iter()
            .filter(move |s| s.name == name && &s.key_id == key_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTE: &str = "example.com/log\n3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n\
                        \u{2014} example.com/log AQIDBAUG\n\
                        \u{2014} w1 CgsMDQ4P\n";

    #[test]
    fn parses_and_round_trips() {
        let n = SignedNote::parse(NOTE).unwrap();
        assert_eq!(
            n.body,
            "example.com/log\n3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
        );
        assert_eq!(
            n.signatures,
            vec![
                SignatureLine {
                    name: "example.com/log".into(),
                    key_id: [1, 2, 3, 4],
                    sig: vec![5, 6],
                },
                SignatureLine {
                    name: "w1".into(),
                    key_id: [10, 11, 12, 13],
                    sig: vec![14, 15],
                },
            ]
        );
        assert_eq!(n.to_text(), NOTE);
        assert_eq!(n.signatures_by("w1", &[10, 11, 12, 13]).count(), 1);
        assert_eq!(n.signatures_by("w1", &[10, 11, 12, 14]).count(), 0);
    }

    #[test]
    fn refuses_malformed_notes() {
        let sig = "\u{2014} w1 CgsMDQ4P\n";
        let body = "a\n";
        for (bad, why) in [
            ("a\n".to_owned(), "no blank line"),
            (format!("\n\n{sig}"), "empty text"),
            (format!("{body}\n"), "no signature"),
            (format!("{body}\n{}", sig.trim_end()), "no final newline"),
            (format!("{body}\n- w1 CgsMDQ4P\n"), "hyphen"),
            (format!("{body}\n\u{2014} w1CgsMDQ4P\n"), "no space"),
            (format!("{body}\n\u{2014}  CgsMDQ4P\n"), "empty name"),
            (format!("{body}\n\u{2014} w+1 CgsMDQ4P\n"), "plus in name"),
            (format!("{body}\n\u{2014} w1 CgsMDQ4\n"), "bad base64"),
            (format!("{body}\n\u{2014} w1 CgsMDQ==\n"), "too short"),
            (
                format!("{body}\n\u{2014} w1 CgsMDQ5=\n"),
                "non-canonical base64",
            ),
            (format!("{body}\n{sig}\n"), "blank line after signatures"),
            (format!("a\tb\n\n{sig}"), "control character"),
            (
                format!("{body}\n\u{2014} w1 CgsMDQ4P extra\n"),
                "extra field",
            ),
        ] {
            assert!(SignedNote::parse(&bad).is_err(), "{why}: {bad:?}");
        }
        assert_eq!(
            SignedNote::parse(&format!("{body}\n")),
            Err(NoteError::NoSignatures)
        );
        let many = format!("{body}\n{}", sig.repeat(MAX_SIGNATURES + 1));
        assert_eq!(SignedNote::parse(&many), Err(NoteError::TooManySignatures));
        assert!(SignedNote::parse(&format!("{body}\n{}", sig.repeat(MAX_SIGNATURES))).is_ok());
        let huge = format!("{}\n\n{sig}", "a".repeat(MAX_NOTE_BYTES));
        assert_eq!(SignedNote::parse(&huge), Err(NoteError::TooLarge));
    }

    #[test]
    fn key_names() {
        assert!(is_valid_key_name("dgsp/0a"));
        for bad in ["", "a b", "a+b", "a\u{2003}b", "a\nb"] {
            assert!(!is_valid_key_name(bad), "{bad:?}");
        }
    }
}
