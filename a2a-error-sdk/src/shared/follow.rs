//! Following a task another replica runs: SubscribeToTask's stream made from the store's
//! writes (each publishes the task's new version on the task's channel).

use std::collections::VecDeque;
use std::time::Duration;

use a2a::{
    A2AError, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent,
};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;

use super::{MAX_FOLLOWERS_PER_SCOPE, RedisTaskStore, unavailable};
use crate::scope_key::ScopeKey;

type Events = BoxStream<'static, Result<StreamResponse, A2AError>>;

/// How often the follower reads the task even without a message (a message lost while the
/// subscription reconnected, or a Redis that stopped answering).
const READ_EVERY: Duration = Duration::from_secs(1);

/// The stream of task `id` as it changes on any replica: the task first, then its status
/// and artifact updates, ending with its terminal state (or when its execution ends in an
/// interrupted state, as the SDK's own stream does). A task already terminal is
/// UNSUPPORTED_OPERATION, as the SDK answers; a Redis that stops answering ends the stream
/// with TASK_STORE_UNAVAILABLE. At most 16 followers a caller `scope` and 256 in all: past
/// either, AGENT_UNAVAILABLE.
pub(crate) async fn follow(
    store: &RedisTaskStore,
    scope: ScopeKey,
    id: &str,
) -> Result<Events, A2AError> {
    let slot = Slot::take(store, scope).ok_or_else(unavailable)?;
    let permit = std::sync::Arc::clone(&store.inner.followers)
        .try_acquire_owned()
        .map_err(|_| unavailable())?;
    let channel = store.key(&format!("c:{id}"));
    let timeout = store.inner.store.command_timeout();
    // A connection of its own: a subscribed connection takes no other command.
    let subscribed = async {
        let mut pubsub = store.inner.store.client().get_async_pubsub().await?;
        pubsub.subscribe(&channel).await?;
        Ok::<_, redis::RedisError>(pubsub)
    };
    let pubsub = match tokio::time::timeout(timeout, subscribed).await {
        Ok(Ok(pubsub)) => pubsub,
        _ => return Err(unavailable()),
    };
    // Read after subscribing, so that no write falls between the two.
    let Some((task, version)) = store.read(id).await? else {
        return Err(A2AError::task_not_found(id));
    };
    if task.status.state.is_terminal() {
        return Err(A2AError::unsupported_operation(format!(
            "task {id} has already reached a terminal state"
        )));
    }
    // A task waiting for its caller (input or auth required) runs nowhere: it is sent as
    // it stands, and the stream ends, as the SDK's own ends with its execution.
    let waiting = interrupted(&task.status.state);
    let state = Following {
        store: store.clone(),
        id: id.to_owned(),
        messages: Some(pubsub.into_on_message().boxed()),
        last: task.clone(),
        version,
        queue: VecDeque::from([Ok(StreamResponse::Task(task))]),
        done: waiting,
        _permit: (permit, slot),
    };
    Ok(futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.queue.pop_front() {
                return Some((item, state));
            }
            if state.done {
                return None;
            }
            let Some(messages) = state.messages.as_mut() else {
                // No subscription any more: the task is read every READ_EVERY.
                tokio::time::sleep(READ_EVERY).await;
                state.read(false).await;
                continue;
            };
            let ended = match tokio::time::timeout(READ_EVERY, messages.next()).await {
                Ok(Some(message)) => message.get_payload_bytes() == b"end",
                // The subscription's connection closed (a finished stream answers at once,
                // so it is not polled again): read, and end if nothing moves.
                Ok(None) => {
                    state.messages = None;
                    true
                }
                Err(_) => false,
            };
            state.read(ended).await;
        }
    })
    .boxed())
}

/// Whether a task in `state` waits for its caller (input or auth required): it runs nowhere
/// until the caller answers.
fn interrupted(state: &TaskState) -> bool {
    matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

struct Following {
    store: RedisTaskStore,
    id: String,
    /// The task's channel, until its connection closes.
    messages: Option<BoxStream<'static, redis::Msg>>,
    last: Task,
    version: u64,
    queue: VecDeque<Result<StreamResponse, A2AError>>,
    done: bool,
    _permit: (tokio::sync::OwnedSemaphorePermit, Slot),
}

/// One of a scope's follower slots, given back when dropped.
struct Slot {
    counts: Counts,
    scope: ScopeKey,
}

type Counts = std::sync::Arc<std::sync::Mutex<std::collections::HashMap<ScopeKey, usize>>>;

impl Slot {
    /// A slot of `scope`'s, if it has fewer than [`MAX_FOLLOWERS_PER_SCOPE`].
    fn take(store: &RedisTaskStore, scope: ScopeKey) -> Option<Slot> {
        let counts = std::sync::Arc::clone(&store.inner.followers_by_scope);
        {
            let mut held = counts.lock().unwrap_or_else(|p| p.into_inner());
            let count = held.entry(scope).or_default();
            if *count >= MAX_FOLLOWERS_PER_SCOPE {
                return None;
            }
            *count += 1;
        }
        Some(Slot { counts, scope })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut held = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = held.get_mut(&self.scope) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.scope);
            }
        }
    }
}

impl Following {
    /// Reads the task and queues what changed; `ended` when its execution ended (its lease
    /// was given back).
    async fn read(&mut self, ended: bool) {
        let (task, version) = match self.store.read(&self.id).await {
            Ok(Some(read)) => read,
            Ok(None) => {
                self.queue
                    .push_back(Err(A2AError::task_not_found(&self.id)));
                self.done = true;
                return;
            }
            Err(error) => {
                self.queue.push_back(Err(error));
                self.done = true;
                return;
            }
        };
        if version > self.version {
            self.changes(&task);
            self.version = version;
            self.last = task;
        }
        let state = &self.last.status.state;
        if state.is_terminal() || (ended && interrupted(state)) {
            self.done = true;
        }
    }

    /// The events from `self.last` to `task`: its changed artifacts, then its status.
    fn changes(&mut self, task: &Task) {
        let before = self.last.artifacts.as_deref().unwrap_or_default();
        for artifact in task.artifacts.as_deref().unwrap_or_default() {
            if before.iter().any(|seen| seen == artifact) {
                continue;
            }
            self.queue.push_back(Ok(StreamResponse::ArtifactUpdate(
                TaskArtifactUpdateEvent {
                    task_id: task.id.clone(),
                    context_id: task.context_id.clone(),
                    artifact: artifact.clone(),
                    append: None,
                    last_chunk: None,
                    metadata: None,
                },
            )));
        }
        if task.status != self.last.status {
            self.queue
                .push_back(Ok(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                    task_id: task.id.clone(),
                    context_id: task.context_id.clone(),
                    status: task.status.clone(),
                    metadata: None,
                })));
        }
    }
}
