//! `Retry`: the retrying service over any transport, and its `tower::Layer`.

use std::sync::{Arc, OnceLock};

use metrics::Histogram;
use std::task::{Context, Poll};

use tower::{Layer, Service, ServiceExt};
use tracing::Instrument;

use super::future::RetryFuture;
use super::policy::RetryPolicy;
use crate::client::{Call, ClientError, Reply};
use crate::wire::error::A2aError;
use crate::wire::remote::RemoteError;

/// Retries calls on the service it wraps, by a [`RetryPolicy`]. It keeps time only through the
/// call's own deadline (set by a [`TotalTimeout`](crate::resilience::TotalTimeout) above it or
/// by the caller): a wait that would end past it is not started. Bound each attempt with an
/// [`AttemptTimeout`](crate::resilience::AttemptTimeout) below it. Clones share the policy and
/// so its retry budget.
pub struct Retry<S, E = RemoteError> {
    inner: S,
    policy: Arc<RetryPolicy<E>>,
    // The `a2a.client.attempts` histogram of this service's agent, registered on the first
    // call: recording into a kept handle costs no label allocation per call.
    attempts: Arc<OnceLock<Histogram>>,
}

impl<S: Clone, E> Clone for Retry<S, E> {
    fn clone(&self) -> Self {
        Retry {
            inner: self.inner.clone(),
            policy: self.policy.clone(),
            attempts: self.attempts.clone(),
        }
    }
}

impl<S: std::fmt::Debug, E> std::fmt::Debug for Retry<S, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retry")
            .field("inner", &self.inner)
            .field("policy", &self.policy)
            .finish()
    }
}

impl<S, E> Retry<S, E> {
    /// Wraps `inner`.
    pub fn new(inner: S, policy: RetryPolicy<E>) -> Self {
        Retry {
            inner,
            policy: Arc::new(policy),
            attempts: Arc::default(),
        }
    }

    /// The policy.
    pub fn policy(&self) -> &RetryPolicy<E> {
        &self.policy
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

/// The `tower::Layer` that builds [`Retry`].
pub struct RetryLayer<E = RemoteError> {
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
            policy: self.policy.clone(),
            attempts: Arc::default(),
        }
    }
}

impl<S, E> Service<Call> for Retry<S, E>
where
    S: Service<Call, Response = Reply<E>, Error = ClientError<E>> + Clone + Send + 'static,
    S::Future: Send,
    E: A2aError + Send + 'static,
{
    type Response = Reply<E>;
    type Error = ClientError<E>;
    type Future = RetryFuture<S, E>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: Call) -> Self::Future {
        let policy = self.policy.clone();
        policy.deposit();
        // The service that was polled ready makes the first attempt; the clone stays here.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let attempt = inner.call(call.clone());
        RetryFuture::new(
            attempt,
            Retrying {
                attempts: self
                    .attempts
                    .get_or_init(|| crate::observe::attempts_histogram(call.agent()))
                    .clone(),
                policy,
                inner,
                call,
            },
        )
    }
}

/// What the retries of a call need once its first attempt has failed.
pub(super) struct Retrying<S, E> {
    attempts: Histogram,
    policy: Arc<RetryPolicy<E>>,
    inner: S,
    call: Call,
}

impl<S, E> Retrying<S, E> {
    /// Starts the call's clock: a time budget becomes a deadline from now. Starting it again
    /// changes nothing.
    pub(super) fn start_clock(&mut self) {
        let now = self.policy.clock_ref().now();
        self.call.start_clock(now);
    }
}

impl<S, E> Retrying<S, E>
where
    S: Service<Call, Response = Reply<E>, Error = ClientError<E>>,
    E: A2aError + 'static,
{
    /// Retries after attempt 1 failed with `error`, until success or the policy says stop.
    pub(super) async fn run(
        mut self,
        mut error: ClientError<E>,
    ) -> Result<Reply<E>, ClientError<E>> {
        // A first attempt that failed without waiting has not started the clock yet.
        self.start_clock();
        let Retrying {
            attempts: histogram,
            policy,
            mut inner,
            call,
        } = self;
        let mut previous = policy.backoff().base;
        let mut attempt = 1;
        let result = loop {
            let Some(delay) = policy.next_delay(&call, &error, attempt, &mut previous) else {
                break Err(error);
            };
            policy.notify(attempt, &error, delay);
            crate::observe::retry(call.agent(), call.method(), attempt, &error, delay);
            tokio::time::sleep(delay).await;
            attempt += 1;
            let span = tracing::debug_span!(
                "a2a.client.attempt",
                http.request.resend_count = attempt - 1
            );
            let result = async {
                inner.ready().await?;
                inner.call(call.clone()).await
            };
            error = match result.instrument(span).await {
                Ok(reply) => break Ok(reply),
                Err(error) => error,
            };
        };
        histogram.record(f64::from(attempt));
        result
    }
}

impl<S, E> Retrying<S, E> {
    /// The call ended on its first attempt.
    pub(super) fn first_attempt_ended(&self) {
        self.attempts.record(1.0);
    }
}
