//! [`Guarded`]: an SDK `AgentExecutor` with what the SDK's `DefaultRequestHandler` leaves out.
//!
//! The handler runs an executor's stream in a task of its own: a panic there kills the task
//! and the caller waits forever; an error leaves the task SUBMITTED (or WORKING) forever; and
//! the task-local deadline of the request does not reach it. The guard polls the executor's
//! stream so that none of that happens.

use crate::trace::{TRACEPARENT_HEADER, TRACESTATE_HEADER, TraceContext};
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use a2a::{
    A2AError, Message, Part, Role, StreamResponse, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use a2a_server::{AgentExecutor, ExecutorContext, TaskStore};
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt};
use tokio::time::Instant;

use super::failed::{failed_status_of, failed_task_status};
use super::link::{self, LINK_PARAM, Watch};
use crate::wire::error::A2aError;
use crate::wire::standard::StandardError;

/// The key of the event metadata in which a failure after the first event carries its
/// public error object, from the guard to the bridge's stream encoder (which sends it as the
/// stream's error event and removes the key).
pub(crate) const FAILURE_KEY: &str = "a2a-error.failure";

/// The service param that carries the request's deadline from the bridge's endpoint to the
/// guard, which runs in the handler's own task. The endpoint sets it on every request (a
/// caller's header of the same name is replaced), as microseconds after [`epoch`].
pub(crate) const DEADLINE_PARAM: &str = "a2a-error-deadline-us";

tokio::task_local! {
    /// Set while the guard polls an execution's stream: an execution that sets the flag (as
    /// [`forward_stream`](super::forward_stream) does) ends a failure after its first event
    /// with a FAILED status update for its caller, not the stream's error event.
    static FAILURES_AS_STATUS: Arc<AtomicBool>;
}

/// Tells the guard polling this execution that a failure after its first event ends the
/// caller's stream with a FAILED status update (A2A's task model), not an error event.
pub(crate) fn fail_as_status() {
    let _ = FAILURES_AS_STATUS.try_with(|flag| flag.store(true, Ordering::Relaxed));
}

/// The instant deadlines in [`DEADLINE_PARAM`] count from (this process's own clock).
pub(crate) fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// An SDK `AgentExecutor` with this crate's guarantees. Hand it to `DefaultRequestHandler`
/// in place of your executor, with the handler's task store:
///
/// - a panic in `execute` or while its stream is polled is INTERNAL_ERROR (-32603) with the
///   code table's public message, at once; the panic text goes to the log;
/// - an error before the first event is the request's error (an ordinary error response), and
///   the task ends FAILED in the store;
/// - an error after it (the work had started) ends the task FAILED: a `TASK_STATE_FAILED`
///   status whose message is the public message and whose metadata names the code, reason
///   and domain ([`failed_status`](crate::server::failed_status)). SendMessage answers that
///   task as its result; a stream sends the error as its error event, and ends (one that
///   forwards a model's answer, [`forward_stream`](super::forward_stream), ends with that
///   FAILED status update instead, A2A's task model, which is what its caller reads);
/// - the caller's `A2A-Deadline-Ms` (served by the bridge's endpoint) ends the execution with
///   DEADLINE_EXCEEDED, and the typed clients the executor calls inherit it; so does the
///   bridge's own timeout for SendMessage;
/// - an execution whose request is gone (a caller that hung up before a SendMessage was
///   answered with no dedup keeping the work, or stopped reading its stream) ends at once,
///   its task CANCELED: the executor's stream is dropped, and its work with it.
///
/// An `A2AError` made from your derived enum (`?`) keeps its reason, domain, data fields and
/// RetryInfo; one made from text of your own (`A2AError::internal(e.to_string())`) is sent
/// with the code's public message only.
pub struct Guarded<X> {
    inner: Arc<X>,
    store: Arc<dyn TaskStore>,
    /// The shared store whose leases the executions hold.
    #[cfg(feature = "redis")]
    leases: Option<super::RedisTaskStore>,
    /// Where the tasks' events go as push notifications, when the bridge delivers them.
    push: Option<super::PushDelivery>,
}

impl<X> Guarded<X> {
    /// Guards `executor`, whose tasks `store` keeps (the store the handler is given: a store
    /// that shares its data between clones, or an `Arc` around yours).
    pub fn new(executor: X, store: Arc<dyn TaskStore>) -> Self {
        Guarded {
            inner: Arc::new(executor),
            store,
            #[cfg(feature = "redis")]
            leases: None,
            push: None,
        }
    }

    /// Delivers the events of the tasks that have push configs with `push` (give the same
    /// to [`Bridge::push`](super::Bridge::push)): every event the executor sends (its status
    /// and artifact updates), its cancellation's, and the FAILED or CANCELED status the guard
    /// ends a task with. A SendMessage's own push config is saved before its first event.
    pub fn push(mut self, push: super::PushDelivery) -> Self {
        self.push = Some(push);
        self
    }

    /// Guards `executor`, whose tasks the shared `store` keeps, holding each task's lease
    /// while its execution runs (see [`RedisTaskStore`](super::RedisTaskStore)): a task
    /// another replica is running is refused (INVALID_REQUEST, `TASK_RUNNING_ELSEWHERE`);
    /// an execution whose lease is lost (Redis unreachable for a whole lease, the task ended
    /// elsewhere, or the store's stall limit) is stopped, its executor's stream dropped, and
    /// its task ends FAILED with `TASK_ABANDONED` by the store's reaper.
    #[cfg(feature = "redis")]
    pub fn leased(executor: X, store: super::RedisTaskStore) -> Self {
        Guarded {
            inner: Arc::new(executor),
            store: Arc::new(store.clone()),
            leases: Some(store),
            push: None,
        }
    }
}

impl<X: AgentExecutor> AgentExecutor for Guarded<X> {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let run = Run {
            task_id: ctx.task_id.clone(),
            context_id: ctx.context_id.clone(),
            deadline: deadline_of(&ctx),
            trace: trace_of(&ctx),
            link: ctx
                .service_params
                .get(LINK_PARAM)
                .and_then(|values| values.first())
                .and_then(|param| link::find(param)),
            store: Arc::clone(&self.store),
            as_status: Arc::default(),
            push: self.push.clone(),
        };
        let config = self.push.as_ref().and_then(|_| push_config_of(&ctx));
        let task_of_run = run.task_id.clone();
        if let Some(link) = &run.link {
            link.started(&run.task_id);
        }
        let inner = Arc::clone(&self.inner);
        // Inside the request's trace: an executor may fail before its stream is polled.
        #[cfg(feature = "redis")]
        let task = run.task_id.clone();
        let events = crate::trace::sync_scope(run.trace.clone(), || {
            std::panic::catch_unwind(AssertUnwindSafe(|| inner.execute(ctx)))
        });
        let push = run.push.clone();
        let events = run.guard(events, config);
        let events = match push {
            Some(push) => notified(events, push, task_of_run.clone()),
            None => events,
        };
        #[cfg(feature = "redis")]
        if let Some(store) = &self.leases {
            return super::shared::leased(store.clone(), task, events);
        }
        events
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let inner = Arc::clone(&self.inner);
        let task = ctx.task_id.clone();
        let events = match std::panic::catch_unwind(AssertUnwindSafe(|| inner.cancel(ctx))) {
            Ok(events) => AssertUnwindSafe(events)
                .catch_unwind()
                .map(|item| item.unwrap_or_else(|panic| Err(panicked(&*panic))))
                .boxed(),
            Err(panic) => futures_util::stream::iter([Err(panicked(&*panic))]).boxed(),
        };
        // The cancellation's events are the task's too (its CANCELED status).
        match self.push.clone() {
            Some(push) => notified(events, push, task),
            None => events,
        }
    }
}

pin_project_lite::pin_project! {
    /// `future` polled inside its run's deadline, trace and failure mode: one layer whose every
    /// poll enters the three, rather than a task-local future for each (each its own poll, and
    /// its own copy of the event's future when moved).
    struct InRun<F> {
        run: Arc<Run>,
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for InRun<F> {
    type Output = F::Output;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        let this = self.project();
        let run = &**this.run;
        let future = this.future;
        crate::trace::sync_scope(run.trace.clone(), || {
            FAILURES_AS_STATUS.sync_scope(Arc::clone(&run.as_status), || {
                crate::deadline::sync_scope(run.deadline, || future.poll(cx))
            })
        })
    }
}

/// What the guard knows of one execution.
struct Run {
    task_id: String,
    context_id: String,
    deadline: Option<Instant>,
    /// The request's trace, which the calls the executor makes send on.
    trace: TraceContext,
    /// The request's link (see `Link`), when the bridge made one.
    link: Option<Arc<Watch>>,
    store: Arc<dyn TaskStore>,
    /// Whether the execution asked for failures as FAILED status updates ([`fail_as_status`]).
    as_status: Arc<AtomicBool>,
    push: Option<super::PushDelivery>,
}

/// Where the guarded stream stands.
struct Polling {
    events: Option<BoxStream<'static, Result<StreamResponse, A2AError>>>,
    started: bool,
    run: Arc<Run>,
    /// The SendMessage's push config, saved before the first event.
    config: Option<a2a::TaskPushNotificationConfig>,
}

impl Drop for Polling {
    /// The handler drops the stream once it has written the last event: the execution ended.
    fn drop(&mut self) {
        if let Some(link) = &self.run.link {
            link.end();
        }
    }
}

impl Run {
    fn guard(
        self,
        events: std::thread::Result<BoxStream<'static, Result<StreamResponse, A2AError>>>,
        config: Option<a2a::TaskPushNotificationConfig>,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let run = Arc::new(self);
        let events = match events {
            Ok(events) => events,
            Err(panic) => futures_util::stream::iter([Err(panicked(&*panic))]).boxed(),
        };
        let state = Polling {
            events: Some(events),
            started: false,
            run,
            config,
        };
        futures_util::stream::unfold(state, |mut state| async move {
            let mut events = state.events.take()?;
            if let (Some(mut config), Some(push)) = (state.config.take(), &state.run.push) {
                config.task_id = state.run.task_id.clone();
                // The rare paths' futures boxed (here and below): inline, they would make
                // the future made for every event ~3.4 KB, copied whole each time.
                if let Err(error) = Box::pin(push.save(config)).await {
                    Box::pin(state.run.mark_failed(&error)).await;
                    return Some((Err(error), state));
                }
            }
            let (link, polled) = (state.run.link.clone(), &mut events);
            let next = async move {
                // A stream's execution waits for its reader (see `Link`).
                if let Some(link) = link {
                    link.credit().await;
                }
                AssertUnwindSafe(polled.next()).catch_unwind().await
            };
            // The request's deadline and trace reach the calls made inside the executor (the
            // SDK runs it in a task of its own).
            let next = InRun {
                run: Arc::clone(&state.run),
                future: next,
            };
            let deadline = state.run.deadline;
            let next = async move {
                match deadline {
                    // Its timer is made only when the event is not ready at once.
                    Some(deadline) => match crate::deadline::until(deadline, next).await {
                        Some(next) => next,
                        None => Ok(Some(Err(crate::sdk::to_sdk(
                            &StandardError::DeadlineExceeded,
                        )))),
                    },
                    None => next.await,
                }
            };
            let next = match state.run.link.clone() {
                Some(link) => {
                    let gone = std::pin::pin!(link.gone());
                    match futures_util::future::select(std::pin::pin!(next), gone).await {
                        futures_util::future::Either::Left((next, _)) => next,
                        // Nothing is polled after this: the executor's stream is dropped.
                        futures_util::future::Either::Right(_) => {
                            let canceled = state.run.canceled_event();
                            return Some((Ok(canceled), state));
                        }
                    }
                }
                None => next.await,
            };
            let item = match next {
                Ok(item) => item?,
                Err(panic) => Err(panicked(&*panic)),
            };
            match item {
                Ok(event) => {
                    state.started = true;
                    state.events = Some(events);
                    Some((Ok(event), state))
                }
                // Nothing is polled after an error (or a panic).
                Err(error) if state.started => {
                    let failed = state.run.failed_event(&error);
                    Some((Ok(failed), state))
                }
                Err(error) => {
                    Box::pin(state.run.mark_failed(&error)).await;
                    Some((Err(error), state))
                }
            }
        })
        .boxed()
    }

    /// The terminal event of a task whose work had started when it failed: marked for the
    /// bridge to send as the stream's error event, unless the execution asked for a FAILED
    /// status update ([`fail_as_status`]).
    fn failed_event(&self, error: &A2AError) -> StreamResponse {
        let public = crate::sdk::error::public(error);
        let status = failed_status_of(&public, &self.task_id, &self.context_id);
        let metadata = (!self.as_status.load(Ordering::Relaxed)).then(|| {
            let object = serde_json::to_value(public.to_error_object()).unwrap_or_default();
            HashMap::from([(FAILURE_KEY.to_owned(), object)])
        });
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            status,
            metadata,
        })
    }

    /// The terminal event of a task whose request went away: CANCELED, with a message that
    /// says why.
    fn canceled_event(&self) -> StreamResponse {
        let mut message = Message::new(
            Role::Agent,
            vec![Part::text("the request that started this task went away")],
        );
        message.task_id = Some(self.task_id.clone());
        message.context_id = Some(self.context_id.clone());
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            status: TaskStatus {
                state: TaskState::Canceled,
                message: Some(message),
                timestamp: None,
            },
            metadata: None,
        })
    }

    /// Ends the task FAILED in the store: the handler publishes the error to the caller but
    /// writes nothing, which would leave the task SUBMITTED forever.
    async fn mark_failed(&self, error: &A2AError) {
        let public = crate::sdk::error::public(error);
        let task = match self.store.get(&self.task_id).await {
            Ok(Some(task)) => task,
            Ok(None) => return,
            Err(store) => {
                tracing::warn!(code = store.code, "could not read a failed task to end it");
                return;
            }
        };
        if task.status.state.is_terminal() {
            return;
        }
        let mut task = task;
        task.status = failed_task_status(&public);
        let status = task.status.clone();
        if let Err(store) = self.store.update(task).await {
            tracing::warn!(code = store.code, "could not end a failed task");
            return;
        }
        self.notify(&StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            status,
            metadata: None,
        }))
        .await;
    }

    /// Queues `event` as a push notification, when the task has push configs.
    async fn notify(&self, event: &StreamResponse) {
        if let Some(push) = &self.push {
            push.notify(&self.task_id, &as_notified(event)).await;
        }
    }
}

/// `event` as a push notification carries it: without the guard's marker for the bridge's
/// stream encoder, and stamped as the SDK's handler stamps what it stores.
fn as_notified(event: &StreamResponse) -> StreamResponse {
    let mut event = event.clone();
    if let StreamResponse::StatusUpdate(update) = &mut event {
        if let Some(metadata) = &mut update.metadata {
            metadata.remove(FAILURE_KEY);
            if metadata.is_empty() {
                update.metadata = None;
            }
        }
        if update.status.timestamp.is_none() {
            update.status.timestamp = Some(chrono::Utc::now());
        }
    }
    event
}

/// `events` of `task`, each queued as a push notification once the SDK's handler has taken
/// it (stored it, and sent it to the task's readers): when the next one is asked for, or when
/// the handler drops the stream after the last. A receiver that reads the task on a
/// notification so finds it as the notification says.
fn notified(
    events: BoxStream<'static, Result<StreamResponse, A2AError>>,
    push: super::PushDelivery,
    task: String,
) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
    /// An event the handler has been given, with the task's configs when it was made.
    type Taken = (StreamResponse, Vec<a2a::TaskPushNotificationConfig>);
    struct Notifying {
        events: BoxStream<'static, Result<StreamResponse, A2AError>>,
        taken: Option<Taken>,
        push: super::PushDelivery,
        task: String,
    }
    impl Drop for Notifying {
        fn drop(&mut self) {
            let (Some((event, configs)), Ok(runtime)) =
                (self.taken.take(), tokio::runtime::Handle::try_current())
            else {
                return;
            };
            let (push, task) = (self.push.clone(), std::mem::take(&mut self.task));
            runtime.spawn(async move { push.queue(&task, &event, configs).await });
        }
    }
    let state = Notifying {
        events,
        taken: None,
        push,
        task,
    };
    futures_util::stream::unfold(state, |mut state| async move {
        if let Some((event, configs)) = state.taken.take() {
            // Boxed: only a task with push configs queues, and the future made for every
            // event would hold this one's room.
            Box::pin(state.push.queue(&state.task, &event, configs)).await;
        }
        let item = state.events.next().await?;
        // A task with no configs (most) costs one look at its configs, no copy of its event.
        if let Ok(event) = &item {
            let configs = state.push.configs_of(&state.task).await;
            if !configs.is_empty() {
                state.taken = Some((as_notified(event), configs));
            }
        }
        Some((item, state))
    })
    .boxed()
}

/// The push config a SendMessage carried, which the bridge checked and put in the params.
fn push_config_of(ctx: &ExecutorContext) -> Option<a2a::TaskPushNotificationConfig> {
    let json = ctx.service_params.get(super::scoped::PUSH_PARAM)?.first()?;
    serde_json::from_str(json).ok()
}

/// The deadline the bridge's endpoint put in the service params, if any.
fn deadline_of(ctx: &ExecutorContext) -> Option<Instant> {
    let micros: u64 = ctx
        .service_params
        .get(DEADLINE_PARAM)?
        .first()?
        .parse()
        .ok()?;
    epoch().checked_add(std::time::Duration::from_micros(micros))
}

/// The trace the bridge's endpoint put in the service params (the request's own span), else
/// a new one (an executor run by something other than the bridge).
fn trace_of(ctx: &ExecutorContext) -> TraceContext {
    let param = |name: &str| {
        ctx.service_params
            .get(name)
            .and_then(|values| values.first())
            .map(String::as_bytes)
    };
    param(TRACEPARENT_HEADER)
        .and_then(|parent| TraceContext::parse(parent, param(TRACESTATE_HEADER)))
        .unwrap_or_else(TraceContext::root)
}

/// A panic as the error the caller gets: -32603 with the public message only.
fn panicked(panic: &(dyn std::any::Any + Send)) -> A2AError {
    crate::sdk::to_sdk(&crate::server::log::caught("an agent executor", panic))
}
