//! `JsonRpc`: the JSON-RPC 2.0 endpoint. Register handlers by method name and mount it in an
//! axum `Router`; everything protocol-level is done exactly as JSON-RPC 2.0 and A2A say.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::wire::error::A2aError;
use crate::wire::jsonrpc::{self, Body, Id, Request as RpcRequest};
use crate::wire::object::WireProfile;
use crate::wire::standard::StandardError;

use super::DEADLINE_HEADER;
use super::version::Versions;

type DynError = Box<dyn A2aError + Send + Sync>;
type Outcome = Result<Vec<u8>, DynError>;
type Erased<S> =
    Arc<dyn Fn(&S, Box<RawValue>, RequestContext) -> BoxFuture<'static, Outcome> + Send + Sync>;

/// How many requests of one batch run at once.
const BATCH_CONCURRENCY: usize = 8;

/// What a handler knows about the request it serves.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RequestContext {
    /// The method as the caller named it (an alias stays an alias).
    pub method: Arc<str>,
    /// The request id; `None` for a notification.
    pub id: Option<Id>,
    /// The HTTP request headers.
    pub headers: Arc<HeaderMap>,
    /// The A2A version the caller asked for (the configured default when it sent none).
    pub version: Arc<str>,
    /// When the caller gives up (its `A2A-Deadline-Ms`, read on arrival). The handler is
    /// stopped then with DEADLINE_EXCEEDED; pass what is left on to agents it calls.
    pub deadline: Option<tokio::time::Instant>,
}

impl RequestContext {
    /// The time left before the caller's deadline, if it sent one.
    pub fn time_left(&self) -> Option<Duration> {
        self.deadline
            .map(|deadline| deadline.saturating_duration_since(tokio::time::Instant::now()))
    }
}

/// A JSON-RPC method handler: an async closure or fn taking the method's params and the
/// [`RequestContext`], optionally after the endpoint's state as axum's `State`:
///
/// - `|params: P, ctx: RequestContext| async { ... }`
/// - `|State(state): State<S>, params: P, ctx: RequestContext| async { ... }`
///
/// `P` is deserialized from the request's `params` (a mismatch is -32602 with the field path);
/// the `Ok` value is serialized as the `result`; the `Err` is sent through its [`A2aError`]
/// impl. Implemented for every such closure; not meant to be implemented by hand.
pub trait Handler<T, S>: Send + Sync + 'static {
    /// Runs the handler on raw params, under the endpoint's panic guard.
    #[doc(hidden)]
    fn call(
        self: Arc<Self>,
        state: &S,
        params: Box<RawValue>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Result<Vec<u8>, Box<dyn A2aError + Send + Sync>>>;
}

/// Params read inside the future, under the panic guard: a `Deserialize` impl that panics
/// gets the same -32603 reply as a handler that does. They are read from the request's text
/// straight into `P` (no `serde_json::Value` in between, which would cost up to ~85 times
/// the bytes), and a method nobody serves never reads them at all.
async fn finish<P, T, E, Fut>(params: Box<RawValue>, run: impl FnOnce(P) -> Fut) -> Outcome
where
    P: DeserializeOwned,
    T: Serialize,
    E: A2aError + Send + Sync + 'static,
    Fut: Future<Output = Result<T, E>>,
{
    let params = match super::params::from_raw::<P>(&params) {
        Ok(params) => params,
        Err(invalid) => return Err(Box::new(invalid) as DynError),
    };
    match run(params).await {
        Ok(result) => serde_json::to_vec(&result).map_err(|error| {
            tracing::error!("could not serialize a result: {error}");
            Box::new(StandardError::Internal) as DynError
        }),
        Err(error) => Err(Box::new(error) as DynError),
    }
}

impl<F, Fut, P, T, E, S> Handler<(P,), S> for F
where
    F: Fn(P, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
    P: DeserializeOwned + Send + 'static,
    T: Serialize + Send + 'static,
    E: A2aError + Send + Sync + 'static,
{
    fn call(
        self: Arc<Self>,
        _: &S,
        params: Box<RawValue>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Outcome> {
        finish(params, move |params| self(params, ctx)).boxed()
    }
}

impl<F, Fut, P, T, E, S> Handler<(State<S>, P), S> for F
where
    F: Fn(State<S>, P, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
    P: DeserializeOwned + Send + 'static,
    T: Serialize + Send + 'static,
    E: A2aError + Send + Sync + 'static,
    S: Clone + Send + Sync + 'static,
{
    fn call(
        self: Arc<Self>,
        state: &S,
        params: Box<RawValue>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Outcome> {
        let state = State(state.clone());
        finish(params, move |params| self(state, params, ctx)).boxed()
    }
}

/// A JSON-RPC 2.0 endpoint for A2A methods.
///
/// ```
/// # use a2a_error_runtime as a2a_error;
/// use a2a_error::server::JsonRpc;
/// use a2a_error::StandardError;
///
/// #[derive(serde::Deserialize)]
/// struct GetTask { id: String }
///
/// let rpc = JsonRpc::new()
///     .method("GetTask", |params: GetTask, _ctx| async move {
///         Err::<(), _>(StandardError::TaskNotFound { task_id: Some(params.id) })
///     })
///     .alias("tasks/get", "GetTask");
/// let app: axum::Router = rpc.into_router();
/// ```
///
/// With application state, handlers take axum's `State` first, and the endpoint mounts into
/// a router of any state:
///
/// ```
/// # use a2a_error_runtime as a2a_error;
/// use std::sync::Arc;
/// use a2a_error::server::{JsonRpc, RequestContext};
/// use a2a_error::StandardError;
/// use axum::extract::State;
///
/// #[derive(Clone, Default)]
/// struct App { tasks: Arc<std::sync::Mutex<Vec<String>>> }
///
/// #[derive(serde::Deserialize)]
/// struct GetTask { id: String }
///
/// async fn get_task(State(app): State<App>, p: GetTask, _: RequestContext)
///     -> Result<String, StandardError> {
///     let tasks = app.tasks.lock().unwrap();
///     tasks.iter().find(|t| **t == p.id).cloned()
///         .ok_or(StandardError::TaskNotFound { task_id: Some(p.id) })
/// }
///
/// let app = App::default();
/// let rpc = JsonRpc::with_state(app.clone()).method("GetTask", get_task);
/// let router: axum::Router<App> = axum::Router::new().merge(rpc.into_router());
/// let _: axum::Router = router.with_state(app);
/// ```
///
/// - Parse error -32700 (bad JSON or UTF-8, nesting too deep), id null; Invalid Request -32600,
///   echoing the id whenever it could be read; Method not found -32601; Invalid params -32602
///   with the field path in a `google.rpc.BadRequest` detail; the handler's own error through
///   its `A2aError` impl.
/// - Notifications run and get no reply. Batches run concurrently; `[]` is one Invalid
///   Request; a batch of only notifications gets no body (204).
/// - Every reply body is a JSON-RPC object: a wrong content type (415), an oversized body
///   (413 CONTENT_TOO_LARGE, refused from `Content-Length` before reading), a handler timeout
///   (DEADLINE_EXCEEDED) and a handler panic (-32603, the process carries on) included.
/// - An `A2A-Version` the endpoint does not serve gets VERSION_NOT_SUPPORTED.
/// - Only the public message and data fields reach the wire; the full error goes to
///   `tracing` with the method and id.
pub struct JsonRpc<S = ()> {
    inner: Arc<Inner<S>>,
}

impl<S> Clone for JsonRpc<S> {
    fn clone(&self) -> Self {
        JsonRpc {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<S> std::fmt::Debug for JsonRpc<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut methods: Vec<&str> = self.inner.methods.keys().map(String::as_str).collect();
        methods.sort_unstable();
        f.debug_struct("JsonRpc")
            .field("methods", &methods)
            .finish_non_exhaustive()
    }
}

#[derive(Clone)]
struct Inner<S> {
    state: S,
    methods: HashMap<String, Erased<S>>,
    max_body_bytes: usize,
    body_timeout: Duration,
    max_batch: usize,
    timeout: Option<Duration>,
    versions: Versions,
    profile: WireProfile,
    admission: Option<Arc<Admission>>,
}

/// The endpoint's limit on handlers running at once, and what it has seen of their time.
struct Admission {
    running: Semaphore,
    /// A moving average of handler run time, in microseconds: the delay a shed caller is told.
    service_micros: AtomicU64,
}

/// A running handler's place under the limit.
struct Slot<'a> {
    admission: &'a Admission,
    _permit: SemaphorePermit<'a>,
    started: tokio::time::Instant,
}

impl Admission {
    /// A slot for one handler, or the AGENT_UNAVAILABLE a shed caller gets, with a delay of
    /// about one handler's recent time (at least 100 ms, at most 30 s), by when a slot has
    /// most likely come free.
    fn admit(&self) -> Result<Slot<'_>, DynError> {
        match self.running.try_acquire() {
            Ok(permit) => Ok(Slot {
                admission: self,
                _permit: permit,
                started: tokio::time::Instant::now(),
            }),
            Err(_) => {
                let millis = self.service_micros.load(Ordering::Relaxed) / 1000;
                let delay = Duration::from_millis(millis)
                    .clamp(Duration::from_millis(100), Duration::from_secs(30));
                Err(Box::new(StandardError::AgentUnavailable {
                    retry_after: Some(delay),
                }))
            }
        }
    }
}

impl Slot<'_> {
    /// The handler finished: its time goes into the average.
    fn finished(self) {
        let took = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let average = &self.admission.service_micros;
        let old = average.load(Ordering::Relaxed);
        // Weight 1/8, as TCP's smoothed RTT; a lost update under a race only costs precision.
        let new = if old == 0 {
            took
        } else {
            old - old / 8 + took / 8
        };
        average.store(new, Ordering::Relaxed);
    }
}

impl Default for JsonRpc {
    fn default() -> Self {
        JsonRpc::new()
    }
}

impl JsonRpc {
    /// An endpoint with no methods and no state, serving A2A 1.0, bodies up to 4 MiB read
    /// within 30 s, batches up to 100, and no handler timeout.
    pub fn new() -> Self {
        JsonRpc::with_state(())
    }
}

impl<S: Clone + Send + Sync + 'static> JsonRpc<S> {
    /// An endpoint whose handlers may take `State<S>` (axum's) before their params; the
    /// defaults are those of [`JsonRpc::new`].
    pub fn with_state(state: S) -> Self {
        JsonRpc {
            inner: Arc::new(Inner {
                state,
                methods: HashMap::new(),
                max_body_bytes: 4 << 20,
                body_timeout: Duration::from_secs(30),
                max_batch: 100,
                timeout: None,
                versions: Versions::default(),
                profile: WireProfile::A2a,
                admission: None,
            }),
        }
    }

    fn inner_mut(&mut self) -> &mut Inner<S> {
        Arc::make_mut(&mut self.inner)
    }

    /// Registers `handler` for `name` (see [`Handler`] for the shapes it may take).
    pub fn method<T, H: Handler<T, S>>(mut self, name: &str, handler: H) -> Self {
        let handler = Arc::new(handler);
        let erased: Erased<S> = Arc::new(
            move |state: &S, params: Box<RawValue>, ctx: RequestContext| {
                Arc::clone(&handler).call(state, params, ctx)
            },
        );
        self.inner_mut().methods.insert(name.to_owned(), erased);
        self
    }

    /// Makes `alias` call the handler registered as `target`.
    ///
    /// # Panics
    ///
    /// When no method `target` is registered yet, at start-up, as axum does for a bad route:
    /// an alias that silently answered "method not found" would only show in production.
    pub fn alias(mut self, alias: &str, target: &str) -> Self {
        let Some(handler) = self.inner.methods.get(target).cloned() else {
            panic!(
                "JsonRpc::alias({alias:?}, {target:?}): no method {target:?} is registered; \
                 register it with .method() before its aliases"
            );
        };
        self.inner_mut().methods.insert(alias.to_owned(), handler);
        self
    }

    /// The largest request body accepted (default 4 MiB); larger ones get CONTENT_TOO_LARGE.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.inner_mut().max_body_bytes = bytes;
        self
    }

    /// How long a caller has to send the whole request body (default 30 s); a slower one gets
    /// HTTP 408 with a DEADLINE_EXCEEDED error body, and the partial body is dropped. Headers
    /// are read before the endpoint sees the request: bound them with
    /// [`serve`](super::serve) (or your own server's settings).
    pub fn body_timeout(mut self, limit: Duration) -> Self {
        self.inner_mut().body_timeout = limit;
        self
    }

    /// The largest batch accepted (default 100); larger ones get one Invalid Request.
    pub fn max_batch(mut self, requests: usize) -> Self {
        self.inner_mut().max_batch = requests;
        self
    }

    /// How long a handler may run before the call fails with DEADLINE_EXCEEDED.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.inner_mut().timeout = Some(timeout);
        self
    }

    /// At most `handlers` requests run at once (default: no limit). A request past that is
    /// not queued: it is answered at once with AGENT_UNAVAILABLE and a RetryInfo of about one
    /// handler's recent run time, so an overloaded agent sheds load early instead of letting
    /// every caller wait for its timeout (and the caller's client retries after the delay, or
    /// goes elsewhere). Notifications and each request of a batch count one each.
    pub fn max_concurrent(mut self, handlers: usize) -> Self {
        self.inner_mut().admission = Some(Arc::new(Admission {
            running: Semaphore::new(handlers.clamp(1, Semaphore::MAX_PERMITS)),
            service_micros: AtomicU64::new(0),
        }));
        self
    }

    /// The A2A versions served (default `["1.0"]`).
    pub fn versions<I: IntoIterator<Item = V>, V: Into<String>>(mut self, versions: I) -> Self {
        self.inner_mut().versions.set_served(versions);
        self
    }

    /// The version assumed when a request has no `A2A-Version` header (default `1.0`).
    pub fn default_version(mut self, version: &str) -> Self {
        self.inner_mut().versions.set_assumed(version);
        self
    }

    /// The wire profile of error objects (default A2A 1.0).
    pub fn wire_profile(mut self, profile: WireProfile) -> Self {
        self.inner_mut().profile = profile;
        self
    }

    /// An axum `Router` serving this endpoint at `/` (every HTTP method gets a JSON-RPC
    /// answer; only `POST` with a JSON body reaches a handler). The router's state `R` is free:
    /// the endpoint carries its own, so it merges into a router of any state.
    pub fn into_router<R: Clone + Send + Sync + 'static>(self) -> axum::Router<R> {
        axum::Router::new().route_service("/", self)
    }

    /// Answers one HTTP request.
    pub async fn handle(&self, request: Request<axum::body::Body>) -> Response {
        let (parts, body) = request.into_parts();
        if !super::is_json(&parts.headers) {
            return self.transport_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                StandardError::InvalidRequest,
            );
        }
        let declared = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|len| len > self.inner.max_body_bytes as u64) {
            return self.too_large();
        }
        let read = Limited::new(body, self.inner.max_body_bytes).collect();
        let bytes = match tokio::time::timeout(self.inner.body_timeout, read).await {
            Ok(Ok(collected)) => collected.to_bytes(),
            Ok(Err(error)) if error.is::<LengthLimitError>() => return self.too_large(),
            Ok(Err(error)) if super::serve::is_body_timeout(&*error) => return self.slow_body(),
            Err(_) => return self.slow_body(),
            Ok(Err(error)) => {
                tracing::debug!("could not read a request body: {error}");
                return self.transport_error(StatusCode::BAD_REQUEST, StandardError::ParseError);
            }
        };
        let version = self.inner.versions.asked(&parts.headers);
        let headers = Arc::new(parts.headers);
        match jsonrpc::parse(&bytes, self.inner.max_batch) {
            Body::ParseError => self.reply(Some(
                self.error_response(&Id::Null, &StandardError::ParseError),
            )),
            Body::EmptyBatch => self.reply(Some(
                self.error_response(&Id::Null, &StandardError::InvalidRequest),
            )),
            Body::Single(entry) => {
                let reply = self.entry(entry, &headers, &version).await;
                self.reply(reply)
            }
            Body::BatchTooLarge(size) => {
                tracing::debug!(size, "batch too large");
                self.reply(Some(
                    self.error_response(&Id::Null, &StandardError::InvalidRequest),
                ))
            }
            Body::Batch(entries) => {
                // A few at a time, in order: a batch is one caller's, and must not open a
                // hundred downstream calls at once.
                let replies: Vec<Option<Vec<u8>>> = futures_util::stream::iter(entries)
                    .map(|entry| self.entry(entry, &headers, &version))
                    .buffered(BATCH_CONCURRENCY)
                    .collect()
                    .await;
                let replies: Vec<Vec<u8>> = replies.into_iter().flatten().collect();
                if replies.is_empty() {
                    return self.reply(None);
                }
                let mut body = Vec::with_capacity(replies.iter().map(Vec::len).sum::<usize>() + 2);
                body.push(b'[');
                for (i, reply) in replies.iter().enumerate() {
                    if i > 0 {
                        body.push(b',');
                    }
                    body.extend_from_slice(reply);
                }
                body.push(b']');
                self.reply(Some(body))
            }
        }
    }

    /// One request of a body: its reply bytes, or `None` for a notification.
    async fn entry(
        &self,
        entry: jsonrpc::Entry,
        headers: &Arc<HeaderMap>,
        version: &Arc<str>,
    ) -> Option<Vec<u8>> {
        match entry {
            Err(invalid) => {
                tracing::debug!(reason = invalid.reason, "invalid request");
                Some(self.error_response(&invalid.id, &StandardError::InvalidRequest))
            }
            Ok(request) => self.call(request, headers, version).await,
        }
    }

    async fn call(
        &self,
        request: RpcRequest,
        headers: &Arc<HeaderMap>,
        version: &Arc<str>,
    ) -> Option<Vec<u8>> {
        let RpcRequest { id, method, params } = request;
        let outcome = if !self.inner.versions.serves(version) {
            Err(Box::new(StandardError::VersionNotSupported) as DynError)
        } else {
            match self.inner.methods.get(&method) {
                None => Err(Box::new(StandardError::MethodNotFound) as DynError),
                Some(handler) => match self
                    .inner
                    .admission
                    .as_deref()
                    .map(Admission::admit)
                    .transpose()
                {
                    Err(shed) => Err(shed),
                    Ok(slot) => {
                        // Several headers (a proxy added one): the earliest deadline holds, so no
                        // hop can extend what a caller allowed.
                        let deadline = headers
                            .get_all(DEADLINE_HEADER)
                            .iter()
                            .filter_map(|value| {
                                crate::wire::headers::parse_deadline_ms(value.as_bytes())
                            })
                            .min()
                            .and_then(|left| tokio::time::Instant::now().checked_add(left));
                        let ctx = RequestContext {
                            method: Arc::from(method.as_str()),
                            id: id.clone(),
                            headers: Arc::clone(headers),
                            version: Arc::clone(version),
                            deadline,
                        };
                        let future = handler(&self.inner.state, params, ctx);
                        let outcome = self.run(future, deadline, &method, id.as_ref()).await;
                        if let Some(slot) = slot {
                            slot.finished();
                        }
                        outcome
                    }
                },
            }
        };
        // A failing notification gets no reply, but its failure is logged like any other.
        if let Err(error) = &outcome {
            let registered = self.inner.methods.contains_key(&method);
            super::log::error(&method, registered, id.as_ref(), error.as_ref());
        }
        let id = id?;
        Some(match outcome {
            Ok(result) => {
                let mut out = Vec::with_capacity(result.len() + 40);
                jsonrpc::write_result(&id, &result, &mut out);
                out
            }
            Err(error) => self.error_response(&id, error.as_ref()),
        })
    }

    /// Runs a handler future until the configured timeout or the caller's deadline, whichever
    /// comes first, turning a panic into an internal error.
    async fn run(
        &self,
        future: BoxFuture<'static, Outcome>,
        deadline: Option<tokio::time::Instant>,
        method: &str,
        id: Option<&Id>,
    ) -> Outcome {
        let guarded = AssertUnwindSafe(future).catch_unwind();
        let own = self
            .inner
            .timeout
            .and_then(|limit| tokio::time::Instant::now().checked_add(limit));
        let end = match (own, deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // Calls the handler makes with the typed client inherit the deadline.
        let guarded = crate::deadline::scope(end, guarded);
        let finished = match end {
            Some(end) => match tokio::time::timeout_at(end, guarded).await {
                Ok(finished) => finished,
                Err(_) => return Err(Box::new(StandardError::DeadlineExceeded)),
            },
            None => guarded.await,
        };
        finished.unwrap_or_else(|panic| {
            let text = super::log::panic_text(&*panic);
            let id = id.map(super::log::shown_id);
            tracing::error!(method, id, "handler panicked: {text}");
            Err(Box::new(super::log::Panicked))
        })
    }

    fn error_response(&self, id: &Id, error: &(dyn A2aError + Send + Sync)) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        jsonrpc::write_error(id, error, self.inner.profile, &mut out);
        out
    }

    fn reply(&self, body: Option<Vec<u8>>) -> Response {
        match body {
            Some(body) => super::json_response(StatusCode::OK, body),
            None => StatusCode::NO_CONTENT.into_response(),
        }
    }

    fn too_large(&self) -> Response {
        self.transport_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            StandardError::ContentTooLarge,
        )
    }

    fn slow_body(&self) -> Response {
        self.transport_error(StatusCode::REQUEST_TIMEOUT, StandardError::DeadlineExceeded)
    }

    /// A failure of the HTTP exchange itself: still a JSON-RPC error body, id null.
    fn transport_error(&self, status: StatusCode, error: StandardError) -> Response {
        super::log::error("", false, None, &error);
        super::json_response(status, self.error_response(&Id::Null, &error))
    }
}

impl<S: Clone + Send + Sync + 'static> tower::Service<Request<axum::body::Body>> for JsonRpc<S> {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<axum::body::Body>) -> Self::Future {
        let endpoint = self.clone();
        Box::pin(async move { Ok(endpoint.handle(request).await) })
    }
}
