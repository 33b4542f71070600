//! `StackBuilder`: the settings of a stack, written once for every kind of callee. A kind of
//! callee (an agent, an HTTP service, any call) is a [`CalleeSettings`]: what it adds to the
//! stack (its transport's settings) and its error; the setters of the layers are this file's,
//! whatever the kind, so a new kind of callee adds none.

use std::sync::Arc;
use std::time::Duration;

use super::breaker::{BreakerRegistry, CircuitBreaker};
use super::stack::{BreakerSource, Stack};
use crate::http::HttpSettings;
use crate::resilience::bulkhead::Bulkhead;
use crate::resilience::classify::{Classify, FromLayer};
use crate::resilience::hedge::{HedgeConfig, HedgeDelay};
use crate::resilience::retry::{RetryPolicy, RetrySafety};

/// What one kind of callee adds to a [`StackBuilder`]: its error (what the layers write
/// theirs in and classify), and which of its calls a hedge may start twice.
pub trait CalleeSettings {
    /// What a call to this kind of callee fails with.
    type Error: Classify + FromLayer + Send + 'static;

    /// Hedging after `delay`, for the calls of this kind that are safe to run twice at once.
    fn hedge(&self, delay: HedgeDelay) -> HedgeConfig;

    /// The HTTP settings, for a callee reached over HTTP.
    #[doc(hidden)]
    fn http(&mut self) -> Option<&mut HttpSettings> {
        None
    }
}

/// A kind of callee reached over HTTP: its builder sets a connect timeout and takes a
/// `reqwest::Client` of the caller's.
pub trait OverHttp: CalleeSettings {}

/// A kind of callee whose calls may be declared repeatable: a POST that may have run is
/// sent again only when its callee or the call says so.
pub trait Repeatable: CalleeSettings {}

/// Builds the client of one callee: the layers of [`Stack`] with their settings, and the
/// kind's own (`K`). Every client's builder is one of these
/// ([`ClientBuilder`](crate::ClientBuilder),
/// `HttpDependencyBuilder`,
/// `DependencyBuilder`), so their layers are set
/// alike: a total timeout of 90 s, the default retry policy, a breaker of its own with the
/// default configuration, the default bulkhead, an attempt timeout of 30 s, no hedging.
pub struct StackBuilder<K: CalleeSettings> {
    pub(crate) stack: Stack<K::Error>,
    pub(crate) breaker: BreakerSource,
    pub(crate) repeatable: bool,
    pub(crate) callee: K,
}

impl<K: CalleeSettings + std::fmt::Debug> std::fmt::Debug for StackBuilder<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StackBuilder")
            .field("stack", &self.stack)
            .field("repeatable", &self.repeatable)
            .field("callee", &self.callee)
            .finish_non_exhaustive()
    }
}

impl<K: CalleeSettings> StackBuilder<K> {
    /// The default stack for `callee`; its calls repeated after an ambiguous failure only as
    /// the retry policy's table says, or always when `repeatable`.
    pub(crate) fn new(callee: K, repeatable: bool) -> Self {
        StackBuilder {
            stack: Stack::default(),
            breaker: BreakerSource::Own,
            repeatable,
            callee,
        }
    }

    /// The limit of the whole call, retries and waits included (default 90 s; `None`: no
    /// limit). A wait that would end past it is not started: the call ends with its last
    /// error at once. It fires as [`Timeout::Total`](crate::resilience::classify::Timeout::Total), and what
    /// is left of it travels to the callee (to an agent as `A2A-Deadline-Ms`).
    pub fn total_timeout(mut self, limit: impl Into<Option<Duration>>) -> Self {
        self.stack.total_timeout = limit.into();
        self
    }

    /// The limit of one attempt (default 30 s; `None`: no limit). It fires as
    /// [`Timeout::Attempt`](crate::resilience::classify::Timeout::Attempt), which is retried when the call
    /// may be repeated.
    pub fn attempt_timeout(mut self, limit: impl Into<Option<Duration>>) -> Self {
        self.stack.attempt_timeout = limit.into();
        self
    }

    /// The retry policy (default [`RetryPolicy::default`]); [`RetryPolicy::none`] turns
    /// retries off and keeps the timeouts.
    pub fn retry(mut self, policy: RetryPolicy<K::Error>) -> Self {
        self.stack.retry = policy;
        self
    }

    /// Takes the circuit breaker from `registry`, by the callee's name: clients of one callee
    /// built with one registry share a circuit. By default a client has a breaker of its own
    /// with [`BreakerConfig::default`](crate::resilience::breaker::BreakerConfig), shared by
    /// its clones.
    pub fn breakers(mut self, registry: &BreakerRegistry) -> Self {
        self.breaker = BreakerSource::Registry(registry.clone());
        self
    }

    /// No circuit breaker.
    pub fn without_breaker(mut self) -> Self {
        self.breaker = BreakerSource::Off;
        self
    }

    /// The bulkhead bounding this client's calls in flight and waiting (default: one of its
    /// own, [`Bulkhead::default`]); give the clients of one callee the same bulkhead to bound
    /// them together.
    pub fn bulkhead(mut self, bulkhead: Bulkhead) -> Self {
        self.stack.bulkhead = Some(bulkhead);
        self
    }

    /// No bulkhead: calls in flight are bounded by nothing here.
    pub fn without_bulkhead(mut self) -> Self {
        self.stack.bulkhead = None;
        self
    }

    /// Hedges the calls that are safe to run twice at once (an agent's reads such as GetTask;
    /// an HTTP service's GET and HEAD; a `Dependency`'s
    /// calls named as it is): a second attempt after `delay`, the first success winning,
    /// hedges drawing on the retry policy's budget. Placed between the retry layer and the
    /// breaker, so each attempt is its own sample. Off by default.
    pub fn hedge(mut self, delay: HedgeDelay) -> Self {
        self.stack.hedge = Some(self.callee.hedge(delay));
        self
    }

    /// The stack as set, with the breaker of the callee `name`, and the callee's settings.
    pub(crate) fn finish(self, name: &Arc<str>) -> (Stack<K::Error>, Option<CircuitBreaker>, K) {
        let mut stack = self.stack;
        let breaker = self.breaker.breaker(name);
        stack.breaker = breaker.clone();
        if self.repeatable {
            stack.retry = stack.retry.other_methods(RetrySafety::Safe);
        }
        (stack, breaker, self.callee)
    }

    fn http(&mut self) -> &mut HttpSettings {
        self.callee
            .http()
            .expect("a callee that is OverHttp has HTTP settings")
    }
}

impl<K: OverHttp> StackBuilder<K> {
    /// The limit for setting up a connection (default 10 s); it fires as
    /// [`Timeout::Connect`](crate::resilience::classify::Timeout::Connect). Ignored with
    /// [`http_client`](Self::http_client), whose own setting applies.
    pub fn connect_timeout(mut self, limit: Duration) -> Self {
        self.http().connect_timeout = limit;
        self
    }

    /// Uses `client` (its pool, TLS roots, proxies, redirect policy) instead of building one.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http().own = Some(client);
        self
    }
}

impl<K: Repeatable> StackBuilder<K> {
    /// Whether calls whose method is not idempotent (a POST) may be repeated after a failure
    /// that leaves open whether they ran. A call may say otherwise for itself.
    pub fn repeatable(mut self, repeatable: bool) -> Self {
        self.repeatable = repeatable;
        self
    }
}
