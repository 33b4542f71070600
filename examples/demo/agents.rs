//! The demo's agents, built with the library and served on loopback: five specialists that
//! each fail in their own way, and a planner that fans out to them.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_error::client::{ClientError, FanOut, FanOutError};
use a2a_error::resilience::breaker::{BreakDuration, BreakerConfig, BreakerRegistry};
use a2a_error::resilience::{Fallback, RetryPolicy};
use a2a_error::server::{JsonRpc, RequestContext, ServeLimits, serve};
use a2a_error::{A2aError, Client, StandardError};
use axum::extract::State;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::timeline::{Outcome, Timeline};

/// What the specialists fail with: the library's derive on an enum of the demo's own.
#[derive(Debug, thiserror::Error, A2aError)]
#[a2a(domain = "specialists.demo")]
pub enum SpecialistError {
    #[error("quota exhausted for this minute")]
    #[a2a(code = RATE_LIMITED, retry_after = 1)]
    RateLimited,

    #[error("backend {0} refused the connection")]
    #[a2a(code = AGENT_UNAVAILABLE)]
    Unavailable(#[a2a(default)] String),

    #[error("issuer declined card {0}")]
    #[a2a(code = -32090, reason = "CARD_DECLINED", message = "The card was declined")]
    CardDeclined(#[a2a(default)] String),

    #[error(transparent)]
    #[a2a(transparent)]
    Standard(#[from] StandardError),
}

/// What search's handler panics with: a secret that must stay in the agent's log.
pub const PANIC_TEXT: &str =
    "index out of range in fare cache (db=postgres://admin:hunter2@10.0.0.7)";

/// How a specialist behaves.
#[derive(Clone, Copy, Debug)]
pub enum Behaviour {
    /// Answers in 20 ms; the text `panic` makes its handler panic.
    Healthy,
    /// The first attempt of each message is RATE_LIMITED with a 1 s Retry-After; the text
    /// `book` is a final CARD_DECLINED.
    RateLimits,
    /// The first `n` attempts of each message are AGENT_UNAVAILABLE.
    Flaky(u32),
    /// Every attempt is AGENT_UNAVAILABLE: its backend is gone.
    Down,
    /// Answers after this long.
    Slow(Duration),
}

/// One specialist.
pub struct Specialist {
    name: &'static str,
    behaviour: Behaviour,
    timeline: Timeline,
    attempts: Mutex<HashMap<String, u32>>,
}

/// The text of a message's first part (a request's or a reply's), or "".
pub fn first_text(message: &Value) -> &str {
    message
        .pointer("/message/parts/0/text")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A request's messageId and text.
fn text_of(request: &Value) -> (String, String) {
    let id = request
        .pointer("/message/messageId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    (id.to_owned(), first_text(request).to_owned())
}

fn reply(name: &str, id: &str, text: String) -> Value {
    json!({"message": {
        "messageId": format!("{id}:{name}"),
        "role": "ROLE_AGENT",
        "parts": [{"text": text}],
    }})
}

async fn specialist_send(
    State(agent): State<Arc<Specialist>>,
    request: Value,
    _: RequestContext,
) -> Result<Value, SpecialistError> {
    let (id, text) = text_of(&request);
    let attempt = {
        let mut attempts = agent.attempts.lock().unwrap_or_else(|e| e.into_inner());
        let n = attempts.entry(id.clone()).or_insert(0);
        *n += 1;
        *n
    };
    let mut record = agent.timeline.attempt(agent.name);
    let result = match agent.behaviour {
        Behaviour::Healthy if text == "panic" => {
            panic!("{PANIC_TEXT}")
        }
        Behaviour::Healthy => {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(format!("3 itineraries for {text:?}"))
        }
        Behaviour::RateLimits if text == "book" => {
            Err(SpecialistError::CardDeclined("4111-1111-1111-1111".into()))
        }
        Behaviour::RateLimits if attempt == 1 => Err(SpecialistError::RateLimited),
        Behaviour::RateLimits => Ok("€412 all-in".to_owned()),
        Behaviour::Flaky(n) if attempt <= n => {
            Err(SpecialistError::Unavailable("hotel-db-2".into()))
        }
        Behaviour::Flaky(_) => Ok("Hotel Sole, 2 nights".to_owned()),
        Behaviour::Down => Err(SpecialistError::Unavailable("forecast-api".into())),
        Behaviour::Slow(delay) => {
            tokio::time::sleep(delay).await;
            Ok("visa not needed".to_owned())
        }
    };
    match &result {
        Ok(answer) => record.set(Outcome::Ok, format!("ok: {answer}")),
        Err(error) => {
            let outcome = if error.retry_hint().is_retryable() {
                Outcome::Retryable
            } else {
                Outcome::Failed
            };
            record.set(
                outcome,
                format!("{} {}", error.http_status(), error.reason()),
            );
        }
    }
    result.map(|answer| reply(agent.name, &id, answer))
}

/// Serves `router` on a fresh loopback port with the library's connection limits.
async fn spawn(router: axum::Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("a bound address");
    tokio::spawn(serve(listener, router, ServeLimits::default()));
    addr
}

/// Starts a specialist; returns its JSON-RPC URL.
pub async fn specialist(name: &'static str, behaviour: Behaviour, timeline: &Timeline) -> String {
    let state = Arc::new(Specialist {
        name,
        behaviour,
        timeline: timeline.clone(),
        attempts: Mutex::new(HashMap::new()),
    });
    let rpc = JsonRpc::with_state(state)
        .method("SendMessage", specialist_send)
        .timeout(Duration::from_secs(30));
    let addr = spawn(rpc.into_router()).await;
    format!("http://{addr}/")
}

/// The planner's errors: a failed fan-out, or the booking agent's failure passed on.
#[derive(Debug, thiserror::Error, A2aError)]
#[a2a(domain = "planner.demo")]
pub enum PlannerError {
    #[error(transparent)]
    #[a2a(transparent)]
    Specialists(#[from] FanOutError),

    #[error("the booking failed")]
    #[a2a(downstream)]
    Booking(a2a_error::client::Downstream),

    #[error(transparent)]
    #[a2a(transparent)]
    Standard(#[from] StandardError),
}

/// The planner's clients: one per specialist, circuits from one registry.
#[derive(Clone)]
struct Planner {
    search: Client,
    hotels: Client,
    weather: Client,
    visa: Client,
    pricing: Client,
    timeline: Timeline,
}

/// The retry policy of every client in the demo: the defaults, with a shorter first delay so
/// that the run is quick to watch.
pub fn retry_policy() -> RetryPolicy<ClientError> {
    RetryPolicy::new().base_delay(Duration::from_millis(120))
}

/// Circuits that trip after 5 failures in a row and stay open 1 s × trips in a row.
pub fn breaker_config() -> BreakerConfig {
    BreakerConfig::new()
        .consecutive_failures(5)
        .break_duration(BreakDuration::Growing {
            base: Duration::from_secs(1),
            max: Duration::from_secs(10),
            jitter: 0.0,
        })
}

/// `plan …`: asks search, hotels, weather (else its cache) and visa at once and answers once 3
/// of them did, within the caller's deadline. `book`: asks pricing, whose failure is passed
/// on with its chain.
async fn planner_send(
    State(planner): State<Planner>,
    request: Value,
    _: RequestContext,
) -> Result<Value, PlannerError> {
    let mut record = planner.timeline.attempt("planner");
    let result = plan(&planner, &request).await;
    match &result {
        Ok(reply) => {
            let degraded = reply.pointer("/message/metadata/degraded") == Some(&json!(true));
            let outcome = if degraded { "ok, degraded" } else { "ok" };
            record.set(Outcome::Ok, outcome);
        }
        Err(error) => record.set(
            Outcome::Failed,
            format!("{} {}", error.http_status(), error.reason()),
        ),
    }
    result
}

async fn plan(planner: &Planner, request: &Value) -> Result<Value, PlannerError> {
    let (id, text) = text_of(request);
    // Each downstream messageId is the incoming one and the agent's name.
    let ask = |client: &Client| {
        let params = json!({"message": {
            "messageId": format!("{id}:{}", client.name()),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
        }});
        let client = client.clone();
        async move { client.send_message::<_, Value>(&params).await }
    };
    if text == "book" {
        let reply = ask(&planner.pricing)
            .await
            .map_err(|error| PlannerError::Booking(planner.pricing.downstream(error)))?;
        return Ok(reply);
    }
    // The forecast agent, else yesterday's forecast: a degraded answer, marked.
    let weather_call = ask(&planner.weather);
    let weather = Fallback::new("weather", || weather_call)
        .or_default(
            "cached forecast",
            json!({"message": {"parts": [{"text": "sunny (yesterday's forecast)"}]}}),
        )
        .run();
    // No deadline to set here: each call inherits this request's, less a margin for the reply.
    let outcome = FanOut::new(3)
        .call(planner.search.name(), ask(&planner.search))
        .call(planner.hotels.name(), ask(&planner.hotels))
        .fallback(planner.weather.name(), weather)
        .call(planner.visa.name(), ask(&planner.visa))
        .run()
        .await?;
    let mut answered = serde_json::Map::new();
    let mut parts = Vec::new();
    for (name, reply) in &outcome.answered {
        let text = first_text(reply);
        parts.push(json!({"text": format!("{name}: {text}")}));
        let degraded = outcome.degraded.contains(name);
        answered.insert(
            name.to_string(),
            json!({"text": text, "degraded": degraded}),
        );
    }
    let mut failed = serde_json::Map::new();
    for failure in &outcome.failed {
        failed.insert(failure.agent().to_owned(), json!(failure.hop().reason));
    }
    for name in &outcome.unfinished {
        failed.insert(name.to_string(), json!("CANCELLED"));
    }
    Ok(json!({"message": {
        "messageId": format!("{id}:plan"),
        "role": "ROLE_AGENT",
        "parts": parts,
        "metadata": {"answered": answered, "failed": failed, "degraded": outcome.is_degraded()},
    }}))
}

/// The specialists' URLs, by name.
pub struct Specialists {
    pub search: String,
    pub pricing: String,
    pub hotels: String,
    pub weather: String,
    pub visa: String,
}

/// Starts the planner; returns its JSON-RPC URL.
pub async fn planner(urls: &Specialists, timeline: &Timeline) -> String {
    let breakers = BreakerRegistry::new(breaker_config());
    let client = |name: &str, url: &str| {
        Client::jsonrpc(url)
            .name(name)
            .breakers(&breakers)
            .retry(retry_policy())
            .build()
            .expect("a valid URL")
    };
    let state = Planner {
        search: client("search", &urls.search),
        hotels: client("hotels", &urls.hotels),
        weather: client("weather", &urls.weather),
        visa: client("visa", &urls.visa),
        pricing: client("pricing", &urls.pricing),
        timeline: timeline.clone(),
    };
    let rpc = JsonRpc::with_state(state)
        .method("SendMessage", planner_send)
        .timeout(Duration::from_secs(30));
    let addr = spawn(rpc.into_router()).await;
    format!("http://{addr}/")
}
