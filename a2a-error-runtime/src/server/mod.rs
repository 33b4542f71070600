//! Serving A2A over axum 0.8 (feature `axum`): a spec-exact JSON-RPC 2.0 endpoint, REST error
//! responses, SSE streams that end in an error event, task-level failures, and a dedup cache
//! that makes client retries of `SendMessage` safe.

mod body;
mod dedup;
#[doc(hidden)]
pub mod endpoint;
#[doc(hidden)]
pub mod headers;
#[doc(hidden)]
pub mod json;
#[doc(hidden)]
pub mod log;
mod memory;
mod params;
#[doc(hidden)]
pub mod peer;
#[doc(hidden)]
pub mod quota;
#[cfg(feature = "sdk")]
mod rate;
pub mod rest;
pub mod scope;
#[doc(hidden)]
pub mod serve;
#[doc(hidden)]
pub mod sse;
mod task;
mod version;
mod watch;

#[cfg(feature = "redis")]
pub use dedup::RedisStore;
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub use dedup::fingerprint;
#[cfg(all(feature = "redis", feature = "sdk"))]
#[doc(hidden)]
pub use dedup::redis_millis;
pub use dedup::{Dedup, DedupError, DedupStore, MemoryStore, Refusal, StoreError, StoreFailure};
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub use dedup::{OUTCOME_HEAD, outcome_head};
pub use endpoint::{AdaptiveLimit, Handler, JsonRpc, RequestContext, StreamHandler};
pub use headers::A2A_JSON;
pub use memory::return_freed_memory;
#[cfg(feature = "sdk")]
pub use rate::{RateLimit, RateLimiter};
pub use serve::{App, ServeLimits, serve};
pub use sse::{Binding, sse_response};
pub use task::failed_status;
