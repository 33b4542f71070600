//! Errors in the gRPC binding (feature `grpc`): an [`A2aError`] as a `tonic::Status` and a
//! received `tonic::Status` as an [`ErrorObject`], so that the user's enum, [`RemoteError`]
//! and the retry classification read a gRPC error as they read a JSON-RPC or REST one.
//!
//! A2A 1.0 (§10.6) sends an error over gRPC as a `google.rpc.Status` in the
//! `grpc-status-details-bin` trailer: the gRPC status code of the code table, the public
//! message, and the same typed details the other bindings carry as JSON: `ErrorInfo` (reason,
//! domain, the `#[a2a(data)]` fields as string metadata), `RetryInfo` when a delay is known,
//! `BadRequest` for field violations. A delay also goes in the `grpc-retry-pushback-ms`
//! trailer (gRPC A6), which gRPC's own retry policies read.
//!
//! ```
//! # use a2a_error_runtime as a2a_error;
//! use a2a_error::{A2aError, StandardError, grpc};
//!
//! let status = grpc::to_status(&StandardError::TaskNotFound { task_id: Some("t-1".into()) });
//! assert_eq!(status.code(), tonic::Code::NotFound);
//! let back = grpc::remote(&status);
//! assert_eq!(back.code(), -32001);
//! assert_eq!(back.reason(), "TASK_NOT_FOUND");
//! ```
//!
//! What a peer sends is bounded: the status rides in one HTTP/2 header block, which the
//! transports of this crate cap at [`MAX_HEADER_LIST_BYTES`]; at most [`MAX_DETAILS`] details
//! are read, and their JSON is read within [`MAX_DATA_NODES`](crate::MAX_DATA_NODES), as any
//! error object is.

use std::time::Duration;

use base64::Engine as _;
use prost::Message as _;
use serde_json::{Map, Value, json};
use tonic_types::pb;

use crate::wire::code::{self, StatusMapping};
use crate::wire::error::{A2aError, FromErrorObject};
use crate::wire::error::{
    BAD_REQUEST_TYPE, ERROR_INFO_TYPE, RETRY_INFO_TYPE, grpc_status_name, proto_duration,
};
use crate::wire::object::{ErrorObject, detail_type, parse_proto_duration};
use crate::wire::remote::RemoteError;

/// The trailer of gRPC A6's server pushback: the delay before a retry, in milliseconds.
pub const PUSHBACK_HEADER: &str = "grpc-retry-pushback-ms";

/// The most details read of a received status; the rest are dropped.
pub const MAX_DETAILS: usize = 32;

/// The largest header block (and so the largest status, details included) this crate's gRPC
/// client and server accept: 64 KiB. gRPC's own implementations default to 8–16 KiB.
pub const MAX_HEADER_LIST_BYTES: u32 = 64 << 10;

/// `err` as a gRPC status: the status code of the code table (A2A v1.0.1 mapping), the public
/// message (never the `Display` text), the ErrorInfo/RetryInfo/BadRequest details, and the
/// `grpc-retry-pushback-ms` trailer when a delay is known. This is what `?` does with a
/// derived enum in a tonic service (the derive emits `From<YourError> for tonic::Status`
/// when the `grpc` feature is on).
pub fn to_status<E: A2aError + ?Sized>(err: &E) -> tonic::Status {
    to_status_with(err, StatusMapping::V1_0_1)
}

/// As [`to_status`], with the status code of `mapping` (v1.0.0 for old peers).
pub fn to_status_with<E: A2aError + ?Sized>(err: &E, mapping: StatusMapping) -> tonic::Status {
    let name = grpc_status_name(err, err.http_status(), mapping);
    status_of(code_named(name), &err.to_error_object())
}

/// An error object as a gRPC status with `code`: its message, and its typed details as
/// protobuf `Any`s. Every status this crate sends carries an ErrorInfo (the spec's MUST):
/// one from the code table when the object has none. Details received over gRPC of a type
/// this crate does not know (kept as `{"@type", "value": base64}`) go back as they came; a
/// JSON detail of such a type has no protobuf form and is left out.
pub(crate) fn status_of(code: tonic::Code, object: &ErrorObject) -> tonic::Status {
    let mut details = Vec::new();
    let mut pushback = None;
    for detail in object.details() {
        let any = match detail_type(detail) {
            Some("google.rpc.ErrorInfo") => any(ERROR_INFO_TYPE, &error_info(detail)),
            Some("google.rpc.RetryInfo") => {
                let Some(delay) = detail.get("retryDelay").and_then(parse_proto_duration) else {
                    continue;
                };
                pushback = Some(delay);
                any(RETRY_INFO_TYPE, &retry_info(delay))
            }
            Some("google.rpc.BadRequest") => any(BAD_REQUEST_TYPE, &bad_request(detail)),
            _ => match opaque(detail) {
                Some(any) => any,
                None => continue,
            },
        };
        details.push(any);
    }
    if object.error_info().is_none() {
        let info = pb::ErrorInfo {
            reason: object
                .reason()
                .or_else(|| code::default_reason(object.code))
                .unwrap_or("INTERNAL_ERROR")
                .to_owned(),
            domain: object.domain().unwrap_or(code::SPEC_DOMAIN).to_owned(),
            metadata: Default::default(),
        };
        details.insert(0, any(ERROR_INFO_TYPE, &info));
    }
    let status = pb::Status {
        code: code as i32,
        message: object.message.clone(),
        details,
    };
    let mut metadata = tonic::metadata::MetadataMap::new();
    if let Some(delay) = pushback
        && let Ok(value) = delay.as_millis().to_string().parse()
    {
        metadata.insert(PUSHBACK_HEADER, value);
    }
    tonic::Status::with_details_and_metadata(
        code,
        object.message.clone(),
        status.encode_to_vec().into(),
        metadata,
    )
}

fn any(type_url: &str, message: &impl prost::Message) -> prost_types::Any {
    prost_types::Any {
        type_url: type_url.to_owned(),
        value: message.encode_to_vec(),
    }
}

/// An ErrorInfo detail's JSON as protobuf: metadata is a string map, so a value that is not a
/// string goes as its JSON text (which the decoders of every binding read back).
fn error_info(detail: &Map<String, Value>) -> pb::ErrorInfo {
    let text = |key: &str| {
        detail
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let metadata = detail
        .get("metadata")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(key, value)| {
            let value = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            (key.clone(), value)
        })
        .collect();
    pb::ErrorInfo {
        reason: text("reason"),
        domain: text("domain"),
        metadata,
    }
}

fn retry_info(delay: Duration) -> pb::RetryInfo {
    pb::RetryInfo {
        retry_delay: Some(prost_types::Duration {
            seconds: i64::try_from(delay.as_secs()).unwrap_or(i64::MAX),
            nanos: delay.subsec_nanos() as i32,
        }),
    }
}

fn bad_request(detail: &Map<String, Value>) -> pb::BadRequest {
    let field_violations = detail
        .get("fieldViolations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|violation| {
            Some(pb::bad_request::FieldViolation {
                field: violation.get("field")?.as_str()?.to_owned(),
                description: violation.get("description")?.as_str()?.to_owned(),
                ..Default::default()
            })
        })
        .collect();
    pb::BadRequest { field_violations }
}

/// A detail received over gRPC whose type this crate does not read, as it came.
fn opaque(detail: &Map<String, Value>) -> Option<prost_types::Any> {
    let type_url = detail.get("@type")?.as_str()?;
    let value = detail.get("value")?.as_str()?;
    let value = base64::engine::general_purpose::STANDARD
        .decode(value)
        .ok()?;
    Some(prost_types::Any {
        type_url: type_url.to_owned(),
        value,
    })
}

/// A received status as an error object whose code is what `E` (or the code table) makes of
/// its ErrorInfo reason, else what the gRPC status code means (see [`code_for_status`]). The
/// details become the JSON the other bindings carry: ErrorInfo, RetryInfo (also from a
/// `grpc-retry-pushback-ms` trailer), BadRequest, and any other type as
/// `{"@type": …, "value": base64}`, so nothing is lost and passing it on sends it back as it
/// came. A `details` trailer that does not decode counts as none.
pub(crate) fn object_for<E: FromErrorObject>(status: &tonic::Status) -> ErrorObject {
    let received = pb::Status::decode(status.details()).unwrap_or_default();
    let mut data: Vec<Value> = received
        .details
        .iter()
        .take(MAX_DETAILS)
        .map(detail_json)
        .collect();
    let has_retry_info = data
        .iter()
        .any(|detail| detail.get("@type").and_then(Value::as_str) == Some(RETRY_INFO_TYPE));
    match pushback(status.metadata()) {
        Pushback::After(delay) if !has_retry_info => {
            data.push(json!({"@type": RETRY_INFO_TYPE, "retryDelay": proto_duration(delay)}));
        }
        // gRPC A6: a pushback that is negative or does not parse means "do not retry".
        Pushback::Never if !has_retry_info => never_retry(&mut data, status.code()),
        _ => {}
    }
    let mut text = json!({"code": 0, "message": status.message()});
    if !data.is_empty() {
        text["data"] = Value::Array(data);
    }
    // Through the bounded reader: the details are a peer's.
    let mut object: ErrorObject =
        serde_json::from_value(text).unwrap_or_else(|_| ErrorObject::new(0, status.message()));
    object.code = crate::wire::error::code_for_reason::<E>(&object)
        .unwrap_or_else(|| code_for_status(status.code()));
    object
}

/// One received detail as JSON: the three types A2A uses in their JSON form, any other as its
/// type and its bytes in base64.
fn detail_json(detail: &prost_types::Any) -> Value {
    let bytes = detail.value.as_slice();
    let known = match detail.type_url.as_str() {
        ERROR_INFO_TYPE => pb::ErrorInfo::decode(bytes).ok().map(|info| {
            json!({
                "@type": ERROR_INFO_TYPE,
                "reason": info.reason,
                "domain": info.domain,
                "metadata": info.metadata,
            })
        }),
        RETRY_INFO_TYPE => pb::RetryInfo::decode(bytes)
            .ok()
            .and_then(|info| info.retry_delay)
            .and_then(|delay| {
                let seconds = u64::try_from(delay.seconds).ok()?;
                let nanos = u32::try_from(delay.nanos)
                    .ok()
                    .filter(|n| *n < 1_000_000_000)?;
                Some(json!({
                    "@type": RETRY_INFO_TYPE,
                    "retryDelay": proto_duration(Duration::new(seconds, nanos)),
                }))
            }),
        BAD_REQUEST_TYPE => pb::BadRequest::decode(bytes).ok().map(|request| {
            let violations: Vec<Value> = request
                .field_violations
                .into_iter()
                .map(|v| json!({"field": v.field, "description": v.description}))
                .collect();
            json!({"@type": BAD_REQUEST_TYPE, "fieldViolations": violations})
        }),
        _ => None,
    };
    known.unwrap_or_else(|| {
        json!({
            "@type": detail.type_url,
            "value": base64::engine::general_purpose::STANDARD.encode(bytes),
        })
    })
}

/// What a `grpc-retry-pushback-ms` trailer says (gRPC A6).
#[derive(Debug, PartialEq)]
enum Pushback {
    /// No trailer.
    Absent,
    /// Retry after this delay: a non-negative number of milliseconds.
    After(Duration),
    /// Do not retry: the trailer is negative or does not parse.
    Never,
}

/// The `grpc-retry-pushback-ms` trailer, as A6 reads it: a delay when it is a non-negative
/// number of milliseconds, and "do not retry" when it is anything else.
fn pushback(metadata: &tonic::metadata::MetadataMap) -> Pushback {
    let Some(value) = metadata.get(PUSHBACK_HEADER) else {
        return Pushback::Absent;
    };
    let text = value.to_str().unwrap_or_default();
    // Nine digits: up to ~11 days, more than any retry policy waits; a longer number is
    // still a delay, capped there.
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Pushback::Never;
    }
    let millis = if text.len() > 9 {
        999_999_999
    } else {
        text.parse().unwrap_or(999_999_999)
    };
    Pushback::After(Duration::from_millis(millis))
}

/// Marks a received error "do not retry": the `retryable` ErrorInfo metadata entry this
/// crate's decoder reads, on the ErrorInfo the peer sent, or on one of the code table's for
/// the status code when it sent none.
fn never_retry(data: &mut Vec<Value>, status: tonic::Code) {
    let info = data
        .iter_mut()
        .find(|detail| detail.get("@type").and_then(Value::as_str) == Some(ERROR_INFO_TYPE));
    let info = match info {
        Some(info) => info,
        None => {
            let reason = code::lookup(code_for_status(status)).map_or("", |row| row.reason);
            data.push(json!({"@type": ERROR_INFO_TYPE, "reason": reason}));
            data.last_mut().expect("just pushed")
        }
    };
    if !info.get("metadata").is_some_and(Value::is_object) {
        info["metadata"] = json!({});
    }
    info["metadata"]["retryable"] = json!("false");
}

/// A `grpc-timeout` header's value (`"1500m"`: at most 8 digits and a unit of `H`, `M`, `S`,
/// `m`, `u`, `n`), as gRPC's HTTP/2 protocol spells it; `None` for anything else.
#[doc(hidden)]
pub fn parse_timeout(value: &[u8]) -> Option<Duration> {
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // Eight digits fit a u64 in every unit below.
    let amount: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(match unit {
        b'H' => Duration::from_secs(amount * 3600),
        b'M' => Duration::from_secs(amount * 60),
        b'S' => Duration::from_secs(amount),
        b'm' => Duration::from_millis(amount),
        b'u' => Duration::from_micros(amount),
        b'n' => Duration::from_nanos(amount),
        _ => return None,
    })
}

/// The A2A code a gRPC status code stands for when the status carries no ErrorInfo (a proxy,
/// a plain gRPC server, a peer outside A2A): what a retry can fix (UNAVAILABLE, ABORTED,
/// RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, INTERNAL, UNKNOWN) reads as a code retried by
/// default, and what it cannot (INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION,
/// UNIMPLEMENTED, the auth codes) as one never retried.
pub fn code_for_status(code: tonic::Code) -> i32 {
    use tonic::Code;
    match code {
        Code::InvalidArgument | Code::OutOfRange | Code::AlreadyExists => code::INVALID_PARAMS,
        Code::NotFound => code::TASK_NOT_FOUND,
        Code::FailedPrecondition => code::UNSUPPORTED_OPERATION,
        Code::Unimplemented => code::METHOD_NOT_FOUND,
        Code::Unauthenticated => code::AUTH_REQUIRED,
        Code::PermissionDenied => code::INSUFFICIENT_SCOPE,
        Code::ResourceExhausted => code::RATE_LIMITED,
        Code::DeadlineExceeded => code::DEADLINE_EXCEEDED,
        Code::Unavailable | Code::Aborted => code::AGENT_UNAVAILABLE,
        // OK as an error is not A2A.
        Code::Ok => code::INVALID_AGENT_RESPONSE,
        Code::Cancelled | Code::Unknown | Code::Internal | Code::DataLoss => code::INTERNAL_ERROR,
    }
}

/// The gRPC status code of a status name of the code table (`"NOT_FOUND"`); UNKNOWN for a
/// name gRPC does not have.
pub fn code_named(name: &str) -> tonic::Code {
    use tonic::Code;
    match name {
        "OK" => Code::Ok,
        "CANCELLED" => Code::Cancelled,
        "INVALID_ARGUMENT" => Code::InvalidArgument,
        "DEADLINE_EXCEEDED" => Code::DeadlineExceeded,
        "NOT_FOUND" => Code::NotFound,
        "ALREADY_EXISTS" => Code::AlreadyExists,
        "PERMISSION_DENIED" => Code::PermissionDenied,
        "RESOURCE_EXHAUSTED" => Code::ResourceExhausted,
        "FAILED_PRECONDITION" => Code::FailedPrecondition,
        "ABORTED" => Code::Aborted,
        "OUT_OF_RANGE" => Code::OutOfRange,
        "UNIMPLEMENTED" => Code::Unimplemented,
        "INTERNAL" => Code::Internal,
        "UNAVAILABLE" => Code::Unavailable,
        "DATA_LOSS" => Code::DataLoss,
        "UNAUTHENTICATED" => Code::Unauthenticated,
        _ => Code::Unknown,
    }
}

/// A received status as the error object it stands for (code from the table's reasons).
pub fn error_object(status: &tonic::Status) -> ErrorObject {
    object_for::<RemoteError>(status)
}

/// A received status as a [`RemoteError`]: code, message, reason, domain, data fields, retry
/// delay and every detail, unknown ones included.
pub fn remote(status: &tonic::Status) -> RemoteError {
    RemoteError::from_object(error_object(status))
}

/// A received status decoded into the caller's own enum `E`: the variant whose reason the
/// ErrorInfo carries (the code is rebuilt from it, as over REST), or `None`.
pub fn decode<E: FromErrorObject>(status: &tonic::Status) -> Option<E> {
    E::from_error_object(&object_for::<E>(status))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::standard::StandardError;

    #[test]
    fn table_names_are_grpc_codes() {
        for row in code::TABLE {
            assert_ne!(
                code_named(row.grpc_status),
                tonic::Code::Unknown,
                "{}",
                row.grpc_status
            );
            assert_ne!(code_named(row.grpc_status_v1_0_0), tonic::Code::Unknown);
        }
    }

    #[test]
    fn pushback_is_read_as_a6_reads_it() {
        let mut metadata = tonic::metadata::MetadataMap::new();
        assert_eq!(pushback(&metadata), Pushback::Absent);
        for (text, expected) in [
            ("1500", Pushback::After(Duration::from_millis(1500))),
            ("0", Pushback::After(Duration::ZERO)),
            (
                "9999999999999",
                Pushback::After(Duration::from_millis(999_999_999)),
            ),
            ("-1", Pushback::Never),
            ("1e9", Pushback::Never),
            ("", Pushback::Never),
            ("soon", Pushback::Never),
        ] {
            metadata.insert(PUSHBACK_HEADER, text.parse().unwrap());
            assert_eq!(pushback(&metadata), expected, "{text:?}");
        }
    }

    #[test]
    fn a_negative_pushback_means_do_not_retry() {
        use crate::wire::error::RetryHint;
        for with_info in [false, true] {
            let mut status = if with_info {
                to_status(&StandardError::AgentUnavailable { retry_after: None })
            } else {
                tonic::Status::unavailable("down")
            };
            status
                .metadata_mut()
                .insert(PUSHBACK_HEADER, "-1".parse().unwrap());
            let received = remote(&status);
            assert_eq!(received.code(), -32053, "{with_info}");
            assert_eq!(received.retry_hint(), RetryHint::Never, "{with_info}");
            // Without the trailer the same status is retried.
            status.metadata_mut().remove(PUSHBACK_HEADER);
            assert!(remote(&status).retry_hint().is_retryable(), "{with_info}");
        }
    }

    #[test]
    fn grpc_timeouts_parse_only_as_the_protocol_spells_them() {
        assert_eq!(parse_timeout(b"1500m"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_timeout(b"2S"), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_timeout(b"99999999H"),
            Some(Duration::from_secs(99_999_999 * 3600))
        );
        for bad in [
            &b""[..],
            b"m",
            b"123456789m",
            b"12x",
            b"-1S",
            b"1.5S",
            b"\xff1m",
        ] {
            assert_eq!(parse_timeout(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_status_without_error_info_still_gets_one() {
        let status = status_of(tonic::Code::Unavailable, &ErrorObject::new(-32053, "down"));
        let back = remote(&status);
        assert_eq!(back.received_reason(), Some("AGENT_UNAVAILABLE"));
        assert_eq!(back.code(), -32053);
        let internal = to_status(&StandardError::Internal);
        assert_eq!(internal.code(), tonic::Code::Internal);
    }

    #[test]
    fn a_peer_s_many_details_are_cut_to_the_bound() {
        let detail = prost_types::Any {
            type_url: "type.googleapis.com/acme.Noise".into(),
            value: vec![0; 16],
        };
        let status = tonic::Status::with_details(
            tonic::Code::Internal,
            "x",
            pb::Status {
                code: 13,
                message: "x".into(),
                details: vec![detail; 1000],
            }
            .encode_to_vec()
            .into(),
        );
        let object = error_object(&status);
        assert_eq!(object.details().count(), MAX_DETAILS);
        assert_eq!(object.code, code::INTERNAL_ERROR);
    }

    #[test]
    fn garbage_details_count_as_none() {
        let status = tonic::Status::with_details(
            tonic::Code::Unavailable,
            "x",
            bytes::Bytes::from_static(b"\xff\xff not protobuf"),
        );
        let object = error_object(&status);
        assert_eq!(object.code, code::AGENT_UNAVAILABLE);
        assert_eq!(object.data, None);
    }
}
