//! `Retry`: the decorator over any transport, and its `tower::Layer`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Layer, Service, ServiceExt};

use super::policy::RetryPolicy;
use crate::client::{Call, ClientError, Reply, Timeout};
use crate::error::A2aError;
use crate::remote::RemoteError;

/// Retries calls on the service it wraps, by a [`RetryPolicy`], and enforces its attempt and
/// total timeouts. The whole call's deadline goes down with the call (transports send it as
/// `A2A-Deadline-Ms`). Clones share the policy and so its retry budget.
pub struct Retry<S, E = RemoteError> {
    inner: S,
    policy: Arc<RetryPolicy<E>>,
}

impl<S: Clone, E> Clone for Retry<S, E> {
    fn clone(&self) -> Self {
        Retry {
            inner: self.inner.clone(),
            policy: self.policy.clone(),
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

/// The `tower::Layer` that wraps a transport in [`Retry`].
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
        }
    }
}

type CallFuture<E> = Pin<Box<dyn Future<Output = Result<Reply<E>, ClientError<E>>> + Send>>;

impl<S, E> Service<Call> for Retry<S, E>
where
    S: Service<Call, Response = Reply<E>, Error = ClientError<E>> + Clone + Send + 'static,
    S::Future: Send,
    E: A2aError + Send + 'static,
{
    type Response = Reply<E>;
    type Error = ClientError<E>;
    type Future = CallFuture<E>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: Call) -> Self::Future {
        // The service that was polled ready makes the first attempt; the clone stays here.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(run(self.policy.clone(), inner, call))
    }
}

async fn run<S, E>(
    policy: Arc<RetryPolicy<E>>,
    mut inner: S,
    mut call: Call,
) -> Result<Reply<E>, ClientError<E>>
where
    S: Service<Call, Response = Reply<E>, Error = ClientError<E>>,
    E: A2aError + 'static,
{
    let start = policy.clock_ref().now();
    if let Some(total) = policy.total_limit() {
        call = call.with_deadline(start + total);
    }
    policy.deposit();
    let mut previous = policy.backoff().base;
    let mut attempt = 1;
    loop {
        let error = match attempt_once(&policy, &mut inner, &call, attempt == 1).await {
            Ok(reply) => return Ok(reply),
            Err(error) => error,
        };
        let Some(delay) = policy.next_delay(&call, &error, attempt, &mut previous) else {
            return Err(error);
        };
        policy.notify(attempt, &error, delay);
        tracing::debug!(
            method = call.method(),
            attempt,
            delay_ms = delay.as_millis() as u64,
            error = %DisplayCode(&error),
            "retrying"
        );
        tokio::time::sleep(delay).await;
        attempt += 1;
    }
}

/// One attempt, bounded by the attempt limit and the call's deadline.
async fn attempt_once<S, E>(
    policy: &RetryPolicy<E>,
    inner: &mut S,
    call: &Call,
    first: bool,
) -> Result<Reply<E>, ClientError<E>>
where
    S: Service<Call, Response = Reply<E>, Error = ClientError<E>>,
{
    let attempt_end = policy
        .attempt_limit()
        .map(|limit| policy.clock_ref().now() + limit);
    let (end, fired) = match (attempt_end, call.deadline()) {
        (Some(a), Some(d)) if a < d => (Some(a), Timeout::Attempt),
        (_, Some(d)) => (Some(d), Timeout::Total),
        (a, None) => (a, Timeout::Attempt),
    };
    let exchange = async {
        if !first {
            inner.ready().await?;
        }
        inner.call(call.clone()).await
    };
    match end {
        None => exchange.await,
        Some(end) => match tokio::time::timeout_at(end, exchange).await {
            Ok(result) => result,
            Err(_) => Err(ClientError::Timeout(fired)),
        },
    }
}

/// Code and reason, for the retry log line; never the peer's message.
struct DisplayCode<'a, E>(&'a ClientError<E>);

impl<E: A2aError + 'static> std::fmt::Display for DisplayCode<'_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.0.code(), self.0.reason())
    }
}
