//! Serving A2A over axum 0.8 (feature `axum`): a spec-exact JSON-RPC 2.0 endpoint, REST error
//! responses, SSE streams that end in an error event, task-level failures, and a dedup cache
//! that makes client retries of `SendMessage` safe.

mod body;
mod dedup;
pub(crate) mod endpoint;
pub(crate) mod log;
mod memory;
mod params;
pub(crate) mod quota;
#[cfg(feature = "sdk")]
mod rate;
pub mod rest;
pub mod scope;
pub(crate) mod serve;
pub(crate) mod sse;
mod task;
mod version;

#[cfg(feature = "redis")]
pub use dedup::RedisStore;
#[cfg(feature = "sdk")]
pub(crate) use dedup::fingerprint;
#[cfg(all(feature = "redis", feature = "sdk"))]
pub(crate) use dedup::redis_millis;
pub use dedup::{Dedup, DedupError, DedupStore, MemoryStore, Refusal, StoreError, StoreFailure};
pub use endpoint::{AdaptiveLimit, Handler, JsonRpc, RequestContext, StreamHandler};
pub use memory::return_freed_memory;
#[cfg(feature = "sdk")]
pub use rate::{RateLimit, RateLimiter};
pub use serve::{ServeLimits, serve};
pub use sse::{Binding, sse_response};
pub use task::failed_status;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;

/// A response with a JSON body (`application/json`, as JSON-RPC replies are sent).
pub(crate) fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Content type of A2A JSON bodies (REST replies use it; `application/json` is accepted).
pub const A2A_JSON: &str = "application/a2a+json";

/// Whether a request says its body is JSON (`application/json` or `application/a2a+json`).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return false;
    };
    // What nearly every client sends, compared as bytes before anything is parsed.
    if value.as_bytes() == b"application/json" {
        return true;
    }
    let Ok(value) = value.to_str() else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json") || essence.eq_ignore_ascii_case(A2A_JSON)
}
