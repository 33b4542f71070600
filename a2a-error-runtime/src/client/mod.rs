//! The client side: what a call is ([`Call`]) and what it ends in ([`Reply`],
//! [`ClientError`]), what every layer reads of any request ([`Request`]) and of any failure
//! ([`Classify`]), and the [`Transport`]s (floor 1, in `call/`); and the typed
//! [`Client`](crate::Client) with its [`ClientBuilder`](crate::ClientBuilder) (floor 3, in
//! this folder), which stacks the resilience layers over a transport. Those two are used from
//! the crate's root.

pub(crate) mod builder;
pub(crate) mod typed;

pub use builder::AgentSettings;

pub use crate::call::{
    BoxError, Call, Classify, ClientError, Downstream, ErrorReply, EventStream, FromLayer, Outcome,
    RawJson, Reply, ReplyLimits, Request, ResponseHead, TimeLimit, Timeout, Transport,
};
