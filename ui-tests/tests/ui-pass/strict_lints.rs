//! Generated code compiles warning-free under a user's strictest settings.
#![deny(
    warnings,
    missing_docs,
    unused,
    rust_2018_idioms,
    unreachable_pub,
    unused_qualifications,
    unused_results,
    deprecated
)]
#![allow(clippy::all)]

use a2a_error::{A2aError, Catalog, RemoteError, StandardError};
use std::time::Duration;

/// A documented public error.
#[derive(Debug, thiserror::Error, A2aError)]
#[a2a(domain = "strict.example")]
pub enum StrictError {
    /// No task.
    #[error("no task {task_id} in {shard}")]
    #[a2a(code = TASK_NOT_FOUND, message = "No task {task_id}")]
    TaskNotFound {
        /// The id.
        #[a2a(data)]
        task_id: String,
        /// Internal, rebuilt as 0 on the client.
        #[a2a(default)]
        shard: u32,
    },
    /// Busy.
    #[error("busy")]
    #[a2a(code = AGENT_UNAVAILABLE)]
    Busy(#[a2a(retry_after)] Option<Duration>, #[a2a(data(rename = "queue"))] String),
    /// Unit.
    #[error("unit")]
    #[a2a(code = -32010, retryable)]
    Unit,
    /// An old variant users are told not to build any more.
    #[deprecated = "use Unit"]
    #[error("old")]
    #[a2a(code = -32011)]
    Old,
    /// Standard.
    #[error(transparent)]
    #[a2a(transparent)]
    Standard(#[from] StandardError),
    /// Anything else.
    #[error(transparent)]
    #[a2a(transparent)]
    Other(RemoteError),
}

/// An empty enum is fine too.
#[derive(Debug, thiserror::Error, A2aError)]
pub enum Never {}

/// A unit struct.
#[derive(Debug, thiserror::Error, A2aError)]
#[error("quota")]
#[a2a(code = RATE_LIMITED, retry_after = 1)]
pub struct Quota;

/// The dependency under another name (`my-errors = { package = "a2a-error" }`).
pub mod renamed {
    use a2a_error as my_errors;

    /// Derived through the renamed path only.
    #[derive(Debug, thiserror::Error, my_errors::A2aError)]
    #[a2a(crate = "my_errors", into_response = false)]
    pub enum Renamed {
        /// Gone.
        #[error("gone")]
        #[a2a(code = -32012)]
        Gone,
    }

    /// The user's own response, which the derive leaves alone.
    impl axum::response::IntoResponse for Renamed {
        fn into_response(self) -> axum::response::Response {
            axum::http::StatusCode::GONE.into_response()
        }
    }
}

fn main() {
    let _ = StrictError::CATALOG;
    let _ = Quota::CATALOG;
    let _ = StrictErrorKind::ALL;
    let _ = NeverKind::ALL;
    let _ = renamed::Renamed::Gone.code();
}
