//! The demo's tenth scene: model quotas. Two replicas of an agent share what `model-q`
//! states of its quota through Redis (when `redis-server` is installed; else each keeps its
//! own view), and a caller over its budget of tokens is refused without a model request
//! while another is served.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use a2a_error::A2aError;
use a2a_error::dependency::{
    CallerBudget, DependencyFailed, HttpDependency, HttpError, SharedQuota, for_caller,
};
use a2a_error::resilience::Fallback;
use a2a_error::resilience::breaker::BreakerRegistry;
use a2a_error::resilience::{Classify, RetryPolicy};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::models::{Provider, ask, serve};
use crate::timeline::{Kind, Outcome, Timeline};

/// How many requests `model-q` allows in its window, and the window's length.
const ALLOWED: u32 = 3;
const RESET: &str = "30s";

/// `model-q`: allows three requests, then refuses for 30 s, and says so on every reply
/// (OpenAI's headers); each answer used 60 tokens.
async fn quota_model(State(provider): State<Provider>) -> Response {
    let call = provider.calls.fetch_add(1, Ordering::SeqCst) + 1;
    let mut record = provider.timeline.attempt(provider.name);
    let remaining = ALLOWED.saturating_sub(call).to_string();
    let headers = [
        ("x-ratelimit-limit-requests", ALLOWED.to_string()),
        ("x-ratelimit-remaining-requests", remaining.clone()),
        ("x-ratelimit-reset-requests", RESET.to_owned()),
    ];
    if call > ALLOWED {
        record.set(Outcome::Retryable, "429: no requests left".to_owned());
        let mut reply = (
            StatusCode::TOO_MANY_REQUESTS,
            headers,
            "{\"error\": {\"message\": \"rate limit of org-7731\"}}",
        )
            .into_response();
        reply
            .headers_mut()
            .insert("retry-after", axum::http::HeaderValue::from_static("30"));
        return reply;
    }
    record.set(Outcome::Ok, format!("ok, {remaining} left"));
    (headers, axum::Json(answer("Rome: the Pantheon"))).into_response()
}

/// `model-c`, a cheaper model: always answers, 60 tokens each.
async fn cheap_model(State(provider): State<Provider>) -> Response {
    provider.calls.fetch_add(1, Ordering::SeqCst);
    let mut record = provider.timeline.attempt(provider.name);
    record.set(Outcome::Ok, "ok, 60 tokens".to_owned());
    axum::Json(answer("Rome: the Forum")).into_response()
}

fn answer(text: &str) -> Value {
    json!({"choices": [{"message": {"role": "assistant", "content": text}}],
           "usage": {"prompt_tokens": 20, "completion_tokens": 40, "total_tokens": 60}})
}

/// How a refused call reaches the agent's caller, in a line.
fn passed_on(error: &HttpError) -> String {
    let failed = DependencyFailed::model(error);
    let delay = error
        .delay_at(std::time::SystemTime::now())
        .map_or(String::new(), |delay| {
            format!(", retry in {} s", delay.as_secs())
        });
    format!("{} {}{delay}", failed.code(), failed.reason())
}

/// The scene.
pub async fn scene(timeline: &Timeline, breakers: &BreakerRegistry) {
    // The providers' states kept here: the scene counts what a model got, not what the
    // replicas think.
    let state = |name| Provider {
        name,
        calls: Arc::default(),
        timeline: timeline.clone(),
    };
    let (quota, cheap) = (state("model-q"), state("model-c"));
    let calls = Arc::clone(&quota.calls);
    let quota_url = serve(
        axum::Router::new()
            .route("/chat/completions", axum::routing::post(quota_model))
            .with_state(quota),
    )
    .await;
    let cheap_url = serve(
        axum::Router::new()
            .route("/chat/completions", axum::routing::post(cheap_model))
            .with_state(cheap),
    )
    .await;
    // A Redis for the fleet, when one can be started here.
    let redis = a2a_error_testkit::RedisServer::spawn().ok();
    let shared = redis
        .as_ref()
        .map(|redis| SharedQuota::connect(&redis.url).expect("a valid Redis URL"));
    let replica = |shared: &Option<SharedQuota>| {
        let mut model = HttpDependency::model("model-q", quota_url.clone())
            .breakers(breakers)
            .retry(RetryPolicy::default().max_attempts(1))
            .quota_waits(false);
        if let Some(shared) = shared {
            model = model.shared_quota(shared.clone());
        }
        model.build().expect("a valid URL")
    };
    let (replica_a, replica_b) = (replica(&shared), replica(&shared));
    let where_kept = if redis.is_some() {
        "on Redis"
    } else {
        "nowhere: no redis-server here, each replica keeps its own view"
    };
    timeline.push(Kind::Result {
        ok: true,
        text: format!(
            "replicas A and B ask model-q; what it states of its quota is shared {where_kept}"
        ),
    });
    for call in 1..=ALLOWED {
        let text = match ask(&replica_a, "three sights in Rome").await {
            Ok(answer) => format!("replica A call {call}: {answer}"),
            Err(error) => format!("replica A call {call}: {}", error.failure_reason()),
        };
        timeline.push(Kind::Result { ok: true, text });
    }
    // Replica A's last statement reaches Redis off its call's path: within moments.
    let stated = tokio::time::Instant::now();
    while let Some(redis) = &redis
        && redis
            .command(&["HGET", "a2a-quota:model-q", "r"])
            .is_ok_and(|left| left.trim() != "0")
        && stated.elapsed() < Duration::from_secs(2)
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Replica B, with a cheaper model to fall back on, within 2 s.
    let cheap = HttpDependency::model("model-c", cheap_url.clone())
        .breakers(breakers)
        .build()
        .expect("a valid URL");
    let before = calls.load(Ordering::SeqCst);
    let answered = Fallback::new("model-q", || ask(&replica_b, "three sights in Rome"))
        .or_if(
            |error: &HttpError| !error.is_refusal(),
            "model-c",
            || ask(&cheap, "three sights in Rome"),
        )
        .deadline(tokio::time::Instant::now() + Duration::from_secs(2))
        .run()
        .await;
    let sent = calls.load(Ordering::SeqCst) - before;
    let how = if sent == 0 {
        "model-q not sent (its quota is spent until the reset, as replica A learned)".to_owned()
    } else {
        format!("model-q got {sent} request and refused it (429)")
    };
    timeline.push(Kind::Result {
        ok: answered.is_ok(),
        text: match answered {
            Ok(answered) => format!(
                "replica B: {how}; {}: {}{}",
                answered.step,
                answered.value,
                if answered.is_degraded() {
                    " [degraded]"
                } else {
                    ""
                }
            ),
            Err(failed) => format!("replica B: {how}; no model answered: {failed}"),
        },
    });

    // Callers' budgets: 100 tokens a minute each, on the cheap model.
    let budgeted = HttpDependency::model("model-c", cheap_url)
        .breakers(breakers)
        .caller_budget(CallerBudget::per_minute(100))
        .build()
        .expect("a valid URL");
    for (caller, call) in [("alice", 1), ("alice", 2), ("alice", 3), ("bob", 1)] {
        let asked = for_caller(caller, ask(&budgeted, "and in Florence?")).await;
        let text = match asked {
            Ok(answer) => format!("{caller} call {call}: {answer} (60 tokens)"),
            Err(error) => format!(
                "{caller} call {call}: over her budget of 100 tokens a minute, nothing sent → {}",
                passed_on(&error)
            ),
        };
        timeline.push(Kind::Result { ok: true, text });
    }
}
