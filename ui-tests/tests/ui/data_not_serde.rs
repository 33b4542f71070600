use a2a_error::A2aError;

#[derive(Debug)]
pub struct Opaque;

#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("bad")]
    #[a2a(code = -32010)]
    Bad {
        #[a2a(data)]
        what: Opaque,
    },
}

fn main() {}
