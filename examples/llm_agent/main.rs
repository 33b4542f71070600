//! An agent on the official Rust SDK whose executor calls a model provider over HTTP, with a
//! fallback model and a search tool, every call under a2a-error's layers:
//! `cargo run --example llm_agent -- --addr HOST:PORT --model URL [--fallback-model URL]
//! [--tool URL] [--mcp URL] [--attempt-timeout-ms N] [--first-token-timeout-ms N]
//! [--idle-timeout-ms N] [--expected-output-tokens N] [--redis URL]
//! [--caller-tokens-per-minute N]`.
//!
//! - JSON-RPC at `POST /`, the REST routes, the card at `/.well-known/agent-card.json`,
//!   Prometheus text at `GET /metrics`; logs to stderr; its spans over OTLP when
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
//! - Each message's text T goes to `POST {model}/chat/completions` as
//!   `{"model":"primary","messages":[{"role":"user","content":T}]}` (`"fallback"` for the
//!   fallback model); the answer is a message with `choices[0].message.content`.
//! - With `--tool`, T = `search:Q` first asks `GET {tool}/search?q=Q`; its `{"result": R}`
//!   goes to the model as `tool: R\nuser: search:Q`, or `tool unavailable\nuser: search:Q`
//!   when the tool fails or its circuit is open (the answer is then marked degraded).
//! - With `--mcp` (a streamable HTTP MCP endpoint), T = `mcp:NAME:Q` first calls the MCP tool
//!   NAME with `{"q": Q}` (`a2a_error::dependency::McpDependency`: a session initialized on
//!   first use and again after a 404, the tools listed once per session, a breaker per tool,
//!   `tools/call` retried only when it cannot have run, `notifications/cancelled` for a call
//!   left running). The model gets `tool: R\nuser: T` (R the result's text parts joined with
//!   newlines), `tool error: R\nuser: T` for an `isError` result (R at most 4096 bytes), or
//!   `tool unavailable\nuser: T`; the last two mark the answer degraded.
//! - A SendStreamingMessage asks for a streamed answer (`"stream":true`, with
//!   `"stream_options":{"include_usage":true}`) and forwards each token as it comes, after
//!   the Task (the stream's first event), one artifact appended, the task COMPLETED at the
//!   end (see `a2a_error::sdk::forward_stream`):
//!   before the first token a failure is retried or replaced as for a whole reply, each
//!   attempt bounded by `--first-token-timeout-ms` (default 10000) and, with a fallback, the
//!   primary's by its share (60 %) of the caller's deadline; after it, a cut, an
//!   in-band error or a silence longer than `--idle-timeout-ms` (default 30000) ends the task
//!   FAILED with `MODEL_STREAM_INTERRUPTED`. `--attempt-timeout-ms` bounds whole replies only.
//! - Every model reply's rate-limit headers (OpenAI's `x-ratelimit-*`, Anthropic's
//!   `anthropic-ratelimit-*`, the IETF `RateLimit` and `RateLimit-Policy`) are kept: while a
//!   model's stated remaining requests are 0, or its remaining tokens are below a call's estimate (the body's bytes / 4
//!   plus `--expected-output-tokens`, default 256), and its reset has not passed, it gets no
//!   request: the fallback is asked at once (degraded), or without one the call waits for the
//!   reset when it comes before the caller's deadline (else 30 s), or the caller gets
//!   `RATE_LIMITED` with `retryDelay` the time to the reset. A spent quota (OpenAI's
//!   `insufficient_quota`, 402, `budget_exceeded`, a 403 naming a quota) is sent once, and
//!   without a fallback passed on as `MODEL_QUOTA_EXHAUSTED`. With `--redis URL`, replicas
//!   given the same URL keep one quota per model (Redis down: each its own).
//! - With `--caller-tokens-per-minute N`, each caller (its `Authorization` credential, or its
//!   address without one) has N model tokens in any minute, across both models, counted as
//!   the models' `usage` reports them (until then, as estimated): a caller that used them is
//!   refused with `RATE_LIMITED` (REST: 429, `Retry-After`, `RateLimit`, `RateLimit-Policy`)
//!   and `retryDelay` the time until its minute frees enough, with no model request; other
//!   callers are served. With `--redis`, the budget is one across the replicas.
//! - Retries, breakers, the fallback (marked degraded: `metadata.degraded` with the step that
//!   answered) and the errors (`MODEL_UNAVAILABLE` with RetryInfo when a delay is known,
//!   `MODEL_REJECTED`, `DEADLINE_EXCEEDED`) are the library's defaults; see
//!   `docs/guides/dependencies.md`.

mod app;
#[path = "../shared/metrics.rs"]
mod metrics;
#[path = "../shared/telemetry.rs"]
mod telemetry;

use std::time::Duration;

use a2a_error::server::{ServeLimits, serve};

const USAGE: &str = "usage: llm_agent --addr HOST:PORT --model URL [--fallback-model URL] \
                     [--tool URL] [--mcp URL] [--attempt-timeout-ms N] \
                     [--first-token-timeout-ms N] [--idle-timeout-ms N] \
                     [--expected-output-tokens N] [--redis URL] \
                     [--caller-tokens-per-minute N]";

/// `value` of flag `flag` as a positive number of milliseconds, or the usage and exit 2.
fn millis(flag: &str, value: &str) -> Duration {
    match value.parse::<u64>() {
        Ok(ms) if ms > 0 => Duration::from_millis(ms),
        _ => fail(&format!("{flag}: not a positive integer: {value}\n{USAGE}")),
    }
}

/// `value` of flag `flag` as a positive number of tokens, or the usage and exit 2.
fn tokens(flag: &str, value: &str) -> u64 {
    match value.parse::<u64>() {
        Ok(tokens) if tokens > 0 => tokens,
        _ => fail(&format!("{flag}: not a positive integer: {value}\n{USAGE}")),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(2)
}

#[tokio::main]
async fn main() {
    a2a_error::server::return_freed_memory();
    let _telemetry = telemetry::init("llm_agent", std::io::stderr);
    let mut args = std::env::args().skip(1);
    let (mut addr, mut model, mut fallback, mut tool, mut mcp) = (None, None, None, None, None);
    let mut waits = app::Waits {
        attempt: Duration::from_millis(10_000),
        first_token: Duration::from_millis(10_000),
        idle: Duration::from_millis(30_000),
        expected_output_tokens: 256,
        shared_quota: None,
        caller_budget: None,
    };
    let mut caller_tokens = None;
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--addr", Some(value)) => addr = Some(value),
            ("--model", Some(value)) => model = Some(value),
            ("--fallback-model", Some(value)) => fallback = Some(value),
            ("--tool", Some(value)) => tool = Some(value),
            ("--mcp", Some(value)) => mcp = Some(value),
            (flag @ "--attempt-timeout-ms", Some(value)) => waits.attempt = millis(flag, &value),
            (flag @ "--first-token-timeout-ms", Some(value)) => {
                waits.first_token = millis(flag, &value)
            }
            (flag @ "--idle-timeout-ms", Some(value)) => waits.idle = millis(flag, &value),
            ("--redis", Some(url)) => match a2a_error::dependency::SharedQuota::connect(&url) {
                Ok(shared) => waits.shared_quota = Some(shared),
                Err(error) => fail(&format!("--redis: {error}")),
            },
            (flag @ "--expected-output-tokens", Some(value)) => {
                waits.expected_output_tokens = tokens(flag, &value)
            }
            (flag @ "--caller-tokens-per-minute", Some(value)) => {
                caller_tokens = Some(tokens(flag, &value))
            }
            _ => fail(USAGE),
        }
    }
    let (Some(addr), Some(model)) = (addr, model) else {
        fail(USAGE)
    };
    if let Some(tokens) = caller_tokens {
        let budget = a2a_error::dependency::CallerBudget::per_minute(tokens);
        waits.caller_budget = Some(match &waits.shared_quota {
            Some(shared) => budget.shared(shared),
            None => budget,
        });
    }
    // Installed first: the breakers report their state as they are made.
    let prometheus = metrics::install();
    let deps = app::Dependencies::new(
        &model,
        fallback.as_deref(),
        tool.as_deref(),
        mcp.as_deref(),
        waits,
    );
    let deps = match deps {
        Ok(deps) => deps,
        Err(error) => fail(&error.to_string()),
    };
    let listener = match tokio::net::TcpListener::bind(&addr).await {
        Ok(listener) => listener,
        Err(error) => fail(&format!("cannot listen on {addr}: {error}")),
    };
    // The address bound, which differs from `--addr` for port 0.
    let addr = listener
        .local_addr()
        .map_or(addr, |bound| bound.to_string());
    let router = app::bridge(&format!("http://{addr}"), deps)
        .router()
        .merge(metrics::route(prometheus));
    tracing::info!("LLM agent listening on http://{addr}");
    if let Err(error) = serve(listener, router, ServeLimits::default()).await {
        eprintln!("server error: {error}");
        std::process::exit(1);
    }
}
