//! The runtime behind `#[derive(A2aError)]`. Use it through the `a2a-error` crate, which
//! re-exports everything here, one path per item, together with the derive.
//!
//! The modules are the floors of the house, each standing only on the ones below it; the one
//! table of them is the repository's
//! [architecture](https://github.com/a2a-error/a2a-error/blob/main/docs/architecture.md).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod wire;

#[cfg(feature = "axum")]
pub mod server;

#[cfg(feature = "axum")]
pub mod bounded;

#[cfg(feature = "client")]
mod http;

#[cfg(feature = "client")]
pub mod resilience;

#[cfg(feature = "client")]
pub mod client;

#[cfg(feature = "client")]
pub mod dependency;

#[cfg(feature = "sdk")]
pub mod sdk;

#[cfg(any(feature = "axum", feature = "client"))]
mod deadline;
// Every Redis client's connection settings.
#[cfg(feature = "redis")]
mod redis_connect;

#[cfg(any(feature = "axum", feature = "client"))]
mod inherited;

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

pub use wire::bad_request::{BadRequest, FieldViolation};
pub use wire::chain::Hop;
pub use wire::code;
pub use wire::data::DataSink;
pub use wire::error::{A2aError, Category, FromErrorObject, HasKind, RetryHint};
pub use wire::error::{BAD_REQUEST_TYPE, ERROR_INFO_TYPE, RETRY_INFO_TYPE};
#[cfg(feature = "grpc")]
pub use wire::grpc;
pub use wire::headers::{DEADLINE_HEADER, VERSION_HEADER};
pub use wire::jsonrpc::Id;
pub use wire::method::{method_name, method_of_route};
pub use wire::object::{ErrorObject, MAX_DATA_NODES, WireProfile};
pub use wire::received::{DataValue, ReceivedError};
pub use wire::remote::RemoteError;
pub use wire::spec::{Catalog, ErrorSpec};
pub use wire::standard::{StandardError, StandardErrorKind};
pub use wire::text::Shown;
pub use wire::view::ErrorView;

#[cfg(feature = "client")]
pub use client::builder::ClientBuilder;
#[cfg(feature = "client")]
pub use client::typed::Client;
#[cfg(feature = "client")]
pub use http::BuildError;

#[cfg(any(feature = "axum", feature = "client"))]
pub use deadline::with_deadline;
