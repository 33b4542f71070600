//! `FaultMcp`: an MCP server on loopback (streamable HTTP) that answers from a script, for the
//! tools an agent calls, in a session-based revision or the stateless one (`2026-07-28`).

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
    status: Option<u16>,
}

/// The stateless revision a [`FaultMcp`] speaks once [`stateless`](FaultMcp::stateless).
pub const STATELESS_REVISION: &str = "2026-07-28";

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
            status: None,
        }
    }

    /// A tool result of type `input_required` (the stateless revision's multi round-trip
    /// request): `requests` as its `inputRequests`, `state` as its `requestState`.
    pub fn input_required(requests: Value, state: &str) -> McpAnswer {
        McpAnswer::result(json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": state,
        }))
    }

    /// Sends the answer (a result or a JSON-RPC error) with HTTP `status` rather than 200: the
    /// stateless revision answers its errors with 400 (`-32020`, `-32021`, `-32022`).
    pub fn with_status(mut self, status: u16) -> McpAnswer {
        self.status = Some(status);
        self
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
    /// Whether it was sent statelessly (its `_meta` carried the protocol version).
    pub stateless: bool,
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
    stateless: bool,
    abandoned: Vec<Value>,
    lost_session: u16,
    per_page: Option<usize>,
}

/// An MCP server on 127.0.0.1 (streamable HTTP at `/mcp`) that answers from a script. It
/// starts a session at each `initialize` (`Mcp-Session-Id: s1`, `s2`, …) and answers 404 to a
/// request whose session it does not know (after [`restart`](Self::restart); 400 as some
/// servers do with [`lost_session_status`](Self::lost_session_status)); `tools/list` lists
/// the tools it was started with (in pages with [`pages_of`](Self::pages_of)); `tools/call`
/// takes the next answer scripted for its tool ([`on_tool`](Self::on_tool)), else the text
/// `NAME: Q` (`Q` the call's argument `q`). Other methods take the answers scripted for them
/// ([`on_method`](Self::on_method)), else an empty result (-32601 for a method it does not
/// know, `server/discover` included). It records every message, notifications included.
///
/// Switched to the stateless revision ([`stateless`](Self::stateless)) it also answers
/// `server/discover` with `2026-07-28`, and checks every request sent statelessly as that
/// revision's servers do: the `_meta` envelope (else 400 `-32602`), the
/// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers against the body (else 400
/// `-32020`), the version (else 400 `-32022`); its results carry `resultType`.
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
            stateless: false,
            abandoned: Vec::new(),
            lost_session: 404,
            per_page: None,
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
    /// is answered 404 (or the [`lost_session_status`](Self::lost_session_status)).
    pub fn restart(&self) {
        self.script.lock().unwrap().sessions.clear();
    }

    /// Speaks the stateless revision (`2026-07-28`) from now on, beside the session-based one
    /// (as the servers of the revision's twelve-month window do).
    pub fn stateless(&self) {
        self.script.lock().unwrap().stateless = true;
    }

    /// Answers a request whose session it does not know with `status` (404 by default; the
    /// reference server answers 400 `Bad Request: No valid session ID provided`).
    pub fn lost_session_status(&self, status: u16) {
        self.script.lock().unwrap().lost_session = status;
    }

    /// Lists its tools `per_page` at a time: each page but the last carries a `nextCursor`,
    /// which the next `tools/list` sends back as `params.cursor`.
    pub fn pages_of(&self, per_page: usize) {
        self.script.lock().unwrap().per_page = Some(per_page.max(1));
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

    /// The ids of the requests answered [`hang`](McpAnswer::hang) whose connection the client
    /// closed (the stateless revision's cancellation), in order.
    pub fn abandoned(&self) -> Vec<Value> {
        self.script.lock().unwrap().abandoned.clone()
    }
}

/// Records a held request's id as abandoned when its handler is dropped (its connection
/// closed) before it answered.
struct Held {
    script: Arc<Mutex<Script>>,
    id: Value,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut script = self.script.lock().unwrap_or_else(|e| e.into_inner());
        script.abandoned.push(self.id.clone());
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
    let stateless = message["params"]["_meta"]
        .get("io.modelcontextprotocol/protocolVersion")
        .is_some();
    let (answer, new_session, sse) = {
        let mut script = script.lock().unwrap();
        script.received.push(McpReceived {
            method: method.clone(),
            id: id.clone(),
            params: message.get("params").cloned().unwrap_or(Value::Null),
            session: session.clone(),
            stateless,
            headers: headers.clone(),
            at: Instant::now(),
        });
        let scripted = script
            .by_method
            .get_mut(&method)
            .and_then(VecDeque::pop_front);
        let modern = script.stateless && (stateless || method == "server/discover");
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
        } else if let Some(refusal) = modern.then(|| rejected(&message, &headers)).flatten() {
            (refusal, None, false)
        } else if !modern
            && session
                .as_ref()
                .is_some_and(|s| !script.sessions.contains(s))
        {
            (lost(script.lost_session), None, false)
        } else if id.is_none() {
            (McpAnswer::status(202), None, false)
        } else {
            let answer = scripted.unwrap_or_else(|| match method.as_str() {
                "server/discover" if script.stateless => McpAnswer::result(json!({
                    "supportedVersions": [STATELESS_REVISION],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "fault-mcp", "version": "1"},
                    "ttlMs": 0,
                    "cacheScope": "private",
                })),
                "tools/list" => listing(&script, &message["params"]["cursor"]),
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
            (typed(answer, modern), None, script.sse)
        }
    };
    tokio::time::sleep(answer.delay).await;
    let token = message["params"]["_meta"]["progressToken"].clone();
    let status = answer.status;
    let mut response = match answer.kind {
        Kind::Status(status) => StatusCode::from_u16(status).unwrap().into_response(),
        Kind::Hang => {
            let _held = Held {
                script: script.clone(),
                id: id.clone().unwrap_or(Value::Null),
            };
            std::future::pending().await
        }
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
    if let Some(status) = status {
        *response.status_mut() = StatusCode::from_u16(status).unwrap();
    }
    response
}

/// The answer to a request whose session is unknown: `status`, with the reference server's
/// body for a 400.
fn lost(status: u16) -> McpAnswer {
    if status == 400 {
        return McpAnswer::rpc_error(-32000, "Bad Request: No valid session ID provided")
            .with_status(400);
    }
    McpAnswer::status(status)
}

/// A stateless request the revision's servers refuse, as they refuse it: the envelope
/// missing (-32602), a routing header that disagrees with the body (-32020), a version not
/// spoken (-32022); all with 400.
fn rejected(message: &Value, headers: &HeaderMap) -> Option<McpAnswer> {
    let meta = &message["params"]["_meta"];
    let refuse = |code, text: &str| Some(McpAnswer::rpc_error(code, text).with_status(400));
    let (Some(version), true) = (
        meta["io.modelcontextprotocol/protocolVersion"].as_str(),
        meta["io.modelcontextprotocol/clientCapabilities"].is_object(),
    ) else {
        return refuse(-32602, "params._meta is missing the envelope");
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let method = message["method"].as_str().unwrap_or_default();
    if header("mcp-protocol-version") != Some(version) || header("mcp-method") != Some(method) {
        return refuse(-32020, "a header does not match the body");
    }
    let named = match method {
        "tools/call" | "prompts/get" => message["params"]["name"].as_str(),
        "resources/read" => message["params"]["uri"].as_str(),
        _ => None,
    };
    if named.is_some() && header("mcp-name") != named {
        return refuse(-32020, "mcp-name does not match the body");
    }
    if version != STATELESS_REVISION {
        return refuse(-32022, "Unsupported protocol version");
    }
    None
}

/// A result of the stateless revision carries its `resultType` (`complete` when the script
/// left it out).
fn typed(mut answer: McpAnswer, modern: bool) -> McpAnswer {
    if let (true, Kind::Result(Value::Object(result))) = (modern, &mut answer.kind) {
        result
            .entry("resultType")
            .or_insert_with(|| json!("complete"));
    }
    answer
}

/// A page of the tools listed (all of them unless [`FaultMcp::pages_of`]): the one after
/// `cursor` (`p1`, `p2`, …).
fn listing(script: &Script, cursor: &Value) -> McpAnswer {
    let Some(per_page) = script.per_page else {
        return McpAnswer::result(json!({ "tools": script.tools }));
    };
    let page: usize = cursor
        .as_str()
        .and_then(|c| c.strip_prefix('p'))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let start = (page * per_page).min(script.tools.len());
    let end = (start + per_page).min(script.tools.len());
    let mut result = json!({ "tools": script.tools[start..end] });
    if end < script.tools.len() {
        result["nextCursor"] = json!(format!("p{}", page + 1));
    }
    McpAnswer::result(result)
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
