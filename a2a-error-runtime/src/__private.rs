//! What `#[derive(A2aError)]` generates code against. Not public API: it may change in any
//! release without notice. Generated code names everything through
//! `::a2a_error::__private::…` so the runtime can change its internals freely.
//!
//! The wire model's part is the core's (`a2a_error_core::__private`); the impls the derive
//! emits for axum, the official SDK and tonic are here, each behind its macro, emitted only
//! when the runtime has the feature.

pub use a2a_error_core::__private::*;

/// The REST error response of a derived error, made from its [`Parts`]: the encoder and the
/// headers are compiled once, here, not again in each user's crate for its own type.
#[cfg(feature = "into-response")]
pub fn rest_error_response<E: A2aError>(err: &E) -> axum_core::response::Response {
    parts_response(&Parts::of(err))
}

// Not generic: the one instance of the response for `Parts`, made here; called through a
// generic, `error_response::<Parts>` would be compiled again in the user's crate in release.
#[cfg(feature = "into-response")]
fn parts_response(parts: &Parts<'_>) -> axum_core::response::Response {
    crate::wire::rest::error_response(parts)
}

/// What the derive's `IntoResponse` impl names (`axum::response::…`): axum's own traits, from
/// `axum-core`, which axum re-exports.
#[cfg(feature = "into-response")]
pub use axum_core as axum;

/// Emits its input when the runtime has the `into-response` feature (on by default, and with
/// `axum`), nothing otherwise: the derive wraps its `IntoResponse` impl in it, so users never
/// enable the feature themselves.
#[cfg(feature = "into-response")]
#[doc(hidden)]
#[macro_export]
macro_rules! __a2a_with_axum {
    ($($tokens:tt)*) => { $($tokens)* };
}

/// Emits its input when the runtime has the `into-response` feature, nothing otherwise.
#[cfg(not(feature = "into-response"))]
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
