//! Tools that ask back (the stateless revision's multi round-trip requests): a `tools/call`
//! answered `input_required` is offered to the handler the user gave, and sent again with its
//! answers, a bounded number of rounds.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The most rounds one tool call may ask for input: a server that asks again after the fourth
/// answer gets the tool's failure.
pub const MAX_INPUT_ROUNDS: usize = 4;

/// The largest `input_required` result offered to a handler, in bytes: it is built into a
/// `serde_json::Value` (~17 bytes a byte), so a larger one is the tool's failure unread.
pub const MAX_INPUT_REQUEST_BYTES: usize = 256 << 10;

/// What a tool asked for before it can answer (its `input_required` result).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct InputRequests {
    /// The tool that asked.
    pub tool: String,
    /// Its `inputRequests`: each key the server's, each value a request
    /// (`{"method": "elicitation/create", "params": {…}}`, sampling, roots).
    pub requests: Map<String, Value>,
}

/// The answers a handler gives: the `inputResponses`, each under the key of the request it
/// answers; `None` declines (the model is told the tool asked for input).
pub type InputResponses = Option<Map<String, Value>>;

/// A handler of tools that ask back, as
/// [`McpDependencyBuilder::on_input_required`](super::McpDependencyBuilder::on_input_required)
/// keeps it.
pub(super) type InputHandler = Arc<
    dyn Fn(InputRequests) -> Pin<Box<dyn Future<Output = InputResponses> + Send>> + Send + Sync,
>;

/// An `input_required` result as sent back: its requests, and the state to echo.
pub(super) struct Asked {
    pub(super) requests: Map<String, Value>,
    pub(super) state: Option<String>,
}

/// Reads an `input_required` result; `None` when it is too large or not one.
pub(super) fn asked(result: &RawValue) -> Option<Asked> {
    #[derive(Deserialize)]
    struct Read {
        #[serde(default, rename = "inputRequests")]
        requests: Option<Map<String, Value>>,
        #[serde(default, rename = "requestState")]
        state: Option<String>,
    }
    if result.get().len() > MAX_INPUT_REQUEST_BYTES {
        return None;
    }
    let read: Read = serde_json::from_str(result.get()).ok()?;
    if read.requests.is_none() && read.state.is_none() {
        return None;
    }
    Some(Asked {
        requests: read.requests.unwrap_or_default(),
        state: read.state,
    })
}

/// The params of the call sent again: the first call's (`name`, `arguments`), the answers
/// and the state echoed.
pub(super) fn answered(
    first: &Map<String, Value>,
    responses: Map<String, Value>,
    state: Option<String>,
) -> Map<String, Value> {
    let mut params = first.clone();
    params.insert("inputResponses".into(), Value::Object(responses));
    match state {
        Some(state) => params.insert("requestState".into(), Value::String(state)),
        None => params.remove("requestState"),
    };
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_required_result_is_read_within_its_bound() {
        let result = RawValue::from_string(
            r#"{"resultType":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":{}}},"requestState":"s1"}"#.into(),
        )
        .unwrap();
        let read = asked(&result).unwrap();
        assert_eq!(read.state.as_deref(), Some("s1"));
        assert!(read.requests.contains_key("k"));
        let neither = RawValue::from_string(r#"{"resultType":"input_required"}"#.into()).unwrap();
        assert!(asked(&neither).is_none());
        let huge = format!(
            r#"{{"resultType":"input_required","requestState":"{}"}}"#,
            "x".repeat(MAX_INPUT_REQUEST_BYTES)
        );
        assert!(asked(&RawValue::from_string(huge).unwrap()).is_none());
        let first: Map<String, Value> =
            serde_json::from_str(r#"{"name":"t","arguments":{"q":"a"},"requestState":"old"}"#)
                .unwrap();
        let again = answered(&first, Map::new(), None);
        assert_eq!(again["name"], "t");
        assert!(again.get("requestState").is_none());
        assert_eq!(again["inputResponses"], serde_json::json!({}));
    }
}
