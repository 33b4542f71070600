//! A small agent built with the library, for the tests of its server parts that read an
//! agent's own state (how often it ran a message, which tasks it holds), which the example
//! agent, tested from outside as a process, does not show.
//!
//! SendMessage runs behind [`Dedup`] (scoped by `Authorization`); GetTask reads this
//! replica's tasks. JSON-RPC at `POST /`, REST at `POST /message:send`. A message's text
//! picks the outcome: `fail:unsupported` (a final error), `fail:internal` (retryable),
//! `flaky:N` (AGENT_UNAVAILABLE for the first N runs of its messageId), `sleep:MS` (then a
//! task); anything else completes a task at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_error::StandardError;
use a2a_error::server::rest::Json;
use a2a_error::server::{Dedup, DedupError, DedupStore, JsonRpc, MemoryStore, RequestContext};
use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use serde_json::{Value, json};

/// The agent's state: what ran, and the tasks it made.
#[derive(Clone)]
pub struct TestAgent {
    runs: Arc<Mutex<HashMap<String, u32>>>,
    tasks: Arc<Mutex<HashMap<String, Value>>>,
    dedup: Dedup<Value, StandardError>,
}

impl TestAgent {
    /// SendMessage replies remembered in this process.
    pub fn new() -> TestAgent {
        TestAgent::with_store(MemoryStore::default())
    }

    /// SendMessage replies remembered in `store` (shared by replicas on Redis).
    pub fn with_store(store: impl DedupStore) -> TestAgent {
        TestAgent::with_claim_ttl(store, Duration::from_secs(60))
    }

    /// As [`with_store`](Self::with_store), with claims that last `claim_ttl`.
    pub fn with_claim_ttl(store: impl DedupStore, claim_ttl: Duration) -> TestAgent {
        TestAgent {
            runs: Arc::default(),
            tasks: Arc::default(),
            dedup: Dedup::with_store(store)
                .claim_ttl(claim_ttl)
                .identify(a2a_error::server::scope::authorization),
        }
    }

    /// How many times this replica ran the work of `message_id`.
    pub fn runs(&self, message_id: &str) -> u32 {
        self.runs
            .lock()
            .unwrap()
            .get(message_id)
            .copied()
            .unwrap_or(0)
    }

    /// Whether this replica made the task `id`.
    pub fn has_task(&self, id: &str) -> bool {
        self.tasks.lock().unwrap().contains_key(id)
    }

    /// The agent on one router: JSON-RPC at `POST /`, REST at `POST /message:send`.
    pub fn router(&self) -> Router {
        Router::new()
            .merge(
                JsonRpc::with_state(self.clone())
                    .method("SendMessage", rpc_send)
                    .method("GetTask", rpc_get)
                    .into_router(),
            )
            .route("/message:send", post(rest_send))
            .with_state(self.clone())
    }

    async fn send(
        &self,
        headers: &HeaderMap,
        params: Value,
    ) -> Result<Value, DedupError<StandardError>> {
        let message = params["message"].clone();
        let id = message["messageId"].as_str().unwrap_or_default().to_owned();
        let agent = self.clone();
        self.dedup
            .run("SendMessage", headers, &id, message, |message| async move {
                agent.run(message).await
            })
            .await
    }

    async fn run(&self, message: Value) -> Result<Value, StandardError> {
        let id = message["messageId"].as_str().unwrap_or_default().to_owned();
        let text = message["parts"][0]["text"].as_str().unwrap_or_default();
        let run = {
            let mut runs = self.runs.lock().unwrap();
            let run = runs.entry(id.clone()).or_insert(0);
            *run += 1;
            *run
        };
        match text {
            "fail:unsupported" => return Err(StandardError::UnsupportedOperation),
            "fail:internal" => return Err(StandardError::Internal),
            _ => {}
        }
        let flaky = text.strip_prefix("flaky:").and_then(|n| n.parse().ok());
        if flaky.is_some_and(|fails: u32| run <= fails) {
            return Err(StandardError::AgentUnavailable { retry_after: None });
        }
        if let Some(ms) = text.strip_prefix("sleep:").and_then(|ms| ms.parse().ok()) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let task_id = format!("task-{id}-{}", uuid::Uuid::new_v4().simple());
        let task = json!({"id": task_id, "contextId": format!("ctx-{task_id}"),
            "status": {"state": "TASK_STATE_COMPLETED"}, "history": [message]});
        self.tasks
            .lock()
            .unwrap()
            .insert(task_id.clone(), task.clone());
        Ok(json!({ "task": task }))
    }
}

async fn rpc_send(
    State(agent): State<TestAgent>,
    params: Value,
    ctx: RequestContext,
) -> Result<Value, DedupError<StandardError>> {
    agent.send(&ctx.headers, params).await
}

async fn rpc_get(
    State(agent): State<TestAgent>,
    params: Value,
    _: RequestContext,
) -> Result<Value, StandardError> {
    let id = params["id"].as_str().unwrap_or_default();
    let task = agent.tasks.lock().unwrap().get(id).cloned();
    task.ok_or_else(|| StandardError::TaskNotFound {
        task_id: Some(id.to_owned()),
    })
}

async fn rest_send(
    State(agent): State<TestAgent>,
    headers: HeaderMap,
    Json(params): Json<Value>,
) -> Result<Json<Value>, DedupError<StandardError>> {
    agent.send(&headers, params).await.map(Json)
}
