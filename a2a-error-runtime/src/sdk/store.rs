//! [`MemoryTaskStore`]: the SDK's `TaskStore` in memory, bounded in bytes.

use std::sync::Arc;
use std::time::Duration;

use a2a::{A2AError, ListTasksRequest, ListTasksResponse, Task, TaskState};
use a2a_server::TaskStore;
use a2a_server::task_store::TaskVersion;

use crate::server::bounded::{BoundedMap, Change};

/// A task and its version.
#[derive(Clone)]
struct Stored {
    task: Arc<Task>,
    version: TaskVersion,
}

/// The SDK's `TaskStore` in this process, bounded in bytes: the SDK's own
/// `InMemoryTaskStore` keeps every task forever, so any caller can grow it until the process
/// dies (1.65 GB after ~0.9 M messages). This one keeps at most `max_bytes` of tasks, each
/// weighed at twice its JSON plus 256 bytes (its memory, with the map's share), letting the
/// tasks created longest ago go first and every task go an hour after its last write. Clones
/// share the tasks: give one to the handler and one to [`Guarded`](super::Guarded).
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
/// The most tasks one ListTasks page holds.
const MAX_PAGE: usize = 100;
/// The least a task weighs (with its share of the map).
const TASK_FLOOR: u64 = 256;

/// Counts the bytes written to it: a task's JSON length without building the JSON.
struct Counter(u64);

impl std::io::Write for Counter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len() as u64;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A task as a write of the map: weighed at twice its JSON plus the floor and its id.
fn put(task: Task, version: TaskVersion) -> Change<Stored> {
    let mut json = Counter(0);
    // A task that does not serialize is weighed at the floor.
    let _ = serde_json::to_writer(&mut json, &task);
    Change::Put {
        weight: TASK_FLOOR + task.id.len() as u64 + 2 * json.0,
        value: Stored {
            task: Arc::new(task),
            version,
        },
        ttl: TASK_TTL,
    }
}

impl MemoryTaskStore {
    /// A store of at most `max_bytes` of weighed tasks.
    pub fn new(max_bytes: u64) -> Self {
        MemoryTaskStore {
            tasks: Arc::new(BoundedMap::new(max_bytes / TASK_FLOOR, max_bytes)),
        }
    }

    /// The weight of the tasks kept now, in bytes (at most the `max_bytes` given).
    pub fn weighed_bytes(&self) -> u64 {
        self.tasks.bytes()
    }
}

#[async_trait::async_trait]
impl TaskStore for MemoryTaskStore {
    async fn create(&self, task: Task) -> Result<TaskVersion, A2AError> {
        let id = task.id.clone();
        self.tasks.update(&id, |held| match held {
            Some(_) => (
                Change::Keep,
                Err(A2AError::invalid_request("task already exists")),
            ),
            None => (put(task, 1), Ok(1)),
        })
    }

    async fn update(&self, task: Task) -> Result<TaskVersion, A2AError> {
        let id = task.id.clone();
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
            (put(task, version), Ok(version))
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
            .filter(|task| {
                req.context_id
                    .as_ref()
                    .is_none_or(|context| task.context_id == *context)
                    && req
                        .status
                        .as_ref()
                        .is_none_or(|state| task.status.state == *state)
                    && req
                        .status_timestamp_after
                        .is_none_or(|after| task.status.timestamp.is_some_and(|at| at > after))
            })
            .collect();
        tasks.sort_by(|a, b| a.id.cmp(&b.id));
        let page_size = req
            .page_size
            .and_then(|size| usize::try_from(size).ok())
            .filter(|size| *size > 0)
            .map_or(MAX_PAGE, |size| size.min(MAX_PAGE));
        let start = match &req.page_token {
            Some(token) if !token.is_empty() => token
                .parse::<usize>()
                .map_err(|_| A2AError::invalid_params("invalid page token"))?,
            _ => 0,
        };
        let total = tasks.len();
        let start = start.min(total);
        let end = start.saturating_add(page_size).min(total);
        let keep = req.history_length.map(|n| usize::try_from(n).unwrap_or(0));
        let page = tasks[start..end]
            .iter()
            .map(|task| {
                let mut task = (**task).clone();
                if let (Some(keep), Some(history)) = (keep, task.history.as_mut()) {
                    let drop = history.len().saturating_sub(keep);
                    history.drain(..drop);
                }
                task
            })
            .collect();
        Ok(ListTasksResponse {
            tasks: page,
            next_page_token: if end < total {
                end.to_string()
            } else {
                String::new()
            },
            page_size: i32::try_from(page_size).unwrap_or(i32::MAX),
            total_size: i32::try_from(total).unwrap_or(i32::MAX),
        })
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
            (put(task.clone(), current.version + 1), Ok(task))
        })
    }
}
