//! Metrics (through the `metrics` facade) and span fields, in one place so that every name is
//! written once. Names follow OpenTelemetry's conventions where one exists.
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `a2a.client.call.duration` | histogram, seconds | `agent`, `rpc.method`, `outcome` |
//! | `a2a.client.attempts` | histogram | `agent` |
//! | `a2a.client.retries` | counter | `agent`, `rpc.method`, `error.type` |
//! | `a2a.client.errors` | counter | `agent`, `code`, `error.type` |
//! | `a2a.server.errors` | counter | `rpc.method`, `code`, `error.type` |
//! | `a2a.breaker.state` | gauge: 0 closed, 1 half-open, 2 open, 3 isolated | `agent` |
//! | `a2a.breaker.transitions` | counter | `agent`, `from`, `to` |
//! | `a2a.breaker.rejections` | counter | `agent` |
//! | `a2a.fallback.steps` | counter | `step`, `outcome` |
//! | `a2a.degraded` | counter | `source` |
//! | `a2a.hedges` | counter | `agent`, `rpc.method` |
//!
//! `error.type` is the error's reason (`AGENT_UNAVAILABLE`, `UNREACHABLE`, …).
//!
//! Install the recorder before the first call: a retry layer registers its attempts
//! histogram on its first call and keeps the handle, so that the success path records
//! without allocating.

#[cfg(feature = "client")]
pub(crate) use client::*;

#[cfg(feature = "client")]
mod client {
    use std::borrow::Cow;
    use std::sync::Arc;
    use std::time::Duration;

    use crate::client::{ClientError, Reply};
    use crate::wire::error::A2aError;

    /// The reason a client error is known by in metrics and spans: the peer's reason for an
    /// error reply (cut like a hop's, so a peer cannot grow our labels), the local
    /// failure's otherwise.
    pub(crate) fn error_type<E: A2aError + 'static>(error: &ClientError<E>) -> String {
        error.first_hop(None).reason
    }

    /// A call through the typed client ended.
    pub(crate) fn call_ended<E: A2aError + 'static>(
        agent: &Arc<str>,
        method: Cow<'static, str>,
        elapsed: Duration,
        result: &Result<Reply<E>, ClientError<E>>,
        span: &tracing::Span,
    ) {
        let outcome = if result.is_ok() { "ok" } else { "error" };
        metrics::histogram!(
            "a2a.client.call.duration",
            "agent" => agent.clone(),
            "rpc.method" => method,
            "outcome" => outcome
        )
        .record(elapsed.as_secs_f64());
        if let Err(error) = result {
            let hop = error.first_hop(None);
            span.record("error.type", hop.reason.as_str());
            metrics::counter!(
                "a2a.client.errors",
                "agent" => agent.clone(),
                "code" => hop.code.to_string(),
                "error.type" => hop.reason
            )
            .increment(1);
        }
    }

    /// The histogram of attempts per call to `agent`, kept by a retry service.
    pub(crate) fn attempts_histogram(agent: Option<&str>) -> metrics::Histogram {
        metrics::histogram!("a2a.client.attempts", "agent" => agent.unwrap_or("").to_owned())
    }

    /// A retry is about to wait: `wait` says how long and whose delay it is.
    pub(crate) fn retry<E: A2aError + 'static>(
        agent: Option<&str>,
        method: &str,
        attempt: u32,
        error: &ClientError<E>,
        wait: crate::resilience::retry::Wait,
    ) {
        let reason = error_type(error);
        tracing::info!(
            agent,
            rpc.method = method,
            http.request.resend_count = attempt,
            error.r#type = reason.as_str(),
            delay_ms = wait.delay.as_millis() as u64,
            delay.source = wait.source.as_str(),
            "retrying"
        );
        metrics::counter!(
            "a2a.client.retries",
            "agent" => agent.unwrap_or("").to_owned(),
            "rpc.method" => method.to_owned(),
            "error.type" => reason
        )
        .increment(1);
    }
}

/// An error reply a server sent.
#[cfg(feature = "axum")]
pub(crate) fn error_sent(method: &str, code: i32, reason: &str) {
    metrics::counter!(
        "a2a.server.errors",
        "rpc.method" => method.to_owned(),
        "code" => code.to_string(),
        "error.type" => reason.to_owned()
    )
    .increment(1);
}
