//! `CircuitBreakerService`: a breaker in a tower stack, each call through it one sample.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tower::{Layer, Service};

use super::{CircuitBreaker, Permit};
use crate::resilience::classify::{Classify, FromLayer, Outcome, Scope};
use crate::resilience::request::Request;

/// Guards the service it wraps with a [`CircuitBreaker`]: an open circuit fails calls at once
/// with the error type's [`FromLayer::circuit_open`] (`ClientError::CircuitOpen` for calls to
/// agents), carrying the time until it half-opens. A request that carries a breaker of its own
/// operation ([`Request::breaker`]: one tool of an MCP server) must pass both, and its
/// failure counts for the one its [`scope`](Classify::scope) names. Any request and any error that can be
/// [classified](Classify) go through it. Place it below
/// a [`Retry`](crate::resilience::retry::Retry) so that each attempt is one sample, and above an
/// [`AttemptTimeout`](crate::resilience::timeout::AttemptTimeout) so that a slow attempt counts.
#[derive(Clone, Debug)]
pub struct CircuitBreakerService<S> {
    inner: S,
    breaker: CircuitBreaker,
}

impl<S> CircuitBreakerService<S> {
    /// Guards `inner` with `breaker`.
    pub fn new(inner: S, breaker: CircuitBreaker) -> Self {
        CircuitBreakerService { inner, breaker }
    }

    /// The breaker.
    pub fn breaker(&self) -> &CircuitBreaker {
        &self.breaker
    }
}

/// The `tower::Layer` that builds [`CircuitBreakerService`]; every service it wraps shares
/// the one breaker.
#[derive(Clone, Debug)]
pub struct CircuitBreakerLayer {
    breaker: CircuitBreaker,
}

impl CircuitBreakerLayer {
    /// A layer guarding with `breaker`.
    pub fn new(breaker: CircuitBreaker) -> Self {
        CircuitBreakerLayer { breaker }
    }
}

impl<S> Layer<S> for CircuitBreakerLayer {
    type Service = CircuitBreakerService<S>;

    fn layer(&self, inner: S) -> CircuitBreakerService<S> {
        CircuitBreakerService::new(inner, self.breaker.clone())
    }
}

impl<S, R> Service<R> for CircuitBreakerService<S>
where
    S: Service<R>,
    S::Error: Classify + FromLayer,
    R: Request,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BreakerFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: R) -> Self::Future {
        let admitted = self.breaker.try_acquire().and_then(|permit| {
            // The callee's permit, dropped unreported if the operation's circuit is open.
            let own = call
                .breaker()
                .map(CircuitBreaker::try_acquire)
                .transpose()?;
            Ok((permit, own))
        });
        match admitted {
            Ok((permit, own)) => BreakerFuture {
                state: State::Admitted {
                    future: self.inner.call(call),
                },
                permit: Some(permit),
                own,
            },
            Err(open) => BreakerFuture {
                state: State::Rejected {
                    retry_after: Some(open.retry_after),
                },
                permit: None,
                own: None,
            },
        }
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Admitted { #[pin] future: F },
        Rejected { retry_after: Option<std::time::Duration> },
    }
}

pin_project! {
    /// The future of a call through [`CircuitBreakerService`]. Dropped before it finishes,
    /// it counts as nothing, and a half-open probe gives its slot back.
    pub struct BreakerFuture<F> {
        #[pin]
        state: State<F>,
        permit: Option<Permit>,
        // The permit of the request's own operation's breaker, when it has one.
        own: Option<Permit>,
    }
}

impl<F, T, E> Future for BreakerFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Classify + FromLayer,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match this.state.project() {
            StateProj::Rejected { retry_after } => {
                Poll::Ready(Err(E::circuit_open(retry_after.take().unwrap_or_default())))
            }
            StateProj::Admitted { future } => {
                let result = std::task::ready!(future.poll(cx));
                // With an operation's breaker, a failure counts for the one its scope names;
                // the other permit is dropped, counting nothing.
                let (callee, operation) = match (&result, this.own.take()) {
                    (Ok(_), own) => (
                        Some(Outcome::Success),
                        own.map(|own| (own, Outcome::Success)),
                    ),
                    (Err(error), None) => (Some(error.health()), None),
                    (Err(error), Some(own)) => match error.scope() {
                        Scope::Callee => (Some(error.health()), None),
                        Scope::Operation => (None, Some((own, error.health()))),
                    },
                };
                if let (Some(permit), Some(outcome)) = (this.permit.take(), callee) {
                    permit.record(outcome);
                }
                if let Some((own, outcome)) = operation {
                    own.record(outcome);
                }
                Poll::Ready(result)
            }
        }
    }
}
