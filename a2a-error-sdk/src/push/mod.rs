//! [`PushDelivery`]: push notifications that arrive, for agents on the SDK served by the
//! bridge, in place of the SDK's one-shot sender.
//!
//! Each event of a task with push configs (the StreamResponse, as the bridge's streams send
//! it) becomes a notification to each config's URL, kept in an outbox until it ends, and
//! delivered by a [`PushSender`] (the same stack as every callee: retries that respect the
//! receiver, a breaker and a bulkhead per receiver origin, Standard Webhooks' headers).
//!
//! - **In order, independently**: one task's notifications to one config (a lane) are sent
//!   one at a time, each after the one before ended (accepted, refused, or a dead letter);
//!   lanes run apart, so a hanging receiver delays nobody else, nor the task.
//! - **Until a maximum age** (default an hour): a notification not accepted by then is a dead
//!   letter ([`dead_letters`](PushDelivery::dead_letters), [`replay`](PushDelivery::replay)).
//!   A 410 removes the config and its pending notifications; a notification whose config
//!   is no longer saved when its turn comes is not sent.
//! - **Durable across replicas** ([`PushDelivery::shared`] over a [`PushStore`];
//!   `PushDelivery::redis`, feature `redis`): the outbox in the fleet's store, each lane
//!   claimed under a lease; a replica that dies leaves its lanes to the others, which send
//!   the same notifications with the same `webhook-id`.
//!
//! Give the same delivery to the guard (which sees the events) and to the bridge (which
//! serves the configs):
//!
//! ```no_run
//! # fn run(executor: impl a2a_server::AgentExecutor) -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use a2a_error::dependency::PushSender;
//! use a2a_error::sdk::{Bridge, Guarded, MemoryTaskStore, PushDelivery};
//!
//! let push = PushDelivery::memory(PushSender::builder().signing_secret("whsec").build()?);
//! let store = MemoryTaskStore::new(64 << 20);
//! let guarded = Guarded::new(executor, Arc::new(store.clone())).push(push.clone());
//! let handler = a2a_server::DefaultRequestHandler::new(guarded, store);
//! let router = Bridge::new(handler).push(push).router();
//! # Ok(()) }
//! ```

mod memory;
mod outbox;
mod store;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use a2a::{A2AError, StreamResponse, TaskPushNotificationConfig};
use a2a_server::PushConfigStore;
use bytes::Bytes;
use tokio::sync::Notify;
use tokio::time::Instant;

pub use memory::MemoryOutbox;
pub(crate) use outbox::lane;
pub use outbox::{
    ClaimLost, DeadLetter, Entry, MAX_BODY_BYTES, MAX_DEAD_BYTES, MAX_DEAD_LETTERS, MAX_PENDING,
    MAX_PENDING_BYTES, MAX_PENDING_BYTES_PER_CALLER, MAX_PENDING_PER_CALLER, MAX_PER_LANE, Outbox,
    within_share,
};
pub use store::PushStore;

use crate::protojson::ProtoJson;
use a2a_error_runtime::dependency::push::Refused;
use a2a_error_runtime::dependency::{Delivery, PushSender, Receiver};

/// The most push configs one task has, as the SDK's own store allows.
pub const MAX_CONFIGS_PER_TASK: usize = 50;
/// The largest push config kept, as JSON: a heavier one is CONTENT_TOO_LARGE.
pub const MAX_CONFIG_BYTES: usize = 8 << 10;

/// TASK_NOT_FOUND for a push config that is not there, as the SDK's stores say it.
pub(crate) fn not_found(config: &str) -> A2AError {
    A2AError::new(
        a2a::error_code::TASK_NOT_FOUND,
        format!("push notification config not found: {config}"),
    )
}

/// The longest task or config id the bridge's stores keep or look up (bytes): a longer one
/// names nothing.
pub(crate) const MAX_ID_BYTES: usize = 256;

/// `config` checked as every store saves it, its id made when it has none: its URL given,
/// its task's id 1 to [`MAX_ID_BYTES`] bytes and its own at most that (INVALID_PARAMS: no
/// task has such an id), its JSON at most [`MAX_CONFIG_BYTES`] (CONTENT_TOO_LARGE). Its id and JSON.
pub(crate) fn checked(
    config: &mut TaskPushNotificationConfig,
) -> Result<(String, String), A2AError> {
    if config.url.is_empty() {
        return Err(A2AError::invalid_params("push config URL cannot be empty"));
    }
    if config.task_id.is_empty() || config.task_id.len() > MAX_ID_BYTES {
        return Err(A2AError::invalid_params(format!(
            "push config task id must be 1 to {MAX_ID_BYTES} bytes"
        )));
    }
    let id = config
        .id
        .get_or_insert_with(|| format!("{:032x}", fastrand::u128(..)))
        .clone();
    if id.len() > MAX_ID_BYTES {
        return Err(A2AError::invalid_params(format!(
            "push config id must be at most {MAX_ID_BYTES} bytes"
        )));
    }
    let json = serde_json::to_string(config).map_err(|_| {
        a2a_error_runtime::sdk_errors::to_sdk(
            &a2a_error_runtime::wire::standard::StandardError::Internal,
        )
    })?;
    if json.len() > MAX_CONFIG_BYTES {
        return Err(a2a_error_runtime::sdk_errors::to_sdk(
            &a2a_error_runtime::wire::standard::StandardError::ContentTooLarge,
        ));
    }
    Ok((id, json))
}

/// The most lanes one replica delivers at once.
const MAX_WORKERS: usize = 1024;
/// The default lease of a claimed lane (in Redis; in memory a claim never lapses).
const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// Push notifications delivered (see the [module](self)). Clones share everything.
#[derive(Clone)]
pub struct PushDelivery {
    inner: Arc<Engine>,
}

struct Engine {
    sender: PushSender,
    configs: Arc<dyn PushConfigStore>,
    /// The same store, when it is this process's: read without a future for every event.
    local: Option<memory::MemoryConfigs>,
    outbox: Arc<dyn Outbox>,
    max_age: std::sync::RwLock<Duration>,
    lease: Duration,
    wake: Notify,
    running: memory::Running,
    started: AtomicBool,
}

impl std::fmt::Debug for PushDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushDelivery")
            .field("sender", &self.inner.sender)
            .field("max_age", &self.max_age())
            .finish_non_exhaustive()
    }
}

impl PushDelivery {
    /// Configs and pending notifications in this process (bounded: see the crate's
    /// constants [`MAX_PENDING`] and the others; gone with the process).
    pub fn memory(sender: PushSender) -> Self {
        let configs = memory::MemoryConfigs::new();
        PushDelivery::with(
            sender,
            (Arc::new(configs.clone()), Some(configs)),
            Arc::new(memory::MemoryOutbox::new()),
            DEFAULT_LEASE,
        )
    }

    /// Configs and pending notifications in `store`, shared by every replica that shares it
    /// (see [`PushStore`]): each lane claimed for the store's claim duration.
    pub fn shared(sender: PushSender, store: &impl PushStore) -> Self {
        let delivery = PushDelivery::with(
            sender,
            (store.push_configs(), None),
            store.outbox(),
            store.claim_duration(),
        );
        store.delivered_by(&delivery);
        delivery
    }

    /// Queues `event`, the last status of `task`, which the store ended itself (a task whose
    /// lease lapsed, ended FAILED by its reaper), for each of the task's configs.
    pub async fn notify_ended(&self, task: &str, event: &StreamResponse) {
        self.notify(task, 0, event).await;
    }

    /// The engine over `configs` (and the memory store among them, when it is one), `outbox`
    /// and `lease`: each store's constructor is this.
    pub(crate) fn with(
        sender: PushSender,
        (configs, local): (Arc<dyn PushConfigStore>, Option<memory::MemoryConfigs>),
        outbox: Arc<dyn Outbox>,
        lease: Duration,
    ) -> Self {
        let delivery = PushDelivery {
            inner: Arc::new(Engine {
                sender,
                configs,
                local,
                outbox,
                max_age: std::sync::RwLock::new(Duration::from_secs(3600)),
                lease,
                wake: Notify::new(),
                running: memory::Running::default(),
                started: AtomicBool::new(false),
            }),
        };
        delivery.start();
        delivery
    }

    /// How long a notification may wait to be accepted, from its event (default an hour,
    /// from 1 s to 7 days): past it, it is a dead letter and no attempt starts.
    pub fn max_age(&self) -> Duration {
        *self.inner.max_age.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets [`max_age`](Self::max_age) (clamped to 1 s – 7 days).
    pub fn with_max_age(self, age: Duration) -> Self {
        let age = age.clamp(Duration::from_secs(1), Duration::from_secs(7 * 24 * 3600));
        *self
            .inner
            .max_age
            .write()
            .unwrap_or_else(|e| e.into_inner()) = age;
        self
    }

    /// The sender.
    pub fn sender(&self) -> &PushSender {
        &self.inner.sender
    }

    /// The dead letters kept (at most [`MAX_DEAD_LETTERS`], oldest first).
    pub async fn dead_letters(&self) -> Result<Vec<DeadLetter>, A2AError> {
        self.inner.outbox.dead_letters().await
    }

    /// Queues dead letter `id` (its `webhook-id`) again, its age counting from now, with the
    /// same `webhook-id`; `false` when there is no such dead letter.
    pub async fn replay(&self, id: &str) -> Result<bool, A2AError> {
        let replayed = self.inner.outbox.replay(id, now_ms()).await?;
        self.inner.wake.notify_one();
        Ok(replayed)
    }

    /// The configs' store, for the bridge.
    pub(crate) fn configs(&self) -> &dyn PushConfigStore {
        &*self.inner.configs
    }

    /// Checks `config` as the caller sent it: its URL (never inside the network unless the
    /// sender allows it) and its token and credentials (no CR or LF). INVALID_PARAMS if not.
    pub(crate) async fn check(&self, config: &TaskPushNotificationConfig) -> Result<(), A2AError> {
        let auth = config.authentication.as_ref().map(|auth| {
            (
                auth.scheme.as_str(),
                auth.credentials.as_deref().unwrap_or(""),
            )
        });
        let refused = |refused: Refused| A2AError::invalid_params(refused.to_string());
        Receiver::new(&config.url, config.token.as_deref(), auth).map_err(refused)?;
        self.inner.sender.check(&config.url).await.map_err(refused)
    }

    /// Saves `config` of `caller` (the task's owner; checked first) and returns it as saved.
    pub(crate) async fn set(
        &self,
        config: TaskPushNotificationConfig,
        caller: crate::scope_key::ScopeKey,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.check(&config).await?;
        self.save(config, caller).await
    }

    /// Saves `config` of `caller`, already checked: in this process, within the caller's
    /// share ([`memory::MAX_CALLER_CONFIGS_BYTES`]).
    pub(crate) async fn save(
        &self,
        config: TaskPushNotificationConfig,
        caller: crate::scope_key::ScopeKey,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        match &self.inner.local {
            Some(local) => local.save_for(config, caller),
            None => self.inner.configs.save(config).await,
        }
    }

    /// Deletes config `config` of `task`, and its pending notifications.
    pub(crate) async fn delete(&self, task: &str, config: &str) -> Result<(), A2AError> {
        self.inner.configs.delete(task, config).await?;
        self.inner.outbox.drop_lane(&lane(task, config)).await;
        Ok(())
    }

    /// Queues `event` of `task`, `caller`'s (its owner), for each of the task's configs
    /// (none: nothing). A task's notifications stop at its terminal event.
    pub(crate) async fn notify(
        &self,
        task: &str,
        caller: crate::scope_key::ScopeKey,
        event: &StreamResponse,
    ) {
        let configs = self.configs_of(task).await;
        self.queue(task, caller, event, configs).await;
    }

    /// The push configs of `task` now (none when they cannot be read, which is logged).
    pub(crate) async fn configs_of(&self, task: &str) -> Vec<TaskPushNotificationConfig> {
        self.inner.configs.list(task).await.unwrap_or_else(|error| {
            tracing::warn!(
                code = error.code,
                "push configs not read: an event not notified"
            );
            Vec::new()
        })
    }

    /// The push configs of `task` now when they are in this process, without waiting;
    /// `None` when they are elsewhere (read them with [`configs_of`](Self::configs_of)).
    pub(crate) fn configs_here(&self, task: &str) -> Option<Vec<TaskPushNotificationConfig>> {
        self.inner.local.as_ref().map(|local| local.list_now(task))
    }

    /// Queues `event` of `task`, `caller`'s (its owner, whose share of the outbox it takes:
    /// [`MAX_PENDING_PER_CALLER`]), for each of `configs` (the task's, read at the event).
    pub(crate) async fn queue(
        &self,
        task: &str,
        caller: crate::scope_key::ScopeKey,
        event: &StreamResponse,
        configs: Vec<TaskPushNotificationConfig>,
    ) {
        if configs.is_empty() {
            return;
        }
        self.start();
        let body = match serde_json::to_string(&ProtoJson(event.clone())) {
            Ok(body) => body,
            Err(_) => return,
        };
        // One notification per URL: two configs of one task with the same URL would be two
        // lanes to one receiver, whose order nothing would keep.
        let mut urls = std::collections::HashSet::new();
        let configs: Vec<_> = configs
            .into_iter()
            .filter(|config| urls.insert(config.url.clone()))
            .collect();
        let terminal = is_terminal(event);
        let (entries, too_large) = if body.len() > MAX_BODY_BYTES {
            tracing::warn!(
                bytes = body.len(),
                "a push notification over 1 MiB is not sent"
            );
            (Vec::new(), configs.len())
        } else {
            let at = now_ms();
            let caller = match caller {
                0 => String::new(),
                caller => crate::scope_key::hex(caller),
            };
            let entries = configs
                .into_iter()
                .map(|config| Entry {
                    id: format!("msg_{:032x}", fastrand::u128(..)),
                    task: task.to_owned(),
                    config: config.id.unwrap_or_default(),
                    at,
                    url: config.url,
                    token: config.token,
                    auth: config
                        .authentication
                        .map(|auth| (auth.scheme, auth.credentials.unwrap_or_default())),
                    body: body.clone(),
                    caller: caller.clone(),
                })
                .collect();
            (entries, 0)
        };
        match self.inner.outbox.add(task, entries, terminal).await {
            Ok(dead) => {
                for _ in 0..dead + too_large {
                    a2a_error_runtime::observe::push_ended(
                        Delivery::Expired.as_str(),
                        Duration::ZERO,
                    );
                }
            }
            Err(error) => {
                tracing::warn!(code = error.code, "the push outbox did not take an event");
            }
        }
        self.inner.wake.notify_one();
    }

    /// Starts the claiming loop, once, in the current runtime (or with the first event).
    fn start(&self) {
        if self.inner.started.load(Ordering::Acquire) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.inner.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let engine = Arc::downgrade(&self.inner);
        runtime.spawn(async move {
            let every = {
                let Some(engine) = engine.upgrade() else {
                    return;
                };
                (engine.lease / 4).clamp(Duration::from_millis(50), Duration::from_millis(500))
            };
            let mut first = true;
            loop {
                let Some(engine) = engine.upgrade() else {
                    return;
                };
                let _ = tokio::time::timeout(every, engine.wake.notified()).await;
                // After a round's wait: an application installs its recorder once it has
                // built what it serves.
                if std::mem::take(&mut first) {
                    a2a_error_runtime::observe::push_series();
                }
                engine.round().await;
            }
        });
    }
}

impl Engine {
    /// Claims the lanes due and starts delivering them; reports the oldest pending age.
    async fn round(self: &Arc<Self>) {
        let free = MAX_WORKERS.saturating_sub(self.running().len());
        if free > 0 {
            for lane in self.outbox.claim(free).await {
                tokio::spawn(Arc::clone(self).take(lane));
            }
        }
        let oldest = self
            .outbox
            .oldest()
            .await
            .map_or(0.0, |at| now_ms().saturating_sub(at) as f64 / 1000.0);
        a2a_error_runtime::observe::push_oldest_pending(oldest);
    }

    fn running(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Delivers claimed `lane`, once the worker that emptied it here before has ended (it
    /// may not have yet: a claim can follow its last look at once).
    async fn take(self: Arc<Self>, lane: String) {
        let gives_up = Instant::now() + self.lease;
        while !self.running().insert(lane.clone()) {
            if Instant::now() >= gives_up {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.deliver(lane).await;
    }

    /// Delivers `lane`'s notifications in order until it is empty or its claim is lost.
    async fn deliver(self: Arc<Self>, lane: String) {
        while let Ok(Some(entry)) = self.outbox.head(&lane).await {
            // An event read its task's configs before a 410 or a delete removed one, and was
            // queued after its lane was dropped: its config is gone, so is the notification.
            if self.gone(&entry).await {
                self.outbox.drop_lane(&lane).await;
                continue;
            }
            let max_age = *self.max_age.read().unwrap_or_else(|e| e.into_inner());
            let age = Duration::from_millis(now_ms().saturating_sub(entry.at));
            let deadline = Instant::now() + max_age.saturating_sub(age);
            let delivery = match self.receiver(&entry) {
                Some(receiver) => {
                    let sent = self.sender.deliver(
                        &receiver,
                        &entry.id,
                        Bytes::from(entry.body.clone()),
                        deadline,
                    );
                    let renewed = self.renew(&lane);
                    tokio::select! {
                        delivery = sent => delivery,
                        // Another replica has the lane now: it sends the rest.
                        () = renewed => break,
                    }
                }
                None => Delivery::Rejected { status: 0 },
            };
            let age = Duration::from_millis(now_ms().saturating_sub(entry.at));
            a2a_error_runtime::observe::push_ended(delivery.as_str(), age);
            let ended = match delivery {
                Delivery::Gone => {
                    if let Err(error) = self.configs.delete(&entry.task, &entry.config).await {
                        tracing::debug!(code = error.code, "a gone receiver's config stays");
                    }
                    self.outbox.drop_lane(&lane).await;
                    continue;
                }
                Delivery::Expired => self.outbox.end(&lane, &entry.id, Some("expired")).await,
                _ => self.outbox.end(&lane, &entry.id, None).await,
            };
            if ended.is_err() {
                tracing::debug!("a push lane's claim was lost");
            }
        }
        self.running().remove(&lane);
    }

    /// Whether `entry`'s config is no longer saved (a store that cannot say: not gone, the
    /// notification is rather sent than lost).
    async fn gone(&self, entry: &Entry) -> bool {
        match self.configs.get(&entry.task, &entry.config).await {
            Ok(_) => false,
            Err(error) => error.code == a2a::error_code::TASK_NOT_FOUND,
        }
    }

    /// Renews `lane`'s claim every third of the lease; returns when it is lost.
    async fn renew(&self, lane: &str) {
        loop {
            tokio::time::sleep(self.lease / 3).await;
            if let Err(ClaimLost) = self.outbox.renew(lane).await {
                return;
            }
        }
    }

    fn receiver(&self, entry: &Entry) -> Option<Receiver> {
        let auth = entry
            .auth
            .as_ref()
            .map(|(scheme, credentials)| (scheme.as_str(), credentials.as_str()));
        Receiver::new(&entry.url, entry.token.as_deref(), auth).ok()
    }
}

/// Whether `event` ends its task (a terminal status, or a task in one).
fn is_terminal(event: &StreamResponse) -> bool {
    match event {
        StreamResponse::Task(task) => task.status.state.is_terminal(),
        StreamResponse::StatusUpdate(update) => update.status.state.is_terminal(),
        _ => false,
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn config(task: &str, id: &str, url: String) -> TaskPushNotificationConfig {
        TaskPushNotificationConfig {
            url,
            id: Some(id.to_owned()),
            task_id: task.to_owned(),
            token: None,
            authentication: None,
            tenant: None,
        }
    }

    /// An event that read its task's configs before one was deleted (by a caller, or by a
    /// 410) and is queued after the delete dropped the lane: nothing reaches the deleted
    /// config's receiver; the kept one's gets it.
    #[tokio::test]
    async fn a_notification_queued_after_its_config_was_deleted_is_not_sent() {
        let hits = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = Arc::clone(&hits);
        let app = axum::Router::new().route(
            "/{receiver}",
            axum::routing::post(
                move |axum::extract::Path(receiver): axum::extract::Path<String>| {
                    seen.lock().unwrap().push(receiver);
                    async { axum::http::StatusCode::NO_CONTENT }
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });

        let sender = PushSender::builder().allow_private(true).build().unwrap();
        let push = PushDelivery::memory(sender);
        for id in ["kept", "deleted"] {
            push.save(config("t", id, format!("{base}/{id}")), 0)
                .await
                .unwrap();
        }
        let read_before = push.configs_of("t").await;
        assert_eq!(read_before.len(), 2);
        push.delete("t", "deleted").await.unwrap();
        let event = StreamResponse::StatusUpdate(a2a::TaskStatusUpdateEvent {
            task_id: "t".to_owned(),
            context_id: "c".to_owned(),
            status: a2a::TaskStatus {
                state: a2a::TaskState::Completed,
                message: None,
                timestamp: None,
            },
            metadata: None,
        });
        push.queue("t", 0, &event, read_before).await;

        // Both lanes ended (the kept one once delivered): nothing is pending.
        let waited = Instant::now();
        while push.inner.outbox.oldest().await.is_some() || hits.lock().unwrap().is_empty() {
            assert!(waited.elapsed() < Duration::from_secs(10), "not delivered");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(*hits.lock().unwrap(), ["kept"]);
    }
}
