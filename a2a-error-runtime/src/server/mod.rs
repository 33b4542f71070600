//! Serving A2A over axum 0.8 (feature `axum`): a spec-exact JSON-RPC 2.0 endpoint, REST error
//! responses, SSE streams that end in an error event, task-level failures, and a dedup cache
//! that makes client retries of `SendMessage` safe.

mod dedup;
mod endpoint;
mod log;
pub mod rest;
mod sse;
mod task;

pub use dedup::Dedup;
pub use endpoint::{JsonRpc, RequestContext};
pub use sse::{Binding, sse_response};
pub use task::failed_status;

/// The A2A protocol version header.
pub const VERSION_HEADER: &str = "A2A-Version";
/// Content type of A2A JSON bodies (REST replies use it; `application/json` is accepted).
pub const A2A_JSON: &str = "application/a2a+json";
