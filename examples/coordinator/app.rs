//! The example coordinator's application: fans a message out to specialist agents through the
//! library's client (retry + circuit breaker per agent, the caller's deadline passed on) and
//! answers with what came back. Built from the public API only; `main.rs` serves it and the
//! tests mount the same router.

use std::sync::Arc;
use std::time::Duration;

use a2a_error::client::{FanOut, FanOutError};
use a2a_error::resilience::breaker::{BreakerConfig, BreakerRegistry};
use a2a_error::server::rest::{self, Json};
use a2a_error::server::{JsonRpc, RequestContext};
use a2a_error::{A2aError, BuildError, Client, StandardError};
use axum::Router;
use axum::extract::State;
use axum::routing::get;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// Everything the coordinator can fail with.
#[derive(Debug, thiserror::Error, A2aError)]
#[a2a(domain = "coordinator.example")]
pub enum CoordinatorError {
    /// Fewer specialists answered than needed: DOWNSTREAM_FAILED naming each failure.
    #[error(transparent)]
    #[a2a(transparent)]
    Downstream(#[from] FanOutError),

    #[error("message has no text parts")]
    #[a2a(code = INVALID_PARAMS)]
    NoText,

    #[error(transparent)]
    #[a2a(transparent)]
    Standard(#[from] StandardError),
}

/// The specialists, their clients (one breaker each, from one registry) and the rule.
#[derive(Clone)]
pub struct Coordinator {
    agents: Arc<[(Arc<str>, Client)]>,
    min_results: usize,
    /// The base URL the card advertises: configuration, never a caller's `Host` header.
    public_url: Arc<str>,
}

impl Coordinator {
    /// The base URL the card advertises (default `http://127.0.0.1:8080`).
    pub fn public_url(mut self, url: &str) -> Self {
        self.public_url = Arc::from(url);
        self
    }

    /// A coordinator of `agents` (name, JSON-RPC URL) that needs `min_results` answers.
    pub fn new(agents: &[(String, String)], min_results: usize) -> Result<Self, BuildError> {
        Self::with_breakers(agents, min_results, BreakerConfig::default())
    }

    /// As [`new`](Self::new), with breakers following `config` (tests shorten the break).
    pub fn with_breakers(
        agents: &[(String, String)],
        min_results: usize,
        config: BreakerConfig,
    ) -> Result<Self, BuildError> {
        let breakers = BreakerRegistry::new(config);
        let agents = agents
            .iter()
            .map(|(name, url)| {
                // `rest+URL` and `grpc+URL` pick the agent's binding; JSON-RPC otherwise.
                let builder = if let Some(url) = url.strip_prefix("rest+") {
                    Client::rest(url)
                } else if let Some(url) = url.strip_prefix("grpc+") {
                    Client::grpc(url)
                } else {
                    Client::jsonrpc(url.as_str())
                };
                let client = builder.name(name.as_str()).breakers(&breakers).build()?;
                Ok((Arc::<str>::from(name.as_str()), client))
            })
            .collect::<Result<Vec<_>, BuildError>>()?;
        Ok(Coordinator {
            agents: agents.into(),
            min_results: min_results.max(1),
            public_url: Arc::from("http://127.0.0.1:8080"),
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SendMessageRequest {
    message: IncomingMessage,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IncomingMessage {
    message_id: String,
    #[serde(default)]
    parts: TextParts,
}

/// The texts of a list of parts, read one part at a time: the other members of a part are
/// skipped, not built. A caller's message or a specialist's reply of many small objects
/// would cost up to ~85 times its text as `serde_json::Value`s (a 31 MiB reply took 2.6 GB);
/// read this way it costs its texts.
#[derive(Debug, Default)]
struct TextParts(Vec<String>);

impl<'de> Deserialize<'de> for TextParts {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct TextOnly {
            #[serde(default)]
            text: Option<String>,
        }
        struct Parts;
        impl<'de> serde::de::Visitor<'de> for Parts {
            type Value = TextParts;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of parts")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<TextParts, A::Error> {
                let mut texts = Vec::new();
                while let Some(part) = seq.next_element::<TextOnly>()? {
                    texts.extend(part.text);
                }
                Ok(TextParts(texts))
            }
        }
        deserializer.deserialize_seq(Parts)
    }
}

/// What the coordinator reads of a specialist's reply: the texts of a Message's parts, or
/// of a Task's status message and artifacts.
#[derive(Debug, Default, Deserialize)]
struct Reply {
    #[serde(default)]
    message: Option<WithParts>,
    #[serde(default)]
    task: Option<TaskTexts>,
}

#[derive(Debug, Default, Deserialize)]
struct WithParts {
    #[serde(default)]
    parts: TextParts,
}

#[derive(Debug, Default, Deserialize)]
struct TaskTexts {
    #[serde(default)]
    status: Option<StatusTexts>,
    #[serde(default)]
    artifacts: Vec<WithParts>,
}

#[derive(Debug, Default, Deserialize)]
struct StatusTexts {
    #[serde(default)]
    message: Option<WithParts>,
}

/// The text parts of a reply, one a line.
fn reply_text(reply: &Reply) -> String {
    let status = reply
        .task
        .as_ref()
        .and_then(|task| task.status.as_ref())
        .and_then(|status| status.message.as_ref());
    let artifacts = reply.task.iter().flat_map(|task| &task.artifacts);
    let texts: Vec<&str> = reply
        .message
        .iter()
        .chain(status)
        .chain(artifacts)
        .flat_map(|parts| parts.parts.0.iter().map(String::as_str))
        .collect();
    texts.join("\n")
}

/// SendMessage: the same text to every specialist, concurrently. Each downstream messageId
/// is the incoming one and the agent's name, so a retried call to the coordinator is
/// deduplicated by the specialists too.
async fn send_message(
    State(coordinator): State<Coordinator>,
    request: SendMessageRequest,
    _: RequestContext,
) -> Result<Value, CoordinatorError> {
    let texts = &request.message.parts.0;
    if texts.is_empty() {
        return Err(CoordinatorError::NoText);
    }
    let text = texts.concat();
    let incoming = &request.message.message_id;
    let calls = coordinator.agents.iter().map(|(name, client)| {
        let params = json!({"message": {
            "messageId": format!("{incoming}:{name}"),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
        }});
        let client = client.clone();
        // The calls inherit this request's deadline: nothing to pass by hand.
        let call = async move { client.send_message::<_, Reply>(&params).await };
        (name.clone(), call)
    });
    let outcome = FanOut::new(coordinator.min_results).run(calls).await?;
    let mut answered = Map::new();
    let mut parts = Vec::new();
    for (name, reply) in &outcome.answered {
        let text = reply_text(reply);
        parts.push(json!({"text": format!("{name}: {text}")}));
        answered.insert(name.to_string(), Value::String(text));
    }
    let mut failed = Map::new();
    for failure in &outcome.failed {
        failed.insert(failure.agent().to_owned(), json!(failure.hop().reason));
    }
    for name in &outcome.unfinished {
        failed.insert(name.to_string(), json!("CANCELLED"));
    }
    let degraded = outcome.is_degraded();
    let summary = json!({"answered": answered, "failed": failed, "degraded": degraded});
    let mut result = json!({
        "message": {
            "messageId": format!("{incoming}:reply"),
            "role": "ROLE_AGENT",
            "parts": parts,
            "metadata": summary,
        },
    });
    // The same summary at the top, for callers that do not read A2A messages.
    if let (Value::Object(result), Value::Object(summary)) = (&mut result, summary) {
        result.extend(summary);
    }
    Ok(result)
}

/// GetAgentHealth: each specialist's circuit.
async fn agent_health(
    State(coordinator): State<Coordinator>,
    _: Option<Value>,
    _: RequestContext,
) -> Result<Value, CoordinatorError> {
    let mut health = Map::new();
    for (name, client) in coordinator.agents.iter() {
        // Every client here is built with a breaker from the registry.
        let Some(snapshot) = client.breaker().map(|breaker| breaker.snapshot()) else {
            continue;
        };
        health.insert(
            name.to_string(),
            json!({
                "state": snapshot.state.as_str(),
                "consecutiveFailures": snapshot.consecutive_failures,
                "failures": snapshot.failures,
                "successes": snapshot.successes,
                "rateLimited": snapshot.rate_limited,
                "rejected": snapshot.rejected,
                "trips": snapshot.trips,
                "timeToHalfOpenMs": snapshot.time_to_half_open.map(|d| d.as_millis() as u64),
            }),
        );
    }
    Ok(Value::Object(health))
}

/// The JSON-RPC endpoint.
pub fn json_rpc(coordinator: Coordinator) -> JsonRpc<Coordinator> {
    JsonRpc::with_state(coordinator)
        .timeout(Duration::from_secs(30))
        .method("SendMessage", send_message)
        .method("GetAgentHealth", agent_health)
        .alias("message/send", "SendMessage")
}

async fn agent_card(State(coordinator): State<Coordinator>) -> Json<Value> {
    let base = coordinator.public_url.trim_end_matches('/');
    let names: Vec<&str> = coordinator.agents.iter().map(|(n, _)| n.as_ref()).collect();
    Json(json!({
        "name": "a2a-error example coordinator",
        "description": format!(
            "Sends each message to its specialists ({}) and answers once {} of them answer.",
            names.join(", "),
            coordinator.min_results
        ),
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": [
            {"url": format!("{base}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": false, "pushNotifications": false},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "fan-out", "name": "Fan-out", "description":
            "Asks every specialist and reports who answered, who failed and why.",
            "tags": ["coordinator"]}]
    }))
}

/// The coordinator on one router: JSON-RPC at `POST /` and the agent card (`main.rs` adds
/// `GET /metrics`).
pub fn router(coordinator: Coordinator) -> Router {
    Router::new()
        .merge(json_rpc(coordinator.clone()).into_router())
        .route("/.well-known/agent-card.json", get(agent_card))
        .fallback(rest::not_found)
        .layer(rest::StatusBodiesLayer)
        .with_state(coordinator)
}
