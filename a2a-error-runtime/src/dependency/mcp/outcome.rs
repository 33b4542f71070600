//! `ToolOutcome`: a tool call as the model is told of it. The tool's own text when it
//! answered or failed by itself; a short fixed text when it could not be reached, never the
//! server's internals.

use std::borrow::Cow;

use rmcp::model::CallToolResult;

use super::error::{McpError, McpFailure};
use super::read::text_of;
use crate::dependency::failure::Failure;
use crate::dependency::http::HttpFailure;
use crate::resilience::{Classify, Timeout};

/// What became of a tool call, ready to be shown to a model
/// ([`for_model`](ToolOutcome::for_model)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolOutcome {
    /// The tool answered: the text parts of its result, joined with newlines.
    Answered(String),
    /// The tool ran and reported its own failure (`isError: true`): its text, at most
    /// [`TOOL_TEXT_BYTES`](super::TOOL_TEXT_BYTES), cut at a character boundary.
    Failed(String),
    /// The tool could not be used: why, in a word.
    Unavailable(Unavailable),
}

/// Why a tool could not be used.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Unavailable {
    /// No connection, a lost one, a server error or an answer that was not MCP.
    Down,
    /// No answer in time (the attempt's limit, or the caller's deadline).
    TimedOut,
    /// Its circuit (or its server's) is open, or too many calls are in flight: not called.
    CircuitOpen,
    /// The server refused the request (an unknown tool, invalid arguments, a 4xx, or the
    /// stateless revision's -32020, -32021, -32022).
    Refused,
    /// Refused for load (429, 503) after the retries.
    Busy,
}

impl Unavailable {
    /// Its name: `down`, `timed out`, `circuit open`, `refused`, `busy`.
    pub fn as_str(self) -> &'static str {
        match self {
            Unavailable::Down => "down",
            Unavailable::TimedOut => "timed out",
            Unavailable::CircuitOpen => "circuit open",
            Unavailable::Refused => "refused",
            Unavailable::Busy => "busy",
        }
    }

    /// Why a call that failed with `error` could not use its tool.
    pub fn of(error: &McpError) -> Unavailable {
        match error {
            Failure::Timeout(Timeout::Connect) => Unavailable::Down,
            Failure::Timeout(_) => Unavailable::TimedOut,
            Failure::CircuitOpen { .. } | Failure::BulkheadFull => Unavailable::CircuitOpen,
            Failure::Failed(McpFailure::Http(HttpFailure::Status(status)))
                if matches!(status.status, 429 | 503 | 529) =>
            {
                Unavailable::Busy
            }
            Failure::Failed(McpFailure::Rpc(error)) if error.is_rejection() => Unavailable::Refused,
            Failure::Failed(failure) if failure.is_refusal() => Unavailable::Refused,
            _ => Unavailable::Down,
        }
    }
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ToolOutcome {
    /// What a tool call's result says for the model: a tool's own failure (`isError`) is
    /// [`Failed`](ToolOutcome::Failed) with its text, any other failure
    /// [`Unavailable`](ToolOutcome::Unavailable).
    pub fn of(result: Result<CallToolResult, McpError>) -> ToolOutcome {
        match result {
            Ok(result) => ToolOutcome::Answered(text_of(&result)),
            Err(Failure::Failed(McpFailure::Tool(error))) => ToolOutcome::Failed(error.text),
            Err(error) => ToolOutcome::Unavailable(Unavailable::of(&error)),
        }
    }

    /// The text for the model: `tool: {text}`, `tool error: {text}`, or `tool unavailable`
    /// (the tool's own text only; nothing of the server's otherwise).
    pub fn for_model(&self) -> Cow<'_, str> {
        match self {
            ToolOutcome::Answered(text) => Cow::Owned(format!("tool: {text}")),
            ToolOutcome::Failed(text) => Cow::Owned(format!("tool error: {text}")),
            ToolOutcome::Unavailable(_) => Cow::Borrowed("tool unavailable"),
        }
    }

    /// Whether the answer built on it is degraded: the tool failed or could not be used.
    pub fn is_degraded(&self) -> bool {
        !matches!(self, ToolOutcome::Answered(_))
    }

    /// The degraded mark's value for the tool, in one call: `None` when it answered,
    /// `Some("error")` when it reported its own failure (or asked for input no handler gave),
    /// `Some("unavailable")` when it could not be used. Put under `"tool"` in the answer's
    /// mark (`forwarded.degraded("tool", mark)`).
    pub fn degraded_mark(&self) -> Option<&'static str> {
        match self {
            ToolOutcome::Answered(_) => None,
            ToolOutcome::Failed(_) => Some("error"),
            ToolOutcome::Unavailable(_) => Some("unavailable"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dependency::http::StatusFailure;
    use crate::dependency::mcp::error::{RpcError, ToolError};

    #[test]
    fn each_failure_is_told_to_the_model_without_the_servers_text() {
        let tool = Failure::Failed(McpFailure::Tool(ToolError {
            text: "no rows".into(),
        }));
        assert_eq!(
            ToolOutcome::of(Err(tool)).for_model(),
            "tool error: no rows"
        );
        let rpc = Failure::Failed(McpFailure::Rpc(RpcError::new(-32603, "/srv/secret.py")));
        let told = ToolOutcome::of(Err(rpc));
        assert_eq!(told, ToolOutcome::Unavailable(Unavailable::Down));
        assert_eq!(told.for_model(), "tool unavailable");
        assert_eq!(told.degraded_mark(), Some("unavailable"));
        assert_eq!(ToolOutcome::Answered("x".into()).degraded_mark(), None);
        assert_eq!(
            ToolOutcome::Failed("x".into()).degraded_mark(),
            Some("error")
        );
        let unknown = Failure::Failed(McpFailure::Rpc(RpcError::new(-32602, "x")));
        assert_eq!(
            ToolOutcome::of(Err(unknown)),
            ToolOutcome::Unavailable(Unavailable::Refused)
        );
        let busy = Failure::Failed(McpFailure::Http(HttpFailure::Status(StatusFailure::read(
            503,
            &Default::default(),
            b"",
            std::time::SystemTime::now(),
        ))));
        assert_eq!(Unavailable::of(&busy), Unavailable::Busy);
        assert_eq!(
            Unavailable::of(&Failure::Timeout(Timeout::Attempt)),
            Unavailable::TimedOut
        );
        assert_eq!(
            Unavailable::of(&Failure::CircuitOpen {
                retry_after: Default::default()
            }),
            Unavailable::CircuitOpen
        );
    }
}
