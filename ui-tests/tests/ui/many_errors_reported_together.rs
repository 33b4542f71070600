use a2a_error::{A2aError, HasKind};

// Three independent mistakes: all three are reported in one build, and nothing else.
#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("a")]
    #[a2a(code = -32010, categry = "transient")]
    A,
    #[error("b")]
    B,
    #[error("c")]
    #[a2a(code = -32011, reason = "lower_case")]
    C,
}

fn uses_generated_items(e: &AgentError) -> AgentErrorKind {
    e.kind()
}

fn main() {}
