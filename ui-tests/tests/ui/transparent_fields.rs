use a2a_error::{A2aError, StandardError};

#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("wrapped")]
    #[a2a(transparent)]
    Wrapped(StandardError, u32),
}

fn main() {}
