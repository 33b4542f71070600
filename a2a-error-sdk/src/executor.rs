//! [`Guarded`]: an SDK `AgentExecutor` with what the SDK's `DefaultRequestHandler` leaves out.
//!
//! The handler runs an executor's stream in a task of its own: a panic there kills the task
//! and the caller waits forever; an error leaves the task SUBMITTED (or WORKING) forever; and
//! the task-local deadline of the request does not reach it. The guard polls the executor's
//! stream so that none of that happens.

use a2a_error_runtime::inherited::Inherited;
use a2a_error_runtime::trace::{TRACEPARENT_HEADER, TRACESTATE_HEADER, TraceContext};
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use a2a::{
    A2AError, Message, Part, Role, StreamResponse, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use a2a_server::{AgentExecutor, ExecutorContext, TaskStore};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;

use super::appends::Appends;
use super::failed::{failed_status_of, failed_task_status};
use super::link::{self, Watch};
use a2a_error_runtime::wire::error::A2aError;
use a2a_error_runtime::wire::standard::StandardError;

/// The key of the event metadata in which a failure after the first event carries its
/// public error object, from the guard to the bridge's stream encoder (which sends it as the
/// stream's error event and removes the key).
pub(crate) const FAILURE_KEY: &str = "a2a-error.failure";

thread_local! {
    /// `Some` while the guard polls an execution's stream (on this thread, the poll being
    /// synchronous), `Some(true)` once the execution asked: an execution that sets the flag
    /// (as [`forward_stream`](crate::forward::forward_stream) does) ends a failure after its first
    /// event with a FAILED status update for its caller, not the stream's error event.
    static FAILURES_AS_STATUS: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
}

/// Tells the guard polling this execution that a failure after its first event ends the
/// caller's stream with a FAILED status update (A2A's task model), not an error event.
pub(crate) fn fail_as_status() {
    FAILURES_AS_STATUS.with(|flag| {
        if flag.get().is_some() {
            flag.set(Some(true));
        }
    });
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
///   and domain ([`failed_status`](a2a_error_runtime::server::failed_status)). SendMessage answers that
///   task as its result; a stream sends the error as its error event, and ends (one that
///   forwards a model's answer, [`forward_stream`](crate::forward::forward_stream), ends with that
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
    /// The store whose leases the executions hold.
    leases: Option<Arc<dyn crate::lease::TaskLeases>>,
    /// Where the tasks' events go as push notifications, when the bridge delivers them.
    push: Option<crate::push::PushDelivery>,
}

impl<X> Guarded<X> {
    /// Guards `executor`, whose tasks `store` keeps (the store the handler is given: a store
    /// that shares its data between clones, or an `Arc` around yours).
    pub fn new(executor: X, store: Arc<dyn TaskStore>) -> Self {
        Guarded {
            inner: Arc::new(executor),
            store,
            leases: None,
            push: None,
        }
    }

    /// Delivers the events of the tasks that have push configs with `push` (give the same
    /// to [`Bridge::push`](crate::serve::Bridge::push)): every event the executor sends (its status
    /// and artifact updates), its cancellation's, and the FAILED or CANCELED status the guard
    /// ends a task with. A SendMessage's own push config is saved before its first event.
    pub fn push(mut self, push: crate::push::PushDelivery) -> Self {
        self.push = Some(push);
        self
    }

    /// Guards `executor`, whose tasks the shared `store` keeps, holding each task's lease
    /// while its execution runs (see [`TaskLeases`](crate::lease::TaskLeases);
    /// `RedisTaskStore` is one): a task another replica is running is refused
    /// (INVALID_REQUEST, `TASK_RUNNING_ELSEWHERE`); an execution whose lease is lost (the
    /// store unreachable for a whole lease, the task ended elsewhere, or the store's stall
    /// limit) is stopped, its executor's stream dropped, and its task ends FAILED with
    /// `TASK_ABANDONED` by the store's reaper.
    pub fn leased<S>(executor: X, store: S) -> Self
    where
        S: TaskStore + crate::lease::TaskLeases + Clone,
    {
        Guarded {
            inner: Arc::new(executor),
            store: Arc::new(store.clone()),
            leases: Some(Arc::new(store)),
            push: None,
        }
    }
}

impl<X: AgentExecutor> AgentExecutor for Guarded<X> {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        // What the bridge told of the request: its deadline and its link.
        let call = super::call::read(&ctx.service_params);
        let run = Run {
            task_id: ctx.task_id.clone(),
            context_id: ctx.context_id.clone(),
            inherited: Inherited {
                trace: Some(trace_of(&ctx)),
                deadline: call.deadline,
                // Told for an anonymous caller (its address); else the caller is its scope.
                caller: call.caller.or((call.scope != 0).then_some(call.scope)),
            },
            link: call.link.and_then(link::find),
            store: Arc::clone(&self.store),
            as_status: AtomicBool::new(false),
            push: self.push.clone(),
            caller: call.scope,
        };
        let config = self.push.as_ref().and_then(|_| push_config_of(&ctx));
        let run_caller = run.caller;
        let task_of_run = run.task_id.clone();
        if let Some(link) = &run.link {
            link.started(&run.task_id);
        }
        let inner = Arc::clone(&self.inner);
        // Inside the request's trace: an executor may fail before its stream is polled.
        let task = run.task_id.clone();
        let events = a2a_error_runtime::inherited::sync_scope(run.inherited.clone(), || {
            std::panic::catch_unwind(AssertUnwindSafe(|| inner.execute(ctx)))
        });
        let push = run.push.clone();
        let events = run.guard(events, config);
        let events = match push {
            Some(push) => notified(events, push, task_of_run.clone(), run_caller),
            None => events,
        };
        if let Some(leases) = &self.leases {
            return super::lease::leased(Arc::clone(leases), task, events);
        }
        events
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let inner = Arc::clone(&self.inner);
        let task = ctx.task_id.clone();
        let caller = super::call::read(&ctx.service_params).scope;
        let events = match std::panic::catch_unwind(AssertUnwindSafe(|| inner.cancel(ctx))) {
            Ok(events) => AssertUnwindSafe(events)
                .catch_unwind()
                .map(|item| item.unwrap_or_else(|panic| Err(panicked(&*panic))))
                .boxed(),
            Err(panic) => futures_util::stream::iter([Err(panicked(&*panic))]).boxed(),
        };
        // The cancellation's events are the task's too (its CANCELED status).
        match self.push.clone() {
            Some(push) => notified(events, push, task, caller),
            None => events,
        }
    }
}

/// What the guard knows of one execution.
struct Run {
    task_id: String,
    context_id: String,
    /// The request's trace and deadline, which the calls the executor makes inherit.
    inherited: Inherited,
    /// The request's link (see `Link`), when the bridge made one.
    link: Option<Arc<Watch>>,
    store: Arc<dyn TaskStore>,
    /// Whether the execution asked for failures as FAILED status updates ([`fail_as_status`]).
    as_status: AtomicBool,
    push: Option<crate::push::PushDelivery>,
    /// The caller whose request runs it (the task's owner), whose share its push configs
    /// and notifications take.
    caller: super::scope_key::ScopeKey,
}

/// An event, or the error that ends the execution.
type Item = Result<StreamResponse, A2AError>;

/// A rare step's future (saving the push config, ending a failed task in the store): its
/// output, when there is one, is the stream's last item.
type RareStep = futures_util::future::BoxFuture<'static, Option<Item>>;

/// The guarded stream. Written by hand rather than as an `unfold`: that made a future for
/// every event (its async block held every step's room, ~1.7 KB, written and copied each
/// time), where this keeps what lasts across events (the timer, the link's watch) once.
struct Guard {
    /// The executor's events; `None` once the stream has ended (or will after a rare step).
    events: Option<BoxStream<'static, Item>>,
    started: bool,
    run: Arc<Run>,
    /// A rare step in progress, polled before anything else.
    rare_step: Option<RareStep>,
    /// For a stream's execution: the credit for the next event is held.
    credited: bool,
    /// Waiting for a credit (its reader is a whole window behind).
    credit: Option<futures_util::future::BoxFuture<'static, ()>>,
    /// The request's deadline, its timer made the first time an event is not ready at once.
    expiry: Option<a2a_error_runtime::deadline::Expiry>,
    /// Resolves once the request is gone, made the first time an event is not ready at once.
    gone: Option<futures_util::future::BoxFuture<'static, ()>>,
    /// A stream's first event when it is not the Task: sent after the task is read and sent
    /// first (A2A: a task's stream begins with the Task object).
    held: Option<StreamResponse>,
    /// Reading the task to send before [`held`](Guard::held).
    opening: Option<futures_util::future::BoxFuture<'static, Option<a2a::Task>>>,
    /// The items given to the handler so far.
    given: u64,
    /// A forwarded answer's appends, joined for the handler (see `sdk::appends`). Boxed: most
    /// executions forward no answer.
    appends: Option<Box<Appends>>,
    /// An item to handle once the text waiting, given first, has been taken.
    after_join: Option<Item>,
}

impl Drop for Guard {
    /// The handler drops the stream once it has written the last event: the execution ended.
    fn drop(&mut self) {
        if let Some(link) = &self.run.link {
            link.end();
        }
    }
}

impl Guard {
    /// Polls for the credit of the next event (a stream's execution waits for its reader,
    /// see `Link`), then for the event, inside the run's deadline, trace and failure mode
    /// (the SDK runs the executor in a task of its own). `Err` is a panic.
    fn poll_event(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::thread::Result<Option<Item>>> {
        use std::task::Poll;
        let run = &*self.run;
        if !self.credited {
            match &run.link {
                Some(link) if link.is_stream() => {
                    if self.credit.is_none() {
                        if link.try_credit() {
                            self.credited = true;
                        } else {
                            let link = Arc::clone(link);
                            self.credit = Some(Box::pin(async move { link.credit().await }));
                        }
                    }
                    if let Some(credit) = &mut self.credit {
                        if credit.as_mut().poll(cx).is_pending() {
                            return Poll::Pending;
                        }
                        self.credit = None;
                        self.credited = true;
                    }
                }
                _ => self.credited = true,
            }
        }
        let Some(events) = self.events.as_mut() else {
            return Poll::Ready(Ok(None));
        };
        let outer = FAILURES_AS_STATUS.replace(Some(false));
        let polled = a2a_error_runtime::inherited::sync_scope(run.inherited.clone(), || {
            std::panic::catch_unwind(AssertUnwindSafe(|| events.poll_next_unpin(cx)))
        });
        if FAILURES_AS_STATUS.replace(outer) == Some(true) {
            run.as_status.store(true, Ordering::Relaxed);
            if let Some(link) = &run.link {
                link.fails_as_status();
            }
        }
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(item)) => Poll::Ready(Ok(item)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

impl futures_util::Stream for Guard {
    type Item = Item;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Item>> {
        let this = self.get_mut();
        let polled = this.step(cx);
        // The handler's count of events, with which the tokens sent beside them are stamped.
        if let std::task::Poll::Ready(Some(_)) = &polled {
            this.given += 1;
        }
        polled
    }
}

impl Guard {
    /// The next item for the handler.
    fn step(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<Item>> {
        use std::task::Poll;
        let this = self;
        loop {
            if let Some(opening) = &mut this.opening {
                let Poll::Ready(task) = opening.as_mut().poll(cx) else {
                    return Poll::Pending;
                };
                this.opening = None;
                if let Some(task) = task {
                    return Poll::Ready(Some(Ok(StreamResponse::Task(task))));
                }
            }
            if let Some(held) = this.held.take() {
                return Poll::Ready(Some(Ok(held)));
            }
            if let Some(rare_step) = &mut this.rare_step {
                let Poll::Ready(last) = rare_step.as_mut().poll(cx) else {
                    return Poll::Pending;
                };
                this.rare_step = None;
                if let Some(last) = last {
                    this.events = None;
                    return Poll::Ready(Some(last));
                }
            }
            let item = match this.after_join.take() {
                Some(item) => item,
                None => {
                    if this.events.is_none() {
                        return Poll::Ready(None);
                    }
                    match this.poll_event(cx) {
                        Poll::Ready(Ok(None)) => {
                            // The answer's text still waiting goes before the end.
                            this.events = None;
                            let joined = this.appends.as_mut().and_then(|a| a.join());
                            return Poll::Ready(joined.map(Ok));
                        }
                        Poll::Ready(Ok(Some(item))) => item,
                        Poll::Ready(Err(panic)) => Err(panicked(&*panic)),
                        Poll::Pending => match this.pending(cx) {
                            Some(Waited::Item(item)) => item,
                            Some(Waited::Joined(joined)) => return Poll::Ready(Some(Ok(joined))),
                            None => return Poll::Pending,
                        },
                    }
                }
            };
            this.credited = false;
            // A forwarded answer's tokens: joined for the handler (see `sdk::appends`).
            if let Some(appends) = &mut this.appends {
                if let Ok(event) = &item
                    && let Some(text) = appends.text_of(event)
                {
                    appends.add(text);
                    if appends.sent()
                        && let (Some(link), Ok(token)) = (&this.run.link, item)
                    {
                        link.send_token(this.given, token);
                    }
                    if appends.due() {
                        return Poll::Ready(appends.join().map(Ok));
                    }
                    continue;
                }
                // Any other item comes after the text waiting.
                if let Some(joined) = appends.join() {
                    this.after_join = Some(item);
                    return Poll::Ready(Some(Ok(joined)));
                }
            } else if let Ok(event) = &item
                && this.run.joins_appends()
            {
                let sent = this.run.link.as_ref().is_some_and(|link| link.is_stream());
                this.appends = Appends::start(event, sent).map(Box::new);
            }
            match item {
                Ok(event) if !this.started && this.run.opens_with_task(&event) => {
                    // A stream that does not begin with its Task: the task as stored (the
                    // caller's message, SUBMITTED) is sent first, then the event.
                    this.started = true;
                    this.held = Some(event);
                    let run = Arc::clone(&this.run);
                    this.opening = Some(Box::pin(async move {
                        match run.store.get(&run.task_id).await {
                            Ok(task) => task,
                            Err(error) => {
                                tracing::warn!(
                                    code = error.code,
                                    "could not read a task to open its stream"
                                );
                                None
                            }
                        }
                    }));
                }
                Ok(event) => {
                    this.started = true;
                    return Poll::Ready(Some(Ok(event)));
                }
                // Nothing is polled after an error (or a panic).
                Err(error) if this.started => {
                    this.events = None;
                    return Poll::Ready(Some(Ok(this.run.failed_event(&error))));
                }
                Err(error) => {
                    this.events = None;
                    let run = Arc::clone(&this.run);
                    this.rare_step = Some(Box::pin(async move {
                        run.mark_failed(&error).await;
                        Some(Err(error))
                    }));
                }
            }
        }
    }

    /// The executor's stream has no event ready: the text waiting once it has waited its
    /// longest, the deadline's error once it has passed, the CANCELED event once the request
    /// is gone; `None` to wait. The timers and the watch are made only when an event is not
    /// ready at once, and then kept for the rest of the execution.
    fn pending(&mut self, cx: &mut std::task::Context<'_>) -> Option<Waited> {
        if let Some(joined) = self.appends.as_mut().and_then(|a| a.poll_waited(cx)) {
            return Some(Waited::Joined(joined));
        }
        let run = &*self.run;
        let passed = self.expiry.as_mut().is_some_and(|end| end.poll_passed(cx));
        if passed {
            return Some(Waited::Item(Err(a2a_error_runtime::sdk_errors::to_sdk(
                &StandardError::DeadlineExceeded,
            ))));
        }
        let link = run.link.as_ref()?;
        let gone = self.gone.get_or_insert_with(|| {
            let link = Arc::clone(link);
            Box::pin(async move { link.gone().await })
        });
        if gone.as_mut().poll(cx).is_pending() {
            return None;
        }
        // Nothing is polled after this: the executor's stream is dropped.
        self.events = None;
        Some(Waited::Item(Ok(run.canceled_event())))
    }
}

/// What came while the executor's stream had no event ready (see [`Guard::pending`]).
enum Waited {
    /// An item that ends the execution (the deadline's error, the CANCELED event).
    Item(Item),
    /// The answer's text that waited its longest.
    Joined(StreamResponse),
}

impl Run {
    fn guard(
        self,
        events: std::thread::Result<BoxStream<'static, Item>>,
        config: Option<a2a::TaskPushNotificationConfig>,
    ) -> BoxStream<'static, Item> {
        let run = Arc::new(self);
        let events = match events {
            Ok(events) => events,
            Err(panic) => futures_util::stream::iter([Err(panicked(&*panic))]).boxed(),
        };
        // The SendMessage's push config, saved before the first event.
        let rare_step = match (config, &run.push) {
            (Some(mut config), Some(push)) => {
                let (run, push) = (Arc::clone(&run), push.clone());
                config.task_id = run.task_id.clone();
                Some(Box::pin(async move {
                    let error = push.save(config, run.caller).await.err()?;
                    run.mark_failed(&error).await;
                    Some(Err(error))
                }) as RareStep)
            }
            _ => None,
        };
        let expiry = run
            .inherited
            .deadline
            .map(a2a_error_runtime::deadline::Expiry::new);
        Guard {
            events: Some(events),
            started: false,
            run,
            rare_step,
            credited: false,
            credit: None,
            expiry,
            gone: None,
            held: None,
            opening: None,
            given: 0,
            appends: None,
            after_join: None,
        }
        .boxed()
    }

    /// Whether `event`, an execution's first, is to be preceded by its Task (A2A 1.0
    /// §3.1.2: a task's stream begins with the Task object): the execution keeps A2A's task
    /// model (it asked for failures as FAILED status updates, as
    /// [`forward_stream`](crate::forward::forward_stream) does), it serves a stream (whose caller
    /// reads each event), and the event is neither the Task nor a Message (a stream of one
    /// message has no task). Other executions' events are sent as they make them.
    fn opens_with_task(&self, event: &StreamResponse) -> bool {
        self.as_status.load(Ordering::Relaxed)
            && self.link.as_ref().is_some_and(|link| link.is_stream())
            && !matches!(event, StreamResponse::Task(_) | StreamResponse::Message(_))
    }

    /// Whether the execution's appends are joined for the handler (see `sdk::appends`): it
    /// forwards a model's answer (it asked for failures as FAILED status updates, as
    /// [`forward_stream`](crate::forward::forward_stream) does) to a request of the bridge.
    fn joins_appends(&self) -> bool {
        self.as_status.load(Ordering::Relaxed) && self.link.is_some()
    }

    /// The terminal event of a task whose work had started when it failed: marked for the
    /// bridge to send as the stream's error event, unless the execution asked for a FAILED
    /// status update ([`fail_as_status`]).
    fn failed_event(&self, error: &A2AError) -> StreamResponse {
        let public = a2a_error_runtime::sdk_errors::public(error);
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
        let public = a2a_error_runtime::sdk_errors::public(error);
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
            push.notify(&self.task_id, self.caller, &as_notified(event))
                .await;
        }
    }
}

/// `event` as a push notification carries it: without the guard's marker for the bridge's
/// stream encoder, and stamped as the SDK's handler stamps what it stores.
fn as_notified(event: &StreamResponse) -> StreamResponse {
    let mut event = event.clone();
    super::appends::unmark(&mut event);
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
    events: BoxStream<'static, Item>,
    push: crate::push::PushDelivery,
    task: String,
    caller: super::scope_key::ScopeKey,
) -> BoxStream<'static, Item> {
    Notifying {
        events,
        last_given: None,
        queuing: None,
        reading: None,
        push,
        task: Arc::from(task),
        caller,
    }
    .boxed()
}

/// An event the handler has been given, with the task's configs when it was made.
type GivenEvent = (StreamResponse, Vec<a2a::TaskPushNotificationConfig>);

/// [`notified`]'s stream, written by hand as the guard's is (see [`Guard`]): a task with no
/// configs (most) costs one look at its configs an event, and no copy of it.
struct Notifying {
    events: BoxStream<'static, Item>,
    /// The event last given, queued when the next is asked for (or the stream dropped).
    /// Boxed: an event is ~400 bytes, which every stream would carry for the few tasks that
    /// have configs.
    last_given: Option<Box<GivenEvent>>,
    /// Queuing the event last given.
    queuing: Option<futures_util::future::BoxFuture<'static, ()>>,
    /// An event read, and its task's configs being read (a store outside this process).
    reading: Option<(
        Item,
        futures_util::future::BoxFuture<'static, Vec<a2a::TaskPushNotificationConfig>>,
    )>,
    push: crate::push::PushDelivery,
    task: Arc<str>,
    /// The task's owner, whose share of the outbox its notifications take.
    caller: super::scope_key::ScopeKey,
}

impl Drop for Notifying {
    fn drop(&mut self) {
        let (Some(given), Ok(runtime)) = (
            self.last_given.take(),
            tokio::runtime::Handle::try_current(),
        ) else {
            return;
        };
        let (event, configs) = *given;
        let (push, task) = (self.push.clone(), Arc::clone(&self.task));
        let caller = self.caller;
        runtime.spawn(async move { push.queue(&task, caller, &event, configs).await });
    }
}

impl futures_util::Stream for Notifying {
    type Item = Item;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Item>> {
        use std::task::Poll;
        let this = self.get_mut();
        if let Some(given) = this.last_given.take() {
            let (event, configs) = *given;
            let (push, task, caller) = (this.push.clone(), Arc::clone(&this.task), this.caller);
            this.queuing = Some(Box::pin(async move {
                push.queue(&task, caller, &event, configs).await;
            }));
        }
        if let Some(queuing) = &mut this.queuing {
            if queuing.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.queuing = None;
        }
        loop {
            // An event whose task's configs are being read (a store outside this process).
            if let Some((item, mut read)) = this.reading.take() {
                let Poll::Ready(configs) = read.as_mut().poll(cx) else {
                    this.reading = Some((item, read));
                    return Poll::Pending;
                };
                if let Ok(event) = &item {
                    this.take(event, configs);
                }
                return Poll::Ready(Some(item));
            }
            let item = match this.events.poll_next_unpin(cx) {
                Poll::Ready(Some(item)) => item,
                other => return other,
            };
            let Ok(event) = &item else {
                return Poll::Ready(Some(item));
            };
            let Some(configs) = this.push.configs_here(&this.task) else {
                let (push, task) = (this.push.clone(), Arc::clone(&this.task));
                let read = Box::pin(async move { push.configs_of(&task).await });
                this.reading = Some((item, read));
                continue;
            };
            this.take(event, configs);
            return Poll::Ready(Some(item));
        }
    }
}

impl Notifying {
    /// `event` is given to the handler now: it is queued once the handler has taken it.
    fn take(&mut self, event: &StreamResponse, configs: Vec<a2a::TaskPushNotificationConfig>) {
        if !configs.is_empty() {
            self.last_given = Some(Box::new((as_notified(event), configs)));
        }
    }
}

/// The push config a SendMessage carried, which the bridge checked and put in the params.
fn push_config_of(ctx: &ExecutorContext) -> Option<a2a::TaskPushNotificationConfig> {
    let json = ctx.service_params.get(super::scoped::PUSH_PARAM)?.first()?;
    serde_json::from_str(json).ok()
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
    a2a_error_runtime::sdk_errors::to_sdk(&a2a_error_runtime::server::log::caught(
        "an agent executor",
        panic,
    ))
}
