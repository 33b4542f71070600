use a2a_error::A2aError;

#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("bad")]
    #[a2a(code = -32010)]
    Bad {
        #[a2a(data)]
        reason: String,
    },
}

fn main() {}
