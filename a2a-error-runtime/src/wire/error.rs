//! The `A2aError` trait and the small types it speaks in.

use std::borrow::Cow;
use std::time::Duration;

pub use a2a_error_codes::Category;

use crate::wire::data::DataSink;
use crate::wire::encode;
use crate::wire::object::{ErrorObject, WireProfile};
use crate::wire::received::ReceivedError;

/// Whether, and how, a failed call may be tried again.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RetryHint {
    /// Retrying cannot help.
    Never,
    /// Retrying may help; the client picks the delay (exponential backoff).
    Backoff,
    /// Retrying may help after this delay (the server's `Retry-After`).
    After(Duration),
}

impl RetryHint {
    /// Whether a retry may help at all.
    pub const fn is_retryable(&self) -> bool {
        !matches!(self, RetryHint::Never)
    }

    /// The delay the server asked for, if any.
    pub const fn delay(&self) -> Option<Duration> {
        match self {
            RetryHint::After(delay) => Some(*delay),
            _ => None,
        }
    }
}

/// An error that can travel over A2A: a JSON-RPC code, an ErrorInfo reason and domain, a public
/// message, retry advice and the data fields that are safe to publish.
///
/// Implement it with `#[derive(A2aError)]`. The `Display` text of the error is for logs only:
/// nothing but [`public_message`](A2aError::public_message) and the fields written by
/// [`write_data`](A2aError::write_data) reaches the wire.
pub trait A2aError: std::error::Error {
    /// The JSON-RPC error code.
    fn code(&self) -> i32;

    /// The ErrorInfo reason, `UPPER_SNAKE_CASE` (`"TASK_NOT_FOUND"`).
    fn reason(&self) -> &str;

    /// The ErrorInfo domain: `a2a-protocol.org` for the spec's own errors, else the
    /// application's.
    fn domain(&self) -> &str;

    /// The message sent to the peer: one short sentence, never the `Display` text.
    fn public_message(&self) -> Cow<'_, str>;

    /// Whether and when the call may be retried.
    fn retry_hint(&self) -> RetryHint;

    /// What kind of failure this is.
    fn category(&self) -> Category;

    /// The HTTP status for the REST binding (A2A v1.0.1 mapping).
    fn http_status(&self) -> u16;

    /// The gRPC status name (A2A v1.0.1 mapping).
    fn grpc_status(&self) -> &'static str {
        crate::wire::code::StatusMapping::V1_0_1.grpc_status(self.code(), self.http_status())
    }

    /// Writes the fields that are safe to publish (`#[a2a(data)]`) into `sink`.
    fn write_data(&self, sink: &mut DataSink<'_>) {
        let _ = sink;
    }

    /// Appends further A2A 1.0 typed details after ErrorInfo and RetryInfo, each as
    /// `,{"@type":…}` (e.g. a `google.rpc.BadRequest`). Not sent in the legacy profile.
    fn write_extra_details(&self, out: &mut Vec<u8>) {
        let _ = out;
    }

    /// Whether [`domain`](A2aError::domain) is the project's placeholder (`a2a-error`, the
    /// domain of `StandardError`'s own codes and of a client's local failures), which an
    /// application's enum wrapping this error replaces with its own domain.
    #[doc(hidden)]
    fn has_placeholder_domain(&self) -> bool {
        false
    }

    /// Whether a retry may help.
    fn is_retryable(&self) -> bool {
        self.retry_hint().is_retryable()
    }

    /// The published data fields as JSON values, keyed as on the wire.
    fn metadata(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut map = serde_json::Map::new();
        self.write_data(&mut DataSink::map(&mut map));
        map
    }

    /// The JSON-RPC error object in the A2A 1.0 wire profile.
    fn to_error_object(&self) -> ErrorObject {
        self.to_error_object_with(WireProfile::A2a)
    }

    /// The JSON-RPC error object in the given wire profile.
    fn to_error_object_with(&self, profile: WireProfile) -> ErrorObject {
        encode::to_error_object(self, profile)
    }

    /// Appends the JSON-RPC error object, as JSON, to `out`. The fast path of servers.
    fn write_error_object(&self, profile: WireProfile, out: &mut Vec<u8>) {
        encode::write_error_object(self, profile, out);
    }
}

/// An error enum with a fieldless twin that names its variants: `#[derive(A2aError)]` on an
/// enum `MyError` makes `MyErrorKind` and implements this. It lets generic code (such as
/// `ClientError::kind`) say which variant a received
/// error stands for even when the variant cannot be rebuilt.
pub trait HasKind {
    /// The fieldless enum of variants.
    type Kind: Copy + Eq + std::hash::Hash + std::fmt::Debug + Send + Sync + 'static;

    /// Which variant this is.
    fn kind(&self) -> Self::Kind;

    /// The variant `obj` stands for, by the same matching as the client mirror.
    fn kind_of(obj: &ErrorObject) -> Option<Self::Kind>;
}

/// The client-side mirror: rebuilds a typed error from a received error object.
pub trait FromErrorObject: Sized {
    /// The typed error `obj` stands for, or `None` when no variant matches it (or the matching
    /// variant carries fields that do not travel).
    fn from_error_object(obj: &ErrorObject) -> Option<Self>;

    /// The same, from any received form: an [`ErrorObject`], or an
    /// [`ErrorView`](crate::ErrorView) of the peer's text, which the derive's mirror reads
    /// without building the object. Other impls read the object in full.
    fn from_received(received: &dyn ReceivedError) -> Option<Self> {
        Self::from_error_object(&received.to_object())
    }

    /// The JSON-RPC code of the variant whose ErrorInfo reason is `reason`. The HTTP+JSON
    /// binding carries only the reason, so a client uses this to rebuild the code before
    /// decoding. `None` when no variant has that reason.
    fn code_for_reason(reason: &str) -> Option<i32> {
        let _ = reason;
        None
    }
}

/// The code of a received error's ErrorInfo reason: the code `E` gives it, else the table
/// row's. The HTTP+JSON and gRPC bindings carry only the reason, so a client rebuilds the
/// code from it; `None` when neither knows the reason (the binding's status then decides).
pub(crate) fn code_for_reason<E: FromErrorObject>(object: &ErrorObject) -> Option<i32> {
    let reason = object.reason()?;
    E::code_for_reason(reason).or_else(|| a2a_error_codes::by_reason(reason).map(|row| row.code))
}
