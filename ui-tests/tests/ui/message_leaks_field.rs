use a2a_error::A2aError;

#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("task {task_id} missing in shard {shard}")]
    #[a2a(code = TASK_NOT_FOUND, message = "Task {task_id} not found in shard {shard}")]
    TaskNotFound {
        #[a2a(data)]
        task_id: String,
        shard: u32,
    },
}

fn main() {}
