//! Floor 0, the wire model: an error value becomes an [`ErrorObject`](crate::ErrorObject) (or
//! its JSON bytes), and received bytes become an `ErrorObject`, a
//! [`RemoteError`](crate::RemoteError) or the user's own enum. No I/O, no async, nothing about
//! HTTP beyond the names and values of its headers.
//!
//! The crate root re-exports the public items; everything else here is for the floors above.
//! With one of them left out by features, the half of this floor only it uses lies idle.
#![cfg_attr(not(all(feature = "axum", feature = "client")), allow(dead_code))]

pub(crate) mod bad_request;
pub(crate) mod chain;
pub mod code;
pub(crate) mod data;
pub(crate) mod error;
#[cfg(feature = "grpc")]
pub mod grpc;
pub(crate) mod headers;
pub(crate) mod hex;
pub(crate) mod jsonrpc;
pub(crate) mod method;
pub(crate) mod object;
#[cfg(feature = "sdk")]
pub(crate) mod protojson;
pub(crate) mod received;
pub(crate) mod remote;
#[cfg(feature = "axum")]
pub(crate) mod scratch;
pub(crate) mod spec;
pub(crate) mod standard;
pub(crate) mod text;
pub(crate) mod trace;
pub(crate) mod view;
