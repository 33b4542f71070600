//! `Op`: one request to a dependency through the layers, and the services at the bottom of a
//! [`Dependency`](crate::dependency::dependency::Dependency)'s stack (a closure called again for each attempt, or a
//! `tower::Service` of the caller's).

use std::borrow::Cow;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::time::Instant;
use tower::Service;

use super::failure::Failure;
use crate::resilience::{Request, TimeLimit};

/// One request to a dependency through the layers: the caller's value `T` (a request, a
/// closure), with what the layers read of it (its time limit, the dependency's name, the
/// operation, whether it may be repeated).
#[derive(Clone, Debug)]
pub struct Op<T> {
    value: T,
    target: Arc<str>,
    operation: Cow<'static, str>,
    limit: TimeLimit,
    repeatable: Option<bool>,
}

impl<T> Op<T> {
    /// `value`, sent to the dependency `target` as `operation`.
    pub fn new(value: T, target: Arc<str>, operation: impl Into<Cow<'static, str>>) -> Self {
        Op {
            value,
            target,
            operation: operation.into(),
            limit: TimeLimit::NONE,
            repeatable: None,
        }
    }

    /// The caller's value.
    pub fn value(&self) -> &T {
        &self.value
    }

    /// The caller's value, taken out.
    pub fn into_value(self) -> T {
        self.value
    }

    /// Says whether this request may be repeated after a failure that leaves open whether it
    /// ran, whatever the retry policy's table says.
    pub fn repeatable(mut self, repeatable: bool) -> Self {
        self.repeatable = Some(repeatable);
        self
    }

    /// Ends the request by `deadline` at the latest.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.limit = self.limit.with_deadline(deadline);
        self
    }
}

impl<T: Clone> Request for Op<T> {
    fn time_limit(&self) -> TimeLimit {
        self.limit
    }
    fn set_time_limit(&mut self, limit: TimeLimit) {
        self.limit = limit;
    }
    fn target(&self) -> Option<&str> {
        Some(&self.target)
    }
    fn operation(&self) -> &str {
        &self.operation
    }
    fn repeatable(&self) -> Option<bool> {
        self.repeatable
    }
}

/// The service at the bottom of a [`Dependency`](crate::dependency::dependency::Dependency)'s stack for closures: each attempt calls the
/// closure again.
pub(super) struct RunClosure<E>(pub(super) PhantomData<fn() -> E>);

impl<E> Clone for RunClosure<E> {
    fn clone(&self) -> Self {
        RunClosure(PhantomData)
    }
}

impl<F, Fut, T, E> Service<Op<F>> for RunClosure<E>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
{
    type Response = T;
    type Error = Failure<E>;
    type Future = Pin<Box<dyn Future<Output = Result<T, Failure<E>>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, op: Op<F>) -> Self::Future {
        let future = (op.value)();
        Box::pin(async move { future.await.map_err(Failure::Failed) })
    }
}

/// The service at the bottom of a [`Dependency`](crate::dependency::dependency::Dependency)'s stack over a `tower::Service` of the
/// caller's: each attempt is one call of it.
#[derive(Clone)]
pub(super) struct Unwrap<S>(pub(super) S);

impl<S, T> Service<Op<T>> for Unwrap<S>
where
    S: Service<T> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = Failure<S::Error>;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, Failure<S::Error>>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx).map_err(Failure::Failed)
    }

    fn call(&mut self, op: Op<T>) -> Self::Future {
        let future = self.0.call(op.value);
        Box::pin(async move { future.await.map_err(Failure::Failed) })
    }
}
