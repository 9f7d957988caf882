//! RFC 9457 problem details: every error answer of the registry and the gateways is
//! `application/problem+json` with a stable `type` (`urn:dgsp:problem:<slug>`), and bad
//! input names the offending field. This is the body as a client reads it; the services
//! build it with `dgsp-http`'s `Problem`.

use serde::{Deserialize, Serialize};

/// The media type of a problem answer.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// The `type` prefix of every problem this project answers.
pub const PROBLEM_TYPE_PREFIX: &str = "urn:dgsp:problem:";

/// An error answer's body. Read leniently (RFC 9457 makes every member optional): a
/// missing member is empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProblemDetails {
    /// Stable identifier of the problem kind, `urn:dgsp:problem:<slug>`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Short human summary of the kind.
    #[serde(default)]
    pub title: String,
    /// HTTP status.
    #[serde(default)]
    pub status: u16,
    /// What went wrong in this request.
    #[serde(default)]
    pub detail: String,
    /// The request field at fault, when there is one (`wots_pks[3]`, `username`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ProblemDetails {
    /// A problem of kind `slug` (the part after [`PROBLEM_TYPE_PREFIX`]).
    pub fn new(status: u16, slug: &str, title: &str, detail: impl Into<String>) -> Self {
        ProblemDetails {
            kind: format!("{PROBLEM_TYPE_PREFIX}{slug}"),
            title: title.into(),
            status,
            detail: detail.into(),
            field: None,
        }
    }

    /// The slug of `type` (`malformed-field`, ...), when it is one of ours.
    pub fn slug(&self) -> Option<&str> {
        self.kind.strip_prefix(PROBLEM_TYPE_PREFIX)
    }
}

impl std::fmt::Display for ProblemDetails {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.title, self.status, self.detail)?;
        if let Some(field) = &self.field {
            write!(f, " [field {field}]")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_names_its_slug() {
        let p = ProblemDetails {
            field: Some("username".into()),
            ..ProblemDetails::new(400, "malformed-field", "Malformed field", "empty")
        };
        let json = serde_json::to_string(&p).unwrap();
        assert!(
            json.contains(r#""type":"urn:dgsp:problem:malformed-field""#),
            "{json}"
        );
        let back: ProblemDetails = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
        assert_eq!(back.slug(), Some("malformed-field"));
        let bare: ProblemDetails =
            serde_json::from_str(r#"{"type":"about:blank","title":"t","status":500,"detail":"d"}"#)
                .unwrap();
        assert_eq!(bare.slug(), None);
        assert_eq!(bare.field, None);
        let sparse: ProblemDetails = serde_json::from_str(r#"{"detail":"d"}"#).unwrap();
        assert_eq!((sparse.title.as_str(), sparse.status), ("", 0));
    }
}
