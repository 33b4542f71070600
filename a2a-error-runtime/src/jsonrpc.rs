//! JSON-RPC 2.0 envelopes: request ids, request validation and batches. Pure data, no I/O;
//! the server and the client both stand on it.

use serde_json::{Number, Value};

/// A request id: a string, a number or null (JSON-RPC 2.0 §4).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Id {
    /// `null`: the id could not be read, or the caller sent null.
    Null,
    /// A number, kept exactly as sent.
    Number(Number),
    /// A string.
    String(String),
}

impl Id {
    /// The id as JSON text, to echo it in a response.
    pub fn to_json(&self) -> Vec<u8> {
        match self {
            Id::Null => b"null".to_vec(),
            Id::Number(n) => n.to_string().into_bytes(),
            Id::String(s) => serde_json::to_vec(s).unwrap_or_else(|_| b"null".to_vec()),
        }
    }

    /// The id of a JSON value, if it is of a type an id may have.
    pub fn from_value(value: &Value) -> Option<Id> {
        match value {
            Value::Null => Some(Id::Null),
            Value::Number(n) => Some(Id::Number(n.clone())),
            Value::String(s) => Some(Id::String(s.clone())),
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
        Id::Number(id.into())
    }
}

/// A valid request.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// `None` for a notification (no `id` member): it runs but gets no reply.
    pub id: Option<Id>,
    /// The method name.
    pub method: String,
    /// The params; an empty object when the request had none.
    pub params: Value,
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
pub type Entry = Result<Call, InvalidRequest>;

/// A parsed request body.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// One request.
    Single(Entry),
    /// A non-empty batch.
    Batch(Vec<Entry>),
    /// `[]`: answered by one Invalid Request error.
    EmptyBatch,
    /// Not JSON (or not UTF-8, or nested too deep): answered by one Parse error.
    ParseError,
}

/// Parses and validates a request body.
pub fn parse(bytes: &[u8]) -> Body {
    match serde_json::from_slice::<Value>(bytes) {
        Err(_) => Body::ParseError,
        Ok(Value::Array(items)) if items.is_empty() => Body::EmptyBatch,
        Ok(Value::Array(items)) => Body::Batch(items.into_iter().map(validate).collect()),
        Ok(value) => Body::Single(validate(value)),
    }
}

/// Checks one request object.
pub fn validate(value: Value) -> Entry {
    let Value::Object(mut object) = value else {
        return Err(invalid(Id::Null, "a request must be an object"));
    };
    // Read the id first so every other error can echo it.
    let id = match object.remove("id") {
        None => None,
        Some(value) => match Id::from_value(&value) {
            Some(id) => Some(id),
            None => return Err(invalid(Id::Null, "id must be a string, a number or null")),
        },
    };
    let echo = id.clone().unwrap_or(Id::Null);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(echo, "jsonrpc must be \"2.0\""));
    }
    let method = match object.remove("method") {
        Some(Value::String(method)) => method,
        _ => return Err(invalid(echo, "method must be a string")),
    };
    let params = match object.remove("params") {
        None => Value::Object(Default::default()),
        Some(params @ (Value::Object(_) | Value::Array(_))) => params,
        Some(_) => return Err(invalid(echo, "params must be an object or an array")),
    };
    Ok(Call { id, method, params })
}

fn invalid(id: Id, reason: &'static str) -> InvalidRequest {
    InvalidRequest { id, reason }
}

/// Appends a success response `{"jsonrpc":"2.0","id":…,"result":…}`; `result` is JSON text.
pub fn write_result(id: &Id, result: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(&id.to_json());
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result);
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn single(text: &str) -> Entry {
        match parse(text.as_bytes()) {
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
        assert_eq!(note.params, serde_json::json!({}));
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
        assert_eq!(parse(b"[]"), Body::EmptyBatch);
        assert_eq!(parse(b"{\"jsonrpc\""), Body::ParseError);
        assert_eq!(parse(b"\xff\xfe"), Body::ParseError);
        let deep = "[".repeat(10_000);
        assert_eq!(parse(deep.as_bytes()), Body::ParseError);
        match parse(b"[1,2]") {
            Body::Batch(items) => assert!(items.iter().all(Result::is_err)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ids_echo_exactly() {
        assert_eq!(
            Id::Number(serde_json::from_str("1.50").unwrap()).to_json(),
            b"1.5"
        );
        assert_eq!(Id::from("a\"b").to_json(), br#""a\"b""#);
        assert_eq!(Id::Null.to_json(), b"null");
    }
}
