//! What a deduplicated call ends in besides success.

use std::time::Duration;

use crate::wire::error::A2aError;
use crate::wire::remote::RemoteError;

/// Why [`Dedup`](crate::server::Dedup) answered without running the work.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, a2a_error_derive::A2aError)]
#[a2a(crate = "crate", domain = "a2a-error", into_response = false)]
#[non_exhaustive]
pub enum Refusal {
    /// The same request is in flight and did not finish within the wait limit.
    #[error("the message is still in progress")]
    #[a2a(
        code = AGENT_UNAVAILABLE,
        reason = "MESSAGE_IN_PROGRESS",
        message = "The message is still being processed; retry later"
    )]
    InProgress {
        /// When to come back.
        #[a2a(retry_after)]
        retry_after: Duration,
    },
    /// The id was used before, by this caller, for a different request.
    #[error("messageId reused for a different message")]
    #[a2a(
        code = INVALID_PARAMS,
        reason = "MESSAGE_ID_REUSED",
        message = "This messageId was already used for a different message"
    )]
    IdReused,
    /// The id is longer than the limit.
    #[error("messageId longer than {limit} bytes")]
    #[a2a(code = INVALID_PARAMS, message = "messageId is longer than {limit} bytes")]
    IdTooLong {
        /// The limit in bytes.
        #[a2a(data)]
        limit: usize,
    },
    /// The store could not be reached, and the call fails closed.
    #[error("the dedup store is unavailable")]
    #[a2a(code = AGENT_UNAVAILABLE)]
    StoreUnavailable {
        /// When to come back.
        #[a2a(retry_after)]
        retry_after: Duration,
    },
    /// The request does not serialize to JSON (a bug in its type, such as a map with
    /// non-string keys), so a reuse of its id could not be detected: not run.
    #[error("the request does not serialize, so it cannot be deduplicated")]
    #[a2a(code = INTERNAL_ERROR, retryable = false)]
    Unfingerprintable,
    /// The work outran its claim and was given up (or the runtime shut down).
    #[error("the work outran its claim")]
    #[a2a(code = DEADLINE_EXCEEDED)]
    Abandoned,
}

/// What a deduplicated call ends in besides success: the work's own error, a remembered one
/// replayed as it was first sent, or a refusal. An `A2aError`, so handlers return it as is.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DedupError<E> {
    /// The work ran and failed.
    #[error(transparent)]
    Failed(E),
    /// A final error remembered from the first run, replayed byte for byte.
    #[error(transparent)]
    Replayed(Box<RemoteError>),
    /// Answered without running the work.
    #[error(transparent)]
    Refused(Refusal),
}

impl<E: A2aError + 'static> DedupError<E> {
    fn inner(&self) -> &dyn A2aError {
        match self {
            DedupError::Failed(error) => error,
            DedupError::Replayed(error) => &**error,
            DedupError::Refused(refusal) => refusal,
        }
    }
}

a2a_error_core::forward_a2a_error! {
    impl[E: A2aError + 'static] for DedupError<E>;
    inner = |this| this.inner();
}

impl<E: A2aError + 'static> axum::response::IntoResponse for DedupError<E> {
    fn into_response(self) -> axum::response::Response {
        crate::server::rest::error_response(&self)
    }
}
