use a2a_error::A2aError;

const MY_CODE: i32 = -32010;

#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("mine")]
    #[a2a(code = MY_CODE)]
    Mine,
}

fn main() {}
