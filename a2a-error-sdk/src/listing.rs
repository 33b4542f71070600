//! What ListTasks means, for every task store the bridge serves (in memory, in Redis): which
//! tasks a request lists, its pages (by offset or by a key), and the history kept.

use a2a::{A2AError, ListTasksRequest, ListTasksResponse, Task};

/// Whether ListTasks `req` lists `task`: its context, state and status time, as asked.
pub(crate) fn listed(req: &ListTasksRequest, task: &Task) -> bool {
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
}

/// A page of ListTasks by offset, the page token being the offset of the next page (the
/// SDK's own stores page so): the page's range of `total` tasks in id order.
pub(crate) struct OffsetPage {
    pub(crate) start: usize,
    pub(crate) end: usize,
    size: usize,
    total: usize,
}

impl OffsetPage {
    /// The page `req` asks for (the SDK's page sizes: 50 when none is asked, 100 at most).
    pub(crate) fn of(req: &ListTasksRequest, total: usize) -> Result<OffsetPage, A2AError> {
        let size = a2a_server::pagination::resolve_page_size(req.page_size);
        let start = match &req.page_token {
            Some(token) if !token.is_empty() => token
                .parse::<usize>()
                .map_err(|_| A2AError::invalid_params("invalid page token"))?,
            _ => 0,
        };
        let start = start.min(total);
        let end = start.saturating_add(size).min(total);
        Ok(OffsetPage {
            start,
            end,
            size,
            total,
        })
    }

    /// The reply with the page's `tasks`.
    pub(crate) fn reply(&self, tasks: Vec<Task>) -> ListTasksResponse {
        ListTasksResponse {
            tasks,
            next_page_token: if self.end < self.total {
                self.end.to_string()
            } else {
                String::new()
            },
            page_size: i32::try_from(self.size).unwrap_or(i32::MAX),
            total_size: i32::try_from(self.total).unwrap_or(i32::MAX),
        }
    }
}

/// A caller's page of ListTasks as the bridge lists it, by the last id of the page before
/// (the token): the caller's tasks are offered in id order, and every one the request lists
/// is counted for the total.
pub(crate) struct KeysetPage<'r> {
    req: &'r ListTasksRequest,
    /// The id the page starts after (the request's token), if any.
    after: Option<&'r str>,
    size: usize,
    tasks: Vec<Task>,
    total: usize,
    next: String,
}

impl<'r> KeysetPage<'r> {
    /// The page `req` asks for, of at most `size` tasks.
    pub(crate) fn new(req: &'r ListTasksRequest, size: usize) -> Self {
        KeysetPage {
            req,
            after: req.page_token.as_deref().filter(|token| !token.is_empty()),
            size,
            tasks: Vec::new(),
            total: 0,
            next: String::new(),
        }
    }

    /// The next task, in id order.
    pub(crate) fn offer(&mut self, mut task: Task) {
        if !listed(self.req, &task) {
            return;
        }
        self.total += 1;
        if self.after.is_some_and(|after| task.id.as_str() <= after) {
            return;
        }
        if self.tasks.len() < self.size {
            if self.req.include_artifacts == Some(false) {
                task.artifacts = None;
            }
            keep_history(&mut task, self.req.history_length);
            self.tasks.push(task);
        } else if self.next.is_empty() {
            self.next = self
                .tasks
                .last()
                .map(|task| task.id.clone())
                .unwrap_or_default();
        }
    }

    /// The reply.
    pub(crate) fn reply(self) -> ListTasksResponse {
        ListTasksResponse {
            tasks: self.tasks,
            next_page_token: self.next,
            page_size: i32::try_from(self.size).unwrap_or(i32::MAX),
            total_size: i32::try_from(self.total).unwrap_or(i32::MAX),
        }
    }
}

/// Keeps the last `length` messages of the task's history (none for 0 or less), as the
/// SDK's handler does.
pub(crate) fn keep_history(task: &mut Task, length: Option<i32>) {
    if let (Some(length), Some(history)) = (length, task.history.as_mut()) {
        let keep = usize::try_from(length).unwrap_or(0);
        let drop = history.len().saturating_sub(keep);
        history.drain(..drop);
    }
}
