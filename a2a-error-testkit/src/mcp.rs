//! `FaultMcp`: an MCP server on loopback (streamable HTTP) that answers from a script, for the
//! tools an agent calls.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::time::Instant;

/// How a [`FaultMcp`] answers one request.
#[derive(Clone, Debug)]
pub struct McpAnswer {
    kind: Kind,
    sse: bool,
    delay: Duration,
    progress: Option<(usize, Duration)>,
    headers: Vec<(&'static str, String)>,
}

#[derive(Clone, Debug)]
enum Kind {
    Result(Value),
    Error(i64, String),
    Status(u16),
    Hang,
    Close,
}

impl McpAnswer {
    fn of(kind: Kind) -> McpAnswer {
        McpAnswer {
            kind,
            sse: false,
            delay: Duration::ZERO,
            progress: None,
            headers: Vec::new(),
        }
    }

    /// A tool result whose content is one text part.
    pub fn text(text: &str) -> McpAnswer {
        McpAnswer::result(json!({"content": [{"type": "text", "text": text}]}))
    }

    /// A tool result with `isError: true` and `texts` as its text parts.
    pub fn tool_error(texts: &[&str]) -> McpAnswer {
        let content: Vec<Value> = texts
            .iter()
            .map(|text| json!({"type": "text", "text": text}))
            .collect();
        McpAnswer::result(json!({"content": content, "isError": true}))
    }

    /// Any JSON-RPC result.
    pub fn result(result: Value) -> McpAnswer {
        McpAnswer::of(Kind::Result(result))
    }

    /// A JSON-RPC error with `code` and `message`.
    pub fn rpc_error(code: i64, message: &str) -> McpAnswer {
        McpAnswer::of(Kind::Error(code, message.to_owned()))
    }

    /// A bare HTTP status, no body (add `Retry-After` with [`header`](Self::header)).
    pub fn status(status: u16) -> McpAnswer {
        McpAnswer::of(Kind::Status(status))
    }

    /// No answer ever: the request is held open until its caller goes away.
    pub fn hang() -> McpAnswer {
        McpAnswer::of(Kind::Hang)
    }

    /// The connection is lost after the request arrived: a 200 head, then a broken body.
    pub fn close() -> McpAnswer {
        McpAnswer::of(Kind::Close)
    }

    /// Answers as an SSE stream (`text/event-stream`) holding the response, not as JSON.
    pub fn sse(mut self) -> McpAnswer {
        self.sse = true;
        self
    }

    /// Before the answer, `count` progress notifications for the request's `progressToken`,
    /// one every `every` (an SSE stream).
    pub fn progress(mut self, count: usize, every: Duration) -> McpAnswer {
        self.progress = Some((count, every));
        self.sse = true;
        self
    }

    /// Waits `delay` before answering.
    pub fn after(mut self, delay: Duration) -> McpAnswer {
        self.delay = delay;
        self
    }

    /// Adds a header to the reply.
    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> McpAnswer {
        self.headers.push((name, value.into()));
        self
    }
}

/// One message a [`FaultMcp`] received.
#[derive(Clone, Debug)]
pub struct McpReceived {
    /// The JSON-RPC method.
    pub method: String,
    /// The request's id (none for a notification).
    pub id: Option<Value>,
    /// Its params (`null` when it had none).
    pub params: Value,
    /// The `Mcp-Session-Id` it carried.
    pub session: Option<String>,
    /// The HTTP headers.
    pub headers: HeaderMap,
    /// When it arrived.
    pub at: Instant,
}

struct Script {
    tools: Vec<Value>,
    by_tool: HashMap<String, VecDeque<McpAnswer>>,
    by_method: HashMap<String, VecDeque<McpAnswer>>,
    sessions: Vec<String>,
    started: usize,
    sse: bool,
    received: Vec<McpReceived>,
}

/// An MCP server on 127.0.0.1 (streamable HTTP at `/mcp`) that answers from a script. It
/// starts a session at each `initialize` (`Mcp-Session-Id: s1`, `s2`, …) and answers 404 to a
/// request whose session it does not know (after [`restart`](Self::restart)); `tools/list`
/// lists the tools it was started with; `tools/call` takes the next answer scripted for its
/// tool ([`on_tool`](Self::on_tool)), else the text `NAME: Q` (`Q` the call's argument `q`).
/// Other methods take the answers scripted for them ([`on_method`](Self::on_method)), else
/// an empty result (-32601 for a method it does not know). It records every message,
/// notifications included.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use a2a_error_testkit::{FaultMcp, McpAnswer};
///
/// let server = FaultMcp::start(&["search", "fetch"]).await;
/// server.on_tool("search", [McpAnswer::status(503).header("retry-after", "1"), McpAnswer::text("found")]);
/// // … point the McpDependency under test at server.url() …
/// assert!(server.cancelled().is_empty());
/// # }
/// ```
#[derive(Clone)]
pub struct FaultMcp {
    url: String,
    script: Arc<Mutex<Script>>,
}

impl std::fmt::Debug for FaultMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultMcp").field("url", &self.url).finish()
    }
}

impl FaultMcp {
    /// Starts one on loopback listing `tools` (none annotated).
    pub async fn start(tools: &[&str]) -> FaultMcp {
        let listed = tools
            .iter()
            .map(|name| json!({"name": name, "inputSchema": {"type": "object"}}))
            .collect();
        FaultMcp::with_tools(listed).await
    }

    /// Starts one on loopback whose `tools/list` answers `tools` (objects as MCP lists them:
    /// `name`, `inputSchema`, `annotations`, …).
    pub async fn with_tools(tools: Vec<Value>) -> FaultMcp {
        let script = Arc::new(Mutex::new(Script {
            tools,
            by_tool: HashMap::new(),
            by_method: HashMap::new(),
            sessions: Vec::new(),
            started: 0,
            sse: false,
            received: Vec::new(),
        }));
        let app = axum::Router::new()
            .route("/mcp", axum::routing::post(answer))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FaultMcp { url, script }
    }

    /// Its endpoint (`http://127.0.0.1:PORT/mcp`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Answers the next calls of tool `name` with `answers`, in order.
    pub fn on_tool(&self, name: &str, answers: impl IntoIterator<Item = McpAnswer>) {
        (self.script.lock().unwrap().by_tool)
            .entry(name.to_owned())
            .or_default()
            .extend(answers);
    }

    /// Answers the next requests of `method` (`initialize`, `tools/list`, …) with
    /// `answers`, in order.
    pub fn on_method(&self, method: &str, answers: impl IntoIterator<Item = McpAnswer>) {
        (self.script.lock().unwrap().by_method)
            .entry(method.to_owned())
            .or_default()
            .extend(answers);
    }

    /// Answers every request as an SSE stream from now on (else as JSON, unless an answer
    /// says [`sse`](McpAnswer::sse)).
    pub fn answer_with_sse(&self) {
        self.script.lock().unwrap().sse = true;
    }

    /// Forgets every session, as a server that restarted: the next request that carries one
    /// is answered 404.
    pub fn restart(&self) {
        self.script.lock().unwrap().sessions.clear();
    }

    /// Every message received, in order.
    pub fn received(&self) -> Vec<McpReceived> {
        self.script.lock().unwrap().received.clone()
    }

    /// The methods received, in order.
    pub fn methods(&self) -> Vec<String> {
        let script = self.script.lock().unwrap();
        script.received.iter().map(|r| r.method.clone()).collect()
    }

    /// The calls of tool `name` received.
    pub fn calls_of(&self, name: &str) -> Vec<McpReceived> {
        let script = self.script.lock().unwrap();
        (script.received.iter())
            .filter(|r| r.method == "tools/call" && r.params["name"] == name)
            .cloned()
            .collect()
    }

    /// The request ids named by the `notifications/cancelled` received, in order.
    pub fn cancelled(&self) -> Vec<Value> {
        let script = self.script.lock().unwrap();
        (script.received.iter())
            .filter(|r| r.method == "notifications/cancelled")
            .map(|r| r.params["requestId"].clone())
            .collect()
    }
}

async fn answer(
    State(script): State<Arc<Mutex<Script>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return rpc(
            json!(null),
            Err((-32700, "parse error".into())),
            false,
            None,
        );
    };
    let method = message["method"].as_str().unwrap_or_default().to_owned();
    let id = message.get("id").cloned();
    let session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (answer, new_session, sse) = {
        let mut script = script.lock().unwrap();
        script.received.push(McpReceived {
            method: method.clone(),
            id: id.clone(),
            params: message.get("params").cloned().unwrap_or(Value::Null),
            session: session.clone(),
            headers: headers.clone(),
            at: Instant::now(),
        });
        let scripted = script
            .by_method
            .get_mut(&method)
            .and_then(VecDeque::pop_front);
        if method == "initialize" {
            script.started += 1;
            let id = format!("s{}", script.started);
            script.sessions.push(id.clone());
            let result = McpAnswer::result(json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fault-mcp", "version": "1"},
            }));
            (scripted.unwrap_or(result), Some(id), script.sse)
        } else if session
            .as_ref()
            .is_some_and(|s| !script.sessions.contains(s))
        {
            (McpAnswer::status(404), None, false)
        } else if id.is_none() {
            (McpAnswer::status(202), None, false)
        } else {
            let answer = scripted.unwrap_or_else(|| match method.as_str() {
                "tools/list" => McpAnswer::result(json!({ "tools": script.tools })),
                "tools/call" => {
                    let name = message["params"]["name"].as_str().unwrap_or_default();
                    let q = message["params"]["arguments"]["q"]
                        .as_str()
                        .unwrap_or_default();
                    (script.by_tool.get_mut(name))
                        .and_then(VecDeque::pop_front)
                        .unwrap_or_else(|| McpAnswer::text(&format!("{name}: {q}")))
                }
                "ping" => McpAnswer::result(json!({})),
                _ => McpAnswer::rpc_error(-32601, "method not found"),
            });
            (answer, None, script.sse)
        }
    };
    tokio::time::sleep(answer.delay).await;
    let token = message["params"]["_meta"]["progressToken"].clone();
    let mut response = match answer.kind {
        Kind::Status(status) => StatusCode::from_u16(status).unwrap().into_response(),
        Kind::Hang => std::future::pending().await,
        Kind::Close => {
            let broken = futures_util::stream::once(async {
                Err::<Bytes, _>(std::io::Error::other("closed"))
            });
            let mut response = axum::body::Body::from_stream(broken).into_response();
            response
                .headers_mut()
                .insert("content-type", HeaderValue::from_static("application/json"));
            response
        }
        Kind::Result(result) => rpc(
            id.unwrap_or(Value::Null),
            Ok(result),
            sse || answer.sse,
            answer.progress.map(|p| (p, token)),
        ),
        Kind::Error(code, message) => rpc(
            id.unwrap_or(Value::Null),
            Err((code, message)),
            sse || answer.sse,
            answer.progress.map(|p| (p, token)),
        ),
    };
    if let Some(id) = new_session {
        response
            .headers_mut()
            .insert("mcp-session-id", HeaderValue::from_str(&id).unwrap());
    }
    for (name, value) in answer.headers {
        response
            .headers_mut()
            .insert(name, HeaderValue::from_str(&value).unwrap());
    }
    response
}

type Progress = ((usize, Duration), Value);

/// A JSON-RPC response to `id`, as JSON or as an SSE stream (progress first).
fn rpc(
    id: Value,
    outcome: Result<Value, (i64, String)>,
    sse: bool,
    progress: Option<Progress>,
) -> Response {
    let message = match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        }
    };
    if !sse {
        return axum::Json(message).into_response();
    }
    let mut events: Vec<(Duration, String)> = Vec::new();
    if let Some(((count, every), token)) = progress {
        for step in 0..count {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": step + 1}});
            events.push((every, format!("event: message\ndata: {note}\n\n")));
        }
    }
    events.push((
        Duration::ZERO,
        format!("event: message\ndata: {message}\n\n"),
    ));
    let body = futures_util::stream::unfold(events.into_iter(), |mut events| async move {
        let (pause, event) = events.next()?;
        tokio::time::sleep(pause).await;
        Some((Ok::<_, std::io::Error>(Bytes::from(event)), events))
    });
    let mut response = axum::body::Body::from_stream(body).into_response();
    response.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    response
}
