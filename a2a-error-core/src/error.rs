//! The `A2aError` trait, the small types it speaks in, and the one encoder that its provided
//! `to_error_object` and `write_error_object` are: an `A2aError` → JSON-RPC error object
//! bytes, in either wire profile. Everything that puts an error on the wire ends here
//! (directly, or through the per-variant cache the derive keeps for variants whose bytes never
//! change apart from their data fields), so there is a single place that decides the shape.
//! The trait and its encoder read each other, so they share this file.

use std::borrow::Cow;
use std::time::Duration;

pub use a2a_error_codes::Category;

use crate::data::{DataSink, write_str};
use crate::object::{ErrorObject, WireProfile};
use crate::received::ReceivedError;

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
        crate::code::StatusMapping::V1_0_1.grpc_status(self.code(), self.http_status())
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
        to_error_object(self, profile)
    }

    /// Appends the JSON-RPC error object, as JSON, to `out`. The fast path of servers.
    fn write_error_object(&self, profile: WireProfile, out: &mut Vec<u8>) {
        write_error_object(self, profile, out);
    }
}

/// `A2aError` for a wrapper that passes on the error it holds: every method forwarded to
/// `inner`, or all but `write_data` when its body is given (a wrapper that adds fields; the
/// object is then written from these methods). One list of the forwarded methods, so that no
/// wrapper forgets one the trait gains.
#[doc(hidden)]
#[macro_export]
macro_rules! forward_a2a_error {
    (
        impl[$($generics:tt)*] for $wrapper:ty;
        inner = |$this:ident| $inner:expr;
    ) => {
        impl<$($generics)*> $crate::error::A2aError for $wrapper {
            $crate::forward_a2a_error!(@common |$this| $inner);
            fn write_data(&self, sink: &mut $crate::data::DataSink<'_>) {
                let $this = self;
                $inner.write_data(sink)
            }
            fn write_error_object(
                &self,
                profile: $crate::object::WireProfile,
                out: &mut Vec<u8>,
            ) {
                let $this = self;
                $inner.write_error_object(profile, out)
            }
        }
    };
    (
        impl[$($generics:tt)*] for $wrapper:ty;
        inner = |$this:ident| $inner:expr;
        write_data = |$data_this:ident, $sink:ident| $write_data:expr;
    ) => {
        impl<$($generics)*> $crate::error::A2aError for $wrapper {
            $crate::forward_a2a_error!(@common |$this| $inner);
            fn write_data(&self, $sink: &mut $crate::data::DataSink<'_>) {
                let $data_this = self;
                $write_data
            }
        }
    };
    (@common |$this:ident| $inner:expr) => {
        fn code(&self) -> i32 {
            let $this = self;
            $inner.code()
        }
        fn reason(&self) -> &str {
            let $this = self;
            $inner.reason()
        }
        fn domain(&self) -> &str {
            let $this = self;
            $inner.domain()
        }
        fn has_placeholder_domain(&self) -> bool {
            let $this = self;
            $inner.has_placeholder_domain()
        }
        fn public_message(&self) -> ::std::borrow::Cow<'_, str> {
            let $this = self;
            $inner.public_message()
        }
        fn retry_hint(&self) -> $crate::error::RetryHint {
            let $this = self;
            $inner.retry_hint()
        }
        fn category(&self) -> $crate::error::Category {
            let $this = self;
            $inner.category()
        }
        fn http_status(&self) -> u16 {
            let $this = self;
            $inner.http_status()
        }
        fn grpc_status(&self) -> &'static str {
            let $this = self;
            $inner.grpc_status()
        }
        fn write_extra_details(&self, out: &mut Vec<u8>) {
            let $this = self;
            $inner.write_extra_details(out)
        }
    };
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
    /// [`ErrorView`](crate::view::ErrorView) of the peer's text, which the derive's mirror reads
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
pub fn code_for_reason<E: FromErrorObject>(object: &ErrorObject) -> Option<i32> {
    let reason = object.reason()?;
    E::code_for_reason(reason).or_else(|| a2a_error_codes::by_reason(reason).map(|row| row.code))
}

// The one encoder.

/// `@type` of a `google.rpc.ErrorInfo` detail.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
/// `@type` of a `google.rpc.RetryInfo` detail.
pub const RETRY_INFO_TYPE: &str = "type.googleapis.com/google.rpc.RetryInfo";
/// `@type` of a `google.rpc.BadRequest` detail.
pub const BAD_REQUEST_TYPE: &str = "type.googleapis.com/google.rpc.BadRequest";

/// Appends `err` as a JSON-RPC error object (`{"code":…,"message":…,"data":…}`) to `out`.
pub fn write_error_object<E: A2aError + ?Sized>(err: &E, profile: WireProfile, out: &mut Vec<u8>) {
    write_error_object_around(err, profile, out, |out, at| {
        err.write_data(&mut at.sink(out));
    });
}

/// Where an error's data fields go in its encoding: what [`DataSink`] writes them there.
#[derive(Clone, Copy, Debug)]
pub enum DataAt {
    /// The first members of ErrorInfo `metadata`.
    Metadata,
    /// ErrorInfo `metadata` members after the retry marker.
    MetadataAfter,
    /// Members of the legacy `data` object, after its fixed members.
    Members,
}

impl DataAt {
    /// The sink that writes data fields at this place.
    pub fn sink(self, out: &mut Vec<u8>) -> DataSink<'_> {
        match self {
            DataAt::Metadata => DataSink::metadata(out),
            DataAt::MetadataAfter => DataSink::metadata_after(out),
            DataAt::Members => DataSink::members(out),
        }
    }
}

/// [`write_error_object`], with the data fields written by `data` at the place it is told. The
/// derive's cache encodes a variant once with no data, then writes each error as the bytes
/// around that place and its own fields in between (`__private::EncodedCache`).
pub fn write_error_object_around<E: A2aError + ?Sized>(
    err: &E,
    profile: WireProfile,
    out: &mut Vec<u8>,
    data: impl FnOnce(&mut Vec<u8>, DataAt),
) {
    out.extend_from_slice(b"{\"code\":");
    write_int(out, err.code());
    out.extend_from_slice(b",\"message\":");
    write_str(out, &err.public_message());
    let retry = err.retry_hint();
    match profile {
        WireProfile::A2a => {
            out.extend_from_slice(b",\"data\":");
            write_details_around(err, out, data);
            out.push(b'}');
        }
        WireProfile::Legacy => {
            out.extend_from_slice(b",\"data\":{\"reason\":");
            write_str(out, err.reason());
            out.extend_from_slice(b",\"domain\":");
            write_str(out, err.domain());
            out.extend_from_slice(if retry.is_retryable() {
                b",\"retryable\":true"
            } else {
                b",\"retryable\":false"
            });
            if let RetryHint::After(delay) = retry {
                out.extend_from_slice(b",\"retryAfter\":");
                write_seconds(out, delay);
            }
            data(out, DataAt::Members);
            out.extend_from_slice(b"}}");
        }
    }
}

/// The error object model of `err`, read back from the bytes `err.write_error_object` writes,
/// so the model and the wire can never disagree.
pub fn to_error_object<E: A2aError + ?Sized>(err: &E, profile: WireProfile) -> ErrorObject {
    let mut bytes = Vec::with_capacity(256);
    err.write_error_object(profile, &mut bytes);
    serde_json::from_slice(&bytes).unwrap_or_else(|_| ErrorObject::fallback())
}

/// Appends the A2A 1.0 typed details of `err`: `[{ErrorInfo}]`, plus `{RetryInfo}` when a
/// delay is known. This is `error.data` in JSON-RPC and `error.details` in REST.
pub fn write_details<E: A2aError + ?Sized>(err: &E, out: &mut Vec<u8>) {
    write_details_around(err, out, |out, at| err.write_data(&mut at.sink(out)));
}

fn write_details_around<E: A2aError + ?Sized>(
    err: &E,
    out: &mut Vec<u8>,
    data: impl FnOnce(&mut Vec<u8>, DataAt),
) {
    out.extend_from_slice(b"[{\"@type\":\"");
    out.extend_from_slice(ERROR_INFO_TYPE.as_bytes());
    out.extend_from_slice(b"\",\"reason\":");
    write_str(out, err.reason());
    out.extend_from_slice(b",\"domain\":");
    write_str(out, err.domain());
    out.extend_from_slice(b",\"metadata\":{");
    let hint = err.retry_hint();
    match retry_marker(err.code(), hint) {
        Some(retryable) => {
            out.extend_from_slice(if retryable {
                b"\"retryable\":\"true\""
            } else {
                b"\"retryable\":\"false\""
            });
            data(out, DataAt::MetadataAfter);
        }
        None => data(out, DataAt::Metadata),
    }
    out.extend_from_slice(b"}}");
    if let RetryHint::After(delay) = hint {
        out.extend_from_slice(b",{\"@type\":\"");
        out.extend_from_slice(RETRY_INFO_TYPE.as_bytes());
        out.extend_from_slice(b"\",\"retryDelay\":\"");
        write_proto_duration(out, delay);
        out.extend_from_slice(b"\"}");
    }
    err.write_extra_details(out);
    out.push(b']');
}

/// The `retryable` ErrorInfo metadata entry an error needs: present only when its advice
/// differs from what a peer infers from the code alone (the table's default retry; unknown
/// codes are not retried) and no RetryInfo already says "retry". So a sanitized panic, -32603
/// whose table default is to retry, carries `"retryable":"false"`, and a peer that reads it
/// does not repeat the call. The name is reserved: no data field may use it.
fn retry_marker(code: i32, hint: RetryHint) -> Option<bool> {
    if hint.delay().is_some() {
        return None;
    }
    let by_default = crate::code::lookup(code)
        .is_some_and(|row| row.retry == crate::code::DefaultRetry::Backoff);
    (hint.is_retryable() != by_default).then_some(hint.is_retryable())
}

/// Appends the REST binding's `google.rpc.Status` body:
/// `{"error":{"code":HTTP,"status":GRPC,"message":…,"details":[…]}}`, with the gRPC status
/// name of `mapping`.
pub fn write_rest_status<E: A2aError + ?Sized>(
    err: &E,
    http_status: u16,
    mapping: crate::code::StatusMapping,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(b"{\"error\":{\"code\":");
    let _ = serde_json::to_writer(&mut *out, &http_status);
    out.extend_from_slice(b",\"status\":");
    write_str(out, grpc_status_name(err, http_status, mapping));
    out.extend_from_slice(b",\"message\":");
    write_str(out, &err.public_message());
    out.extend_from_slice(b",\"details\":");
    write_details(err, out);
    out.extend_from_slice(b"}}");
}

/// The gRPC status name of `err` sent with HTTP status `http_status` under `mapping`: the
/// error's own name when nothing is remapped (so a transparent variant or a received error
/// keeps its own), else the mapping's. Both the REST body and the gRPC status say this.
pub fn grpc_status_name<E: A2aError + ?Sized>(
    err: &E,
    http_status: u16,
    mapping: crate::code::StatusMapping,
) -> &'static str {
    match mapping {
        crate::code::StatusMapping::V1_0_1 if http_status == err.http_status() => err.grpc_status(),
        _ => mapping.grpc_status(err.code(), http_status),
    }
}

fn write_int(out: &mut Vec<u8>, value: i32) {
    // Writing an integer into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, &value);
}

/// Protobuf `Duration` JSON: seconds with an `s` suffix and 0, 3, 6 or 9 fractional digits.
/// A protobuf `Duration` in its JSON form, as RetryInfo's `retryDelay` carries it (`"10s"`,
/// `"1.500s"`).
pub fn proto_duration(delay: Duration) -> String {
    let mut out = Vec::with_capacity(16);
    write_proto_duration(&mut out, delay);
    String::from_utf8(out).unwrap_or_default()
}

fn write_proto_duration(out: &mut Vec<u8>, delay: Duration) {
    let _ = serde_json::to_writer(&mut *out, &delay.as_secs());
    let nanos = delay.subsec_nanos();
    if nanos != 0 {
        let (value, width) = if nanos.is_multiple_of(1_000_000) {
            (nanos / 1_000_000, 3)
        } else if nanos.is_multiple_of(1_000) {
            (nanos / 1_000, 6)
        } else {
            (nanos, 9)
        };
        out.extend_from_slice(format!(".{value:0width$}").as_bytes());
    }
    out.push(b's');
}

/// Legacy `retryAfter`: whole seconds as an integer, else a fractional number.
fn write_seconds(out: &mut Vec<u8>, delay: Duration) {
    if delay.subsec_nanos() == 0 {
        let _ = serde_json::to_writer(&mut *out, &delay.as_secs());
    } else {
        let _ = serde_json::to_writer(&mut *out, &delay.as_secs_f64());
    }
}

#[cfg(test)]
mod encode_tests {
    use super::*;

    #[test]
    fn proto_durations_use_0_3_6_or_9_digits() {
        assert_eq!(proto_duration(Duration::from_secs(10)), "10s");
        assert_eq!(proto_duration(Duration::from_millis(1500)), "1.500s");
        assert_eq!(proto_duration(Duration::from_micros(1)), "0.000001s");
        assert_eq!(proto_duration(Duration::from_nanos(5)), "0.000000005s");
        assert_eq!(proto_duration(Duration::from_nanos(1)), "0.000000001s");
        assert_eq!(proto_duration(Duration::ZERO), "0s");
    }
}
