//! `Retry`: the decorator over any transport, and its `tower::Layer`.

use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::time::Instant;
use tower::{Layer, Service, ServiceExt};

use super::future::ResponseFuture;
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

impl<S, E> Service<Call> for Retry<S, E>
where
    S: Service<Call, Response = Reply<E>, Error = ClientError<E>> + Clone + Send + 'static,
    S::Future: Send,
    E: A2aError + Send + 'static,
{
    type Response = Reply<E>;
    type Error = ClientError<E>;
    type Future = ResponseFuture<S, E>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut call: Call) -> Self::Future {
        let policy = self.policy.clone();
        // The clock is read only once the first attempt has to wait (see `ResponseFuture`).
        if let Some(total) = policy.total_limit() {
            call = call.with_budget(total);
        }
        policy.deposit();
        // The service that was polled ready makes the first attempt; the clone stays here.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let attempt = inner.call(call.clone());
        ResponseFuture::new(
            attempt,
            Retrying {
                policy,
                inner,
                call,
            },
        )
    }
}

/// When the attempt starting at `now` must end, and which timeout that is.
fn attempt_end<E>(
    policy: &RetryPolicy<E>,
    call: &Call,
    now: Instant,
) -> Option<(Instant, Timeout)> {
    let attempt = policy
        .attempt_limit()
        .and_then(|limit| now.checked_add(limit));
    Timeout::first(attempt.map(|at| (at, Timeout::Attempt)), call.deadline())
}

/// What the retries of a call need once its first attempt has failed.
pub(super) struct Retrying<S, E> {
    policy: Arc<RetryPolicy<E>>,
    inner: S,
    call: Call,
}

impl<S, E> Retrying<S, E> {
    /// Starts the call's clock: the total limit becomes a deadline from now. Returns when the
    /// first attempt must end, and which timeout that is. Starting it again changes nothing:
    /// a call keeps the earlier of two deadlines.
    pub(super) fn start_clock(&mut self) -> Option<(Instant, Timeout)> {
        let now = self.policy.clock_ref().now();
        // A limit too far away to be an `Instant` is no limit.
        if let Some(end) = self.policy.total_limit().and_then(|t| now.checked_add(t)) {
            self.call = self.call.clone().with_deadline(end);
        }
        attempt_end(&self.policy, &self.call, now)
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
            policy,
            mut inner,
            call,
        } = self;
        let mut previous = policy.backoff().base;
        let mut attempt = 1;
        loop {
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
            let end = attempt_end(&policy, &call, policy.clock_ref().now());
            error = match attempt_once(&mut inner, &call, end).await {
                Ok(reply) => return Ok(reply),
                Err(error) => error,
            };
        }
    }
}

/// One retry, bounded by the attempt limit or the call's deadline, whichever comes first.
async fn attempt_once<S, E>(
    inner: &mut S,
    call: &Call,
    end: Option<(Instant, Timeout)>,
) -> Result<Reply<E>, ClientError<E>>
where
    S: Service<Call, Response = Reply<E>, Error = ClientError<E>>,
{
    let exchange = async {
        inner.ready().await?;
        inner.call(call.clone()).await
    };
    match end {
        None => exchange.await,
        Some((end, fired)) => match tokio::time::timeout_at(end, exchange).await {
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
