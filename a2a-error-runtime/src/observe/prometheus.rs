//! [`prometheus`]: `GET /metrics` in one call (feature `prometheus`): Prometheus's recorder
//! installed with this crate's histogram buckets ([`HISTOGRAMS`](super::HISTOGRAMS)), kept
//! bounded, and served as a route.
//!
//! The exporter is `metrics-exporter-prometheus` at the version that matches this crate's
//! `metrics` (two `metrics` in one build would record into a recorder nobody reads).

use axum::Router;
use axum::routing::get;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// How often the histograms' samples are folded in when nobody scrapes: a histogram keeps
/// each sample until a scrape or this upkeep drains it, 16 bytes a request otherwise.
const UPKEEP: std::time::Duration = std::time::Duration::from_secs(5);

/// The recorder could not be installed: the process has one already (one recorder a
/// process is the `metrics` facade's rule).
#[derive(Debug, thiserror::Error)]
#[error("cannot install the Prometheus recorder: {reason}")]
pub struct RecorderError {
    reason: String,
}

/// What this crate records, as Prometheus's text format: [`router`](Self::router) serves it
/// at `GET /metrics`.
#[derive(Clone, Debug)]
pub struct Prometheus {
    handle: PrometheusHandle,
}

/// Installs Prometheus's recorder as the process's, every duration a histogram with this
/// crate's buckets (so that a fleet's latencies add up across replicas), and keeps it bounded
/// (its samples folded in every 5 s on a thread of its own, scraped or not). Install it before
/// building clients: their breakers report their state as they are made.
///
/// ```no_run
/// # use a2a_error_runtime as a2a_error;
/// # fn app(router: axum::Router) -> Result<axum::Router, a2a_error::observe::RecorderError> {
/// let router = router.merge(a2a_error::observe::prometheus()?.router());
/// # Ok(router) }
/// ```
pub fn prometheus() -> Result<Prometheus, RecorderError> {
    let mut builder = PrometheusBuilder::new();
    for (name, buckets) in super::HISTOGRAMS {
        builder = builder
            .set_buckets_for_metric(Matcher::Full((*name).to_owned()), buckets)
            .map_err(|error| RecorderError {
                reason: error.to_string(),
            })?;
    }
    let handle = builder.install_recorder().map_err(|error| RecorderError {
        reason: error.to_string(),
    })?;
    let upkeep = handle.clone();
    std::thread::Builder::new()
        .name("a2a-metrics-upkeep".into())
        .spawn(move || {
            loop {
                std::thread::sleep(UPKEEP);
                upkeep.run_upkeep();
            }
        })
        .map_err(|error| RecorderError {
            reason: error.to_string(),
        })?;
    Ok(Prometheus { handle })
}

impl Prometheus {
    /// `GET /metrics`: the text format (`text/plain; version=0.0.4`).
    pub fn router(&self) -> Router {
        let handle = self.handle.clone();
        Router::new().route(
            "/metrics",
            get(move || {
                let text = handle.render();
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

    /// What has been recorded, in the text format.
    pub fn render(&self) -> String {
        self.handle.render()
    }
}
