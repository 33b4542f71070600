use a2a_error::A2aError;

#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("gone")]
    #[a2a(code = TASK_NOT_FOUNDD)]
    Gone,
}

fn main() {}
