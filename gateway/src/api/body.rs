//! Request bodies of `POST /v1/verify` and `/v1/verify/batch`, read with as little copying as
//! possible. Two encodings, chosen by `Content-Type`, give the same answers and the same
//! errors:
//!
//! - `application/json`: `{"message": "<base64>", "signature": "<base64>"}` (a batch:
//!   `{"items": [...]}`). The base64 text is borrowed from the request body, not copied into
//!   strings, and decoded once into the buffer the verifier reads.
//! - [`BINARY`] (`application/vnd.dgsp.verify`): an item is `u32 message length | message |
//!   u32 signature length | signature encoding`, lengths big-endian; a single verify is one
//!   item, a batch is `u32 item count` followed by the items. Nothing to decode, ~25 % fewer
//!   bytes than base64.
//!
//! Every length is checked against the bytes that remain, so a body can claim nothing larger
//! than itself (the route's body limit bounds it: a single verify or judge carries one
//! message and one signature, `ApiConfig::single_body_limit`; a batch has the larger
//! `--max-body-bytes`).

use std::borrow::Cow;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, StatusCode};
use dgsp_http::problem::{b64, body_bytes, json_problem, json_trailing_problem, Problem};
use serde::Deserialize;

use super::model::{BatchRequest, VerifyRequest};

/// The compact binary media type of verify requests.
pub const BINARY: &str = "application/vnd.dgsp.verify";

/// Which encoding a body is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Encoding {
    Json,
    Binary,
}

/// A verify request body, read whole (within the body limit) and parsed on demand.
pub struct VerifyBody {
    encoding: Encoding,
    bytes: Bytes,
}

impl<S: Send + Sync> FromRequest<S> for VerifyBody {
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Problem> {
        let encoding = match req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(str::trim)
        {
            Some(t) if t.eq_ignore_ascii_case("application/json") => Encoding::Json,
            Some(t) if t.eq_ignore_ascii_case(BINARY) => Encoding::Binary,
            _ => {
                return Err(Problem::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "unsupported-media-type",
                    "Expected application/json",
                    format!("Expected request with `Content-Type: application/json` or `{BINARY}`"),
                ))
            }
        };
        let bytes = body_bytes(req, state).await?;
        Ok(VerifyBody { encoding, bytes })
    }
}

/// A field as it arrived: base64 text borrowed from a JSON body, or raw bytes.
pub enum Field<'a> {
    /// Base64 text (owned only if the JSON string had escapes).
    Text(Cow<'a, str>),
    /// Bytes of a binary body.
    Raw(&'a [u8]),
}

impl Field<'_> {
    /// The field's bytes; base64 that does not decode is a 400 naming `name()`.
    pub fn decode(&self, name: impl Fn() -> String) -> Result<Vec<u8>, Problem> {
        match self {
            Field::Text(t) => b64("", t).map_err(|p| p.at(name())),
            Field::Raw(r) => Ok(r.to_vec()),
        }
    }

    /// The field's bytes, borrowed when they need no decoding.
    pub fn bytes(&self, name: impl Fn() -> String) -> Result<Cow<'_, [u8]>, Problem> {
        match self {
            Field::Text(_) => self.decode(name).map(Cow::Owned),
            Field::Raw(r) => Ok(Cow::Borrowed(r)),
        }
    }
}

/// One signed message of a request.
pub struct RawItem<'a> {
    /// The message.
    pub message: Field<'a>,
    /// The signature encoding.
    pub signature: Field<'a>,
}

impl<'a> From<VerifyRequest<'a>> for RawItem<'a> {
    fn from(j: VerifyRequest<'a>) -> Self {
        RawItem {
            message: Field::Text(j.message),
            signature: Field::Text(j.signature),
        }
    }
}

fn parse_json<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, Problem> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(json_problem)?;
    de.end().map_err(json_trailing_problem)?;
    Ok(value)
}

impl VerifyBody {
    /// The body as one item (`/v1/verify`).
    pub fn single(&self) -> Result<RawItem<'_>, Problem> {
        match self.encoding {
            Encoding::Json => parse_json::<VerifyRequest>(&self.bytes).map(RawItem::from),
            Encoding::Binary => {
                let mut r = Reader::new(&self.bytes);
                let item = r.item(String::new)?;
                r.end()?;
                Ok(item)
            }
        }
    }

    /// The body as 1 to `max` items (`/v1/verify/batch`); another count is a 422 naming
    /// `items`.
    pub fn batch(&self, max: usize) -> Result<Vec<RawItem<'_>>, Problem> {
        let count_problem =
            || Problem::invalid_field("items", format!("1 to {max} items per batch"));
        let items: Vec<RawItem<'_>> = match self.encoding {
            Encoding::Json => parse_json::<BatchRequest>(&self.bytes)?
                .items
                .into_iter()
                .map(RawItem::from)
                .collect(),
            Encoding::Binary => {
                let mut r = Reader::new(&self.bytes);
                let n = r.len(|| "items".into())?;
                if n == 0 || n > max {
                    return Err(count_problem());
                }
                let mut items = Vec::with_capacity(n);
                for i in 0..n {
                    items.push(r.item(|| format!("items[{i}]."))?);
                }
                r.end()?;
                items
            }
        };
        if items.is_empty() || items.len() > max {
            return Err(count_problem());
        }
        Ok(items)
    }
}

/// Reads the binary encoding.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { rest: bytes }
    }

    fn truncated(field: String, detail: String) -> Problem {
        Problem::bad_field("", detail).at(field)
    }

    /// A big-endian u32 length.
    fn len(&mut self, field: impl Fn() -> String) -> Result<usize, Problem> {
        let Some((head, rest)) = self.rest.split_first_chunk::<4>() else {
            return Err(Self::truncated(
                field(),
                format!("binary body ends inside the 4-byte length of `{}`", field()),
            ));
        };
        self.rest = rest;
        usize::try_from(u32::from_be_bytes(*head))
            .map_err(|_| Self::truncated(field(), "length does not fit this machine".into()))
    }

    /// A length-prefixed field.
    fn field(&mut self, field: impl Fn() -> String) -> Result<&'a [u8], Problem> {
        let n = self.len(&field)?;
        if n > self.rest.len() {
            return Err(Self::truncated(
                field(),
                format!(
                    "binary body: `{}` claims {n} bytes but only {} remain",
                    field(),
                    self.rest.len()
                ),
            ));
        }
        let (value, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(value)
    }

    /// One item; field names start with `prefix()` (`items[3].`).
    fn item(&mut self, prefix: impl Fn() -> String) -> Result<RawItem<'a>, Problem> {
        let message = self.field(|| format!("{}message", prefix()))?;
        let signature = self.field(|| format!("{}signature", prefix()))?;
        Ok(RawItem {
            message: Field::Raw(message),
            signature: Field::Raw(signature),
        })
    }

    /// Nothing may follow the last item.
    fn end(&self) -> Result<(), Problem> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(Problem::new(
                StatusCode::BAD_REQUEST,
                "malformed-body",
                "Malformed request body",
                format!(
                    "binary body: {} bytes follow the last item",
                    self.rest.len()
                ),
            ))
        }
    }
}

/// Encodes items in the binary form (for clients and tests): a single verify body when
/// `batch` is false (exactly one item), a batch body otherwise.
pub fn encode_binary(items: &[(&[u8], &[u8])], batch: bool) -> Vec<u8> {
    let size: usize = items.iter().map(|(m, s)| 8 + m.len() + s.len()).sum();
    let mut out = Vec::with_capacity(size + 4);
    if batch {
        out.extend_from_slice(&(items.len() as u32).to_be_bytes());
    }
    for (m, s) in items {
        out.extend_from_slice(&(m.len() as u32).to_be_bytes());
        out.extend_from_slice(m);
        out.extend_from_slice(&(s.len() as u32).to_be_bytes());
        out.extend_from_slice(s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(encoding: Encoding, bytes: Vec<u8>) -> VerifyBody {
        VerifyBody {
            encoding,
            bytes: bytes.into(),
        }
    }

    fn raw(f: &Field<'_>) -> Vec<u8> {
        f.decode(String::new).unwrap()
    }

    #[test]
    fn binary_and_json_bodies_carry_the_same_items() {
        let b = body(Encoding::Binary, encode_binary(&[(b"hi", b"sig")], false));
        let item = b.single().unwrap();
        assert_eq!(
            (raw(&item.message), raw(&item.signature)),
            (b"hi".to_vec(), b"sig".to_vec())
        );
        let j = body(
            Encoding::Json,
            br#"{"message":"aGk=","signature":"c2ln"}"#.to_vec(),
        );
        let item = j.single().unwrap();
        assert_eq!(
            (raw(&item.message), raw(&item.signature)),
            (b"hi".to_vec(), b"sig".to_vec())
        );
        let b = body(
            Encoding::Binary,
            encode_binary(&[(b"a", b"b"), (b"", b"cd")], true),
        );
        let items = b.batch(8).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(raw(&items[1].message), b"");
        assert_eq!(raw(&items[1].signature), b"cd");
    }

    #[test]
    fn truncated_and_overlong_binary_bodies_name_the_field() {
        let mut bytes = encode_binary(&[(b"a", b"b"), (b"c", b"dd")], true);
        bytes.pop();
        let p = body(Encoding::Binary, bytes).batch(8).err().unwrap();
        assert_eq!(p.status, 400);
        assert_eq!(p.field.as_deref(), Some("items[1].signature"));
        let p = body(Encoding::Binary, vec![0, 0, 0])
            .single()
            .err()
            .unwrap();
        assert_eq!(p.field.as_deref(), Some("message"));
        let mut bytes = encode_binary(&[(b"a", b"b")], false);
        bytes.push(0);
        assert_eq!(
            body(Encoding::Binary, bytes).single().err().unwrap().status,
            400
        );
        // A length larger than the body is refused, not allocated.
        let p = body(Encoding::Binary, vec![0xff, 0xff, 0xff, 0xff, 1])
            .single()
            .err()
            .unwrap();
        assert!(p.detail.contains("only 1 remain"), "{}", p.detail);
    }

    #[test]
    fn batch_counts_outside_the_bounds_are_422_on_items() {
        let p = body(Encoding::Binary, encode_binary(&[], true))
            .batch(8)
            .err()
            .unwrap();
        assert_eq!((p.status, p.field.as_deref()), (422, Some("items")));
        let three = encode_binary(&[(b"a", b"b"), (b"a", b"b"), (b"a", b"b")], true);
        let p = body(Encoding::Binary, three).batch(2).err().unwrap();
        assert_eq!((p.status, p.field.as_deref()), (422, Some("items")));
        let p = body(Encoding::Json, br#"{"items":[]}"#.to_vec())
            .batch(2)
            .err()
            .unwrap();
        assert_eq!((p.status, p.field.as_deref()), (422, Some("items")));
    }

    #[test]
    fn json_errors_name_the_field_as_before() {
        let p = body(
            Encoding::Json,
            br#"{"items":[{"message":"aGk=","signature":3}]}"#.to_vec(),
        )
        .batch(8)
        .err()
        .unwrap();
        assert_eq!(p.status, 400);
        assert_eq!(p.field.as_deref(), Some("items[0].signature"));
        let p = body(Encoding::Json, br#"{"message":"aGk="}"#.to_vec())
            .single()
            .err()
            .unwrap();
        assert_eq!(p.field.as_deref(), Some("signature"));
        let p = body(
            Encoding::Json,
            br#"{"message":"aGk=","signature":"c2ln"} x"#.to_vec(),
        )
        .single()
        .err()
        .unwrap();
        assert_eq!(p.status, 400);
    }
}
