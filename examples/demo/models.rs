//! The demo's seventh scene: an agent's model and tool calls under the same layers. Two fake
//! model providers and a search tool that is down, on loopback.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use a2a_error::dependency::{HttpCall, HttpDependency, HttpError};
use a2a_error::resilience::Classify;
use a2a_error::resilience::breaker::BreakerRegistry;
use a2a_error::resilience::{Fallback, RetryPolicy};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::timeline::{Kind, Outcome, Timeline};

/// A fake provider on loopback, as its handler sees it: its name, how many calls it had, and
/// the timeline its attempts go on. Here `model-a` is over its quota (its first 429 asks for
/// 1 s, the next for 30 s); `model-b` answers.
#[derive(Clone)]
pub struct Provider {
    pub name: &'static str,
    pub calls: Arc<AtomicU32>,
    pub timeline: Timeline,
}

async fn completions(State(provider): State<Provider>) -> Response {
    let call = provider.calls.fetch_add(1, Ordering::SeqCst) + 1;
    let mut record = provider.timeline.attempt(provider.name);
    if provider.name == "model-a" {
        let wait = if call == 1 { "1" } else { "30" };
        record.set(Outcome::Retryable, format!("429 Retry-After: {wait}"));
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", wait)],
            "{\"error\": {\"message\": \"quota exceeded for org-7731\"}}",
        )
            .into_response();
    }
    record.set(Outcome::Ok, "ok: 3 sights".to_owned());
    axum::Json(json!({"choices": [{"message": {"role": "assistant",
        "content": "Rome: the Pantheon, the Forum, Trastevere"}}]}))
    .into_response()
}

/// Serves `completions` at `/chat/completions` as the provider `name`, on loopback; its URL.
pub async fn provider<H, T>(name: &'static str, timeline: &Timeline, completions: H) -> String
where
    H: axum::handler::Handler<T, Provider>,
    T: 'static,
{
    let state = Provider {
        name,
        calls: Arc::default(),
        timeline: timeline.clone(),
    };
    let app = axum::Router::new()
        .route("/chat/completions", axum::routing::post(completions))
        .with_state(state);
    serve(app).await
}

/// The model `name` at `url`, its breaker in `breakers` (the demo's summary reads them).
pub fn model(name: &'static str, url: String, breakers: &BreakerRegistry) -> HttpDependency {
    HttpDependency::model(name, url)
        .breakers(breakers)
        .build()
        .expect("a valid URL")
}

/// Serves `app` on loopback; its URL.
pub async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// Asks `model` for `text`: its first choice's content.
pub async fn ask(model: &HttpDependency, text: &str) -> Result<String, HttpError> {
    let body = json!({"model": model.name(), "messages": [{"role": "user", "content": text}]});
    let reply: Value = model
        .send(HttpCall::post("/chat/completions").json(&body)?)
        .await?
        .json()?;
    Ok(reply["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

/// The scene: a rate-limited model hands over to a second model within a deadline; a tool
/// that is down opens its circuit while the agent still answers without it.
pub async fn scene(timeline: &Timeline, breakers: &BreakerRegistry) {
    let model = |name, url| model(name, url, breakers);
    let primary = model("model-a", provider("model-a", timeline, completions).await);
    let fallback = model("model-b", provider("model-b", timeline, completions).await);
    // The tool's port is closed: every attempt is refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let tool_url = format!("http://{}", closed.local_addr().expect("an address"));
    drop(closed);
    let tool = HttpDependency::builder("tool", tool_url)
        .breakers(breakers)
        .retry(
            RetryPolicy::default()
                .max_attempts(2)
                .base_delay(Duration::from_millis(20)),
        )
        .build()
        .expect("a valid URL");

    let deadline = tokio::time::Instant::now() + Duration::from_millis(2500);
    timeline.push(Kind::Deadline {
        agent: "model-a".into(),
        at: timeline.now() + Duration::from_millis(2500),
    });
    let text = "three sights in Rome";
    let answered = Fallback::new("model-a", || ask(&primary, text))
        .share(0.6)
        .or_if(
            |e: &HttpError| !e.is_refusal(),
            "model-b",
            || ask(&fallback, text),
        )
        .deadline(deadline)
        .run()
        .await;
    match answered {
        Ok(answered) => timeline.push(Kind::Result {
            ok: true,
            text: format!(
                "{}: {}{}",
                answered.step,
                answered.value,
                if answered.is_degraded() {
                    " [degraded]"
                } else {
                    ""
                }
            ),
        }),
        Err(failed) => timeline.push(Kind::Result {
            ok: false,
            text: format!("no model answered: {failed}"),
        }),
    }

    for call in 1..=4 {
        let result = tool
            .send(HttpCall::get("/search?q=rome"))
            .await
            .and_then(|reply| reply.json::<Value>());
        let text = match result {
            Ok(found) => format!("tool call {call}: {found}"),
            Err(error) => format!(
                "tool call {call}: {} → the agent answers without it [degraded]",
                error.failure_reason()
            ),
        };
        timeline.push(Kind::Result { ok: true, text });
    }
}
