//! Floor 1, a call: what it is ([`Call`]) and what it ends in ([`Reply`], [`ClientError`]),
//! what every layer reads of any request ([`Request`]) and of any failure ([`Classify`]), and
//! the [`Transport`] that sends a call once to an agent over one binding, within
//! [`ReplyLimits`]. Public as [`crate::client`], beside the typed client (floor 3) that
//! stacks the layers over it.
//!
//! This floor knows nothing of retries or breakers: those are layers of
//! [`resilience`](crate::resilience) stacked over a transport.

mod classify;
mod downstream;
mod error;
mod flow;
#[cfg(feature = "grpc")]
pub(crate) mod grpc;
mod http;
pub(crate) mod jsonrpc;
mod request;
pub(crate) mod rest;
mod transport;

pub use classify::{Classify, FromLayer, Outcome};
pub(crate) use downstream::CHAIN_BYTES;
pub use downstream::Downstream;
pub use error::{BoxError, ClientError, ErrorReply, ResponseHead, Timeout};
#[cfg(test)]
pub(crate) use flow::ReplyFuture;
pub use flow::{Call, EventStream, RawJson, Reply};
pub(crate) use http::DEFAULT_VERSION;
pub use http::ReplyLimits;
pub(crate) use request::observed;
pub use request::{Request, TimeLimit};
pub use transport::Transport;
