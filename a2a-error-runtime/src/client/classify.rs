//! [`ClientError`] read by the classifier ([`Classify`]) and written by the layers
//! ([`FromLayer`]): what a failed call to an agent means for a retry, a breaker and the caller.

use std::time::{Duration, SystemTime};

use a2a_error_codes::{CodeRow, Decided, DefaultRetry};
use reqwest::header::RETRY_AFTER;

use super::error::{ClientError, ResponseHead};
use crate::resilience::{Classify, FromLayer, Outcome, Timeout, health_of};
use crate::wire::code::{self, row};
use crate::wire::error::{A2aError, Category, RetryHint};
use crate::wire::remote::RemoteError;

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
    use crate::client::error::tests::status;
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
