//! `McpDependency`: a client of one MCP server over streamable HTTP or stdio (feature `mcp`), built
//! like every other callee and under the same layers, with MCP's meaning kept: per-tool
//! breakers, `tools/call` repeated only when that is safe, a session that recovers, and
//! `notifications/cancelled` for a request left running.

mod call;
mod error;
mod outcome;
mod read;
mod stdio;
mod tools;
mod transport;

use std::ffi::OsString;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::CallToolResult;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tower::util::BoxCloneSyncService;
use tracing::Instrument;

use call::McpCall;
pub use error::{McpError, McpFailure, RpcError, TOOL_TEXT_BYTES, ToolError};
pub use outcome::{ToolOutcome, Unavailable};
use read::Answer;
use stdio::{Program, StdioService};
pub use tools::MAX_TOOLS;
use tools::Tools;
use transport::{McpServer, McpService, Session};

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
/// - The session is initialized on first use (`initialize`, `notifications/initialized`),
///   its `Mcp-Session-Id` sent on every later request. A 404 for a request that carried it
///   starts one new session and sends the request again, within the same attempt.
/// - An attempt that times out, is cut by the deadline, loses its connection after sending,
///   or whose caller goes away sends `notifications/cancelled` with its request's id; the
///   call answers once it has left (waiting at most 250 ms).
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
/// let mut arguments = serde_json::Map::new();
/// arguments.insert("q".into(), "rust".into());
/// let outcome = tools.tool("lookup", arguments).await;
/// let prompt = format!("{}\nuser: rust", outcome.for_model());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpDependency {
    name: Arc<str>,
    service: BoxCloneSyncService<McpCall, Answer, McpError>,
    session: Arc<Session>,
    tools: Arc<Tools>,
    /// The session whose tools were last listed (0: none).
    listed: Arc<AtomicU64>,
    idempotent: Arc<[String]>,
    trust_hint: bool,
    breaker: Option<CircuitBreaker>,
}

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

    /// `tools/list` (its first page): the valid names it holds join the known ones, up to
    /// [`MAX_TOOLS`] in all, and are returned. Called by [`call_tool`](Self::call_tool) once
    /// per session.
    pub async fn list_tools(&self) -> Result<Vec<String>, McpError> {
        let epoch = self.session.epoch();
        let result = self
            .send(McpCall::new(self.name.clone(), "tools/list"))
            .await
            .and_then(whole)?;
        let names = self
            .tools
            .listed(result.get())
            .map_err(|_| protocol("a tools/list result that is not one"))?;
        // The session the listing went to (a new one if it had to start one).
        self.listed
            .store(self.session.epoch().max(epoch), Ordering::Release);
        Ok(names)
    }

    /// Calls the tool `name` with `arguments`: its result, or why not. A result with
    /// `isError: true` is a [`McpFailure::Tool`]. Lists the tools first when this session has
    /// not (so that the tool has its own breaker).
    ///
    /// The result is rmcp's whole model of it, every part and `structuredContent` built in
    /// memory (a `serde_json::Value` costs ~17 bytes a byte of JSON, a content part ~250
    /// bytes): for a tool whose results may be large, [`tool`](Self::tool) reads only the
    /// text parts, in place, at about the reply's own bytes.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<CallToolResult, McpError> {
        let result = self
            .send_tool(name, arguments, false)
            .await
            .and_then(whole)?;
        serde_json::from_str(result.get()).map_err(|_| protocol("a tool result that is not one"))
    }

    /// [`call_tool`](Self::call_tool)'s request: the result as the server wrote it, or
    /// only its text (`text_only`).
    async fn send_tool(
        &self,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        text_only: bool,
    ) -> Result<Answer, McpError> {
        let listed = self.listed.load(Ordering::Acquire);
        if listed == 0 || listed != self.session.epoch() {
            match self.list_tools().await {
                Ok(_) => {}
                // A server that will not list its tools still has tools to call: its tools
                // share `other` until its next session.
                Err(Failure::Failed(McpFailure::Rpc(_) | McpFailure::Protocol { .. })) => {
                    self.listed.store(self.session.epoch(), Ordering::Release);
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
        let mut call = McpCall::new(self.name.clone(), "tools/call");
        call.params = Some(Arc::new(params));
        call.tool = Some(tool.label);
        call.breaker = tool.breaker;
        call.repeatable = idempotent.then_some(true);
        call.text_only = text_only;
        self.send(call).await
    }

    /// [`call_tool`](Self::call_tool), as the model is to be told of it. Only the result's
    /// text parts are read, in place as they come (every other part and member skipped), so
    /// a result costs about its own bytes in memory however it is made up.
    pub async fn tool(
        &self,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> ToolOutcome {
        let read = self
            .send_tool(name, arguments, true)
            .await
            .and_then(|answer| match answer {
                Answer::Text(text) => Ok(text),
                // A result the attempt could not read as text: read again, to say why.
                Answer::Result(result) => serde_json::from_str::<read::ToolText>(result.get())
                    .map(|read| read.content.text)
                    .map_err(|_| protocol("a tool result that is not one")),
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
            listed: Arc::new(AtomicU64::new(0)),
            idempotent: settings.idempotent.into(),
            trust_hint: settings.trust_hint,
            name,
            breaker,
        })
    }
}
