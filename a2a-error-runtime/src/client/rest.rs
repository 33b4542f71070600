//! The HTTP+JSON (REST) binding: A2A methods as routes, errors as `google.rpc.Status` bodies.

use reqwest::Method;
use reqwest::header::CONTENT_TYPE;
use serde::Deserialize;
use serde_json::Value;

use serde_json::value::RawValue;

use super::error::{ClientError, ResponseHead};
use super::flow::{Call, RawJson, Reply};
use super::http::{self, Http};
use crate::http::sse::StreamEvent;
use crate::wire::code;
use crate::wire::error::FromErrorObject;
use crate::wire::method::{self, Verb};
use crate::wire::object::ErrorObject;

/// Where a method goes: HTTP method, path segments, and whether the params are the body.
struct Route {
    method: Method,
    segments: Vec<String>,
    body: bool,
}

/// The route of `call`, from the method table.
fn route(call: &Call) -> Result<Route, String> {
    let Some(row) = method::lookup(call.method()) else {
        return Err(format!("no HTTP+JSON route for method {:?}", call.method()));
    };
    let params: Value = if call.params().is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(call.params()).map_err(|e| format!("params are not JSON: {e}"))?
    };
    Ok(Route {
        method: match row.verb {
            Verb::Get => Method::GET,
            Verb::Post => Method::POST,
            Verb::Delete => Method::DELETE,
        },
        segments: method::route_segments(row, &params)?,
        body: row.has_body(),
    })
}

/// A `google.rpc.Status` error body.
#[derive(Deserialize)]
struct StatusBody {
    error: Status,
}

#[derive(Deserialize)]
struct Status {
    /// The HTTP status the body stands for (in an SSE error event it differs from the 200 of
    /// the stream).
    code: Option<u16>,
    /// The gRPC status name.
    status: Option<String>,
    #[serde(default)]
    message: String,
    details: Option<Value>,
}

/// The JSON-RPC code a REST error stands for: the code `E` gives its ErrorInfo reason, else
/// the table row of that reason, else what the body's gRPC status name and HTTP status mean.
/// The received reason, domain and details are all kept by `RemoteError`; only the code is
/// inferred.
fn code_for<E: FromErrorObject>(object: &ErrorObject, status: u16, grpc: Option<&str>) -> i32 {
    crate::wire::error::code_for_reason::<E>(object)
        .unwrap_or_else(|| code::code_for_http(status, grpc))
}

/// Reads a REST error body into an error object; `None` when it is not a `google.rpc.Status`.
/// `status` is the HTTP status it came with, used when the body does not say its own.
fn status_object<E: FromErrorObject>(body: &[u8], status: u16) -> Option<ErrorObject> {
    let status_body: StatusBody = serde_json::from_slice(body).ok()?;
    let Status {
        code,
        status: grpc,
        message,
        details,
    } = status_body.error;
    let mut object = ErrorObject {
        code: 0,
        message,
        data: details,
    };
    object.code = code_for::<E>(&object, code.unwrap_or(status), grpc.as_deref());
    Some(object)
}

pub(crate) fn decode<E: FromErrorObject>(
    body: &[u8],
    http: ResponseHead,
) -> Result<RawJson, ClientError<E>> {
    if !http.is_success() {
        return match status_object::<E>(body, http.status) {
            Some(object) => Err(ClientError::from_object(object, Some(http))),
            None => Err(ClientError::Status(Box::new(http))),
        };
    }
    if body.is_empty() {
        return Ok(null());
    }
    serde_json::from_slice::<&RawValue>(body)
        .map(RawValue::to_owned)
        .map_err(|error| http::unexpected(http, format!("reply is not JSON: {error}")))
}

fn null() -> RawJson {
    RawValue::from_string("null".to_owned()).expect("`null` is JSON")
}

/// The part of an SSE event this binding looks at before handing the event on: an `error`
/// object with a `message` makes it a Status.
#[derive(Deserialize)]
struct EventShape<'a> {
    #[serde(borrow)]
    error: Option<ErrorShape<'a>>,
}

#[derive(Deserialize)]
struct ErrorShape<'a> {
    #[serde(default, borrow, deserialize_with = "crate::wire::jsonrpc::present")]
    message: Option<&'a RawValue>,
}

/// One SSE event: an item, or (event `error`, or a Status body) the error that ends the stream.
pub(crate) fn decode_event<E: FromErrorObject>(
    event: &StreamEvent,
    http: &ResponseHead,
) -> Result<RawJson, ClientError<E>> {
    let malformed = |error: serde_json::Error| ClientError::Malformed {
        detail: format!("event is not JSON: {error}"),
        http: None,
    };
    let raw: &RawValue = serde_json::from_str(&event.data).map_err(malformed)?;
    // An object whose `error` member has a `message` is a Status (an A2A event has none).
    let is_status = raw.get().starts_with('{')
        && serde_json::from_str::<EventShape<'_>>(raw.get())
            .is_ok_and(|shape| shape.error.is_some_and(|error| error.message.is_some()));
    if event.is("error") || is_status {
        return match status_object::<E>(event.data.as_bytes(), http.status) {
            Some(object) => Err(ClientError::from_object(object, None)),
            None => Err(ClientError::Malformed {
                detail: "error event is not a google.rpc.Status".into(),
                http: None,
            }),
        };
    }
    Ok(raw.to_owned())
}

pub(super) async fn exchange<E>(
    http: Http,
    call: Call,
    deadline: Option<tokio::time::Instant>,
) -> Result<Reply<E>, ClientError<E>>
where
    E: FromErrorObject + Send + 'static,
{
    let route = route(&call).map_err(|detail| ClientError::InvalidCall { detail })?;
    let mut url = http.url.clone();
    {
        let Ok(mut path) = url.path_segments_mut() else {
            return Err(ClientError::InvalidCall {
                detail: "the base URL cannot have a path".into(),
            });
        };
        path.pop_if_empty();
        path.extend(&route.segments);
    }
    let mut request = http.client.request(route.method, url);
    if route.body {
        request = request
            .header(CONTENT_TYPE, "application/json")
            .body(call.params().clone());
    }
    let response = http.send(http.headers(request, &call)).await?;
    let reply = http::http_reply(&response);
    if http::is_event_stream(&reply) && reply.is_success() {
        if !call.is_streaming() {
            return Err(http::unasked_stream(reply));
        }
        return http::event_stream(response, http.limits, deadline, move |event| {
            decode_event(&event, &reply)
        })
        .await;
    }
    let body = http::read_body(response, &reply, http.limits.body_limit()).await?;
    decode(&body, reply).map(Reply::Result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::error::A2aError;
    use crate::wire::remote::RemoteError;

    #[test]
    fn routes() {
        let get = route(&Call::from_json("GetTask", &br#"{"id":"t 1"}"#[..])).unwrap();
        assert_eq!(
            (get.method, get.segments),
            (Method::GET, vec!["tasks".into(), "t 1".into()])
        );
        let cancel = route(&Call::from_json("tasks/cancel", &br#"{"id":"t"}"#[..])).unwrap();
        assert_eq!(cancel.segments, vec!["tasks".to_owned(), "t:cancel".into()]);
        assert!(route(&Call::from_json("GetTask", &b"{}"[..])).is_err());
        assert!(route(&Call::from_json("Nope", &b"{}"[..])).is_err());
    }

    #[test]
    fn an_event_is_a_status_only_when_its_error_has_a_message() {
        let ok = ResponseHead {
            status: 200,
            headers: Default::default(),
        };
        let event = |data: &str| StreamEvent {
            event: String::new(),
            data: data.to_owned(),
        };
        for item in [
            r#"{"error":{"code":1}}"#,
            r#"{"error":"x"}"#,
            r#"{"error":null}"#,
            "[1]",
        ] {
            let got = decode_event::<RemoteError>(&event(item), &ok).unwrap();
            assert_eq!(got.get(), item);
        }
        let status = r#"{"error":{"code":503,"message":"down"}}"#;
        assert!(decode_event::<RemoteError>(&event(status), &ok).is_err());
    }

    #[test]
    fn status_bodies_keep_reason_and_infer_the_code() {
        let body = br#"{"error":{"code":404,"status":"NOT_FOUND","message":"Task not found",
            "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo",
            "reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"taskId":"t"}}]}}"#;
        let http = ResponseHead {
            status: 404,
            headers: Default::default(),
        };
        let err = decode::<RemoteError>(body, http.clone()).unwrap_err();
        let object = err.remote().unwrap();
        assert_eq!(object.code(), code::TASK_NOT_FOUND);
        assert_eq!(A2aError::metadata(object)["taskId"], "t");
        let custom = br#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"slow down",
            "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"QUOTA","domain":"x"}]}}"#;
        let err = decode::<RemoteError>(
            custom,
            ResponseHead {
                status: 429,
                ..http.clone()
            },
        )
        .unwrap_err();
        assert_eq!(err.remote().unwrap().code(), code::RATE_LIMITED);
        assert_eq!(err.remote().unwrap().reason(), "QUOTA");
        let page = decode::<RemoteError>(
            b"<html/>",
            ResponseHead {
                status: 502,
                ..http
            },
        )
        .unwrap_err();
        assert!(matches!(page, ClientError::Status(_)));
    }

    #[test]
    fn status_bodies_without_error_info_are_never_called_client_mistakes() {
        let body = |code: u16, status: &str| {
            format!(r#"{{"error":{{"code":{code},"status":"{status}","message":"m"}}}}"#)
        };
        let code_of = |text: String, http: u16| {
            let http = ResponseHead {
                status: http,
                headers: Default::default(),
            };
            decode::<RemoteError>(text.as_bytes(), http)
                .unwrap_err()
                .remote()
                .unwrap()
                .code()
        };
        assert_eq!(code_of(body(404, "NOT_FOUND"), 404), code::TASK_NOT_FOUND);
        assert_eq!(code_of(body(409, "ABORTED"), 409), code::INTERNAL_ERROR);
        assert_eq!(
            code_of(body(409, "FAILED_PRECONDITION"), 409),
            code::TASK_NOT_CANCELABLE
        );
        assert_eq!(
            code_of(body(415, "INVALID_ARGUMENT"), 415),
            code::CONTENT_TYPE_NOT_SUPPORTED
        );
        assert_eq!(code_of(body(418, "UNKNOWN"), 418), code::INTERNAL_ERROR);
        assert_eq!(
            code_of(body(503, "UNAVAILABLE"), 503),
            code::AGENT_UNAVAILABLE
        );
        // The body's own code wins over the HTTP status it came with (an SSE error event
        // arrives in a 200 stream).
        assert_eq!(
            code_of(body(429, "RESOURCE_EXHAUSTED"), 500),
            code::RATE_LIMITED
        );
        let no_name = r#"{"error":{"code":401,"message":"who?"}}"#.to_owned();
        assert_eq!(code_of(no_name, 500), code::AUTH_REQUIRED);
    }
}
