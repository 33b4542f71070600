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
//! Where things are: the wire model at the crate root ([`code`], [`A2aError`], [`ErrorObject`],
//! [`RemoteError`], [`StandardError`]); [`server`] (feature `axum`: the JSON-RPC endpoint, REST
//! error responses, SSE, limits, dedup); [`client`] (feature `client`: a call, its errors, the
//! transports); [`resilience`] (the layers, over any call, and [`resilience::Classify`], the
//! one reading of a failure every layer consults); [`Client`] (agents) and [`dependency`] (models, tools, any other
//! call); `sdk` (feature `sdk`: the bridge to the official Rust SDK). How they stand on each
//! other is the [architecture](https://github.com/a2a-error/a2a-error/blob/main/docs/architecture.md).
//!
//! Across the floors: a handler's deadline is inherited by the calls it makes
//! ([`with_deadline`] for tasks you spawn), and every metric name is listed in [`observe`].
//!
//! Features: `default = ["into-response"]`, what the first uses need (the derive and its axum
//! `IntoResponse`, on `axum-core` alone); everything else is one feature away: `axum` (the
//! endpoint, `serve`, SSE, dedup), `client` (the client over plain HTTP), the client's TLS, none by default so that nothing needs a C compiler until
//! asked (`rustls` with aws-lc-rs, `rustls-no-provider` with a crypto provider of your own such
//! as ring, or `native-tls`; a build without TLS refuses `https` URLs with
//! `BuildError::TlsNotEnabled`), `sdk`, `grpc`, `redis`, `mcp`, `push`, `prometheus`, and
//! `otel` (the spans OpenTelemetry's, one trace across processes:
//! [observability](guide::observability)). The crates each pulls in: the README's table.
//!
//! The guides are in [`guide`]: [errors](guide::errors), [serving](guide::serving),
//! [calling](guide::calling), [chains](guide::chains), [dependencies](guide::dependencies),
//! [testing](guide::testing), [observability](guide::observability).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// These pages and the guides name every feature's modules; with a feature off, its links have
// nothing to point at (docs.rs, and the check with every feature on, resolve them all).
#![cfg_attr(
    not(all(
        feature = "axum",
        feature = "client",
        feature = "sdk",
        feature = "mcp",
        feature = "push"
    )),
    allow(rustdoc::broken_intra_doc_links)
)]

pub use a2a_error_runtime::*;

/// The bridge to the official Rust A2A SDK (feature `sdk`): the `a2a-error-sdk` crate.
#[cfg(feature = "sdk")]
#[doc(inline)]
pub use a2a_error_sdk as sdk;

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

    #[doc = include_str!("../docs/guides/observability.md")]
    pub mod observability {}
}

// The README's and the attribute reference's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(doctest)]
#[doc = include_str!("../a2a-error-derive/src/attributes.md")]
struct AttributeReferenceDoctests;
