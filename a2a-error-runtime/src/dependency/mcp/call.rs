//! `McpCall`: one MCP request through the layers (its method, its parameters serialized once,
//! the tool it calls and that tool's breaker), and the cancellations its attempts left behind.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::HeaderMap;
use tokio::task::JoinHandle;

use crate::resilience::breaker::CircuitBreaker;
use crate::resilience::{Request, TimeLimit};

/// The methods that read and change nothing: repeated after any transient failure.
const SAFE_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
];

/// The longest wait, after a call ends, for the `notifications/cancelled` its attempts sent:
/// enough for it to leave before the caller answers, never a hang on a server that does not
/// answer it.
pub(super) const CANCEL_WAIT: Duration = Duration::from_millis(250);

/// One request to an MCP server: what the layers read of it, and what each attempt sends.
#[derive(Clone, Debug)]
pub(super) struct McpCall {
    pub(super) method: Cow<'static, str>,
    /// The request's `params` (an attempt may add its progress token).
    pub(super) params: Option<Arc<serde_json::Map<String, serde_json::Value>>>,
    /// The tool a `tools/call` calls (its name as the server listed it, or as asked).
    pub(super) tool: Option<Arc<str>>,
    pub(super) target: Arc<str>,
    pub(super) limit: TimeLimit,
    pub(super) repeatable: Option<bool>,
    pub(super) breaker: Option<CircuitBreaker>,
    /// Only a tool result's text is wanted: read in the attempt, with `isError`, in one
    /// pass over the result (see [`Answer`](super::read::Answer)).
    pub(super) text_only: bool,
    /// A handler answers a tool's `input_required` result: the result is the call's answer,
    /// not the tool's failure.
    pub(super) asks: bool,
    /// The trace headers, from the call's span.
    pub(super) headers: HeaderMap,
    pub(super) cancels: Cancels,
}

impl McpCall {
    pub(super) fn new(target: Arc<str>, method: impl Into<Cow<'static, str>>) -> Self {
        let method = method.into();
        let repeatable = SAFE_METHODS.contains(&&*method).then_some(true);
        McpCall {
            method,
            params: None,
            tool: None,
            target,
            limit: TimeLimit::NONE,
            repeatable,
            breaker: None,
            text_only: false,
            asks: false,
            headers: HeaderMap::new(),
            cancels: Cancels::default(),
        }
    }
}

impl Request for McpCall {
    fn time_limit(&self) -> TimeLimit {
        self.limit
    }
    fn set_time_limit(&mut self, limit: TimeLimit) {
        self.limit = limit;
    }
    fn target(&self) -> Option<&str> {
        Some(&self.target)
    }
    fn operation(&self) -> &str {
        &self.method
    }
    fn repeatable(&self) -> Option<bool> {
        self.repeatable
    }
    fn breaker(&self) -> Option<&CircuitBreaker> {
        self.breaker.as_ref()
    }
}

/// The `notifications/cancelled` that a call's attempts sent (each its own task, so that a
/// caller who goes away still cancels), waited for before the call answers.
#[derive(Clone, Debug, Default)]
pub(super) struct Cancels(Arc<Mutex<Vec<JoinHandle<()>>>>);

impl Cancels {
    pub(super) fn push(&self, sent: JoinHandle<()>) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(sent);
    }

    /// Waits (at most [`CANCEL_WAIT`] in all) for the cancellations sent so far.
    pub(super) async fn sent(&self) {
        let pending = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        if pending.is_empty() {
            return;
        }
        let all = futures_util::future::join_all(pending);
        let _ = tokio::time::timeout(CANCEL_WAIT, all).await;
    }
}
