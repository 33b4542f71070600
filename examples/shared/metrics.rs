//! `GET /metrics` of the example servers: what the library records (`rpc.server.call.duration`,
//! `a2a.server.errors`, the clients' and breakers' series), in Prometheus's text format, every
//! duration a histogram. Shared by `agent`, `sdk_agent`, `coordinator` and `llm_agent`: the
//! library's `observe::prometheus` (feature `prometheus`) does it all.

use a2a_error::observe::Prometheus;
use axum::Router;

/// Installs the Prometheus recorder, or ends the process saying why. Install it before
/// building clients: their breakers report their state as they are made.
pub fn install() -> Prometheus {
    a2a_error::observe::prometheus().unwrap_or_else(|error| {
        eprintln!("{error}");
        std::process::exit(1);
    })
}

/// `GET /metrics`: what `prometheus` has recorded.
pub fn route(prometheus: Prometheus) -> Router {
    prometheus.router()
}
