//! The demo's eighth scene: a model's answer streamed to an A2A caller. An agent on the
//! official SDK forwards its model's tokens (`sdk::forward_stream`); its first model is over
//! its quota before the first token and is replaced; then a stream is cut halfway, and the
//! caller sees what was sent stand and a FAILED task that says why.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use a2a::{A2AError, StreamResponse};
use a2a_error::dependency::{DependencyFailed, HttpCall, HttpDependency, HttpError, HttpStream};
use a2a_error::resilience::breaker::BreakerRegistry;
use a2a_error::resilience::{Answered, Classify, Fallback};
use a2a_error::sdk::{Bridge, Guarded, MemoryTaskStore, forward_stream};
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::{Value, json};

use crate::models::{Provider, model, provider, serve};
use crate::timeline::{Kind, Outcome, Timeline};

/// The tokens of the streamed answer.
const TOKENS: [&str; 4] = ["Rome:", " the Pantheon,", " the Forum,", " Trastevere"];

/// A fake streaming provider: `model-a` is over its quota (429, Retry-After: 30 s, longer than
/// the caller allows); `model-b` streams its answer, and cuts its second one after two tokens.
async fn completions(State(provider): State<Provider>) -> Response {
    let call = provider.calls.fetch_add(1, Ordering::SeqCst) + 1;
    let mut record = provider.timeline.attempt(provider.name);
    if provider.name == "model-a" {
        record.set(Outcome::Retryable, "429 Retry-After: 30, before any token");
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "30")],
            "{\"error\": {\"message\": \"quota exceeded for org-7731\"}}",
        )
            .into_response();
    }
    let cut = call > 1;
    let sent = if cut { 2 } else { TOKENS.len() };
    let mut body = String::new();
    for token in &TOKENS[..sent] {
        let chunk = json!({"choices": [{"index": 0, "delta": {"content": token}}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    if cut {
        record.set(
            Outcome::Failed,
            "streamed 2 tokens, then the connection dropped",
        );
    } else {
        body.push_str("data: [DONE]\n\n");
        record.set(Outcome::Ok, "streamed 4 tokens");
    }
    // Each token a moment after the last, as a model sends them.
    let chunks = body
        .split_inclusive("\n\n")
        .map(str::to_owned)
        .collect::<Vec<_>>();
    let paced = stream::iter(chunks).then(|chunk| async move {
        tokio::time::sleep(Duration::from_millis(60)).await;
        Ok::<_, std::io::Error>(chunk)
    });
    (
        [("content-type", "text/event-stream")],
        axum::body::Body::from_stream(paced),
    )
        .into_response()
}

/// The agent's executor: each message's streamed answer, model-a first, model-b after it.
struct Streamer {
    primary: HttpDependency,
    fallback: HttpDependency,
}

async fn open(model: &HttpDependency, text: &str) -> Result<HttpStream, HttpError> {
    let body = json!({"model": model.name(), "stream": true,
                      "messages": [{"role": "user", "content": text}]});
    model
        .stream(HttpCall::post("/chat/completions").json(&body)?)
        .await
}

impl AgentExecutor for Streamer {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let (primary, fallback) = (self.primary.clone(), self.fallback.clone());
        forward_stream(&ctx, async move {
            let text = "three sights in Rome";
            let answered: Answered<HttpStream> = Fallback::new("model-a", || open(&primary, text))
                .or_if(
                    |e: &HttpError| !e.is_refusal(),
                    "model-b",
                    || open(&fallback, text),
                )
                .run()
                .await
                .map_err(|failed| A2AError::from(DependencyFailed::models(&failed)))?;
            Ok(answered)
        })
    }

    fn cancel(&self, _: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        stream::empty().boxed()
    }
}

/// The scene: two streamed answers to an A2A caller, each event as it arrives.
pub async fn scene(timeline: &Timeline, breakers: &BreakerRegistry) {
    let model = |name, url| model(name, url, breakers);
    let executor = Streamer {
        primary: model("model-a", provider("model-a", timeline, completions).await),
        fallback: model("model-b", provider("model-b", timeline, completions).await),
    };
    let tasks = MemoryTaskStore::new(16 << 20);
    let handler =
        DefaultRequestHandler::new(Guarded::new(executor, Arc::new(tasks.clone())), tasks);
    let agent = serve(Bridge::new(handler).router()).await;

    for (call, id) in [(1, "stream-1"), (2, "stream-2")] {
        let request = json!({"jsonrpc": "2.0", "id": call, "method": "SendStreamingMessage",
            "params": {"message": {"messageId": id, "role": "ROLE_USER",
                                   "parts": [{"text": "three sights in Rome"}]}}});
        let response = reqwest::Client::new()
            .post(format!("{agent}/"))
            .header("A2A-Deadline-Ms", "3000")
            .json(&request)
            .send()
            .await;
        let mut response = match response {
            Ok(response) => response,
            Err(_) => {
                timeline.push(Kind::Result {
                    ok: false,
                    text: format!("stream {call}: the agent did not answer"),
                });
                continue;
            }
        };
        let (mut pending, mut tokens) = (String::new(), 0);
        while let Ok(Some(chunk)) = response.chunk().await {
            pending.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = pending.find("\n\n") {
                let event: String = pending.drain(..end + 2).collect();
                let data = event.trim().trim_start_matches("data:").trim();
                let Ok(reply) = serde_json::from_str::<Value>(data) else {
                    continue;
                };
                report(timeline, call, &reply, &mut tokens);
            }
        }
    }
}

/// One event of stream `call`, as the caller sees it.
fn report(timeline: &Timeline, call: u32, reply: &Value, tokens: &mut usize) {
    let result = &reply["result"];
    if let Some(text) = result["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str() {
        *tokens += 1;
        timeline.push(Kind::Result {
            ok: true,
            text: format!("stream {call} token {tokens}: {text:?}"),
        });
        return;
    }
    let status = &result["statusUpdate"]["status"];
    let text =
        match status["state"].as_str() {
            Some("TASK_STATE_COMPLETED") => {
                let degraded = &result["statusUpdate"]["metadata"]["degraded"];
                let ok = format!("stream {call}: COMPLETED after {tokens} tokens");
                match degraded["step"].as_str() {
                    Some(step) => format!("{ok}, answered by {step} [degraded]"),
                    None => ok,
                }
            }
            Some("TASK_STATE_FAILED") => {
                let cause = &status["message"]["metadata"]["error"];
                timeline.push(Kind::Result {
                ok: false,
                text: format!(
                    "stream {call}: FAILED {} {} (retryable: {}); the {tokens} tokens sent stand",
                    cause["code"], cause["reason"].as_str().unwrap_or("?"), cause["retryable"]
                ),
            });
                return;
            }
            _ => match reply["error"]["data"][0]["reason"].as_str() {
                Some(reason) => format!("stream {call}: error {reason} before any token"),
                None => return,
            },
        };
    timeline.push(Kind::Result { ok: true, text });
}
