//! Floor 0, the wire model: the core crate's (`a2a-error-core`: error objects written and
//! read, ids, headers, trace context, hops; no I/O, no async), named here by its modules so
//! that every floor above writes `crate::wire::…`, and the parts of the floor that need more
//! than the core: `StandardError` (whose axum, SDK and tonic impls the derive emits where
//! those features are), the gRPC details and the SDK's ProtoJSON.
// Each floor above names some of the core's modules; with features left out, or in tests,
// the rest lie idle.
#![allow(unused_imports)]

pub use a2a_error_core::{
    bad_request, chain, code, data, error, headers, hex, jsonrpc, method, object, received, remote,
    scratch, text, trace, view,
};

#[cfg(feature = "grpc")]
pub mod grpc;
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub mod protojson;
#[cfg(feature = "into-response")]
#[doc(hidden)]
pub mod rest;
#[doc(hidden)]
pub mod standard;
