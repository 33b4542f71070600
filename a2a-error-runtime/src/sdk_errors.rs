//! Errors both ways between this crate and the SDK's `a2a::A2AError`.
//!
//! `A2AError` is a code, a message and a list of typed details: exactly an A2A 1.0 error
//! object. Ours become one with their public message and their details (ErrorInfo with
//! reason, domain and data fields; RetryInfo; BadRequest), and a received one becomes an
//! [`ErrorObject`] again, so the user's enum, [`RemoteError`] and the retry classification
//! read it as they read a reply of our own transport.

use std::time::Duration;

use a2a::{A2AError, TypedDetail};
use serde_json::{Map, Value, json};

use crate::client::{ClientError, Downstream, ResponseHead};
use crate::resilience::Timeout;
use crate::wire::code;
use crate::wire::error::ERROR_INFO_TYPE;
use crate::wire::error::{A2aError, FromErrorObject};
use crate::wire::object::ErrorObject;
use crate::wire::remote::RemoteError;
use crate::wire::text::{LOG_BYTES, Shown};

/// The `@type` of the detail in which the bridge's transport keeps what our
/// [`ClientError`] knew (HTTP status, `Retry-After`, which timeout, connection failure or
/// server error), so that [`client_error`] recovers it from the `A2AError` the SDK's
/// `Transport` must return. It never reaches a wire of ours: [`error_object`] leaves it out.
pub const CLIENT_FAILURE_TYPE: &str = "type.googleapis.com/a2a_error.ClientFailure";

/// The longest message of an SDK error the bridge sends as it is; a longer one is cut (its
/// ids and texts may be a caller's).
const MESSAGE_BYTES: usize = 512;

/// `err` as the SDK's error: its code, its public message (never the `Display` text) and its
/// typed details: ErrorInfo with the reason, domain and `#[a2a(data)]` fields, RetryInfo and
/// any BadRequest. This is what `?` does with a derived enum in an `AgentExecutor` (the
/// derive emits `From<YourError> for a2a::A2AError` when the `sdk` feature is on).
pub fn to_sdk<E: A2aError + ?Sized>(err: &E) -> A2AError {
    from_object(err.to_error_object())
}

/// An error object as the SDK's error (its `data` array as the details).
pub(crate) fn from_object(object: ErrorObject) -> A2AError {
    let details: Vec<TypedDetail> = match object.data {
        Some(Value::Array(items)) => items
            .into_iter()
            .filter_map(|item| serde_json::from_value(item).ok())
            .collect(),
        Some(Value::Object(legacy)) => vec![TypedDetail::from_struct(legacy.into_iter().collect())],
        _ => Vec::new(),
    };
    A2AError {
        code: object.code,
        message: object.message,
        details: (!details.is_empty()).then_some(details),
    }
}

/// The error object an SDK error stands for: its code, message and details as `data`
/// (without the bridge's own [`CLIENT_FAILURE_TYPE`]). Read within
/// [`MAX_DATA_NODES`](crate::MAX_DATA_NODES), as a reply of our own transport is.
pub fn error_object(err: &A2AError) -> ErrorObject {
    let details: Vec<&TypedDetail> = err
        .details
        .iter()
        .flatten()
        .filter(|detail| detail.type_url != CLIENT_FAILURE_TYPE)
        .collect();
    let text = json!({
        "code": err.code,
        "message": err.message,
        "data": (!details.is_empty()).then_some(details),
    });
    // Through the bounded reader: the details may be a peer's, of any size.
    serde_json::from_value(text).unwrap_or_else(|_| ErrorObject::new(err.code, &err.message))
}

/// An SDK error as a [`RemoteError`]: reason, domain, data fields, retry delay, retry
/// advice, all as from our own transport.
pub fn remote(err: &A2AError) -> RemoteError {
    RemoteError::from_object(with_code_from_reason::<RemoteError>(error_object(err)))
}

/// An SDK error decoded into the caller's own enum `E` (the variant whose code and reason it
/// carries), or `None` when `E` has no such variant. Over REST, where a reply carries only
/// the reason, the code is rebuilt from `E`'s variant with that reason, as our own REST client
/// does.
pub fn decode<E: FromErrorObject>(err: &A2AError) -> Option<E> {
    E::from_error_object(&with_code_from_reason::<E>(error_object(err)))
}

/// A REST reply carries only the reason: the SDK's client keeps its code as INTERNAL for a
/// reason it does not know. Rebuild the code the way our REST client does, from the variant
/// of `E` with that reason, when the code says nothing of its own.
fn with_code_from_reason<E: FromErrorObject>(mut object: ErrorObject) -> ErrorObject {
    let generic = object.code == code::INTERNAL_ERROR || code::lookup(object.code).is_none();
    if generic && let Some(code) = crate::wire::error::code_for_reason::<E>(&object) {
        object.code = code;
    }
    object
}

/// What the bridge's endpoint sends for an error the SDK's handler returned.
///
/// An error with an ErrorInfo was made for the wire (ours, through [`to_sdk`]): it goes as it
/// is. One without was made by the SDK (its protocol errors: "task not found: t1") or by an
/// executor from its own text (`A2AError::internal(e.to_string())`): the SDK's protocol
/// errors keep their message, cut to 512 bytes, and our encoder adds the code's ErrorInfo;
/// an internal or unknown code sends only the code table's public message, and the text
/// goes to the log.
#[doc(hidden)]
pub fn public(err: &A2AError) -> RemoteError {
    let made_for_the_wire = err
        .details
        .iter()
        .flatten()
        .any(|detail| detail.type_url == ERROR_INFO_TYPE);
    if made_for_the_wire {
        return RemoteError::from_object(error_object(err));
    }
    match code::lookup(err.code) {
        Some(row) if err.code != code::INTERNAL_ERROR => {
            RemoteError::new(row.code, cut(&err.message, MESSAGE_BYTES))
        }
        _ => {
            tracing::error!(
                code = err.code,
                "an SDK error without ErrorInfo: {}",
                Shown::new(&err.message, LOG_BYTES * 16)
            );
            let row = code::row(code::INTERNAL_ERROR);
            RemoteError::new(row.code, row.message)
        }
    }
}

use crate::wire::text::cut;

/// A downstream failure inside an executor (`?` on a call of the typed client) as the SDK's
/// error: DOWNSTREAM_FAILED (or DEADLINE_EXCEEDED, AGENT_UNAVAILABLE…), translated and
/// capped exactly as this crate's own endpoint passes it on.
impl<E: A2aError + 'static> From<ClientError<E>> for A2AError {
    fn from(error: ClientError<E>) -> Self {
        to_sdk(&error)
    }
}

/// As for [`ClientError`], with the failed agent's name in the chain.
impl<E: A2aError + 'static> From<Downstream<E>> for A2AError {
    fn from(error: Downstream<E>) -> Self {
        to_sdk(&error)
    }
}

/// A dependency's failure inside an executor (`?` on a model or tool call passed on with
/// [`DependencyFailed`](crate::dependency::DependencyFailed)) as the SDK's error.
impl From<crate::dependency::DependencyFailed> for A2AError {
    fn from(error: crate::dependency::DependencyFailed) -> Self {
        to_sdk(&error)
    }
}

/// A failure of the bridge's transport as the SDK's error its `Transport` returns: an error
/// reply is the peer's own object (so the caller's enum decodes from it, as from our own
/// client), a local failure is what passing it on would make of it (DEADLINE_EXCEEDED for a
/// timeout, AGENT_UNAVAILABLE for an open circuit…). Either way a [`CLIENT_FAILURE_TYPE`]
/// detail keeps what [`client_error`] needs to rebuild the [`ClientError`].
#[doc(hidden)]
pub fn from_client_failure(error: &ClientError) -> A2AError {
    let mut a2a = match error.remote() {
        Some(remote) => from_object(remote.object().clone()),
        None => to_sdk(error),
    };
    let mut failure = Map::new();
    let (kind, extra): (&str, Option<(&str, Value)>) = match error {
        ClientError::Remote { .. } | ClientError::Unrecognized(_) => ("remote", None),
        ClientError::Status(_) => ("status", None),
        ClientError::Timeout(which) => ("timeout", Some(("timeout", json!(timeout_name(*which))))),
        ClientError::Connect(source) => ("connect", Some(("detail", json!(source.to_string())))),
        ClientError::Transport(source) => {
            ("transport", Some(("detail", json!(source.to_string()))))
        }
        ClientError::Malformed { detail, .. } => ("malformed", Some(("detail", json!(detail)))),
        ClientError::ReplyTooLarge { limit, .. } => {
            ("replyTooLarge", Some(("limit", json!(limit))))
        }
        ClientError::InvalidCall { detail } => ("invalidCall", Some(("detail", json!(detail)))),
        ClientError::CircuitOpen { retry_after } => (
            "circuitOpen",
            Some(("retryAfterMs", json!(retry_after.as_millis() as u64))),
        ),
        ClientError::BulkheadFull => ("bulkheadFull", None),
    };
    failure.insert("kind".into(), json!(kind));
    if let Some((key, value)) = extra {
        failure.insert(key.into(), value);
    }
    if let Some(http) = error.http() {
        failure.insert("httpStatus".into(), json!(http.status));
        if let Some(value) = http
            .headers
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
        {
            failure.insert("retryAfter".into(), json!(value));
        }
    }
    a2a.details
        .get_or_insert_with(Vec::new)
        .push(TypedDetail::new(
            CLIENT_FAILURE_TYPE,
            failure.into_iter().collect(),
        ));
    a2a
}

fn timeout_name(which: Timeout) -> &'static str {
    match which {
        Timeout::Connect => "connect",
        Timeout::Attempt => "attempt",
        Timeout::Total => "total",
        Timeout::Idle => "idle",
    }
}

/// The [`ClientError`] behind an error the bridge's transport returned: the HTTP status and
/// `Retry-After` of the reply, which timeout fired, a connection that never opened or one
/// lost mid-reply, an open circuit. `None` for an `A2AError` that did not come from it. A
/// connection failure's source is rebuilt as its text (the `A2AError` is plain data).
///
/// ```no_run
/// # mod a2a_error {
/// #     pub use a2a_error_runtime::*;
/// #     pub mod sdk { pub use a2a_error_runtime::sdk_errors::*; }
/// # }
/// # fn f(err: a2a::A2AError) {
/// use a2a_error::client::ClientError;
/// use a2a_error::resilience::Timeout;
/// match a2a_error::sdk::client_error::<a2a_error::RemoteError>(&err) {
///     Some(ClientError::Timeout(Timeout::Attempt)) => { /* the peer may still be working */ }
///     Some(other) => println!("HTTP status {:?}", other.reply_status()),
///     None => {}
/// }
/// # }
/// ```
pub fn client_error<E: FromErrorObject>(err: &A2AError) -> Option<ClientError<E>> {
    let failure = err
        .details
        .iter()
        .flatten()
        .find(|detail| detail.type_url == CLIENT_FAILURE_TYPE)?;
    let field = |key: &str| failure.value.get(key);
    let text = |key: &str| {
        field(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let http = field("httpStatus")
        .and_then(Value::as_u64)
        .and_then(|status| u16::try_from(status).ok())
        .map(|status| {
            let mut headers = reqwest::header::HeaderMap::new();
            if let Some(value) = field("retryAfter")
                .and_then(Value::as_str)
                .and_then(|value| reqwest::header::HeaderValue::from_str(value).ok())
            {
                headers.insert(reqwest::header::RETRY_AFTER, value);
            }
            ResponseHead { status, headers }
        });
    Some(match field("kind").and_then(Value::as_str)? {
        "remote" => ClientError::from_object(with_code_from_reason::<E>(error_object(err)), http),
        "status" => ClientError::Status(Box::new(http?)),
        "timeout" => ClientError::Timeout(match text("timeout").as_str() {
            "connect" => Timeout::Connect,
            "attempt" => Timeout::Attempt,
            "idle" => Timeout::Idle,
            _ => Timeout::Total,
        }),
        "connect" => ClientError::Connect(text("detail").into()),
        "transport" => ClientError::Transport(text("detail").into()),
        "malformed" => ClientError::Malformed {
            detail: text("detail"),
            http: http.map(Box::new),
        },
        "replyTooLarge" => ClientError::ReplyTooLarge {
            limit: field("limit")
                .and_then(Value::as_u64)
                .and_then(|limit| usize::try_from(limit).ok())
                .unwrap_or_default(),
            http: http.map(Box::new),
        },
        "invalidCall" => ClientError::InvalidCall {
            detail: text("detail"),
        },
        "circuitOpen" => ClientError::CircuitOpen {
            retry_after: Duration::from_millis(
                field("retryAfterMs")
                    .and_then(Value::as_u64)
                    .unwrap_or_default(),
            ),
        },
        "bulkheadFull" => ClientError::BulkheadFull,
        _ => return None,
    })
}
