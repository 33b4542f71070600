use a2a_error::A2aError;

#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("quota")]
    #[a2a(code = RATE_LIMITED)]
    #[a2a(code = -32010)]
    RateLimited,
}

fn main() {}
