//! Floor 1, the callee-neutral part of calling anything over HTTP: reading a reply's body
//! within a limit (`body`), reading an event stream within a limit per event (`sse`, the
//! one SSE parser), reading a reply's `Retry-After` (`retry_after`), and what building a
//! client checks ([`BuildError`]: the URL, TLS). Every kind of callee (an agent, an HTTP
//! service, a model's stream) reads its replies here and turns these errors into its own; no
//! A2A type is named on this floor.

pub(crate) mod body;
mod build;
pub(crate) mod retry_after;
pub(crate) mod sse;

pub use build::BuildError;
pub use build::HttpSettings;
pub(crate) use build::parse_url;
