//! A server's replies read in place, into what this client uses: the protocol version of an
//! `initialize` result, a JSON-RPC error's code and message, a tool result's text parts (and
//! the same text of a result already read into rmcp's model, [`text_of`]). Nothing else of a reply (an error's `data`, `capabilities.experimental`,
//! a tool's `structuredContent`, its images and their base64) is built into memory: skipped
//! as it is read, so a reply costs its own bytes once (it is held whole, within the reply
//! bound), not the ~17 bytes a byte of a `serde_json::Value` tree or the ~250 bytes a part of
//! rmcp's `Vec<ContentBlock>`.

use std::borrow::Cow;
use std::fmt;

use rmcp::model::{CallToolResult, ProtocolVersion};
use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

/// What this client reads of an `initialize` result: the version the server chose. The
/// other members must be there (it is an initialize result) and are skipped unread.
#[derive(Deserialize)]
pub(super) struct Initialized {
    #[serde(rename = "protocolVersion")]
    pub(super) protocol_version: ProtocolVersion,
    #[serde(rename = "capabilities")]
    _capabilities: IgnoredAny,
    #[serde(rename = "serverInfo")]
    _server_info: IgnoredAny,
}

/// A JSON-RPC error as this client reads it: its code and message; its `data` skipped.
#[derive(Deserialize)]
pub(super) struct ErrorRead<'a> {
    pub(super) code: i64,
    #[serde(borrow, default)]
    pub(super) message: Cow<'a, str>,
}

/// What this client reads of a tool's result, in one pass: whether it is the tool's own
/// failure (`isError`, a boolean when there) and its text parts joined with newlines (each
/// part read and its text appended as it comes; other parts and every other member skipped).
#[derive(Deserialize)]
pub(super) struct ToolText {
    #[serde(default, rename = "resultType")]
    pub(super) kind: ResultType,
    #[serde(default, rename = "isError")]
    pub(super) is_error: Option<bool>,
    #[serde(default)]
    pub(super) content: Texts,
}

/// A result's `resultType`: absent (a server of an older revision) is `complete`.
#[derive(Deserialize, Default, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ResultType {
    /// The request's own result.
    #[default]
    #[serde(rename = "complete")]
    Complete,
    /// The server asks the client for input (`inputRequests`) before it can answer.
    #[serde(rename = "input_required")]
    InputRequired,
    /// A type this client does not read.
    #[serde(other)]
    Other,
}

/// What this client reads of any result before it is passed on: its type.
#[derive(Deserialize)]
pub(super) struct Typed {
    #[serde(default, rename = "resultType")]
    pub(super) kind: ResultType,
}

/// A request's answer, as its caller asked for it.
pub(super) enum Answer {
    /// The result as the server wrote it.
    Result(Box<RawValue>),
    /// A tool result's text parts joined, read with its `isError` in one pass (the
    /// result is not kept).
    Text(String),
    /// A `tools/call` result of type `input_required`, whole, for the handler that answers it.
    InputRequired(Box<RawValue>),
}

/// The text parts of a tool result's `content`, joined with newlines.
#[derive(Default)]
pub(super) struct Texts {
    pub(super) text: String,
}

impl<'de> Deserialize<'de> for Texts {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(TextsVisitor)
    }
}

struct TextsVisitor;

/// One part of a tool result's content: its type and, for a text part, its text (borrowed
/// from the reply when it has no escapes).
#[derive(Deserialize)]
struct Part<'a> {
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

impl<'de> Visitor<'de> for TextsVisitor {
    type Value = Texts;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of content parts")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut parts: A) -> Result<Texts, A::Error> {
        let mut texts = Texts::default();
        while let Some(part) = parts.next_element::<Part<'de>>()? {
            if let (true, Some(text)) = (part.kind == "text", part.text) {
                join(&mut texts.text, &text);
            }
        }
        Ok(texts)
    }
}

/// The text parts of a tool result read into rmcp's model, joined with newlines as
/// [`ToolText`] joins them.
pub(super) fn text_of(result: &CallToolResult) -> String {
    let mut text = String::new();
    for part in result.content.iter().filter_map(|part| part.as_text()) {
        join(&mut text, &part.text);
    }
    text
}

/// `part` after the text parts before it, a newline between.
fn join(text: &mut String, part: &str) {
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(part);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_text_joins_text_parts_and_skips_the_rest() {
        let result = r#"{"content":[{"type":"text","text":"a\nb"},{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"c"}],"structuredContent":{"deep":[1,2,{"x":null}]},"isError":false}"#;
        let read: ToolText = serde_json::from_str(result).unwrap();
        assert_eq!(read.content.text, "a\nb\nc");
        let empty: ToolText = serde_json::from_str(r#"{"isError":true}"#).unwrap();
        assert_eq!(
            (empty.is_error, empty.content.text.as_str()),
            (Some(true), "")
        );
        // Not a list of parts: not a tool result.
        assert!(serde_json::from_str::<ToolText>(r#"{"content":"text"}"#).is_err());
    }

    #[test]
    fn initialize_and_error_reads_take_what_is_used() {
        let init: Initialized = serde_json::from_str(
            r#"{"protocolVersion":"2025-06-18","capabilities":{"experimental":{"x":[1,2,3]}},"serverInfo":{"name":"s","version":"1"}}"#,
        )
        .unwrap();
        assert_eq!(init.protocol_version.to_string(), "2025-06-18");
        assert!(
            serde_json::from_str::<Initialized>(r#"{"protocolVersion":"2025-06-18"}"#).is_err()
        );
        let error: ErrorRead<'_> =
            serde_json::from_str(r#"{"code":-32603,"message":"boom","data":{"huge":[1,2,3]}}"#)
                .unwrap();
        assert_eq!((error.code, &*error.message), (-32603, "boom"));
    }
}
