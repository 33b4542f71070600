//! [`Bridge`]: an SDK `RequestHandler` served by this crate's endpoint with its guarantees
//! (see the [module documentation](super)), one file a part: the builder (here), the calls of
//! the handler every binding makes (`calls`), JSON-RPC (`jsonrpc`), HTTP+JSON (`rest`, its
//! routes read from the method table) and the REST admission (`admission`). gRPC is
//! `sdk/grpc/`.

mod admission;
mod calls;
mod jsonrpc;
mod rest;

#[cfg(feature = "grpc")]
pub(crate) use calls::Events;

use a2a_error_runtime::trace::{TRACEPARENT_HEADER, TRACESTATE_HEADER};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use a2a::AgentCard;
use a2a_server::{RequestHandler, ServiceParams};
use axum::Router;
use axum::http::HeaderMap;
use serde_json::Value;
use tokio::time::Instant;

use crate::call::CALL_PARAM;
use crate::link::Link;
use crate::owners::{DEFAULT_MAX_TASKS, Owners, Ownership, key_of};
use crate::protojson::SendReply;
use crate::scoped::Scoped;
use crate::streams::Streams;
use a2a_error_runtime::server::Dedup;
use a2a_error_runtime::server::endpoint::admission::Admission;
use a2a_error_runtime::server::scope::{self, ReadScope};
use a2a_error_runtime::wire::remote::RemoteError;

/// The dedup of SendMessage through the bridge: its replies are the SDK's, remembered as
/// their A2A JSON.
pub type SendDedup = Dedup<SendReply, RemoteError>;

/// An SDK `RequestHandler` (the SDK's `DefaultRequestHandler` with your `AgentExecutor`,
/// guarded by [`Guarded`](crate::executor::Guarded), and your `TaskStore`) served by this crate:
/// JSON-RPC 2.0 at `POST /` through [`JsonRpc`](a2a_error_runtime::server::JsonRpc), HTTP+JSON at the A2A 1.0 routes, and the
/// agent card at `/.well-known/agent-card.json`.
///
/// ```no_run
/// # async fn run(handler: a2a_server::DefaultRequestHandler, card: a2a::AgentCard) {
/// use a2a_error::sdk::Bridge;
/// use a2a_error::server::{Dedup, ServeLimits, serve};
///
/// let router = Bridge::new(handler)
///     .card(card)
///     .dedup(Dedup::in_memory())
///     .router();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await.unwrap();
/// serve(listener, router, ServeLimits::default()).await.unwrap();
/// # }
/// ```
pub struct Bridge<H> {
    pub(super) handler: Arc<Scoped<H>>,
    /// The streams run, for a dedup's retried streams (see `Streams`).
    streams: Arc<Streams>,
    scope: ReadScope,
    dedup: Option<SendDedup>,
    /// Whether the dedup was given the bridge's scope (it had no `identify` of its own).
    dedup_by_scope: bool,
    card: Option<Arc<Value>>,
    pub(super) timeout: Option<Duration>,
    /// The limit on requests running at once, over every binding.
    pub(super) admission: Option<Arc<Admission>>,
}

impl<H> Clone for Bridge<H> {
    fn clone(&self) -> Self {
        Bridge {
            handler: Arc::clone(&self.handler),
            streams: Arc::clone(&self.streams),
            scope: Arc::clone(&self.scope),
            dedup: self.dedup.clone(),
            dedup_by_scope: self.dedup_by_scope,
            card: self.card.clone(),
            timeout: self.timeout,
            admission: self.admission.clone(),
        }
    }
}

impl<H: RequestHandler> Bridge<H> {
    /// Serves `handler`, with no dedup, no card and no handler timeout (the caller's
    /// `A2A-Deadline-Ms` still holds).
    pub fn new(handler: H) -> Self {
        Bridge::from_arc(Arc::new(handler))
    }

    /// Serves a handler shared with other code.
    pub fn from_arc(handler: Arc<H>) -> Self {
        Bridge {
            handler: Arc::new(Scoped {
                inner: handler,
                owners: Ownership::Local(Arc::new(Owners::new(DEFAULT_MAX_TASKS))),
                rate: None,
                push: None,
            }),
            streams: Arc::new(Streams::new()),
            scope: Arc::new(scope::authorization),
            dedup: None,
            dedup_by_scope: false,
            card: None,
            timeout: None,
            admission: None,
        }
    }

    /// At most `requests` run at once, over JSON-RPC, HTTP+JSON and gRPC together (default:
    /// no limit but gRPC's `GrpcLimits::max_in_flight`): one past it is answered at once
    /// with AGENT_UNAVAILABLE and a RetryInfo (`Retry-After`) of about one request's recent
    /// time, as `JsonRpc::max_concurrent` does.
    pub fn max_concurrent(mut self, requests: usize) -> Self {
        self.admission = Some(Arc::new(Admission::new(requests)));
        self
    }

    /// As [`max_concurrent`](Self::max_concurrent), with a limit that follows the requests'
    /// measured time (see [`AdaptiveLimit`](a2a_error_runtime::server::AdaptiveLimit)).
    pub fn adaptive_concurrency(mut self, limit: a2a_error_runtime::server::AdaptiveLimit) -> Self {
        self.admission = Some(Arc::new(Admission::adaptive(limit)));
        self
    }

    /// Makes SendMessage safe to retry: the same messageId from the same caller runs the
    /// handler once, on any replica sharing the store, over any binding; a reply is replayed
    /// to a retry over another binding. A dedup without an
    /// [`identify`](Dedup::identify) of its own is given the bridge's [`scope`](Self::scope).
    pub fn dedup(mut self, dedup: SendDedup) -> Self {
        self.dedup_by_scope = !dedup.identifies();
        self.dedup = Some(if self.dedup_by_scope {
            dedup.identify_by(Arc::clone(&self.scope))
        } else {
            dedup
        });
        self
    }

    /// How a caller's scope is read from a request (default
    /// [`scope::authorization`]: the `Authorization` header's bytes, the `authorization`
    /// metadata over gRPC). A task belongs to the scope of the caller it was created for:
    /// GetTask, ListTasks, CancelTask, SubscribeToTask, the push configs and a SendMessage
    /// that continues it serve it to that scope only, and to any other it does not exist
    /// (TASK_NOT_FOUND). Requests without a credential share one anonymous scope.
    pub fn scope(
        mut self,
        scope: impl Fn(&HeaderMap) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.scope = Arc::new(scope);
        if self.dedup_by_scope
            && let Some(dedup) = self.dedup.take()
        {
            self.dedup = Some(dedup.identify_by(Arc::clone(&self.scope)));
        }
        self
    }

    /// How many tasks' owners the bridge remembers (default 100,000, about 282 bytes each
    /// in resident memory):
    /// past it, the tasks recorded first are served to no one. Keep it at least the number
    /// of tasks the task store holds.
    pub fn max_owned_tasks(self, tasks: usize) -> Self {
        self.rescoped(|scoped| scoped.owners = Ownership::Local(Arc::new(Owners::new(tasks))))
    }

    /// Limits each caller (by its [`scope`](Self::scope)) to `limiter`'s rate, over every
    /// binding: a request over it is refused with RATE_LIMITED and the exact time until the
    /// caller's next one is allowed (RetryInfo, `Retry-After`). The agent card is not limited.
    pub fn rate_limit(self, limiter: a2a_error_runtime::server::RateLimiter) -> Self {
        self.rescoped(|scoped| scoped.rate = Some(limiter))
    }

    /// Keeps which task is whose in `tasks`, the handler's shared task store (the same
    /// store, or a clone: a `RedisTaskStore` (feature `redis`), or any
    /// [`OwnedTaskStore`](crate::owned::OwnedTaskStore) of your own), instead of in this
    /// process: every replica sharing it then serves a task to its owner, whichever replica
    /// created it, and a SubscribeToTask that reaches a replica not running the task follows
    /// it through the store (when the store can). Each task is written with its owner, in one
    /// step, when the handler creates it (so [`max_owned_tasks`](Self::max_owned_tasks) no
    /// longer applies; the store's own bounds do).
    pub fn shared_tasks(self, tasks: impl crate::owned::OwnedTaskStore) -> Self {
        self.rescoped(|scoped| scoped.owners = Ownership::Shared(Arc::new(tasks)))
    }

    /// Serves push notifications with `push` (give the same to [`Guarded::push`](crate::executor::Guarded::push),
    /// which sees the events): the configs (Create, Get, List, Delete, and a SendMessage's
    /// `configuration.taskPushNotificationConfig`) are kept by it and checked (a URL inside
    /// the network, or a token with CR or LF, is INVALID_PARAMS), and each event of a task
    /// with configs is delivered (see [`PushDelivery`](crate::push::PushDelivery)). The SDK's
    /// handler is given no push store: its one-shot sender never runs.
    pub fn push(self, push: crate::push::PushDelivery) -> Self {
        self.rescoped(|scoped| scoped.push = Some(push))
    }

    /// The bridge with its [`Scoped`] handler changed by `change` (the SDK handler shared).
    fn rescoped(mut self, change: impl FnOnce(&mut Scoped<H>)) -> Self {
        let mut scoped = (*self.handler).clone();
        change(&mut scoped);
        self.handler = Arc::new(scoped);
        self
    }

    /// The SDK's service params of a request: its headers (as the SDK's routers pass them),
    /// the trace context its executor's calls descend from, and what only the bridge knows
    /// (`sdk::call`): the caller's scope for [`Scoped`] and the request's deadline for
    /// [`Guarded`](crate::executor::Guarded).
    pub(crate) fn service_params(
        &self,
        headers: &HeaderMap,
        deadline: Option<Instant>,
    ) -> ServiceParams {
        self.params_of(headers, deadline, None)
    }

    /// [`service_params`](Self::service_params), with the request's link to its execution
    /// (`link`, by id) when it has one.
    fn params_of(
        &self,
        headers: &HeaderMap,
        deadline: Option<Instant>,
        link: Option<u64>,
    ) -> ServiceParams {
        let mut params = service_params(headers);
        let scope = key_of((self.scope)(headers).as_deref());
        // The caller the budgets count, for an execution (a request with a link) without a
        // credential: its address (with one, its scope, read from the scope by `Guarded`).
        // Other requests run no executor and are told nothing more.
        let caller = match (scope, link) {
            (0, Some(_)) => a2a_error_runtime::server::peer::current().map(address_key),
            _ => None,
        };
        params.insert(
            CALL_PARAM.to_owned(),
            vec![crate::call::write(scope, deadline, link, caller)],
        );
        params
    }

    /// The agent card served at `/.well-known/agent-card.json`.
    pub fn card(mut self, card: AgentCard) -> Self {
        self.card = a2a_pb::protojson_conv::to_value(&card).ok().map(Arc::new);
        self
    }

    /// How long a handler may run before the call fails with DEADLINE_EXCEEDED (default: no
    /// limit but the caller's `A2A-Deadline-Ms`). It bounds a stream's wait for its first
    /// event, not the stream.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// JSON-RPC at `POST /`, HTTP+JSON and the card, on one router (the JSON-RPC endpoint, the
    /// REST routes and the gRPC service each record `rpc.server.call.duration` by the A2A
    /// method and outcome).
    pub fn router(&self) -> Router {
        Router::new()
            .merge(self.json_rpc().into_router())
            .merge(self.rest_router())
    }

    /// What [`router`](Self::router) serves, for [`serve`](a2a_error_runtime::server::serve), with the
    /// JSON-RPC endpoint answering `/` without being routed (an eighth of a JSON-RPC error
    /// reply's work; see [`App`](a2a_error_runtime::server::App)). Layers of the caller's own go on
    /// [`router`](Self::router) instead: they do not see the requests to `/` here.
    pub fn app(&self) -> a2a_error_runtime::server::App {
        self.json_rpc().in_front_of(self.rest_router())
    }

    /// The end of a unary request's work: the caller's deadline or the bridge's timeout,
    /// whichever comes first. The executor is given it, so that work the bridge stopped
    /// waiting for ends too.
    pub(crate) fn end(&self, deadline: Option<Instant>) -> Option<Instant> {
        a2a_error_runtime::deadline::served_end(Instant::now(), self.timeout, deadline)
    }
}

/// A request's headers and trace context as service params; the params only the bridge sets
/// are left out of what the caller sent (see [`Bridge::service_params`]).
fn service_params(headers: &HeaderMap) -> ServiceParams {
    // Room for the params the bridge adds (trace context, its own, a push config), so that
    // the map is not grown again: a rehash cost more than the headers' own inserts.
    let mut params: ServiceParams = HashMap::with_capacity(headers.keys_len() + BRIDGE_PARAMS);
    for (name, value) in headers {
        // Only the endpoint says what the deadline, the link and the scope are, and which
        // span of the trace the executor's calls descend from (this request's, not the
        // caller's): a caller's own are skipped here, by name, rather than hashed in and
        // removed after.
        if is_bridge_param(name.as_str()) {
            continue;
        }
        if let Ok(value) = value.to_str() {
            params
                .entry(name.as_str().to_owned())
                .or_default()
                .push(value.to_owned());
        }
    }
    let trace = a2a_error_runtime::trace::current().unwrap_or_else(|| {
        a2a_error_runtime::server::headers::Known::read(headers).trace(&tracing::Span::none())
    });
    params.insert(TRACEPARENT_HEADER.to_owned(), vec![trace.traceparent()]);
    if let Some(state) = trace.tracestate() {
        params.insert(TRACESTATE_HEADER.to_owned(), vec![state.to_owned()]);
    }
    params
}

/// How many params the bridge may add to a request's headers.
const BRIDGE_PARAMS: usize = 4;

/// Whether `name` is a param only the bridge sets (header names are lowercase).
fn is_bridge_param(name: &str) -> bool {
    [
        CALL_PARAM,
        crate::scoped::PUSH_PARAM,
        TRACEPARENT_HEADER,
        TRACESTATE_HEADER,
    ]
    .contains(&name)
}

impl<H: RequestHandler> Bridge<H> {
    /// The service params of a request whose execution is tied to `link`.
    fn linked_params(
        &self,
        headers: &HeaderMap,
        deadline: Option<Instant>,
        link: &Link,
    ) -> ServiceParams {
        self.params_of(headers, deadline, Some(link.id()))
    }
}

/// The caller key of an anonymous request from `peer`: a hash of its address, apart from
/// every scope's (a scope's key hashes its text; this one, bytes no text of a scope begins
/// with).
fn address_key(peer: std::net::IpAddr) -> u128 {
    let mut bytes = [0u8; 17];
    bytes[0] = 0xff;
    match peer {
        std::net::IpAddr::V4(v4) => bytes[1..5].copy_from_slice(&v4.octets()),
        std::net::IpAddr::V6(v6) => bytes[1..].copy_from_slice(&v6.octets()),
    }
    xxhash_rust::xxh3::xxh3_128(&bytes).max(1)
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue};

    use super::{CALL_PARAM, service_params};
    use crate::scoped::PUSH_PARAM;

    /// A caller cannot send what only the bridge says: a header named as the bridge's own
    /// param (another caller's scope, a link, a push config, the executor's trace) is not
    /// passed on; the caller's other headers are, as the SDK's routers pass them.
    #[tokio::test]
    async fn a_callers_header_never_stands_for_the_bridges_params() {
        let mut headers = HeaderMap::new();
        let forged = format!("{} - 1", "ab".repeat(16));
        headers.insert(CALL_PARAM, HeaderValue::from_str(&forged).unwrap());
        headers.insert(
            PUSH_PARAM,
            HeaderValue::from_static("{\"url\":\"http://x\"}"),
        );
        let caller_trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        headers.insert("traceparent", HeaderValue::from_static(caller_trace));
        headers.insert("a2a-version", HeaderValue::from_static("1.0"));
        let params = service_params(&headers);
        assert!(!params.contains_key(CALL_PARAM));
        assert!(!params.contains_key(PUSH_PARAM));
        assert_eq!(params["a2a-version"], ["1.0"]);
        // The trace the executor's calls descend from is this request's, not the caller's
        // span (the same trace, another span).
        let trace = &params["traceparent"];
        assert_eq!(trace.len(), 1);
        assert_ne!(trace[0], caller_trace);
    }
}
