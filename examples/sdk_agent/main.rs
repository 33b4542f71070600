//! An agent on the official Rust SDK served through a2a-error's bridge:
//! `cargo run --example sdk_agent -- --addr 127.0.0.1:8080 [--redis URL]`.
//!
//! The same paths as `examples/agent` (JSON-RPC `POST /`; REST `POST /message:send`,
//! `POST /message:stream`, `GET /tasks/{id}`, `POST /tasks/{id}:cancel`; the card at
//! `/.well-known/agent-card.json`, advertising streaming) and the same text protocol, plus
//! streaming: `hello` echoes, `fail:internal`, `fail:panic`, `fail:rate_limited`,
//! `fail:unsupported`, `flaky:N`, `sleep:MS`, `work:fail`, `stream:N`, `stream:fail_after:N`.
//! With `--redis redis://HOST:PORT`, agents pointed at the same Redis share SendMessage
//! replies.

mod app;

use a2a_error::server::{MemoryStore, RedisStore, ServeLimits, serve};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let mut args = std::env::args().skip(1);
    let mut addr = "127.0.0.1:8080".to_owned();
    let mut redis = None;
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--addr", Some(value)) => addr = value,
            ("--redis", Some(url)) => redis = Some(url),
            _ => {
                eprintln!("usage: sdk_agent [--addr HOST:PORT] [--redis redis://HOST:PORT]");
                std::process::exit(2);
            }
        }
    }
    let public_url = format!("http://{addr}");
    let router = match redis {
        None => app::router(&public_url, MemoryStore::default()),
        Some(url) => match RedisStore::connect(&url) {
            Ok(store) => app::router(&public_url, store),
            Err(error) => {
                eprintln!("cannot use Redis at {url}: {error}");
                std::process::exit(2);
            }
        },
    };
    let listener = match tokio::net::TcpListener::bind(&addr).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("cannot listen on {addr}: {error}");
            std::process::exit(1);
        }
    };
    tracing::info!("SDK agent listening on http://{addr}");
    if let Err(error) = serve(listener, router, ServeLimits::default()).await {
        eprintln!("server error: {error}");
        std::process::exit(1);
    }
}
