use a2a_error::A2aError;

#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("bad input")]
    #[a2a(code = -32011, category = "validation", retry_after = 5)]
    BadInput,
}

fn main() {}
