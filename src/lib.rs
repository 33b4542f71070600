#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub use a2a_error_runtime::*;

/// `#[derive(A2aError)]`: see the crate documentation for the attributes.
pub use a2a_error_derive::A2aError;
