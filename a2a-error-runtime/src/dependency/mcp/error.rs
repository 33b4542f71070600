//! `McpFailure` and its classification: MCP's meaning kept (a JSON-RPC error, a tool's own
//! `isError` result, a session the server forgot), the HTTP below it read as every HTTP
//! dependency's is.

use std::fmt;
use std::time::{Duration, SystemTime};

use crate::dependency::failure::Failure;
use crate::dependency::http::HttpFailure;
use crate::resilience::{Classify, Outcome, Scope};
use crate::wire::error::RetryHint;

/// What a call to an MCP server ends in: its own [`McpFailure`], or a layer's (a timeout, an
/// open circuit (the server's or the tool's), a full bulkhead).
pub type McpError = Failure<McpFailure>;

/// The most of a tool's own error text kept (`isError: true`), in bytes, cut at a character
/// boundary: what the model is shown of it.
pub const TOOL_TEXT_BYTES: usize = 4096;

/// The most of a JSON-RPC error's message kept for logs, in bytes. Never shown to the model
/// or passed on.
const MESSAGE_BYTES: usize = 256;

/// How one attempt on an MCP server failed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum McpFailure {
    /// Below the protocol: no connection, a lost one, an HTTP status (429 and 503 refused
    /// for load, a 404 for a session the server forgot even after a new one), a reply too
    /// large or not JSON. Classified as every HTTP dependency's failures are.
    Http(HttpFailure),
    /// The server answered the request with a JSON-RPC error.
    Rpc(RpcError),
    /// The tool ran and reported its own failure (`isError: true`): its text, for the model.
    Tool(ToolError),
    /// The reply was JSON but not the answer to the request (no result, another id).
    Protocol {
        /// What was wrong, for logs.
        detail: String,
    },
}

/// A JSON-RPC error the server answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    /// The error's code.
    pub code: i64,
    /// The start of its message (at most 256 bytes, control characters escaped), for logs
    /// only: never shown to the model or passed on.
    pub message: String,
}

impl RpcError {
    /// The error of `code` with `message` kept for logs (cut and escaped).
    pub fn new(code: i64, message: &str) -> Self {
        RpcError {
            code,
            message: crate::wire::text::Shown::new(message, MESSAGE_BYTES).to_string(),
        }
    }

    /// Whether the server refused the request itself (-32700 parse error, -32600 invalid
    /// request, -32601 no such method, -32602 invalid params): sent again it is refused
    /// again, and the server is up.
    pub fn is_refusal(&self) -> bool {
        matches!(self.code, -32700 | -32600 | -32601 | -32602)
    }

    /// Whether the server refused to speak with this client, the stateless revision's errors
    /// (-32020 a header that disagrees with the body, -32021 a client capability it requires,
    /// -32022 a protocol version it does not speak): nothing ran, sent again it is refused
    /// again, and it counts against the server.
    pub fn is_rejection(&self) -> bool {
        matches!(self.code, -32022..=-32020)
    }
}

/// A tool's own failure (`isError: true`): the text parts of its content joined with
/// newlines, at most [`TOOL_TEXT_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// The tool's text.
    pub text: String,
}

impl Classify for McpFailure {
    fn retry_advice_at(&self, now: SystemTime) -> RetryHint {
        match self {
            McpFailure::Http(failure) => failure.retry_advice_at(now),
            McpFailure::Rpc(error) if error.is_refusal() || error.is_rejection() => {
                RetryHint::Never
            }
            // -32603 and the server's own range: transient, the request may have run.
            McpFailure::Rpc(_) => RetryHint::Backoff,
            // The tool said no: the same call fails the same way.
            McpFailure::Tool(_) | McpFailure::Protocol { .. } => RetryHint::Never,
        }
    }

    fn may_have_run(&self) -> bool {
        match self {
            McpFailure::Http(failure) => failure.may_have_run(),
            McpFailure::Rpc(error) => !error.is_refusal() && !error.is_rejection(),
            McpFailure::Tool(_) | McpFailure::Protocol { .. } => true,
        }
    }

    fn health(&self) -> Outcome {
        match self {
            McpFailure::Http(failure) => failure.health(),
            McpFailure::Rpc(error) if error.is_refusal() => Outcome::Success,
            McpFailure::Rpc(_) | McpFailure::Tool(_) | McpFailure::Protocol { .. } => {
                Outcome::Failure
            }
        }
    }

    /// A failure below the protocol, or the server's refusal to speak with this client
    /// (-32020..-32022), is the server's; an error the server answered for one request (a
    /// JSON-RPC error, a tool's `isError`) is that tool's.
    fn scope(&self) -> Scope {
        match self {
            McpFailure::Http(_) | McpFailure::Protocol { .. } => Scope::Callee,
            McpFailure::Rpc(error) if error.is_rejection() => Scope::Callee,
            McpFailure::Rpc(_) | McpFailure::Tool(_) => Scope::Operation,
        }
    }

    fn failure_reason(&self) -> &str {
        match self {
            McpFailure::Http(failure) => failure.failure_reason(),
            McpFailure::Rpc(error) => match error.code {
                -32700 => "PARSE_ERROR",
                -32600 => "INVALID_REQUEST",
                -32601 => "METHOD_NOT_FOUND",
                -32602 => "INVALID_PARAMS",
                -32603 => "INTERNAL_ERROR",
                -32020 => "HEADER_MISMATCH",
                -32021 => "MISSING_CLIENT_CAPABILITY",
                -32022 => "UNSUPPORTED_PROTOCOL_VERSION",
                _ => "SERVER_ERROR",
            },
            McpFailure::Tool(_) => "TOOL_ERROR",
            McpFailure::Protocol { .. } => "INVALID_RESPONSE",
        }
    }

    fn delay_at(&self, now: SystemTime) -> Option<Duration> {
        self.retry_advice_at(now).delay()
    }
}

impl fmt::Display for McpFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpFailure::Http(failure) => failure.fmt(f),
            McpFailure::Rpc(error) => write!(f, "JSON-RPC error {}: {}", error.code, error.message),
            McpFailure::Tool(_) => f.write_str("the tool reported an error"),
            McpFailure::Protocol { detail } => write!(f, "not an MCP reply: {detail}"),
        }
    }
}

impl std::error::Error for McpFailure {}

impl From<HttpFailure> for McpFailure {
    fn from(failure: HttpFailure) -> Self {
        McpFailure::Http(failure)
    }
}

/// `text` cut to at most `max` bytes at a character boundary, nothing added (in place).
pub(super) fn cut(mut text: String, max: usize) -> String {
    text.truncate(crate::wire::text::cut(&text, max).len());
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_rpc_errors_are_refusals_or_transient_as_json_rpc_says() {
        let now = SystemTime::UNIX_EPOCH;
        for code in [-32700, -32600, -32601, -32602] {
            let failure = McpFailure::Rpc(RpcError::new(code, "no"));
            assert!(!failure.retry_advice_at(now).is_retryable(), "{code}");
            assert!(!failure.may_have_run(), "{code}");
            assert_eq!(failure.health(), Outcome::Success, "{code}");
        }
        for code in [-32603, -32000, -32099, -32002] {
            let failure = McpFailure::Rpc(RpcError::new(code, "busy"));
            assert!(failure.retry_advice_at(now).is_retryable(), "{code}");
            assert!(failure.may_have_run(), "{code}");
            assert_eq!(failure.scope(), Scope::Operation, "{code}");
        }
    }

    #[test]
    fn the_stateless_revisions_errors_are_refusals_counted_against_the_server() {
        let now = SystemTime::UNIX_EPOCH;
        for code in [-32020, -32021, -32022] {
            let failure = McpFailure::Rpc(RpcError::new(code, "no"));
            assert!(!failure.retry_advice_at(now).is_retryable(), "{code}");
            assert!(!failure.may_have_run(), "{code}");
            assert_eq!(failure.health(), Outcome::Failure, "{code}");
            assert_eq!(failure.scope(), Scope::Callee, "{code}");
        }
        assert_eq!(
            McpFailure::Rpc(RpcError::new(-32022, "")).failure_reason(),
            "UNSUPPORTED_PROTOCOL_VERSION"
        );
    }

    #[test]
    fn a_tool_error_is_the_tools_and_never_retried() {
        let failure = McpFailure::Tool(ToolError { text: "no".into() });
        assert!(!failure.retry_advice_at(SystemTime::now()).is_retryable());
        assert_eq!(failure.health(), Outcome::Failure);
        assert_eq!(failure.scope(), Scope::Operation);
        let refused = McpFailure::Http(HttpFailure::Connect {
            detail: String::new(),
        });
        assert_eq!(refused.scope(), Scope::Callee);
        assert!(!refused.may_have_run());
    }

    #[test]
    fn text_is_cut_at_a_character_boundary() {
        assert_eq!(cut("aé".repeat(3), 4), "aéa");
        assert_eq!(cut("é".into(), 1), "");
        assert_eq!(cut("abc".into(), 10), "abc");
    }

    #[test]
    fn a_servers_message_is_kept_only_escaped_and_cut() {
        let error = RpcError::new(-32603, &"\u{1b}[31m/srv/secret\n".repeat(100));
        assert!(error.message.len() <= MESSAGE_BYTES * 10 + 32);
        assert!(!error.message.contains('\n') && !error.message.contains('\u{1b}'));
    }
}
