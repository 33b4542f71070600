//! The LLM agent's application: an executor on the official Rust SDK that asks a model
//! provider (and, for `search:` or `mcp:`, a tool first), every call under a2a-error's layers, with a
//! fallback model and every failure passed on as the agent's own error. `main.rs` serves it.

use std::sync::Arc;
use std::time::Duration;

use a2a::{A2AError, AgentCard, Message, Part, Role, StreamResponse};
use a2a_error::dependency::mcp::McpDependency;
use a2a_error::dependency::{
    DependencyFailed, HttpCall, HttpDependency, HttpError, HttpFailure, HttpStream, ToolOutcome,
};
use a2a_error::resilience::Classify;
use a2a_error::resilience::{Answered, DEGRADED_KEY, Fallback};
use a2a_error::sdk::{
    Bridge, Forwarded, Guarded, MemoryTaskStore, ProtoJson, forward_stream, is_streaming,
};
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext};
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::{Value, json};

/// The share of the time left that the primary model may spend (its retries included) when a
/// fallback model is configured: the fallback keeps the rest.
const PRIMARY_SHARE: f64 = 0.6;

/// How long the agent waits for a model: each whole reply's attempt; a streamed answer's
/// first token (each attempt) and the longest silence after it.
#[derive(Clone, Debug)]
pub struct Waits {
    /// One attempt of a whole reply.
    pub attempt: Duration,
    /// A streamed attempt's first content event.
    pub first_token: Duration,
    /// The longest silence in a streamed answer once it has begun.
    pub idle: Duration,
    /// The output tokens a model call is estimated to use (its request names no maximum):
    /// what the model's stated quota must have room for, besides the input.
    pub expected_output_tokens: u64,
    /// Where the replicas share the models' stated quotas (`--redis`).
    pub shared_quota: Option<a2a_error::dependency::SharedQuota>,
    /// Each caller's budget of model tokens, across both models
    /// (`--caller-tokens-per-minute`).
    pub caller_budget: Option<a2a_error::dependency::CallerBudget>,
}

/// What the agent depends on: a model, maybe a fallback model, maybe a search tool, maybe an
/// MCP server's tools. Each is an [`HttpDependency`] with its own breaker (the library's
/// default configuration), the MCP server an [`McpDependency`] with a breaker per tool.
#[derive(Clone)]
pub struct Dependencies {
    /// The primary model.
    pub primary: HttpDependency,
    /// The fallback model.
    pub fallback: Option<HttpDependency>,
    /// The search tool.
    pub tool: Option<HttpDependency>,
    /// The MCP server.
    pub mcp: Option<McpDependency>,
}

impl Dependencies {
    /// The dependencies at these URLs, waiting for them as `waits` says.
    pub fn new(
        model: &str,
        fallback: Option<&str>,
        tool: Option<&str>,
        mcp: Option<&str>,
        waits: Waits,
    ) -> Result<Self, a2a_error::BuildError> {
        let attempt_timeout = waits.attempt;
        // A model whose stated quota has no room does not wait for its reset when a fallback
        // can answer now.
        let model_at = |name: &str, url: &str, waits_for_quota: bool| {
            let mut model = HttpDependency::model(name.to_owned(), url)
                .request_model(name)
                .attempt_timeout(attempt_timeout)
                .first_event_timeout(waits.first_token)
                .idle_timeout(waits.idle)
                .expected_output_tokens(waits.expected_output_tokens)
                .quota_waits(waits_for_quota);
            if let Some(shared) = &waits.shared_quota {
                model = model.shared_quota(shared.clone());
            }
            if let Some(budget) = &waits.caller_budget {
                model = model.caller_budget(budget.clone());
            }
            model.build()
        };
        Ok(Dependencies {
            primary: model_at("primary", model, fallback.is_none())?,
            fallback: fallback
                .map(|url| model_at("fallback", url, true))
                .transpose()?,
            tool: tool
                .map(|url| {
                    HttpDependency::builder("tool", url)
                        .attempt_timeout(attempt_timeout)
                        .build()
                })
                .transpose()?,
            mcp: mcp
                .map(|url| {
                    McpDependency::builder("mcp", url)
                        .attempt_timeout(attempt_timeout)
                        .build()
                })
                .transpose()?,
        })
    }
}

/// The body of a chat completion, its members in the contract's order (`json!` would sort
/// them): `{"model":…,"messages":[{"role":"user","content":…}]}`, and for a streamed answer
/// `"stream":true,"stream_options":{"include_usage":true}` after them.
#[derive(serde::Serialize)]
struct Chat<'a> {
    model: &'a str,
    messages: [Turn<'a>; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

impl<'a> Chat<'a> {
    /// `content` for model `model`, streamed or not.
    fn new(model: &'a str, content: &'a str, streamed: bool) -> Self {
        Chat {
            model,
            messages: [Turn {
                role: "user",
                content,
            }],
            stream: streamed.then_some(true),
            stream_options: streamed.then_some(StreamOptions {
                include_usage: true,
            }),
        }
    }
}

/// Asks a streamed answer's last chunk to report its token usage.
#[derive(serde::Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// One message of a [`Chat`].
#[derive(serde::Serialize)]
struct Turn<'a> {
    role: &'a str,
    content: &'a str,
}

/// What the agent reads of a chat completion: the first choice's content. Typed, so that the
/// rest of a reply (other choices, unknown fields, however long) is skipped as it is parsed,
/// not built into memory: a reply under the 32 MiB limit costs its bytes once, where a
/// `serde_json::Value` tree would cost up to 32 times that.
#[derive(serde::Deserialize)]
struct Completion {
    choices: First<Choice>,
}

#[derive(serde::Deserialize)]
struct Choice {
    message: Option<ChoiceMessage>,
}

#[derive(serde::Deserialize)]
struct ChoiceMessage {
    content: Option<String>,
}

/// The first element of a JSON array, the others skipped unread.
struct First<T>(Option<T>);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for First<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = First<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<First<T>, A::Error> {
                let first = seq.next_element()?;
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(First(first))
            }
        }
        deserializer.deserialize_seq(Visit(std::marker::PhantomData))
    }
}

/// Asks `model` (named `name` in the request body) to answer `content`: the reply's
/// `choices[0].message.content`.
async fn ask(model: &HttpDependency, name: &str, content: &str) -> Result<String, HttpError> {
    let body = Chat::new(name, content, false);
    let reply: Completion = model
        .send(HttpCall::post("/chat/completions").json(&body)?)
        .await?
        .json()?;
    match reply.choices.0.and_then(|choice| choice.message?.content) {
        Some(text) => Ok(text),
        None => Err(HttpError::Failed(HttpFailure::Malformed {
            detail: "no choices[0].message.content".into(),
        })),
    }
}

/// Opens `model`'s streamed answer to `content` (named `name` in the request body): open once
/// its first token has arrived.
async fn open(model: &HttpDependency, name: &str, content: &str) -> Result<HttpStream, HttpError> {
    let call = HttpCall::post("/chat/completions").json(&Chat::new(name, content, true))?;
    model.stream(call).await
}

/// What the agent reads of the tool's reply: its `result`, kept as its JSON text (one copy of
/// it, whatever its shape), the rest skipped.
#[derive(serde::Deserialize)]
struct ToolReply {
    result: Option<Box<serde_json::value::RawValue>>,
}

/// `search:Q`: asks the tool for `Q`; the model's content, and whether the tool failed.
async fn with_tool(tool: &HttpDependency, query: &str, text: &str) -> (String, bool) {
    let call = HttpCall::get(format!("/search?q={}", percent_encode(query)));
    let result = match tool.send(call).await {
        Ok(reply) => reply.json::<ToolReply>(),
        Err(error) => Err(error),
    };
    match result {
        Ok(reply) => {
            let result = match reply.result {
                // A string is its text; anything else its JSON, as written.
                Some(raw) => serde_json::from_str::<String>(raw.get())
                    .unwrap_or_else(|_| raw.get().to_owned()),
                None => "null".to_owned(),
            };
            (format!("tool: {result}\nuser: {text}"), false)
        }
        Err(error) => {
            tracing::warn!(error = %error, "the tool failed; answering without it");
            (format!("tool unavailable\nuser: {text}"), true)
        }
    }
}

/// Percent-encodes a query value (RFC 3986's unreserved characters stay).
fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The executor: one model call (through the fallback chain) per message.
struct Llm {
    deps: Dependencies,
}

/// `mcp:NAME:Q`: calls the MCP tool NAME with `{"q": Q}`; the model's content (the tool's
/// outcome as the library renders it for a model), and how the tool failed, if it did.
async fn with_mcp(mcp: &McpDependency, call: &str, text: &str) -> (String, Option<&'static str>) {
    let (name, query) = call.split_once(':').unwrap_or((call, ""));
    let outcome = mcp.tool(name, json!({ "q": query })).await;
    if let ToolOutcome::Unavailable(why) = &outcome {
        tracing::warn!(tool = name, why = %why, "the MCP tool is unavailable; answering without it");
    }
    (
        format!("{}\nuser: {text}", outcome.for_model()),
        outcome.degraded_mark(),
    )
}

/// What the model is asked for `text` (with `search:Q` or `mcp:NAME:Q`, the tool's answer
/// first), and how the tool failed, if it did (`unavailable`, `error`).
async fn prompt(deps: &Dependencies, text: &str) -> (String, Option<&'static str>) {
    if let (Some(tool), Some(query)) = (&deps.tool, text.strip_prefix("search:")) {
        let (content, down) = with_tool(tool, query, text).await;
        return (content, down.then_some("unavailable"));
    }
    if let (Some(mcp), Some(call)) = (&deps.mcp, text.strip_prefix("mcp:")) {
        return with_mcp(mcp, call, text).await;
    }
    (text.to_owned(), None)
}

/// Answers `text`: the model's content, marked degraded when the fallback model answered or
/// the tool was unavailable.
async fn answer(deps: Dependencies, text: String) -> Result<(String, Option<Value>), A2AError> {
    let (content, tool_failed) = prompt(&deps, &text).await;
    let primary = &deps.primary;
    let content = content.as_str();
    let mut chain = Fallback::new("primary", || ask(primary, "primary", content));
    if let Some(fallback) = &deps.fallback {
        // A refusal (400, 401, 403, 404, 422) is the request's fault: no fallback for it.
        chain = chain.share(PRIMARY_SHARE).or_if(
            |error: &HttpError| !error.is_refusal(),
            "fallback",
            || ask(fallback, "fallback", content),
        );
    }
    let answered: Answered<String> = match chain.run().await {
        Ok(answered) => answered,
        Err(failed) => {
            tracing::warn!(error = %failed, "no model answered");
            return Err(DependencyFailed::models(&failed).into());
        }
    };
    let mark = (answered.is_degraded() || tool_failed.is_some()).then(|| {
        let mut mark = json!({"step": answered.step, "index": answered.index});
        if let Some(failed) = tool_failed {
            mark["tool"] = json!(failed);
        }
        mark
    });
    Ok((answered.value, mark))
}

/// Opens the streamed answer to `text` through the fallback chain: a step is left for the next
/// only while nothing of it was delivered (see `forward_stream` for what the caller sees). The
/// answer is marked degraded when the fallback model answered or the tool was unavailable.
async fn open_answer(deps: Dependencies, text: String) -> Result<Forwarded, A2AError> {
    let (content, tool_failed) = prompt(&deps, &text).await;
    let primary = &deps.primary;
    let content = content.as_str();
    let mut chain = Fallback::new("primary", || open(primary, "primary", content));
    if let Some(fallback) = &deps.fallback {
        // As for a whole reply: a primary slow to its first token is cut at its share of the
        // caller's deadline, and the fallback opens within the rest.
        chain = chain.share(PRIMARY_SHARE).or_if(
            |error: &HttpError| !error.is_refusal(),
            "fallback",
            || open(fallback, "fallback", content),
        );
    }
    let answered = chain.run().await.map_err(|failed| {
        tracing::warn!(error = %failed, "no model opened a stream");
        A2AError::from(DependencyFailed::models(&failed))
    })?;
    let forwarded = Forwarded::from(answered);
    Ok(match tool_failed {
        Some(failed) => forwarded.degraded("tool", failed),
        None => forwarded,
    })
}

impl AgentExecutor for Llm {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let text: String = ctx
            .message
            .as_ref()
            .map(|message| {
                message
                    .parts
                    .iter()
                    .filter_map(|part| match &part.content {
                        a2a::PartContent::Text(text) => Some(text.as_str()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let deps = self.deps.clone();
        if is_streaming(&ctx) {
            return forward_stream(&ctx, open_answer(deps, text));
        }
        let context_id = ctx.context_id.clone();
        stream::once(async move {
            let (reply, mark) = answer(deps, text).await?;
            let mut message = Message::new(Role::Agent, vec![Part::text(reply)]);
            message.context_id = Some(context_id);
            if let Some(mark) = mark {
                message.metadata = Some([(DEGRADED_KEY.to_owned(), mark)].into_iter().collect());
            }
            Ok(StreamResponse::Message(message))
        })
        .boxed()
    }

    fn cancel(&self, _: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        stream::empty().boxed()
    }
}

/// The agent card, advertising both HTTP bindings at `public_url`.
fn card(public_url: &str) -> AgentCard {
    let base = public_url.trim_end_matches('/');
    let card = json!({
        "name": "a2a-error LLM agent",
        "description": "Answers with a model; a fallback model and a search tool, all under a2a-error's layers.",
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": [
            {"url": format!("{base}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": base, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": true, "pushNotifications": false},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "chat", "name": "Chat", "description": "Answers with a model; `search:Q` asks the search tool first, `mcp:NAME:Q` the MCP tool NAME.",
                    "tags": ["llm"]}]
    });
    serde_json::from_value::<ProtoJson<AgentCard>>(card)
        .expect("the card is valid")
        .0
}

/// The agent through the bridge: JSON-RPC at `POST /`, the REST routes and the card.
pub fn bridge(public_url: &str, deps: Dependencies) -> Bridge<DefaultRequestHandler> {
    let tasks = MemoryTaskStore::new(64 << 20);
    let executor = Guarded::new(Llm { deps }, Arc::new(tasks.clone()));
    Bridge::new(DefaultRequestHandler::new(executor, tasks))
        .card(card(public_url))
        .timeout(Duration::from_secs(60))
}
