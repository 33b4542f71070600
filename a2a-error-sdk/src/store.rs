//! [`MemoryTaskStore`]: the SDK's `TaskStore` in memory, bounded in bytes.

use std::sync::Arc;
use std::time::Duration;

use a2a::{A2AError, ListTasksRequest, ListTasksResponse, Task, TaskState};
use a2a_server::TaskStore;
use a2a_server::task_store::TaskVersion;

use super::failed::failed_task_status;
use super::listing::{OffsetPage, keep_history, listed};
use a2a_error_runtime::bounded::{BoundedMap, Change};
use a2a_error_runtime::wire::error::A2aError;
use a2a_error_runtime::wire::remote::RemoteError;
use a2a_error_runtime::wire::standard::StandardError;

/// A task and its version.
#[derive(Clone)]
struct Stored {
    task: Arc<Task>,
    version: TaskVersion,
}

/// The SDK's `TaskStore` in this process, bounded in bytes: the SDK's own
/// `InMemoryTaskStore` keeps every task forever, so any caller can grow it until the process
/// dies (1.65 GB after ~0.9 M messages). This one keeps at most `max_bytes` of tasks, each
/// weighed at what it holds in memory (every string, list and map of it walked, in malloc's
/// blocks) plus 256 bytes (the map's share), letting the tasks created longest ago go first
/// and every task go an hour after its last write. Clones share the tasks: give one to the
/// handler and one to [`Guarded`](crate::executor::Guarded).
///
/// A task evicted is TASK_NOT_FOUND to GetTask; a store whose tasks must outlive memory is a
/// database, behind the same trait.
#[derive(Clone)]
pub struct MemoryTaskStore {
    // Each write checks and changes its task in one step (a cancel racing a completion).
    tasks: Arc<BoundedMap<Stored>>,
}

impl std::fmt::Debug for MemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTaskStore")
            .field("tasks", &self.tasks.len())
            .field("weighed_bytes", &self.tasks.bytes())
            .finish()
    }
}

/// How long a task stays after its last write.
const TASK_TTL: Duration = Duration::from_secs(3600);
/// The least a task weighs (with its share of the map).
const TASK_FLOOR: u64 = 256;

/// What a task weighs: what it holds in memory (`sdk::weight`), with the floor (the map's
/// share) and its `Arc`'s block.
fn weight(task: &Task) -> u64 {
    const ARC_BLOCK: u64 = (std::mem::size_of::<Task>() + 16 + 8).next_multiple_of(16) as u64;
    TASK_FLOOR + ARC_BLOCK + super::weight::task(task)
}

/// A task of `weight` as a write of the map.
fn put(task: Task, weight: u64, version: TaskVersion) -> Change<Stored> {
    Change::Put {
        weight,
        value: Stored {
            task: Arc::new(task),
            version,
        },
        ttl: TASK_TTL,
    }
}

/// The error of a task heavier than the store keeps one: CONTENT_TOO_LARGE, with its code
/// table's public message, as the caller is told it.
fn too_large() -> A2AError {
    a2a_error_runtime::sdk_errors::to_sdk(&StandardError::ContentTooLarge)
}

impl MemoryTaskStore {
    /// A store of at most `max_bytes` of weighed tasks.
    pub fn new(max_bytes: u64) -> Self {
        MemoryTaskStore {
            tasks: Arc::new(BoundedMap::new(max_bytes / TASK_FLOOR, max_bytes)),
        }
    }

    /// The heaviest task kept, in bytes as tasks are weighed (what it holds in memory, and
    /// 256): the whole `max_bytes` up to 16 MiB, at least 16 MiB above (16 MiB for a store of
    /// 64 MiB, so a task of about 16 MB of text). A heavier task is CONTENT_TOO_LARGE, never
    /// dropped in silence.
    pub fn max_task_bytes(&self) -> u64 {
        self.tasks.max_record_bytes()
    }

    /// The weight of the tasks kept now, in bytes (at most the `max_bytes` given).
    pub fn weighed_bytes(&self) -> u64 {
        self.tasks.bytes()
    }
}

#[async_trait::async_trait]
impl TaskStore for MemoryTaskStore {
    /// A task heavier than [`max_task_bytes`](MemoryTaskStore::max_task_bytes) is not
    /// created: CONTENT_TOO_LARGE, which the caller's SendMessage answers.
    async fn create(&self, task: Task) -> Result<TaskVersion, A2AError> {
        let weight = weight(&task);
        if weight > self.tasks.max_record_bytes() {
            return Err(too_large());
        }
        let id = task.id.clone();
        self.tasks.update(&id, |held| match held {
            Some(_) => (
                Change::Keep,
                Err(A2AError::invalid_request("task already exists")),
            ),
            None => (put(task, weight, 1), Ok(1)),
        })
    }

    /// A task grown heavier than [`max_task_bytes`](MemoryTaskStore::max_task_bytes) is not
    /// written: the task as it was ends FAILED with CONTENT_TOO_LARGE (so that it is not
    /// left WORKING), and the update fails with that error, which ends the execution.
    async fn update(&self, task: Task) -> Result<TaskVersion, A2AError> {
        let weight = weight(&task);
        let id = task.id.clone();
        if weight > self.tasks.max_record_bytes() {
            let public = RemoteError::from_object(StandardError::ContentTooLarge.to_error_object());
            self.tasks.update(&id, |held| match held {
                Some(current) if !current.task.status.state.is_terminal() => {
                    let mut failed = (*current.task).clone();
                    failed.status = failed_task_status(&public);
                    let weight = self::weight(&failed);
                    (put(failed, weight, current.version + 1), ())
                }
                _ => (Change::Keep, ()),
            });
            return Err(too_large());
        }
        self.tasks.update(&id, |held| {
            let Some(current) = held else {
                return (Change::Keep, Err(A2AError::task_not_found(&id)));
            };
            let state = &current.task.status.state;
            if state.is_terminal() && *state != task.status.state {
                return (
                    Change::Keep,
                    Err(A2AError::invalid_request(
                        "a task in a terminal state cannot change state",
                    )),
                );
            }
            let version = current.version + 1;
            (put(task, weight, version), Ok(version))
        })
    }

    async fn get(&self, task_id: &str) -> Result<Option<Task>, A2AError> {
        Ok(self.tasks.get(task_id).map(|stored| (*stored.task).clone()))
    }

    async fn list(&self, req: &ListTasksRequest) -> Result<ListTasksResponse, A2AError> {
        let mut tasks: Vec<Arc<Task>> = self
            .tasks
            .values()
            .into_iter()
            .map(|stored| stored.task)
            .filter(|task| listed(req, task))
            .collect();
        tasks.sort_by(|a, b| a.id.cmp(&b.id));
        let page = OffsetPage::of(req, tasks.len())?;
        let listed = tasks[page.start..page.end]
            .iter()
            .map(|task| {
                let mut task = (**task).clone();
                keep_history(&mut task, req.history_length);
                task
            })
            .collect();
        Ok(page.reply(listed))
    }

    async fn begin_cancel(&self, task_id: &str) -> Result<Task, A2AError> {
        self.tasks.update(task_id, |held| {
            let Some(current) = held else {
                return (Change::Keep, Err(A2AError::task_not_found(task_id)));
            };
            if current.task.status.state.is_terminal() {
                return (Change::Keep, Err(A2AError::task_not_cancelable(task_id)));
            }
            let mut task = (*current.task).clone();
            task.status.state = TaskState::Canceled;
            task.status.timestamp = None;
            let weight = weight(&task);
            (put(task.clone(), weight, current.version + 1), Ok(task))
        })
    }
}

#[cfg(test)]
mod tests {
    use a2a::{Artifact, Part, TaskStatus};

    use super::*;

    fn task(id: &str, text_bytes: usize) -> Task {
        Task {
            id: id.to_owned(),
            context_id: "c".to_owned(),
            status: TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: None,
            },
            artifacts: Some(vec![Artifact {
                artifact_id: "a".to_owned(),
                name: None,
                description: None,
                parts: vec![Part::text("x".repeat(text_bytes))],
                metadata: None,
                extensions: None,
            }]),
            history: None,
            metadata: None,
        }
    }

    #[tokio::test]
    async fn a_task_too_large_is_an_error_never_a_silent_drop() {
        // One shard of 1 MiB: a task of 1.1 MB of text weighs over 1.1 MB.
        let store = MemoryTaskStore::new(1 << 20);
        assert_eq!(store.max_task_bytes(), 1 << 20);
        let refused = store.create(task("big", 1_100_000)).await.unwrap_err();
        assert_eq!(refused.code, -32055);
        assert!(store.get("big").await.unwrap().is_none());

        // A task that grows too large: the update fails, and the task ends FAILED with the
        // cause rather than staying WORKING.
        store.create(task("t", 1_000)).await.unwrap();
        let refused = store.update(task("t", 1_100_000)).await.unwrap_err();
        assert_eq!(refused.code, -32055);
        let kept = store.get("t").await.unwrap().unwrap();
        assert_eq!(kept.status.state, TaskState::Failed);
        let metadata = kept.status.message.unwrap().metadata.unwrap();
        assert_eq!(metadata["error"]["reason"], "CONTENT_TOO_LARGE");
        // What fits is stored: nothing between fits and refused.
        store.create(task("fits", 1_000_000)).await.unwrap();
        assert!(store.get("fits").await.unwrap().is_some());
    }
}
