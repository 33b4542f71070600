//! [`OwnedTaskStore`]: a task store that keeps each task's owner with the task, so that every
//! replica sharing it serves a task only to the caller it was created for, whichever replica
//! created it. [`RedisTaskStore`](crate::shared::RedisTaskStore) is one; a store of your own
//! (Postgres, DynamoDB, …) is another once it implements this trait and writes the owner
//! [`creating_owner`] names.

use std::future::Future;

use a2a::{A2AError, ListTasksRequest, ListTasksResponse, StreamResponse, Task};
use futures_util::stream::BoxStream;

use super::scope_key::ScopeKey;

/// Who a task belongs to: the scope of the caller it was created for, as the bridge reads it
/// ([`Bridge::scope`](crate::serve::Bridge::scope); by default the `Authorization` header's
/// bytes), kept as a 128-bit hash (`0` for a caller without a credential).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner(pub(crate) ScopeKey);

impl Owner {
    /// The key as a number.
    pub fn key(self) -> u128 {
        self.0
    }

    /// The key as 32 lowercase hex digits: what a store writes beside the task.
    pub fn to_hex(self) -> String {
        super::scope_key::hex(self.0)
    }
}

tokio::task_local! {
    /// The owner of the tasks the handler's current call creates.
    static CREATING: Owner;
}

/// The caller whose request is running the handler's SendMessage (or SendStreamingMessage),
/// when the bridge serves an [`OwnedTaskStore`]: a store's `TaskStore::create` reads it and
/// writes it as the new task's owner, in the same step as the task (so that no replica ever
/// sees a task without its owner). `None` outside such a call.
pub fn creating_owner() -> Option<Owner> {
    CREATING.try_with(|owner| *owner).ok()
}

/// Runs `call` (a handler's call that may create tasks) for `owner`.
pub(crate) async fn creating<T>(owner: Owner, call: impl Future<Output = T>) -> T {
    CREATING.scope(owner, call).await
}

/// A task store shared by the replicas of an agent that keeps each task's owner with it.
/// Given to [`Bridge::shared_tasks`](crate::serve::Bridge::shared_tasks) (the same store the
/// SDK's handler uses), it replaces the bridge's in-process record of owners: GetTask,
/// ListTasks, CancelTask, SubscribeToTask, the push configs and a SendMessage that continues
/// a task serve it to its owner only, on every replica, and to anyone else it does not exist
/// (TASK_NOT_FOUND).
///
/// What an implementation must guarantee:
/// - **Owner with the task.** `TaskStore::create` writes [`creating_owner`] with the task in
///   one step (a task created outside a bridge's call has no owner and is no one's).
/// - **Scoping.** [`owns`](Self::owns) answers from what `create` wrote, never from the
///   request; [`list_owned`](Self::list_owned) lists the owner's tasks only.
/// - **Bounds.** Whatever a caller can make the store hold (tasks, their size, their count
///   per owner) is bounded, and a write past a bound fails with an error (CONTENT_TOO_LARGE,
///   or an unavailable store), never by dropping another caller's task in silence.
/// - **Failures are errors.** A store that does not answer fails the request with an error
///   the caller may retry (TASK_STORE_UNAVAILABLE and a delay), not with "not found".
///
/// Leases (a task whose replica died ends FAILED) are the Redis store's
/// (`Guarded::leased`, feature `redis`); a store of your own without them keeps
/// such a task in its last state.
#[async_trait::async_trait]
pub trait OwnedTaskStore: Send + Sync + 'static {
    /// Whether `task` is `owner`'s. A task the store does not have, or one written without
    /// an owner, is no one's.
    async fn owns(&self, owner: Owner, task: &str) -> Result<bool, A2AError>;

    /// `owner`'s tasks that `request` lists (its context, state and status time), the page
    /// of at most `page_size` after `request.page_token` (the last id of the page before),
    /// in id order, with the history `request.history_length` asks for. [`owned_page`] makes
    /// that answer from the owner's tasks in id order.
    async fn list_owned(
        &self,
        owner: Owner,
        request: &ListTasksRequest,
        page_size: usize,
    ) -> Result<ListTasksResponse, A2AError>;

    /// A SubscribeToTask of `owner`'s `task` that this replica is not running (its handler
    /// said TASK_NOT_FOUND): the task's events as another replica writes them. Default:
    /// `None`, and the caller is told TASK_NOT_FOUND.
    async fn follow(
        &self,
        owner: Owner,
        task: &str,
    ) -> Option<Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError>> {
        let _ = (owner, task);
        None
    }
}

/// The [`OwnedTaskStore::list_owned`] answer for `request` from an owner's tasks in id order:
/// filtered, paged after the token and cut to `page_size`, their history kept as asked.
pub fn owned_page(
    request: &ListTasksRequest,
    page_size: usize,
    tasks_in_id_order: impl IntoIterator<Item = Task>,
) -> ListTasksResponse {
    let mut page = super::listing::KeysetPage::new(request, page_size);
    for task in tasks_in_id_order {
        page.offer(task);
    }
    page.reply()
}
