use a2a_error::A2aError;

#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("busy")]
    #[a2a(code = -32010, retryable = false, retry_after = 5)]
    Busy,
}

fn main() {}
