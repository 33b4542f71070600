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
//! | `a2a.server.errors` | counter | `rpc.method`, `rpc.status_code`, `error.type` |
//! | `rpc.server.call.duration` | histogram, seconds (its count is the requests; a stream's ends when it opens): the JSON-RPC endpoint, and the SDK bridge's REST routes and gRPC service | `rpc.system.name` (`jsonrpc`, `http` for HTTP+JSON, `grpc`), `rpc.method`, `outcome`; failed: `rpc.status_code` (the A2A code, on every binding), `error.type` |
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

/// Boundaries of attempts a call made: one by one up to the default policy's four, then wider.
const ATTEMPTS: &[f64] = &[1.0, 2.0, 3.0, 4.0, 6.0, 10.0];

/// The name of the server's duration histogram.
const SERVER_DURATION: &str = "rpc.server.call.duration";
/// The name of a typed client's call duration histogram.
const CLIENT_DURATION: &str = "rpc.client.call.duration";
/// The name of a dependency call's duration histogram.
const DEPENDENCY_DURATION: &str = "a2a.dependency.call.duration";
/// The name of the attempts histogram of a typed client's calls.
const CLIENT_ATTEMPTS: &str = "a2a.client.attempts";
/// The name of the attempts histogram of a dependency's calls.
const DEPENDENCY_ATTEMPTS: &str = "a2a.dependency.attempts";

/// The `rpc.system.name` of a call or a request served: its binding, on either side.
#[cfg(any(feature = "axum", feature = "client"))]
// Which of them a build makes depends on its features; all of them with `grpc`.
#[cfg_attr(not(feature = "grpc"), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum System {
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
pub(crate) use client::*;

#[cfg(feature = "client")]
pub(crate) use labels::method_label;
pub(crate) use labels::{code_label, reason_label};

mod labels {
    use std::sync::{Arc, LazyLock, Mutex};

    use metrics::SharedString;

    /// How many values outside the code table a label may take in one process.
    const MAX_OTHERS: usize = 64;
    /// The longest value admitted to a set.
    pub(super) const MAX_LEN: usize = 48;

    /// The values of one label seen so far beyond the fixed ones: the first [`MAX_OTHERS`]
    /// are kept, later ones are told apart no more.
    struct Others(Mutex<Vec<Arc<str>>>);

    static REASONS: Others = Others(Mutex::new(Vec::new()));
    static CODES: Others = Others(Mutex::new(Vec::new()));
    #[cfg(feature = "client")]
    static METHODS: Others = Others(Mutex::new(Vec::new()));

    impl Others {
        fn admit(&self, value: &str) -> Option<SharedString> {
            let plain = value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'/' | b'.'));
            if value.is_empty() || value.len() > MAX_LEN || !plain {
                return None;
            }
            let mut seen = self
                .0
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(known) = seen.iter().find(|known| &***known == value) {
                return Some(SharedString::from(Arc::clone(known)));
            }
            if seen.len() >= MAX_OTHERS {
                return None;
            }
            let value: Arc<str> = value.into();
            seen.push(Arc::clone(&value));
            Some(SharedString::from(value))
        }
    }

    /// `reason` as an `error.type` label value.
    pub(crate) fn reason_label(reason: &str) -> SharedString {
        if let Some(row) = a2a_error_codes::by_reason(reason) {
            return SharedString::const_str(row.reason);
        }
        REASONS
            .admit(reason)
            .unwrap_or(SharedString::const_str("OTHER"))
    }

    /// `code` as an `rpc.status_code` label value.
    pub(crate) fn code_label(code: i32) -> SharedString {
        // The table's codes as text, made once: a label for every error sent.
        static TABLE_CODES: LazyLock<Vec<(i32, SharedString)>> = LazyLock::new(|| {
            a2a_error_codes::TABLE
                .iter()
                .map(|row| {
                    (
                        row.code,
                        SharedString::from_shared(Arc::from(row.code.to_string())),
                    )
                })
                .collect()
        });
        if let Some((_, label)) = TABLE_CODES.iter().find(|(known, _)| *known == code) {
            return label.clone();
        }
        let text = code.to_string();
        CODES
            .admit(&text)
            .unwrap_or(SharedString::const_str("other"))
    }

    /// A client's `method` as an `rpc.method` label value.
    #[cfg(feature = "client")]
    pub(crate) fn method_label(method: &str) -> SharedString {
        if let Some(known) = crate::wire::method::lookup(method) {
            return SharedString::const_str(known.spelled(method));
        }
        METHODS
            .admit(method)
            .unwrap_or(SharedString::const_str("other"))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn label_values_come_from_closed_sets() {
            assert_eq!(&*reason_label("RATE_LIMITED"), "RATE_LIMITED");
            assert_eq!(&*code_label(-32052), "-32052");
            #[cfg(feature = "client")]
            assert_eq!(&*method_label("tasks/get"), "tasks/get");
            assert_eq!(&*reason_label("bad\nreason"), "OTHER");
            assert_eq!(&*reason_label(&"R".repeat(49)), "OTHER");
            let mut distinct = std::collections::HashSet::new();
            for i in 0..10_000 {
                distinct.insert(reason_label(&format!("RANDOM_{i}")).to_string());
                distinct.insert(code_label(-40_000 - i).to_string());
                #[cfg(feature = "client")]
                distinct.insert(method_label(&format!("m{i}")).to_string());
            }
            // 64 of each kind at most, and the three fallbacks.
            assert!(distinct.len() <= 3 * MAX_OTHERS + 3, "{}", distinct.len());
            assert!(distinct.contains("OTHER") && distinct.contains("other"));
        }
    }
}

#[cfg(feature = "client")]
mod client {
    use std::borrow::Cow;
    use std::sync::Arc;
    use std::time::Duration;

    use metrics::SharedString;

    use crate::call::{Callee, Classify, ClientError, Reply, Request};
    use crate::wire::error::A2aError;

    /// The code and reason (`error.type`) a client error is known by in metrics and spans. A
    /// local failure's reason is one of the client's own, a closed set by construction; a
    /// peer's code and reason go through the closed sets of [`super::labels`].
    pub(crate) fn error_labels<E: A2aError + 'static>(
        error: &ClientError<E>,
    ) -> (SharedString, SharedString) {
        let hop = error.first_hop(None);
        let reason = match error.remote() {
            Some(_) => super::reason_label(&hop.reason),
            None => SharedString::const_str(error.local_reason()),
        };
        (super::code_label(hop.code), reason)
    }

    /// The span of a call through the typed client (`a2a.client.call`, at `DEBUG`): an
    /// OpenTelemetry client span named after the method.
    pub(crate) fn client_span(
        system: super::System,
        agent: &str,
        call: &crate::call::Call,
    ) -> tracing::Span {
        tracing::debug_span!(
            "a2a.client.call",
            otel.name = call.method(),
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            rpc.system.name = system.name(),
            rpc.method = call.method(),
            server.address = agent,
            rpc.jsonrpc.request_id = call.id(),
            rpc.status_code = tracing::field::Empty,
            error.r#type = tracing::field::Empty,
        )
    }

    /// The span of an attempt after the first (`a2a.client.attempt`, at `DEBUG`), the
    /// `resend`-th resend of its call.
    pub(crate) fn attempt_span(resend: u32) -> tracing::Span {
        tracing::debug_span!("a2a.client.attempt", http.request.resend_count = resend)
    }

    /// A call through the typed client ended.
    pub(crate) fn call_ended<E: A2aError + 'static>(
        system: super::System,
        agent: &Arc<str>,
        method: Cow<'static, str>,
        elapsed: Duration,
        result: &Result<Reply<E>, ClientError<E>>,
        span: &tracing::Span,
    ) {
        let method = match method {
            Cow::Borrowed(name) => SharedString::const_str(name),
            Cow::Owned(name) => super::method_label(&name),
        };
        let Err(error) = result else {
            metrics::histogram!(
                super::CLIENT_DURATION,
                "rpc.system.name" => system.name(),
                "agent" => agent.clone(),
                "rpc.method" => method,
                "outcome" => "ok"
            )
            .record(elapsed.as_secs_f64());
            return;
        };
        let (code, reason) = error_labels(error);
        metrics::histogram!(
            super::CLIENT_DURATION,
            "rpc.system.name" => system.name(),
            "agent" => agent.clone(),
            "rpc.method" => method,
            "outcome" => "error",
            "rpc.status_code" => code.clone(),
            "error.type" => reason.clone()
        )
        .record(elapsed.as_secs_f64());
        span.record("otel.status_code", "error");
        span.record("rpc.status_code", &*code);
        span.record("error.type", &*reason);
        metrics::counter!(
            "a2a.client.errors",
            "agent" => agent.clone(),
            "rpc.status_code" => code,
            "error.type" => reason
        )
        .increment(1);
    }

    /// The histogram of attempts per call to the request's callee, kept by a retry service.
    pub(crate) fn attempts_histogram(request: &impl Request) -> metrics::Histogram {
        let target = request.target().unwrap_or("").to_owned();
        match request.callee() {
            Callee::Agent => metrics::histogram!(super::CLIENT_ATTEMPTS, "agent" => target),
            Callee::Dependency => {
                metrics::histogram!(super::DEPENDENCY_ATTEMPTS, "dependency" => target)
            }
        }
    }

    /// `error`'s reason as an `error.type` label: one of the layers' and transports' own
    /// reasons, else through the closed set of [`super::labels`].
    pub(crate) fn failure_label(error: &impl Classify) -> SharedString {
        let reason = error.failure_reason();
        match LOCAL_REASONS.iter().find(|known| **known == reason) {
            Some(known) => SharedString::const_str(known),
            None => super::reason_label(reason),
        }
    }

    /// The reasons of failures that are not a peer's error reply: a closed set.
    const LOCAL_REASONS: &[&str] = &[
        "UNREACHABLE",
        "CONNECTION_LOST",
        "TIMEOUT",
        "CIRCUIT_OPEN",
        "BULKHEAD_FULL",
        "INVALID_AGENT_RESPONSE",
        "REPLY_TOO_LARGE",
        "INVALID_CALL",
        "DOWNSTREAM_FAILED",
        "HTTP_STATUS",
        "INVALID_RESPONSE",
        "FAILED",
    ];

    /// A call to a dependency (not an agent) under way: its span, and what is recorded when it
    /// ends.
    pub(crate) struct DependencyCall {
        name: SharedString,
        started: std::time::Instant,
        span: tracing::Span,
    }

    impl DependencyCall {
        /// A call to the dependency `name` starts; `protocol` is `http` for HTTP dependencies.
        pub(crate) fn start(
            name: &Arc<str>,
            operation: &str,
            protocol: Option<&'static str>,
        ) -> Self {
            let span = tracing::debug_span!(
                "a2a.dependency.call",
                otel.name = operation,
                otel.kind = "client",
                otel.status_code = tracing::field::Empty,
                dependency = &**name,
                operation = operation,
                network.protocol.name = protocol,
                http.response.status_code = tracing::field::Empty,
                error.r#type = tracing::field::Empty,
            );
            DependencyCall {
                name: SharedString::from(Arc::clone(name)),
                started: std::time::Instant::now(),
                span,
            }
        }

        /// The call's span.
        pub(crate) fn span(&self) -> &tracing::Span {
            &self.span
        }

        /// The call ended, with `error` or not; `status` is the HTTP status of its last reply.
        pub(crate) fn ended(self, error: Option<&impl Classify>, status: Option<u16>) {
            let outcome = if error.is_some() { "error" } else { "ok" };
            let reason = match error {
                Some(error) => failure_label(error),
                None => SharedString::const_str(""),
            };
            let status = status_label(status);
            if error.is_some() {
                self.span.record("otel.status_code", "error");
                self.span.record("error.type", &*reason);
            }
            if !status.is_empty() {
                self.span.record("http.response.status_code", &*status);
            }
            metrics::histogram!(
                super::DEPENDENCY_DURATION,
                "dependency" => self.name.clone(),
                "outcome" => outcome
            )
            .record(self.started.elapsed().as_secs_f64());
            metrics::counter!(
                "a2a.dependency.calls",
                "dependency" => self.name,
                "outcome" => outcome,
                "error.type" => reason,
                "http.response.status_code" => status
            )
            .increment(1);
        }
    }

    /// An HTTP status as a label value: 100 to 599 (a closed set), else `other`; empty when
    /// there was no reply.
    fn status_label(status: Option<u16>) -> SharedString {
        static STATUSES: std::sync::LazyLock<Vec<SharedString>> = std::sync::LazyLock::new(|| {
            (100..600u16)
                .map(|status| SharedString::from(status.to_string()))
                .collect()
        });
        match status {
            None => SharedString::const_str(""),
            Some(status @ 100..=599) => STATUSES[usize::from(status - 100)].clone(),
            Some(_) => SharedString::const_str("other"),
        }
    }

    /// A step of a fallback chain `answered`, `failed` or was `skipped`.
    pub(crate) fn fallback_step(step: Cow<'static, str>, outcome: &'static str) {
        metrics::counter!("a2a.fallback.steps", "step" => step, "outcome" => outcome).increment(1);
    }

    /// A degraded answer was given; `source` is `fallback` or `fan_out`.
    pub(crate) fn degraded(source: &'static str) {
        metrics::counter!("a2a.degraded", "source" => source).increment(1);
    }

    /// A slow call is hedged after `delay`.
    pub(crate) fn hedge(request: &impl Request, delay: Duration) {
        let target = request.target();
        tracing::info!(
            agent = target,
            rpc.method = request.operation(),
            delay_ms = delay.as_millis() as u64,
            "hedging a slow call"
        );
        metrics::counter!(
            "a2a.hedges",
            "agent" => target.unwrap_or("").to_owned(),
            "rpc.method" => super::method_label(request.operation())
        )
        .increment(1);
    }

    /// A circuit breaker of `agent` (an agent's or a dependency's name) was made, or its state
    /// is now the one `gauge` stands for.
    pub(crate) fn breaker_state(agent: &str, gauge: f64) {
        metrics::gauge!("a2a.breaker.state", "agent" => agent.to_owned()).set(gauge);
    }

    /// A breaker refused a call: its circuit is open.
    pub(crate) fn breaker_rejected(agent: &str) {
        metrics::counter!("a2a.breaker.rejections", "agent" => agent.to_owned()).increment(1);
    }

    /// A breaker went `from` one state `to` another (whose gauge value is `gauge`).
    pub(crate) fn breaker_transition(
        agent: &str,
        from: &'static str,
        to: &'static str,
        gauge: f64,
    ) {
        breaker_state(agent, gauge);
        metrics::counter!(
            "a2a.breaker.transitions",
            "agent" => agent.to_owned(),
            "from" => from,
            "to" => to
        )
        .increment(1);
    }

    /// A retry the policy would have made was refused by the retry budget: the callee is
    /// failing for enough callers that retries would only add load.
    pub(crate) fn retry_budget_exhausted(request: &impl Request) {
        let target = request.target().unwrap_or("").to_owned();
        tracing::debug!(target = %target, "retry budget exhausted: not retried");
        match request.callee() {
            Callee::Agent => {
                metrics::counter!("a2a.retry.budget_exhausted", "agent" => target).increment(1)
            }
            Callee::Dependency => {
                metrics::counter!("a2a.retry.budget_exhausted", "dependency" => target).increment(1)
            }
        }
    }

    /// A retry is about to wait `delay`; `source` says whose delay it is (`retry-after` or
    /// `backoff`).
    pub(crate) fn retry(
        request: &impl Request,
        attempt: u32,
        error: &impl Classify,
        delay: Duration,
        source: &'static str,
    ) {
        let reason = failure_label(error);
        let target = request.target();
        let operation = request.operation();
        let delay_ms = delay.as_millis() as u64;
        match request.callee() {
            Callee::Agent => tracing::info!(
                agent = target,
                rpc.method = operation,
                http.request.resend_count = attempt,
                error.r#type = &*reason,
                delay_ms,
                delay.source = source,
                "retrying"
            ),
            Callee::Dependency => tracing::info!(
                dependency = target,
                operation,
                http.request.resend_count = attempt,
                error.r#type = &*reason,
                delay_ms,
                delay.source = source,
                "retrying"
            ),
        }
        let target = target.unwrap_or("").to_owned();
        match request.callee() {
            Callee::Agent => metrics::counter!(
                "a2a.client.retries",
                "agent" => target,
                "rpc.method" => super::method_label(operation),
                "error.type" => reason
            )
            .increment(1),
            Callee::Dependency => metrics::counter!(
                "a2a.dependency.retries",
                "dependency" => target,
                "error.type" => reason
            )
            .increment(1),
        }
    }
}

/// The recorder, as a number that tells it from any other recorder alive at the same time.
#[cfg(feature = "axum")]
fn recorder_id(recorder: &dyn metrics::Recorder) -> usize {
    std::ptr::from_ref(recorder).cast::<()>() as usize
}

/// The metadata of every series a server records.
#[cfg(feature = "axum")]
static SERVER_METADATA: metrics::Metadata<'static> =
    metrics::Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!()));

/// A request to a server was answered (a stream: opened) after `elapsed`, or failed with
/// `failed` (its A2A code and reason); `method` is a registered method's name, or `None`
/// (`other`). A failure's series carries `error.type` and `rpc.status_code` too.
#[cfg(feature = "axum")]
pub(crate) fn request_served(
    system: System,
    method: Option<&std::sync::Arc<str>>,
    failed: Option<(i32, &str)>,
    elapsed: std::time::Duration,
) {
    match failed {
        Some((code, reason)) => kept::failed(system, method, code, reason, elapsed),
        None => kept::answered(system, method, elapsed),
    }
}

/// A request to one of the A2A methods (`method`, a 1.0 name; `None`: not one) was answered by
/// the SDK bridge's REST routes or gRPC service, as [`request_served`] records the JSON-RPC
/// endpoint's; a failure is recorded on its `span` too.
#[cfg(feature = "sdk")]
pub(crate) fn a2a_request_served(
    system: System,
    method: Option<&'static str>,
    span: &tracing::Span,
    failed: Option<(i32, &str)>,
    elapsed: std::time::Duration,
) {
    // The names as the keys' caches know them: one `Arc` a method.
    static NAMES: std::sync::LazyLock<Vec<std::sync::Arc<str>>> = std::sync::LazyLock::new(|| {
        crate::wire::method::METHODS
            .iter()
            .map(|method| std::sync::Arc::from(method.name))
            .collect()
    });
    if let Some((code, reason)) = failed {
        server_failed(span, code, reason);
    }
    let known = method.and_then(|name| NAMES.iter().find(|known| &***known == name));
    request_served(system, known, failed, elapsed);
}

/// The A2A code and `error.type` of an error response, carried in its extensions to the layer
/// that ends the request's span.
#[cfg(feature = "axum")]
#[derive(Clone, Debug)]
pub(crate) struct FailedWith(i32, metrics::SharedString);

#[cfg(feature = "axum")]
impl FailedWith {
    /// A response failed with `code` and `reason`.
    pub(crate) fn new(code: i32, reason: &str) -> Self {
        FailedWith(code, reason_label(reason))
    }

    /// The code and reason.
    #[cfg_attr(not(feature = "sdk"), allow(dead_code))]
    pub(crate) fn parts(&self) -> (i32, &str) {
        (self.0, &self.1)
    }
}

/// The span of a request served by `system`'s endpoint (`a2a.server.call`, at `DEBUG`, as
/// tower-http's are, so that a log filter at `INFO` makes none), for `method`: a registered
/// or A2A method's name, else `other`. OpenTelemetry sees it as a server span named after the
/// method.
#[cfg(feature = "axum")]
pub(crate) fn server_span(system: System, method: &str) -> tracing::Span {
    tracing::debug_span!(
        "a2a.server.call",
        otel.name = method,
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        rpc.system.name = system.name(),
        rpc.method = method,
        rpc.status_code = tracing::field::Empty,
        error.r#type = tracing::field::Empty,
    )
}

/// The request `span` serves failed with the A2A `code` (`rpc.status_code`, on every binding)
/// and `reason` (`error.type`).
#[cfg(feature = "axum")]
pub(crate) fn server_failed(span: &tracing::Span, code: i32, reason: &str) {
    if span.is_disabled() {
        return;
    }
    span.record("otel.status_code", "error");
    span.record("rpc.status_code", &*code_label(code));
    span.record("error.type", &*reason_label(reason));
}

/// A request was refused at its caller's rate limit.
#[cfg(feature = "sdk")]
pub(crate) fn rate_limited() {
    metrics::counter!("a2a.server.rate_limited").increment(1);
}

/// A shared task whose lease lapsed was ended FAILED by this replica.
#[cfg(all(feature = "sdk", feature = "redis"))]
pub(crate) fn task_abandoned() {
    metrics::counter!("a2a.tasks.abandoned").increment(1);
}

/// This replica stopped an execution whose task's lease it lost.
#[cfg(all(feature = "sdk", feature = "redis"))]
pub(crate) fn lease_lost() {
    metrics::counter!("a2a.tasks.leases_lost").increment(1);
}

/// A request was refused by an endpoint at its concurrency limit (shed).
#[cfg(feature = "axum")]
pub(crate) fn shed() {
    metrics::counter!("a2a.server.shed").increment(1);
}

/// An error reply a server sent; `method` is a registered method's name or `None`.
#[cfg(feature = "axum")]
pub(crate) fn error_sent(method: Option<&std::sync::Arc<str>>, code: i32, reason: &str) {
    kept::error(method, code, reason);
}

/// The series a server records (`rpc.server.call.duration`, with a failure's `error.type`
/// and `rpc.status_code`, and `a2a.server.errors`), whose keys a request picks (its binding,
/// method, code and reason): each thread keeps the keys it has built, and with each the
/// handle of the recorder it was registered with. A handle belongs to the recorder that was
/// current when it was made: one kept without its recorder would never show a recorder
/// installed later (or a test's local one) these requests, so it is used only while the same
/// recorder is. An answered request's costs a scan of the thread's keys, no key hashed. Building a key (labels in a new Vec, the
/// code and reason looked up) was most of what counting an error cost, ~0.7k instructions of
/// a ~31k-instruction error reply; registering it again cost ~1.8k with Prometheus installed.
/// A recorder installed later (or a test's local one) still gets every count, its handle
/// made on its first.
#[cfg(feature = "axum")]
mod kept {
    use std::cell::RefCell;
    use std::sync::Arc;
    use std::thread::LocalKey;

    use metrics::{Key, Label, Recorder, SharedString};

    /// The most keys one thread keeps of each series; past that (a peer's reasons passed on
    /// are many), a key is built for each count, as the `counter!` macro does.
    const MAX_KEYS: usize = 128;

    /// What tells one failure's series from another's.
    struct Labels {
        system: Option<super::System>,
        method: Option<Arc<str>>,
        code: i32,
        reason: Box<str>,
    }

    impl Labels {
        fn is(
            &self,
            system: Option<super::System>,
            method: Option<&Arc<str>>,
            code: i32,
            reason: &str,
        ) -> bool {
            self.system == system
                && self.code == code
                && *self.reason == *reason
                && match (&self.method, method) {
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    (None, None) => true,
                    _ => false,
                }
        }
    }

    /// A kind of series handle.
    trait Handle: Sized {
        fn register(recorder: &dyn Recorder, key: &Key) -> Self;
    }

    impl Handle for metrics::Counter {
        fn register(recorder: &dyn Recorder, key: &Key) -> Self {
            recorder.register_counter(key, &super::SERVER_METADATA)
        }
    }

    impl Handle for metrics::Histogram {
        fn register(recorder: &dyn Recorder, key: &Key) -> Self {
            recorder.register_histogram(key, &super::SERVER_METADATA)
        }
    }

    struct Kept<H> {
        labels: Labels,
        key: Key,
        /// The handle and the recorder it belongs to.
        handle: RefCell<Option<(usize, H)>>,
    }

    type Cache<H> = RefCell<Vec<Kept<H>>>;

    thread_local! {
        static ERRORS: Cache<metrics::Counter> = const { RefCell::new(Vec::new()) };
        // Apart from the failures', so that many reasons never crowd the answered series out.
        static ANSWERED: Cache<metrics::Histogram> = const { RefCell::new(Vec::new()) };
        static FAILED: Cache<metrics::Histogram> = const { RefCell::new(Vec::new()) };
    }

    /// Uses (`apply`) the current recorder's handle of the series `labels` names, from this
    /// thread's `cache` when it is there; else registers the key `build` makes, and keeps it.
    fn with<H: Handle>(
        cache: &'static LocalKey<Cache<H>>,
        labels: (Option<super::System>, Option<&Arc<str>>, i32, &str),
        build: impl Fn() -> Key,
        apply: impl Fn(&H),
    ) {
        let (system, method, code, reason) = labels;
        metrics::with_recorder(|recorder| {
            let current = super::recorder_id(recorder);
            let done = cache.try_with(|kept| {
                // A recorder that counts an error of its own while this one is counted finds
                // the cache borrowed: it builds its key, and the cache is left as it is.
                if let Ok(kept) = kept.try_borrow()
                    && let Some(found) = kept
                        .iter()
                        .find(|k| k.labels.is(system, method, code, reason))
                {
                    let Ok(mut handle) = found.handle.try_borrow_mut() else {
                        return apply(&H::register(recorder, &found.key));
                    };
                    match &*handle {
                        Some((id, handle)) if *id == current => apply(handle),
                        _ => {
                            let fresh = H::register(recorder, &found.key);
                            apply(&fresh);
                            *handle = Some((current, fresh));
                        }
                    }
                    return;
                }
                let key = build();
                let handle = H::register(recorder, &key);
                apply(&handle);
                // A longer reason is an `OTHER` label anyway.
                if let Ok(mut kept) = kept.try_borrow_mut()
                    && kept.len() < MAX_KEYS
                    && reason.len() <= super::labels::MAX_LEN
                {
                    kept.push(Kept {
                        labels: Labels {
                            system,
                            method: method.cloned(),
                            code,
                            reason: reason.into(),
                        },
                        key,
                        handle: RefCell::new(Some((current, handle))),
                    });
                }
            });
            // Counted while the thread's locals are torn down: with a key of its own.
            if done.is_err() {
                apply(&H::register(recorder, &build()));
            }
        });
    }

    /// `rpc.method`: a registered name (the server's own, a set fixed at start-up), else
    /// `other`.
    fn method_label(method: Option<&Arc<str>>) -> SharedString {
        method.map_or(SharedString::const_str("other"), |name| {
            SharedString::from_shared(Arc::clone(name))
        })
    }

    /// Counts one error reply in `a2a.server.errors`.
    pub(super) fn error(method: Option<&Arc<str>>, code: i32, reason: &str) {
        let build = || {
            let labels = vec![
                Label::new("rpc.method", method_label(method)),
                Label::new("rpc.status_code", super::code_label(code)),
                Label::new("error.type", super::reason_label(reason)),
            ];
            Key::from_parts("a2a.server.errors", labels)
        };
        with(
            &ERRORS,
            (None, method, code, reason),
            build,
            |counter: &metrics::Counter| counter.increment(1),
        );
    }

    /// Records an answered request's duration in `rpc.server.call.duration`.
    pub(super) fn answered(
        system: super::System,
        method: Option<&Arc<str>>,
        elapsed: std::time::Duration,
    ) {
        let build = || {
            let labels = vec![
                Label::new("rpc.system.name", SharedString::const_str(system.name())),
                Label::new("rpc.method", method_label(method)),
                Label::new("outcome", SharedString::const_str("ok")),
            ];
            Key::from_parts(super::SERVER_DURATION, labels)
        };
        let seconds = elapsed.as_secs_f64();
        with(
            &ANSWERED,
            (Some(system), method, 0, ""),
            build,
            |histogram: &metrics::Histogram| histogram.record(seconds),
        );
    }

    /// Records a failed request's duration in `rpc.server.call.duration`.
    pub(super) fn failed(
        system: super::System,
        method: Option<&Arc<str>>,
        code: i32,
        reason: &str,
        elapsed: std::time::Duration,
    ) {
        let build = || {
            let labels = vec![
                Label::new("rpc.system.name", SharedString::const_str(system.name())),
                Label::new("rpc.method", method_label(method)),
                Label::new("outcome", SharedString::const_str("error")),
                Label::new("rpc.status_code", super::code_label(code)),
                Label::new("error.type", super::reason_label(reason)),
            ];
            Key::from_parts(super::SERVER_DURATION, labels)
        };
        let seconds = elapsed.as_secs_f64();
        with(
            &FAILED,
            (Some(system), method, code, reason),
            build,
            |histogram: &metrics::Histogram| histogram.record(seconds),
        );
    }
}

#[cfg(all(test, feature = "axum"))]
mod tests {
    use std::sync::Arc;

    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    /// The server error counts in `recorder`, as (method, code, reason, count).
    fn counts(recorder: &DebuggingRecorder) -> Vec<(String, String, String, u64)> {
        let mut counts: Vec<_> = recorder
            .snapshotter()
            .snapshot()
            .into_vec()
            .into_iter()
            .filter_map(|(key, _, _, value)| {
                let key = key.key();
                let DebugValue::Counter(count) = value else {
                    return None;
                };
                let label = |name: &str| {
                    key.labels()
                        .find(|label| label.key() == name)
                        .map(|label| label.value().to_owned())
                        .unwrap_or_default()
                };
                (key.name() == "a2a.server.errors").then(|| {
                    (
                        label("rpc.method"),
                        label("rpc.status_code"),
                        label("error.type"),
                        count,
                    )
                })
            })
            .collect();
        counts.sort();
        counts
    }

    #[test]
    fn server_error_keys_are_made_once_and_every_recorder_gets_its_counts() {
        let get: Arc<str> = Arc::from("GetTask");
        let first = DebuggingRecorder::new();
        metrics::with_local_recorder(&first, || {
            super::error_sent(Some(&get), -32001, "TASK_NOT_FOUND");
            super::error_sent(Some(&get), -32001, "TASK_NOT_FOUND");
            super::error_sent(None, -32601, "METHOD_NOT_FOUND");
        });
        let found = |method: &str, code: &str, reason: &str, n| {
            (method.to_owned(), code.to_owned(), reason.to_owned(), n)
        };
        assert_eq!(
            counts(&first),
            [
                found("GetTask", "-32001", "TASK_NOT_FOUND", 2),
                found("other", "-32601", "METHOD_NOT_FOUND", 1)
            ]
        );
        // Another recorder, the keys already made: its counts are its own.
        let second = DebuggingRecorder::new();
        metrics::with_local_recorder(&second, || {
            super::error_sent(Some(&get), -32001, "TASK_NOT_FOUND");
            // Past the keys a thread keeps: still counted, under the bounded labels.
            for i in 0..200 {
                super::error_sent(Some(&get), -32099, &format!("PEER_REASON_{i}"));
            }
        });
        let counts = counts(&second);
        assert!(counts.contains(&found("GetTask", "-32001", "TASK_NOT_FOUND", 1)));
        let all: u64 = counts.iter().map(|(.., n)| n).sum();
        assert_eq!(all, 201);
        assert!(counts.iter().any(|(_, _, reason, _)| reason == "OTHER"));
        // The first recorder again, after the second: the thread's handle, the second's, is
        // replaced by one of the first's (a snapshot takes what was counted since the last).
        metrics::with_local_recorder(&first, || {
            super::error_sent(Some(&get), -32001, "TASK_NOT_FOUND");
        });
        assert!(counts_of_first_include(&first, 1));
    }

    fn counts_of_first_include(recorder: &DebuggingRecorder, n: u64) -> bool {
        counts(recorder).iter().any(|(method, _, reason, count)| {
            method == "GetTask" && reason == "TASK_NOT_FOUND" && *count == n
        })
    }

    /// The durations of `method` in `recorder`, answered and failed.
    fn durations(recorder: &DebuggingRecorder, method: &str) -> (usize, usize) {
        let mut found = (0, 0);
        for (key, _, _, value) in recorder.snapshotter().snapshot().into_vec() {
            let key = key.key();
            let label = |name: &str| {
                key.labels()
                    .find(|label| label.key() == name)
                    .map(|label| label.value().to_owned())
            };
            if key.name() != "rpc.server.call.duration"
                || label("rpc.method").as_deref() != Some(method)
            {
                continue;
            }
            let DebugValue::Histogram(samples) = value else {
                continue;
            };
            match label("outcome").as_deref() {
                Some("ok") => found.0 += samples.len(),
                _ => found.1 += samples.len(),
            }
        }
        found
    }

    #[test]
    fn server_durations_reach_whichever_recorder_is_current() {
        let name: Arc<str> = Arc::from("SendMessage");

        let time = std::time::Duration::from_millis(3);
        let record = |ok: bool| {
            let failed = (!ok).then_some((-32603, "INTERNAL_ERROR"));
            super::request_served(super::System::JsonRpc, Some(&name), failed, time)
        };
        // Handles made with no recorder at all (the no-op one) are not the next recorder's.
        record(true);
        let first = DebuggingRecorder::new();
        metrics::with_local_recorder(&first, || {
            record(true);
            record(true);
            record(false);
        });
        assert_eq!(durations(&first, "SendMessage"), (2, 1));
        let second = DebuggingRecorder::new();
        metrics::with_local_recorder(&second, || record(true));
        assert_eq!(durations(&second, "SendMessage"), (1, 0));
        // Back to the first: a snapshot takes what was recorded since the last.
        metrics::with_local_recorder(&first, || record(false));
        assert_eq!(durations(&first, "SendMessage"), (0, 1));
    }
}
