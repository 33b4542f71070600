//! Typed, retry-aware errors for Rust agents that speak A2A (Agent2Agent) over JSON-RPC 2.0 and
//! HTTP+JSON.
//!
//! Annotate your error enum with [`#[derive(A2aError)]`](derive@A2aError) (its page is the
//! attribute reference) and it goes on the wire as an A2A 1.0 error object and comes back from
//! a peer as the same enum:
//!
//! ```
//! use a2a_error::{A2aError, FromErrorObject};
//!
//! #[derive(Debug, thiserror::Error, A2aError)]
//! pub enum AgentError {
//!     #[error("task {task_id} missing")]          // Display: logs only
//!     #[a2a(code = TASK_NOT_FOUND)]
//!     TaskNotFound { #[a2a(data)] task_id: String },
//!     #[error("quota exhausted")]
//!     #[a2a(code = RATE_LIMITED, retry_after = 10)]
//!     RateLimited,
//! }
//!
//! let object = AgentError::RateLimited.to_error_object();
//! assert_eq!(object.code, -32052);
//! assert!(matches!(AgentError::from_error_object(&object), Some(AgentError::RateLimited)));
//! ```
//!
//! The crate is built in floors, each standing only on the ones below:
//!
//! | floor | where | what |
//! |---|---|---|
//! | 0 | the crate root, [`code`] | the wire model, no I/O: [`A2aError`], [`ErrorObject`], [`RemoteError`], [`StandardError`], [`WireProfile`] |
//! | 1 | [`server`] (feature `axum`) | the JSON-RPC endpoint [`server::JsonRpc`], REST error responses, SSE, limits, dedup |
//! | 1 | [`client`] (feature `client`) | [`client::Call`], [`client::ClientError`], the HTTP [`client::Transport`]; [`client::Request`] and [`client::Classify`], what every layer reads of any request and any failure |
//! | 2 | [`resilience`] (feature `client`) | tower layers over any service: [`resilience::TotalTimeoutLayer`], [`resilience::RetryLayer`], [`resilience::breaker::CircuitBreakerLayer`], [`resilience::BulkheadLayer`], [`resilience::AttemptTimeoutLayer`], stacked by [`resilience::Stack`]; and across callees: [`resilience::FanOut`], [`resilience::Fallback`] |
//! | 3 | [`Client`], [`dependency`] (feature `client`) | the typed client of agents ([`ClientBuilder`]); the same stack for model providers, tools and any other call ([`dependency::HttpDependency`], [`dependency::Dependency`]) |
//! | 4 | [`sdk`] (feature `sdk`) | the bridge to the official Rust SDK |
//!
//! Across the floors: a handler's deadline is inherited by the calls it makes
//! ([`with_deadline`] for tasks you spawn), and every metric name is listed in [`observe`].
//!
//! Features: `axum` (the server), `client` (the client over plain HTTP), and the client's TLS:
//! `rustls` (with aws-lc-rs, the default), `rustls-no-provider` (bring your own crypto
//! provider, e.g. ring) or `native-tls`. `default = ["axum", "client", "rustls"]`; a server
//! that calls no agent needs only `axum`.
//!
//! The guides are in [`guide`]: [errors](guide::errors), [serving](guide::serving),
//! [calling](guide::calling), [chains](guide::chains), [dependencies](guide::dependencies), [testing](guide::testing).
#![deny(missing_docs)]

pub use a2a_error_runtime::*;

pub use a2a_error_derive::A2aError;

/// The guides: how to use each part, with examples that are compiled and run as doctests.
/// The same text is in the repository's `docs/guides/`.
pub mod guide {
    #[doc = include_str!("../docs/guides/errors.md")]
    pub mod errors {}

    #[doc = include_str!("../docs/guides/serving.md")]
    pub mod serving {}

    #[doc = include_str!("../docs/guides/calling.md")]
    pub mod calling {}

    #[doc = include_str!("../docs/guides/chains.md")]
    pub mod chains {}

    #[doc = include_str!("../docs/guides/dependencies.md")]
    pub mod dependencies {}

    #[doc = include_str!("../docs/guides/testing.md")]
    pub mod testing {}
}

// The README's and the attribute reference's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(doctest)]
#[doc = include_str!("../a2a-error-derive/src/attributes.md")]
struct AttributeReferenceDoctests;
