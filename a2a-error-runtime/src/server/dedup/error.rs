//! What a deduplicated call ends in besides success.

use std::borrow::Cow;
use std::time::Duration;

use crate::wire::data::DataSink;
use crate::wire::error::{A2aError, Category, RetryHint};
use crate::wire::object::WireProfile;
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

impl<E: A2aError + 'static> A2aError for DedupError<E> {
    fn code(&self) -> i32 {
        self.inner().code()
    }
    fn reason(&self) -> &str {
        self.inner().reason()
    }
    fn domain(&self) -> &str {
        self.inner().domain()
    }
    fn public_message(&self) -> Cow<'_, str> {
        self.inner().public_message()
    }
    fn retry_hint(&self) -> RetryHint {
        self.inner().retry_hint()
    }
    fn category(&self) -> Category {
        self.inner().category()
    }
    fn http_status(&self) -> u16 {
        self.inner().http_status()
    }
    fn grpc_status(&self) -> &'static str {
        self.inner().grpc_status()
    }
    fn write_data(&self, sink: &mut DataSink<'_>) {
        self.inner().write_data(sink)
    }
    fn write_extra_details(&self, out: &mut Vec<u8>) {
        self.inner().write_extra_details(out)
    }
    fn has_placeholder_domain(&self) -> bool {
        self.inner().has_placeholder_domain()
    }
    fn write_error_object(&self, profile: WireProfile, out: &mut Vec<u8>) {
        self.inner().write_error_object(profile, out)
    }
}

impl<E: A2aError + 'static> axum::response::IntoResponse for DedupError<E> {
    fn into_response(self) -> axum::response::Response {
        crate::server::rest::error_response(&self)
    }
}
