use a2a_error::A2aError;

#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("busy")]
    #[a2a(code = AGENT_UNAVAILABLE)]
    Busy {
        #[a2a(retry_after)]
        when: String,
    },
}

fn main() {}
