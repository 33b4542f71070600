//! `JsonRpc`: the JSON-RPC 2.0 endpoint. Register handlers by method name and mount it in an
//! axum `Router`; everything protocol-level is done exactly as JSON-RPC 2.0 and A2A say.
//!
//! One idea a file: `handler` (what a handler is: `Handler`, `RequestContext`),
//! [`admission`] (the limit on handlers at once, `max_concurrent`), `dispatch` (reading a
//! body, batches, and the guards every request runs under: version, deadline, panic), and
//! here the endpoint's configuration and its tower `Service`.

#[doc(hidden)]
pub mod admission;
mod dispatch;
mod handler;
mod stream;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::Request;
use axum::response::Response;
use futures_util::FutureExt as _;

use crate::wire::error::A2aError;
use crate::wire::object::WireProfile;

use crate::server::version::Versions;

pub use admission::AdaptiveLimit;
use admission::Admission;
use handler::Erased;
pub use handler::{Handler, RequestContext};
pub use stream::StreamHandler;
#[cfg(feature = "grpc")]
#[doc(hidden)]
pub use stream::guarded;
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub use stream::{events, served};

type DynError = Box<dyn A2aError + Send + Sync>;
type Outcome = Result<Vec<u8>, DynError>;

/// What a method answers: one result, or (a streaming method) a stream of them.
pub(crate) enum Answer {
    /// The JSON of the result.
    Result(Vec<u8>),
    /// The JSON of each result, sent as SSE events.
    Events(stream::Events),
}

/// How a registered method is called: for one result, or for a stream of them.
enum Call<S> {
    /// A method with one result (its JSON).
    Unary(Erased<S, Vec<u8>>),
    /// Not allowed in a batch, whose replies are one JSON array.
    Stream(Erased<S, stream::Events>),
}

impl<S> Clone for Call<S> {
    fn clone(&self) -> Self {
        match self {
            Call::Unary(call) => Call::Unary(Arc::clone(call)),
            Call::Stream(call) => Call::Stream(Arc::clone(call)),
        }
    }
}

/// A registered method.
#[derive(Clone)]
struct Registered<S> {
    call: Call<S>,
    /// The name it was called by (an alias's own): the handler's `ctx.method` and the
    /// metric label, shared rather than copied for every request.
    name: Arc<str>,
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
        let mut methods: Vec<&str> = self.inner.methods.names().collect();
        methods.sort_unstable();
        f.debug_struct("JsonRpc")
            .field("methods", &methods)
            .finish_non_exhaustive()
    }
}

/// The methods served, by name: a list searched in order rather than a hash map. The names
/// are the endpoint's own (a dozen or so, none of them a caller's), and comparing them costs
/// less than hashing the name a caller sent (SipHash, to stay safe from a caller's keys,
/// which this list needs no protection from: nothing a caller sends is added to it).
#[derive(Clone)]
struct Methods<S>(Vec<(Box<str>, Registered<S>)>);

impl<S> Methods<S> {
    fn get(&self, name: &str) -> Option<&Registered<S>> {
        self.0
            .iter()
            .find(|(named, _)| **named == *name)
            .map(|(_, registered)| registered)
    }

    /// Registers `name`, in place of what it named before.
    fn insert(&mut self, name: &str, registered: Registered<S>) {
        match self.0.iter_mut().find(|(named, _)| **named == *name) {
            Some((_, held)) => *held = registered,
            None => self.0.push((name.into(), registered)),
        }
    }

    fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(name, _)| &**name)
    }
}

#[derive(Clone)]
struct Inner<S> {
    state: S,
    methods: Methods<S>,
    max_body_bytes: usize,
    body_timeout: Duration,
    max_batch: usize,
    timeout: Option<Duration>,
    versions: Versions,
    profile: WireProfile,
    admission: Option<Arc<Admission>>,
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
                methods: Methods(Vec::new()),
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
    pub fn method<T, H: Handler<T, S>>(self, name: &str, handler: H) -> Self {
        let handler = Arc::new(handler);
        self.register(
            name,
            Call::Unary(Arc::new(move |state, params, ctx| {
                Arc::clone(&handler).call(state, params, ctx)
            })),
        )
    }

    /// Registers a streaming `handler` for `name` (see [`StreamHandler`]): its results are
    /// sent as SSE events, in the JSON-RPC shape (each event a response with the request's
    /// id). In a batch it is an Invalid Request, not run: a batch's replies are one array.
    pub fn stream<T, H: StreamHandler<T, S>>(self, name: &str, handler: H) -> Self {
        let handler = Arc::new(handler);
        self.register(
            name,
            Call::Stream(Arc::new(move |state, params, ctx| {
                Arc::clone(&handler).call(state, params, ctx)
            })),
        )
    }

    fn register(mut self, name: &str, call: Call<S>) -> Self {
        let registered = Registered {
            call,
            name: Arc::from(name),
        };
        self.inner_mut().methods.insert(name, registered);
        self
    }

    /// Makes `alias` call the handler registered as `target`.
    ///
    /// # Panics
    ///
    /// When no method `target` is registered yet, at start-up, as axum does for a bad route:
    /// an alias that silently answered "method not found" would only show in production.
    pub fn alias(mut self, alias: &str, target: &str) -> Self {
        let Some(mut handler) = self.inner.methods.get(target).cloned() else {
            panic!(
                "JsonRpc::alias({alias:?}, {target:?}): no method {target:?} is registered; \
                 register it with .method() before its aliases"
            );
        };
        handler.name = Arc::from(alias);
        self.inner_mut().methods.insert(alias, handler);
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
    /// [`serve`](crate::server::serve::serve) (or your own server's settings).
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
        self.inner_mut().admission = Some(Arc::new(Admission::new(handlers)));
        self
    }

    /// Under `admission`, a limit shared with other bindings (the SDK bridge's).
    #[cfg(feature = "sdk")]
    #[doc(hidden)]
    pub fn admission(mut self, admission: Arc<Admission>) -> Self {
        self.inner_mut().admission = Some(admission);
        self
    }

    /// As [`max_concurrent`](Self::max_concurrent), with a limit that follows the handlers'
    /// measured time instead of a number: it grows while their time holds and shrinks while
    /// it rises (Gradient2; see [`AdaptiveLimit`] for why and how). The right fixed number
    /// depends on the machine and on what the handlers call; this one is found.
    pub fn adaptive_concurrency(mut self, limit: AdaptiveLimit) -> Self {
        self.inner_mut().admission = Some(Arc::new(Admission::adaptive(limit)));
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

    /// This endpoint answering `/` and `router` the rest, for [`serve`](crate::server::serve::serve):
    /// a request to `/` reaches the endpoint without being routed (see
    /// [`App`](crate::server::serve::App) for what that saves, and why the router's layers do not
    /// see those requests).
    ///
    /// ```no_run
    /// # use a2a_error_runtime as a2a_error;
    /// # async fn run() -> std::io::Result<()> {
    /// use a2a_error::server::{JsonRpc, ServeLimits, serve};
    ///
    /// let rest = axum::Router::new().route("/health", axum::routing::get(|| async { "ok" }));
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    /// serve(listener, JsonRpc::new().in_front_of(rest), ServeLimits::default()).await
    /// # }
    /// ```
    pub fn in_front_of(self, router: axum::Router) -> crate::server::serve::App {
        crate::server::serve::App::new(
            Arc::new(move |request| Box::pin(self.clone().respond(request))),
            router,
        )
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
        Box::pin(self.clone().respond(request).map(Ok))
    }
}
