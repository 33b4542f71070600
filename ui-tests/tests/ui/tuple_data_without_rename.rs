use a2a_error::A2aError;

#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("no task {0}")]
    #[a2a(code = TASK_NOT_FOUND)]
    TaskNotFound(#[a2a(data)] String),
}

fn main() {}
