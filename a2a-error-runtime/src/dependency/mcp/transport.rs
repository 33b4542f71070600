//! The MCP service at the bottom of an `McpDependency`'s stack: one attempt over streamable
//! HTTP in the revision the server speaks (learned on first use: `server/discover`, else the
//! `initialize` handshake and its session; learned again after a lost session or `-32022`), its
//! reply read as JSON or as an SSE stream, and a request left running cancelled.

use std::borrow::Cow;
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
use super::read::{Answer, ErrorRead, Initialized, ResultType, ToolText, Typed};
use crate::dependency::failure::Failure;
use crate::dependency::http::{EXCERPT_BYTES, HttpCall, HttpFailure, StatusFailure};
use crate::dependency::http::{HttpService, read_error};
use crate::http::sse::{Events, SseError};
use crate::resilience::{Timeout, TimeoutFuture, within};
use crate::wire::trace::{TRACEPARENT_HEADER, TRACESTATE_HEADER};

/// The session header of streamable HTTP.
pub(super) const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// The stateless revision's routing headers: the request's method, and the name it acts on.
const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");
/// The stateless revision this client speaks: no handshake, no session, every request
/// carrying its version, capabilities and client info.
pub(super) const STATELESS: &str = "2026-07-28";
/// The `_meta` names of a stateless request's envelope.
const VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
const CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";
const INFO_META: &str = "io.modelcontextprotocol/clientInfo";
/// The most of a non-2xx reply's body read for the JSON-RPC error it may carry.
const ERROR_BODY_BYTES: usize = 64 << 10;
/// The stateless revision's errors: a header that disagrees with the body, a client
/// capability the server requires, a protocol version it does not speak.
pub(super) const HEADER_MISMATCH: i64 = -32020;
pub(super) const MISSING_CAPABILITY: i64 = -32021;
pub(super) const UNSUPPORTED_VERSION: i64 = -32022;
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

/// What this client knows of how to speak to the server, shared by every clone of the
/// dependency: the revision and, for a session-based one, the session; and how many times it
/// was learned (each new session, each `server/discover`).
#[derive(Debug, Default)]
pub(super) struct Session {
    live: tokio::sync::Mutex<Learned>,
    epoch: AtomicU64,
}

/// What was learned of the server: how to send (none before the first request, or after it
/// no longer held), and whether `server/discover` said it speaks a session-based revision (so
/// that a session that failed to start is not discovered again).
#[derive(Debug, Default)]
struct Learned {
    live: Option<Live>,
    sessions: bool,
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

/// How requests are sent to the server, as last learned: in an initialized session (its id,
/// when the server gave one, and version), or statelessly.
#[derive(Clone, Debug)]
pub(super) struct Live {
    id: Option<HeaderValue>,
    version: Option<HeaderValue>,
    epoch: u64,
    /// The server speaks [`STATELESS`]: no session; the envelope in `_meta` and the routing
    /// headers on every request.
    stateless: bool,
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
            // The server forgot the session (it restarted: the specification's 404, or the 400
            // some servers answer), or no longer speaks the version learned: learned again (a
            // new session, or `server/discover`), and sent again, once. Boxed, as every rare
            // path here: a future holds the room of every path it may take, and an attempt's
            // is copied whole each time it moves.
            Err(error) if is_lost(&error, &live) => {
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

    /// How to speak to the server: learned first if it is not known.
    async fn live(&self, call: &McpCall, clock: &Clock) -> Result<Live, McpError> {
        // The session of nearly every call: read without a timer.
        if let Ok(learned) = self.session.live.try_lock()
            && let Some(live) = &learned.live
        {
            return Ok(live.clone());
        }
        // The first call, or the first after what was learned no longer held: boxed, as every
        // rare path.
        Box::pin(clock.within(async {
            let mut learned = self.session.live.lock().await;
            if let Some(live) = &learned.live {
                return Ok(live.clone());
            }
            let stateless = match learned.sessions {
                true => None,
                false => self.discover(call, clock).await?,
            };
            let started = match stateless {
                Some(stateless) => stateless,
                None => {
                    learned.sessions = true;
                    self.initialize(call, clock).await?
                }
            };
            learned.live = Some(started.clone());
            Ok(started)
        }))
        .await
    }

    /// What was learned as `gone` no longer holds: learned again, `server/discover` first.
    async fn forget(&self, gone: &Live) {
        let mut learned = self.session.live.lock().await;
        if learned
            .live
            .as_ref()
            .is_some_and(|live| live.epoch == gone.epoch)
        {
            *learned = Learned::default();
        }
    }

    /// `server/discover`: the stateless revision when the server lists it among its versions;
    /// `None` for a server that does not know the method (a JSON-RPC error, or HTTP 400, 404
    /// or 405: a session-based server), speaks other versions only, or answers with something
    /// else than a list of versions.
    async fn discover(&self, call: &McpCall, clock: &Clock) -> Result<Option<Live>, McpError> {
        #[derive(Deserialize)]
        struct Discovered {
            #[serde(rename = "supportedVersions")]
            versions: Speaks,
        }
        let asking = Live {
            id: None,
            version: Some(HeaderValue::from_static(STATELESS)),
            epoch: 0,
            stateless: true,
        };
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let mut discover = McpCall::new(call.target.clone(), "server/discover");
        discover.headers = call.headers.clone();
        let body = call_body(id, &discover, None, false, true)?;
        let answered = async {
            let response = clock
                .within(self.open(&discover, Some(&asking), body))
                .await?;
            self.read(response, id, &mut clock.clone()).await
        }
        .await;
        let result = match answered {
            Ok(result) => result,
            // Not the method's answer (a JSON-RPC error, or a reply that is not one): the
            // server does not know it.
            Err(Failure::Failed(McpFailure::Rpc(_) | McpFailure::Protocol { .. })) => {
                return Ok(None);
            }
            Err(Failure::Failed(McpFailure::Http(HttpFailure::Status(status))))
                if matches!(status.status, 400 | 404 | 405) =>
            {
                return Ok(None);
            }
            Err(error) => return Err(error),
        };
        // A result that does not list versions is not the stateless revision's: the session.
        let speaks = serde_json::from_str::<Discovered>(result.get())
            .is_ok_and(|discovered| discovered.versions.0);
        if !speaks {
            return Ok(None);
        }
        Ok(Some(Live {
            epoch: self.session.started(),
            ..asking
        }))
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
            stateless: false,
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
        let body = call_body(id, call, token, false, live.stateless)?;
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
        // One map, made at its size: the trace, the session or the routing headers, the type.
        let mut headers = HeaderMap::with_capacity(call.headers.len() + 4);
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
            if live.stateless {
                routing(&mut headers, call)?;
            }
        }
        let http = HttpCall::to_url(Method::POST, self.url.clone())
            .body(body)
            .with_headers(headers);
        let accept = HeaderValue::from_static("application/json, text/event-stream");
        let response = self
            .http
            .open_any(http, Some(accept))
            .await
            .map_err(|error| error.map(McpFailure::Http))?;
        if response.status().is_success() {
            return Ok(response);
        }
        // Boxed, as every rare path: its room is not held by every attempt's future.
        Err(Box::pin(refused(response, live)).await)
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
        // The stateless revision has no notification for it: the connection closed with the
        // attempt is the cancellation.
        if live.stateless {
            return;
        }
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
/// the attempt's; a tool result whose text alone is wanted is read here, in the same pass. A
/// result's `resultType` is read too: `input_required` is the tool's failure (a fixed text)
/// unless a handler answers it; a type this client does not know is not a result it can use.
pub(super) fn answer(call: &McpCall, result: Box<RawValue>) -> Result<Answer, McpError> {
    if call.tool.is_none() {
        // Any other request: passed on whole, unless it is not a complete result.
        return match serde_json::from_str::<Typed>(result.get()).map(|typed| typed.kind) {
            Ok(ResultType::InputRequired) => Err(protocol("a request that asked for input")),
            Ok(ResultType::Other) => Err(untyped()),
            _ => Ok(Answer::Result(result)),
        };
    }
    if call.text_only
        && let Ok(read) = serde_json::from_str::<ToolText>(result.get())
    {
        return match read.kind {
            ResultType::Complete if read.is_error == Some(true) => {
                Err(tool_failed(read.content.text))
            }
            ResultType::Complete => Ok(Answer::Text(read.content.text)),
            ResultType::InputRequired => asked(call, result),
            ResultType::Other => Err(untyped()),
        };
    }
    // Not a result this client can read as text: the whole result, checked as before.
    match tool_error(&result)? {
        ResultType::Complete => Ok(Answer::Result(result)),
        ResultType::InputRequired => asked(call, result),
        ResultType::Other => Err(untyped()),
    }
}

/// The tool asked for input no handler gave it: its own failure, with the fixed text the
/// model is given.
pub(super) fn asked_for_input() -> McpError {
    tool_failed("the tool asked for input".to_owned())
}

/// A result whose `resultType` this client does not know: not one it can use.
fn untyped() -> McpError {
    protocol("a result of a type this client does not read")
}

/// A tool's `input_required` result: the answer when a handler answers it, else the tool's
/// own failure (never retried, counted by its breaker).
fn asked(call: &McpCall, result: Box<RawValue>) -> Result<Answer, McpError> {
    if call.asks {
        Ok(Answer::InputRequired(result))
    } else {
        Err(asked_for_input())
    }
}

/// A tool's own failure (`isError: true`) as the attempt's failure, its text kept for the
/// model; else the result's type.
fn tool_error(result: &RawValue) -> Result<ResultType, McpError> {
    #[derive(Deserialize)]
    struct Flag {
        #[serde(default, rename = "isError")]
        is_error: Option<bool>,
        #[serde(default, rename = "resultType")]
        kind: ResultType,
    }
    let flag: Flag = serde_json::from_str(result.get())
        .map_err(|_| protocol("a tool result that is not an object"))?;
    if flag.kind != ResultType::Complete || flag.is_error != Some(true) {
        return Ok(flag.kind);
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
/// progress may extend the attempt), when `trace` (over stdio, where there are no headers) the
/// call's W3C trace context (`traceparent`, `tracestate`: MCP's SEP-414), and when `stateless`
/// the stateless revision's envelope (its version, the client's capabilities and info). Over
/// HTTP the trace travels in the headers, and the params stay as the caller wrote them.
pub(super) fn call_body(
    id: i64,
    call: &McpCall,
    token: Option<i64>,
    trace: bool,
    stateless: bool,
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
            stateless,
        },
    };
    // Written straight from the caller's params: no copy of them per attempt.
    serde_json::to_vec(&body)
        .map(Bytes::from)
        .map_err(|error| invalid(&error))
}

/// A request's `params` as sent: the caller's, with `added` (and the stateless envelope)
/// merged into their `_meta`.
struct Params<'a> {
    params: Option<&'a serde_json::Map<String, serde_json::Value>>,
    added: &'a serde_json::Map<String, serde_json::Value>,
    stateless: bool,
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
        if meta.is_some_and(|meta| !meta.is_empty()) || !self.added.is_empty() || self.stateless {
            map.serialize_entry(
                "_meta",
                &Meta {
                    meta,
                    added: self.added,
                    stateless: self.stateless,
                },
            )?;
        }
        map.end()
    }
}

/// A request's `_meta`: the caller's, each name `added` has (and the stateless envelope's)
/// in its place.
struct Meta<'a> {
    meta: Option<&'a serde_json::Map<String, serde_json::Value>>,
    added: &'a serde_json::Map<String, serde_json::Value>,
    stateless: bool,
}

impl serde::Serialize for Meta<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let envelope = [VERSION_META, CAPABILITIES_META, INFO_META];
        let ours = |name: &str| {
            self.added.contains_key(name) || (self.stateless && envelope.contains(&name))
        };
        let mut map = serializer.serialize_map(None)?;
        let caller = self.meta.into_iter().flatten();
        for (name, value) in caller.filter(|(name, _)| !ours(name)) {
            map.serialize_entry(name, value)?;
        }
        for (name, value) in self.added {
            map.serialize_entry(name, value)?;
        }
        if self.stateless {
            map.serialize_entry(VERSION_META, STATELESS)?;
            // No capability asked for: this client answers no server-to-client request.
            map.serialize_entry(CAPABILITIES_META, &Empty {})?;
            map.serialize_entry(
                INFO_META,
                &ClientInfo {
                    name: "a2a-error",
                    version: env!("CARGO_PKG_VERSION"),
                },
            )?;
        }
        map.end()
    }
}

#[derive(serde::Serialize)]
struct Empty {}

#[derive(serde::Serialize)]
struct ClientInfo {
    name: &'static str,
    version: &'static str,
}

/// The stateless revision's routing headers: `Mcp-Method`, and `Mcp-Name` for the methods
/// that name what they act on (a tool, a prompt, a resource's URI), encoded as the revision
/// says when it is not a plain header value.
fn routing(headers: &mut HeaderMap, call: &McpCall) -> Result<(), McpError> {
    let method = HeaderValue::from_str(&call.method)
        .map_err(|_| protocol("a method that is not a header value"))?;
    headers.insert(METHOD_HEADER, method);
    let key = match &*call.method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return Ok(()),
    };
    if let Some(serde_json::Value::String(name)) = call.params.as_ref().and_then(|p| p.get(key)) {
        let value = HeaderValue::from_str(&header_text(name))
            .map_err(|_| protocol("a name that is not a header value"))?;
        headers.insert(NAME_HEADER, value);
    }
    Ok(())
}

/// `text` as a header carries it: itself when it is visible ASCII (spaces inside) with no
/// space at either end, else `=?base64?…?=` (the stateless revision's encoding).
fn header_text(text: &str) -> Cow<'_, str> {
    let plain = text.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && text.trim() == text
        && !(text.starts_with("=?base64?") && text.ends_with("?="));
    if plain {
        return Cow::Borrowed(text);
    }
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    Cow::Owned(format!("=?base64?{encoded}?="))
}

/// Whether a list of versions holds [`STATELESS`], read as it is parsed: a list of millions
/// costs its bytes, not a string each.
struct Speaks(bool);

impl<'de> Deserialize<'de> for Speaks {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Speaks;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of versions")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Speaks, A::Error> {
                let mut speaks = false;
                while let Some(version) = seq.next_element::<Cow<'de, str>>()? {
                    speaks |= version == STATELESS;
                }
                Ok(Speaks(speaks))
            }
        }
        deserializer.deserialize_seq(Visit)
    }
}

/// Whether `error` says that what was learned of the server no longer holds: a 404 or 400 to
/// a request in a session (the server forgot it), or `-32022` (a version it no longer speaks).
fn is_lost(error: &McpError, live: &Live) -> bool {
    match error {
        Failure::Failed(McpFailure::Http(HttpFailure::Status(status))) => {
            matches!(status.status, 400 | 404) && live.id.is_some()
        }
        Failure::Failed(McpFailure::Rpc(error)) => error.code == UNSUPPORTED_VERSION,
        _ => false,
    }
}

/// A non-2xx reply as the failure it is: a lost session's status as it came (the attempt
/// learns the server again); the stateless revision's own errors (a JSON-RPC error of its
/// range in the body of a 4xx) as those errors; any other status as every HTTP dependency's.
async fn refused(response: reqwest::Response, live: Option<&Live>) -> McpError {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = crate::http::body::read(response, ERROR_BODY_BYTES)
        .await
        .unwrap_or_default();
    let session = live.is_some_and(|live| live.id.is_some());
    if (400..500).contains(&status)
        && !session
        && let Ok(Incoming::Answer(_, Err(Failure::Failed(McpFailure::Rpc(error))))) =
            incoming(&body)
        && matches!(
            error.code,
            HEADER_MISMATCH | MISSING_CAPABILITY | UNSUPPORTED_VERSION
        )
    {
        return Failure::Failed(McpFailure::Rpc(error));
    }
    Failure::Failed(McpFailure::Http(HttpFailure::Status(StatusFailure::read(
        status,
        &headers,
        &body[..body.len().min(EXCERPT_BYTES)],
        std::time::SystemTime::now(),
    ))))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_versions_a_server_speaks_are_read_without_being_kept() {
        let read = |json: &str| serde_json::from_str::<Speaks>(json).map(|s| s.0).ok();
        assert_eq!(read(r#"["2025-11-25","2026-07-28"]"#), Some(true));
        assert_eq!(read(r#"["2025-11-25"]"#), Some(false));
        assert_eq!(read(r#"[]"#), Some(false));
        assert_eq!(read(r#""2026-07-28""#), None);
        let many = format!("[{}\"2026-07-28\"]", "\"x\",".repeat(100_000));
        assert_eq!(read(&many), Some(true));
    }

    #[test]
    fn a_name_is_a_header_value_as_it_is_or_base64_encoded() {
        assert_eq!(header_text("search.v2"), "search.v2");
        assert_eq!(header_text("two words"), "two words");
        for odd in ["café", " edge", "tab\there", "line\n", "=?base64?abc?="] {
            let sent = header_text(odd);
            assert!(
                sent.starts_with("=?base64?") && sent.ends_with("?="),
                "{odd}"
            );
            use base64::Engine;
            let inner = &sent["=?base64?".len()..sent.len() - 2];
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(inner)
                .unwrap();
            assert_eq!(decoded, odd.as_bytes());
            assert!(HeaderValue::from_str(&sent).is_ok());
        }
    }

    #[test]
    fn a_stateless_body_carries_the_envelope_in_place_of_the_callers() {
        let mut call = McpCall::new(Arc::from("s"), "tools/call");
        let params = serde_json::json!({
            "name": "t",
            "arguments": {"q": 1},
            "_meta": {"keep": true, "io.modelcontextprotocol/protocolVersion": "1999-01-01"},
        });
        call.params = Some(Arc::new(params.as_object().unwrap().clone()));
        let body: serde_json::Value =
            serde_json::from_slice(&call_body(7, &call, Some(7), false, true).unwrap()).unwrap();
        let meta = &body["params"]["_meta"];
        assert_eq!(meta["io.modelcontextprotocol/protocolVersion"], STATELESS);
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            serde_json::json!({})
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"],
            "a2a-error"
        );
        assert_eq!(meta["keep"], true);
        assert_eq!(meta["progressToken"], 7);
        assert_eq!(body["params"]["arguments"], serde_json::json!({"q": 1}));
        // In a session the params stay the caller's.
        let body: serde_json::Value =
            serde_json::from_slice(&call_body(8, &call, None, false, false).unwrap()).unwrap();
        assert_eq!(body["params"], params);
        let mut headers = HeaderMap::new();
        routing(&mut headers, &call).unwrap();
        assert_eq!(headers[METHOD_HEADER], "tools/call");
        assert_eq!(headers[NAME_HEADER], "t");
    }
}
