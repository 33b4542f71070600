//! [`RedisTaskStore`] (features `sdk` and `redis`): the SDK's `TaskStore` shared by the
//! replicas of an agent, with leases so that no task stays WORKING after its replica dies.
//!
//! The SDK's stores are one process's: a task created on replica A is TASK_NOT_FOUND on
//! replica B, and lost with A. This one keeps tasks in the Redis the dedup and the rate limits
//! use, through the same connection (its timeouts, its reconnection):
//!
//! - **Shared.** Every replica reads, lists, cancels and writes the same tasks; a
//!   SubscribeToTask that reaches a replica other than the one running the task follows it
//!   there (each write publishes the task's new version), to its terminal state.
//! - **Kept apart.** Given to the [`Bridge`](crate::serve::Bridge) with
//!   [`Bridge::shared_tasks`](crate::serve::Bridge::shared_tasks), a task's owner (the caller's
//!   scope) is written with the task, in the same step, and every replica serves a task only
//!   to its owner.
//! - **Bounded**, in bytes as tasks are weighed (one and a half times their JSON and 1,280
//!   bytes: Redis's own memory for a task, measured): in total (default
//!   256 MiB) and per caller scope (default 16 MiB), the tasks written longest ago going
//!   first, and every task an hour (the TTL) after its last write. The counts move with the
//!   tasks in the same scripts, so the bound holds in Redis's memory; the store keeps no task
//!   in this process.
//! - **Leased.** The replica that runs a task holds its lease ([`lease`](RedisTaskStore::lease),
//!   default 10 s) and renews it every third of that while the executor runs (with
//!   [`Guarded::leased`](crate::executor::Guarded::leased)). A lease that lapses (the replica was
//!   killed, cut off from Redis, or its executor made no event for the
//!   [`stall limit`](RedisTaskStore::stall_limit)) is found by any replica within a second,
//!   and the task ends FAILED with AGENT_UNAVAILABLE as its cause, for every caller to read.
//!   From then on no write to it is taken: the lost replica's late events are refused, and
//!   its execution is stopped when it next renews.
//! - **Failing closed.** Every command is bounded by the store's timeout; a Redis that does
//!   not answer is AGENT_UNAVAILABLE with a Retry-After (reason `TASK_STORE_UNAVAILABLE`),
//!   never a hang and never a task written in this process only.
//!
//! Versions are optimistic where the trait needs them: `begin_cancel` reads, changes and
//! writes the task only if its version did not move meanwhile (else it reads again).

mod follow;
mod lease;
mod outbox;
mod push;
mod scripts;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use a2a::{A2AError, ListTasksRequest, ListTasksResponse, Task, TaskState};
use a2a_server::TaskStore;
use a2a_server::task_store::TaskVersion;

use super::scope_key::ScopeKey;
use a2a_error_runtime::server::RedisStore;
use a2a_error_runtime::server::redis_millis as millis;
use a2a_error_runtime::wire::standard::StandardError;

pub(crate) use follow::follow;
pub use push::RedisPushConfigs;

/// Why the shared task store did not do what it was asked.
#[derive(Clone, Debug, thiserror::Error, a2a_error_derive::A2aError)]
#[a2a(
    crate = "a2a_error_runtime",
    domain = "a2a-error",
    into_response = false
)]
pub(crate) enum SharedTaskError {
    /// Redis did not answer in time, or refused: nothing was written.
    #[error("the task store is unavailable")]
    #[a2a(
        code = AGENT_UNAVAILABLE,
        reason = "TASK_STORE_UNAVAILABLE",
        message = "The task store is unavailable; retry later"
    )]
    Unavailable {
        /// When to come back.
        #[a2a(retry_after)]
        retry_after: Duration,
    },
}

/// When a caller told the store is unavailable may come back.
const UNAVAILABLE_RETRY: Duration = Duration::from_secs(1);
/// What a task weighs beyond its JSON and a half: Redis's memory for its hash, its lease
/// key, its entries in the age, scope and lease sets (measured at about 1,250 bytes for a
/// task of 120 bytes of JSON, and 2,200 for one of 2 KB, in tests/integration/fleet.rs).
const TASK_OVERHEAD: u64 = 1280;
// The longest task id the store looks up (the bridge's one bound on ids): a longer one is
// no task, never sent to Redis.
use crate::push::MAX_ID_BYTES;
/// The most followers (SubscribeToTask on a replica that does not run the task) at once,
/// each a Redis connection of its own: past it, AGENT_UNAVAILABLE.
const MAX_FOLLOWERS: usize = 256;
/// The most followers one caller scope has at once, so that one caller cannot take them all.
const MAX_FOLLOWERS_PER_SCOPE: usize = 16;
/// The most created tasks remembered as leased here before their execution starts.
const MAX_FRESH: usize = 4096;
/// How many tasks one read fetches.
const BATCH: usize = 100;

/// The SDK's `TaskStore` in Redis, shared by replicas (see the module's documentation). Clones share
/// everything: give one to the handler, one to [`Guarded::leased`](crate::executor::Guarded::leased)
/// and one to [`Bridge::shared_tasks`](crate::serve::Bridge::shared_tasks).
#[derive(Clone)]
pub struct RedisTaskStore {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    store: RedisStore,
    prefix: String,
    /// This replica, as the leases name it: 128 random bits.
    replica: String,
    max_bytes: u64,
    max_scope_bytes: u64,
    ttl: Duration,
    lease: Duration,
    stall: Option<Duration>,
    scripts: Scripts,
    reaper: Arc<Reaper>,
    /// Tasks this replica created and leased, whose execution has not taken the lease yet:
    /// their first take is skipped (one round trip less on every SendMessage).
    fresh: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    followers: Arc<tokio::sync::Semaphore>,
    /// How many followers each scope has now (at most [`MAX_FOLLOWERS_PER_SCOPE`]).
    followers_by_scope: Arc<std::sync::Mutex<std::collections::HashMap<ScopeKey, usize>>>,
    /// The push delivery told of the tasks the reaper ends FAILED, when there is one.
    reaped: Arc<std::sync::OnceLock<crate::push::PushDelivery>>,
}

/// The reaper of lapsed leases, one per store and its clones: started once, it reads the
/// store through `target`, which the builder methods point at the store as configured.
#[derive(Default)]
struct Reaper {
    started: AtomicBool,
    target: std::sync::Mutex<std::sync::Weak<Inner>>,
}

#[derive(Clone)]
struct Scripts {
    create: redis::Script,
    write: redis::Script,
    lease: redis::Script,
    release: redis::Script,
    lapsed: redis::Script,
    push_save: redis::Script,
    push_delete: redis::Script,
}

impl std::fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("prefix", &self.inner.prefix)
            .field("max_bytes", &self.inner.max_bytes)
            .field("max_scope_bytes", &self.inner.max_scope_bytes)
            .field("lease", &self.inner.lease)
            .finish_non_exhaustive()
    }
}

/// How a write ended, from the scripts' codes.
enum Written {
    Version(TaskVersion),
    NotFound,
    Reaped,
    LeaseLost,
    Terminal,
    Moved,
    Leased,
}

impl Written {
    fn of(code: i64) -> Written {
        match code {
            -1 => Written::NotFound,
            -2 => Written::Reaped,
            -3 => Written::LeaseLost,
            -4 => Written::Terminal,
            -5 => Written::Moved,
            -6 => Written::Leased,
            version => Written::Version(version.unsigned_abs()),
        }
    }
}

/// How a task is written by [`RedisTaskStore::write`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Write,
    Cancel,
    Reap,
}

impl Mode {
    fn arg(self) -> &'static str {
        match self {
            Mode::Write => "write",
            Mode::Cancel => "cancel",
            Mode::Reap => "reap",
        }
    }
}

/// Milliseconds since the Unix epoch, on this replica's clock (the age order and the
/// reaper's hint; the lease itself is Redis's own expiry).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

fn state_name(state: &TaskState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn unavailable() -> A2AError {
    a2a_error_runtime::sdk_errors::to_sdk(&SharedTaskError::Unavailable {
        retry_after: UNAVAILABLE_RETRY,
    })
}

fn too_large() -> A2AError {
    a2a_error_runtime::sdk_errors::to_sdk(&StandardError::ContentTooLarge)
}

impl RedisTaskStore {
    /// Tasks in the Redis of `store` (its connection, its timeout), under the key prefix
    /// `a2a-task:`. Call inside the tokio runtime that will use it: the reaper of lapsed
    /// leases runs there, for as long as a clone lives (made outside a runtime, it starts
    /// with the first task written).
    pub fn new(store: &RedisStore) -> Self {
        let replica = format!("{:032x}", fastrand::u128(..));
        let tasks = RedisTaskStore {
            inner: Arc::new(Inner {
                store: store.clone(),
                prefix: "a2a-task:".to_owned(),
                replica,
                max_bytes: 256 << 20,
                max_scope_bytes: 16 << 20,
                ttl: Duration::from_secs(3600),
                lease: Duration::from_secs(10),
                stall: None,
                scripts: Scripts {
                    create: scripts::create(),
                    write: scripts::write(),
                    lease: scripts::lease(),
                    release: scripts::release(),
                    lapsed: scripts::lapsed(),
                    push_save: scripts::push_save(),
                    push_delete: scripts::push_delete(),
                },
                reaper: Arc::default(),
                fresh: Arc::default(),
                followers: Arc::new(tokio::sync::Semaphore::new(MAX_FOLLOWERS)),
                followers_by_scope: Arc::default(),
                reaped: Arc::default(),
            }),
        };
        tasks.aim_reaper();
        tasks.start_reaper();
        tasks
    }

    /// The store with `change` made: a new `Inner`, at which the reaper is aimed before the
    /// old one goes. The reaper holds only a `Weak`; with `Arc::make_mut` and no other clone,
    /// the old `Weak` dangled until re-aimed, and a reaper round in that window found no
    /// store and ended the reaper for good (`started` stays set): a task whose lease lapsed
    /// then stayed WORKING.
    fn configure(self, change: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Inner::clone(&self.inner);
        change(&mut inner);
        let tasks = RedisTaskStore {
            inner: Arc::new(inner),
        };
        tasks.aim_reaper();
        tasks
    }

    /// Points the reaper at this store as configured now.
    fn aim_reaper(&self) {
        *self
            .inner
            .reaper
            .target
            .lock()
            .unwrap_or_else(|poison| poison.into_inner()) = Arc::downgrade(&self.inner);
    }

    /// Prefixes every key with `prefix` (agents sharing one Redis keep apart; the replicas
    /// of one agent use the same).
    pub fn prefix(self, prefix: impl Into<String>) -> Self {
        let prefix = prefix.into();
        self.configure(|inner| inner.prefix = prefix)
    }

    /// At most `bytes` of tasks in all (default 256 MiB), as tasks are weighed (1.5 times
    /// their JSON and 1,280 bytes): past it, the tasks written longest ago go.
    pub fn max_bytes(self, bytes: u64) -> Self {
        self.configure(|inner| inner.max_bytes = bytes.max(TASK_OVERHEAD))
    }

    /// At most `bytes` of one caller scope's tasks (default 16 MiB): past it, that caller's
    /// tasks written longest ago go, and no one else's.
    pub fn max_scope_bytes(self, bytes: u64) -> Self {
        self.configure(|inner| inner.max_scope_bytes = bytes.max(TASK_OVERHEAD))
    }

    /// How long a task stays after its last write (default one hour).
    pub fn ttl(self, ttl: Duration) -> Self {
        self.configure(|inner| inner.ttl = ttl.max(Duration::from_millis(1)))
    }

    /// How long a running task's lease lasts unless renewed (default 10 s, at least 100 ms):
    /// a task whose replica dies ends FAILED within about this long and a second.
    pub fn lease(self, lease: Duration) -> Self {
        self.configure(|inner| inner.lease = lease.max(Duration::from_millis(100)))
    }

    /// Stops renewing the lease of an execution that made no event for `limit` (default:
    /// none): its task ends FAILED once the lease lapses, and the execution is stopped.
    pub fn stall_limit(self, limit: Duration) -> Self {
        self.configure(|inner| inner.stall = Some(limit))
    }

    /// The largest task kept: its weight at most a scope's bound and the total's. A heavier
    /// one is CONTENT_TOO_LARGE.
    pub fn max_task_bytes(&self) -> u64 {
        self.inner.max_scope_bytes.min(self.inner.max_bytes)
    }

    /// The weight of the tasks kept now, in bytes (Redis's count).
    pub async fn weighed_bytes(&self) -> Result<u64, A2AError> {
        let mut connection = self.inner.store.connection();
        let bytes: Option<u64> = self
            .bounded(
                redis::cmd("GET")
                    .arg(self.key("bytes"))
                    .query_async(&mut connection),
            )
            .await?;
        Ok(bytes.unwrap_or(0))
    }

    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.inner.prefix)
    }

    /// The key of task `id`'s hash.
    fn task_key(&self, id: &str) -> String {
        format!("{}t:{id}", self.inner.prefix)
    }

    /// `command`, bounded by the store's timeout; a failure is logged and answered as
    /// TASK_STORE_UNAVAILABLE.
    async fn bounded<T>(
        &self,
        command: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, A2AError> {
        self.inner.store.bounded(command).await.map_err(|error| {
            tracing::warn!("task store unavailable: {error}");
            unavailable()
        })
    }

    /// Runs `script` with the prefix and the arguments `args` adds.
    async fn run<T: redis::FromRedisValue>(
        &self,
        script: &redis::Script,
        args: impl FnOnce(&mut redis::ScriptInvocation<'_>),
    ) -> Result<T, A2AError> {
        let mut invocation = script.arg(&self.inner.prefix);
        args(&mut invocation);
        let mut connection = self.inner.store.connection();
        self.bounded(invocation.invoke_async(&mut connection)).await
    }

    /// The JSON and weight of `task`, or CONTENT_TOO_LARGE.
    fn encode(&self, task: &Task) -> Result<(String, u64), A2AError> {
        let json = serde_json::to_string(task)
            .map_err(|_| a2a_error_runtime::sdk_errors::to_sdk(&StandardError::Internal))?;
        let json_bytes = json.len() as u64;
        // Redis keeps a large value in a hash at up to half as much again (its allocator's
        // size classes, the hash's table).
        let weight = json_bytes + json_bytes / 2 + TASK_OVERHEAD;
        if weight > self.max_task_bytes() {
            return Err(too_large());
        }
        Ok((json, weight))
    }

    fn bounds(&self) -> [u64; 3] {
        [
            self.inner.max_bytes,
            self.inner.max_scope_bytes,
            millis(self.inner.ttl),
        ]
    }

    /// Writes `task` in `mode`, if its version is `expected`.
    async fn write(
        &self,
        task: &Task,
        mode: Mode,
        expected: Option<TaskVersion>,
    ) -> Result<Written, A2AError> {
        let (json, weight) = self.encode(task)?;
        let expected = expected.map(|v| v.to_string()).unwrap_or_default();
        let [max, max_scope, ttl] = self.bounds();
        let code: i64 = self
            .run(&self.inner.scripts.write, |call| {
                task_args(call, task, &json, weight)
                    .arg(&self.inner.replica)
                    .arg(mode.arg())
                    .arg(&expected)
                    .arg(max)
                    .arg(max_scope)
                    .arg(ttl);
            })
            .await?;
        Ok(Written::of(code))
    }

    /// The task `id` and its version, if kept.
    async fn read(&self, id: &str) -> Result<Option<(Task, TaskVersion)>, A2AError> {
        if id.len() > MAX_ID_BYTES {
            return Ok(None);
        }
        let mut connection = self.inner.store.connection();
        let (json, version): (Option<String>, Option<u64>) = self
            .bounded(
                redis::cmd("HMGET")
                    .arg(self.task_key(id))
                    .arg("j")
                    .arg("v")
                    .query_async(&mut connection),
            )
            .await?;
        let (Some(json), Some(version)) = (json, version) else {
            return Ok(None);
        };
        Ok(Some((decode(&json)?, version)))
    }

    /// Whether task `id` is `scope`'s.
    pub(crate) async fn owns(&self, scope: ScopeKey, id: &str) -> Result<bool, A2AError> {
        if id.len() > MAX_ID_BYTES {
            return Ok(false);
        }
        let mut connection = self.inner.store.connection();
        let owner: Option<String> = self
            .bounded(
                redis::cmd("HGET")
                    .arg(self.task_key(id))
                    .arg("s")
                    .query_async(&mut connection),
            )
            .await?;
        Ok(owner.and_then(|hex| super::scope_key::read(&hex)) == Some(scope))
    }

    /// Offers `scope`'s tasks to `page`, in id order. A scope's tasks are bounded by its
    /// bytes: all of them are read, for the total, a batch at a time.
    pub(super) async fn list_scope(
        &self,
        scope: ScopeKey,
        page: &mut super::listing::KeysetPage<'_>,
    ) -> Result<(), A2AError> {
        let mut ids = self
            .ids(&format!("s:{}", super::scope_key::hex(scope)))
            .await?;
        ids.sort_unstable();
        for batch in ids.chunks(BATCH) {
            for task in self.read_batch(batch).await? {
                page.offer(task);
            }
        }
        Ok(())
    }

    /// The ids in the sorted set `set` (under the prefix).
    async fn ids(&self, set: &str) -> Result<Vec<String>, A2AError> {
        let mut connection = self.inner.store.connection();
        self.bounded(
            redis::cmd("ZRANGE")
                .arg(self.key(set))
                .arg(0)
                .arg(-1)
                .query_async(&mut connection),
        )
        .await
    }

    /// The tasks of `ids` still kept, in their order: one pipelined round trip.
    async fn read_batch(&self, ids: &[String]) -> Result<Vec<Task>, A2AError> {
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("HGET").arg(self.task_key(id)).arg("j");
        }
        let mut connection = self.inner.store.connection();
        let tasks: Vec<Option<String>> = self.bounded(pipe.query_async(&mut connection)).await?;
        tasks.iter().flatten().map(|json| decode(json)).collect()
    }
}

/// The arguments every write of a task starts with: its id, JSON, weight, state, whether
/// that state is terminal, and now.
fn task_args<'c, 'a>(
    call: &'c mut redis::ScriptInvocation<'a>,
    task: &Task,
    json: &str,
    weight: u64,
) -> &'c mut redis::ScriptInvocation<'a> {
    let state = &task.status.state;
    call.arg(&task.id)
        .arg(json)
        .arg(weight)
        .arg(state_name(state))
        .arg(if state.is_terminal() { "1" } else { "0" })
        .arg(now_ms())
}

/// A record as Redis keeps it; one that does not decode is an internal error (logged).
fn decode<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, A2AError> {
    serde_json::from_str(json).map_err(|error| {
        tracing::error!("a stored record does not decode: {error}");
        a2a_error_runtime::sdk_errors::to_sdk(&StandardError::Internal)
    })
}

#[async_trait::async_trait]
impl TaskStore for RedisTaskStore {
    /// Created with its owner when the bridge's SendMessage creates it, leased to this
    /// replica (the handler runs it next). A task heavier than
    /// [`max_task_bytes`](RedisTaskStore::max_task_bytes) is CONTENT_TOO_LARGE.
    async fn create(&self, task: Task) -> Result<TaskVersion, A2AError> {
        self.start_reaper();
        let (json, weight) = self.encode(&task)?;
        let scope = crate::owned::creating_owner()
            .map(crate::owned::Owner::to_hex)
            .unwrap_or_default();
        let [max, max_scope, ttl] = self.bounds();
        let created: i64 = self
            .run(&self.inner.scripts.create, |call| {
                task_args(call, &task, &json, weight)
                    .arg(&scope)
                    .arg(&self.inner.replica)
                    .arg(millis(self.inner.lease))
                    .arg(max)
                    .arg(max_scope)
                    .arg(ttl);
            })
            .await?;
        if created == 1 {
            let mut fresh = self.inner.fresh.lock().unwrap_or_else(|p| p.into_inner());
            // Bounded: tasks whose execution never started are forgotten in bulk.
            if fresh.len() >= MAX_FRESH {
                fresh.clear();
            }
            fresh.insert(task.id);
            Ok(1)
        } else {
            Err(A2AError::invalid_request("task already exists"))
        }
    }

    /// Refused once the task ended elsewhere: reaped after its lease lapsed, or a terminal
    /// state another write (a cancel on another replica) set.
    async fn update(&self, task: Task) -> Result<TaskVersion, A2AError> {
        match self.write(&task, Mode::Write, None).await? {
            Written::Version(version) => Ok(version),
            Written::NotFound => Err(A2AError::task_not_found(&task.id)),
            Written::Reaped | Written::LeaseLost => Err(a2a_error_runtime::sdk_errors::to_sdk(
                &crate::lease::LeaseError::Lapsed,
            )),
            Written::Terminal => Err(A2AError::invalid_request(
                "a task in a terminal state cannot change state",
            )),
            Written::Moved | Written::Leased => Err(unavailable()),
        }
    }

    async fn get(&self, task_id: &str) -> Result<Option<Task>, A2AError> {
        Ok(self.read(task_id).await?.map(|(task, _)| task))
    }

    /// The tasks of the store, as the SDK's handler lists them when it is served without
    /// the bridge (the bridge lists a caller's own, from their scope's set): in id order,
    /// paged by offset over every task, the request's filters applied to each page's tasks
    /// (at most 100 read a call, however many the store holds).
    async fn list(&self, req: &ListTasksRequest) -> Result<ListTasksResponse, A2AError> {
        let mut ids = self.ids("all").await?;
        ids.sort_unstable();
        let page = super::listing::OffsetPage::of(req, ids.len())?;
        let mut tasks = self.read_batch(&ids[page.start..page.end]).await?;
        tasks.retain(|task| super::listing::listed(req, task));
        for task in &mut tasks {
            super::listing::keep_history(task, req.history_length);
        }
        Ok(page.reply(tasks))
    }

    /// Read, changed to CANCELED and written only if the version did not move (else read
    /// again, a few times).
    async fn begin_cancel(&self, task_id: &str) -> Result<Task, A2AError> {
        for _ in 0..8 {
            let Some((mut task, version)) = self.read(task_id).await? else {
                return Err(A2AError::task_not_found(task_id));
            };
            if task.status.state.is_terminal() {
                return Err(A2AError::task_not_cancelable(task_id));
            }
            task.status.state = TaskState::Canceled;
            task.status.timestamp = None;
            match self.write(&task, Mode::Cancel, Some(version)).await? {
                Written::Version(_) => return Ok(task),
                Written::Moved => continue,
                Written::NotFound => return Err(A2AError::task_not_found(task_id)),
                _ => return Err(A2AError::task_not_cancelable(task_id)),
            }
        }
        Err(unavailable())
    }
}

#[async_trait::async_trait]
impl crate::owned::OwnedTaskStore for RedisTaskStore {
    async fn owns(&self, owner: crate::owned::Owner, task: &str) -> Result<bool, A2AError> {
        RedisTaskStore::owns(self, owner.0, task).await
    }

    async fn list_owned(
        &self,
        owner: crate::owned::Owner,
        request: &ListTasksRequest,
        page_size: usize,
    ) -> Result<ListTasksResponse, A2AError> {
        let mut page = super::listing::KeysetPage::new(request, page_size);
        self.list_scope(owner.0, &mut page).await?;
        Ok(page.reply())
    }

    /// Follows the task through the store's channel of its events (see `follow`'s bounds).
    async fn follow(
        &self,
        owner: crate::owned::Owner,
        task: &str,
    ) -> Option<
        Result<
            futures_util::stream::BoxStream<'static, Result<a2a::StreamResponse, A2AError>>,
            A2AError,
        >,
    > {
        Some(follow(self, owner.0, task).await)
    }
}
