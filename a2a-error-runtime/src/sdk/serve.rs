//! [`Bridge`]: an SDK `RequestHandler` served over JSON-RPC and HTTP+JSON by this crate's
//! endpoint, with its guarantees (see the [module documentation](super)).

use crate::trace::{TRACEPARENT_HEADER, TRACESTATE_HEADER};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use a2a::{
    A2AError, AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTasksRequest, SendMessageRequest, StreamResponse,
    SubscribeToTaskRequest, TaskPushNotificationConfig,
};
use a2a_server::{RequestHandler, ServiceParams};
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::error::public;
use super::executor::{DEADLINE_PARAM, FAILURE_KEY, epoch};
use super::link::{LINK_PARAM, Link};
use super::owners::{DEFAULT_MAX_TASKS, Owners, Ownership, key_of};
use super::protojson::{ProtoJson, SendParams, SendReply};
use super::scoped::{SCOPE_PARAM, Scoped};
use super::streams::{Seen, Streams};
use crate::server::endpoint::admission::Admission;
use crate::server::rest::{self, Json};
use crate::server::scope::{self, Scope};
use crate::server::{Binding, Dedup, DedupError, JsonRpc, RequestContext};
use crate::server::{Refusal, fingerprint};
use crate::wire::error::A2aError;
use crate::wire::method;
use crate::wire::object::ErrorObject;
use crate::wire::remote::RemoteError;
use crate::wire::standard::StandardError;

/// The dedup of SendMessage through the bridge: its replies are the SDK's, remembered as
/// their A2A JSON.
pub type SendDedup = Dedup<SendReply, RemoteError>;

/// An SDK `RequestHandler` (the SDK's `DefaultRequestHandler` with your `AgentExecutor`,
/// guarded by [`Guarded`](super::Guarded), and your `TaskStore`) served by this crate:
/// JSON-RPC 2.0 at `POST /` through [`JsonRpc`], HTTP+JSON at the A2A 1.0 routes, and the
/// agent card at `/.well-known/agent-card.json`.
///
/// ```no_run
/// # use a2a_error_runtime as a2a_error;
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
    scope: Scope,
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
    /// measured time (see [`AdaptiveLimit`](crate::server::AdaptiveLimit)).
    pub fn adaptive_concurrency(mut self, limit: crate::server::AdaptiveLimit) -> Self {
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

    /// How many tasks' owners the bridge remembers (default 100,000, about 200 bytes each):
    /// past it, the tasks recorded first are served to no one. Keep it at least the number
    /// of tasks the task store holds.
    pub fn max_owned_tasks(self, tasks: usize) -> Self {
        self.rescoped(|scoped| scoped.owners = Ownership::Local(Arc::new(Owners::new(tasks))))
    }

    /// Limits each caller (by its [`scope`](Self::scope)) to `limiter`'s rate, over every
    /// binding: a request over it is refused with RATE_LIMITED and the exact time until the
    /// caller's next one is allowed (RetryInfo, `Retry-After`). The agent card is not limited.
    pub fn rate_limit(self, limiter: crate::server::RateLimiter) -> Self {
        self.rescoped(|scoped| scoped.rate = Some(limiter))
    }

    /// Keeps which task is whose in `tasks`, the handler's shared task store (the same
    /// store, or a clone), instead of in this process: every replica on that Redis then
    /// serves a task to its owner, whichever replica created it, and a SubscribeToTask that
    /// reaches a replica not running the task follows it through the store. Each task is
    /// written with its owner, in one step, when the handler creates it (so
    /// [`max_owned_tasks`](Self::max_owned_tasks) no longer applies; the store's own bounds
    /// do).
    #[cfg(feature = "redis")]
    pub fn shared_tasks(self, tasks: super::RedisTaskStore) -> Self {
        self.rescoped(|scoped| scoped.owners = Ownership::Shared(tasks))
    }

    /// The bridge with its [`Scoped`] handler changed by `change` (the SDK handler shared).
    fn rescoped(mut self, change: impl FnOnce(&mut Scoped<H>)) -> Self {
        let mut scoped = (*self.handler).clone();
        change(&mut scoped);
        self.handler = Arc::new(scoped);
        self
    }

    /// The SDK's service params of a request: its headers (as the SDK's routers pass them),
    /// the caller's scope for [`Scoped`], and the request's deadline for
    /// [`Guarded`](super::Guarded), which runs in a task of the handler's own where the
    /// task-local deadline does not reach.
    pub(super) fn service_params(
        &self,
        headers: &HeaderMap,
        deadline: Option<Instant>,
    ) -> ServiceParams {
        let mut params = service_params(headers, deadline);
        let scope = key_of((self.scope)(headers).as_deref());
        params.insert(SCOPE_PARAM.to_owned(), vec![format!("{scope:x}")]);
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

    /// The JSON-RPC endpoint, with the A2A 1.0 method names and the 0.3 ones as aliases.
    /// Configure it further (`max_concurrent`, `max_body_bytes`, …) and mount it with
    /// [`rest_router`](Self::rest_router), or take both from [`router`](Self::router).
    pub fn json_rpc(&self) -> JsonRpc<Self> {
        let rpc = JsonRpc::with_state(self.clone())
            .method(method::SEND_MESSAGE, rpc_send::<H>)
            .stream(method::SEND_STREAMING_MESSAGE, rpc_send_streaming::<H>)
            .method(method::GET_TASK, rpc_get_task::<H>)
            .method(method::LIST_TASKS, rpc_list_tasks::<H>)
            .method(method::CANCEL_TASK, rpc_cancel_task::<H>)
            .stream(method::SUBSCRIBE_TO_TASK, rpc_subscribe::<H>)
            .method(
                method::CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
                rpc_create_push::<H>,
            )
            .method(method::GET_TASK_PUSH_NOTIFICATION_CONFIG, rpc_get_push::<H>)
            .method(
                method::LIST_TASK_PUSH_NOTIFICATION_CONFIGS,
                rpc_list_push::<H>,
            )
            .method(
                method::DELETE_TASK_PUSH_NOTIFICATION_CONFIG,
                rpc_delete_push::<H>,
            )
            .method(method::GET_EXTENDED_AGENT_CARD, rpc_extended_card::<H>);
        let rpc = crate::wire::method::METHODS
            .iter()
            .fold(rpc, |rpc, method| rpc.alias(method.alias, method.name));
        let rpc = match &self.admission {
            Some(admission) => rpc.admission(Arc::clone(admission)),
            None => rpc,
        };
        match self.timeout {
            Some(timeout) => rpc.timeout(timeout),
            None => rpc,
        }
    }

    /// The HTTP+JSON routes and the agent card, with a `google.rpc.Status` body for every
    /// error (an unknown route is a 404 Status), a sanitized 500 for a panic, and
    /// VERSION_NOT_SUPPORTED for an `A2A-Version` other than 1.0.
    pub fn rest_router(&self) -> Router {
        let rest = Router::new()
            .route("/message:send", post(rest_send::<H>))
            .route("/message:stream", post(rest_send_streaming::<H>))
            .route("/tasks", get(rest_list_tasks::<H>))
            .route(
                "/tasks/{id}",
                get(rest_task_get::<H>).post(rest_task_post::<H>),
            )
            .route(
                "/tasks/{task_id}/pushNotificationConfigs",
                post(rest_create_push::<H>).get(rest_list_push::<H>),
            )
            .route(
                "/tasks/{task_id}/pushNotificationConfigs/{id}",
                get(rest_get_push::<H>).delete(rest_delete_push::<H>),
            )
            .route("/extendedAgentCard", get(rest_extended_card::<H>))
            .fallback(rest::not_found)
            .layer(rest::catch_panic())
            .layer(rest::RequireVersionLayer::new(["1.0"]))
            .layer(axum::middleware::from_fn_with_state(
                self.admission.clone(),
                admit_rest,
            ))
            .layer(axum::middleware::from_fn(record_rest));
        let card = Router::new().route(
            "/.well-known/agent-card.json",
            get(card::<H>).fallback(rest::not_found),
        );
        card.merge(rest)
            .layer(rest::StatusBodiesLayer)
            .with_state(self.clone())
    }

    /// JSON-RPC at `POST /`, HTTP+JSON and the card, on one router (the JSON-RPC endpoint, the
    /// REST routes and the gRPC service each record `rpc.server.call.duration` by the A2A
    /// method and outcome).
    pub fn router(&self) -> Router {
        Router::new()
            .merge(self.json_rpc().into_router())
            .merge(self.rest_router())
    }

    /// The end of a unary request's work: the caller's deadline or the bridge's timeout,
    /// whichever comes first. The executor is given it, so that work the bridge stopped
    /// waiting for ends too.
    pub(super) fn end(&self, deadline: Option<Instant>) -> Option<Instant> {
        let own = self
            .timeout
            .and_then(|timeout| Instant::now().checked_add(timeout));
        crate::deadline::earliest(own, deadline)
    }

    /// SendMessage through the dedup, when there is one. The execution is linked to the work
    /// (see [`Link`]): it ends when the work is dropped before the handler answered (the
    /// caller left and no dedup keeps the work for a retry) or at the work's end (the
    /// deadline or the bridge's timeout).
    pub(super) async fn send_message(
        &self,
        headers: &HeaderMap,
        deadline: Option<Instant>,
        request: SendMessageRequest,
    ) -> Result<SendReply, DedupError<RemoteError>> {
        let link = Link::new();
        // A request answered at once (`returnImmediately`) leaves its task running: only the
        // caller's deadline is the execution's, not how long the bridge waits for an answer.
        let immediate = request
            .configuration
            .as_ref()
            .and_then(|configuration| configuration.return_immediately)
            == Some(true);
        let end = if immediate {
            deadline
        } else {
            self.end(deadline)
        };
        let params = self.linked_params(headers, end, &link);
        let handler = Arc::clone(&self.handler);
        let work = move |request: SendMessageRequest| async move {
            let history = request
                .configuration
                .as_ref()
                .and_then(|configuration| configuration.history_length);
            let response = match handler.send_message(&params, request).await {
                Ok(response) => Ok(response),
                Err(error) if fell_behind(&error) => caught_up(&handler, &params, &link, history)
                    .await
                    .map(a2a::SendMessageResponse::Task)
                    .ok_or(error),
                Err(error) => Err(error),
            };
            // Answered: dropping the work from here on ends nothing.
            link.answered();
            let response = response.map_err(|error| public(&error))?;
            SendReply::new(response).map_err(|error| {
                tracing::error!("an SDK reply did not convert to JSON: {error}");
                RemoteError::from_object(StandardError::Internal.to_error_object())
            })
        };
        let Some(dedup) = &self.dedup else {
            return work(request).await.map_err(DedupError::Failed);
        };
        let id = request.message.message_id.clone();
        // The message's protobuf encoding is canonical (its maps are ordered), so a retry
        // that builds its metadata in another order has the same fingerprint.
        let message =
            prost::Message::encode_to_vec(&a2a_pb::pbconv::to_proto_message(&request.message));
        // A message first sent as a stream: its task, not a second run.
        if self.streams.any() {
            let key = self.stream_key(headers, &id);
            match self.streams.seen(&key, fingerprint(&message), false) {
                Seen::New => {}
                Seen::Task(task) => {
                    let params = self.service_params(headers, deadline);
                    let get = GetTaskRequest {
                        id: task,
                        history_length: None,
                        tenant: None,
                    };
                    let task = self
                        .handler
                        .get_task(&params, get)
                        .await
                        .map_err(|error| DedupError::Failed(public(&error)))?;
                    return SendReply::new(a2a::SendMessageResponse::Task(task)).map_err(|_| {
                        DedupError::Failed(RemoteError::from_object(
                            StandardError::Internal.to_error_object(),
                        ))
                    });
                }
                Seen::InProgress => {
                    return Err(DedupError::Refused(Refusal::InProgress {
                        retry_after: Duration::from_secs(1),
                    }));
                }
                Seen::Reused => return Err(DedupError::Refused(Refusal::IdReused)),
            }
        }
        // Boxed: the dedup's future holds the SDK's request and call (~3 KiB), and every
        // future that held it inline would copy it again when moved.
        Box::pin(
            dedup.run_fingerprinted(method::SEND_MESSAGE, headers, &id, &message, move || {
                work(request)
            }),
        )
        .await
    }

    pub(super) async fn send_streaming(
        &self,
        headers: &HeaderMap,
        deadline: Option<Instant>,
        request: SendMessageRequest,
    ) -> Result<Events, RemoteError> {
        // With a dedup, a retried stream is resumed, never run twice (see `Streams`).
        let key = match &self.dedup {
            Some(_) => {
                let message = prost::Message::encode_to_vec(&a2a_pb::pbconv::to_proto_message(
                    &request.message,
                ));
                let key = self.stream_key(headers, &request.message.message_id);
                let refused =
                    |refusal: Refusal| RemoteError::from_object(refusal.to_error_object());
                match self.streams.seen(&key, fingerprint(&message), true) {
                    Seen::New => Some(key),
                    Seen::Task(task) => return self.resume(headers, deadline, task).await,
                    Seen::InProgress => {
                        return Err(refused(Refusal::InProgress {
                            retry_after: Duration::from_secs(1),
                        }));
                    }
                    Seen::Reused => return Err(refused(Refusal::IdReused)),
                }
            }
            None => None,
        };
        // The execution lasts as long as its stream is read, and keeps pace with its reader
        // (see `Link`).
        let link = Link::stream();
        let params = self.linked_params(headers, deadline, &link);
        match self.handler.send_streaming_message(&params, request).await {
            Ok(stream) => {
                let stream = match key {
                    Some(key) => recorded(Arc::clone(&self.streams), key, stream),
                    None => stream,
                };
                Ok(events(stream, Some(link)))
            }
            Err(error) => {
                if let Some(key) = key {
                    self.streams.forget(&key);
                }
                Err(public(&error))
            }
        }
    }

    /// The key of a stream of messageId `id` from the caller of `headers`.
    fn stream_key(&self, headers: &HeaderMap, id: &str) -> String {
        let scope = key_of((self.scope)(headers).as_deref());
        format!("{scope:x}:{id}")
    }

    /// A retried stream of `task`: its subscription, or the task itself once it has ended.
    async fn resume(
        &self,
        headers: &HeaderMap,
        deadline: Option<Instant>,
        task: String,
    ) -> Result<Events, RemoteError> {
        let request = SubscribeToTaskRequest {
            id: task.clone(),
            tenant: None,
        };
        match self.subscribe(headers, deadline, request).await {
            Ok(events) => Ok(events),
            Err(refused) => {
                let params = self.service_params(headers, deadline);
                match ended_task(&self.handler, &params, task, None).await {
                    Some(task) => {
                        let ended = futures_util::stream::iter([Ok(StreamResponse::Task(task))]);
                        Ok(events(ended.boxed(), None))
                    }
                    None => Err(refused),
                }
            }
        }
    }

    pub(super) async fn subscribe(
        &self,
        headers: &HeaderMap,
        deadline: Option<Instant>,
        request: SubscribeToTaskRequest,
    ) -> Result<Events, RemoteError> {
        let params = self.service_params(headers, deadline);
        match self
            .handler
            .subscribe_to_task(&params, request.clone())
            .await
        {
            Ok(stream) => {
                let stream = resubscribing(Arc::clone(&self.handler), params, request, stream);
                Ok(events(stream, None))
            }
            Err(error) => Err(public(&error)),
        }
    }
}

/// A new stream's events, recording its task in `streams` at the first event that names it;
/// a stream that fails before that is forgotten, so that its retry runs it.
fn recorded(streams: Arc<Streams>, key: String, stream: SdkEvents) -> SdkEvents {
    let mut key = Some(key);
    stream
        .map(move |item| {
            if let Some(pending) = &key {
                match &item {
                    Ok(event) => {
                        if let Some(task) = super::scoped::task_of_event(event) {
                            streams.started(pending, task);
                            key = None;
                        }
                    }
                    Err(_) => {
                        streams.forget(pending);
                        key = None;
                    }
                }
            }
            item
        })
        .boxed()
}

/// Task `id` if it has ended (a subscription to it is refused then): the last state a
/// resumed or resubscribed stream ends with.
async fn ended_task<H: RequestHandler>(
    handler: &Scoped<H>,
    params: &ServiceParams,
    id: String,
    tenant: Option<String>,
) -> Option<a2a::Task> {
    let get = GetTaskRequest {
        id,
        history_length: None,
        tenant,
    };
    let task = handler.get_task(params, get).await.ok()?;
    task.status.state.is_terminal().then_some(task)
}

/// How many times in a row, without an event in between, one SubscribeToTask is subscribed
/// again after falling behind.
const MAX_RESUBSCRIBES: u32 = 64;

type SdkEvents = BoxStream<'static, Result<StreamResponse, A2AError>>;

/// A subscription that, when it falls behind the execution (the SDK ends a reader more than
/// its buffer of 32 events behind with a bare INTERNAL), subscribes again: the caller gets
/// the task as it stands (the SDK's first event of a subscription) and the live events after
/// it, so nothing the task became is lost (the events in between are in the task). Each
/// event received resets the count: a subscription that falls behind [`MAX_RESUBSCRIBES`]
/// times in a row without receiving one ends with the INTERNAL.
fn resubscribing<H: RequestHandler>(
    handler: Arc<Scoped<H>>,
    params: ServiceParams,
    request: SubscribeToTaskRequest,
    stream: SdkEvents,
) -> SdkEvents {
    let state = (Some(stream), handler, params, request, 0u32);
    futures_util::stream::unfold(state, |mut state| async move {
        loop {
            let item = state.0.as_mut()?.next().await?;
            match item {
                Err(error) if fell_behind(&error) && state.4 < MAX_RESUBSCRIBES => {
                    state.4 += 1;
                    match state.1.subscribe_to_task(&state.2, state.3.clone()).await {
                        Ok(again) => state.0 = Some(again),
                        // The task ended meanwhile: its last state ends the stream.
                        Err(error) => {
                            state.0 = None;
                            let (id, tenant) = (state.3.id.clone(), state.3.tenant.clone());
                            let item = match ended_task(&state.1, &state.2, id, tenant).await {
                                Some(task) => Ok(StreamResponse::Task(task)),
                                None => Err(error),
                            };
                            return Some((item, state));
                        }
                    }
                }
                item => {
                    // An event is progress: the tries count only falls behind in a row, so a
                    // reader slower than the execution on a busy machine still reaches its end.
                    if item.is_ok() {
                        state.4 = 0;
                    }
                    return Some((item, state));
                }
            }
        }
    })
    .boxed()
}

pub(super) type Events = BoxStream<'static, Result<ProtoJson<StreamResponse>, RemoteError>>;

/// The handler's stream as the bridge sends it: a failure the guard turned into a FAILED
/// status (the work had started) is sent as the stream's error event, which ends it; an
/// error is sent public. The stream holds the execution's `link`, if any: dropped with it.
// One error per stream, at its end: its size does not matter.
#[allow(clippy::result_large_err)]
fn events(
    stream: BoxStream<'static, Result<StreamResponse, A2AError>>,
    link: Option<Link>,
) -> Events {
    stream
        .map(move |item| {
            // Received from the SDK's buffer: the execution may make one more.
            if let Some(link) = &link {
                link.watch().received();
            }
            event(item)
        })
        .boxed()
}

/// One event of the handler's stream as the bridge sends it (see [`events`]).
#[allow(clippy::result_large_err)]
fn event(item: Result<StreamResponse, A2AError>) -> Result<ProtoJson<StreamResponse>, RemoteError> {
    match item {
        Ok(StreamResponse::StatusUpdate(mut update)) => {
            let failure = update
                .metadata
                .as_mut()
                .and_then(|metadata| metadata.remove(FAILURE_KEY));
            match failure {
                Some(object) => Err(RemoteError::from_object(
                    serde_json::from_value::<ErrorObject>(object)
                        .unwrap_or_else(|_| StandardError::Internal.to_error_object()),
                )),
                None => Ok(ProtoJson(StreamResponse::StatusUpdate(update))),
            }
        }
        Ok(event) => Ok(ProtoJson(event)),
        Err(error) => Err(public(&error)),
    }
}

/// Whether the SDK's SendMessage failed with the bare INTERNAL its handler answers when the
/// execution outran the request's subscription ("subscription fell behind active
/// execution": its buffer holds 32 events) or with another error of its own: no code of the
/// executor's, which the guard sends with its ErrorInfo.
fn fell_behind(error: &A2AError) -> bool {
    error.code == a2a::error_code::INTERNAL_ERROR
        && error.details.as_ref().is_none_or(Vec::is_empty)
        && error.message == "Internal error"
}

/// The task a SendMessage ran, read once its execution has ended (within the request's
/// deadline, which ends the execution too), with the request's `historyLength` applied: the
/// answer the SDK gives when it has followed the execution to its end. `None` when the
/// execution never started under the bridge's guard, or the task is gone.
async fn caught_up<H: RequestHandler>(
    handler: &Scoped<H>,
    params: &ServiceParams,
    link: &Link,
    history: Option<i32>,
) -> Option<a2a::Task> {
    let task = link.watch().task()?.to_owned();
    link.watch().ended().await;
    let request = GetTaskRequest {
        id: task,
        history_length: history,
        tenant: None,
    };
    let task = handler.inner.get_task(params, request).await.ok()?;
    handler
        .owners
        .record(super::scoped::scope_of(params), &task.id);
    tracing::debug!("a SendMessage outran its subscription: answered from the task store");
    Some(task)
}

/// A request's headers and deadline as service params; the params only the bridge sets are
/// removed from what the caller sent (see [`Bridge::service_params`]).
fn service_params(headers: &HeaderMap, deadline: Option<Instant>) -> ServiceParams {
    let mut params: ServiceParams = HashMap::with_capacity(headers.keys_len() + 1);
    for (name, value) in headers {
        if let Ok(value) = value.to_str() {
            params
                .entry(name.as_str().to_owned())
                .or_default()
                .push(value.to_owned());
        }
    }
    // Only the endpoint says what the deadline, the link and the scope are, and which span of
    // the trace the executor's calls descend from (this request's, not the caller's).
    params.remove(DEADLINE_PARAM);
    params.remove(LINK_PARAM);
    params.remove(SCOPE_PARAM);
    let trace = crate::trace::current()
        .unwrap_or_else(|| crate::trace::served(headers, &tracing::Span::none()));
    params.insert(TRACEPARENT_HEADER.to_owned(), vec![trace.traceparent()]);
    match trace.tracestate() {
        Some(state) => {
            params.insert(TRACESTATE_HEADER.to_owned(), vec![state.to_owned()]);
        }
        None => {
            params.remove(TRACESTATE_HEADER);
        }
    }
    if let Some(deadline) = deadline {
        let micros = deadline.saturating_duration_since(epoch()).as_micros();
        params.insert(DEADLINE_PARAM.to_owned(), vec![micros.to_string()]);
    }
    params
}

impl<H: RequestHandler> Bridge<H> {
    /// The service params of a request whose execution is tied to `link`.
    fn linked_params(
        &self,
        headers: &HeaderMap,
        deadline: Option<Instant>,
        link: &Link,
    ) -> ServiceParams {
        let mut params = self.service_params(headers, deadline);
        params.insert(LINK_PARAM.to_owned(), vec![link.param()]);
        params
    }
}

// JSON-RPC: one function per method, each the SDK handler's method on the SDK's types.

async fn rpc_send<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    request: SendParams,
    ctx: RequestContext,
) -> Result<SendReply, DedupError<RemoteError>> {
    bridge
        .send_message(&ctx.headers, ctx.deadline, request.0)
        .await
}

async fn rpc_send_streaming<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    request: SendParams,
    ctx: RequestContext,
) -> Result<Events, RemoteError> {
    bridge
        .send_streaming(&ctx.headers, ctx.deadline, request.0)
        .await
}

async fn rpc_subscribe<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    request: ProtoJson<SubscribeToTaskRequest>,
    ctx: RequestContext,
) -> Result<Events, RemoteError> {
    bridge
        .subscribe(&ctx.headers, ctx.deadline, request.0)
        .await
}

/// A JSON-RPC function for a unary method of the SDK's `RequestHandler`.
macro_rules! rpc_unary {
    ($name:ident, $request:ty, $method:ident, $result:ty, $wrap:expr) => {
        async fn $name<H: RequestHandler>(
            State(bridge): State<Bridge<H>>,
            request: ProtoJson<$request>,
            ctx: RequestContext,
        ) -> Result<$result, RemoteError> {
            let params = bridge.service_params(&ctx.headers, ctx.deadline);
            bridge
                .handler
                .$method(&params, request.0)
                .await
                .map($wrap)
                .map_err(|error| public(&error))
        }
    };
}

rpc_unary!(
    rpc_get_task,
    GetTaskRequest,
    get_task,
    ProtoJson<a2a::Task>,
    ProtoJson
);
rpc_unary!(
    rpc_list_tasks,
    ListTasksRequest,
    list_tasks,
    ProtoJson<a2a::ListTasksResponse>,
    ProtoJson
);
rpc_unary!(
    rpc_cancel_task,
    CancelTaskRequest,
    cancel_task,
    ProtoJson<a2a::Task>,
    ProtoJson
);
rpc_unary!(
    rpc_create_push,
    TaskPushNotificationConfig,
    create_push_config,
    ProtoJson<TaskPushNotificationConfig>,
    ProtoJson
);
rpc_unary!(
    rpc_get_push,
    GetTaskPushNotificationConfigRequest,
    get_push_config,
    ProtoJson<TaskPushNotificationConfig>,
    ProtoJson
);
rpc_unary!(
    rpc_list_push,
    ListTaskPushNotificationConfigsRequest,
    list_push_configs,
    ProtoJson<a2a::ListTaskPushNotificationConfigsResponse>,
    ProtoJson
);
rpc_unary!(
    rpc_delete_push,
    DeleteTaskPushNotificationConfigRequest,
    delete_push_config,
    Option<()>,
    |()| None
);
rpc_unary!(
    rpc_extended_card,
    GetExtendedAgentCardRequest,
    get_extended_agent_card,
    ProtoJson<AgentCard>,
    ProtoJson
);

// HTTP+JSON.

impl<H: RequestHandler> Bridge<H> {
    /// A REST reply: `work` run until the caller's deadline or the bridge's timeout,
    /// whichever comes first (typed clients called inside inherit it); the result's A2A JSON,
    /// or the Status of the error.
    async fn rest_reply<T: Serialize>(
        &self,
        deadline: Option<Instant>,
        work: impl Future<Output = Result<T, Box<dyn A2aError + Send + Sync>>>,
    ) -> Response {
        let finished = crate::deadline::run_until(self.end(deadline), work)
            .await
            .unwrap_or_else(|| Err(Box::new(StandardError::DeadlineExceeded)));
        match finished {
            Ok(result) => Json(result).into_response(),
            Err(error) => rest::error_response(&*error),
        }
    }

    /// A unary REST reply: `call` of the SDK handler on the request read from the path and
    /// query (or the body), within the deadline; the result's A2A JSON, or the Status of the
    /// error (a request that does not read is INVALID_PARAMS).
    async fn rest_unary<R, T, Fut>(
        &self,
        headers: &HeaderMap,
        request: Result<R, Box<Response>>,
        call: impl FnOnce(Arc<Scoped<H>>, ServiceParams, R) -> Fut,
    ) -> Response
    where
        T: Serialize,
        Fut: Future<Output = Result<T, A2AError>>,
    {
        let request = match request {
            Ok(request) => request,
            Err(response) => return *response,
        };
        let deadline = crate::deadline::from_headers(headers);
        let params = self.service_params(headers, deadline);
        let handler = Arc::clone(&self.handler);
        let work = async move {
            call(handler, params, request)
                .await
                .map_err(|error| boxed(public(&error)))
        };
        self.rest_reply(deadline, work).await
    }

    /// A streaming REST reply: SSE events of the stream, or the error's Status before it.
    async fn rest_events(
        &self,
        headers: &HeaderMap,
        opened: Result<Events, RemoteError>,
    ) -> Response {
        match opened {
            Ok(stream) => {
                let encoded = crate::server::endpoint::events(stream);
                let encoded =
                    crate::server::endpoint::until(encoded, crate::deadline::from_headers(headers));
                crate::server::sse::encoded_response(Binding::Rest, encoded).await
            }
            Err(error) => rest::error_response(&error),
        }
    }
}

fn boxed<E: A2aError + Send + Sync + 'static>(error: E) -> Box<dyn A2aError + Send + Sync> {
    Box::new(error)
}

async fn rest_send<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    headers: HeaderMap,
    Json(request): Json<SendParams>,
) -> Response {
    let deadline = crate::deadline::from_headers(&headers);
    let work = async {
        bridge
            .send_message(&headers, deadline, request.0)
            .await
            .map_err(boxed)
    };
    bridge.rest_reply(deadline, work).await
}

async fn rest_send_streaming<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    headers: HeaderMap,
    Json(request): Json<SendParams>,
) -> Response {
    let deadline = crate::deadline::from_headers(&headers);
    let opened = bridge.send_streaming(&headers, deadline, request.0).await;
    bridge.rest_events(&headers, opened).await
}

/// Query parameters as the JSON members of a request (numbers and booleans as such).
fn query_json(query: HashMap<String, String>, fields: Map<String, Value>) -> Value {
    let mut members = fields;
    for (key, value) in query {
        let value = match value.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            text => text
                .parse::<i64>()
                .map_or_else(|_| Value::String(value), Value::from),
        };
        members.entry(key).or_insert(value);
    }
    Value::Object(members)
}

/// A request read from the path and the query; a member of the wrong type is INVALID_PARAMS.
fn from_query<T>(
    query: HashMap<String, String>,
    fields: Map<String, Value>,
) -> Result<T, Box<Response>>
where
    ProtoJson<T>: serde::de::DeserializeOwned,
{
    serde_json::from_value::<ProtoJson<T>>(query_json(query, fields))
        .map(|request| request.0)
        .map_err(|_| Box::new(rest::error_response(&StandardError::InvalidParams)))
}

fn fields<const N: usize>(pairs: [(&str, &str); N]) -> Map<String, Value> {
    pairs
        .into_iter()
        .map(|(key, value)| (key.to_owned(), Value::String(value.to_owned())))
        .collect()
}

async fn rest_task_get<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if let Some(id) = id.strip_suffix(":subscribe") {
        let request = match from_query::<SubscribeToTaskRequest>(query, fields([("id", id)])) {
            Ok(request) => request,
            Err(response) => return *response,
        };
        let opened = bridge
            .subscribe(&headers, crate::deadline::from_headers(&headers), request)
            .await;
        return bridge.rest_events(&headers, opened).await;
    }
    let request = from_query::<GetTaskRequest>(query, fields([("id", &id)]));
    bridge
        .rest_unary(&headers, request, |handler, params, request| async move {
            handler.get_task(&params, request).await.map(ProtoJson)
        })
        .await
}

async fn rest_task_post<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    // Read whole (within axum's body limit), not left unread: hyper closes a connection
    // whose request body was not read, and a client that reused it for its next request (the
    // official Python client did, under load) saw it close without a response.
    body: axum::body::Bytes,
) -> Response {
    let Some(id) = id.strip_suffix(":cancel") else {
        return rest::error_response(&StandardError::MethodNotFound);
    };
    // The body is the CancelTaskRequest's other members (its metadata); the path names the
    // task.
    let mut members = if body.iter().all(u8::is_ascii_whitespace) {
        Map::new()
    } else {
        match serde_json::from_slice::<Map<String, Value>>(&body) {
            Ok(members) => members,
            Err(_) => return rest::error_response(&StandardError::InvalidParams),
        }
    };
    members.extend(fields([("id", id)]));
    let request = from_query::<CancelTaskRequest>(HashMap::new(), members);
    bridge
        .rest_unary(&headers, request, |handler, params, request| async move {
            handler.cancel_task(&params, request).await.map(ProtoJson)
        })
        .await
}

async fn rest_list_tasks<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let request = from_query::<ListTasksRequest>(query, Map::new());
    bridge
        .rest_unary(&headers, request, |handler, params, request| async move {
            handler.list_tasks(&params, request).await.map(ProtoJson)
        })
        .await
}

async fn rest_create_push<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    Path(task_id): Path<String>,
    headers: HeaderMap,
    Json(body): Json<Map<String, Value>>,
) -> Response {
    let mut body = body;
    body.insert("taskId".into(), Value::String(task_id));
    let request = from_query::<TaskPushNotificationConfig>(HashMap::new(), body);
    bridge
        .rest_unary(&headers, request, |handler, params, request| async move {
            handler
                .create_push_config(&params, request)
                .await
                .map(ProtoJson)
        })
        .await
}

async fn rest_list_push<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    Path(task_id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let request =
        from_query::<ListTaskPushNotificationConfigsRequest>(query, fields([("taskId", &task_id)]));
    bridge
        .rest_unary(&headers, request, |handler, params, request| async move {
            handler
                .list_push_configs(&params, request)
                .await
                .map(ProtoJson)
        })
        .await
}

async fn rest_get_push<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    Path((task_id, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let request = from_query::<GetTaskPushNotificationConfigRequest>(
        HashMap::new(),
        fields([("taskId", &task_id), ("id", &id)]),
    );
    bridge
        .rest_unary(&headers, request, |handler, params, request| async move {
            handler
                .get_push_config(&params, request)
                .await
                .map(ProtoJson)
        })
        .await
}

async fn rest_delete_push<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    Path((task_id, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let request = from_query::<DeleteTaskPushNotificationConfigRequest>(
        HashMap::new(),
        fields([("taskId", &task_id), ("id", &id)]),
    );
    bridge
        .rest_unary(&headers, request, |handler, params, request| async move {
            handler
                .delete_push_config(&params, request)
                .await
                .map(|()| Map::new())
        })
        .await
}

async fn rest_extended_card<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    headers: HeaderMap,
) -> Response {
    let request = Ok(GetExtendedAgentCardRequest { tenant: None });
    bridge
        .rest_unary(&headers, request, |handler, params, request| async move {
            handler
                .get_extended_agent_card(&params, request)
                .await
                .map(ProtoJson)
        })
        .await
}

async fn card<H: RequestHandler>(State(bridge): State<Bridge<H>>) -> Response {
    match &bridge.card {
        Some(card) => Json(&**card).into_response(),
        None => rest::not_found().await,
    }
}

/// Admits a REST request under the bridge's limit, or refuses it as the JSON-RPC endpoint
/// does (AGENT_UNAVAILABLE, its status body and `Retry-After`).
async fn admit_rest(
    axum::extract::State(admission): axum::extract::State<Option<Arc<Admission>>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let Some(admission) = admission else {
        return next.run(request).await;
    };
    match admission.admit_owned() {
        Ok(mut slot) => {
            let response = next.run(request).await;
            // A stream is answered once it is open, as over JSON-RPC.
            slot.answered();
            response
        }
        Err(refusal) => rest::error_response(&refusal),
    }
}

/// Runs a REST request in its trace, and records it in `rpc.server.call.duration` under its
/// A2A method (`other` for a route that is none) and outcome (a status under 400 is
/// answered).
async fn record_rest(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use tracing::Instrument;
    let method =
        crate::wire::method::method_of_route(request.method().as_str(), request.uri().path());
    let began = std::time::Instant::now();
    // The route runs in the caller's trace (or one of its own), as a JSON-RPC handler does.
    let span = crate::observe::server_span(crate::observe::System::Http, method.unwrap_or("other"));
    let trace = crate::trace::served(request.headers(), &span);
    let response = crate::trace::scope(trace, next.run(request))
        .instrument(span.clone())
        .await;
    let status = response.status().as_u16();
    let failed = match response.extensions().get::<crate::observe::FailedWith>() {
        Some(failed) => Some(failed.parts()),
        // A failure this crate did not write (none is expected: the routes answer with
        // status bodies).
        None if status >= 400 => Some((i32::from(status), "OTHER")),
        None => None,
    };
    crate::observe::a2a_request_served(
        crate::observe::System::Http,
        method,
        &span,
        failed,
        began.elapsed(),
    );
    response
}
