//! `Op` and `Dependency`: any call (an async closure, any `tower::Service`) under the same
//! layers as calls to agents.

use std::borrow::Cow;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceExt};

use super::failure::Failure;
use crate::call::{Classify, Request, TimeLimit, Timeout};
use crate::resilience::breaker::{BreakerRegistry, CircuitBreaker};
use crate::resilience::{
    BreakerSource, Bulkhead, HedgeConfig, HedgeDelay, RetryPolicy, RetrySafety, Stack,
};

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

/// The service at the bottom of a [`Dependency`]'s stack for closures: each attempt calls the
/// closure again.
struct RunClosure<E>(PhantomData<fn() -> E>);

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

/// The service at the bottom of a [`Dependency`]'s stack over a `tower::Service` of the
/// caller's: each attempt is one call of it.
#[derive(Clone)]
struct Unwrap<S>(S);

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
/// use a2a_error::client::Classify;
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
    layers: Arc<Layers<E>>,
    breaker: Option<CircuitBreaker>,
}

impl<E> Clone for Dependency<E> {
    fn clone(&self) -> Self {
        Dependency {
            name: self.name.clone(),
            layers: self.layers.clone(),
            breaker: self.breaker.clone(),
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

/// What a dependency's stack is made of, kept to stack it over each call's closure type.
struct Layers<E> {
    total_timeout: Option<Duration>,
    retry: RetryPolicy<Failure<E>>,
    hedge: Option<HedgeConfig>,
    bulkhead: Option<Bulkhead>,
    attempt_timeout: Option<Duration>,
    repeatable: bool,
}

impl<E> Layers<E> {
    fn stack(&self, breaker: Option<CircuitBreaker>) -> Stack<Failure<E>> {
        Stack {
            total_timeout: self.total_timeout,
            retry: self.retry.clone(),
            hedge: self.hedge.clone(),
            breaker,
            bulkhead: self.bulkhead.clone(),
            attempt_timeout: self.attempt_timeout,
        }
    }
}

impl<E> Dependency<E>
where
    E: Classify + Send + 'static,
{
    /// A builder for the dependency named `name` (in metrics, logs and breaker registries).
    pub fn builder(name: impl Into<Arc<str>>) -> DependencyBuilder<E> {
        DependencyBuilder {
            name: name.into(),
            stack: Stack::default(),
            breaker: BreakerSource::Own,
            repeatable: true,
        }
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
            repeatable: self.layers.repeatable,
            deadline: None,
        }
    }

    /// `service` under this dependency's layers: a `tower::Service` of the same requests,
    /// which ends in a [`Failure`] of its error. Build it once and clone it; its clones share
    /// the breaker, the bulkhead and the retry budget.
    pub fn service<S, T>(&self, service: S) -> Guarded<T, S::Response, S::Error>
    where
        S: Service<T, Error = E> + Clone + Send + Sync + 'static,
        S::Future: Send + 'static,
        S::Response: Send + 'static,
        T: Clone + Send + Sync + 'static,
    {
        let stack = self
            .layers
            .stack(self.breaker.clone())
            .service(Unwrap(service));
        Guarded {
            inner: BoxCloneSyncService::new(stack),
            name: self.name.clone(),
            repeatable: self.layers.repeatable,
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
        let stack = dependency
            .layers
            .stack(dependency.breaker.clone())
            .service(RunClosure::<E>(PhantomData));
        send(&dependency.name, stack, op).await
    }
}

/// Sends `op` through `stack` within the inherited deadline, and records the call.
pub(super) async fn send<S, R, T, E>(name: &Arc<str>, stack: S, op: R) -> Result<T, E>
where
    S: Service<R, Response = T, Error = E>,
    R: Request,
    E: Classify + crate::call::FromLayer,
{
    record(name, stack, op, None, |op, _| op, |_| None).await
}

/// [`send`] for an HTTP dependency: `with_trace` puts the trace into the call, from the
/// call's span; `status_of` reads the status of the last reply.
pub(super) async fn send_http<S, R, T, E>(
    name: &Arc<str>,
    stack: S,
    op: R,
    with_trace: impl FnOnce(R, &crate::trace::TraceContext) -> R,
    status_of: impl Fn(&Result<T, E>) -> Option<u16>,
) -> Result<T, E>
where
    S: Service<R, Response = T, Error = E>,
    R: Request,
    E: Classify + crate::call::FromLayer,
{
    let prepare = |op, span: &tracing::Span| with_trace(op, &crate::trace::for_call(span));
    record(name, stack, op, Some("http"), prepare, status_of).await
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
    E: Classify + crate::call::FromLayer,
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
    call.ended(result.as_ref().err(), status);
    result
}

use tracing::Instrument;

/// A `tower::Service` of the caller's under a [`Dependency`]'s layers
/// ([`Dependency::service`]).
pub struct Guarded<T, U, E> {
    inner: BoxCloneSyncService<Op<T>, U, Failure<E>>,
    name: Arc<str>,
    repeatable: bool,
}

impl<T, U, E> Clone for Guarded<T, U, E> {
    fn clone(&self) -> Self {
        Guarded {
            inner: self.inner.clone(),
            name: self.name.clone(),
            repeatable: self.repeatable,
        }
    }
}

impl<T, U, E> std::fmt::Debug for Guarded<T, U, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guarded")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<T, U, E> Service<T> for Guarded<T, U, E>
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
/// budget), a breaker of its own with the default configuration, the default bulkhead.
pub struct DependencyBuilder<E> {
    name: Arc<str>,
    stack: Stack<Failure<E>>,
    breaker: BreakerSource,
    repeatable: bool,
}

impl<E> std::fmt::Debug for DependencyBuilder<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DependencyBuilder")
            .field("name", &self.name)
            .field("stack", &self.stack)
            .finish_non_exhaustive()
    }
}

impl<E> DependencyBuilder<E>
where
    E: Classify + Send + 'static,
{
    /// The limit of the whole call, retries and waits included (`None`: no limit).
    pub fn total_timeout(mut self, limit: impl Into<Option<Duration>>) -> Self {
        self.stack.total_timeout = limit.into();
        self
    }

    /// The limit of each attempt (`None`: no limit); it fires as [`Timeout::Attempt`], which
    /// is retried.
    pub fn attempt_timeout(mut self, limit: impl Into<Option<Duration>>) -> Self {
        self.stack.attempt_timeout = limit.into();
        self
    }

    /// The retry policy ([`RetryPolicy::none`] turns retries off).
    pub fn retry(mut self, policy: RetryPolicy<Failure<E>>) -> Self {
        self.stack.retry = policy;
        self
    }

    /// Whether the dependency's calls may be repeated after a failure that leaves open
    /// whether they ran (default: yes). A call may say otherwise ([`OpCall::repeatable`]).
    pub fn repeatable(mut self, repeatable: bool) -> Self {
        self.repeatable = repeatable;
        self
    }

    /// Takes the circuit breaker from `registry`, by the dependency's name.
    pub fn breakers(mut self, registry: &BreakerRegistry) -> Self {
        self.breaker = BreakerSource::Registry(registry.clone());
        self
    }

    /// No circuit breaker.
    pub fn without_breaker(mut self) -> Self {
        self.breaker = BreakerSource::Off;
        self
    }

    /// The bulkhead (default: one of its own, [`Bulkhead::default`]).
    pub fn bulkhead(mut self, bulkhead: Bulkhead) -> Self {
        self.stack.bulkhead = Some(bulkhead);
        self
    }

    /// No bulkhead.
    pub fn without_bulkhead(mut self) -> Self {
        self.stack.bulkhead = None;
        self
    }

    /// Hedges calls whose operation is the dependency's name after `delay`, the first success
    /// winning, hedges drawing on the retry budget. Only for calls safe to run twice at once.
    pub fn hedge(mut self, delay: HedgeDelay) -> Self {
        self.stack.hedge = Some(HedgeConfig::new(delay).methods([self.name.to_string()]));
        self
    }

    /// Builds the dependency.
    pub fn build(self) -> Dependency<E> {
        let breaker = self.breaker.breaker(&self.name);
        let mut retry = self.stack.retry;
        if self.repeatable {
            retry = retry.other_methods(RetrySafety::Safe);
        }
        Dependency {
            layers: Arc::new(Layers {
                total_timeout: self.stack.total_timeout,
                retry,
                hedge: self.stack.hedge,
                bulkhead: self.stack.bulkhead,
                attempt_timeout: self.stack.attempt_timeout,
                repeatable: self.repeatable,
            }),
            name: self.name,
            breaker,
        }
    }
}
