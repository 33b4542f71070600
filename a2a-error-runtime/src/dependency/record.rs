//! Sending a request through a dependency's stack: within what is left of the deadline of
//! the request being served, in a span, recorded under the dependency's metric names. Every
//! kind of dependency (any call, an HTTP service) sends through here.

use std::sync::Arc;

use tower::{Service, ServiceExt};
use tracing::Instrument;

use crate::resilience::{Classify, FromLayer, Request, Timeout};

/// Sends `op` through `stack` within the inherited deadline, and records the call.
pub(super) async fn send<S, R, T, E>(name: &Arc<str>, stack: S, op: R) -> Result<T, E>
where
    S: Service<R, Response = T, Error = E>,
    R: Request,
    E: Classify + FromLayer,
{
    record(name, stack, op, None, |op, _| op, |_| None).await
}

/// [`send`] for a dependency over HTTP (`protocol`: `http`, `mcp`): `with_trace` puts the
/// trace into the call, from the call's span; `status_of` reads the status of the last reply.
pub(super) async fn send_http<S, R, T, E>(
    name: &Arc<str>,
    stack: S,
    op: R,
    protocol: &'static str,
    with_trace: impl FnOnce(R, &crate::trace::TraceContext) -> R,
    status_of: impl Fn(&Result<T, E>) -> Option<u16>,
) -> Result<T, E>
where
    S: Service<R, Response = T, Error = E>,
    R: Request,
    E: Classify + FromLayer,
{
    let prepare = |op, span: &tracing::Span| with_trace(op, &crate::trace::for_call(span));
    record(name, stack, op, Some(protocol), prepare, status_of).await
}

async fn record<S, R, T, E>(
    name: &Arc<str>,
    stack: S,
    mut op: R,
    protocol: Option<&'static str>,
    prepare: impl FnOnce(R, &tracing::Span) -> R,
    status_of: impl Fn(&Result<T, E>) -> Option<u16>,
) -> Result<T, E>
where
    S: Service<R, Response = T, Error = E>,
    R: Request,
    E: Classify + FromLayer,
{
    match crate::deadline::for_downstream() {
        Ok(Some(deadline)) => op.set_time_limit(op.time_limit().with_deadline(deadline)),
        Ok(None) => {}
        Err(()) => {
            tracing::debug!(dependency = &**name, "no time left for the dependency call");
            return Err(E::timeout(Timeout::Total));
        }
    }
    let call = crate::observe::DependencyCall::start(name, op.operation(), protocol);
    let op = prepare(op, call.span());
    let result = stack.oneshot(op).instrument(call.span().clone()).await;
    let status = status_of(&result);
    call.ended(
        result.as_ref().err().map(|error| error.failure_reason()),
        status,
    );
    result
}
