//! The status of a task that failed, as every part of the bridge writes it (the executor, the
//! stores, the reaper of lapsed leases): FAILED, the public message, the cause as metadata.

use std::collections::HashMap;

use a2a::{Message, Part, Role, TaskState, TaskStatus};
use serde_json::Value;

use a2a_error_runtime::server::failed_status;
use a2a_error_runtime::wire::error::A2aError;
use a2a_error_runtime::wire::remote::RemoteError;

/// The status of a task that failed with `public` (the error as the caller is told it):
/// FAILED, with the public message and the metadata of [`failed_status`].
pub(crate) fn failed_task_status(public: &RemoteError) -> TaskStatus {
    let status = failed_status(public);
    let metadata: Option<HashMap<String, Value>> =
        serde_json::from_value(status["message"]["metadata"].clone()).ok();
    let mut message = Message::new(Role::Agent, vec![Part::text(public.public_message())]);
    message.metadata = metadata;
    TaskStatus {
        state: TaskState::Failed,
        message: Some(message),
        timestamp: None,
    }
}

/// [`failed_task_status`] of task `task` in context `context`, its message naming them.
pub(crate) fn failed_status_of(public: &RemoteError, task: &str, context: &str) -> TaskStatus {
    let mut status = failed_task_status(public);
    if let Some(message) = &mut status.message {
        message.task_id = Some(task.to_owned());
        message.context_id = Some(context.to_owned());
    }
    status
}
