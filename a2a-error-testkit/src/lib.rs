//! Test doubles for agents built with a2a-error, to prove in your own CI that your agent
//! survives peers and dependencies that fail: add it as a dev-dependency.
//!
//! - [`FaultAgent`]: an A2A agent on loopback (JSON-RPC, HTTP+JSON, SSE, and gRPC with feature
//!   `grpc`) answering every call
//!   from a script: a result, an A2A error with its reason, metadata and RetryInfo, a bare
//!   HTTP status, a delay, a reset connection, a black hole, a trickle, malformed bytes, a
//!   stream that fails after N events. It records what it received (method, headers,
//!   deadline, messageId, `traceparent`).
//! - [`FaultService`]: an HTTP dependency on loopback (a model provider, a tool) answering
//!   from a script: statuses, `Retry-After`, `retry-after-ms`, `x-should-retry`, delays.
//! - [`FaultMcp`]: an MCP server on loopback (streamable HTTP) answering tool calls from a
//!   script: results, `isError` results, JSON-RPC errors, statuses with `Retry-After`, hangs,
//!   a lost connection, progress, answers as JSON or SSE, and a restart that forgets the
//!   sessions (404). It records every message, `notifications/cancelled` included.
//! - [`ChaosLayer`]: failures and latency injected at a rate, seeded, into any tower stack.
//! - [`RedisServer`]: a real `redis-server` of the test's own, which can be frozen, for the
//!   stores replicas share.
//!
//! The guide is `docs/guides/testing.md` in the repository (`a2a_error::guide::testing`).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod agent;
mod answer;
mod chaos;
#[cfg(feature = "grpc")]
mod grpc;
mod mcp;
mod port;
mod redis;
mod script;
mod service;

pub use agent::FaultAgent;
pub use answer::{Answer, ErrorAnswer};
pub use chaos::{Chaos, ChaosLayer};
pub use mcp::{FaultMcp, McpAnswer, McpReceived};
pub use port::{closed_url, free_port};
pub use redis::RedisServer;
pub use script::Received;
pub use service::{FaultService, HttpAnswer, HttpReceived};
