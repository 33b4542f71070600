//! `GET /metrics` of the example servers: what the library records (`rpc.server.call.duration`,
//! `a2a.server.errors`, the clients' and breakers' series), in Prometheus's text format, every
//! duration a histogram. Shared by `agent`, `sdk_agent`, `coordinator` and `llm_agent`.

use axum::Router;
use axum::routing::get;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Installs the Prometheus recorder, or ends the process saying why. Install it before
/// building clients: their breakers report their state as they are made.
pub fn install() -> PrometheusHandle {
    // Durations as histograms (buckets the library suggests for each), so that a fleet's
    // latency adds up across replicas (`histogram_quantile` over their `_bucket` series); a
    // summary's quantiles would not.
    let mut builder = PrometheusBuilder::new();
    for (name, buckets) in a2a_error::observe::HISTOGRAMS {
        builder = builder
            .set_buckets_for_metric(Matcher::Full((*name).to_owned()), buckets)
            .expect("the library's buckets are not empty");
    }
    let prometheus = builder.install_recorder().unwrap_or_else(|error| {
        eprintln!("cannot install the metrics recorder: {error}");
        std::process::exit(1);
    });
    // A histogram keeps each sample until it is drained, by a scrape or by upkeep: without
    // this, an agent nobody scrapes grows by 16 bytes a request (two samples) for good.
    let upkeep = prometheus.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            upkeep.run_upkeep();
        }
    });
    prometheus
}

/// `GET /metrics`: what `prometheus` has recorded.
pub fn route(prometheus: PrometheusHandle) -> Router {
    Router::new().route(
        "/metrics",
        get(move || {
            let text = prometheus.render();
            async move {
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        "text/plain; version=0.0.4",
                    )],
                    text,
                )
            }
        }),
    )
}
