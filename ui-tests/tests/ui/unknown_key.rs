use a2a_error::A2aError;

#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("quota")]
    #[a2a(code = RATE_LIMITED, retry_afte = 10)]
    RateLimited,
}

fn main() {}
