//! An SDK agent executor that calls another agent with the typed client, as an agent in a
//! chain does: what the bridge's deadline and trace must reach.

use a2a::{A2AError, StreamResponse, TaskState, TaskStatus, TaskStatusUpdateEvent};
use a2a_server::{AgentExecutor, ExecutorContext};
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::{Value, json};

/// An executor that calls another agent with the typed client, as an agent in a chain does.
pub struct Calling {
    /// The agent it calls (GetTask of task `t`).
    pub downstream: a2a_error::Client<a2a_error::RemoteError>,
}

impl AgentExecutor for Calling {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let client = self.downstream.clone();
        stream::once(async move {
            // `?` passes a downstream failure on, translated.
            let _: Value = client.call("GetTask", &json!({"id": "t"})).await?;
            Ok::<_, A2AError>(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: ctx.task_id.clone(),
                context_id: ctx.context_id.clone(),
                status: TaskStatus {
                    state: TaskState::Completed,
                    message: None,
                    timestamp: None,
                },
                metadata: None,
            }))
        })
        .boxed()
    }

    fn cancel(&self, _: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        stream::empty().boxed()
    }
}

/// The SDK's `DefaultRequestHandler` over `executor` as the bridge runs one (`Guarded`), its
/// tasks in a 1 MiB `MemoryTaskStore`.
pub fn guarded(executor: impl AgentExecutor) -> a2a_server::DefaultRequestHandler {
    let store = a2a_error::sdk::MemoryTaskStore::new(1 << 20);
    let executor = a2a_error::sdk::Guarded::new(executor, std::sync::Arc::new(store.clone()));
    a2a_server::DefaultRequestHandler::new(executor, store)
}
