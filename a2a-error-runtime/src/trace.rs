//! The W3C trace context of the request being served, sent on with every call made for it.
//!
//! The server reads a caller's `traceparent` and `tracestate` (the JSON-RPC endpoint, and the
//! SDK bridge on its three bindings) and runs the handler inside that trace, as a span of its
//! own: the same trace id, a new span id. Every call made inside it (to an agent over any
//! binding, or to an HTTP dependency) sends the trace on from a new span id, with
//! `tracestate` unchanged. A request without a valid `traceparent` starts a trace of its own.
//! Like the deadline, it is a task-local (one holds both): tasks a handler spawns do not
//! inherit it (use [`with_trace`] in them); the bridge carries it into the SDK's executor
//! task itself.
//!
//! The trace id travels with the `tracing` facade alone: the server's log lines carry it as
//! `trace_id`. Each request served is an `a2a.server.call` span and each call an
//! `a2a.client.call` (or `a2a.dependency.call`) span, at `DEBUG`, named and attributed as
//! OpenTelemetry's RPC conventions say ([`observe`](crate::observe) lists them).
//!
//! With the `otel` feature and a `tracing-opentelemetry` layer installed, those spans are
//! OpenTelemetry's and form one trace across processes: a served request's span takes the
//! caller's `traceparent` as its parent, a call sends its own span's id on, and the trace id
//! the log lines carry is OpenTelemetry's. Without the layer (or with the spans filtered
//! out) the ids are made here, as without the feature.

use std::future::Future;

pub use crate::wire::trace::{
    MAX_TRACESTATE, TRACEPARENT_HEADER, TRACESTATE_HEADER, TraceContext, TraceId,
};

/// The trace context of the request being served, when there is one.
pub fn current() -> Option<TraceContext> {
    crate::inherited::read(|inherited| inherited.trace.clone()).flatten()
}

/// Runs `future` inside `context`'s trace: the calls made inside it send that trace on. For
/// tasks a handler spawns, and for servers of your own.
pub async fn with_trace<F: Future>(context: TraceContext, future: F) -> F::Output {
    scope(context, future).await
}

/// Runs `future` inside `context`'s trace (the deadline in force, read now, is kept); a
/// plain function returning the scoped future, as the deadline's are, so that a handler's
/// future is not held twice.
#[doc(hidden)]
pub fn scope<F: Future>(
    context: TraceContext,
    future: F,
) -> tokio::task::futures::TaskLocalFuture<crate::inherited::Inherited, F> {
    crate::inherited::scope(crate::deadline::served(context, None), future)
}

/// What a call whose span is `span` sends: the trace being served, from that span (its
/// OpenTelemetry id with `otel`, else a new id of ours); else a new trace.
#[cfg(feature = "client")]
pub(crate) fn for_call(span: &tracing::Span) -> TraceContext {
    let current = current();
    #[cfg(feature = "otel")]
    if let Some(sent) = otel::for_call(span, current.as_ref()) {
        return sent;
    }
    let _ = span;
    current.map_or_else(TraceContext::root, |current| current.child())
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

/// The caller's trace context, from its `traceparent` and `tracestate` values when each came
/// exactly once (W3C reads several `traceparent` as none; several `tracestate` are one list,
/// and only one is passed on, whole or not at all).
#[cfg(feature = "axum")]
pub(crate) fn caller_by(
    parent: Option<&axum::http::HeaderValue>,
    state: Option<&axum::http::HeaderValue>,
) -> Option<TraceContext> {
    TraceContext::parse(parent?.as_bytes(), state.map(|state| state.as_bytes()))
}

/// [`served`], of the caller's context as [`caller_by`] read it.
#[cfg(feature = "axum")]
pub(crate) fn served_as(caller: Option<&TraceContext>, span: &tracing::Span) -> TraceContext {
    #[cfg(feature = "otel")]
    if let Some(ours) = otel::served(span, caller) {
        return ours;
    }
    let _ = span;
    caller.map_or_else(TraceContext::root, TraceContext::child)
}

/// Our trace context and OpenTelemetry's, kept one: the spans of `tracing-opentelemetry` take
/// their parents from ours where `tracing` alone cannot tell them (a caller in another
/// process, a task the SDK spawned), and ours takes its ids from theirs.
#[cfg(feature = "otel")]
mod otel {
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState,
    };
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    use super::TraceContext;

    /// A served request's context from its span, whose parent is the `caller`'s span; `None`
    /// when the span is not OpenTelemetry's (no layer, or filtered out).
    #[cfg(feature = "axum")]
    pub(super) fn served(
        span: &tracing::Span,
        caller: Option<&TraceContext>,
    ) -> Option<TraceContext> {
        if span.is_disabled() {
            return None;
        }
        if let Some(caller) = caller {
            set_parent(span, caller);
        }
        context_of(span, caller.and_then(TraceContext::state))
    }

    /// A call's context from its span. The span's parent is the current span when that is in
    /// the trace being served; else (a task the SDK spawned for an executor, a task of the
    /// user's under [`with_trace`](super::with_trace)) the span `current` names.
    #[cfg(feature = "client")]
    pub(super) fn for_call(
        span: &tracing::Span,
        current: Option<&TraceContext>,
    ) -> Option<TraceContext> {
        if span.is_disabled() {
            return None;
        }
        if let Some(current) = current {
            let here = tracing::Span::current().context();
            let here = here.span().span_context().trace_id().to_bytes();
            if here != current.parts().0 {
                set_parent(span, current);
            }
        }
        context_of(span, current.and_then(TraceContext::state))
    }

    /// Makes `parent` (a span in another process, or one of ours out of `tracing`'s reach)
    /// the parent of `span`, which must not have started.
    fn set_parent(span: &tracing::Span, parent: &TraceContext) {
        let (trace_id, span_id, flags) = parent.parts();
        let remote = SpanContext::new(
            TraceId::from_bytes(trace_id),
            SpanId::from_bytes(span_id),
            TraceFlags::new(flags),
            true,
            TraceState::NONE,
        );
        // Fails only for a span OpenTelemetry does not see, which then has no parent to take.
        let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
    }

    /// `span`'s OpenTelemetry ids as our context, with `state` (the caller's, passed on
    /// unchanged); starts the span.
    fn context_of(
        span: &tracing::Span,
        state: Option<std::sync::Arc<str>>,
    ) -> Option<TraceContext> {
        let context = span.context();
        let span = context.span();
        let ids = span.span_context();
        if !ids.is_valid() {
            return None;
        }
        TraceContext::from_parts(
            ids.trace_id().to_bytes(),
            ids.span_id().to_bytes(),
            ids.trace_flags().to_u8(),
            state,
        )
    }
}
