//! What `#[derive(A2aError)]` generates code against. Not public API: it may change in any
//! release without notice. Generated code names everything through
//! `::a2a_error::__private::…` so the runtime can change its internals freely.
//!
//! The wire model's part is the core's (`a2a_error_core::__private`); the impls the derive
//! emits for axum, the official SDK and tonic are here, each behind its macro, emitted only
//! when the runtime has the feature.

pub use a2a_error_core::__private::*;

#[cfg(feature = "axum")]
pub use crate::server::rest::error_response as rest_error_response;
#[cfg(feature = "axum")]
pub use axum;

/// Emits its input when the runtime has the `axum` feature, nothing otherwise: the derive
/// wraps its `IntoResponse` impl in it, so users never enable the feature themselves.
#[cfg(feature = "axum")]
#[doc(hidden)]
#[macro_export]
macro_rules! __a2a_with_axum {
    ($($tokens:tt)*) => { $($tokens)* };
}

/// Emits its input when the runtime has the `axum` feature, nothing otherwise.
#[cfg(not(feature = "axum"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __a2a_with_axum {
    ($($tokens:tt)*) => {};
}

pub use crate::__a2a_with_axum as with_axum;

/// A derived error as the SDK's `A2AError`, with its full text logged first: the `A2AError`
/// carries only the public message, so this is the last place the `Display` text (and its
/// source chain) can reach the operator.
#[cfg(feature = "sdk")]
pub fn sdk_error<E: A2aError + ?Sized>(err: &E) -> a2a::A2AError {
    crate::server::log::handed_over(err);
    crate::sdk_errors::to_sdk(err)
}
#[cfg(feature = "sdk")]
pub use a2a as sdk_a2a;

/// Emits its input when the runtime has the `sdk` feature, nothing otherwise: the derive
/// wraps its `From<Enum> for a2a::A2AError` impl in it.
#[cfg(feature = "sdk")]
#[doc(hidden)]
#[macro_export]
macro_rules! __a2a_with_sdk {
    ($($tokens:tt)*) => { $($tokens)* };
}

/// Emits its input when the runtime has the `sdk` feature, nothing otherwise.
#[cfg(not(feature = "sdk"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __a2a_with_sdk {
    ($($tokens:tt)*) => {};
}

pub use crate::__a2a_with_sdk as with_sdk;

/// A derived error as a gRPC status, with its full text logged first (the status carries only
/// the public message).
#[cfg(feature = "grpc")]
pub fn grpc_error<E: A2aError + ?Sized>(err: &E) -> tonic::Status {
    crate::server::log::handed_over(err);
    crate::grpc::to_status(err)
}
#[cfg(feature = "grpc")]
pub use tonic as grpc_tonic;

/// Emits its input when the runtime has the `grpc` feature, nothing otherwise: the derive
/// wraps its `From<Enum> for tonic::Status` impl in it.
#[cfg(feature = "grpc")]
#[doc(hidden)]
#[macro_export]
macro_rules! __a2a_with_grpc {
    ($($tokens:tt)*) => { $($tokens)* };
}

/// Emits its input when the runtime has the `grpc` feature, nothing otherwise.
#[cfg(not(feature = "grpc"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __a2a_with_grpc {
    ($($tokens:tt)*) => {};
}

pub use crate::__a2a_with_grpc as with_grpc;
