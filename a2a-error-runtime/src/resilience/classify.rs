//! The classifier: the one reading of a failure that every layer consults, as the trait
//! [`Classify`]. Whether the callee may have run the request, whether trying again may help
//! and after what delay, what the failure says about the callee's health, and a bounded name
//! for it. The retry layer, the breaker, hedging and the passing-on of a failure act on these
//! answers; none reads an error's variants itself.
//!
//! It has five implementations: `ClientError` (a call to an agent), a derived enum
//! (from its code, category and retry attributes), `HttpError`
//! (an HTTP dependency), `McpFailure` (an MCP server, feature `mcp`) and
//! `Failure` (any call, over the user's own classification of
//! its error). [`FromLayer`] is the other half: how a layer's own
//! refusals (a timeout, an open circuit, a full bulkhead) are written in the service's error
//! type.
//!
//! The per-code facts come from the code table ([`CodeRow`]): a code's category, default
//! retry, whether only a client's own mistake draws it, and whether a server answers with it
//! only before any work ([`Decided`]).

use std::time::{Duration, SystemTime};

use a2a_error_codes::Decided;

use crate::wire::code::row;
use crate::wire::error::{A2aError, Category, HasKind, RetryHint};

/// The one reading of a failure that the resilience layers consult: [`Retry`], the breaker,
/// hedging and [`Fallback`] act on these answers and read no error's variants themselves.
///
/// Implemented by `ClientError`, by every `#[derive(A2aError)]` enum (from its code's facts
/// and its `retryable`/`retry_after` attributes), by
/// `HttpError` and by
/// `Failure`. To classify a foreign error, implement it on a
/// type of your own; every method but [`retry_advice_at`](Self::retry_advice_at) has a
/// default:
///
/// ```
/// # use a2a_error_runtime as a2a_error;
/// use std::time::SystemTime;
/// use a2a_error::resilience::{Classify, Outcome};
/// use a2a_error::RetryHint;
///
/// #[derive(Debug)]
/// struct DbError(std::io::ErrorKind);
///
/// impl Classify for DbError {
///     fn retry_advice_at(&self, _now: SystemTime) -> RetryHint {
///         match self.0 {
///             std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::TimedOut => RetryHint::Backoff,
///             _ => RetryHint::Never,
///         }
///     }
///     fn may_have_run(&self) -> bool {
///         self.0 != std::io::ErrorKind::ConnectionRefused
///     }
/// }
/// assert!(DbError(std::io::ErrorKind::TimedOut).retry_advice_at(SystemTime::now()).is_retryable());
/// assert_eq!(DbError(std::io::ErrorKind::Other).health(), Outcome::Failure);
/// ```
///
/// [`Retry`]: crate::resilience::retry::Retry
/// [`Fallback`]: crate::resilience::fallback::Fallback
pub trait Classify {
    /// Whether trying again may help, and after what delay, with `now` the wall-clock time
    /// (an HTTP-date `Retry-After` is read against it).
    fn retry_advice_at(&self, now: SystemTime) -> RetryHint;

    /// Whether the callee may have run the request: `false` only when it provably did not
    /// (no connection, refused for load). An operation not safe to repeat is retried only
    /// when this is `false`. Default: `true`.
    fn may_have_run(&self) -> bool {
        true
    }

    /// What the failure says about the callee's health: the breaker's sample. Default:
    /// [`Outcome::Failure`].
    fn health(&self) -> Outcome {
        Outcome::Failure
    }

    /// The failure's name in one word (`UNREACHABLE`, `TIMEOUT`, `RATE_LIMITED`, …), for logs
    /// and the `error.type` label, which admits a bounded set of values whatever this
    /// returns. Default: `FAILED`.
    fn failure_reason(&self) -> &str {
        "FAILED"
    }

    /// Whether one of our own layers refused the call (an open circuit, a full bulkhead):
    /// nothing was sent, a retry layer does not repeat it and a breaker does not count it.
    /// Default: `false`.
    fn is_local_refusal(&self) -> bool {
        false
    }

    /// Whether the callee answered and refused the request: trying again cannot help and it is
    /// up (a 400, 401, 403, 404 or 422 from an HTTP service; a validation, auth or not-found
    /// error from an agent). A fallback to another provider of the same request is usually
    /// pointless then, and the failure passed on is not retryable.
    fn is_refusal(&self) -> bool {
        self.health() == Outcome::Success && !self.retry_advice_at(SystemTime::now()).is_retryable()
    }

    /// Whether the callee is up but the caller's quota with it is spent (a billing or spend
    /// budget: OpenAI's `insufficient_quota`, a gateway's 402, `budget_exceeded`, a daily
    /// limit): trying again before the quota is renewed cannot help, the callee's health is
    /// not in question (its breaker counts nothing), and a [`Fallback`](crate::resilience::fallback::Fallback)
    /// takes it as a reason to go on to another provider. Default: `false`.
    fn is_quota_exhausted(&self) -> bool {
        false
    }

    /// The limit of our own that refused the call unsent, when one did (a caller's token
    /// budget), as an IETF `RateLimit-Policy` item (`"tokens";q=10000;w=60`): passed on with
    /// the caller's `RATE_LIMITED`, and on HTTP replies as the `RateLimit-Policy` field.
    /// Default: none.
    fn rate_limit_policy(&self) -> Option<&str> {
        None
    }

    /// Whose health the failure speaks of when the request carries a breaker of its own
    /// operation ([`Request::breaker`](crate::resilience::request::Request::breaker), one tool of an
    /// MCP server): the whole callee's (no connection, overloaded) or only the operation's
    /// (it answered an error, timed out). The other breaker counts nothing. Default: the
    /// callee's.
    fn scope(&self) -> Scope {
        Scope::Callee
    }

    /// The delay the callee asked for, if any (`Retry-After`, RetryInfo), or the time until an
    /// open circuit half-opens.
    fn delay_at(&self, now: SystemTime) -> Option<Duration> {
        self.retry_advice_at(now).delay()
    }
}

/// How a layer writes its own failures in the error type of the service it wraps: a timeout
/// ([`TotalTimeout`](crate::resilience::timeout::TotalTimeout),
/// [`AttemptTimeout`](crate::resilience::timeout::AttemptTimeout)), an open circuit (the breaker) and
/// a full bulkhead. Implemented by `ClientError`,
/// `HttpError` and
/// `Failure`, which wraps any other error.
pub trait FromLayer {
    /// A time limit fired.
    fn timeout(timeout: Timeout) -> Self;
    /// The circuit is open; it half-opens after `retry_after`.
    fn circuit_open(retry_after: Duration) -> Self;
    /// Too many calls are in flight and waiting.
    fn bulkhead_full() -> Self;
}

/// A derived enum, read from its code's row and its own attributes: retried as its
/// `retry_hint` says (`retryable`, `retry_after`, the code's default), never run when its code
/// is answered before any work, and its category saying what it means for the callee's health.
impl<T: A2aError + HasKind> Classify for T {
    fn retry_advice_at(&self, _now: SystemTime) -> RetryHint {
        if row(self.code()).is_client_mistake() || self.category().is_never_retried() {
            return RetryHint::Never;
        }
        self.retry_hint()
    }
    fn may_have_run(&self) -> bool {
        row(self.code()).decided != Decided::BeforeWork
    }
    fn health(&self) -> Outcome {
        health_of(self.category())
    }
    fn failure_reason(&self) -> &str {
        self.reason()
    }
}

/// What an error of `category` says about the callee's health.
pub(crate) fn health_of(category: Category) -> Outcome {
    match category {
        Category::RateLimit => Outcome::RateLimited,
        Category::Transient | Category::Timeout | Category::Fatal => Outcome::Failure,
        _ => Outcome::Success,
    }
}

/// Whose health a failure speaks of ([`Classify::scope`]), when a request's operation has a
/// breaker of its own.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The callee as a whole: every operation is refused while its circuit is open.
    Callee,
    /// The one operation: the callee's other operations are still called.
    Operation,
}

/// What a failed call says about the agent's health: the sample a circuit breaker records.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The agent answered (an error it decided on counts too: a 404 proves it is up).
    Success,
    /// The agent is unwell: unreachable, too slow, 5xx, internal or unavailable errors.
    Failure,
    /// The agent refused for load (429, RATE_LIMITED): counted on its own, and as a failure
    /// unless [`BreakerConfig::count_rate_limits`](crate::resilience::breaker::BreakerConfig::count_rate_limits)
    /// says otherwise.
    RateLimited,
    /// Says nothing about the agent (our own invalid call, an open circuit, a full
    /// bulkhead): not counted.
    Ignored,
    /// The call was cut by its own deadline (`Timeout::Total`, often inherited from our
    /// caller), not by the agent's attempt timeout. It counts as a failure when the attempt had
    /// run for [`BreakerConfig::deadline_counts_after`](crate::resilience::breaker::BreakerConfig::deadline_counts_after)
    /// or longer (an agent that had that long and said nothing is unwell), and as nothing when
    /// it was cut sooner (the budget was short, which says nothing about the agent).
    DeadlineCut,
}

/// Which timeout fired.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Timeout {
    /// The TCP (and TLS) connection was not up in time; the request was never sent.
    Connect,
    /// One attempt took longer than its limit; the peer may still be working on it.
    Attempt,
    /// The whole call, retries included, ran out of time.
    Total,
    /// A stream went silent for longer than its idle limit between two events.
    Idle,
}

impl Timeout {
    /// Its name in logs and labels.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Timeout::Connect => "connect",
            Timeout::Attempt => "attempt",
            Timeout::Total => "total",
            Timeout::Idle => "stream idle",
        }
    }
}
