//! Floor 1, the client side of HTTP: what a call is ([`Call`]) and what it ends in ([`Reply`],
//! [`ClientError`]), and the [`Transport`] that sends it once to an agent over either binding,
//! within [`ReplyLimits`].
//!
//! This floor knows nothing of retries or breakers: those are layers of
//! [`resilience`](crate::resilience) stacked over a transport, and the typed
//! [`Client`](crate::Client) puts them together.

mod call;
mod classify;
mod downstream;
mod error;
#[cfg(feature = "grpc")]
pub(crate) mod grpc;
mod http;
pub(crate) mod jsonrpc;
mod request;
pub(crate) mod rest;
pub(crate) mod sse;
mod transport;

#[cfg(test)]
pub(crate) use call::ReplyFuture;
pub use call::{Call, EventStream, RawJson, Reply};
pub use classify::{Classify, FromLayer, Outcome};
pub(crate) use downstream::CHAIN_BYTES;
pub use downstream::Downstream;
pub use error::{BoxError, ClientError, ErrorReply, ResponseHead, Timeout};
pub use http::ReplyLimits;
pub(crate) use http::{DEFAULT_VERSION, read_body};
pub use request::{Callee, Request, TimeLimit};
pub use transport::Transport;
