use a2a_error::A2aError;

#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error(transparent)]
    #[a2a(transparent)]
    Io(std::io::Error),
}

fn main() {}
