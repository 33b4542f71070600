//! `Stack`: the layers of a client in their one order, for any request and error. The typed
//! A2A [`Client`](crate::Client), the `HttpDependency`
//! and the `Dependency` of any call are built from it.

use std::time::Duration;

use tower::{Service, ServiceBuilder};

use std::sync::Arc;

use super::breaker::{BreakerConfig, BreakerRegistry, CircuitBreaker, CircuitBreakerLayer};
use crate::resilience::bulkhead::{Bulkhead, BulkheadLayer};
use crate::resilience::classify::{Classify, FromLayer};
use crate::resilience::hedge::{HedgeConfig, HedgeLayer};
use crate::resilience::request::Request;
use crate::resilience::retry::{RetryLayer, RetryPolicy};
use crate::resilience::timeout::{AttemptTimeoutLayer, TotalTimeoutLayer};

/// The layers of a client, stacked as
///
/// ```text
/// TotalTimeout → Retry → (Hedge) → CircuitBreaker → Bulkhead → AttemptTimeout → service
/// ```
///
/// over any service whose requests are a [`Request`] and whose error `F` can be
/// [classified](Classify) and [built by the layers](FromLayer). Each part is optional but
/// the retry layer ([`RetryPolicy::none`] turns retries off).
pub struct Stack<F> {
    /// The limit of the whole call (retries and waits included).
    pub total_timeout: Option<Duration>,
    /// The retry policy.
    pub retry: RetryPolicy<F>,
    /// Hedging, when on.
    pub hedge: Option<HedgeConfig>,
    /// The circuit breaker.
    pub breaker: Option<CircuitBreaker>,
    /// The bulkhead.
    pub bulkhead: Option<Bulkhead>,
    /// The limit of each attempt.
    pub attempt_timeout: Option<Duration>,
}

impl<F> std::fmt::Debug for Stack<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack")
            .field("total_timeout", &self.total_timeout)
            .field("retry", &self.retry)
            .field("hedge", &self.hedge)
            .field(
                "breaker",
                &self.breaker.as_ref().map(|b| b.snapshot().state),
            )
            .field("bulkhead", &self.bulkhead)
            .field("attempt_timeout", &self.attempt_timeout)
            .finish()
    }
}

impl<F> Clone for Stack<F> {
    /// The same settings; the clones share the breaker, the bulkhead and the retry budget.
    fn clone(&self) -> Self {
        Stack {
            total_timeout: self.total_timeout,
            retry: self.retry.clone(),
            hedge: self.hedge.clone(),
            breaker: self.breaker.clone(),
            bulkhead: self.bulkhead.clone(),
            attempt_timeout: self.attempt_timeout,
        }
    }
}

impl<F> Default for Stack<F> {
    /// The defaults of every client: a total timeout of 90 s, the default retry policy, no
    /// hedging, no breaker (each client names its own), the default bulkhead, and an attempt
    /// timeout of 30 s.
    fn default() -> Self {
        Stack {
            total_timeout: Some(Duration::from_secs(90)),
            retry: RetryPolicy::default(),
            hedge: None,
            breaker: None,
            bulkhead: Some(Bulkhead::default()),
            attempt_timeout: Some(Duration::from_secs(30)),
        }
    }
}

impl<F> Stack<F>
where
    F: Classify + FromLayer + Send + 'static,
{
    /// Stacks the layers over `service`. Hedges draw on the retry policy's budget.
    pub fn service<S, R>(
        self,
        service: S,
    ) -> impl Service<R, Response = S::Response, Error = F, Future: Send + 'static>
    + Clone
    + Send
    + Sync
    + 'static
    where
        S: Service<R, Error = F> + Clone + Send + Sync + 'static,
        S::Future: Send + 'static,
        S::Response: Send + 'static,
        R: Request + Send + 'static,
    {
        let budget = self.retry.shared_budget();
        let hedge = self
            .hedge
            .map(|config| HedgeLayer::new(config.budget(budget)));
        ServiceBuilder::new()
            .option_layer(self.total_timeout.map(TotalTimeoutLayer::new))
            .layer(RetryLayer::new(self.retry))
            .option_layer(hedge)
            .option_layer(self.breaker.map(CircuitBreakerLayer::new))
            .option_layer(self.bulkhead.map(BulkheadLayer::new))
            .option_layer(self.attempt_timeout.map(AttemptTimeoutLayer::new))
            .service(service)
    }
}

/// Where a client's circuit breaker comes from: every builder (the A2A client's, the
/// dependencies') offers the same three.
#[derive(Clone)]
pub(crate) enum BreakerSource {
    /// One of its own, with the default configuration.
    Own,
    /// The registry's, by the callee's name: clients of one callee share a circuit.
    Registry(BreakerRegistry),
    /// None.
    Off,
}

impl BreakerSource {
    /// The breaker for the callee `name`.
    pub(crate) fn breaker(self, name: &Arc<str>) -> Option<CircuitBreaker> {
        match self {
            BreakerSource::Own => Some(CircuitBreaker::new(name.clone(), BreakerConfig::default())),
            BreakerSource::Registry(registry) => Some(registry.get(name)),
            BreakerSource::Off => None,
        }
    }
}
