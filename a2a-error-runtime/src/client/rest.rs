//! The HTTP+JSON (REST) binding: A2A methods as routes, errors as `google.rpc.Status` bodies.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use reqwest::Method;
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use serde::Deserialize;
use serde_json::Value;

use super::call::{Call, Reply};
use super::error::{ClientError, HttpReply};
use super::http::{self, Http, ReplyLimits};
use crate::code;
use crate::error::FromErrorObject;
use crate::object::ErrorObject;
use crate::remote::RemoteError;

/// A transport for the HTTP+JSON binding: a `tower::Service<Call>` that maps each A2A method to
/// its route (`SendMessage` → `POST /message:send`, `GetTask` → `GET /tasks/{id}`, …) and
/// decodes `google.rpc.Status` error bodies through `E`'s mirror.
pub struct RestTransport<E = RemoteError> {
    http: Http,
    errors: PhantomData<fn() -> E>,
}

impl<E> Clone for RestTransport<E> {
    fn clone(&self) -> Self {
        Self::from_http(self.http.clone())
    }
}

impl<E> std::fmt::Debug for RestTransport<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RestTransport")
            .field(&self.http.url.as_str())
            .finish()
    }
}

impl<E> RestTransport<E> {
    /// A transport for the agent whose HTTP+JSON interface is at `base`.
    pub fn new(client: reqwest::Client, base: reqwest::Url) -> Self {
        Self::from_http(Http::new(client, base))
    }

    fn from_http(http: Http) -> Self {
        RestTransport {
            http,
            errors: PhantomData,
        }
    }

    /// Sets the `A2A-Version` header sent (default `1.0`).
    pub fn version(mut self, version: HeaderValue) -> Self {
        self.http.version = version;
        self
    }

    /// Sets what is accepted from the peer (default [`ReplyLimits::default`]).
    pub fn limits(mut self, limits: ReplyLimits) -> Self {
        self.http.limits = limits;
        self
    }
}

/// Where a method goes: HTTP method, path segments, and whether the params are the body.
struct Route {
    method: Method,
    segments: Vec<String>,
    body: bool,
}

fn task_id(params: &Value) -> Option<String> {
    params.get("id")?.as_str().map(str::to_owned)
}

fn route(call: &Call) -> Result<Route, String> {
    let params: Value = if call.params().is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(call.params()).map_err(|e| format!("params are not JSON: {e}"))?
    };
    let with_id = |suffix: &str| {
        task_id(&params)
            .map(|id| vec!["tasks".to_owned(), format!("{id}{suffix}")])
            .ok_or_else(|| format!("{} needs a string \"id\" in its params", call.method()))
    };
    let (method, segments, body) = match call.method() {
        "SendMessage" | "message/send" => (Method::POST, vec!["message:send".into()], true),
        "SendStreamingMessage" | "message/stream" => {
            (Method::POST, vec!["message:stream".into()], true)
        }
        "GetTask" | "tasks/get" => (Method::GET, with_id("")?, false),
        "CancelTask" | "tasks/cancel" => (Method::POST, with_id(":cancel")?, true),
        "SubscribeToTask" | "tasks/resubscribe" => (Method::GET, with_id(":subscribe")?, false),
        "ListTasks" | "tasks/list" => (Method::GET, vec!["tasks".into()], false),
        "GetExtendedAgentCard" => (Method::GET, vec!["extendedAgentCard".into()], false),
        other => return Err(format!("no HTTP+JSON route for method {other:?}")),
    };
    Ok(Route {
        method,
        segments,
        body,
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
    if let Some(reason) = object.reason() {
        if let Some(code) = E::code_for_reason(reason) {
            return code;
        }
        if let Some(row) = a2a_error_codes::by_reason(reason) {
            return row.code;
        }
    }
    code_for_status(status, grpc)
}

/// The code of a Status body without a known reason. The v1.0.0 statuses (409, 415) map to
/// the spec errors that had them. Whatever is left is INTERNAL_ERROR, which is retried with
/// backoff and may have run: never a claim that the caller made a mistake or that the peer
/// did not act, which an unknown status does not prove.
fn code_for_status(status: u16, grpc: Option<&str>) -> i32 {
    match (grpc, status) {
        (Some("UNAUTHENTICATED"), _) | (None, 401) => code::AUTH_REQUIRED,
        (Some("PERMISSION_DENIED"), _) | (None, 403) => code::INSUFFICIENT_SCOPE,
        (Some("RESOURCE_EXHAUSTED"), _) | (None, 429) => code::RATE_LIMITED,
        (Some("DEADLINE_EXCEEDED"), _) | (None, 408 | 504) => code::DEADLINE_EXCEEDED,
        (Some("UNAVAILABLE"), 502) | (None, 502) => code::DOWNSTREAM_FAILED,
        (Some("UNAVAILABLE"), _) | (None, 503) => code::AGENT_UNAVAILABLE,
        // A REST route names a task; a route this peer lacks is METHOD_NOT_FOUND with an
        // ErrorInfo when the peer is A2A at all.
        (Some("NOT_FOUND"), _) | (None, 404) => code::TASK_NOT_FOUND,
        (Some("UNIMPLEMENTED"), _) | (None, 405 | 501) => code::UNSUPPORTED_OPERATION,
        (Some("FAILED_PRECONDITION") | None, 409) => code::TASK_NOT_CANCELABLE,
        (_, 413) => code::CONTENT_TOO_LARGE,
        (Some("INVALID_ARGUMENT") | None, 415) => code::CONTENT_TYPE_NOT_SUPPORTED,
        (Some("INVALID_ARGUMENT" | "OUT_OF_RANGE"), _) | (None, 400 | 422) => code::INVALID_PARAMS,
        _ => code::INTERNAL_ERROR,
    }
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
    http: HttpReply,
) -> Result<Value, ClientError<E>> {
    if !http.is_success() {
        return match status_object::<E>(body, http.status) {
            Some(object) => Err(ClientError::from_object(object, Some(http))),
            None => Err(ClientError::Status(Box::new(http))),
        };
    }
    if body.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(body)
        .map_err(|error| http::unexpected(http, format!("reply is not JSON: {error}")))
}

/// One SSE event: an item, or (event `error`, or a Status body) the error that ends the stream.
pub(crate) fn decode_event<E: FromErrorObject>(
    event: &eventsource_stream::Event,
    http: &HttpReply,
) -> Result<Value, ClientError<E>> {
    let value: Value =
        serde_json::from_str(&event.data).map_err(|error| ClientError::Malformed {
            detail: format!("event is not JSON: {error}"),
            http: None,
        })?;
    let is_status = value
        .get("error")
        .is_some_and(|e| e.get("message").is_some());
    if event.event == "error" || is_status {
        return match status_object::<E>(event.data.as_bytes(), http.status) {
            Some(object) => Err(ClientError::from_object(object, None)),
            None => Err(ClientError::Malformed {
                detail: "error event is not a google.rpc.Status".into(),
                http: None,
            }),
        };
    }
    Ok(value)
}

async fn exchange<E>(
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
        return http::event_stream(response, http.limits, deadline, move |event| {
            decode_event(&event, &reply)
        })
        .await;
    }
    let body = http::body(response, &reply, http.limits.body_limit()).await?;
    decode(&body, reply).map(Reply::Result)
}

impl<E> tower::Service<Call> for RestTransport<E>
where
    E: FromErrorObject + Send + 'static,
{
    type Response = Reply<E>;
    type Error = ClientError<E>;
    type Future = Pin<Box<dyn Future<Output = Result<Reply<E>, ClientError<E>>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: Call) -> Self::Future {
        let deadline = http::call_deadline(&call);
        Box::pin(http::within_deadline(
            deadline,
            exchange(self.http.clone(), call, deadline),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::A2aError;

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
    fn status_bodies_keep_reason_and_infer_the_code() {
        let body = br#"{"error":{"code":404,"status":"NOT_FOUND","message":"Task not found",
            "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo",
            "reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"taskId":"t"}}]}}"#;
        let http = HttpReply {
            status: 404,
            headers: Default::default(),
        };
        let err = decode::<RemoteError>(body, http.clone()).unwrap_err();
        let object = err.remote().unwrap();
        assert_eq!(object.code(), code::TASK_NOT_FOUND);
        assert_eq!(object.metadata_map()["taskId"], "t");
        let custom = br#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"slow down",
            "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"QUOTA","domain":"x"}]}}"#;
        let err = decode::<RemoteError>(
            custom,
            HttpReply {
                status: 429,
                ..http.clone()
            },
        )
        .unwrap_err();
        assert_eq!(err.remote().unwrap().code(), code::RATE_LIMITED);
        assert_eq!(err.remote().unwrap().reason(), "QUOTA");
        let page = decode::<RemoteError>(
            b"<html/>",
            HttpReply {
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
            let http = HttpReply {
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
