//! One trace across a chain of agent processes, exported over OTLP: a caller's `traceparent`
//! reaches the coordinator, which fans out to a specialist over JSON-RPC (failing), one over
//! HTTP+JSON and one over gRPC; every process exports its spans (the `otel` feature with
//! `tracing-opentelemetry` and `opentelemetry-otlp`, as the observability guide's recipe) to
//! an OTLP/HTTP receiver this test serves. The spans must form one trace with the right
//! parents, and the failing hop must say why it failed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;

use crate::common::{start_example_with_env, start_grpc_agent_with_env};

/// The caller's trace and span, as its `traceparent` names them.
const TRACE: &str = "5bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

/// A span as the receiver got it: the process that made it and what the test reads.
#[derive(Clone, Debug)]
struct Received {
    service: String,
    name: String,
    kind: i32,
    trace_id: String,
    span_id: String,
    parent_id: String,
    attributes: HashMap<String, String>,
}

impl Received {
    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// An OTLP/HTTP receiver (`POST /v1/traces`, protobuf) on loopback: its base URL and what it
/// has received.
async fn receiver() -> (String, Arc<Mutex<Vec<Received>>>) {
    let spans = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&spans);
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: Bytes| {
            let kept = Arc::clone(&kept);
            async move {
                let request = ExportTraceServiceRequest::decode(body).expect("an OTLP request");
                let mut spans = kept.lock().unwrap();
                for resource in request.resource_spans {
                    let service = resource
                        .resource
                        .iter()
                        .flat_map(|resource| &resource.attributes)
                        .find(|attribute| attribute.key == "service.name")
                        .and_then(|attribute| attribute.value.as_ref()?.value.as_ref())
                        .map(text)
                        .unwrap_or_default();
                    for span in resource.scope_spans.into_iter().flat_map(|s| s.spans) {
                        let attributes = span
                            .attributes
                            .iter()
                            .filter_map(|attribute| {
                                let value = attribute.value.as_ref()?.value.as_ref()?;
                                Some((attribute.key.clone(), text(value)))
                            })
                            .collect();
                        spans.push(Received {
                            service: service.clone(),
                            name: span.name.clone(),
                            kind: span.kind,
                            trace_id: hex(&span.trace_id),
                            span_id: hex(&span.span_id),
                            parent_id: hex(&span.parent_span_id),
                            attributes,
                        });
                    }
                }
                (
                    [(axum::http::header::CONTENT_TYPE, "application/x-protobuf")],
                    ExportTraceServiceResponse::default().encode_to_vec(),
                )
            }
        }),
    );
    let port = a2a_error_testkit::free_port();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://127.0.0.1:{port}"), spans)
}

fn text(value: &Value) -> String {
    match value {
        Value::StringValue(text) => text.clone(),
        Value::IntValue(n) => n.to_string(),
        Value::BoolValue(b) => b.to_string(),
        Value::DoubleValue(x) => x.to_string(),
        other => format!("{other:?}"),
    }
}

/// The one server span of `service` over `system`.
fn server<'a>(spans: &'a [Received], service: &str, system: &str) -> Option<&'a Received> {
    spans.iter().find(|span| {
        span.service == service
            && span.kind == SpanKind::Server as i32
            && span.attribute("rpc.system.name") == Some(system)
    })
}

/// The coordinator's client span of its call to `agent`.
fn client<'a>(spans: &'a [Received], agent: &str) -> Option<&'a Received> {
    spans.iter().find(|span| {
        span.service == "coordinator"
            && span.kind == SpanKind::Client as i32
            && span.attribute("server.address") == Some(agent)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_over_three_bindings_exports_one_trace_with_its_parents() {
    let (endpoint, received) = receiver().await;
    let started = tokio::task::spawn_blocking(move || {
        let env = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            // Spans leave within 100 ms, not the default 5 s: the processes are killed, not
            // stopped, at the end.
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ];
        let (down, down_url) = start_example_with_env("agent", &["--fail"], &env);
        let (sdk, sdk_url, grpc) = start_grpc_agent_with_env(&env);
        let agents = [
            format!("down={down_url}"),
            format!("rest=rest+{sdk_url}"),
            format!("grpc=grpc+http://{grpc}"),
        ];
        let mut args = vec![];
        for agent in &agents {
            args.extend(["--agent", agent.as_str()]);
        }
        let (coordinator, url) = start_example_with_env("coordinator", &args, &env);
        ([down, sdk, coordinator], url)
    });
    let (_processes, url) = started.await.unwrap();

    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {
            "messageId": "otlp-1",
            "role": "ROLE_USER",
            "parts": [{"text": "hello"}],
        }},
    });
    let reply = crate::common::requests::rpc_with(&url, ("traceparent", &traceparent), body).await;
    assert!(reply.get("result").is_some(), "{reply}");

    // Every process exports on its own schedule: wait for the spans of all of them.
    let deadline = Instant::now() + Duration::from_secs(60);
    let spans = loop {
        let spans = received.lock().unwrap().clone();
        let complete = server(&spans, "coordinator", "jsonrpc").is_some()
            && ["down", "rest", "grpc"]
                .iter()
                .all(|agent| client(&spans, agent).is_some())
            && server(&spans, "agent", "jsonrpc").is_some()
            && server(&spans, "sdk_agent", "http").is_some()
            && server(&spans, "sdk_agent", "grpc").is_some();
        if complete {
            break spans;
        }
        assert!(
            Instant::now() < deadline,
            "not every hop's span arrived: {spans:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    // One trace: the caller's, in every process.
    for span in &spans {
        assert_eq!(span.trace_id, TRACE, "a span outside the trace: {span:#?}");
    }
    // The coordinator's request is the caller's span's child, named after its method.
    let served = server(&spans, "coordinator", "jsonrpc").unwrap();
    assert_eq!(served.parent_id, PARENT, "{served:#?}");
    assert_eq!(served.name, "SendMessage");
    assert_eq!(served.attribute("rpc.method"), Some("SendMessage"));
    // Each call it made is its child, and each specialist's request is that call's child.
    for (agent, service, system) in [
        ("down", "agent", "jsonrpc"),
        ("rest", "sdk_agent", "http"),
        ("grpc", "sdk_agent", "grpc"),
    ] {
        let call = client(&spans, agent).unwrap();
        assert_eq!(call.parent_id, served.span_id, "{call:#?}");
        assert_eq!(call.attribute("rpc.system.name"), Some(system), "{call:#?}");
        let answered: Vec<_> = spans
            .iter()
            .filter(|span| {
                span.service == service
                    && span.kind == SpanKind::Server as i32
                    && span.attribute("rpc.system.name") == Some(system)
            })
            .collect();
        assert!(!answered.is_empty());
        for span in answered {
            assert_eq!(span.parent_id, call.span_id, "{agent}: {span:#?}");
            assert_eq!(span.attribute("rpc.method"), Some("SendMessage"));
        }
    }
    // The failing hop says why, on both sides; the others did not fail.
    let failed = server(&spans, "agent", "jsonrpc").unwrap();
    assert_eq!(failed.attribute("error.type"), Some("AGENT_UNAVAILABLE"));
    assert_eq!(failed.attribute("rpc.status_code"), Some("-32053"));
    let call = client(&spans, "down").unwrap();
    assert_eq!(call.attribute("error.type"), Some("AGENT_UNAVAILABLE"));
    for agent in ["rest", "grpc"] {
        let call = client(&spans, agent).unwrap();
        assert_eq!(call.attribute("error.type"), None, "{call:#?}");
    }
    assert_eq!(
        server(&spans, "sdk_agent", "grpc")
            .unwrap()
            .attribute("error.type"),
        None
    );
}

/// Spans as an in-process exporter receives them, ended.
#[derive(Clone, Debug, Default)]
struct Collected(Arc<Mutex<Vec<opentelemetry_sdk::trace::SpanData>>>);

impl opentelemetry_sdk::trace::SpanExporter for Collected {
    async fn export(
        &self,
        batch: Vec<opentelemetry_sdk::trace::SpanData>,
    ) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

fn attribute(span: &opentelemetry_sdk::trace::SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

/// A second dispatcher, registered for the rest of the process, that never records.
///
/// `tracing` caches each callsite's interest for the process, decided when the callsite is
/// first reached; while exactly one dispatcher is registered it asks the reaching thread's
/// own default. The test binary runs other tests in parallel without a subscriber: one of
/// them reaching `a2a.client.call` first, after this test's subscriber is registered, would
/// cache "never" for every thread, and this test's client spans would not be made (CI saw
/// this once). With this one registered too, interest is asked of every dispatcher, and its
/// "sometimes" makes each span ask the thread's own.
struct Pin;

impl tracing::Subscriber for Pin {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        false
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// `subscriber` as this thread's default, with [`Pin`] registered before it.
fn pinned_default(
    subscriber: impl tracing::Subscriber + Send + Sync + 'static,
) -> tracing::dispatcher::DefaultGuard {
    static PIN: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
    PIN.get_or_init(|| tracing::Dispatch::new(Pin));
    tracing::subscriber::set_default(subscriber)
}

/// In one process, on one thread (so the test's subscriber sees every task, the SDK's
/// executor task included): the bridge's request span on each binding takes the caller's
/// span as its parent, the executor's call to another agent is that request span's child
/// though the SDK runs it in a task of its own, and what the call sends is its own span.
#[tokio::test(flavor = "current_thread")]
async fn the_executors_calls_are_children_of_the_bridges_request_span_on_every_binding() {
    use a2a_error::resilience::RetryPolicy;
    use a2a_error::sdk::Bridge;
    use a2a_error_testkit::{Answer, FaultAgent};
    use opentelemetry::trace::{SpanKind, TracerProvider as _};
    use serde_json::json;
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt;

    let collected = Collected::default();
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_simple_exporter(collected.clone())
        .build();
    // This crate's spans only, as the guide's recipe takes them (hyper and h2 have their own).
    let ours = tracing_subscriber::filter::Targets::new()
        .with_target("a2a_error_runtime", tracing::Level::DEBUG);
    let subscriber = tracing_subscriber::registry().with(
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("test"))
            .with_filter(ours),
    );
    let _default = pinned_default(subscriber);

    let downstream = FaultAgent::start(Answer::result(json!({"id": "t"}))).await;
    let client = a2a_error::Client::jsonrpc(format!("{}/", downstream.url()))
        .name("downstream")
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let handler =
        crate::common::calling::guarded(crate::common::calling::Calling { downstream: client });
    let bridge = Bridge::new(handler);
    let url = crate::common::serve(bridge.router()).await;
    let port = a2a_error_testkit::free_port();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    let grpc = bridge.clone();
    tokio::spawn(async move {
        grpc.serve_grpc(listener, a2a_error::sdk::GrpcLimits::default())
            .await
    });
    let message = |id: &str| json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": "go"}]}});
    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    let http = reqwest::Client::new();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message("j")});
    let reply =
        crate::common::requests::rpc_with(&format!("{url}/"), ("traceparent", &traceparent), body)
            .await;
    assert!(reply.get("result").is_some(), "{reply}");
    let rest = http
        .post(format!("{url}/message:send"))
        .header("A2A-Version", "1.0")
        .header("traceparent", &traceparent)
        .json(&message("r"))
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status().as_u16(), 200);
    let caller = a2a_error::trace::TraceContext::parse(traceparent.as_bytes(), None).unwrap();
    let grpc_client =
        a2a_error::Client::<a2a_error::RemoteError>::grpc(format!("127.0.0.1:{port}"))
            .name("grpc-agent")
            .retry(RetryPolicy::none())
            .build()
            .unwrap();
    let _: serde_json::Value =
        a2a_error::trace::with_trace(caller, grpc_client.send_message(&message("g")))
            .await
            .unwrap();
    // Its connection's task may hold the call's span until the connection closes: closed now,
    // so that a loaded machine cannot keep the span from the wait below.
    drop(grpc_client);

    let sent = crate::common::traces_sent(&downstream);
    assert_eq!(sent.len(), 3, "{sent:?}");
    // A span is exported when it closes, which can come after its reply arrived (a server's
    // once the body is written, a client's once the connection's task lets go of it): wait
    // for the ones checked below, for up to 10 s, then check what came.
    let counted = |spans: &[opentelemetry_sdk::trace::SpanData], kind: SpanKind, key, value| {
        spans
            .iter()
            .filter(|span| span.span_kind == kind && attribute(span, key).as_deref() == Some(value))
            .count()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let spans = loop {
        let spans = collected.0.lock().unwrap().clone();
        let all = counted(&spans, SpanKind::Client, "server.address", "grpc-agent") >= 1
            && counted(&spans, SpanKind::Server, "rpc.method", "SendMessage") >= 3
            && counted(&spans, SpanKind::Client, "server.address", "downstream") >= 3;
        if all || std::time::Instant::now() > deadline {
            break spans;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    for span in &spans {
        assert_eq!(
            hex(&span.span_context.trace_id().to_bytes()),
            TRACE,
            "{span:#?}"
        );
    }
    // The test's own gRPC call: a client span whose parent is the caller's span.
    let test_call = spans
        .iter()
        .find(|span| {
            span.span_kind == SpanKind::Client
                && attribute(span, "server.address").as_deref() == Some("grpc-agent")
        })
        .expect("the test's gRPC call span");
    assert_eq!(hex(&test_call.parent_span_id.to_bytes()), PARENT);
    for (system, parent) in [
        ("jsonrpc", PARENT.to_owned()),
        ("http", PARENT.to_owned()),
        ("grpc", hex(&test_call.span_context.span_id().to_bytes())),
    ] {
        let served = spans
            .iter()
            .find(|span| {
                span.span_kind == SpanKind::Server
                    && attribute(span, "rpc.system.name").as_deref() == Some(system)
                    && attribute(span, "rpc.method").as_deref() == Some("SendMessage")
            })
            .unwrap_or_else(|| panic!("no {system} request span: {spans:#?}"));
        assert_eq!(served.name, "SendMessage");
        assert_eq!(hex(&served.parent_span_id.to_bytes()), parent, "{system}");
        // The executor's call, in the SDK's task: the request span's child.
        let call = spans
            .iter()
            .find(|span| {
                span.span_kind == SpanKind::Client
                    && attribute(span, "server.address").as_deref() == Some("downstream")
                    && span.parent_span_id == served.span_context.span_id()
            })
            .unwrap_or_else(|| panic!("no call under the {system} request: {spans:#?}"));
        assert_eq!(call.name, "GetTask");
        // What it sent on is its own span.
        let own = hex(&call.span_context.span_id().to_bytes());
        assert!(
            sent.iter().any(|trace| trace.parent_id() == own),
            "{system}: {sent:?} does not name {own}"
        );
    }
}
