use a2a_error::A2aError;

#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("odd")]
    #[a2a(code = -32650)]
    Odd,
}

fn main() {}
