//! The SDK agent's application: an agent written on the official Rust SDK (`a2a-server-lf`'s
//! `DefaultRequestHandler`, an `AgentExecutor`, a task store bounded in bytes), its errors a
//! derived enum, served through a2a-error's bridge. `main.rs` serves it.

use std::sync::Arc;
use std::time::Duration;

use a2a::{
    A2AError, AgentCapabilities, AgentCard, Artifact, Message, Part, Role, StreamResponse,
    TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use a2a_error::bounded::{BoundedMap, Change};
use a2a_error::dependency::PushSender;
use a2a_error::sdk::{
    Bridge, Guarded, MemoryTaskStore, ProtoJson, PushDelivery, RedisTaskStore, SendDedup,
};
use a2a_error::server::{Dedup, DedupStore};
use a2a_error::{A2aError, StandardError};
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext, TaskStore};
use axum::Router;
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::json;

/// Everything this agent's executor can fail with.
#[derive(Debug, thiserror::Error, A2aError)]
pub enum AgentError {
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

/// The most bytes of tasks the agent keeps (see `MemoryTaskStore`).
const TASK_BYTES: u64 = 64 << 20;

type Events = BoxStream<'static, Result<StreamResponse, A2AError>>;

/// The executor: echoes text, fails on demand.
struct Echo {
    /// How many times each messageId was run (for `flaky:N`), bounded like the tasks.
    attempts: BoundedMap<u32>,
}

impl Echo {
    fn attempt(&self, message_id: &str) -> u32 {
        self.attempts.update(message_id, |seen| {
            let attempt = seen.map_or(1, |n| n + 1);
            let put = Change::Put {
                value: attempt,
                weight: message_id.len() as u64 + 64,
                ttl: Duration::from_secs(3600),
            };
            (put, attempt)
        })
    }
}

fn status(ctx: &ExecutorContext, state: TaskState, text: Option<String>) -> StreamResponse {
    let message = text.map(|text| {
        let mut message = Message::new(Role::Agent, vec![Part::text(text)]);
        message.task_id = Some(ctx.task_id.clone());
        message.context_id = Some(ctx.context_id.clone());
        message
    });
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: ctx.task_id.clone(),
        context_id: ctx.context_id.clone(),
        status: TaskStatus {
            state,
            message,
            timestamp: None,
        },
        metadata: None,
    })
}

/// The most chunks `stream:N` sends: a larger N is INVALID_PARAMS.
const MAX_CHUNKS: u32 = 10_000;

/// Chunk `n` of `of`: the artifact `chunk`, replaced by each chunk. The SDK's handler copies
/// the whole task for every event (twice), so a task that grew by every event would cost
/// time quadratic in the events; this one stays the same size, and its events cost linear
/// time.
fn chunk(task_id: &str, context_id: &str, n: u32, of: u32) -> StreamResponse {
    StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
        task_id: task_id.to_owned(),
        context_id: context_id.to_owned(),
        artifact: Artifact {
            artifact_id: "chunk".to_owned(),
            name: None,
            description: None,
            parts: vec![Part::text(format!("chunk {n}"))],
            metadata: None,
            extensions: None,
        },
        append: None,
        last_chunk: Some(n == of),
        metadata: None,
    })
}

/// The first `n` chunks, made one at a time as the stream is read (never all at once: `n`
/// comes from the caller).
fn chunks(ctx: &ExecutorContext, n: u32) -> Events {
    let (task_id, context_id) = (ctx.task_id.clone(), ctx.context_id.clone());
    stream::iter(1..=n)
        .map(move |i| Ok(chunk(&task_id, &context_id, i, n)))
        .boxed()
}

fn fail(error: AgentError) -> Result<StreamResponse, A2AError> {
    Err(error.into())
}

impl AgentExecutor for Echo {
    fn execute(&self, ctx: ExecutorContext) -> Events {
        let message = ctx.message.as_ref();
        let text: String = message
            .map(|message| message.parts.iter().filter_map(Part::text_str).collect())
            .unwrap_or_default();
        let message_id = message.map_or("", |message| message.message_id.as_str());
        let attempt = self.attempt(message_id);
        let internal = || AgentError::Storage("relation \"tasks\" does not exist".into());
        match text.as_str() {
            "fail:internal" => stream::iter([fail(internal())]).boxed(),
            "fail:panic" => panic!("the executor panicked on purpose"),
            "fail:rate_limited" => stream::iter([fail(AgentError::RateLimited)]).boxed(),
            "fail:unsupported" => {
                stream::iter([fail(StandardError::UnsupportedOperation.into())]).boxed()
            }
            "work:fail" => {
                stream::iter([Ok(status(&ctx, TaskState::Working, None)), fail(internal())]).boxed()
            }
            _ => {
                if let Some(n) = text.strip_prefix("flaky:").and_then(|n| n.parse().ok())
                    && attempt <= n
                {
                    return stream::iter([fail(AgentError::Unavailable { attempt })]).boxed();
                }
                let stream_of = |prefix: &str| {
                    text.strip_prefix(prefix)
                        .and_then(|n| n.parse::<u32>().ok())
                };
                if let Some(n) = stream_of("stream:fail_after:").or_else(|| stream_of("stream:"))
                    && n > MAX_CHUNKS
                {
                    return stream::iter([fail(StandardError::InvalidParams.into())]).boxed();
                }
                if let Some(n) = stream_of("stream:fail_after:") {
                    return chunks(&ctx, n)
                        .chain(stream::iter([fail(internal())]))
                        .boxed();
                }
                if let Some(n) = stream_of("stream:") {
                    let done = status(&ctx, TaskState::Completed, Some(format!("{n} chunks")));
                    return chunks(&ctx, n).chain(stream::iter([Ok(done)])).boxed();
                }
                let done = status(&ctx, TaskState::Completed, Some(format!("echo: {text}")));
                // `sleep:MS`: WORKING at once, COMPLETED after MS.
                if let Some(sleep) = text
                    .strip_prefix("sleep:")
                    .and_then(|ms| ms.parse::<u64>().ok())
                    .map(Duration::from_millis)
                {
                    let working = status(&ctx, TaskState::Working, None);
                    let done = stream::once(async move {
                        tokio::time::sleep(sleep).await;
                        Ok(done)
                    });
                    return stream::iter([Ok(working)]).chain(done).boxed();
                }
                stream::iter([Ok(done)]).boxed()
            }
        }
    }

    fn cancel(&self, ctx: ExecutorContext) -> Events {
        stream::iter([Ok(status(&ctx, TaskState::Canceled, None))]).boxed()
    }
}

/// The text of a part, for the executor.
trait TextStr {
    fn text_str(&self) -> Option<&str>;
}

impl TextStr for Part {
    fn text_str(&self) -> Option<&str> {
        match &self.content {
            a2a::PartContent::Text(text) => Some(text),
            _ => None,
        }
    }
}

/// The agent card, advertising both HTTP bindings at `public_url`, gRPC at `grpc_url` when
/// it is served, and streaming.
fn card(public_url: &str, grpc_url: Option<&str>) -> AgentCard {
    let base = public_url.trim_end_matches('/');
    let mut card = json!({
        "name": "a2a-error SDK agent",
        "description": "An agent on the official Rust SDK, served through a2a-error's bridge. Echoes text; fails on demand.",
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": [
            {"url": format!("{base}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": base, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": true, "pushNotifications": true},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "Echoes the text it is sent.",
                    "tags": ["echo", "testing"]}]
    });
    if let (Some(url), Some(interfaces)) = (grpc_url, card["supportedInterfaces"].as_array_mut()) {
        interfaces.push(json!({"url": url, "protocolBinding": "GRPC", "protocolVersion": "1.0"}));
    }
    serde_json::from_value::<ProtoJson<AgentCard>>(card)
        .expect("the card is valid")
        .0
}

/// The executor, its `flaky:N` attempts bounded like the tasks.
fn echo() -> Echo {
    Echo {
        attempts: BoundedMap::new(TASK_BYTES / 16 / 64, TASK_BYTES / 16),
    }
}

/// The SDK's handler over `executor` and `tasks`, advertising streaming and push
/// notifications (which the bridge serves and delivers: the handler is given no push store).
fn handler(executor: impl AgentExecutor, tasks: impl TaskStore) -> DefaultRequestHandler {
    DefaultRequestHandler::new(executor, tasks).with_capabilities(AgentCapabilities {
        streaming: Some(true),
        push_notifications: Some(true),
        extensions: None,
        extended_agent_card: None,
    })
}

/// The whole agent: its HTTP router (JSON-RPC at `POST /`, REST, and the card) and its gRPC
/// service come from this one bridge, so they share the task store and the dedup.
/// SendMessage replies are remembered in `store`, keyed by messageId; they and the tasks are
/// scoped by the caller's `Authorization` header (the `authorization` metadata over gRPC),
/// the bridge's default scope.
///
/// With `shared`, the tasks are kept there (in Redis, shared by the replicas, each running
/// task leased to the replica that runs it) instead of in this process.
///
/// Push notifications are delivered by `push` (see [`Push`]): in this process, or with
/// `shared` in Redis beside the tasks.
pub fn bridge(
    public_url: &str,
    grpc_url: Option<&str>,
    store: impl DedupStore,
    shared: Option<RedisTaskStore>,
    push: &Push,
) -> Bridge<DefaultRequestHandler> {
    let dedup: SendDedup = Dedup::with_store(store).window(Duration::from_secs(600));
    served(public_url, grpc_url, shared, push).dedup(dedup)
}

/// How push notifications are delivered: the sender's settings, and how long a notification
/// may wait to be accepted before it is a dead letter.
pub struct Push {
    pub sender: PushSender,
    pub max_age: Duration,
}

/// The same bridge without its dedup (every SendMessage runs, `--no-dedup`): the baseline
/// that shows what the dedup costs in `benches/sdk/compare.sh`.
pub fn bridge_without_dedup(
    public_url: &str,
    grpc_url: Option<&str>,
    push: &Push,
) -> Bridge<DefaultRequestHandler> {
    served(public_url, grpc_url, None, push)
}

/// The guarded handler with its card and request timeout: all of the bridge but the dedup.
fn served(
    public_url: &str,
    grpc_url: Option<&str>,
    shared: Option<RedisTaskStore>,
    push: &Push,
) -> Bridge<DefaultRequestHandler> {
    let bridge = match shared {
        Some(tasks) => {
            let push = PushDelivery::redis(push.sender.clone(), &tasks).with_max_age(push.max_age);
            let guarded = Guarded::leased(echo(), tasks.clone()).push(push.clone());
            Bridge::new(handler(guarded, tasks.clone()))
                .shared_tasks(tasks)
                .push(push)
        }
        None => {
            let push = PushDelivery::memory(push.sender.clone()).with_max_age(push.max_age);
            let tasks = MemoryTaskStore::new(TASK_BYTES);
            let guarded = Guarded::new(echo(), Arc::new(tasks.clone())).push(push.clone());
            Bridge::new(handler(guarded, tasks)).push(push)
        }
    };
    bridge
        .card(card(public_url, grpc_url))
        .timeout(Duration::from_secs(30))
}

/// The same agent (executor and store) served by the SDK's own routers, as the SDK serves
/// it, with no guard (`--sdk-routers`): the baseline of `benches/sdk/compare.sh`.
pub fn sdk_routers() -> Router {
    let handler = Arc::new(handler(echo(), MemoryTaskStore::new(TASK_BYTES)));
    a2a_server::jsonrpc::jsonrpc_router(Arc::clone(&handler))
        .merge(a2a_server::rest::rest_router(handler))
}
