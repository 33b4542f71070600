//! What a call (to an agent or a dependency) records, from plain values: the caller reads
//! its own types and passes what is named here.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use metrics::SharedString;

use super::Callee;

/// The span of a call through the typed client (`a2a.client.call`, at `DEBUG`): an
/// OpenTelemetry client span named after the method.
#[doc(hidden)]
pub fn client_span(
    system: super::System,
    agent: &str,
    method: &str,
    request_id: u64,
) -> tracing::Span {
    tracing::debug_span!(
        "a2a.client.call",
        otel.name = method,
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        rpc.system.name = system.name(),
        rpc.method = method,
        server.address = agent,
        rpc.jsonrpc.request_id = request_id,
        rpc.status_code = tracing::field::Empty,
        error.r#type = tracing::field::Empty,
    )
}

/// The span of an attempt after the first (`a2a.client.attempt`, at `DEBUG`), the
/// `resend`-th resend of its call.
#[doc(hidden)]
pub fn attempt_span(resend: u32) -> tracing::Span {
    tracing::debug_span!("a2a.client.attempt", http.request.resend_count = resend)
}

/// A call through the typed client ended, answered or `failed` with a code and reason (as
/// labels: a peer's went through the closed sets of [`super::labels`]).
#[doc(hidden)]
pub fn call_ended(
    system: super::System,
    agent: &Arc<str>,
    method: Cow<'static, str>,
    elapsed: Duration,
    failed: Option<(SharedString, SharedString)>,
    span: &tracing::Span,
) {
    let method = match method {
        Cow::Borrowed(name) => SharedString::const_str(name),
        Cow::Owned(name) => super::method_label(&name),
    };
    let Some((code, reason)) = failed else {
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

/// Who a call goes to, as its metrics and logs name it.
#[derive(Copy, Clone, Debug)]
#[doc(hidden)]
pub struct Target<'a> {
    /// An agent or a dependency: which series.
    pub(crate) callee: Callee,
    /// The callee's name.
    pub(crate) name: Option<&'a str>,
    /// The method or operation.
    pub(crate) operation: &'a str,
}

/// The histogram of attempts per call to `target`'s callee, kept by a retry service.
#[doc(hidden)]
pub fn attempts_histogram(target: Target<'_>) -> metrics::Histogram {
    let callee = target.callee;
    let target = target.name.unwrap_or("").to_owned();
    match callee {
        Callee::Agent => metrics::histogram!(super::CLIENT_ATTEMPTS, "agent" => target),
        Callee::Dependency => {
            metrics::histogram!(super::DEPENDENCY_ATTEMPTS, "dependency" => target)
        }
    }
}

/// A failure's `reason` as an `error.type` label: one of the layers' and transports' own
/// reasons, else through the closed set of [`super::labels`].
#[doc(hidden)]
pub fn failure_label(reason: &str) -> SharedString {
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
    "EVENT_TOO_LARGE",
    "INVALID_CALL",
    "DOWNSTREAM_FAILED",
    "HTTP_STATUS",
    "INVALID_RESPONSE",
    "FAILED",
    "STREAM_INTERRUPTED",
    "CANCELLED",
    // An MCP server's: a tool's own failure, and JSON-RPC's errors.
    "TOOL_ERROR",
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
    "SERVER_ERROR",
    // The MCP stateless revision's refusals.
    "HEADER_MISMATCH",
    "MISSING_CLIENT_CAPABILITY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    // A provider's spent quota (a billing or spend budget, a daily limit), and a call not
    // sent before its stated quota's reset.
    "QUOTA_EXHAUSTED",
    "QUOTA_WAIT",
];

/// The gauge of what a dependency's replies last stated of one limit of its quota
/// (`requests`, `tokens`).
#[doc(hidden)]
pub fn quota_gauge(name: &Arc<str>, limit: &'static str) -> metrics::Gauge {
    metrics::gauge!(super::DEPENDENCY_QUOTA_REMAINING,
        "dependency" => SharedString::from(name.clone()), "limit" => limit)
}

/// The shared quota store (Redis) did not answer in time: the replica used its own view.
#[cfg(feature = "redis")]
#[doc(hidden)]
pub fn quota_shared_unavailable() {
    metrics::counter!(super::DEPENDENCY_QUOTA_SHARED_UNAVAILABLE).increment(1);
}

/// A call of a caller that used its budget of the dependency's tokens, refused unsent (no
/// caller label: the callers are not a closed set).
#[doc(hidden)]
pub fn budget_refused(name: &Arc<str>) {
    metrics::counter!(super::DEPENDENCY_BUDGET_REFUSED,
        "dependency" => SharedString::from(name.clone()))
    .increment(1);
}

/// A call held back for its dependency's stated quota: `waited` for the reset, `refused`
/// unsent, or `sent_elsewhere` (refused at once, for a fallback to answer).
#[doc(hidden)]
pub fn quota_held(name: &Arc<str>, outcome: &'static str) {
    metrics::counter!(super::DEPENDENCY_QUOTA_HELD,
        "dependency" => SharedString::from(name.clone()), "outcome" => outcome)
    .increment(1);
}

/// A call to a dependency (not an agent) under way: its span, and what is recorded when it
/// ends.
#[doc(hidden)]
pub struct DependencyCall {
    name: SharedString,
    started: std::time::Instant,
    span: tracing::Span,
}

impl DependencyCall {
    /// A call to the dependency `name` starts; `protocol` is `http` for HTTP dependencies.
    pub(crate) fn start(name: &Arc<str>, operation: &str, protocol: Option<&'static str>) -> Self {
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

    /// The call ended, failed with the reason `failure` or not; `status` is the HTTP status
    /// of its last reply.
    pub(crate) fn ended(self, failure: Option<&str>, status: Option<u16>) {
        let error = failure;
        let outcome = if error.is_some() { "error" } else { "ok" };
        let reason = match error {
            Some(reason) => failure_label(reason),
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
#[doc(hidden)]
pub fn fallback_step(step: Cow<'static, str>, outcome: &'static str) {
    metrics::counter!("a2a.fallback.steps", "step" => step, "outcome" => outcome).increment(1);
}

/// A degraded answer was given; `source` is `fallback` or `fan_out`.
#[doc(hidden)]
pub fn degraded(source: &'static str) {
    metrics::counter!("a2a.degraded", "source" => source).increment(1);
}

/// A slow call to `target` is hedged after `delay`.
#[doc(hidden)]
pub fn hedge(target: Target<'_>, delay: Duration) {
    let operation = target.operation;
    let target = target.name;
    tracing::info!(
        agent = target,
        rpc.method = operation,
        delay_ms = delay.as_millis() as u64,
        "hedging a slow call"
    );
    metrics::counter!(
        "a2a.hedges",
        "agent" => target.unwrap_or("").to_owned(),
        "rpc.method" => super::method_label(operation)
    )
    .increment(1);
}

/// A circuit breaker of `agent` (an agent's or a dependency's name) was made, or its state
/// is now the one `gauge` stands for.
#[doc(hidden)]
pub fn breaker_state(agent: &str, gauge: f64) {
    metrics::gauge!("a2a.breaker.state", "agent" => agent.to_owned()).set(gauge);
}

/// A breaker refused a call: its circuit is open.
#[doc(hidden)]
pub fn breaker_rejected(agent: &str) {
    metrics::counter!("a2a.breaker.rejections", "agent" => agent.to_owned()).increment(1);
}

/// A breaker went `from` one state `to` another (whose gauge value is `gauge`).
#[doc(hidden)]
pub fn breaker_transition(agent: &str, from: &'static str, to: &'static str, gauge: f64) {
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
#[doc(hidden)]
pub fn retry_budget_exhausted(target: Target<'_>) {
    let callee = target.callee;
    let target = target.name.unwrap_or("").to_owned();
    tracing::debug!(target = %target, "retry budget exhausted: not retried");
    match callee {
        Callee::Agent => {
            metrics::counter!("a2a.retry.budget_exhausted", "agent" => target).increment(1)
        }
        Callee::Dependency => {
            metrics::counter!("a2a.retry.budget_exhausted", "dependency" => target).increment(1)
        }
    }
}

/// A retry of a call to `target`, after a failure with `reason`, is about to wait `delay`;
/// `source` says whose delay it is (`retry-after` or `backoff`).
#[doc(hidden)]
pub fn retry(
    target: Target<'_>,
    attempt: u32,
    reason: &str,
    delay: Duration,
    source: &'static str,
) {
    let reason = failure_label(reason);
    let callee = target.callee;
    let operation = target.operation;
    let target = target.name;
    let delay_ms = delay.as_millis() as u64;
    match callee {
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
    match callee {
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

/// What a model's GenAI series and span are labelled with: the dependency's name, the
/// provider's and the requested model's, all configured (closed sets; nothing from a reply).
#[doc(hidden)]
pub struct ModelNames {
    labels: Vec<metrics::Label>,
    provider: SharedString,
    request_model: Option<SharedString>,
}

impl ModelNames {
    /// The names of model `dependency`, served by `provider`, asked for `request_model`.
    pub(crate) fn new(
        dependency: &Arc<str>,
        provider: SharedString,
        request_model: Option<SharedString>,
    ) -> Self {
        let mut labels = vec![
            metrics::Label::new("dependency", SharedString::from(Arc::clone(dependency))),
            metrics::Label::new("gen_ai.operation.name", "chat"),
            metrics::Label::new("gen_ai.provider.name", provider.clone()),
        ];
        if let Some(model) = &request_model {
            labels.push(metrics::Label::new("gen_ai.request.model", model.clone()));
        }
        ModelNames {
            labels,
            provider,
            request_model,
        }
    }

    /// The span of one model call, named as OpenTelemetry's GenAI conventions name it
    /// (`chat {model}`); its token usage is recorded when the call ends.
    pub(crate) fn span(&self) -> tracing::Span {
        let name = match self.request_model.as_deref() {
            Some(model) => Cow::Owned(format!("chat {model}")),
            None => Cow::Borrowed("chat"),
        };
        tracing::info_span!(
            "gen_ai.chat",
            otel.name = &*name,
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = &*self.provider,
            gen_ai.request.model = self.request_model.as_deref(),
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            error.r#type = tracing::field::Empty,
        )
    }

    /// The histogram of the time between a streamed answer's chunks, after the first.
    pub(crate) fn chunk_times(&self) -> metrics::Histogram {
        metrics::histogram!(super::GEN_AI_PER_CHUNK, self.labels.clone())
    }

    /// A model call ended after `elapsed`, failed with the reason `failure` or not; a
    /// streamed one's first chunk came after `first_chunk`; the provider counted `input` and
    /// `output` tokens. OpenTelemetry's GenAI series, and the call's `span`.
    pub(crate) fn ended(
        &self,
        span: &tracing::Span,
        elapsed: Duration,
        first_chunk: Option<Duration>,
        (input, output): (Option<u64>, Option<u64>),
        failure: Option<&str>,
    ) {
        let mut labels = self.labels.clone();
        if let Some(reason) = failure {
            let reason = failure_label(reason);
            span.record("otel.status_code", "error");
            span.record("error.type", &*reason);
            labels.push(metrics::Label::new("error.type", reason));
        }
        metrics::histogram!(super::GEN_AI_DURATION, labels).record(elapsed.as_secs_f64());
        if let Some(first) = first_chunk {
            metrics::histogram!(super::GEN_AI_FIRST_CHUNK, self.labels.clone())
                .record(first.as_secs_f64());
        }
        for (kind, tokens, field) in [
            ("input", input, "gen_ai.usage.input_tokens"),
            ("output", output, "gen_ai.usage.output_tokens"),
        ] {
            if let Some(tokens) = tokens {
                span.record(field, tokens);
                let mut labels = self.labels.clone();
                labels.push(metrics::Label::new("gen_ai.token.type", kind));
                metrics::histogram!(super::GEN_AI_TOKENS, labels).record(tokens as f64);
            }
        }
    }
}

/// One request to an MCP server under way, named as OpenTelemetry's MCP conventions name it:
/// its span (`{mcp.method.name} {target}`) and, when it ends, `mcp.client.operation.duration`.
/// Every label is configured or from a closed set: the method is this crate's or the
/// caller's, the tool a name the server listed (at most 64) or `other`.
#[cfg(feature = "mcp")]
#[doc(hidden)]
pub struct McpOperation {
    labels: Vec<metrics::Label>,
    started: std::time::Instant,
    span: tracing::Span,
}

#[cfg(feature = "mcp")]
impl McpOperation {
    /// A request of `method` to the MCP server `server` starts; `tool` is the label of the
    /// tool a `tools/call` calls.
    pub(crate) fn start(
        server: &Arc<str>,
        method: Cow<'static, str>,
        tool: Option<&Arc<str>>,
    ) -> Self {
        let target = tool.map_or(&**server, |tool| &**tool);
        let span = tracing::debug_span!(
            "mcp.client.operation",
            // Written only when the span is recorded.
            otel.name = tracing::field::display(format_args!("{method} {target}")),
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            mcp.method.name = &*method,
            gen_ai.tool.name = tool.map(|tool| &**tool),
            gen_ai.operation.name = tool.map(|_| "execute_tool"),
            dependency = &**server,
            error.r#type = tracing::field::Empty,
        );
        let mut labels = vec![
            metrics::Label::new("dependency", SharedString::from(Arc::clone(server))),
            metrics::Label::new("mcp.method.name", SharedString::from(method)),
        ];
        if let Some(tool) = tool {
            labels.push(metrics::Label::new(
                "gen_ai.tool.name",
                SharedString::from(Arc::clone(tool)),
            ));
        }
        McpOperation {
            labels,
            started: std::time::Instant::now(),
            span,
        }
    }

    /// The request's span.
    pub(crate) fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// The request ended, failed with the reason `failure` or not.
    pub(crate) fn ended(mut self, failure: Option<&str>) {
        if let Some(reason) = failure {
            let reason = failure_label(reason);
            self.span.record("otel.status_code", "error");
            self.span.record("error.type", &*reason);
            self.labels.push(metrics::Label::new("error.type", reason));
        }
        metrics::histogram!(super::MCP_DURATION, self.labels)
            .record(self.started.elapsed().as_secs_f64());
    }
}

/// One attempt to deliver a push notification was sent.
#[cfg(feature = "push")]
#[doc(hidden)]
pub fn push_attempt() {
    metrics::counter!("a2a.push.attempts").increment(1);
}

/// A push notification ended with `outcome` (`delivered`, `rejected`, `gone`,
/// `dead_letter`), `age` after its event.
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub fn push_ended(outcome: &'static str, age: Duration) {
    metrics::counter!("a2a.push.deliveries", "outcome" => outcome).increment(1);
    if outcome == "dead_letter" {
        metrics::counter!("a2a.push.dead_letters").increment(1);
    }
    metrics::histogram!(super::PUSH_DURATION, "outcome" => outcome).record(age.as_secs_f64());
}

/// Push notifications' series, at zero, so that they are scraped before the first
/// notification: every `outcome` of `a2a.push.deliveries`, the attempts and dead letters.
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub fn push_series() {
    for outcome in ["delivered", "rejected", "gone", "dead_letter"] {
        metrics::counter!("a2a.push.deliveries", "outcome" => outcome).increment(0);
    }
    metrics::counter!("a2a.push.attempts").increment(0);
    metrics::counter!("a2a.push.dead_letters").increment(0);
}

/// The age of the oldest push notification pending, in seconds (0 when none).
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub fn push_oldest_pending(seconds: f64) {
    metrics::gauge!("a2a.push.oldest_pending_seconds").set(seconds);
}
