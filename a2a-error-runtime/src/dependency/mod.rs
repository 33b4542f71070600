//! Floor 3: everything an agent calls that is not another agent (a model provider, a tool, a
//! database) under the same layers, classification, deadlines, metrics and errors as calls to
//! agents. The guide is [`guide::dependencies`](../guide/dependencies/index.html) in the
//! `a2a-error` crate.
//!
//! - [`HttpDependency`]: a client for a service over HTTP, classifying statuses as the
//!   official model-provider SDKs do.
//! - [`Dependency`]: any call, an async closure or a `tower::Service`, whose error is
//!   [classified](crate::resilience::Classify).
//! - `McpDependency` (feature `mcp`): a client of an MCP server's tools over streamable
//!   HTTP, with a breaker per tool, safe retries, sessions that recover and cancellation.
//! - `PushSender` (feature `push`): push notifications to webhooks, with Standard Webhooks'
//!   headers and signature, a breaker and a bulkhead per receiver, and never inside the
//!   network.
//! - [`Failure`]: what such a call ends in (the callee's error, or a layer's);
//!   [`DependencyFailed`] passes it on to this agent's caller as this agent's own error.

// Named for the type it holds, so that `Dependency` is found where its name says.
#[allow(clippy::module_inception)]
mod dependency;
mod failure;
mod http;
#[cfg(feature = "mcp")]
pub mod mcp;
mod op;
mod passed_on;
#[cfg(feature = "push")]
pub mod push;
mod record;

pub use dependency::{Dependency, DependencyBuilder, DependencyService, OpCall, OpSettings};
pub use failure::Failure;
#[doc(hidden)]
pub use http::QuotaProbe;
#[cfg(feature = "redis")]
pub use http::SharedQuota;
pub use http::{
    AnthropicMessages, AnyEvent, CallerBudget, EXCERPT_BYTES, HttpCall, HttpDependency,
    HttpDependencyBuilder, HttpError, HttpFailure, HttpReply, HttpServiceSettings, HttpStream,
    InBand, Interruption, MAX_VALUE_BYTES, OpenAiChat, Read, SCANNED_BYTES, StatusFailure,
    StreamEvent, StreamFormat, StreamInterrupted, for_caller,
};
#[cfg(feature = "mcp")]
pub use mcp::{McpDependency, McpDependencyBuilder, McpError, McpFailure, ToolOutcome};
pub use op::Op;
pub use passed_on::{DependencyFailed, RATE_LIMIT_POLICY_KEY};
#[cfg(feature = "push")]
pub use push::{Delivery, PushSender, PushSenderBuilder, Receiver};
