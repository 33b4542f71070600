//! The W3C trace context of the request being served, sent on with every call made for it.
//!
//! The server reads a caller's `traceparent` and `tracestate` (the JSON-RPC endpoint, and the
//! SDK bridge on its three bindings) and runs the handler inside that trace, as a span of its
//! own: the same trace id, a new span id. Every call made inside it (to an agent over any
//! binding, or to an HTTP dependency) sends the trace on from a new span id, with
//! `tracestate` unchanged. A request without a valid `traceparent` starts a trace of its own.
//! Like the deadline, it is a task-local: tasks a handler spawns do not inherit it (use
//! [`with_trace`] in them); the bridge carries it into the SDK's executor task itself.
//!
//! The trace id travels with the `tracing` facade alone: the server's log lines carry it as
//! `trace_id`.

use std::future::Future;

pub use crate::wire::trace::{
    MAX_TRACESTATE, TRACEPARENT_HEADER, TRACESTATE_HEADER, TraceContext, TraceId,
};

tokio::task_local! {
    static CURRENT: TraceContext;
}

/// The trace context of the request being served, when there is one.
pub fn current() -> Option<TraceContext> {
    CURRENT.try_with(Clone::clone).ok()
}

/// Runs `future` inside `context`'s trace: the calls made inside it send that trace on. For
/// tasks a handler spawns, and for servers of your own.
pub async fn with_trace<F: Future>(context: TraceContext, future: F) -> F::Output {
    CURRENT.scope(context, future).await
}

/// Runs `future` inside `context`'s trace; a plain function returning the scoped future, as
/// the deadline's are, so that a handler's future is not held twice.
#[cfg(feature = "axum")]
pub(crate) fn scope<F: Future>(
    context: TraceContext,
    future: F,
) -> tokio::task::futures::TaskLocalFuture<TraceContext, F> {
    CURRENT.scope(context, future)
}

/// Runs `f` inside `context`'s trace: for code that runs before any future is polled (an SDK
/// executor's `execute` may fail at once, and its error is logged as it is converted).
#[cfg(feature = "sdk")]
pub(crate) fn sync_scope<R>(context: TraceContext, f: impl FnOnce() -> R) -> R {
    CURRENT.sync_scope(context, f)
}

/// What a call made now sends: the trace being served, from a new span of ours; else a new
/// trace.
#[cfg(feature = "client")]
pub(crate) fn for_outgoing() -> TraceContext {
    CURRENT
        .try_with(TraceContext::child)
        .unwrap_or_else(|_| TraceContext::root())
}

/// Puts `trace` into a call's `headers` (`traceparent`, and `tracestate` when it has one),
/// unless they already carry a `traceparent` of the caller's own, which wins. The one place a
/// call's trace headers are written, for agents and dependencies alike.
#[cfg(feature = "client")]
pub(crate) fn insert(headers: &mut reqwest::header::HeaderMap, trace: &TraceContext) {
    use reqwest::header::{HeaderName, HeaderValue};
    const PARENT: HeaderName = HeaderName::from_static(TRACEPARENT_HEADER);
    const STATE: HeaderName = HeaderName::from_static(TRACESTATE_HEADER);
    if headers.contains_key(PARENT) {
        return;
    }
    if let Ok(parent) = HeaderValue::from_str(&trace.traceparent()) {
        headers.insert(PARENT, parent);
        // Printable ASCII by construction: always a header value.
        if let Some(state) = trace
            .tracestate()
            .and_then(|s| HeaderValue::from_str(s).ok())
        {
            headers.insert(STATE, state);
        }
    }
}

/// The trace a request served now runs in: the caller's (`traceparent`, exactly one, and its
/// `tracestate`), as a span of ours; else a new trace. Headers beyond the bounds of
/// [`TraceContext::parse`] are ignored, never an error.
#[cfg(feature = "axum")]
pub(crate) fn from_headers(headers: &axum::http::HeaderMap) -> TraceContext {
    let mut parents = headers.get_all(TRACEPARENT_HEADER).iter();
    let (Some(parent), None) = (parents.next(), parents.next()) else {
        // None, or several: W3C reads several as none.
        return TraceContext::root();
    };
    // Several `tracestate` headers are one list; only one is passed on, whole or not at all.
    let mut states = headers.get_all(TRACESTATE_HEADER).iter();
    let state = match (states.next(), states.next()) {
        (Some(state), None) => Some(state.as_bytes()),
        _ => None,
    };
    TraceContext::parse(parent.as_bytes(), state)
        .map_or_else(TraceContext::root, |caller| caller.child())
}
