//! `Failure`: what a call through the layers ends in, over any error of the callee's.

use std::fmt;
use std::time::{Duration, SystemTime};

use crate::resilience::{Classify, FromLayer, Outcome, Scope, Timeout};
use crate::wire::error::RetryHint;

/// A call through the resilience layers failed: the callee's own error, or one of the layers'
/// (a timeout, an open circuit, a full bulkhead). `E` is the callee's error, read through its
/// [`Classify`] impl; the layers' own failures are classified as for calls to agents.
#[derive(Debug)]
#[non_exhaustive]
pub enum Failure<E> {
    /// The callee failed with its own error.
    Failed(E),
    /// A time limit fired: the attempt's ([`Timeout::Attempt`]) or the whole call's
    /// ([`Timeout::Total`], never retried).
    Timeout(Timeout),
    /// The circuit is open: nothing was sent. It half-opens after `retry_after`.
    CircuitOpen {
        /// The time until the circuit half-opens.
        retry_after: Duration,
    },
    /// Too many calls in flight and waiting: nothing was sent.
    BulkheadFull,
}

impl<E> Failure<E> {
    /// The callee's own error, if it was one.
    pub fn error(&self) -> Option<&E> {
        match self {
            Failure::Failed(error) => Some(error),
            _ => None,
        }
    }

    /// The callee's own error, if it was one.
    pub fn into_error(self) -> Option<E> {
        match self {
            Failure::Failed(error) => Some(error),
            _ => None,
        }
    }

    /// The same failure over another error type.
    pub fn map<G>(self, f: impl FnOnce(E) -> G) -> Failure<G> {
        match self {
            Failure::Failed(error) => Failure::Failed(f(error)),
            Failure::Timeout(timeout) => Failure::Timeout(timeout),
            Failure::CircuitOpen { retry_after } => Failure::CircuitOpen { retry_after },
            Failure::BulkheadFull => Failure::BulkheadFull,
        }
    }
}

impl<E> From<E> for Failure<E> {
    fn from(error: E) -> Self {
        Failure::Failed(error)
    }
}

impl<E> FromLayer for Failure<E> {
    fn timeout(timeout: Timeout) -> Self {
        Failure::Timeout(timeout)
    }
    fn circuit_open(retry_after: Duration) -> Self {
        Failure::CircuitOpen { retry_after }
    }
    fn bulkhead_full() -> Self {
        Failure::BulkheadFull
    }
}

impl<E: Classify> Classify for Failure<E> {
    fn retry_advice_at(&self, now: SystemTime) -> RetryHint {
        match self {
            Failure::Failed(error) => error.retry_advice_at(now),
            Failure::Timeout(timeout) => layer_advice(*timeout),
            Failure::CircuitOpen { retry_after } if !retry_after.is_zero() => {
                RetryHint::After(*retry_after)
            }
            Failure::CircuitOpen { .. } | Failure::BulkheadFull => RetryHint::Backoff,
        }
    }

    fn may_have_run(&self) -> bool {
        match self {
            Failure::Failed(error) => error.may_have_run(),
            Failure::Timeout(timeout) => *timeout != Timeout::Connect,
            Failure::CircuitOpen { .. } | Failure::BulkheadFull => false,
        }
    }

    fn health(&self) -> Outcome {
        match self {
            Failure::Failed(error) => error.health(),
            Failure::Timeout(timeout) => layer_health(*timeout),
            Failure::CircuitOpen { .. } | Failure::BulkheadFull => Outcome::Ignored,
        }
    }

    fn failure_reason(&self) -> &str {
        match self {
            Failure::Failed(error) => error.failure_reason(),
            Failure::Timeout(Timeout::Connect) => "UNREACHABLE",
            Failure::Timeout(_) => "TIMEOUT",
            Failure::CircuitOpen { .. } => "CIRCUIT_OPEN",
            Failure::BulkheadFull => "BULKHEAD_FULL",
        }
    }

    fn is_local_refusal(&self) -> bool {
        match self {
            Failure::Failed(error) => error.is_local_refusal(),
            Failure::CircuitOpen { .. } | Failure::BulkheadFull => true,
            Failure::Timeout(_) => false,
        }
    }

    fn is_quota_exhausted(&self) -> bool {
        matches!(self, Failure::Failed(error) if error.is_quota_exhausted())
    }

    fn rate_limit_policy(&self) -> Option<&str> {
        match self {
            Failure::Failed(error) => error.rate_limit_policy(),
            _ => None,
        }
    }

    /// A slow operation is the operation's (one tool of a server that answers the others);
    /// no connection within the connect timeout is the callee's.
    fn scope(&self) -> Scope {
        match self {
            Failure::Failed(error) => error.scope(),
            Failure::Timeout(Timeout::Connect) => Scope::Callee,
            _ => Scope::Operation,
        }
    }

    fn delay_at(&self, now: SystemTime) -> Option<Duration> {
        match self {
            Failure::Failed(error) => error.delay_at(now),
            Failure::CircuitOpen { retry_after } => Some(*retry_after),
            _ => None,
        }
    }
}

/// A layer's timeout, as the retry layer reads it: the call's own deadline is never retried.
pub(crate) fn layer_advice(timeout: Timeout) -> RetryHint {
    match timeout {
        Timeout::Total => RetryHint::Never,
        _ => RetryHint::Backoff,
    }
}

/// A layer's timeout, as the breaker counts it.
pub(crate) fn layer_health(timeout: Timeout) -> Outcome {
    match timeout {
        Timeout::Total => Outcome::DeadlineCut,
        _ => Outcome::Failure,
    }
}

impl<E: fmt::Display> fmt::Display for Failure<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Failed(error) => error.fmt(f),
            Failure::Timeout(Timeout::Total) => f.write_str("the call's deadline passed"),
            Failure::Timeout(_) => f.write_str("the attempt timed out"),
            Failure::CircuitOpen { retry_after } => {
                write!(f, "circuit open: not called for another {retry_after:?}")
            }
            Failure::BulkheadFull => f.write_str("too many calls in flight"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for Failure<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Failure::Failed(error) => Some(error),
            _ => None,
        }
    }
}
