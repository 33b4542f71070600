//! `FaultAgent`: an A2A agent on loopback that answers every call from a script.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2a_error_runtime::Id;
use a2a_error_runtime::server::{Binding, sse_response};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::answer::{Answer, ErrorAnswer};
use crate::script::{Received, Script, Unanswered};

/// An A2A agent on 127.0.0.1 that answers each call from a script the test writes: per
/// method, or in the order the calls come, else a default. It speaks JSON-RPC (`POST /`) and
/// HTTP+JSON (the A2A routes), and streaming methods over SSE, and records every call it
/// received.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use a2a_error_testkit::{Answer, FaultAgent};
/// use std::time::Duration;
///
/// let agent = FaultAgent::start(Answer::result(serde_json::json!({"id": "t-1"}))).await;
/// agent.on("GetTask", [Answer::error(-32053).retry_after(Duration::from_secs(1)).into()]);
/// // … point the client under test at agent.url() …
/// assert!(agent.received().is_empty());
/// # }
/// ```
#[derive(Clone)]
pub struct FaultAgent {
    url: String,
    #[cfg(feature = "grpc")]
    grpc_url: String,
    script: Arc<Mutex<Script>>,
}

impl std::fmt::Debug for FaultAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultAgent")
            .field("url", &self.url)
            .finish()
    }
}

impl FaultAgent {
    /// Starts one on a fresh loopback port; it answers `otherwise` once the scripted answers
    /// are spent.
    pub async fn start(otherwise: Answer) -> FaultAgent {
        let script = Arc::new(Mutex::new(Script {
            otherwise: Some(otherwise),
            ..Script::default()
        }));
        let app = axum::Router::new()
            .fallback(serve_call)
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("a bound address"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        #[cfg(feature = "grpc")]
        let grpc_url = crate::grpc::serve(script.clone()).await;
        FaultAgent {
            url,
            #[cfg(feature = "grpc")]
            grpc_url,
            script,
        }
    }

    /// Where the same agent (the same script) serves `lf.a2a.v1.A2AService` over gRPC
    /// (`http://127.0.0.1:PORT`; feature `grpc`).
    #[cfg(feature = "grpc")]
    pub fn grpc_url(&self) -> &str {
        &self.grpc_url
    }

    /// The agent's base URL (`http://127.0.0.1:PORT`): JSON-RPC at `{url}/`, REST under it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Answers the next calls of `method` (an A2A 1.0 name or 0.3 alias) with `answers`, in
    /// order, before anything else.
    pub fn on(&self, method: &str, answers: impl IntoIterator<Item = Answer>) {
        let method = a2a_error_runtime::method_name(method).unwrap_or(method);
        self.lock()
            .by_method
            .entry(method.to_owned())
            .or_default()
            .extend(answers);
    }

    /// Answers the next calls, whatever their method, with `answers`, in order.
    pub fn then(&self, answers: impl IntoIterator<Item = Answer>) {
        self.lock().in_order.extend(answers);
    }

    /// Every call received, in order.
    pub fn received(&self) -> Vec<Received> {
        self.lock().received.clone()
    }

    /// When each call dropped before it was answered (its caller went away) was dropped.
    pub fn dropped(&self) -> Vec<Instant> {
        self.lock().dropped.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Where a call is answered: a JSON-RPC request (its id) or a REST route.
enum Call {
    /// The request's id, as sent and as the SSE encoder takes it.
    JsonRpc(Value, Id),
    Rest,
}

async fn serve_call(
    State(script): State<Arc<Mutex<Script>>>,
    verb: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    // A JSON-RPC request at any path (an agent's JSON-RPC URL need not be `/`).
    let jsonrpc = verb == Method::POST && (uri.path() == "/" || request.get("jsonrpc").is_some());
    let (call, method) = if jsonrpc {
        let id = Id::from_value(&request["id"]).unwrap_or(Id::Null);
        let method = request["method"].as_str().map(|name| {
            a2a_error_runtime::method_name(name)
                .unwrap_or(name)
                .to_owned()
        });
        (Call::JsonRpc(request["id"].clone(), id), method)
    } else {
        let method = a2a_error_runtime::method_of_route(verb.as_str(), uri.path());
        (Call::Rest, method.map(str::to_owned))
    };
    let params = match &call {
        Call::JsonRpc(..) => request["params"].clone(),
        Call::Rest => request.clone(),
    };
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let received = Received {
        binding: match call {
            Call::JsonRpc(..) => "jsonrpc",
            Call::Rest => "rest",
        },
        method: method.clone(),
        deadline: header("a2a-deadline-ms")
            .and_then(|ms| ms.trim().parse().ok())
            .map(Duration::from_millis),
        message_id: params["message"]["messageId"].as_str().map(str::to_owned),
        traceparent: header("traceparent"),
        headers,
        body,
        at: Instant::now(),
    };
    let answer = {
        let mut script = script.lock().unwrap_or_else(|e| e.into_inner());
        script.received.push(received);
        script.next(method.as_deref())
    };
    let streaming = matches!(
        method.as_deref(),
        Some("SendStreamingMessage" | "SubscribeToTask")
    );
    let mut unanswered = Unanswered(script, false);
    let response = answer_with(answer, &call, streaming, &params).await;
    unanswered.1 = true;
    response
}

/// The response `answer` makes for `call`.
async fn answer_with(answer: Answer, call: &Call, streaming: bool, params: &Value) -> Response {
    let mut answer = answer;
    loop {
        match answer {
            Answer::Echo => answer = Answer::Result(params.clone()),
            Answer::Delay(delay, then) => {
                tokio::time::sleep(delay).await;
                answer = *then;
            }
            Answer::BlackHole => std::future::pending::<()>().await,
            Answer::Trickle(interval, then) => {
                let response = Box::pin(answer_with(*then, call, streaming, params)).await;
                return trickle(response, interval).await;
            }
            Answer::Result(value) if streaming => {
                return stream(call, vec![value], None).await;
            }
            Answer::Result(value) => {
                let body = match call {
                    Call::JsonRpc(id, _) => json!({"jsonrpc": "2.0", "id": id, "result": value}),
                    Call::Rest => value,
                };
                return axum::Json(body).into_response();
            }
            Answer::Error(error) => {
                let remote = error.to_remote();
                return match call {
                    Call::JsonRpc(id, _) => axum::Json(json!({
                        "jsonrpc": "2.0",
                        "id": id,
                        "error": a2a_error_runtime::A2aError::to_error_object(&remote),
                    }))
                    .into_response(),
                    Call::Rest => a2a_error_runtime::server::rest::error_response(&remote),
                };
            }
            Answer::Http {
                status,
                headers,
                body,
            } => {
                let mut response = Response::new(Body::from(body));
                *response.status_mut() =
                    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                for (name, value) in headers {
                    if let (Ok(name), Ok(value)) = (
                        axum::http::HeaderName::from_bytes(name.as_bytes()),
                        axum::http::HeaderValue::from_str(&value),
                    ) {
                        response.headers_mut().append(name, value);
                    }
                }
                return response;
            }
            Answer::Reset => {
                let parts = futures_util::stream::iter([
                    Ok(Bytes::from_static(b"{\"jsonrpc\":\"2.0\",\"id\":")),
                    Err(std::io::Error::other("connection reset")),
                ]);
                return Response::builder()
                    .header("content-type", "application/json")
                    .body(Body::from_stream(parts))
                    .expect("a valid response");
            }
            Answer::Raw(bytes) => {
                return ([("content-type", "application/json")], bytes).into_response();
            }
            Answer::Stream { events, then } => return stream(call, events, then).await,
        }
    }
}

/// `events` as SSE for `call`, then `then` as an error event. (The stream's one error is
/// large, as error objects are; it is made once.)
#[allow(clippy::result_large_err)]
async fn stream(call: &Call, events: Vec<Value>, then: Option<ErrorAnswer>) -> Response {
    let binding = match call {
        Call::JsonRpc(_, id) => Binding::JsonRpc(id.clone()),
        Call::Rest => Binding::Rest,
    };
    let items = futures_util::stream::iter(events.into_iter().map(Ok)).chain(
        futures_util::stream::iter(then.map(|error| Err(error.to_remote()))),
    );
    sse_response(binding, items).await
}

/// `response` with its body sent one byte every `interval`.
async fn trickle(response: Response, interval: Duration) -> Response {
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let drip = futures_util::stream::unfold(0usize, move |at| {
        let bytes = bytes.clone();
        async move {
            if at >= bytes.len() {
                return None;
            }
            tokio::time::sleep(interval).await;
            Some((Ok::<_, std::io::Error>(bytes.slice(at..at + 1)), at + 1))
        }
    });
    let mut parts = parts;
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from_stream(drip))
}
