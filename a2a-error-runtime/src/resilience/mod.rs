//! Floor 2: tower layers over any service, one idea each, stacked by every client (the typed
//! A2A client, the HTTP dependency client, a `Dependency`
//! around any call) through [`Stack`] as
//!
//! ```text
//! TotalTimeout → Retry → CircuitBreaker → Bulkhead → AttemptTimeout → transport
//! ```
//!
//! and, across agents, `FanOut` (several at once, `min_results` of them needed) and
//! [`Fallback`] (the primary, then alternates, then a default).
//!
//! [`TotalTimeoutLayer`] gives the whole call a time budget, which travels down with the
//! `Call` (transports send what is left as `A2A-Deadline-Ms`).
//! [`RetryLayer`] tries again by a [`RetryPolicy`]: attempts, backoff with jitter, the peer's
//! requested delay, a retry budget shared across calls, per-method safety; it never starts a
//! wait that would end past the call's deadline. [`breaker::CircuitBreakerLayer`] fails
//! attempts fast while an agent is unwell. [`BulkheadLayer`] bounds the calls in flight to
//! an agent and those waiting. [`AttemptTimeoutLayer`] bounds each attempt.
//! Each works alone and in any stack of your own (`tower::ServiceBuilder`), over any request
//! that is a [`Request`] and any error that can be
//! [classified](crate::resilience::Classify): the one reading of a failure every layer consults.

pub mod breaker;
mod builder;
mod bulkhead;
mod classify;
mod clock;
mod fallback;
mod hedge;
mod request;
pub(crate) mod retry;
mod stack;
mod timeout;

pub use builder::{CalleeSettings, OverHttp, Repeatable, StackBuilder};
pub use bulkhead::{Bulkhead, BulkheadLayer, BulkheadService};
pub(crate) use classify::health_of;
pub use classify::{Classify, FromLayer, Outcome, Scope, Timeout};
pub use clock::{Clock, Random, SystemClock, ThreadRandom};
pub use fallback::{Answered, DEGRADED_KEY, Fallback, FallbackError, StepError};
pub use hedge::{Hedge, HedgeConfig, HedgeDelay, HedgeLayer};
pub use request::{Request, TimeLimit};
pub use retry::{
    Backoff, Jitter, Retry, RetryBudget, RetryFuture, RetryLayer, RetryPolicy, RetrySafety,
};
#[cfg(any(feature = "mcp", feature = "push"))]
pub(crate) use stack::BreakerSource;
pub use stack::Stack;
pub use timeout::{
    AttemptTimeout, AttemptTimeoutLayer, TimeoutFuture, TotalTimeout, TotalTimeoutLayer,
};
pub(crate) use timeout::{within, within_time};
/// Retry budgets from tower: every call deposits, every retry withdraws.
pub use tower::retry::budget::{Budget, TpsBudget};
