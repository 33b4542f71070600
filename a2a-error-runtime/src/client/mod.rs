//! The agent as a callee: what a call is ([`Call`]) and what it ends in ([`Reply`],
//! [`ClientError`]), the [`Transport`] that sends a call once over one binding within
//! [`ReplyLimits`], the typed [`Client`](crate::Client) over the stack its
//! [`ClientBuilder`](crate::ClientBuilder) builds, passing a failure on ([`Downstream`]), and
//! fan-out across agents ([`FanOut`]). What every layer reads of any request and any failure
//! ([`Request`](crate::resilience::Request), [`Classify`](crate::resilience::Classify)) is the
//! resilience floor's.
//!
//! The transports know nothing of retries or breakers: those are layers of
//! [`resilience`](crate::resilience) stacked over a transport.

pub(crate) mod builder;
mod classify;
mod downstream;
mod error;
mod fan_out;
mod flow;
#[cfg(feature = "grpc")]
pub(crate) mod grpc;
mod http;
pub(crate) mod jsonrpc;
pub(crate) mod rest;
mod transport;
pub(crate) mod typed;

pub use builder::AgentSettings;
pub use downstream::Downstream;
pub use error::{BoxError, ClientError, ErrorReply, ResponseHead};
pub use fan_out::{Branches, FanOut, FanOutError, FanOutResult, Settle};
#[cfg(test)]
pub(crate) use flow::ReplyFuture;
pub use flow::{Call, EventStream, RawJson, Reply};
pub use http::ReplyLimits;
pub use transport::Transport;
