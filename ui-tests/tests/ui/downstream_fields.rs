use a2a_error::A2aError;

#[derive(Debug, thiserror::Error, A2aError)]
enum CoordinatorError {
    #[error("both")]
    #[a2a(downstream)]
    Two(a2a_error::RemoteError, String),
    #[error("both")]
    #[a2a(transparent, downstream)]
    Twice(a2a_error::RemoteError),
}

fn main() {}
