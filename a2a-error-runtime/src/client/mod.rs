//! The client side: everything a call to another agent can end in ([`ClientError`]), the
//! JSON-RPC and HTTP+JSON transports (`tower::Service<Call>`), and the typed [`Client`] that
//! puts them behind the [`Retry`](crate::retry::Retry) decorator.
//!
//! A stack is plain tower: `Retry<JsonRpcTransport<E>>`, or any layers of your own around a
//! transport, then [`Client::from_service`].

mod call;
mod error;
mod http;
pub(crate) mod jsonrpc;
pub(crate) mod rest;
mod typed;

pub use call::{Call, EventStream, Reply};
pub use error::{BoxError, ClientError, ErrorReply, HttpReply, Timeout};
pub use http::{DEADLINE_HEADER, DEFAULT_VERSION, ReplyLimits, VERSION_HEADER};
pub use jsonrpc::JsonRpcTransport;
pub use rest::RestTransport;
pub use typed::{BuildError, Client, ClientBuilder};
