//! The runtime behind `#[derive(A2aError)]`. Use it through the `a2a-error` crate, which
//! re-exports everything here, one path per item, together with the derive.
//!
//! The modules are the floors of the house, each standing only on the ones below it; the one
//! table of them is the repository's
//! [architecture](https://github.com/a2a-error/a2a-error/blob/main/docs/architecture.md).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

#[doc(hidden)]
pub mod wire;

#[cfg(feature = "axum")]
pub mod server;

#[cfg(feature = "axum")]
pub mod bounded;

#[cfg(feature = "client")]
#[doc(hidden)]
pub mod http;

#[cfg(feature = "client")]
pub mod resilience;

#[cfg(feature = "client")]
pub mod client;

#[cfg(feature = "client")]
pub mod dependency;

// The official SDK's errors both ways (the `a2a-lf` crate's `A2AError`): here, beside the
// client and dependency errors they convert, the orphan rule's only home for those `From`
// impls. The bridge (`a2a-error-sdk`) re-exports them as `sdk::to_sdk` and the rest.
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub mod sdk_errors;

#[cfg(any(feature = "axum", feature = "client"))]
#[doc(hidden)]
pub mod deadline;
// Every Redis client's connection settings.
#[cfg(feature = "redis")]
#[doc(hidden)]
pub mod redis_connect;

#[cfg(any(feature = "axum", feature = "client"))]
#[doc(hidden)]
pub mod inherited;

#[cfg(any(feature = "axum", feature = "client"))]
pub mod trace;

#[cfg(any(feature = "axum", feature = "client"))]
pub mod observe;

#[doc(hidden)]
pub mod __private;

#[cfg(all(test, feature = "client"))]
mod hostile_input;

#[cfg(all(any(test, feature = "fuzzing"), feature = "client"))]
#[doc(hidden)]
pub mod peer_input;

pub use a2a_error_core::{
    A2aError, BAD_REQUEST_TYPE, BadRequest, Catalog, Category, DEADLINE_HEADER, DataSink,
    DataValue, ERROR_INFO_TYPE, ErrorObject, ErrorSpec, ErrorView, FieldViolation, FromErrorObject,
    HasKind, Hop, Id, MAX_DATA_NODES, RETRY_INFO_TYPE, ReceivedError, RemoteError, RetryHint,
    Shown, VERSION_HEADER, WireProfile, code, method_name, method_of_route,
};
#[cfg(feature = "grpc")]
pub use wire::grpc;
pub use wire::standard::{StandardError, StandardErrorKind};

#[cfg(feature = "client")]
pub use client::builder::ClientBuilder;
#[cfg(feature = "client")]
pub use client::typed::Client;
#[cfg(feature = "client")]
pub use http::BuildError;

#[cfg(any(feature = "axum", feature = "client"))]
pub use deadline::with_deadline;
