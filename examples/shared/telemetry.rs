//! The example servers' telemetry: log lines (`RUST_LOG`, default `info`) and, when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set (e.g. `http://127.0.0.1:4318`), their spans exported
//! over OTLP/HTTP as one trace with their callers' and callees'. The recipe of
//! `a2a_error::guide::observability`, as a server uses it. Shared by `agent`, `sdk_agent`,
//! `coordinator` and `llm_agent`.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::{self, fmt};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// What exports the spans, flushed when dropped (at the end of `main`).
pub struct Telemetry(Option<SdkTracerProvider>);

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take() {
            let _ = provider.shutdown();
        }
    }
}

/// Installs the subscriber for the server `service` (its OpenTelemetry `service.name`), its
/// log lines written to `logs`.
pub fn init<W>(service: &'static str, logs: W) -> Telemetry
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let exporter = std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").and_then(|_| {
        // The endpoint (and headers, timeout) are read from the environment by the exporter.
        opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .build()
            .map_err(|error| eprintln!("{service}: no OTLP export: {error}"))
            .ok()
    });
    let Some(exporter) = exporter else {
        // One global filter, as without OpenTelemetry: a callsite it leaves off (the
        // library's DEBUG spans) costs nothing. (A per-layer filter beside an absent layer
        // would enable every callsite.)
        fmt().with_writer(logs).with_env_filter(filter()).init();
        return Telemetry(None);
    };
    let provider = SdkTracerProvider::builder()
        .with_resource(Resource::builder().with_service_name(service).build())
        .with_batch_exporter(exporter)
        .build();
    // a2a-error's request and call spans are at DEBUG (like tower-http's), so that the log
    // lines at INFO cost none of them; the exporter takes them.
    let wanted = Targets::new()
        .with_default(tracing::Level::INFO)
        .with_target("a2a_error_runtime", tracing::Level::DEBUG);
    let spans = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer(service))
        .with_filter(wanted);
    let logs = fmt::layer().with_writer(logs).with_filter(filter());
    tracing_subscriber::registry().with(logs).with(spans).init();
    Telemetry(Some(provider))
}
