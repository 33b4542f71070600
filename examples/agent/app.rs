//! The example agent's application: what a user of a2a-error writes. Built from the public
//! API only. `main.rs` serves it; the tests run it as a process.

use std::sync::Arc;
use std::time::Duration;

use a2a_error::bounded::{BoundedMap, Change};
use a2a_error::server::rest::{self, Json};
use a2a_error::server::{App, Dedup, DedupError, DedupStore, JsonRpc, MemoryStore, RequestContext};
use a2a_error::{A2aError, StandardError};
use axum::Router;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Everything this agent can fail with.
#[derive(Debug, Clone, thiserror::Error, A2aError)]
pub enum AgentError {
    #[error("task {task_id} not found")]
    #[a2a(code = TASK_NOT_FOUND)]
    TaskNotFound {
        #[a2a(data)]
        task_id: String,
    },

    #[error("task {task_id} is {state} and cannot be canceled")]
    #[a2a(code = TASK_NOT_CANCELABLE)]
    NotCancelable {
        #[a2a(data)]
        task_id: String,
        state: String,
    },

    // The Display text is for the logs; the fake credential must never reach the wire.
    #[error("storage query failed: connect to db password=hunter2-secret: {0}")]
    #[a2a(code = INTERNAL_ERROR)]
    Storage(String),

    #[error("quota for this caller exhausted")]
    #[a2a(code = RATE_LIMITED, retry_after = 2)]
    RateLimited,

    #[error("backend warming up (attempt {attempt})")]
    #[a2a(code = AGENT_UNAVAILABLE)]
    Unavailable {
        #[a2a(data)]
        attempt: u32,
    },

    #[error(transparent)]
    #[a2a(transparent)]
    Standard(#[from] StandardError),
}

/// A2A 1.0 `Message` (proto JSON).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    pub role: String,
    #[serde(deserialize_with = "bounded_parts")]
    pub parts: Vec<Part>,
}

/// The most parts a message may have: a caller's message is read into memory, and a part
/// costs its text and some 100 bytes besides (4 MiB of tiny parts would be 500,000 of them,
/// 60 times the body in memory, and more the allocator keeps afterwards).
const MAX_PARTS: usize = 1_000;

/// Reads a message's parts, at most [`MAX_PARTS`]: one more is INVALID_PARAMS, before it is
/// read.
fn bounded_parts<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<Part>, D::Error> {
    struct Parts;
    impl<'de> serde::de::Visitor<'de> for Parts {
        type Value = Vec<Part>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "at most {MAX_PARTS} parts")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Vec<Part>, A::Error> {
            let mut parts = Vec::new();
            while let Some(part) = seq.next_element()? {
                if parts.len() == MAX_PARTS {
                    return Err(serde::de::Error::invalid_length(MAX_PARTS + 1, &self));
                }
                parts.push(part);
            }
            Ok(parts)
        }
    }
    deserializer.deserialize_seq(Parts)
}

/// A2A 1.0 `Part`: this agent reads text parts and keeps every other member as it came, as
/// its JSON text (one copy: members parsed into JSON values would cost up to ~85 times their
/// text), at most [`MAX_PART_MEMBERS`] of them.
#[derive(Clone, Debug, Default)]
pub struct Part {
    pub text: Option<String>,
    other: Vec<(String, Box<serde_json::value::RawValue>)>,
}

/// The most members a part may have besides `text`.
const MAX_PART_MEMBERS: usize = 16;

impl Part {
    /// A text part.
    pub fn text(text: String) -> Part {
        Part {
            text: Some(text),
            other: Vec::new(),
        }
    }
}

impl Serialize for Part {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        if let Some(text) = &self.text {
            map.serialize_entry("text", text)?;
        }
        for (key, value) in &self.other {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> serde::de::Visitor<'de> for Members {
            type Value = Part;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(
                    f,
                    "a part with at most {MAX_PART_MEMBERS} members besides text"
                )
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Part, A::Error> {
                let mut part = Part::default();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "text" {
                        part.text = map.next_value()?;
                    } else if part.other.len() == MAX_PART_MEMBERS {
                        return Err(serde::de::Error::invalid_length(
                            MAX_PART_MEMBERS + 2,
                            &self,
                        ));
                    } else {
                        part.other.push((key, map.next_value()?));
                    }
                }
                Ok(part)
            }
        }
        deserializer.deserialize_map(Members)
    }
}

/// A2A 1.0 `SendMessageRequest`.
#[derive(Clone, Debug, Deserialize)]
pub struct SendMessageRequest {
    pub message: Message,
}

/// A2A 1.0 `Task`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    pub context_id: String,
    /// The status as its JSON text (one allocation: a `serde_json::Value` of it took
    /// several times its text).
    pub status: Box<serde_json::value::RawValue>,
    pub history: Vec<Message>,
}

/// A2A 1.0 `SendMessageResponse`: this agent always answers with a task. Deserialize too: a
/// remembered reply is read back from the dedup store.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SendMessageResponse {
    pub task: Task,
}

/// `GetTaskRequest` / `CancelTaskRequest`.
#[derive(Debug, Deserialize)]
pub struct TaskIdRequest {
    pub id: String,
}

/// How long a SendMessage may run, and so how long a replica that died mid-work blocks its
/// messageId.
const CLAIM_TTL: Duration = Duration::from_secs(60);
/// How long a finished task stays readable.
const TASK_TTL: Duration = Duration::from_secs(3600);
/// The most bytes of tasks remembered (their texts, ids and a fixed overhead each). A store
/// that grows with every request is a memory leak any caller can drive: bound it in bytes,
/// and let the oldest go (a real agent would page them out to its database).
const TASK_BYTES: u64 = 64 << 20;

/// A task's weight in the store: what it holds (its status's JSON, its ids, each part's text
/// and members), plus a fixed overhead for its structures (measured: about 24,000 small tasks
/// and their replies took what they weigh in resident memory).
fn task_bytes(task: &Task) -> usize {
    let parts: usize = task
        .history
        .iter()
        .flat_map(|message| &message.parts)
        .map(|part| {
            let other: usize = part
                .other
                .iter()
                .map(|(key, value)| key.len() + value.get().len() + 48)
                .sum();
            other + part.text.as_ref().map_or(0, String::len) + 96
        })
        .sum();
    let messages: usize = task
        .history
        .iter()
        .map(|message| message.message_id.len() + message.role.len() + 128)
        .sum();
    TASK_FLOOR as usize
        + task.id.len()
        + task.context_id.len()
        + task.status.get().len()
        + parts
        + messages
}

/// The least a task weighs, and so at most `TASK_BYTES / TASK_FLOOR` tasks.
const TASK_FLOOR: u64 = 512;
/// What an attempt count weighs beside its id.
const ATTEMPT_BYTES: u64 = 64;

/// The agent's state, shared by both bindings: one `Arc`, so that the clone each request's
/// handler is given (axum's `State`) is one count, not one a store (four shared counts
/// written a request, each in a cache line of its own).
#[derive(Clone)]
pub struct Agent(Arc<Shared>);

/// What [`Agent`] shares.
pub struct Shared {
    tasks: BoundedMap<Task>,
    attempts: BoundedMap<u32>,
    dedup: Dedup<SendMessageResponse, AgentError>,
    /// Every SendMessage fails with AGENT_UNAVAILABLE (`--fail`): a specialist that is down.
    unavailable: bool,
    /// The base URL the agent card advertises: from configuration, never from the caller's
    /// `Host` header (behind a shared cache, a caller's Host would poison everyone's card).
    public_url: Box<str>,
}

impl std::ops::Deref for Agent {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl Default for Agent {
    fn default() -> Self {
        Agent::with_store(MemoryStore::default())
    }
}

impl Agent {
    /// An agent whose SendMessage replies are remembered in `store`: in this process
    /// ([`MemoryStore`]), or shared by replicas (`RedisStore`, `--redis URL`).
    pub fn with_store(store: impl DedupStore) -> Self {
        Agent::with_claim_ttl(store, CLAIM_TTL)
    }

    /// As [`with_store`](Self::with_store), with claims that last `claim_ttl`.
    pub fn with_claim_ttl(store: impl DedupStore, claim_ttl: Duration) -> Self {
        Agent(Arc::new(Shared {
            // Bounded in bytes, not only in count: six 4 MiB messages must not keep 2.8 GB.
            tasks: BoundedMap::new(TASK_BYTES / TASK_FLOOR, TASK_BYTES),
            attempts: BoundedMap::new(TASK_BYTES / 16 / ATTEMPT_BYTES, TASK_BYTES / 16),
            public_url: "http://127.0.0.1:8080".into(),
            // Retries of SendMessage within 10 minutes of its reply get that reply, scoped by
            // the caller's Authorization header (its bytes, without loss); a handler never
            // runs longer than its claim.
            dedup: Dedup::with_store(store)
                .window(Duration::from_secs(600))
                .claim_ttl(claim_ttl)
                .identify(a2a_error::server::scope::authorization),
            unavailable: false,
        }))
    }

    /// This agent, failing every SendMessage with AGENT_UNAVAILABLE (a specialist that is
    /// down, for the coordinator's tests and demos).
    pub fn unavailable(mut self) -> Self {
        self.configured().unavailable = true;
        self
    }

    /// The base URL the agent card advertises (default `http://127.0.0.1:8080`).
    pub fn public_url(mut self, url: &str) -> Self {
        self.configured().public_url = url.into();
        self
    }

    /// The state, while it is configured: before the agent is cloned (served).
    fn configured(&mut self) -> &mut Shared {
        Arc::get_mut(&mut self.0).expect("an Agent is configured before it is cloned")
    }

    /// SendMessage, safe to retry: the same messageId from the same caller runs the work
    /// once, on any replica sharing the store.
    pub async fn send_message(
        &self,
        headers: &HeaderMap,
        request: SendMessageRequest,
    ) -> Result<SendMessageResponse, DedupError<AgentError>> {
        let agent = self.clone();
        let id = request.message.message_id.clone();
        self.dedup
            .run(
                "SendMessage",
                headers,
                &id,
                request.message,
                |message| async move { agent.run_message(message).await },
            )
            .await
    }

    async fn run_message(&self, message: Message) -> Result<SendMessageResponse, AgentError> {
        let text: String = message
            .parts
            .iter()
            .filter_map(|p| p.text.as_deref())
            .collect();
        let id = &message.message_id;
        let attempt = self.attempts.update(id, |seen| {
            let attempt = seen.map_or(1, |n| n + 1);
            let weight = id.len() as u64 + ATTEMPT_BYTES;
            let put = Change::Put {
                value: attempt,
                weight,
                ttl: TASK_TTL,
            };
            (put, attempt)
        });
        if self.unavailable {
            return Err(AgentError::Unavailable { attempt });
        }
        if text == "fail:internal" {
            return Err(AgentError::Storage(
                "relation \"tasks\" does not exist".into(),
            ));
        }
        if text == "fail:panic" {
            panic!("the handler panicked on purpose");
        }
        if text == "fail:rate_limited" {
            return Err(AgentError::RateLimited);
        }
        if text == "fail:unsupported" {
            return Err(StandardError::UnsupportedOperation.into());
        }
        if let Some(n) = text
            .strip_prefix("flaky:")
            .and_then(|n| n.parse::<u32>().ok())
            && attempt <= n
        {
            return Err(AgentError::Unavailable { attempt });
        }
        if let Some(ms) = text
            .strip_prefix("sleep:")
            .and_then(|ms| ms.parse::<u64>().ok())
        {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        // Random (the OS's generator): a task id names a task to anyone who has it, so it must
        // not be guessable from another's.
        let id = format!("task-{}", uuid::Uuid::new_v4().simple());
        let context_id = message
            .context_id
            .clone()
            .unwrap_or_else(|| format!("ctx-{id}"));
        let reply = Message {
            message_id: format!("{id}-reply"),
            context_id: Some(context_id.clone()),
            task_id: Some(id.clone()),
            role: "ROLE_AGENT".into(),
            parts: vec![Part::text(format!("echo: {text}"))],
        };
        let task = Task {
            id: id.clone(),
            context_id,
            status: serde_json::value::to_raw_value(
                &json!({"state": "TASK_STATE_COMPLETED", "message": reply}),
            )
            .map_err(|_| StandardError::Internal)?,
            history: vec![message],
        };
        let weight = (id.len() + task_bytes(&task)) as u64;
        // Stored, or the caller is told: never a task that answers TASK_NOT_FOUND later.
        if weight > self.tasks.max_record_bytes() {
            return Err(StandardError::ContentTooLarge.into());
        }
        self.tasks.put(&id, task.clone(), weight, TASK_TTL);
        Ok(SendMessageResponse { task })
    }

    /// GetTask.
    pub fn get_task(&self, id: &str) -> Result<Task, AgentError> {
        self.tasks.get(id).ok_or_else(|| AgentError::TaskNotFound {
            task_id: id.to_owned(),
        })
    }

    /// CancelTask: every task here completes at once, so none can be canceled.
    pub fn cancel_task(&self, id: &str) -> Result<Task, AgentError> {
        let task = self.get_task(id)?;
        Err(AgentError::NotCancelable {
            task_id: task.id,
            state: "completed".into(),
        })
    }
}

/// The JSON-RPC endpoint (A2A 1.0 method names, and the 0.3 names as aliases). Its handlers
/// reach the agent as axum's `State`, as the REST handlers below do.
pub fn json_rpc(agent: Agent) -> JsonRpc<Agent> {
    JsonRpc::with_state(agent)
        .timeout(Duration::from_secs(30))
        .method("SendMessage", rpc_send)
        .method("GetTask", rpc_get)
        .method("CancelTask", rpc_cancel)
        .alias("message/send", "SendMessage")
        .alias("tasks/get", "GetTask")
        .alias("tasks/cancel", "CancelTask")
}

async fn rpc_send(
    State(agent): State<Agent>,
    request: SendMessageRequest,
    ctx: RequestContext,
) -> Result<SendMessageResponse, DedupError<AgentError>> {
    agent.send_message(&ctx.headers, request).await
}

async fn rpc_get(
    State(agent): State<Agent>,
    request: TaskIdRequest,
    _: RequestContext,
) -> Result<Task, AgentError> {
    agent.get_task(&request.id)
}

async fn rpc_cancel(
    State(agent): State<Agent>,
    request: TaskIdRequest,
    _: RequestContext,
) -> Result<Task, AgentError> {
    agent.cancel_task(&request.id)
}

async fn rest_send(
    State(agent): State<Agent>,
    headers: HeaderMap,
    Json(request): Json<SendMessageRequest>,
) -> Result<Json<SendMessageResponse>, DedupError<AgentError>> {
    agent.send_message(&headers, request).await.map(Json)
}

async fn rest_get(
    State(agent): State<Agent>,
    Path(id): Path<String>,
) -> Result<Json<Task>, AgentError> {
    agent.get_task(&id).map(Json)
}

async fn rest_task_action(
    State(agent): State<Agent>,
    Path(id_action): Path<String>,
) -> Result<Json<Task>, AgentError> {
    match id_action.strip_suffix(":cancel") {
        Some(id) => agent.cancel_task(id).map(Json),
        None => Err(StandardError::MethodNotFound.into()),
    }
}

async fn agent_card(State(agent): State<Agent>) -> Json<Value> {
    let base = agent.public_url.trim_end_matches('/');
    Json(json!({
        "name": "a2a-error example agent",
        "description": "Echoes text; fails on demand (fail:internal, fail:panic, fail:rate_limited, fail:unsupported, flaky:N, sleep:MS).",
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": [
            {"url": format!("{base}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": base, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": false, "pushNotifications": false},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "Echoes the text it is sent.",
                    "tags": ["echo", "testing"]}]
    }))
}

/// The whole agent as `serve` serves it: JSON-RPC at `POST /`, answered without being routed
/// (see `server::App`), and behind it REST and the agent card. The JSON-RPC endpoint answers
/// every request itself, in JSON, so it stays outside the REST layers (each layer costs a
/// boxed service clone and a boxed future per request).
pub fn app_with(agent: Agent) -> App {
    json_rpc(agent.clone()).in_front_of(rest_router(agent))
}

/// REST and the agent card, within the REST layers.
fn rest_router(agent: Agent) -> Router {
    Router::new()
        .route("/message:send", post(rest_send))
        .route("/tasks/{id}", get(rest_get).post(rest_task_action))
        .route("/.well-known/agent-card.json", get(agent_card))
        .fallback(rest::not_found)
        .layer(rest::catch_panic())
        .layer(rest::RequireVersionLayer::new(["1.0"]))
        // Every REST error a framework layer produces (a wrong HTTP method, a bad path) is a
        // google.rpc.Status body too.
        .layer(rest::StatusBodiesLayer)
        .with_state(agent)
}
