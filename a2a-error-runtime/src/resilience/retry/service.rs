//! `Retry`: the retrying service over any transport, and its `tower::Layer`.

use std::sync::{Arc, OnceLock};

use metrics::Histogram;
use std::task::{Context, Poll};

use tower::{Layer, Service, ServiceExt};
use tracing::Instrument;

use super::future::RetryFuture;
use super::policy::RetryPolicy;
use crate::call::{Classify, ClientError, Request};
use crate::wire::remote::RemoteError;

/// Retries calls on the service it wraps, by a [`RetryPolicy`] over the service's error type
/// `E` (read through its [`Classify`] impl), whatever the request (an A2A call, an HTTP
/// dependency's call, any [`Request`]). It keeps time only through the
/// call's own deadline (set by a [`TotalTimeout`](crate::resilience::TotalTimeout) above it or
/// by the caller): a wait that would end past it is not started. Bound each attempt with an
/// [`AttemptTimeout`](crate::resilience::AttemptTimeout) below it. Clones share the policy and
/// so its retry budget.
pub struct Retry<S, E = ClientError<RemoteError>> {
    inner: S,
    shared: Arc<Shared<E>>,
}

/// What the clones of one `Retry` and their calls share, behind one reference count.
pub(super) struct Shared<E> {
    pub(super) policy: Arc<RetryPolicy<E>>,
    // The `a2a.client.attempts` histogram of this service's agent, registered on the first
    // call: recording into a kept handle costs no label allocation per call.
    attempts: OnceLock<Histogram>,
}

impl<E> Shared<E> {
    fn new(policy: Arc<RetryPolicy<E>>) -> Arc<Self> {
        Arc::new(Shared {
            policy,
            attempts: OnceLock::new(),
        })
    }

    /// Records the attempts of a finished call.
    pub(super) fn record_attempts(&self, attempts: u32) {
        if let Some(histogram) = self.attempts.get() {
            histogram.record(f64::from(attempts));
        }
    }
}

impl<S: Clone, E> Clone for Retry<S, E> {
    fn clone(&self) -> Self {
        Retry {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl<S: std::fmt::Debug, E> std::fmt::Debug for Retry<S, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retry")
            .field("inner", &self.inner)
            .field("policy", &self.shared.policy)
            .finish()
    }
}

impl<S, E> Retry<S, E> {
    /// Wraps `inner`.
    pub fn new(inner: S, policy: RetryPolicy<E>) -> Self {
        Retry {
            inner,
            shared: Shared::new(Arc::new(policy)),
        }
    }

    /// The policy.
    pub fn policy(&self) -> &RetryPolicy<E> {
        &self.shared.policy
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

/// The `tower::Layer` that builds [`Retry`].
pub struct RetryLayer<E = ClientError<RemoteError>> {
    policy: Arc<RetryPolicy<E>>,
}

impl<E> Clone for RetryLayer<E> {
    fn clone(&self) -> Self {
        RetryLayer {
            policy: self.policy.clone(),
        }
    }
}

impl<E> std::fmt::Debug for RetryLayer<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RetryLayer").field(&self.policy).finish()
    }
}

impl<E> RetryLayer<E> {
    /// A layer applying `policy`; every service it wraps shares the policy's budget.
    pub fn new(policy: RetryPolicy<E>) -> Self {
        RetryLayer {
            policy: Arc::new(policy),
        }
    }
}

impl<S, E> Layer<S> for RetryLayer<E> {
    type Service = Retry<S, E>;

    fn layer(&self, inner: S) -> Retry<S, E> {
        Retry {
            inner,
            shared: Shared::new(self.policy.clone()),
        }
    }
}

impl<S, R, E> Service<R> for Retry<S, E>
where
    S: Service<R, Error = E> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    R: Request + Send + 'static,
    E: Classify + Send + 'static,
{
    type Response = S::Response;
    type Error = E;
    type Future = RetryFuture<S, R>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        self.shared.policy.deposit();
        self.shared
            .attempts
            .get_or_init(|| crate::observe::attempts_histogram(&request));
        // The service that was polled ready makes the first attempt; the clone stays here.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let attempt = inner.call(request.clone());
        RetryFuture::new(
            attempt,
            Retrying {
                shared: self.shared.clone(),
                inner,
                request,
            },
        )
    }
}

/// What the retries of a call need once its first attempt has failed.
pub(super) struct Retrying<S, R, E> {
    shared: Arc<Shared<E>>,
    inner: S,
    request: R,
}

impl<S, R: Request, E> Retrying<S, R, E> {
    /// Starts the call's clock: a time budget becomes a deadline from now. Starting it again
    /// changes nothing.
    pub(super) fn start_clock(&mut self) {
        let now = self.shared.policy.clock_ref().now();
        let limit = self.request.time_limit().started(now);
        self.request.set_time_limit(limit);
    }
}

impl<S, R, E> Retrying<S, R, E>
where
    S: Service<R, Error = E>,
    R: Request,
    E: Classify,
{
    /// Retries after attempt 1 failed with `error`, until success or the policy says stop.
    pub(super) async fn run(mut self, mut error: E) -> Result<S::Response, E> {
        // A first attempt that failed without waiting has not started the clock yet.
        self.start_clock();
        let Retrying {
            shared,
            mut inner,
            request,
        } = self;
        let policy = &shared.policy;
        let mut previous = policy.backoff().base;
        let mut attempt = 1;
        let result = loop {
            let Some(wait) = policy.next_delay(&request, &error, attempt, &mut previous) else {
                break Err(error);
            };
            policy.notify(attempt, &error, wait.delay);
            crate::observe::retry(&request, attempt, &error, wait.delay, wait.source.as_str());
            tokio::time::sleep(wait.delay).await;
            attempt += 1;
            let span = crate::observe::attempt_span(attempt - 1);
            let next = request.clone();
            let result = async {
                inner.ready().await?;
                inner.call(next).await
            };
            error = match result.instrument(span).await {
                Ok(reply) => break Ok(reply),
                Err(error) => error,
            };
        };
        shared.record_attempts(attempt);
        result
    }
}

impl<S, R, E> Retrying<S, R, E> {
    /// The call ended on its first attempt.
    pub(super) fn first_attempt_ended(&self) {
        self.shared.record_attempts(1);
    }
}
