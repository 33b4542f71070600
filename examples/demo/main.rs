//! The main job: a small system of agents surviving failures, on loopback.
//!
//! `cargo run --example demo [-- --svg FILE]`
//!
//! Starts five specialists built with the library (search is healthy, pricing rate-limits with
//! Retry-After, hotels is flaky, weather is down, visa is slow) and a planner that fans out to
//! them, then runs a scripted scenario through the library's client and prints what happens:
//! every attempt, every wait and why, the breaker's states, fallbacks, deadlines and errors
//! along the chain, then models, streams and MCP tools under the same layers, and model
//! quotas shared by two replicas with a caller over its budget. It ends with a
//! table read from the metrics recorder. `--svg FILE` also
//! draws the run as a timeline per agent. Colours and a progress line on a terminal, plain
//! text when piped.

mod agents;
mod models;
mod picture;
mod quotas;
mod streams;
mod summary;
mod timeline;
mod tools;

use std::process::ExitCode;
use std::time::Duration;

use a2a_error::client::ClientError;
use a2a_error::resilience::breaker::BreakerRegistry;
use a2a_error::{A2aError, Client};
use agents::{Behaviour, Specialists, breaker_config, retry_policy};
use metrics_util::debugging::DebuggingRecorder;
use serde_json::{Value, json};
use timeline::{Capture, Kind, Timeline};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::{EnvFilter, Layer};

const STEPS: u64 = 10;
/// The deadline of the fan-out call: the visa agent needs 5 s.
const PLAN_DEADLINE: Duration = Duration::from_millis(1500);

fn usage() -> ExitCode {
    eprintln!("usage: demo [--svg FILE]");
    ExitCode::from(2)
}

fn message(id: &str, text: &str) -> Value {
    json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]}})
}

/// One line about a failed call: what the client got, typed.
fn describe(error: &ClientError) -> String {
    match error {
        ClientError::CircuitOpen { retry_after } => format!(
            "CircuitOpen: nothing sent, try again in {:.2} s",
            retry_after.as_secs_f64()
        ),
        ClientError::Remote { error, .. } => format!(
            "{} {} from {} ({:?})",
            error.code(),
            error.reason(),
            error.domain(),
            error.message()
        ),
        other => format!("{} {}", other.code(), other.reason()),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut svg = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--svg" => match args.next() {
                Some(path) => svg = Some(std::path::PathBuf::from(path)),
                None => return usage(),
            },
            "-h" | "--help" => {
                println!("usage: demo [--svg FILE]");
                return ExitCode::SUCCESS;
            }
            _ => return usage(),
        }
    }

    // The scripted panic is reported by the library (through tracing, below); any other
    // panic is a bug of the demo and reported as usual.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info.payload().downcast_ref::<String>().map(String::as_str);
        if message != Some(agents::PANIC_TEXT) {
            default_hook(info);
        }
    }));

    // The recorder first: retry layers keep their histogram handles from their first call.
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().expect("no recorder installed yet");
    let timeline = Timeline::new(STEPS);
    let filter = EnvFilter::new("a2a_error_runtime=debug");
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(Capture(timeline.clone()).with_filter(filter)),
    )
    .expect("no subscriber installed yet");

    let urls = Specialists {
        search: agents::specialist("search", Behaviour::Healthy, &timeline).await,
        pricing: agents::specialist("pricing", Behaviour::RateLimits, &timeline).await,
        hotels: agents::specialist("hotels", Behaviour::Flaky(2), &timeline).await,
        weather: agents::specialist("weather", Behaviour::Down, &timeline).await,
        visa: agents::specialist("visa", Behaviour::Slow(Duration::from_secs(5)), &timeline).await,
    };
    let planner_url = agents::planner(&urls, &timeline).await;
    timeline.print(
        "Agents on loopback: search (healthy), pricing (rate-limits), hotels (flaky), \
         weather (down), visa (slow), and a planner that fans out to them.",
    );

    // The traveller's clients: the library's defaults (4 attempts, full jitter, a retry
    // budget, a circuit per agent), with a shorter first delay.
    let breakers = BreakerRegistry::new(breaker_config());
    let client = |name: &str, url: &str, deadline: Option<Duration>| {
        Client::jsonrpc(url)
            .name(name)
            .breakers(&breakers)
            .retry(retry_policy())
            .total_timeout(deadline)
            .build()
            .expect("a valid URL")
    };
    let search = client("search", &urls.search, None);
    let pricing = client("pricing", &urls.pricing, None);
    let hotels = client("hotels", &urls.hotels, None);
    let weather = client("weather", &urls.weather, None);
    let planner = client("planner", &planner_url, Some(PLAN_DEADLINE));

    let step = |number: usize, title: &str| {
        timeline.push(Kind::Step {
            number,
            title: title.to_owned(),
        })
    };
    let report = |result: Result<Value, ClientError>, what: &str| match result {
        Ok(reply) => timeline.push(Kind::Result {
            ok: true,
            text: format!("{what}: {}", agents::first_text(&reply)),
        }),
        Err(error) => timeline.push(Kind::Result {
            ok: false,
            text: format!("{what}: {}", describe(&error)),
        }),
    };

    step(1, "Retries with backoff: hotels fails twice, then answers");
    report(
        hotels
            .send_message(&message("trip-1", "Rome, 2 nights"))
            .await,
        "hotels",
    );

    step(2, "Retry-After honoured: pricing is over its quota");
    report(
        pricing.send_message(&message("trip-2", "Rome")).await,
        "pricing",
    );

    step(3, "Circuit breaker: weather is down");
    for call in 1..=3 {
        report(
            weather
                .send_message(&message(&format!("trip-3-{call}"), "Rome"))
                .await,
            &format!("weather call {call}"),
        );
    }
    let wait = weather
        .breaker()
        .and_then(|breaker| breaker.snapshot().time_to_half_open)
        .unwrap_or_default();
    timeline.print(&format!(
        "          (the traveller waits {:.2} s for the circuit to half-open)",
        wait.as_secs_f64()
    ));
    tokio::time::sleep(wait + Duration::from_millis(20)).await;
    report(
        weather.send_message(&message("trip-3-4", "Rome")).await,
        "weather call 4 (the probe)",
    );

    step(
        4,
        "Fan-out: the planner asks 4 agents, needs 3, within a 1.5 s deadline",
    );
    timeline.push(Kind::Deadline {
        agent: "planner".into(),
        at: timeline.now() + PLAN_DEADLINE,
    });
    match planner
        .send_message::<_, Value>(&message("trip-4", "plan Rome"))
        .await
    {
        Ok(reply) => {
            let metadata = &reply["message"]["metadata"];
            for (name, answer) in metadata["answered"].as_object().into_iter().flatten() {
                let marker = if answer["degraded"] == true {
                    " [degraded]"
                } else {
                    ""
                };
                timeline.push(Kind::Result {
                    ok: true,
                    text: format!("{name}: {}{marker}", answer["text"].as_str().unwrap_or("")),
                });
            }
            for (name, reason) in metadata["failed"].as_object().into_iter().flatten() {
                timeline.push(Kind::Result {
                    ok: false,
                    text: format!("{name}: {}", reason.as_str().unwrap_or("")),
                });
            }
            timeline.push(Kind::Result {
                ok: true,
                text: format!(
                    "planner answered with {} of 4 (degraded: {})",
                    metadata["answered"].as_object().map_or(0, |a| a.len()),
                    metadata["degraded"]
                ),
            });
        }
        Err(error) => report(Err(error), "planner"),
    }

    step(
        5,
        "An error from down the chain: the planner books through pricing",
    );
    match planner
        .send_message::<_, Value>(&message("trip-5", "book"))
        .await
    {
        Err(ClientError::Remote { error, .. }) => {
            timeline.push(Kind::Result {
                ok: false,
                text: format!(
                    "planner: {} {} ({})",
                    error.code(),
                    error.reason(),
                    error.domain()
                ),
            });
            for hop in error.chain() {
                timeline.print(&format!(
                    "          └ below it: {} failed with {} {} ({})",
                    hop.agent.as_deref().unwrap_or("?"),
                    hop.code,
                    hop.reason,
                    hop.domain.as_deref().unwrap_or("local")
                ));
            }
        }
        other => report(other, "planner"),
    }

    step(6, "A panic, sanitized: search's handler panics");
    match search
        .send_message::<_, Value>(&message("trip-6", "panic"))
        .await
    {
        Err(ClientError::Remote { error, .. }) => {
            let wire = serde_json::to_string(error.object()).unwrap_or_default();
            timeline.push(Kind::Result {
                ok: false,
                text: format!(
                    "search: {} {:?}, retryable: {}; the secret in the panic reached the \
                     wire: {}",
                    error.code(),
                    error.message(),
                    error
                        .retryable()
                        .map_or("unsaid".to_owned(), |r| r.to_string()),
                    if wire.contains("hunter2") {
                        "YES"
                    } else {
                        "no"
                    }
                ),
            });
        }
        other => report(other, "search"),
    }
    step(
        7,
        "Models and tools: model-a is over its quota, model-b answers; the tool is down",
    );
    models::scene(&timeline, &breakers).await;
    step(
        8,
        "Streams: model-a is over its quota before its first token, model-b streams; then a stream is cut",
    );
    streams::scene(&timeline, &breakers).await;
    step(
        9,
        "Tools over MCP: lookup fails until its circuit opens, weather on the same server answers",
    );
    tools::scene(&timeline, &breakers).await;
    step(
        10,
        "Quotas: two replicas share model-q's stated quota; alice is over her budget of tokens",
    );
    quotas::scene(&timeline, &breakers).await;

    // Let the agents record the attempts cancelled above.
    tokio::time::sleep(Duration::from_millis(50)).await;
    timeline.finish();

    let elapsed = timeline.now();
    let summary = summary::Summary::read(&snapshotter);
    timeline.print(&format!(
        "\nSummary ({:.1} s), from the metrics recorder (a2a.client.*, a2a.breaker.*, a2a.degraded);\n\
         attempts count those an open circuit refused (fail-fast) too:\n{}",
        elapsed.as_secs_f64(),
        summary.render()
    ));
    if let Some(path) = svg {
        let document = picture::draw(&timeline.entries(), elapsed);
        if let Err(error) = svg::save(&path, &document) {
            eprintln!("could not write {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
        timeline.print(&format!("Picture of the run: {}", path.display()));
    }
    ExitCode::SUCCESS
}
