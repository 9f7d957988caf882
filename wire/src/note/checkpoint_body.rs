//! The plain C2SP checkpoint body (`c2sp.org/tlog-checkpoint`): origin, tree size, base64
//! RFC 6962 root hash, then optional extension lines. The note the witnesses cosign is the
//! three-line form (no extension lines); DGSP's own five-line checkpoint
//! (`dgsp_core::checkpoint`) parses here too, with its `time` and `snapshot` lines as
//! extensions.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

/// A checkpoint body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointBody {
    /// The origin line (the log's name).
    pub origin: String,
    /// The tree size.
    pub size: u64,
    /// The RFC 6962 Merkle tree root of the first `size` entries.
    pub root: [u8; 32],
    /// Extension lines, without their newlines (empty for a witnessed checkpoint).
    pub extensions: Vec<String>,
}

/// Why a checkpoint body was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointBodyError {
    /// Not a well-formed body.
    #[error("malformed checkpoint body: {0}")]
    Malformed(&'static str),
}

/// A canonical decimal: digits only, no leading zero.
pub(crate) fn parse_decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

fn is_line(s: &str) -> bool {
    !s.is_empty() && !s.chars().any(char::is_control)
}

impl CheckpointBody {
    /// The three-line body of (`origin`, `size`, `root`), no extension lines.
    pub fn plain(origin: &str, size: u64, root: [u8; 32]) -> CheckpointBody {
        CheckpointBody {
            origin: origin.to_owned(),
            size,
            root,
            extensions: Vec::new(),
        }
    }

    /// The body text, each line with its newline.
    pub fn to_body(&self) -> String {
        let mut out = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            B64.encode(self.root)
        );
        for e in &self.extensions {
            out.push_str(e);
            out.push('\n');
        }
        out
    }

    /// Parses a body (each line ending in a newline); [`CheckpointBody::to_body`] gives
    /// back the same bytes.
    pub fn parse(body: &str) -> Result<CheckpointBody, CheckpointBodyError> {
        let text = body
            .strip_suffix('\n')
            .ok_or(CheckpointBodyError::Malformed("no final newline"))?;
        let mut lines = text.split('\n');
        let origin = lines
            .next()
            .filter(|o| is_line(o))
            .ok_or(CheckpointBodyError::Malformed("origin line"))?;
        let size = lines
            .next()
            .and_then(parse_decimal)
            .ok_or(CheckpointBodyError::Malformed("size line"))?;
        let root = lines
            .next()
            .and_then(|h| B64.decode(h).ok())
            .and_then(|h| <[u8; 32]>::try_from(h).ok())
            .ok_or(CheckpointBodyError::Malformed("root hash line"))?;
        let mut extensions = Vec::new();
        for line in lines {
            if !is_line(line) {
                return Err(CheckpointBodyError::Malformed("extension line"));
            }
            extensions.push(line.to_owned());
        }
        let cp = CheckpointBody {
            origin: origin.to_owned(),
            size,
            root,
            extensions,
        };
        if cp.to_body() != body {
            return Err(CheckpointBodyError::Malformed("not in canonical form"));
        }
        Ok(cp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_and_five_line_bodies() {
        let plain = CheckpointBody::plain("dgsp/ab", 7, [0xff; 32]);
        let text = "dgsp/ab\n7\n//////////////////////////////////////////8=\n";
        assert_eq!(plain.to_body(), text);
        assert_eq!(CheckpointBody::parse(text), Ok(plain));
        let five = format!("{text}time 5\nsnapshot 1 {}\n", "0f".repeat(32));
        let cp = CheckpointBody::parse(&five).unwrap();
        assert_eq!(
            cp.extensions,
            vec![
                "time 5".to_owned(),
                format!("snapshot 1 {}", "0f".repeat(32))
            ]
        );
        assert_eq!(cp.to_body(), five);
    }

    #[test]
    fn refuses_malformed_bodies() {
        let root = "//////////////////////////////////////////8=";
        for bad in [
            format!("dgsp/ab\n7\n{root}"),
            format!("\n7\n{root}\n"),
            format!("dgsp/ab\n07\n{root}\n"),
            format!("dgsp/ab\n-7\n{root}\n"),
            format!("dgsp/ab\n18446744073709551616\n{root}\n"),
            "dgsp/ab\n7\nAAAA\n".to_owned(),
            "dgsp/ab\n7\n//////////////////////////////////////////9=\n".to_owned(),
            format!("dgsp/ab\n7\n{root}\n\n"),
            format!("dgsp/ab\n7\n{root}\nx\ty\n"),
            "dgsp/ab\n7\n".to_owned(),
        ] {
            assert!(CheckpointBody::parse(&bad).is_err(), "{bad:?}");
        }
    }
}
