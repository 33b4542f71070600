use a2a_error::A2aError;

#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("no task")]
    #[a2a(code = TASK_NOT_FOUND)]
    TaskNotFound,
    #[error("no task in archive")]
    #[a2a(code = -32001)]
    ArchivedTaskNotFound,
}

fn main() {}
