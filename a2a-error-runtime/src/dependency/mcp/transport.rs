//! The MCP service at the bottom of an `McpDependency`'s stack: one attempt over streamable
//! HTTP, in the session (initialized on first use, once more after a 404 for it), its reply
//! read as JSON or as an SSE stream, and `notifications/cancelled` sent for a request that
//! was left running.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::Method;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use rmcp::model::{
    ClientCapabilities, Implementation, InitializeRequestParams, NumberOrString, ProtocolVersion,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::time::Instant;
use tower::Service;

use super::call::{Cancels, McpCall};
use super::error::{McpError, McpFailure, RpcError, TOOL_TEXT_BYTES, ToolError, cut};
use super::read::{Answer, ErrorRead, Initialized, ToolText};
use crate::dependency::failure::Failure;
use crate::dependency::http::{HttpCall, HttpFailure};
use crate::dependency::http::{HttpService, read_error};
use crate::http::sse::{Events, SseError};
use crate::resilience::{Timeout, TimeoutFuture, within};
use crate::wire::trace::{TRACEPARENT_HEADER, TRACESTATE_HEADER};

/// The session header of streamable HTTP.
pub(super) const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// The longest session id kept; the spec asks for visible ASCII and sets no length.
const MAX_SESSION_ID: usize = 1024;
/// How long a cancellation may take once sent on its own (the caller waits less).
const CANCEL_LIMIT: Duration = Duration::from_secs(5);

/// Sends an [`McpCall`] once, in the server's session. Cloned for every attempt: what it
/// holds is shared.
#[derive(Clone)]
pub(super) struct McpService(Arc<McpServer>);

/// What an [`McpService`] knows of its server and sends with every request.
pub(super) struct McpServer {
    pub(super) http: HttpService,
    /// The endpoint, parsed once.
    pub(super) url: reqwest::Url,
    pub(super) session: Arc<Session>,
    pub(super) ids: Arc<AtomicI64>,
    /// The attempt timeout, kept here (not as a layer) so that progress can extend it.
    pub(super) attempt: Option<Duration>,
    /// How far progress notifications may extend an attempt, from its start.
    pub(super) progress_up_to: Option<Duration>,
    pub(super) max_event: usize,
}

impl McpService {
    pub(super) fn new(server: McpServer) -> Self {
        McpService(Arc::new(server))
    }
}

impl std::ops::Deref for McpService {
    type Target = McpServer;

    fn deref(&self) -> &McpServer {
        &self.0
    }
}

/// The server's session, shared by every clone of the dependency: its id and protocol
/// version, and how many sessions there have been.
#[derive(Debug, Default)]
pub(super) struct Session {
    live: tokio::sync::Mutex<Option<Live>>,
    epoch: AtomicU64,
}

impl Session {
    /// The number of the current session (0 before the first).
    pub(super) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// A new session started: its number.
    pub(super) fn started(&self) -> u64 {
        self.epoch.fetch_add(1, Ordering::AcqRel) + 1
    }
}

/// One initialized session.
#[derive(Clone, Debug)]
pub(super) struct Live {
    id: Option<HeaderValue>,
    version: Option<HeaderValue>,
    epoch: u64,
}

impl Service<McpCall> for McpService {
    type Response = Answer;
    type Error = McpError;
    type Future = Pin<Box<dyn Future<Output = Result<Answer, McpError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: McpCall) -> Self::Future {
        Box::pin(self.clone().attempt(call))
    }
}

/// When an attempt ends: its own limit (which progress may move, up to a bound) or the
/// call's deadline.
#[derive(Clone, Copy)]
pub(super) struct Clock {
    start: Instant,
    attempt: Option<Duration>,
    up_to: Option<Duration>,
    ends: Option<Instant>,
    deadline: Option<Instant>,
}

impl Clock {
    /// An attempt starting now, limited to `attempt` (which progress may extend up to
    /// `up_to` from now) and the call's `deadline`.
    pub(super) fn new(
        attempt: Option<Duration>,
        up_to: Option<Duration>,
        deadline: Option<Instant>,
    ) -> Clock {
        let start = Instant::now();
        Clock {
            start,
            attempt,
            up_to,
            ends: attempt.and_then(|limit| start.checked_add(limit)),
            deadline,
        }
    }

    /// When the attempt ends, and as what.
    pub(super) fn firing(&self) -> Option<(Instant, Timeout)> {
        Timeout::first(self.ends.map(|at| (at, Timeout::Attempt)), self.deadline)
    }

    /// A progress notification arrived: the attempt's limit starts again from now, never
    /// past its start plus the bound.
    pub(super) fn progressed(&mut self) {
        let (Some(attempt), Some(up_to)) = (self.attempt, self.up_to) else {
            return;
        };
        let now = Instant::now();
        let bound = self.start.checked_add(up_to);
        let moved = crate::deadline::earliest(now.checked_add(attempt), bound);
        self.ends = self.ends.max(moved);
    }

    /// `future`, failed as the limit that fires first.
    pub(super) fn within<F, T>(&self, future: F) -> TimeoutFuture<F>
    where
        F: Future<Output = Result<T, McpError>>,
    {
        within(self.firing(), future)
    }
}

impl McpService {
    async fn attempt(self, call: McpCall) -> Result<Answer, McpError> {
        let deadline = call.limit.deadline_from(Instant::now());
        let mut clock = Clock::new(self.attempt, self.progress_up_to, deadline);
        let live = self.live(&call, &clock).await?;
        match self.exchange(&call, &live, &mut clock).await {
            // The server forgot the session (it restarted): one new session, sent again.
            Err(Failure::Failed(McpFailure::Http(HttpFailure::Status(status))))
                if status.status == 404 && live.id.is_some() =>
            {
                // Boxed, as every rare path here: a future holds the room of every path it
                // may take, and an attempt's is copied whole each time it moves.
                Box::pin(async {
                    self.forget(&live).await;
                    let live = self.live(&call, &clock).await?;
                    self.exchange(&call, &live, &mut clock).await
                })
                .await
            }
            other => other,
        }
    }

    /// The current session, initialized first if there is none.
    async fn live(&self, call: &McpCall, clock: &Clock) -> Result<Live, McpError> {
        // The session of nearly every call: read without a timer.
        if let Ok(live) = self.session.live.try_lock()
            && let Some(live) = &*live
        {
            return Ok(live.clone());
        }
        // The first call, or the first after a session was lost: boxed, as every rare path.
        Box::pin(clock.within(async {
            let mut live = self.session.live.lock().await;
            if let Some(live) = &*live {
                return Ok(live.clone());
            }
            let started = self.initialize(call, clock).await?;
            *live = Some(started.clone());
            Ok(started)
        }))
        .await
    }

    async fn forget(&self, gone: &Live) {
        let mut live = self.session.live.lock().await;
        if live.as_ref().is_some_and(|live| live.epoch == gone.epoch) {
            *live = None;
        }
    }

    /// `initialize`, then `notifications/initialized`: a new session.
    async fn initialize(&self, call: &McpCall, clock: &Clock) -> Result<Live, McpError> {
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let params = InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("a2a-error", env!("CARGO_PKG_VERSION")),
        );
        let body = request_body(id, "initialize", Some(&params))?;
        let response = clock.within(self.open(call, None, body)).await?;
        let id_header = response.headers().get(SESSION_HEADER).cloned();
        if id_header.as_ref().is_some_and(|id| !is_session_id(id)) {
            return Err(protocol("a session id that is not visible ASCII"));
        }
        let result = self.read(response, id, &mut clock.clone()).await?;
        let result: Initialized = serde_json::from_str(result.get())
            .map_err(|_| protocol("an initialize result that is not one"))?;
        // The version the server chose, if it is a header value; else the one we asked for.
        let version = [result.protocol_version, ProtocolVersion::LATEST]
            .iter()
            .find_map(|version| {
                HeaderValue::from_str(&version.to_string())
                    .ok()
                    .filter(|value| value.len() <= 64)
            });
        let live = Live {
            id: id_header,
            version,
            epoch: self.session.started(),
        };
        let initialized = notification_body("notifications/initialized", None);
        clock
            .within(self.open(call, Some(&live), initialized))
            .await?;
        Ok(live)
    }

    /// Sends the request once and reads its reply; a request left running (timed out, its
    /// connection lost) is cancelled.
    async fn exchange(
        &self,
        call: &McpCall,
        live: &Live,
        clock: &mut Clock,
    ) -> Result<Answer, McpError> {
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let token = self.progress_up_to.map(|_| id);
        let body = call_body(id, call, token, false)?;
        let mut pending = Pending {
            service: Some((self, live)),
            id,
            cancels: &call.cancels,
        };
        let result = async {
            let response = clock.within(self.open(call, Some(live), body)).await?;
            self.read(response, id, clock).await
        }
        .await;
        match &result {
            Err(Failure::Timeout(Timeout::Attempt | Timeout::Total | Timeout::Idle))
            | Err(Failure::Failed(McpFailure::Http(HttpFailure::Transport { .. }))) => {
                pending.cancel();
            }
            // Answered, refused, or never sent (no connection): nothing left running.
            _ => pending.service = None,
        }
        answer(call, result?)
    }

    /// POSTs `body` in `live`'s session (none for `initialize`): the reply's head.
    async fn open(
        &self,
        call: &McpCall,
        live: Option<&Live>,
        body: Bytes,
    ) -> Result<reqwest::Response, McpError> {
        // One map, made at its size: the trace, the session, the type.
        let mut headers = HeaderMap::with_capacity(call.headers.len() + 3);
        for (name, value) in &call.headers {
            headers.append(name.clone(), value.clone());
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(live) = live {
            if let Some(id) = &live.id {
                headers.insert(SESSION_HEADER, id.clone());
            }
            if let Some(version) = &live.version {
                headers.insert(VERSION_HEADER, version.clone());
            }
        }
        let http = HttpCall::to_url(Method::POST, self.url.clone())
            .body(body)
            .with_headers(headers);
        let accept = HeaderValue::from_static("application/json, text/event-stream");
        self.http
            .open(http, Some(accept))
            .await
            .map_err(|error| error.map(McpFailure::Http))
    }

    /// The reply to request `id`: a JSON body, or the SSE stream that holds it (progress
    /// notifications on it may extend the attempt; other messages are skipped).
    async fn read(
        &self,
        response: reqwest::Response,
        id: i64,
        clock: &mut Clock,
    ) -> Result<Box<RawValue>, McpError> {
        let is_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().starts_with("text/event-stream"));
        if !is_stream {
            let read = async {
                crate::http::body::read(response, self.http.max_reply)
                    .await
                    .map_err(|error| read_error(error).map(McpFailure::Http))
            };
            let body = clock.within(read).await?;
            return match incoming(&body)? {
                Incoming::Answer(answered, answer) if answered == id => answer,
                _ => Err(protocol("a reply that is not the request's answer")),
            };
        }
        Box::pin(self.read_stream(response, id, clock)).await
    }

    /// [`read`](Self::read)'s SSE stream: the answer to request `id` among its events.
    async fn read_stream(
        &self,
        response: reqwest::Response,
        id: i64,
        clock: &mut Clock,
    ) -> Result<Box<RawValue>, McpError> {
        let chunks = response
            .bytes_stream()
            .map(|chunk| chunk.map_err(|_| Fault::Broken));
        let body = crate::http::body::counted(chunks, self.http.max_reply, Fault::TooLarge);
        let mut events = Events::new(Box::pin(body), self.max_event);
        loop {
            let next = clock
                .within(async { Ok::<_, McpError>(events.next().await) })
                .await?;
            let event = match next {
                None => return Err(lost("the stream ended before the answer")),
                Some(Ok(event)) => event,
                Some(Err(SseError::TooLarge)) => {
                    return Err(Failure::Failed(McpFailure::Http(HttpFailure::TooLarge {
                        limit: self.max_event,
                    })));
                }
                Some(Err(SseError::Transport(Fault::Broken))) => {
                    return Err(lost("the stream broke before the answer"));
                }
                Some(Err(SseError::Transport(Fault::TooLarge(limit)))) => {
                    return Err(Failure::Failed(McpFailure::Http(HttpFailure::TooLarge {
                        limit,
                    })));
                }
            };
            // A priming event (an id, no data) readies a stream for resumption: nothing to read.
            if event.data.trim().is_empty() {
                continue;
            }
            match incoming(event.data.as_bytes())? {
                Incoming::Answer(answered, answer) if answered == id => return answer,
                Incoming::Progress(token) if token == id => clock.progressed(),
                _ => {}
            }
        }
    }
}

#[derive(Debug)]
enum Fault {
    Broken,
    TooLarge(usize),
}

/// A request sent and not yet answered: dropped or cancelled while its service is still set,
/// it sends `notifications/cancelled` for the request on a task of its own.
struct Pending<'a> {
    service: Option<(&'a McpService, &'a Live)>,
    id: i64,
    cancels: &'a Cancels,
}

impl Pending<'_> {
    fn cancel(&mut self) {
        let Some((service, live)) = self.service.take() else {
            return;
        };
        let (service, live) = (service.clone(), live.clone());
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let id = self.id;
        let sent = runtime.spawn(async move {
            let params =
                serde_json::json!({"requestId": id, "reason": "the caller stopped waiting"});
            let body = notification_body("notifications/cancelled", Some(&params));
            let call = McpCall::new(Arc::from("cancel"), "notifications/cancelled");
            let _ =
                tokio::time::timeout(CANCEL_LIMIT, service.open(&call, Some(&live), body)).await;
        });
        self.cancels.push(sent);
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.cancel();
    }
}

/// A message from the server, read once, as this client needs it.
pub(super) enum Incoming {
    /// The answer to request `id`: its result, or the JSON-RPC error it carried.
    Answer(i64, Result<Box<RawValue>, McpError>),
    /// Progress on the request whose progress token is this id.
    Progress(i64),
    /// Anything else (another notification, a request of the server's, an id that is not one
    /// of ours): skipped.
    Other,
}

/// Reads one JSON-RPC message; a message that is not JSON-RPC is a protocol error.
pub(super) fn incoming(json: &[u8]) -> Result<Incoming, McpError> {
    #[derive(Deserialize)]
    struct Message<'a> {
        #[serde(default)]
        id: Option<NumberOrString>,
        #[serde(default, borrow)]
        method: Option<&'a str>,
        #[serde(default, borrow)]
        params: Option<&'a RawValue>,
        #[serde(default)]
        result: Option<Box<RawValue>>,
        #[serde(default, borrow)]
        error: Option<ErrorRead<'a>>,
    }
    #[derive(Deserialize)]
    struct Token {
        #[serde(rename = "progressToken")]
        token: Option<NumberOrString>,
    }
    let Ok(message) = serde_json::from_slice::<Message<'_>>(json) else {
        return Err(protocol("a message that is not JSON-RPC"));
    };
    Ok(match (message.method, message.id) {
        (Some("notifications/progress"), _) => {
            let token = message
                .params
                .and_then(|params| serde_json::from_str::<Token>(params.get()).ok())
                .and_then(|params| params.token);
            match token {
                Some(NumberOrString::Number(id)) => Incoming::Progress(id),
                _ => Incoming::Other,
            }
        }
        (None, Some(NumberOrString::Number(id))) => Incoming::Answer(
            id,
            match (message.result, message.error) {
                (_, Some(error)) => Err(Failure::Failed(McpFailure::Rpc(RpcError::new(
                    error.code,
                    &error.message,
                )))),
                (Some(result), None) => Ok(result),
                (None, None) => Err(protocol("an answer with neither result nor error")),
            },
        ),
        _ => Incoming::Other,
    })
}

/// The result of `call` as its caller wants it: a tool's own failure (`isError: true`) is
/// the attempt's; a tool result whose text alone is wanted is read here, in the same pass.
pub(super) fn answer(call: &McpCall, result: Box<RawValue>) -> Result<Answer, McpError> {
    if call.tool.is_none() {
        return Ok(Answer::Result(result));
    }
    if call.text_only
        && let Ok(read) = serde_json::from_str::<ToolText>(result.get())
    {
        if read.is_error == Some(true) {
            return Err(tool_failed(read.content.text));
        }
        return Ok(Answer::Text(read.content.text));
    }
    // Not a result this client can read as text: the whole result, checked as before.
    tool_error(&result)?;
    Ok(Answer::Result(result))
}

/// A tool's own failure (`isError: true`) as the attempt's failure, its text kept for the
/// model.
fn tool_error(result: &RawValue) -> Result<(), McpError> {
    #[derive(Deserialize)]
    struct Flag {
        #[serde(default, rename = "isError")]
        is_error: Option<bool>,
    }
    let flag: Flag = serde_json::from_str(result.get())
        .map_err(|_| protocol("a tool result that is not an object"))?;
    if flag.is_error != Some(true) {
        return Ok(());
    }
    let text = serde_json::from_str::<ToolText>(result.get())
        .map(|result| result.content.text)
        .unwrap_or_default();
    Err(tool_failed(text))
}

/// The tool's own failure, its `text` kept for the model (at most [`TOOL_TEXT_BYTES`]).
fn tool_failed(text: String) -> McpError {
    Failure::Failed(McpFailure::Tool(ToolError {
        text: cut(text, TOOL_TEXT_BYTES),
    }))
}

pub(super) fn request_body(
    id: i64,
    method: &str,
    params: Option<&impl serde::Serialize>,
) -> Result<Bytes, McpError> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    serde_json::to_vec(&body)
        .map(Bytes::from)
        .map_err(|error| invalid(&error))
}

/// The body of request `id` for `call`: its params, with in `_meta` the progress token (when
/// progress may extend the attempt) and, when `trace` (over stdio, where there are no
/// headers), the call's W3C trace context (`traceparent`, `tracestate`: MCP's SEP-414). Over
/// HTTP the trace travels in the headers, and the params stay as the caller wrote them.
pub(super) fn call_body(
    id: i64,
    call: &McpCall,
    token: Option<i64>,
    trace: bool,
) -> Result<Bytes, McpError> {
    let mut added = serde_json::Map::new();
    if let Some(token) = token {
        added.insert("progressToken".into(), token.into());
    }
    for name in [TRACEPARENT_HEADER, TRACESTATE_HEADER]
        .into_iter()
        .filter(|_| trace)
    {
        if let Some(value) = call.headers.get(name).and_then(|v| v.to_str().ok()) {
            added.insert(name.into(), value.into());
        }
    }
    #[derive(serde::Serialize)]
    struct Body<'a> {
        jsonrpc: &'static str,
        id: i64,
        method: &'a str,
        params: Params<'a>,
    }
    let body = Body {
        jsonrpc: "2.0",
        id,
        method: &call.method,
        params: Params {
            params: call.params.as_deref(),
            added: &added,
        },
    };
    // Written straight from the caller's params: no copy of them per attempt.
    serde_json::to_vec(&body)
        .map(Bytes::from)
        .map_err(|error| invalid(&error))
}

/// A request's `params` as sent: the caller's, with `added` merged into their `_meta`.
struct Params<'a> {
    params: Option<&'a serde_json::Map<String, serde_json::Value>>,
    added: &'a serde_json::Map<String, serde_json::Value>,
}

impl serde::Serialize for Params<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let empty = serde_json::Map::new();
        let params = self.params.unwrap_or(&empty);
        let meta = match params.get("_meta") {
            Some(serde_json::Value::Object(meta)) => Some(meta),
            _ => None,
        };
        let mut map = serializer.serialize_map(None)?;
        for (name, value) in params.iter().filter(|(name, _)| *name != "_meta") {
            map.serialize_entry(name, value)?;
        }
        if meta.is_some_and(|meta| !meta.is_empty()) || !self.added.is_empty() {
            map.serialize_entry(
                "_meta",
                &Meta {
                    meta,
                    added: self.added,
                },
            )?;
        }
        map.end()
    }
}

/// A request's `_meta`: the caller's, each name `added` has in its place.
struct Meta<'a> {
    meta: Option<&'a serde_json::Map<String, serde_json::Value>>,
    added: &'a serde_json::Map<String, serde_json::Value>,
}

impl serde::Serialize for Meta<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        let caller = self.meta.into_iter().flatten();
        for (name, value) in caller.filter(|(name, _)| !self.added.contains_key(*name)) {
            map.serialize_entry(name, value)?;
        }
        for (name, value) in self.added {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

pub(super) fn notification_body(method: &str, params: Option<&serde_json::Value>) -> Bytes {
    let body = match params {
        Some(params) => serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params}),
        None => serde_json::json!({"jsonrpc": "2.0", "method": method}),
    };
    Bytes::from(body.to_string())
}

fn is_session_id(id: &HeaderValue) -> bool {
    id.len() <= MAX_SESSION_ID && id.as_bytes().iter().all(|b| (0x21..=0x7e).contains(b))
}

fn protocol(detail: &str) -> McpError {
    Failure::Failed(McpFailure::Protocol {
        detail: detail.to_owned(),
    })
}

fn invalid(error: &serde_json::Error) -> McpError {
    Failure::Failed(McpFailure::Http(HttpFailure::Invalid {
        detail: error.to_string(),
    }))
}

fn lost(detail: &str) -> McpError {
    Failure::Failed(McpFailure::Http(HttpFailure::Transport {
        detail: detail.to_owned(),
    }))
}
