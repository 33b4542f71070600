use a2a_error::A2aError;

#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("task missing")]
    #[a2a(code = TASK_NOT_FOUND)]
    TaskNotFound,
    #[error("new failure nobody annotated")]
    Forgotten,
}

fn main() {}
