use a2a_error::A2aError;

#[derive(Debug, A2aError)]
pub enum AgentError {
    #[a2a(code = -32010)]
    Busy,
}

fn main() {}
