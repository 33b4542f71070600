//! The example coordinator:
//! `cargo run --example coordinator -- --addr 127.0.0.1:PORT --agent NAME=URL [--agent NAME=URL ...] [--min-results N]`.
//!
//! Serves JSON-RPC at `POST /` (`SendMessage`, fanned out to every `--agent`; and
//! `GetAgentHealth`), its agent card at `GET /.well-known/agent-card.json`, and its metrics
//! at `GET /metrics` (Prometheus text). An agent's URL may be another coordinator's; it is
//! called over JSON-RPC, or over HTTP+JSON as `rest+http://…`, or gRPC as `grpc+http://…`.
//! With `OTEL_EXPORTER_OTLP_ENDPOINT` set, its spans are exported over OTLP/HTTP.

mod app;
#[path = "../shared/metrics.rs"]
mod metrics;
#[path = "../shared/telemetry.rs"]
mod telemetry;

use a2a_error::server::{ServeLimits, serve};

const USAGE: &str = "usage: coordinator [--addr HOST:PORT] --agent NAME=URL [--agent NAME=URL ...] [--min-results N]";

#[tokio::main]
async fn main() {
    // Large request and reply buffers go back to the system when freed, so that the stores'
    // bounds hold in resident memory too.
    a2a_error::server::return_freed_memory();
    let _telemetry = telemetry::init("coordinator", std::io::stdout);
    let mut args = std::env::args().skip(1);
    let mut addr = "127.0.0.1:8080".to_owned();
    let mut agents: Vec<(String, String)> = Vec::new();
    let mut min_results = 1;
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--addr", Some(value)) => addr = value,
            ("--agent", Some(value)) => match value.split_once('=') {
                Some((name, url)) if !name.is_empty() && !url.is_empty() => {
                    if agents.iter().any(|(known, _)| known == name) {
                        fail(&format!("agent {name} is given twice"));
                    }
                    agents.push((name.to_owned(), url.to_owned()));
                }
                _ => fail(&format!("--agent takes NAME=URL, not {value:?}")),
            },
            ("--min-results", Some(value)) => match value.parse::<usize>() {
                Ok(n) if n >= 1 => min_results = n,
                _ => fail(&format!(
                    "--min-results takes a number from 1, not {value:?}"
                )),
            },
            _ => fail(&format!("unknown argument {arg:?}")),
        }
    }
    if agents.is_empty() {
        fail("give at least one --agent NAME=URL");
    }
    if min_results > agents.len() {
        fail(&format!(
            "--min-results {min_results} is more than the {} agents given",
            agents.len()
        ));
    }
    // Installed first: the breakers report their state as they are made.
    let prometheus = metrics::install();
    let coordinator = match app::Coordinator::new(&agents, min_results) {
        Ok(coordinator) => coordinator.public_url(&format!("http://{addr}")),
        Err(error) => fail(&error.to_string()),
    };
    let listener = match tokio::net::TcpListener::bind(&addr).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("cannot listen on {addr}: {error}");
            std::process::exit(1);
        }
    };
    tracing::info!(
        agents = agents.len(),
        min_results,
        "example coordinator listening on http://{addr}"
    );
    let router = app::router(coordinator).merge(metrics::route(prometheus));
    if let Err(error) = serve(listener, router, ServeLimits::default()).await {
        eprintln!("server error: {error}");
        std::process::exit(1);
    }
}

fn fail(message: &str) -> ! {
    eprintln!("{message}\n{USAGE}");
    std::process::exit(2);
}
