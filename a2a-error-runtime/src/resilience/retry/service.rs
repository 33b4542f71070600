//! `Retry`: the retrying service over any transport, and its `tower::Layer`.

use std::sync::Arc;

use std::task::{Context, Poll};

use tower::{Layer, Service};

use super::future::RetryFuture;
use super::policy::RetryPolicy;
use super::retrying::{Retrying, Shared};
use crate::resilience::classify::Classify;
use crate::resilience::request::Request;

/// Retries calls on the service it wraps, by a [`RetryPolicy`] over the service's error type
/// `E` (read through its [`Classify`] impl), whatever the request (an A2A call, an HTTP
/// dependency's call, any [`Request`]). It keeps time only through the
/// call's own deadline (set by a [`TotalTimeout`](crate::resilience::timeout::TotalTimeout) above it or
/// by the caller): a wait that would end past it is not started. Bound each attempt with an
/// [`AttemptTimeout`](crate::resilience::timeout::AttemptTimeout) below it. Clones share the policy and
/// so its retry budget.
pub struct Retry<S, E> {
    inner: S,
    shared: Arc<Shared<E>>,
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
pub struct RetryLayer<E> {
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
        self.shared.attempts.get_or_init(|| {
            crate::observe::attempts_histogram(crate::resilience::request::observed(&request))
        });
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
