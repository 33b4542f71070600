//! The runtime behind `#[derive(A2aError)]`: the A2A error wire model.
//!
//! Use it through the `a2a-error` crate, which re-exports everything here together with the
//! derive. This ground floor has no I/O and no async: an error value becomes an
//! [`ErrorObject`] (or its JSON bytes) and a received [`ErrorObject`] becomes a typed error.
#![deny(missing_docs)]

// The derive names `::a2a_error::__private`; this lets `StandardError`, written with the
// derive inside this crate, resolve that path to this crate's own `__private`.
extern crate self as a2a_error;

pub mod bad_request;
#[cfg(feature = "client")]
pub mod client;
pub mod code;
pub mod data;
pub mod encode;
pub mod error;
pub mod headers;
pub mod jsonrpc;
pub mod object;
pub mod remote;
#[cfg(feature = "client")]
pub mod retry;
#[cfg(feature = "axum")]
pub mod server;
pub mod spec;
pub mod standard;

#[doc(hidden)]
pub mod __private;

#[cfg(all(test, feature = "client"))]
mod hostile_input;

pub use bad_request::{BadRequest, FieldViolation};
pub use data::DataSink;
pub use error::{A2aError, Category, FromErrorObject, RetryHint};
pub use object::{ErrorObject, WireProfile};
pub use remote::RemoteError;
pub use spec::ErrorSpec;
pub use standard::{StandardError, StandardErrorKind};
