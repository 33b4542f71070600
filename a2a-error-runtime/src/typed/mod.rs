//! Floor 3: the typed [`Client`](crate::Client), which stacks the resilience layers over a
//! transport, and its builder.

mod builder;
mod client;

pub(crate) use builder::check_tls;
pub use builder::{BuildError, ClientBuilder};
pub use client::Client;
