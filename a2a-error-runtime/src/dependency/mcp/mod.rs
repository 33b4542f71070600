//! `McpDependency`: a client of one MCP server over streamable HTTP or stdio (feature `mcp`), built
//! like every other callee and under the same layers, with MCP's meaning kept: per-tool
//! breakers, `tools/call` repeated only when that is safe, a session that recovers, and
//! `notifications/cancelled` for a request left running.

mod call;
mod error;
mod input;
mod outcome;
mod read;
mod stdio;
mod tools;
mod transport;

use std::ffi::OsString;
use std::future::Future;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::CallToolResult;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tower::util::BoxCloneSyncService;
use tracing::Instrument;

use call::McpCall;
pub use error::{McpError, McpFailure, RpcError, TOOL_TEXT_BYTES, ToolError};
use input::InputHandler;
pub use input::{InputRequests, InputResponses, MAX_INPUT_REQUEST_BYTES, MAX_INPUT_ROUNDS};
pub use outcome::{ToolOutcome, Unavailable};
use read::Answer;
use stdio::{Program, StdioService};
use tools::Tools;
pub use tools::{MAX_PAGES, MAX_TOOLS};
use transport::{McpServer, McpService, Session, asked_for_input};

use super::http::HttpService;
use crate::dependency::failure::Failure;
use crate::dependency::http::HttpFailure;
use crate::http::{BuildError, HttpSettings, parse_url};
use crate::resilience::breaker::CircuitBreaker;
use crate::resilience::{
    CalleeSettings, Classify, HedgeConfig, HedgeDelay, OverHttp, StackBuilder,
};

/// A client of one MCP server (its tools, resources and prompts) over streamable HTTP, or
/// over stdio as a child process ([`McpDependency::stdio`]).
///
/// Every request goes through the same layers as a call to an agent (a total timeout,
/// retries with the shared budget and the server's `Retry-After`, the breaker, the bulkhead,
/// an attempt timeout, the caller's deadline), classified with MCP's meaning:
///
/// - A failure before the request reached the server (no connection, 429 or 503, a 404 for
///   the session) is repeated for any method. `initialize`, `tools/list`, `resources/read`,
///   `prompts/get` and the other reads are repeated after any transient failure.
///   `tools/call` is repeated after a failure that leaves open whether it ran (a timeout, a
///   connection lost after sending, a 5xx, a JSON-RPC error) only for the tools declared
///   idempotent ([`McpDependencyBuilder::idempotent_tools`], or the server's
///   `idempotentHint` with [`McpDependencyBuilder::trust_idempotent_hint`]).
/// - JSON-RPC errors -32700, -32600, -32601 and -32602 are refusals; -32603 and the rest are
///   transient. A result with `isError: true` is the tool's own failure: not retried,
///   counted by the tool's breaker, its text kept (at most [`TOOL_TEXT_BYTES`]).
/// - One breaker per tool the server listed (at most [`MAX_TOOLS`]; every other name shares
///   `other`) beside the server's: a tool's JSON-RPC errors, timeouts and `isError` results
///   open its own circuit and leave the other tools callable; a failure to reach the server
///   counts for the server's.
/// - Both kinds of server: before its first request the client asks `server/discover`. A
///   server listing the stateless revision `2026-07-28` is spoken to statelessly (no
///   handshake, no session; every request carries `_meta`'s protocol version, client
///   capabilities and client info, and the `MCP-Protocol-Version`, `Mcp-Method` and, for
///   `tools/call`, `prompts/get` and `resources/read`, `Mcp-Name` headers). A server that
///   does not know the method (a JSON-RPC error, HTTP 400, 404 or 405) speaks a session-based
///   revision (`2025-11-25` asked): the session is initialized (`initialize`,
///   `notifications/initialized`), its `Mcp-Session-Id` sent on every later request.
/// - What was learned is kept for every clone and learned again, within the same attempt and
///   once, when it no longer holds: a 404 or 400 to a request that carried the session (the
///   server forgot it), or `-32022` (a version it no longer speaks). `-32020` (a header that
///   disagrees with the body) and `-32021` (a client capability required) are refusals: not
///   retried, counted against the server.
/// - `tools/list` is read page by page (`nextCursor`, at most [`MAX_PAGES`] pages), once
///   each time the server is learned, and again when its `ttlMs` (bounded to 1 s .. 1 h) has
///   passed.
/// - A tool that asks back (a result of type `input_required`) is offered to the handler
///   given with [`McpDependencyBuilder::on_input_required`], its answers sent back under a new
///   id, at most [`MAX_INPUT_ROUNDS`] rounds; without one it is the tool's own failure (the
///   model is told `the tool asked for input`). A result of a type this client does not know
///   is not one it can use.
/// - An attempt that times out, is cut by the deadline, loses its connection after sending,
///   or whose caller goes away is cancelled: in a session with `notifications/cancelled`
///   and its request's id (the call answers once it has left, waiting at most 250 ms);
///   statelessly by the connection closed with it (the revision has no notification).
///
/// Replies (JSON or an SSE stream) are bounded as every HTTP dependency's: 32 MiB in all by
/// default, 1 MiB per event.
///
/// ```no_run
/// # use a2a_error_runtime as a2a_error;
/// # async fn demo() -> Result<(), a2a_error::BuildError> {
/// use a2a_error::dependency::McpDependency;
///
/// let tools = McpDependency::builder("search", "http://127.0.0.1:9000/mcp")
///     .idempotent_tools(["lookup"])
///     .build()?;
/// let outcome = tools.tool("lookup", serde_json::json!({"q": "rust"})).await;
/// let prompt = format!("{}\nuser: rust", outcome.for_model());
/// let degraded = outcome.degraded_mark(); // Some("unavailable"), Some("error") or None
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpDependency {
    name: Arc<str>,
    service: BoxCloneSyncService<McpCall, Answer, McpError>,
    session: Arc<Session>,
    tools: Arc<Tools>,
    /// When the tools were last listed.
    listed: Arc<Mutex<Listed>>,
    idempotent: Arc<[String]>,
    trust_hint: bool,
    input: Option<InputHandler>,
    breaker: Option<CircuitBreaker>,
}

/// When the tools were last listed: in which learning of the server (0: never), and until
/// when the server said the listing holds (its `ttlMs`).
#[derive(Clone, Copy, Debug, Default)]
struct Listed {
    epoch: u64,
    until: Option<tokio::time::Instant>,
}

/// The bounds of a listing's `ttlMs`: relisted at most once a second, and at least once an
/// hour when the server gives one.
const TTL_BOUNDS: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(3600));

impl std::fmt::Debug for McpDependency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpDependency")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl McpDependency {
    /// A builder for the MCP server named `name` (in metrics, logs and breaker registries)
    /// whose streamable HTTP endpoint is `url` (`http://127.0.0.1:9000/mcp`).
    pub fn builder(name: impl Into<Arc<str>>, url: impl Into<String>) -> McpDependencyBuilder {
        McpDependency::at(name.into(), Endpoint::Http(url.into()))
    }

    /// A builder for the MCP server named `name` run as a child process over stdio: `program`
    /// with `args`, started (and initialized) on first use and again after it ends, each
    /// message a line of JSON (a line over the event limit, 1 MiB by default, ends the
    /// process). Its failures read as over HTTP: a process that does not start is a refused
    /// connection (nothing ran), one that ends with requests waiting a lost connection.
    /// Dropping the last clone of the dependency ends the process.
    pub fn stdio<I, S>(
        name: impl Into<Arc<str>>,
        program: impl Into<OsString>,
        args: I,
    ) -> McpDependencyBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let program = Program {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
        };
        McpDependency::at(name.into(), Endpoint::Stdio(program))
    }

    fn at(name: Arc<str>, endpoint: Endpoint) -> McpDependencyBuilder {
        let settings = McpSettings {
            name,
            endpoint,
            http: HttpSettings::default(),
            max_reply: 32 << 20,
            max_event: 1 << 20,
            progress_up_to: None,
            idempotent: Vec::new(),
            trust_hint: false,
            input: None,
        };
        StackBuilder::new(settings, false)
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server's circuit breaker, when it has one.
    pub fn breaker(&self) -> Option<&CircuitBreaker> {
        self.breaker.as_ref()
    }

    /// The breaker of the tool `name` (of `other` if the server did not list it), when
    /// breakers are on.
    pub fn tool_breaker(&self, name: &str) -> Option<CircuitBreaker> {
        self.tools.get(name).breaker
    }

    /// The tool names the server listed that this client knows (at most [`MAX_TOOLS`]).
    pub fn known_tools(&self) -> Vec<String> {
        self.tools.names()
    }

    /// `tools/list`, page by page (at most [`MAX_PAGES`]): the valid names it holds join the
    /// known ones, up to [`MAX_TOOLS`] in all, and are returned. Called by
    /// [`call_tool`](Self::call_tool) and [`tool`](Self::tool) each time the server is
    /// learned (a new session, a `server/discover`), and again when the listing's `ttlMs`
    /// has passed.
    pub async fn list_tools(&self) -> Result<Vec<String>, McpError> {
        let epoch = self.session.epoch();
        let mut names = Vec::new();
        let mut cursor: Option<String> = None;
        let mut ttl = None;
        for page in 0..MAX_PAGES {
            let mut call = McpCall::new(self.name.clone(), "tools/list");
            if let Some(cursor) = cursor.take() {
                let mut params = serde_json::Map::new();
                params.insert("cursor".into(), cursor.into());
                call.params = Some(Arc::new(params));
            }
            let result = self.send(call).await.and_then(whole)?;
            let listed = self
                .tools
                .listed(result.get())
                .map_err(|_| protocol("a tools/list result that is not one"))?;
            names.extend(listed.names);
            if page == 0 {
                ttl = listed.ttl;
            }
            match listed.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        // The learning the listing went to (a new one if it had to learn the server).
        let until = ttl.map(|ms| {
            let ttl = Duration::from_secs_f64(ms.clamp(0.0, 3.6e6) / 1000.0);
            tokio::time::Instant::now() + ttl.clamp(TTL_BOUNDS.0, TTL_BOUNDS.1)
        });
        self.set_listed(Listed {
            epoch: self.session.epoch().max(epoch),
            until,
        });
        Ok(names)
    }

    fn set_listed(&self, listed: Listed) {
        *self.listed.lock().unwrap_or_else(|e| e.into_inner()) = listed;
    }

    /// Whether the tools are to be listed before a call: never yet in this learning of the
    /// server, or the listing's `ttlMs` has passed.
    fn to_list(&self) -> bool {
        let listed = *self.listed.lock().unwrap_or_else(|e| e.into_inner());
        listed.epoch == 0
            || listed.epoch != self.session.epoch()
            || listed
                .until
                .is_some_and(|until| tokio::time::Instant::now() >= until)
    }

    /// Calls the tool `name` with `arguments` (a JSON object: `json!({"q": "rust"})` or a
    /// `serde_json::Map`): its result, or why not. A result with `isError: true` is a
    /// [`McpFailure::Tool`]. Lists the tools first when they are to be (so that the tool has
    /// its own breaker).
    ///
    /// The result is rmcp's whole model of it, every part and `structuredContent` built in
    /// memory (a `serde_json::Value` costs ~17 bytes a byte of JSON, a content part ~250
    /// bytes): for a tool whose results may be large, [`tool`](Self::tool) reads only the
    /// text parts, in place, at about the reply's own bytes.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Into<serde_json::Value>,
    ) -> Result<CallToolResult, McpError> {
        let result = self
            .send_tool(name, arguments.into(), false)
            .await
            .and_then(whole)?;
        serde_json::from_str(result.get()).map_err(|_| protocol("a tool result that is not one"))
    }

    /// [`call_tool`](Self::call_tool)'s request: the result as the server wrote it, or
    /// only its text (`text_only`); a tool that asks back answered by the handler, if any.
    async fn send_tool(
        &self,
        name: &str,
        arguments: serde_json::Value,
        text_only: bool,
    ) -> Result<Answer, McpError> {
        let serde_json::Value::Object(arguments) = arguments else {
            // Refused here, never sent: MCP's arguments are an object.
            return Err(Failure::Failed(McpFailure::Rpc(RpcError::new(
                -32602,
                "the arguments are not a JSON object",
            ))));
        };
        if self.to_list() {
            match self.list_tools().await {
                Ok(_) => {}
                // A server that will not list its tools still has tools to call: its tools
                // share `other` until it is learned again.
                Err(Failure::Failed(McpFailure::Rpc(_) | McpFailure::Protocol { .. })) => {
                    self.set_listed(Listed {
                        epoch: self.session.epoch(),
                        until: None,
                    });
                }
                Err(error) => return Err(error),
            }
        }
        let tool = self.tools.get(name);
        // `CallToolRequestParams` as rmcp writes it (`name`, `arguments`), made in place:
        // through `to_value` the arguments were copied once more.
        let mut params = serde_json::Map::new();
        params.insert("name".into(), name.into());
        params.insert("arguments".into(), serde_json::Value::Object(arguments));
        let idempotent = self.idempotent.iter().any(|known| known == name)
            || (self.trust_hint && tool.idempotent_hint);
        let call = |params: Arc<serde_json::Map<String, serde_json::Value>>| {
            let mut call = McpCall::new(self.name.clone(), "tools/call");
            call.params = Some(params);
            call.tool = Some(tool.label.clone());
            call.breaker = tool.breaker.clone();
            call.repeatable = idempotent.then_some(true);
            call.text_only = text_only;
            call.asks = self.input.is_some();
            call
        };
        let params = Arc::new(params);
        let mut answer = self.send(call(params.clone())).await?;
        for _ in 0..MAX_INPUT_ROUNDS {
            let Answer::InputRequired(result) = &answer else {
                return Ok(answer);
            };
            answer = Box::pin(self.ask(name, &params, result, &call)).await?;
        }
        match answer {
            Answer::InputRequired(_) => Err(asked_for_input()),
            answer => Ok(answer),
        }
    }

    /// A tool that asked back: its requests offered to the handler, the call sent again with
    /// the answers (a new id); declined, or not a request that can be answered, it is the
    /// tool's failure.
    async fn ask(
        &self,
        name: &str,
        first: &serde_json::Map<String, serde_json::Value>,
        result: &RawValue,
        call: impl Fn(Arc<serde_json::Map<String, serde_json::Value>>) -> McpCall,
    ) -> Result<Answer, McpError> {
        let declined = asked_for_input;
        let (Some(handler), Some(asked)) = (&self.input, input::asked(result)) else {
            return Err(declined());
        };
        let requests = InputRequests {
            tool: name.to_owned(),
            requests: asked.requests,
        };
        let Some(responses) = handler(requests).await else {
            return Err(declined());
        };
        let params = input::answered(first, responses, asked.state);
        self.send(call(Arc::new(params))).await
    }

    /// [`call_tool`](Self::call_tool), as the model is to be told of it. Only the result's
    /// text parts are read, in place as they come (every other part and member skipped), so
    /// a result costs about its own bytes in memory however it is made up.
    pub async fn tool(&self, name: &str, arguments: impl Into<serde_json::Value>) -> ToolOutcome {
        let read =
            self.send_tool(name, arguments.into(), true)
                .await
                .and_then(|answer| match answer {
                    Answer::Text(text) => Ok(text),
                    // A result the attempt could not read as text: read again, to say why.
                    Answer::Result(result) => serde_json::from_str::<read::ToolText>(result.get())
                        .map(|read| read.content.text)
                        .map_err(|_| protocol("a tool result that is not one")),
                    Answer::InputRequired(_) => Err(asked_for_input()),
                });
        match read {
            Ok(text) => ToolOutcome::Answered(text),
            Err(error) => ToolOutcome::of(Err(error)),
        }
    }

    /// Any other request (`resources/read`, `prompts/get`, …) with `params`, its result read
    /// as `T`. The reads MCP defines are repeated after any transient failure; other methods
    /// only when they provably did not run.
    pub async fn request<P, T>(&self, method: &str, params: &P) -> Result<T, McpError>
    where
        P: Serialize + ?Sized,
        T: DeserializeOwned,
    {
        let params = match serde_json::to_value(params) {
            Ok(serde_json::Value::Object(params)) => params,
            _ => return Err(protocol("params that are not a JSON object")),
        };
        let mut call = McpCall::new(self.name.clone(), method.to_owned());
        call.params = Some(Arc::new(params));
        let result = self.send(call).await.and_then(whole)?;
        serde_json::from_str(result.get()).map_err(|_| protocol("a result that is not one"))
    }

    /// Sends `call` through the layers, recorded as an MCP request; answers once the
    /// cancellations its attempts sent have left.
    async fn send(&self, call: McpCall) -> Result<Answer, McpError> {
        let operation = crate::observe::McpOperation::start(
            &self.name,
            call.method.clone(),
            call.tool.as_ref(),
        );
        let cancels = call.cancels.clone();
        let with_trace = |mut call: McpCall, trace: &_| {
            crate::trace::insert(&mut call.headers, trace);
            call
        };
        let status_of = |result: &Result<Answer, McpError>| match result {
            Ok(_) => Some(200),
            Err(Failure::Failed(McpFailure::Http(HttpFailure::Status(status)))) => {
                Some(status.status)
            }
            Err(_) => None,
        };
        let result = super::record::send_http(
            &self.name,
            self.service.clone(),
            call,
            "mcp",
            with_trace,
            status_of,
        )
        .instrument(operation.span().clone())
        .await;
        cancels.sent().await;
        operation.ended(result.as_ref().err().map(|error| error.failure_reason()));
        result
    }
}

/// The whole result of a request that asked for it.
fn whole(answer: Answer) -> Result<Box<RawValue>, McpError> {
    match answer {
        Answer::Result(result) => Ok(result),
        Answer::Text(_) => Err(protocol("a result read as text alone")),
        Answer::InputRequired(_) => Err(asked_for_input()),
    }
}

fn protocol(detail: &str) -> McpError {
    Failure::Failed(McpFailure::Protocol {
        detail: detail.to_owned(),
    })
}

/// Builds an [`McpDependency`]. Defaults as every client's: a total timeout of 90 s, an
/// attempt timeout of 30 s (which progress may extend only with
/// [`progress_extends_up_to`](StackBuilder::progress_extends_up_to)), a connect timeout of
/// 10 s, the default retry policy, a breaker for the server and one per tool with the
/// default configuration, the default bulkhead, replies of at most 32 MiB (1 MiB an event),
/// no tool idempotent. The layers' setters are [`StackBuilder`]'s, the same for every kind
/// of callee; this page's are the server's own.
pub type McpDependencyBuilder = StackBuilder<McpSettings>;

/// What an [`McpDependencyBuilder`] adds to the stack: the server's name and endpoint, and
/// what its transport sends and reads.
pub struct McpSettings {
    name: Arc<str>,
    endpoint: Endpoint,
    http: HttpSettings,
    max_reply: usize,
    max_event: usize,
    progress_up_to: Option<Duration>,
    idempotent: Vec<String>,
    trust_hint: bool,
    input: Option<InputHandler>,
}

impl std::fmt::Debug for McpSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSettings")
            .field("name", &self.name)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

/// Where the server is: a streamable HTTP endpoint, or a program run over stdio.
#[derive(Debug)]
enum Endpoint {
    Http(String),
    Stdio(Program),
}

impl CalleeSettings for McpSettings {
    type Error = McpError;

    /// The reads: `tools/list`, `resources/read`, `resources/list`, `prompts/get`,
    /// `prompts/list`.
    fn hedge(&self, delay: HedgeDelay) -> HedgeConfig {
        HedgeConfig::new(delay).methods([
            "tools/list",
            "resources/read",
            "resources/list",
            "prompts/get",
            "prompts/list",
        ])
    }

    fn http(&mut self) -> Option<&mut HttpSettings> {
        Some(&mut self.http)
    }
}

impl OverHttp for McpSettings {}

impl McpDependencyBuilder {
    /// The tools that may be called again after a failure that leaves open whether they ran
    /// (they do no more the second time: a lookup, a read).
    pub fn idempotent_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.callee.idempotent = names.into_iter().map(Into::into).collect();
        self
    }

    /// Whether a tool the server annotates `idempotentHint: true` is taken as idempotent
    /// (default: no; the hint is the server's word, not yours).
    pub fn trust_idempotent_hint(mut self, trust: bool) -> Self {
        self.callee.trust_hint = trust;
        self
    }

    /// Lets progress notifications (`notifications/progress` for the request, which then
    /// carries a `progressToken`) extend an attempt: each starts the attempt timeout again,
    /// never past `limit` from the attempt's start nor the call's deadline. Default: off.
    pub fn progress_extends_up_to(mut self, limit: Duration) -> Self {
        self.callee.progress_up_to = Some(limit);
        self
    }

    /// Answers the tools that ask back (a result of type `input_required`, the stateless
    /// revision's multi round-trip requests): `handler` gets the tool's requests and gives
    /// the `inputResponses` (or `None` to decline); the call is sent again with them and the
    /// server's `requestState`, at most [`MAX_INPUT_ROUNDS`] rounds. Without a handler (the
    /// default) such a result is the tool's own failure: not retried, counted by the tool's
    /// breaker, the model told `the tool asked for input`.
    ///
    /// ```no_run
    /// # use a2a_error_runtime as a2a_error;
    /// # fn demo() -> Result<(), a2a_error::BuildError> {
    /// use a2a_error::dependency::McpDependency;
    /// use serde_json::json;
    ///
    /// let tools = McpDependency::builder("search", "http://127.0.0.1:9000/mcp")
    ///     .on_input_required(|asked| async move {
    ///         // Accept every elicitation with no content; decline anything else.
    ///         let mut answers = serde_json::Map::new();
    ///         for (key, request) in asked.requests {
    ///             if request["method"] != "elicitation/create" {
    ///                 return None;
    ///             }
    ///             answers.insert(key, json!({"action": "accept", "content": {}}));
    ///         }
    ///         Some(answers)
    ///     })
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn on_input_required<F, R>(mut self, handler: F) -> Self
    where
        F: Fn(InputRequests) -> R + Send + Sync + 'static,
        R: Future<Output = InputResponses> + Send + 'static,
    {
        self.callee.input = Some(Arc::new(move |asked| Box::pin(handler(asked))));
        self
    }

    /// The largest reply read, in bytes (default 32 MiB).
    pub fn max_reply_bytes(mut self, bytes: usize) -> Self {
        self.callee.max_reply = bytes;
        self
    }

    /// The largest event of a reply sent as an SSE stream, in bytes (default 1 MiB).
    pub fn max_event_bytes(mut self, bytes: usize) -> Self {
        self.callee.max_event = bytes;
        self
    }

    /// Builds the client.
    pub fn build(self) -> Result<McpDependency, BuildError> {
        if let Endpoint::Http(url) = &self.callee.endpoint {
            self.callee.http.check_tls(&parse_url(url)?)?;
        }
        let name = self.callee.name.clone();
        let breakers = self.breaker.clone();
        let (mut stack, breaker, settings) = self.finish(&name);
        // The attempt timeout is the transport's, so that progress can extend it.
        let attempt = stack.attempt_timeout.take();
        let session = Arc::new(Session::default());
        let ids = Arc::new(AtomicI64::new(1));
        let service = match settings.endpoint {
            Endpoint::Http(url) => {
                BoxCloneSyncService::new(stack.service(McpService::new(McpServer {
                    http: HttpService {
                        http: settings.http.client()?,
                        base: Arc::from(""),
                        max_reply: settings.max_reply,
                        headers: Default::default(),
                        deadline_header: None,
                        idempotency_header: reqwest::header::HeaderName::from_static(
                            "idempotency-key",
                        ),
                        quota: None,
                    },
                    url: parse_url(&url)?,
                    session: session.clone(),
                    ids,
                    attempt,
                    progress_up_to: settings.progress_up_to,
                    max_event: settings.max_event,
                })))
            }
            Endpoint::Stdio(program) => BoxCloneSyncService::new(stack.service(StdioService {
                program,
                session: session.clone(),
                process: Arc::default(),
                ids,
                attempt,
                progress_up_to: settings.progress_up_to,
                max_line: settings.max_event,
            })),
        };
        Ok(McpDependency {
            service,
            session,
            tools: Arc::new(Tools::new(name.clone(), breakers)),
            listed: Arc::default(),
            idempotent: settings.idempotent.into(),
            trust_hint: settings.trust_hint,
            input: settings.input,
            name,
            breaker,
        })
    }
}
