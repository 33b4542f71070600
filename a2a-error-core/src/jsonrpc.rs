//! JSON-RPC 2.0 envelopes: request ids, request validation and batches, and the one writer of
//! every envelope either side sends (request, result, error). Pure data, no I/O; the server
//! and the client both stand on it.

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::A2aError;
use crate::object::WireProfile;

/// A request id: a string, a number or null (JSON-RPC 2.0 §4).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Id {
    /// `null`: the id could not be read, or the caller sent null.
    Null,
    /// A number, as its exact JSON text: `1000000000000000000000000000000` and `1.50` are
    /// echoed as sent, not as the nearest `f64`.
    Number(Box<str>),
    /// A string.
    String(String),
}

impl Id {
    /// The id as JSON text, to echo it in a response.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_json(&mut out);
        out
    }

    /// Appends the id's JSON text to `out`.
    fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Id::Null => out.extend_from_slice(b"null"),
            Id::Number(text) => out.extend_from_slice(text.as_bytes()),
            Id::String(s) => crate::data::write_str(out, s),
        }
    }

    /// The id of a JSON value, if it is of a type an id may have.
    pub fn from_value(value: &Value) -> Option<Id> {
        match value {
            Value::Null => Some(Id::Null),
            Value::Number(n) => Some(Id::Number(n.to_string().into())),
            Value::String(s) => Some(Id::String(s.clone())),
            _ => None,
        }
    }

    /// The id of a member's raw JSON text, if it is of a type an id may have.
    fn from_raw(raw: &RawValue) -> Option<Id> {
        let text = raw.get();
        match text.as_bytes().first()? {
            b'n' => Some(Id::Null),
            b'"' => string_of(raw).map(Id::String),
            b'-' | b'0'..=b'9' => Some(Id::Number(text.into())),
            _ => None,
        }
    }
}

impl From<&str> for Id {
    fn from(id: &str) -> Self {
        Id::String(id.to_owned())
    }
}

impl From<u64> for Id {
    fn from(id: u64) -> Self {
        Id::Number(id.to_string().into())
    }
}

/// A valid request.
#[derive(Clone, Debug)]
pub struct Request {
    /// `None` for a notification (no `id` member): it runs but gets no reply.
    pub id: Option<Id>,
    /// The method name.
    pub method: String,
    /// The params as JSON text (`{}` when the request had none): read only by the handler,
    /// straight into its own type.
    pub params: Box<RawValue>,
}

impl PartialEq for Request {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.method == other.method
            && self.params.get() == other.params.get()
    }
}

/// Why a request is not a valid JSON-RPC 2.0 request object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidRequest {
    /// The request's id when it could be read, else `Null`.
    pub id: Id,
    /// What is wrong, for logs.
    pub reason: &'static str,
}

/// One element of a request body.
pub type Entry = Result<Request, InvalidRequest>;

/// A parsed request body.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// One request.
    Single(Entry),
    /// A non-empty batch.
    Batch(Vec<Entry>),
    /// A batch of more requests than accepted: none of them was validated.
    BatchTooLarge(usize),
    /// `[]`: answered by one Invalid Request error.
    EmptyBatch,
    /// Not JSON (or not UTF-8, or nested too deep): answered by one Parse error.
    ParseError,
}

/// Parses and validates a request body.
///
/// Members are read from their raw JSON text, so an id is echoed exactly as it was sent. A
/// batch of more than `max_batch` requests is refused before any of them is looked at.
pub fn parse(bytes: &[u8], max_batch: usize) -> Body {
    if nesting_exceeds(bytes, MAX_DEPTH) {
        return Body::ParseError;
    }
    // One pass for the common case, a single well-formed object: reading its members checks
    // the whole text (ignored members too, and nothing may trail). Anything else (a batch,
    // a repeated member, bad JSON) takes the path below, which tells those cases apart.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
        && let Ok(text) = std::str::from_utf8(bytes)
        && let Ok(members) = serde_json::from_str::<Members<'_>>(text)
    {
        return Body::Single(validate_members(members));
    }
    parse_any(bytes, max_batch)
}

/// [`parse`] for any body (after the nesting check): a batch, a repeated member, bad JSON.
fn parse_any(bytes: &[u8], max_batch: usize) -> Body {
    let Ok(raw) = serde_json::from_slice::<&RawValue>(bytes) else {
        return Body::ParseError;
    };
    if !raw.get().starts_with('[') {
        return Body::Single(validate_raw(raw));
    }
    match serde_json::from_str::<Vec<&RawValue>>(raw.get()) {
        Ok(items) if items.is_empty() => Body::EmptyBatch,
        Ok(items) if items.len() > max_batch => Body::BatchTooLarge(items.len()),
        Ok(items) => Body::Batch(items.into_iter().map(validate_raw).collect()),
        Err(_) => Body::ParseError,
    }
}

/// The deepest nesting accepted: serde_json's own recursion limit, which reading into a
/// `RawValue` does not apply (it skips values without recursing).
const MAX_DEPTH: usize = 128;

/// Whether `bytes` nests arrays and objects deeper than `limit` (strings are skipped, so
/// brackets inside them do not count). One pass, no allocation.
fn nesting_exceeds(bytes: &[u8], limit: usize) -> bool {
    // A body with no more opening brackets than the limit cannot nest deeper: counting them
    // is a branch-free loop the compiler vectorizes, a tenth of the walk below.
    if bytes.iter().filter(|&&b| b == b'[' || b == b'{').count() <= limit {
        return false;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &byte in bytes {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// The members of a request object that JSON-RPC defines, as raw JSON text; others are
/// ignored.
#[derive(Deserialize)]
struct Members<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
}

/// A member that is there is `Some`, even when it is `null` (`"id": null` is not a
/// notification).
pub fn present<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

fn validate_raw(raw: &RawValue) -> Entry {
    if !raw.get().starts_with('{') {
        return Err(invalid(Id::Null, "a request must be an object"));
    }
    let Ok(members) = serde_json::from_str::<Members<'_>>(raw.get()) else {
        return Err(invalid(
            Id::Null,
            "a request object must not repeat a member",
        ));
    };
    validate_members(members)
}

fn validate_members(members: Members<'_>) -> Entry {
    // Read the id first so every other error can echo it.
    let id = match members.id {
        None => None,
        Some(raw) => match Id::from_raw(raw) {
            Some(id) => Some(id),
            None => return Err(invalid(Id::Null, "id must be a string, a number or null")),
        },
    };
    // Every error below echoes the id (a copy only on that path).
    let echo = |reason| Err(invalid(id.clone().unwrap_or(Id::Null), reason));
    // `"2.0"` as almost every client writes it, else read (it may be escaped).
    let version_ok = members.jsonrpc.is_some_and(|raw| {
        raw.get() == "\"2.0\""
            || serde_json::from_str::<String>(raw.get()).is_ok_and(|version| version == "2.0")
    });
    if !version_ok {
        return echo("jsonrpc must be \"2.0\"");
    }
    let Some(method) = members.method.and_then(string_of) else {
        return echo("method must be a string");
    };
    let params = match members.params {
        None => empty_params(),
        // Copied as text (the nesting was checked for the whole body): a tree would cost
        // up to ~85 times the bytes, for a method that may not even exist.
        Some(raw) if raw.get().starts_with(['{', '[']) => raw.to_owned(),
        Some(_) => return echo("params must be an object or an array"),
    };
    Ok(Request { id, method, params })
}

/// The string a member's raw JSON text holds, if it is a string. The text was read as JSON
/// already, so one without escapes is the string itself between its quotes.
fn string_of(raw: &RawValue) -> Option<String> {
    let text = raw.get();
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(inner) if !inner.contains('\\') => Some(inner.to_owned()),
        _ => serde_json::from_str(text).ok(),
    }
}

fn empty_params() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).expect("`{}` is JSON")
}

fn invalid(id: Id, reason: &'static str) -> InvalidRequest {
    InvalidRequest { id, reason }
}

/// Opens an envelope: `{"jsonrpc":"2.0","id":` (the id's JSON text comes next).
fn open(out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
}

/// Appends a request `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`; `params` is JSON text
/// sent exactly as given (omitted when empty).
pub fn write_request(id: u64, method: &str, params: &[u8], out: &mut Vec<u8>) {
    open(out);
    out.extend_from_slice(id.to_string().as_bytes());
    out.extend_from_slice(b",\"method\":");
    crate::data::write_str(out, method);
    if !params.is_empty() {
        out.extend_from_slice(b",\"params\":");
        out.extend_from_slice(params);
    }
    out.push(b'}');
}

/// Appends a success response `{"jsonrpc":"2.0","id":…,"result":…}`; `result` is JSON text.
pub fn write_result(id: &Id, result: &[u8], out: &mut Vec<u8>) {
    open(out);
    id.write_json(out);
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result);
    out.push(b'}');
}

/// Appends an error response `{"jsonrpc":"2.0","id":…,"error":{…}}`.
pub fn write_error<E: A2aError + ?Sized>(
    id: &Id,
    err: &E,
    profile: WireProfile,
    out: &mut Vec<u8>,
) {
    open(out);
    id.write_json(out);
    out.extend_from_slice(b",\"error\":");
    err.write_error_object(profile, out);
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn single(text: &str) -> Entry {
        match parse(text.as_bytes(), 100) {
            Body::Single(entry) => entry,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn valid_requests_and_notifications() {
        let call =
            single(r#"{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"},"id":7}"#).unwrap();
        assert_eq!(call.id, Some(Id::from(7)));
        assert_eq!(call.method, "GetTask");
        let note = single(r#"{"jsonrpc":"2.0","method":"m"}"#).unwrap();
        assert_eq!(note.id, None);
        assert_eq!(note.params.get(), "{}");
        let null_id = single(r#"{"jsonrpc":"2.0","method":"m","id":null}"#).unwrap();
        assert_eq!(null_id.id, Some(Id::Null), "id null is not a notification");
    }

    #[test]
    fn invalid_requests_echo_readable_ids() {
        let cases = [
            (r#"{"method":"m","id":"a"}"#, Id::from("a")),
            (r#"{"jsonrpc":"1.0","method":"m","id":1}"#, Id::from(1)),
            (r#"{"jsonrpc":"2.0","method":1,"id":"b"}"#, Id::from("b")),
            (
                r#"{"jsonrpc":"2.0","method":"m","params":"x","id":2}"#,
                Id::from(2),
            ),
            (r#"{"jsonrpc":"2.0","method":"m","id":true}"#, Id::Null),
            (r#"{"jsonrpc":"2.0","method":"m","id":{}}"#, Id::Null),
            (r#"{"jsonrpc":"2.0","method":"m","id":[1]}"#, Id::Null),
            ("1", Id::Null),
        ];
        for (text, id) in cases {
            assert_eq!(single(text).unwrap_err().id, id, "{text}");
        }
    }

    #[test]
    fn bodies() {
        assert_eq!(parse(b"[]", 100), Body::EmptyBatch);
        assert_eq!(parse(b"{\"jsonrpc\"", 100), Body::ParseError);
        assert_eq!(parse(b"\xff\xfe", 100), Body::ParseError);
        let deep = "[".repeat(10_000);
        assert_eq!(parse(deep.as_bytes(), 100), Body::ParseError);
        let balanced = format!("{}{}", "[".repeat(129), "]".repeat(129));
        assert_eq!(parse(balanced.as_bytes(), 100), Body::ParseError);
        let in_string = format!(
            r#"{{"jsonrpc":"2.0","method":"{}","id":1}}"#,
            "[".repeat(500)
        );
        assert!(matches!(
            parse(in_string.as_bytes(), 100),
            Body::Single(Ok(_))
        ));
        assert_eq!(parse(b"[1,2,3]", 2), Body::BatchTooLarge(3));
        match parse(b"[1,2]", 100) {
            Body::Batch(items) => assert!(items.iter().all(Result::is_err)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_one_pass_path_answers_as_the_general_one() {
        let cases: [&[u8]; 12] = [
            br#"{"jsonrpc":"2.0","method":"m","id":1}"#,
            b" \n{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[1],\"id\":\"a\"} \t",
            br#"{"jsonrpc":"2.0","method":"m","id":1,"id":2}"#,
            br#"{"jsonrpc":"2.0","method":"m","id":1} x"#,
            br#"{"jsonrpc":"2.0","method":"m","id":1}{}"#,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"other\":\"\xff\",\"id\":1}",
            br#"{"jsonrpc":"2.0","method":"m","other":[1,],"id":1}"#,
            br#"{"jsonrpc":"2.0","method":"m","other":{"a":[{"b":null}]},"id":1}"#,
            br#"{"jsonrpc":"2.0","method":"m","params":"x","id":3}"#,
            br#"{"jsonrpc":"2.0","method":"m","id":{}}"#,
            b"\x0c{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1}",
            br#"{"jsonrpc":"2.0","method":"m","id":1"#,
        ];
        for case in cases {
            assert_eq!(
                parse(case, 100),
                parse_any(case, 100),
                "{}",
                String::from_utf8_lossy(case)
            );
        }
        // What the general path answers, the one-pass path must too: a repeated member is
        // an invalid request; trailing text and bad UTF-8 in an ignored member are not JSON.
        assert!(matches!(parse(cases[2], 100), Body::Single(Err(_))));
        for bad in [cases[3], cases[4], cases[5], cases[6]] {
            assert_eq!(parse(bad, 100), Body::ParseError);
        }
    }

    #[test]
    fn ids_echo_exactly() {
        for text in [
            "1.50",
            "1000000000000000000000000000000",
            "-0",
            "1e400",
            "7",
        ] {
            let request = format!(r#"{{"jsonrpc":"2.0","method":"m","id":{text}}}"#);
            let id = single(&request).unwrap().id.unwrap();
            assert_eq!(id.to_json(), text.as_bytes());
        }
        let escaped = single(r#"{"jsonrpc":"2.0","method":"m","id":"a\u0041"}"#).unwrap();
        assert_eq!(escaped.id, Some(Id::from("aA")));
        assert_eq!(Id::from("a\"b").to_json(), br#""a\"b""#);
        assert_eq!(Id::Null.to_json(), b"null");
    }
}
