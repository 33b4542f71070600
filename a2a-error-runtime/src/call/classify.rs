//! The classifier: the one reading of a failure that every layer consults, as the trait
//! [`Classify`]. Whether the callee may have run the request, whether trying again may help
//! and after what delay, what the failure says about the callee's health, and a bounded name
//! for it. The retry layer, the breaker, hedging and the passing-on of a failure act on these
//! answers; none reads an error's variants itself.
//!
//! It has four implementations: [`ClientError`] (a call to an agent, below), a derived enum
//! (from its code, category and retry attributes), [`HttpError`](crate::dependency::HttpError)
//! (an HTTP dependency) and [`Failure`](crate::dependency::Failure) (any call, over the user's
//! own classification of its error). [`FromLayer`] is the other half: how a layer's own
//! refusals (a timeout, an open circuit, a full bulkhead) are written in the service's error
//! type.
//!
//! The per-code facts come from the code table ([`CodeRow`]): a code's category, default
//! retry, whether only a client's own mistake draws it, and whether a server answers with it
//! only before any work ([`Decided`]).

use std::time::{Duration, SystemTime};

use a2a_error_codes::{CodeRow, Decided, DefaultRetry};
use reqwest::header::RETRY_AFTER;

use super::error::{ClientError, ResponseHead, Timeout};
use crate::wire::code::{self, row};
use crate::wire::error::{A2aError, Category, HasKind, RetryHint};
use crate::wire::remote::RemoteError;

/// The one reading of a failure that the resilience layers consult: [`Retry`], the breaker,
/// hedging and [`Fallback`] act on these answers and read no error's variants themselves.
///
/// Implemented by [`ClientError`], by every `#[derive(A2aError)]` enum (from its code's facts
/// and its `retryable`/`retry_after` attributes), by
/// [`HttpError`](crate::dependency::HttpError) and by
/// [`Failure`](crate::dependency::Failure). To classify a foreign error, implement it on a
/// type of your own; every method but [`retry_advice_at`](Self::retry_advice_at) has a
/// default:
///
/// ```
/// # use a2a_error_runtime as a2a_error;
/// use std::time::SystemTime;
/// use a2a_error::client::{Classify, Outcome};
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
/// [`Retry`]: crate::resilience::Retry
/// [`Fallback`]: crate::resilience::Fallback
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

    /// The delay the callee asked for, if any (`Retry-After`, RetryInfo), or the time until an
    /// open circuit half-opens.
    fn delay_at(&self, now: SystemTime) -> Option<Duration> {
        self.retry_advice_at(now).delay()
    }
}

/// How a layer writes its own failures in the error type of the service it wraps: a timeout
/// ([`TotalTimeout`](crate::resilience::TotalTimeout),
/// [`AttemptTimeout`](crate::resilience::AttemptTimeout)), an open circuit (the breaker) and
/// a full bulkhead. Implemented by [`ClientError`],
/// [`HttpError`](crate::dependency::HttpError) and
/// [`Failure`](crate::dependency::Failure), which wraps any other error.
pub trait FromLayer {
    /// A time limit fired.
    fn timeout(timeout: Timeout) -> Self;
    /// The circuit is open; it half-opens after `retry_after`.
    fn circuit_open(retry_after: Duration) -> Self;
    /// Too many calls are in flight and waiting.
    fn bulkhead_full() -> Self;
}

impl<E> FromLayer for ClientError<E> {
    fn timeout(timeout: Timeout) -> Self {
        ClientError::Timeout(timeout)
    }
    fn circuit_open(retry_after: Duration) -> Self {
        ClientError::CircuitOpen { retry_after }
    }
    fn bulkhead_full() -> Self {
        ClientError::BulkheadFull
    }
}

impl<E: A2aError + 'static> Classify for ClientError<E> {
    fn retry_advice_at(&self, now: SystemTime) -> RetryHint {
        if !self.may_help_to_retry() {
            return RetryHint::Never;
        }
        match self.retry_after_at(now) {
            Some(delay) => RetryHint::After(delay),
            None => RetryHint::Backoff,
        }
    }
    fn may_have_run(&self) -> bool {
        ClientError::may_have_run(self)
    }
    fn health(&self) -> Outcome {
        ClientError::health(self)
    }
    fn failure_reason(&self) -> &str {
        ClientError::failure_reason(self)
    }
    fn is_local_refusal(&self) -> bool {
        ClientError::is_local_refusal(self)
    }
    fn delay_at(&self, now: SystemTime) -> Option<Duration> {
        self.retry_after_at(now)
    }
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

impl<E> ClientError<E> {
    /// Whether the peer may have run the request: `false` only when it provably did not (no
    /// connection, refused with HTTP 408/429/503, or an error reply whose code a server
    /// answers only before any work: [`Decided::BeforeWork`] in the code table). A method that
    /// is not safe to repeat is retried only when this is `false`.
    pub fn may_have_run(&self) -> bool {
        match self {
            ClientError::Remote { reply, .. } | ClientError::Unrecognized(reply) => {
                let code = reply.error.code();
                let pushback = reply.error.retry_after().is_some()
                    || reply
                        .http
                        .as_ref()
                        .is_some_and(|http| http.headers.contains_key(RETRY_AFTER));
                !(row(code).decided == Decided::BeforeWork
                    || code == code::AGENT_UNAVAILABLE && pushback)
            }
            ClientError::Connect(_)
            | ClientError::Timeout(Timeout::Connect)
            | ClientError::InvalidCall { .. }
            | ClientError::CircuitOpen { .. }
            | ClientError::BulkheadFull => false,
            // 408: the request never fully arrived; 429 and 503: refused for load.
            ClientError::Status(http) => !matches!(http.status, 408 | 429 | 503),
            ClientError::Timeout(_)
            | ClientError::Transport(_)
            | ClientError::Malformed { .. }
            | ClientError::ReplyTooLarge { .. } => true,
        }
    }

    /// What this failure is, in one word, as the caller's own report should name it: the
    /// peer's own ErrorInfo reason for an error reply (not the DOWNSTREAM_FAILED it becomes
    /// when passed on), else the local failure's (`UNREACHABLE`, `TIMEOUT`, `CIRCUIT_OPEN`,
    /// `BULKHEAD_FULL`, `CONNECTION_LOST`, …).
    pub fn failure_reason(&self) -> &str {
        match self.remote() {
            Some(remote) => remote.reason(),
            None => self.local_reason(),
        }
    }

    /// The reason of a local failure, as its hop in a chain names it.
    pub(crate) fn local_reason(&self) -> &'static str {
        match self {
            ClientError::Connect(_) | ClientError::Timeout(Timeout::Connect) => "UNREACHABLE",
            ClientError::Transport(_) => "CONNECTION_LOST",
            ClientError::Timeout(_) => "TIMEOUT",
            ClientError::CircuitOpen { .. } => "CIRCUIT_OPEN",
            ClientError::BulkheadFull => "BULKHEAD_FULL",
            ClientError::Malformed { .. } => "INVALID_AGENT_RESPONSE",
            ClientError::ReplyTooLarge { .. } => "REPLY_TOO_LARGE",
            ClientError::InvalidCall { .. } => "INVALID_CALL",
            ClientError::Status(_) => self.local_row().reason,
            ClientError::Remote { .. } | ClientError::Unrecognized(_) => "DOWNSTREAM_FAILED",
        }
    }

    /// Whether this failure was a refusal of one of our own layers (an open circuit, a full
    /// bulkhead): nothing was sent. A retry layer does not repeat it (that would turn a
    /// fail-fast into a wait: waiting out an open circuit is the caller's choice, its error
    /// says when it half-opens), the breaker does not count it, and passed on it is not
    /// marked `retriesExhausted`.
    pub fn is_local_refusal(&self) -> bool {
        matches!(
            self,
            ClientError::CircuitOpen { .. } | ClientError::BulkheadFull
        )
    }

    /// Whether trying again may help (see [`retry_advice`](Self::retry_advice)).
    fn may_help_to_retry(&self) -> bool
    where
        E: A2aError,
    {
        match self {
            ClientError::Remote { error, reply } => remote_retryable(&**error, &reply.error),
            ClientError::Unrecognized(reply) => remote_retryable(&reply.error, &reply.error),
            ClientError::Status(http) => status_row(http).retry != DefaultRetry::Never,
            ClientError::Timeout(timeout) => *timeout != Timeout::Total,
            ClientError::Connect(_)
            | ClientError::Transport(_)
            | ClientError::CircuitOpen { .. }
            | ClientError::BulkheadFull => true,
            // The same peer would send the same oversized reply again.
            ClientError::Malformed { .. }
            | ClientError::ReplyTooLarge { .. }
            | ClientError::InvalidCall { .. } => false,
        }
    }

    /// What kind of failure this is, as the caller's own report should name it: the peer's
    /// own category for an error reply, else the local failure's (a timeout, a transient
    /// connection failure, …). Not what it becomes when passed on ([`A2aError::category`]).
    pub fn failure_category(&self) -> Category
    where
        E: A2aError,
    {
        match self {
            ClientError::Remote { error, .. } => error.category(),
            ClientError::Unrecognized(reply) => reply.error.category(),
            ClientError::Status(http) => status_row(http).category,
            ClientError::Timeout(_) => Category::Timeout,
            ClientError::Connect(_)
            | ClientError::Transport(_)
            | ClientError::CircuitOpen { .. }
            | ClientError::BulkheadFull => Category::Transient,
            ClientError::Malformed { .. } | ClientError::ReplyTooLarge { .. } => Category::Fatal,
            ClientError::InvalidCall { .. } => Category::Validation,
        }
    }
}

impl<E: A2aError + 'static> ClientError<E> {
    /// Whether retrying this call may help, and after what delay: the advice a retry layer
    /// acts on. A peer's error object says so itself (never for -32700/-32600/-32601/-32602
    /// or auth); HTTP 408/429/502/503/504, connection failures, connect and attempt timeouts
    /// and an open circuit may clear. This is not what the error says once passed on to our
    /// own caller ([`A2aError::retry_hint`]): by then this client has retried it.
    pub fn retry_advice(&self) -> RetryHint {
        Classify::retry_advice_at(self, SystemTime::now())
    }

    /// What this failure says about the agent's health: connection failures,
    /// connect/attempt/idle timeouts, replies that are not A2A, and error replies of the
    /// transient, timeout or fatal categories (5xx, INTERNAL_ERROR, AGENT_UNAVAILABLE,
    /// DEADLINE_EXCEEDED, DOWNSTREAM_FAILED) are failures; rate limiting is its own signal;
    /// validation, auth, not-found and unknown codes are the agent answering (success); the
    /// call's own deadline is [`Outcome::DeadlineCut`]; an invalid call and our own layers'
    /// refusals say nothing.
    pub fn health(&self) -> Outcome {
        match self {
            ClientError::Timeout(Timeout::Total) => Outcome::DeadlineCut,
            ClientError::InvalidCall { .. } => Outcome::Ignored,
            _ if self.is_local_refusal() => Outcome::Ignored,
            ClientError::Timeout(_)
            | ClientError::Connect(_)
            | ClientError::Transport(_)
            | ClientError::Malformed { .. }
            | ClientError::ReplyTooLarge { .. } => Outcome::Failure,
            _ => health_of(self.category()),
        }
    }
}

/// The table row a bare HTTP status stands for ([`code::code_for_http`]).
pub(super) fn status_row(http: &ResponseHead) -> &'static CodeRow {
    row(code::code_for_http(http.status, None))
}

/// A peer's error, read as `error` (the typed mirror, or the object itself): retryable when
/// its hint says so or the peer sent a delay. A delay never overrides "do not retry": the
/// caller's own mistakes, the never-retried categories (validation, auth, not found, fatal)
/// and a peer's explicit `retryable: false` win over it.
fn remote_retryable(error: &impl A2aError, object: &RemoteError) -> bool {
    if row(error.code()).is_client_mistake()
        || error.category().is_never_retried()
        || object.retryable() == Some(false)
    {
        return false;
    }
    error.retry_hint().is_retryable() || object.retry_after().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::error::tests::status;
    use crate::wire::object::ErrorObject;

    #[test]
    fn classification_of_http_statuses() {
        // Read through the code table: a bare status is what `code_for_http` says it is.
        for code in [408, 429, 500, 502, 503, 504] {
            assert!(status(code, None).retry_advice().is_retryable(), "{code}");
        }
        for code in [400, 401, 403, 404, 409, 413] {
            assert!(!status(code, None).retry_advice().is_retryable(), "{code}");
        }
        assert_eq!(status(404, None).category(), Category::NotFound);
        assert_eq!(status(504, None).category(), Category::Timeout);
        assert!(!status(429, None).may_have_run());
        assert!(status(502, None).may_have_run());
        assert_eq!(status(401, None).category(), Category::Auth);
    }

    #[test]
    fn client_mistakes_are_never_retried_even_with_a_delay() {
        for code in [
            code::PARSE_ERROR,
            code::INVALID_REQUEST,
            code::METHOD_NOT_FOUND,
            code::INVALID_PARAMS,
        ] {
            let object: ErrorObject = serde_json::from_value(serde_json::json!({
                "code": code, "message": "m", "data": {"retryAfter": 3}}))
            .unwrap();
            let err = ClientError::<RemoteError>::from_object(object, None);
            assert!(!err.retry_advice().is_retryable(), "{code}");
        }
    }
}
