//! The example agent: `cargo run --example agent -- --addr 127.0.0.1:8080 [--public-url URL]
//! [--redis URL] [--fail]`; the card advertises `--public-url` (default `http://ADDR`).
//!
//! Serves JSON-RPC at `POST /`, REST at `GET /tasks/{id}`, `POST /message:send` and
//! `POST /tasks/{id}:cancel`, its agent card at `GET /.well-known/agent-card.json`, and its
//! metrics at `GET /metrics` (Prometheus text). With
//! `--redis redis://HOST:PORT`, replicas pointed at the same Redis share SendMessage replies.
//! With `--fail`, every SendMessage fails with AGENT_UNAVAILABLE (a specialist that is down).
//! With `OTEL_EXPORTER_OTLP_ENDPOINT` set, its spans are exported over OTLP/HTTP.

mod app;
#[path = "../shared/metrics.rs"]
mod metrics;
#[path = "../shared/telemetry.rs"]
mod telemetry;

use a2a_error::server::{RedisStore, ServeLimits, serve};

#[tokio::main]
async fn main() {
    // Large request and reply buffers go back to the system when freed, so that the stores'
    // bounds hold in resident memory too.
    a2a_error::server::return_freed_memory();
    let _telemetry = telemetry::init("agent", std::io::stdout);
    let mut args = std::env::args().skip(1);
    let mut addr = "127.0.0.1:8080".to_owned();
    let mut redis = None;
    let mut public_url = None;
    let mut unavailable = false;
    while let Some(arg) = args.next() {
        if arg == "--fail" {
            unavailable = true;
            continue;
        }
        match (arg.as_str(), args.next()) {
            ("--addr", Some(value)) => addr = value,
            ("--redis", Some(url)) => redis = Some(url),
            ("--public-url", Some(url)) => public_url = Some(url),
            _ => {
                eprintln!(
                    "usage: agent [--addr HOST:PORT] [--public-url URL] [--redis redis://HOST:PORT] [--fail]"
                );
                std::process::exit(2);
            }
        }
    }
    let agent = match redis {
        None => app::Agent::default(),
        Some(url) => match RedisStore::connect(&url) {
            Ok(store) => app::Agent::with_store(store),
            Err(error) => {
                eprintln!("cannot use Redis at {url}: {error}");
                std::process::exit(2);
            }
        },
    };
    // The card advertises configuration, never what a caller's Host header says.
    let agent = agent.public_url(&public_url.unwrap_or_else(|| format!("http://{addr}")));
    let agent = if unavailable {
        agent.unavailable()
    } else {
        agent
    };
    let listener = match tokio::net::TcpListener::bind(&addr).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("cannot listen on {addr}: {error}");
            std::process::exit(1);
        }
    };
    tracing::info!("example agent listening on http://{addr}");
    let metrics = metrics::route(metrics::install());
    // Not axum::serve: it bounds neither header nor body read time nor connections.
    if let Err(error) = serve(
        listener,
        // JSON-RPC at `/` answered without routing; REST, the card and `/metrics` routed.
        app::app_with(agent).merge(metrics),
        ServeLimits::default(),
    )
    .await
    {
        eprintln!("server error: {error}");
        std::process::exit(1);
    }
}
