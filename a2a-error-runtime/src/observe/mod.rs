//! Metrics (through the `metrics` facade) and span fields, in one place so that every name is
//! written once. Names follow OpenTelemetry's semantic conventions (v1.45: the RPC
//! conventions, and `error.type`) where one exists; the series of this crate's own ideas
//! (retries, breakers, fallback, degraded answers, hedges) are under `a2a.*`.
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `rpc.client.call.duration` | histogram, seconds: a call through the typed `Client`, retries and waits included | `rpc.system.name` (`jsonrpc`, `http`, `grpc`; `a2a` over a stack of your own), `agent`, `rpc.method`, `outcome`; failed: `rpc.status_code` (the A2A code), `error.type` |
//! | `a2a.client.attempts` | histogram | `agent` |
//! | `a2a.client.retries` | counter | `agent`, `rpc.method`, `error.type` |
//! | `a2a.client.errors` | counter | `agent`, `rpc.status_code`, `error.type` |
//! | `a2a.server.errors` | counter: the JSON-RPC endpoint's error replies, those that refuse the HTTP exchange itself included, and every binding's streams that ended failed (the SDK bridge's other REST and gRPC failures are the failed series of `rpc.server.call.duration`) | `rpc.method`, `rpc.status_code`, `error.type` |
//! | `rpc.server.call.duration` | histogram, seconds (its count is the requests; a stream's duration runs to its end, and its outcome is how it ended: an error before or after its first event, or a FAILED status update, is `error` with the code and reason, and is counted in `a2a.server.errors` too): the JSON-RPC endpoint, and the SDK bridge's REST routes and gRPC service | `rpc.system.name` (`jsonrpc`, `http` for HTTP+JSON, `grpc`), `rpc.method`, `outcome`; failed: `rpc.status_code` (the A2A code, on every binding), `error.type` |
//! | `a2a.breaker.state` | gauge: 0 closed, 1 half-open, 2 open, 3 isolated | `agent` |
//! | `a2a.breaker.transitions` | counter | `agent`, `from`, `to` |
//! | `a2a.breaker.rejections` | counter | `agent` |
//! | `a2a.fallback.steps` | counter | `step`, `outcome` |
//! | `a2a.degraded` | counter | `source` |
//! | `a2a.retry.budget_exhausted` | counter: retries the retry budget refused | `agent` (or `dependency`) |
//! | `a2a.server.shed` | counter: requests refused at a limit on handlers at once (`max_concurrent`, `adaptive_concurrency`, the bridge's gRPC `max_in_flight`) | |
//! | `a2a.server.rate_limited` | counter: requests refused at their caller's rate limit (`RateLimiter`) | |
//! | `a2a.tasks.abandoned` | counter: shared tasks this replica's reaper ended FAILED because their lease lapsed (`RedisTaskStore`) | |
//! | `a2a.tasks.leases_lost` | counter: executions this replica stopped because their task's lease was lost | |
//! | `a2a.hedges` | counter | `agent`, `rpc.method` |
//! | `a2a.dependency.calls` | counter | `dependency`, `outcome`, `error.type`, `http.response.status_code` |
//! | `a2a.dependency.call.duration` | histogram, seconds | `dependency`, `outcome` |
//! | `a2a.dependency.attempts` | histogram | `dependency` |
//! | `a2a.dependency.retries` | counter | `dependency`, `error.type` |
//! | `a2a.dependency.quota.remaining` | gauge: what the dependency's replies last stated of its quota, less the calls sent since | `dependency`, `limit` (`requests`, `tokens`) |
//! | `a2a.dependency.quota.shared_unavailable` | counter: reads and writes of the quota shared on Redis that failed or took longer than their bound (the replica went on with its own view) | |
//! | `a2a.dependency.quota.held` | counter: calls held back for the stated quota | `dependency`, `outcome` (`waited` for the reset, `refused` unsent, `sent_elsewhere`: refused at once for a fallback to answer) |
//! | `a2a.dependency.budget.refused` | counter: calls refused unsent because their caller used its budget of tokens (`CallerBudget`); no caller label | `dependency` |
//! | `gen_ai.client.operation.duration` | histogram, seconds: a model's call (`HttpDependency::model`), whole or streamed, from the call to its reply (a stream: its end), retries included | `dependency`, `gen_ai.operation.name` (`chat`), `gen_ai.provider.name`, `gen_ai.request.model` (when configured); failed: `error.type` (the failure's reason, `STREAM_INTERRUPTED`, `CANCELLED`) |
//! | `gen_ai.client.operation.time_to_first_chunk` | histogram, seconds: from the call to its stream's first content event | as above, without `error.type` |
//! | `gen_ai.client.operation.time_per_output_chunk` | histogram, seconds: between a stream's content events, after the first | as above |
//! | `mcp.client.operation.duration` | histogram, seconds (its count is the requests): a request to an MCP server (`McpDependency`), retries included | `dependency`, `mcp.method.name`, `gen_ai.tool.name` (for `tools/call`: a name the server listed, at most 64, else `other`); failed: `error.type` (`TOOL_ERROR`, `TIMEOUT`, `CIRCUIT_OPEN`, JSON-RPC's `INTERNAL_ERROR`, …) |
//! | `gen_ai.client.token.usage` | histogram, tokens: what the provider's `usage` reported | as above, and `gen_ai.token.type` (`input`, `output`) |
//!
//! `error.type` is the error's reason (`AGENT_UNAVAILABLE`, `UNREACHABLE`, …). A dependency's
//! breaker reports under the `a2a.breaker.*` series with the dependency's name as `agent`.
//! `http.response.status_code` is the status of a dependency's last HTTP reply (100 to 599,
//! `other` beyond, empty when there was none).
//!
//! Every label value that a peer could choose comes from a closed set, so no peer can grow the
//! number of series (each one costs memory here and in every scraper):
//! - `error.type`: a local failure's own reason (`UNREACHABLE`, …), or a reason of the code
//!   table, else one of the first 64 other reasons seen (a user's own enum's), else `OTHER`;
//! - `rpc.status_code` (the A2A code, as OpenTelemetry's RPC conventions name it): a code of
//!   the table, else one of the first 64 others seen, else `other`;
//! - `rpc.method`: on a server, a method the endpoint registered, else `other`; on a client,
//!   an A2A method name, else one of the first 64 others seen, else `other`.
//!
//! So a process has at most (table + 64) values of each, whatever its peers send.
//!
//! The spans, each at `DEBUG` (so a log filter at `INFO` makes none), their fields
//! OpenTelemetry's (`otel.name` and `otel.kind` name them for `tracing-opentelemetry`):
//!
//! | span | OpenTelemetry name, kind | fields |
//! |---|---|---|
//! | `a2a.server.call` | the method (`other` if not served), server | `rpc.system.name`, `rpc.method`; failed: `rpc.status_code` (the A2A code, every binding), `error.type` |
//! | `a2a.client.call` | the method, client | `rpc.system.name`, `rpc.method`, `server.address` (the agent's name), `rpc.jsonrpc.request_id`; failed: `rpc.status_code`, `error.type` |
//! | `a2a.client.attempt` | internal | `http.request.resend_count` |
//! | `mcp.client.operation` | `{mcp.method.name} {tool or server}`, client | `mcp.method.name`, `gen_ai.tool.name`, `gen_ai.operation.name` (`execute_tool`), `dependency`; failed: `error.type` |
//! | `a2a.dependency.call` | the operation, client | `dependency`, `operation`, `network.protocol.name`, `http.response.status_code`; failed: `error.type` |
//!
//! Install the recorder before the first call: a retry layer registers its attempts
//! histogram on its first call and keeps the handle, so that the success path records
//! without allocating.

/// The histograms of this crate and the bucket boundaries suited to each, for an exporter
/// that needs them (Prometheus's does: without them it exports a summary, whose quantiles
/// cannot be added across replicas). OpenTelemetry's conventions define these durations as
/// histograms; the boundaries follow its advice for RPC durations, reach further for calls
/// to model providers (seconds to minutes), and count attempts one by one. The observability
/// guide installs them in Prometheus's exporter, as the example servers do.
pub const HISTOGRAMS: &[(&str, &[f64])] = &[
    (SERVER_DURATION, RPC_SECONDS),
    (CLIENT_DURATION, RPC_SECONDS),
    (DEPENDENCY_DURATION, DEPENDENCY_SECONDS),
    (CLIENT_ATTEMPTS, ATTEMPTS),
    (DEPENDENCY_ATTEMPTS, ATTEMPTS),
    (GEN_AI_DURATION, DEPENDENCY_SECONDS),
    (GEN_AI_FIRST_CHUNK, FIRST_CHUNK_SECONDS),
    (GEN_AI_PER_CHUNK, CHUNK_SECONDS),
    (GEN_AI_TOKENS, TOKENS),
    (MCP_DURATION, DEPENDENCY_SECONDS),
    (PUSH_DURATION, PUSH_SECONDS),
];

/// Boundaries of a streamed answer's time to its first chunk, in seconds: 10 ms to a minute.
/// Boundaries of the time between a stream's chunks, in seconds (OpenTelemetry's advice).
const CHUNK_SECONDS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
];

const FIRST_CHUNK_SECONDS: &[f64] = &[
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 30.0, 60.0,
];

/// Boundaries of a call's token counts, as OpenTelemetry's GenAI conventions advise.
const TOKENS: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// Boundaries of an agent's request or call durations, in seconds: 5 ms to a minute.
const RPC_SECONDS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 30.0, 60.0,
];

/// Boundaries of a dependency's call durations (a model's answer takes seconds), in seconds:
/// 10 ms to five minutes.
const DEPENDENCY_SECONDS: &[f64] = &[
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0,
];

/// Boundaries of a push notification's time from its event to its end, in seconds: 50 ms to
/// a day (a notification may wait hours for its receiver).
const PUSH_SECONDS: &[f64] = &[
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0,
];

/// Boundaries of attempts a call made: one by one up to the default policy's four, then wider.
const ATTEMPTS: &[f64] = &[1.0, 2.0, 3.0, 4.0, 6.0, 10.0];

/// The name of the server's duration histogram.
const SERVER_DURATION: &str = "rpc.server.call.duration";
/// The name of a typed client's call duration histogram.
const CLIENT_DURATION: &str = "rpc.client.call.duration";
/// OpenTelemetry's GenAI conventions (status "Development": a rename is one edit here): a
/// model call's duration, its streamed answer's time to the first chunk, and its tokens by
/// `gen_ai.token.type`.
const GEN_AI_DURATION: &str = "gen_ai.client.operation.duration";
/// OpenTelemetry's MCP conventions (status "Development"): one request to an MCP server.
const MCP_DURATION: &str = "mcp.client.operation.duration";
const GEN_AI_FIRST_CHUNK: &str = "gen_ai.client.operation.time_to_first_chunk";
const GEN_AI_PER_CHUNK: &str = "gen_ai.client.operation.time_per_output_chunk";
const GEN_AI_TOKENS: &str = "gen_ai.client.token.usage";

/// A push notification's time from its event to its end (delivered, refused, dead letter).
pub(crate) const PUSH_DURATION: &str = "a2a.push.delivery.duration";

/// The name of a dependency call's duration histogram.
const DEPENDENCY_DURATION: &str = "a2a.dependency.call.duration";
/// The name of the attempts histogram of a typed client's calls.
const CLIENT_ATTEMPTS: &str = "a2a.client.attempts";
/// The name of the attempts histogram of a dependency's calls.
const DEPENDENCY_ATTEMPTS: &str = "a2a.dependency.attempts";
/// What a dependency's replies last stated of its quota.
#[cfg(feature = "client")]
const DEPENDENCY_QUOTA_REMAINING: &str = "a2a.dependency.quota.remaining";
/// Reads and writes of the shared quota store that did not answer in time.
#[cfg(all(feature = "client", feature = "redis"))]
const DEPENDENCY_QUOTA_SHARED_UNAVAILABLE: &str = "a2a.dependency.quota.shared_unavailable";
/// Calls held back for a dependency's stated quota.
#[cfg(feature = "client")]
const DEPENDENCY_QUOTA_HELD: &str = "a2a.dependency.quota.held";
/// Calls refused for their caller's budget.
#[cfg(feature = "client")]
const DEPENDENCY_BUDGET_REFUSED: &str = "a2a.dependency.budget.refused";

/// What kind of callee a call goes to, which picks the series it is recorded under
/// (`a2a.client.*` for agents, `a2a.dependency.*` for the rest).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Callee {
    /// Another A2A agent.
    Agent,
    /// Anything else an agent calls: a model provider, a tool, a database.
    Dependency,
}

/// The `rpc.system.name` of a call or a request served: its binding, on either side.
#[cfg(any(feature = "axum", feature = "client"))]
// Which of them a build makes depends on its features; all of them with `grpc`.
#[cfg_attr(not(feature = "grpc"), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub enum System {
    /// JSON-RPC 2.0.
    JsonRpc,
    /// HTTP+JSON (REST).
    Http,
    /// gRPC.
    Grpc,
    /// A client over a stack of the caller's own, whose binding it does not know.
    Stack,
}

#[cfg(any(feature = "axum", feature = "client"))]
impl System {
    /// The label value.
    pub(crate) fn name(self) -> &'static str {
        match self {
            System::JsonRpc => "jsonrpc",
            System::Http => "http",
            System::Grpc => "grpc",
            System::Stack => "a2a",
        }
    }
}

#[cfg(feature = "client")]
mod client;
#[cfg(feature = "axum")]
mod kept;
mod labels;
#[cfg(feature = "prometheus")]
mod prometheus;
#[cfg(feature = "axum")]
mod server;

#[cfg(feature = "prometheus")]
pub use prometheus::{Prometheus, RecorderError, prometheus};

#[cfg(feature = "client")]
#[doc(hidden)]
pub use client::*;
#[cfg(feature = "client")]
pub(crate) use labels::method_label;
pub(crate) use labels::{code_label, reason_label};
#[cfg(feature = "axum")]
#[doc(hidden)]
pub use server::*;
