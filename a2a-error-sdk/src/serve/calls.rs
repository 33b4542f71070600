//! The SDK handler's methods as every binding calls them: SendMessage through the dedup and
//! linked to its execution, streams recorded and resumed after a retry, SubscribeToTask.

use std::sync::Arc;
use std::time::Duration;

use a2a::{A2AError, GetTaskRequest, SendMessageRequest, StreamResponse, SubscribeToTaskRequest};
use a2a_server::{RequestHandler, ServiceParams};
use axum::http::HeaderMap;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use tokio::time::Instant;

use crate::executor::FAILURE_KEY;
use crate::link::Link;
use crate::owners::key_of;
use crate::protojson::{ProtoJson, SendReply};
use crate::scoped::Scoped;
use crate::streams::{EarlierStream, Streams};
use a2a_error_runtime::sdk_errors::public;
use a2a_error_runtime::server::DedupError;
use a2a_error_runtime::server::Refusal;
use a2a_error_runtime::wire::error::A2aError;
use a2a_error_runtime::wire::method;
use a2a_error_runtime::wire::object::ErrorObject;
use a2a_error_runtime::wire::remote::RemoteError;
use a2a_error_runtime::wire::standard::StandardError;

use super::Bridge;

impl<H: RequestHandler> Bridge<H> {
    /// SendMessage through the dedup, when there is one. The execution is linked to the work
    /// (see [`Link`]): it ends when the work is dropped before the handler answered (the
    /// caller left and no dedup keeps the work for a retry) or at the work's end (the
    /// deadline or the bridge's timeout).
    pub(crate) async fn send_message(
        &self,
        headers: &HeaderMap,
        deadline: Option<Instant>,
        request: Box<SendMessageRequest>,
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
        // What makes a retry the same request; the reply is made as its record (any, without
        // a dedup).
        let fingerprint = match &self.dedup {
            Some(_) => crate::fingerprint::of_message(&request.message),
            None => 0,
        };
        let work = move |request: Box<SendMessageRequest>| async move {
            let history = request
                .configuration
                .as_ref()
                .and_then(|configuration| configuration.history_length);
            let response = match handler.send_message(&params, *request).await {
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
            SendReply::new(response, fingerprint).map_err(|error| {
                tracing::error!("an SDK reply did not convert to JSON: {error}");
                RemoteError::from_object(StandardError::Internal.to_error_object())
            })
        };
        let Some(dedup) = &self.dedup else {
            // Boxed, as below: inline, the work would make every future that holds this one
            // (the endpoint's, per request) larger by its size, and copied at every move.
            return Box::pin(work(request)).await.map_err(DedupError::Failed);
        };
        let id = request.message.message_id.clone();
        // A message first sent as a stream: its task, not a second run.
        if self.streams.any() {
            let key = self.stream_key(headers, &id);
            match self.streams.seen(&key, fingerprint, false) {
                EarlierStream::New => {}
                EarlierStream::Task(task) => {
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
                    return SendReply::new(a2a::SendMessageResponse::Task(task), fingerprint)
                        .map_err(|_| {
                            DedupError::Failed(RemoteError::from_object(
                                StandardError::Internal.to_error_object(),
                            ))
                        });
                }
                EarlierStream::InProgress => {
                    return Err(DedupError::Refused(Refusal::InProgress {
                        retry_after: Duration::from_secs(1),
                    }));
                }
                EarlierStream::Reused => return Err(DedupError::Refused(Refusal::IdReused)),
            }
        }
        // Boxed: the dedup's future holds the SDK's request and call (~3 KiB), and every
        // future that held it inline would copy it again when moved.
        Box::pin(dedup.run_fingerprinted(
            method::SEND_MESSAGE,
            headers,
            &id,
            fingerprint,
            move || work(request),
        ))
        .await
    }

    pub(crate) async fn send_streaming(
        &self,
        headers: &HeaderMap,
        deadline: Option<Instant>,
        request: SendMessageRequest,
    ) -> Result<Events, RemoteError> {
        // With a dedup, a retried stream is resumed, never run twice (see `Streams`).
        let key = match &self.dedup {
            Some(_) => {
                let fingerprint = crate::fingerprint::of_message(&request.message);
                let key = self.stream_key(headers, &request.message.message_id);
                let refused =
                    |refusal: Refusal| RemoteError::from_object(refusal.to_error_object());
                match self.streams.seen(&key, fingerprint, true) {
                    EarlierStream::New => Some(key),
                    EarlierStream::Task(task) => return self.resume(headers, deadline, task).await,
                    EarlierStream::InProgress => {
                        return Err(refused(Refusal::InProgress {
                            retry_after: Duration::from_secs(1),
                        }));
                    }
                    EarlierStream::Reused => return Err(refused(Refusal::IdReused)),
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

    pub(crate) async fn subscribe(
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
                        if let Some(task) = crate::scoped::task_of_event(event) {
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

pub(crate) type Events = BoxStream<'static, Result<ProtoJson<StreamResponse>, RemoteError>>;

/// The handler's stream as the bridge sends it: a failure the guard turned into a FAILED
/// status (the work had started) is sent as the stream's error event, which ends it; an
/// error is sent public. A stream whose execution asked for failures as FAILED status updates
/// (a model's answer, `forward_stream`) gets an error after its first event (the SDK's task
/// store refusing the grown task, say) as that FAILED status update with its cause, never as
/// an error event in the middle of its stream. The tokens of an answer forwarded to this
/// stream come through its `link`, each between the handler's events it came between, and
/// the joined appends that stand for them in the task are not sent again (see
/// `sdk::appends`). The stream holds the execution's `link`, if any: dropped with it.
fn events(
    stream: BoxStream<'static, Result<StreamResponse, A2AError>>,
    link: Option<Link>,
) -> Events {
    Relayed {
        stream,
        link,
        received: 0,
        held: None,
        sent: None,
    }
    .boxed()
}

/// [`events`]' stream.
struct Relayed {
    stream: BoxStream<'static, Result<StreamResponse, A2AError>>,
    link: Option<Link>,
    /// The handler's items received so far (sent, or dropped as tokens sent already).
    received: u64,
    /// The handler's next item, sent after the tokens that came before it.
    held: Option<Result<StreamResponse, A2AError>>,
    /// The task and context of the events sent so far: `None` until the first.
    sent: Option<(String, String)>,
}

impl futures_util::Stream for Relayed {
    type Item = Result<ProtoJson<StreamResponse>, RemoteError>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let this = self.get_mut();
        loop {
            if let Some(link) = &this.link
                && let Some(token) = link.watch().next_token(this.received, cx.waker())
            {
                // Sent: the execution may make one more.
                link.watch().received();
                return Poll::Ready(Some(Ok(ProtoJson(token))));
            }
            if let Some(item) = this.held.take() {
                this.received += 1;
                return Poll::Ready(Some(this.send(item)));
            }
            match this.stream.poll_next_unpin(cx) {
                Poll::Ready(Some(mut item)) => {
                    let tokens_sent = match &mut item {
                        Ok(event) => crate::appends::unmark(event),
                        Err(_) => false,
                    };
                    if tokens_sent && this.link.is_some() {
                        // Its tokens were this caller's already; the guard took no credit.
                        this.received += 1;
                        continue;
                    }
                    // Received from the SDK's buffer: the execution may make one more.
                    if let Some(link) = &this.link {
                        link.watch().received();
                    }
                    this.held = Some(item);
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl Relayed {
    /// The handler's `item` as the caller is sent it.
    #[allow(clippy::result_large_err)]
    fn send(
        &mut self,
        item: Result<StreamResponse, A2AError>,
    ) -> Result<ProtoJson<StreamResponse>, RemoteError> {
        match &item {
            Ok(event) if self.sent.is_none() => self.sent = task_and_context(event),
            Err(error) => {
                if let (Some((task, context)), Some(link)) = (&self.sent, &self.link)
                    && link.watch().as_status()
                {
                    let public = public(error);
                    a2a_error_runtime::observe::stream_failed(public.code(), public.reason());
                    return Ok(ProtoJson(failed_update(&public, task, context)));
                }
            }
            Ok(_) => {}
        }
        event(item)
    }
}

/// The task and context an event belongs to (none for a message).
fn task_and_context(event: &StreamResponse) -> Option<(String, String)> {
    match event {
        StreamResponse::Task(task) => Some((task.id.clone(), task.context_id.clone())),
        StreamResponse::StatusUpdate(update) => {
            Some((update.task_id.clone(), update.context_id.clone()))
        }
        StreamResponse::ArtifactUpdate(update) => {
            Some((update.task_id.clone(), update.context_id.clone()))
        }
        StreamResponse::Message(_) => None,
    }
}

/// The final FAILED status update of a stream that failed after its first event with
/// `public` (the error as its caller is told it) as its cause, as the guard writes one.
fn failed_update(public: &RemoteError, task: &str, context: &str) -> StreamResponse {
    StreamResponse::StatusUpdate(a2a::TaskStatusUpdateEvent {
        task_id: task.to_owned(),
        context_id: context.to_owned(),
        status: crate::failed::failed_status_of(public, task, context),
        metadata: None,
    })
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
                None => {
                    if update.status.state == a2a::TaskState::Failed {
                        let (code, reason) = cause_of(&update.status);
                        a2a_error_runtime::observe::stream_failed(code, reason);
                    }
                    Ok(ProtoJson(StreamResponse::StatusUpdate(update)))
                }
            }
        }
        Ok(event) => Ok(ProtoJson(event)),
        Err(error) => Err(public(&error)),
    }
}

/// The code and reason a FAILED status names as its cause (`metadata.error` of its message,
/// as every part of the bridge writes it), else INTERNAL_ERROR's.
fn cause_of(status: &a2a::TaskStatus) -> (i32, &str) {
    let error = status
        .message
        .as_ref()
        .and_then(|message| message.metadata.as_ref())
        .and_then(|metadata| metadata.get("error"));
    let code = error
        .and_then(|error| error.get("code"))
        .and_then(serde_json::Value::as_i64)
        .and_then(|code| i32::try_from(code).ok());
    let reason = error
        .and_then(|error| error.get("reason"))
        .and_then(serde_json::Value::as_str);
    match (code, reason) {
        (Some(code), Some(reason)) => (code, reason),
        _ => (
            StandardError::Internal.code(),
            StandardError::Internal.reason(),
        ),
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
        .record(crate::scoped::scope_of(params), &task.id);
    tracing::debug!("a SendMessage outran its subscription: answered from the task store");
    Some(task)
}
