//! `Dependency`: any call (an async closure, any `tower::Service`) under the same layers as
//! calls to agents; its builder, one call's options, and a service under its layers.

use std::borrow::Cow;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::time::Instant;
use tower::Service;
use tower::util::BoxCloneSyncService;

use super::failure::Failure;
use super::op::{Op, RunClosure, Unwrap};
use super::record::send;
use crate::resilience::Classify;
use crate::resilience::breaker::CircuitBreaker;
use crate::resilience::{CalleeSettings, HedgeConfig, HedgeDelay, Repeatable, Stack, StackBuilder};

/// A dependency of the agent that is not an A2A agent or an HTTP service (a database, a
/// queue, an SDK of its own): its calls, async closures or a `tower::Service`, go through the
/// same layers as calls to agents (total and attempt timeouts, retries with the budget, the
/// breaker, the bulkhead, hedging), classified by their error's [`Classify`] impl. A call
/// ends in its value or a [`Failure<E>`].
///
/// Calls may be repeated by default: wrapping a call in a dependency is the caller's statement
/// that its classification decides (say otherwise per dependency with
/// [`DependencyBuilder::repeatable`], per call with [`Dependency::op`]). Inside a handler of
/// this crate's server, or an executor the SDK bridge runs, a call inherits what is left of
/// the request's deadline.
///
/// ```
/// # use a2a_error_runtime as a2a_error;
/// use std::time::SystemTime;
/// use a2a_error::RetryHint;
/// use a2a_error::resilience::Classify;
/// use a2a_error::dependency::{Dependency, Failure};
///
/// /// The database's own error: a busy database may be asked again.
/// #[derive(Debug)]
/// struct Busy;
///
/// impl Classify for Busy {
///     fn retry_advice_at(&self, _: SystemTime) -> RetryHint {
///         RetryHint::Backoff
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let db: Dependency<Busy> = Dependency::builder("orders-db").build();
/// let tries = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
/// let rows: Result<u32, Failure<Busy>> = db
///     .run(move || {
///         let tries = tries.clone();
///         async move {
///             match tries.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
///                 0 => Err(Busy),
///                 _ => Ok(3),
///             }
///         }
///     })
///     .await;
/// assert_eq!(rows.unwrap(), 3);
/// # }
/// ```
pub struct Dependency<E> {
    name: Arc<str>,
    stack: Arc<Stack<Failure<E>>>,
    breaker: Option<CircuitBreaker>,
    repeatable: bool,
}

impl<E> Clone for Dependency<E> {
    fn clone(&self) -> Self {
        Dependency {
            name: self.name.clone(),
            stack: self.stack.clone(),
            breaker: self.breaker.clone(),
            repeatable: self.repeatable,
        }
    }
}

impl<E> std::fmt::Debug for Dependency<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dependency")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<E> Dependency<E>
where
    E: Classify + Send + 'static,
{
    /// A builder for the dependency named `name` (in metrics, logs and breaker registries).
    pub fn builder(name: impl Into<Arc<str>>) -> DependencyBuilder<E> {
        let settings = OpSettings {
            name: name.into(),
            error: PhantomData,
        };
        // Wrapping a call in a dependency is the caller's statement that its classification
        // decides: repeatable unless said otherwise.
        StackBuilder::new(settings, true)
    }

    /// The dependency's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The dependency's circuit breaker, when it has one.
    pub fn breaker(&self) -> Option<&CircuitBreaker> {
        self.breaker.as_ref()
    }

    /// Runs `f` through the layers: each attempt calls it again.
    pub async fn run<F, Fut, T>(&self, f: F) -> Result<T, Failure<E>>
    where
        F: Fn() -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        T: Send + 'static,
    {
        self.op(self.name.to_string()).run(f).await
    }

    /// A call named `operation` (for the retry policy's table, logs and metrics), to set
    /// per-call options on before running it.
    pub fn op(&self, operation: impl Into<Cow<'static, str>>) -> OpCall<'_, E> {
        OpCall {
            dependency: self,
            operation: operation.into(),
            repeatable: self.repeatable,
            deadline: None,
        }
    }

    /// `service` under this dependency's layers: a `tower::Service` of the same requests,
    /// which ends in a [`Failure`] of its error. Build it once and clone it; its clones share
    /// the breaker, the bulkhead and the retry budget.
    pub fn service<S, T>(&self, service: S) -> DependencyService<T, S::Response, S::Error>
    where
        S: Service<T, Error = E> + Clone + Send + Sync + 'static,
        S::Future: Send + 'static,
        S::Response: Send + 'static,
        T: Clone + Send + Sync + 'static,
    {
        let stack = Stack::clone(&self.stack).service(Unwrap(service));
        DependencyService {
            inner: BoxCloneSyncService::new(stack),
            name: self.name.clone(),
            repeatable: self.repeatable,
        }
    }
}

/// One call of a [`Dependency`], with its own options.
pub struct OpCall<'a, E> {
    dependency: &'a Dependency<E>,
    operation: Cow<'static, str>,
    repeatable: bool,
    deadline: Option<Instant>,
}

impl<E> std::fmt::Debug for OpCall<'_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpCall")
            .field("operation", &self.operation)
            .field("repeatable", &self.repeatable)
            .finish_non_exhaustive()
    }
}

impl<E> OpCall<'_, E>
where
    E: Classify + Send + 'static,
{
    /// Whether this call may be repeated after a failure that leaves open whether it ran.
    pub fn repeatable(mut self, repeatable: bool) -> Self {
        self.repeatable = repeatable;
        self
    }

    /// Ends this call by `deadline` at the latest.
    pub fn deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Runs `f` through the layers: each attempt calls it again.
    pub async fn run<F, Fut, T>(self, f: F) -> Result<T, Failure<E>>
    where
        F: Fn() -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        T: Send + 'static,
    {
        let dependency = self.dependency;
        let mut op =
            Op::new(f, dependency.name.clone(), self.operation).repeatable(self.repeatable);
        if let Some(deadline) = self.deadline {
            op = op.with_deadline(deadline);
        }
        let stack = Stack::clone(&dependency.stack).service(RunClosure::<E>(PhantomData));
        send(&dependency.name, stack, op).await
    }
}

/// A `tower::Service` of the caller's under a [`Dependency`]'s layers
/// ([`Dependency::service`]).
pub struct DependencyService<T, U, E> {
    inner: BoxCloneSyncService<Op<T>, U, Failure<E>>,
    name: Arc<str>,
    repeatable: bool,
}

impl<T, U, E> Clone for DependencyService<T, U, E> {
    fn clone(&self) -> Self {
        DependencyService {
            inner: self.inner.clone(),
            name: self.name.clone(),
            repeatable: self.repeatable,
        }
    }
}

impl<T, U, E> std::fmt::Debug for DependencyService<T, U, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DependencyService")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<T, U, E> Service<T> for DependencyService<T, U, E>
where
    T: Clone + Send + 'static,
    U: Send + 'static,
    E: Classify + Send + 'static,
{
    type Response = U;
    type Error = Failure<E>;
    type Future = Pin<Box<dyn Future<Output = Result<U, Failure<E>>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Readiness is the stack's, per call.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: T) -> Self::Future {
        let op =
            Op::new(request, self.name.clone(), self.name.to_string()).repeatable(self.repeatable);
        let inner = self.inner.clone();
        let name = self.name.clone();
        Box::pin(async move { send(&name, inner, op).await })
    }
}

/// Builds a [`Dependency`]. Defaults as the A2A client's: a total timeout of 90 s, an attempt
/// timeout of 30 s, the default retry policy (4 attempts, full-jitter backoff, a shared retry
/// budget), a breaker of its own with the default configuration, the default bulkhead; its
/// calls repeatable. The layers' setters are [`StackBuilder`]'s, the same for every kind of
/// callee.
pub type DependencyBuilder<E> = StackBuilder<OpSettings<E>>;

/// What a [`DependencyBuilder`] adds to the stack: the dependency's name.
pub struct OpSettings<E> {
    name: Arc<str>,
    error: PhantomData<fn() -> E>,
}

impl<E> std::fmt::Debug for OpSettings<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpSettings")
            .field("name", &self.name)
            .finish()
    }
}

impl<E> CalleeSettings for OpSettings<E>
where
    E: Classify + Send + 'static,
{
    type Error = Failure<E>;

    /// The calls whose operation is the dependency's name (only for calls safe to run twice
    /// at once).
    fn hedge(&self, delay: HedgeDelay) -> HedgeConfig {
        HedgeConfig::new(delay).methods([self.name.to_string()])
    }
}

/// Calls may be repeated by default; say otherwise per dependency or per call
/// ([`OpCall::repeatable`]).
impl<E> Repeatable for OpSettings<E> where E: Classify + Send + 'static {}

impl<E> DependencyBuilder<E>
where
    E: Classify + Send + 'static,
{
    /// Builds the dependency.
    pub fn build(self) -> Dependency<E> {
        let repeatable = self.repeatable;
        let name = self.callee.name.clone();
        let (stack, breaker, _) = self.finish(&name);
        Dependency {
            name,
            stack: Arc::new(stack),
            breaker,
            repeatable,
        }
    }
}
