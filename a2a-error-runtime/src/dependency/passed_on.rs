//! `DependencyFailed`: a dependency's failure passed on to this agent's caller as this agent's
//! own error, never the dependency's text.

use std::borrow::Cow;
use std::fmt;
use std::time::SystemTime;

use super::http::{Interruption, StreamInterrupted};
use crate::resilience::FallbackError;
use crate::resilience::{Classify, Outcome};
use crate::wire::data::DataSink;
use crate::wire::error::{A2aError, Category, RetryHint};
use crate::wire::standard::StandardError;

pub use crate::wire::headers::RATE_LIMIT_POLICY_KEY;

/// A dependency's failure (a model provider's, a tool's), as this agent answers its own
/// caller. It is read through the failure's [`Classify`] impl, the same reading the layers
/// acted on:
///
/// | the dependency | passed on as | retryable | RetryInfo |
/// |---|---|---|---|
/// | refused the request (400, 401, 403, 404, 422; a validation or auth error) | `MODEL_REJECTED` / `DEPENDENCY_REJECTED` | no | no |
/// | not sent: its stated quota resets after the call's deadline ([`HttpFailure::Paced`](super::http::HttpFailure::Paced)) | `RATE_LIMITED` | yes | the time to the reset |
/// | not sent: the caller used its budget of tokens ([`HttpFailure::OverBudget`](super::http::HttpFailure::OverBudget)) | `RATE_LIMITED`, with the budget as `rateLimitPolicy` | yes | the time until the caller's window frees enough |
/// | a model provider said the agent's quota is spent ([`Classify::is_quota_exhausted`]: `insufficient_quota`, 402, `budget_exceeded`, a daily limit) | `MODEL_QUOTA_EXHAUSTED` | only when it said when the quota is renewed | that time |
/// | the call's own deadline passed | `DEADLINE_EXCEEDED` | as the table says | no |
/// | anything else: rate limited, down, too slow, its circuit open, retries spent | `MODEL_UNAVAILABLE` / `DEPENDENCY_UNAVAILABLE` | yes | the delay it gave, or the time until its circuit half-opens |
/// | a model's stream stopped after it had delivered content ([`interrupted`](Self::interrupted)) | `MODEL_STREAM_INTERRUPTED` | yes | no |
///
/// Why retryable, when a failed A2A call passed on is not (`retriesExhausted`): the
/// amplification rule stops retries from multiplying down a chain of agents, where each hop
/// would retry the one below. A dependency is a leaf: our caller's retry costs the provider
/// at most our attempts once more, within our caller's retry budget, and waits out the delay
/// the provider itself asked for; a caller two hops up sees our caller's DOWNSTREAM_FAILED,
/// which is not retryable, so the multiplication stops there. Without a delay the caller's
/// backoff applies.
///
/// Nothing of the dependency's own text reaches the wire: the code's public message only. The
/// failure is kept as [`source`](std::error::Error::source) for logs.
pub struct DependencyFailed {
    error: StandardError,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
    /// The limit of our own that refused the call, as an IETF `RateLimit-Policy` item:
    /// published (`rateLimitPolicy`) with the caller's RATE_LIMITED.
    policy: Option<Box<str>>,
}

impl DependencyFailed {
    /// A model provider's failure: `MODEL_UNAVAILABLE`, `MODEL_REJECTED` or
    /// `MODEL_QUOTA_EXHAUSTED`.
    pub fn model<E: Classify>(failure: &E) -> Self {
        DependencyFailed::read(true, failure)
    }

    /// Another dependency's failure: `DEPENDENCY_UNAVAILABLE` or `DEPENDENCY_REJECTED`.
    pub fn dependency<E: Classify>(failure: &E) -> Self {
        DependencyFailed::read(false, failure)
    }

    /// A failed fallback chain of model providers: rejected when the chain ended at a refusal,
    /// DEADLINE_EXCEEDED when its last step ran out of time, else unavailable with the soonest
    /// delay any step gave (the time after which one of them may answer).
    pub fn models<E: Classify>(failed: &FallbackError<E>) -> Self {
        let last = failed.last();
        let paced = last.is_local_refusal() && last.health() == Outcome::RateLimited;
        if paced
            || last.is_quota_exhausted()
            || last.is_refusal()
            || last.health() == Outcome::DeadlineCut
        {
            return DependencyFailed::read(true, last);
        }
        DependencyFailed {
            error: StandardError::ModelUnavailable {
                retry_after: failed.soonest_delay(),
            },
            source: None,
            policy: None,
        }
    }

    /// A model's streamed answer that stopped after it had delivered content:
    /// `MODEL_STREAM_INTERRUPTED` (retryable: asking again starts a new answer; what was
    /// delivered stands), or DEADLINE_EXCEEDED when the call's deadline cut it.
    pub fn interrupted(stopped: &StreamInterrupted) -> Self {
        let error = match stopped.cause {
            Interruption::Deadline => StandardError::DeadlineExceeded,
            _ => StandardError::ModelStreamInterrupted,
        };
        DependencyFailed {
            error,
            source: None,
            policy: None,
        }
    }

    fn read<E: Classify>(model: bool, failure: &E) -> Self {
        let error = if failure.health() == Outcome::DeadlineCut {
            StandardError::DeadlineExceeded
        } else if failure.is_local_refusal() && failure.health() == Outcome::RateLimited {
            // Paced by the provider's stated quota: our own rate limit, until its reset.
            StandardError::RateLimited {
                retry_after: failure.delay_at(SystemTime::now()),
            }
        } else if model && failure.is_quota_exhausted() {
            // Renewed after the delay the provider gave, if it gave one.
            StandardError::ModelQuotaExhausted {
                retry_after: failure.delay_at(SystemTime::now()),
            }
        } else if failure.is_refusal() {
            if model {
                StandardError::ModelRejected
            } else {
                StandardError::DependencyRejected
            }
        } else {
            let retry_after = failure.delay_at(SystemTime::now());
            if model {
                StandardError::ModelUnavailable { retry_after }
            } else {
                StandardError::DependencyUnavailable { retry_after }
            }
        };
        DependencyFailed {
            error,
            source: None,
            policy: failure.rate_limit_policy().map(Box::from),
        }
    }

    /// Keeps `failure` as this error's source, for logs (never sent).
    pub fn with_source(mut self, failure: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(failure));
        self
    }

    /// The error as it goes on the wire.
    pub fn error(&self) -> &StandardError {
        &self.error
    }
}

impl fmt::Debug for DependencyFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DependencyFailed")
            .field("error", &self.error)
            .field("source", &self.source.as_ref().map(|s| s.to_string()))
            .finish()
    }
}

impl fmt::Display for DependencyFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(source) => write!(f, "{}: {source}", self.error),
            None => self.error.fmt(f),
        }
    }
}

impl std::error::Error for DependencyFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|source| source as &(dyn std::error::Error + 'static))
    }
}

impl A2aError for DependencyFailed {
    fn code(&self) -> i32 {
        self.error.code()
    }
    fn reason(&self) -> &str {
        self.error.reason()
    }
    fn domain(&self) -> &str {
        self.error.domain()
    }
    fn has_placeholder_domain(&self) -> bool {
        self.error.has_placeholder_domain()
    }
    fn public_message(&self) -> Cow<'_, str> {
        self.error.public_message()
    }
    fn retry_hint(&self) -> RetryHint {
        self.error.retry_hint()
    }
    fn category(&self) -> Category {
        self.error.category()
    }
    fn http_status(&self) -> u16 {
        self.error.http_status()
    }
    fn grpc_status(&self) -> &'static str {
        self.error.grpc_status()
    }
    fn write_data(&self, sink: &mut DataSink<'_>) {
        self.error.write_data(sink);
        if let Some(policy) = &self.policy {
            sink.field(RATE_LIMIT_POLICY_KEY, &**policy);
        }
    }
}
