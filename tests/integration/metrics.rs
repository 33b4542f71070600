//! The metrics the library records, read from a recorder (values, not only names). The
//! recorder is this test's own: it runs on one thread, a current-thread runtime, under
//! `metrics::with_local_recorder`, so the tests beside it record nothing into it.

use std::sync::Arc;

use crate::common::serve;
use a2a_error::client::FanOut;
use a2a_error::resilience::Fallback;
use a2a_error::resilience::breaker::{BreakerConfig, BreakerRegistry};
use a2a_error::{Client, RemoteError};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use serde_json::{Value, json};

/// An agent on this crate's endpoint, whose server metrics the recorder sees: `flaky:N`
/// fails N times per messageId with AGENT_UNAVAILABLE, then echoes; a `down` one always
/// fails.
fn test_agent(down: bool) -> axum::Router {
    let attempts = Arc::new(std::sync::Mutex::new(std::collections::HashMap::new()));
    a2a_error::server::JsonRpc::new()
        .method(
            "SendMessage",
            move |params: Value, _: a2a_error::server::RequestContext| {
                let attempts = Arc::clone(&attempts);
                async move {
                    let message = &params["message"];
                    let id = message["messageId"].as_str().unwrap_or("").to_owned();
                    let text = message["parts"][0]["text"].as_str().unwrap_or("");
                    let fails: u32 = text
                        .strip_prefix("flaky:")
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0);
                    let attempt = {
                        let mut attempts = attempts.lock().unwrap();
                        let n = attempts.entry(id).or_insert(0u32);
                        *n += 1;
                        *n
                    };
                    if down || attempt <= fails {
                        return Err(a2a_error::StandardError::AgentUnavailable {
                            retry_after: None,
                        });
                    }
                    Ok(json!({"message": {"messageId": "r", "role": "ROLE_AGENT",
                        "parts": [{"text": format!("echo: {text}")}]}}))
                }
            },
        )
        .into_router()
}

fn message(id: &str, text: &str) -> Value {
    json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]}})
}

/// The values of `name` whose labels include every pair of `labels`.
fn matching<'a>(
    snapshot: &'a [(metrics_util::CompositeKey, DebugValue)],
    name: &'a str,
    labels: &'a [(&'a str, &'a str)],
) -> impl Iterator<Item = &'a DebugValue> + 'a {
    snapshot.iter().filter_map(move |(key, value)| {
        let key = key.key();
        let all = labels.iter().all(|(k, v)| {
            key.labels()
                .any(|label| label.key() == *k && label.value() == *v)
        });
        (key.name() == name && all).then_some(value)
    })
}

fn counter(
    snapshot: &[(metrics_util::CompositeKey, DebugValue)],
    name: &str,
    labels: &[(&str, &str)],
) -> u64 {
    matching(snapshot, name, labels)
        .map(|value| match value {
            DebugValue::Counter(n) => *n,
            other => panic!("{name} is not a counter: {other:?}"),
        })
        .sum()
}

fn gauge(
    snapshot: &[(metrics_util::CompositeKey, DebugValue)],
    name: &str,
    labels: &[(&str, &str)],
) -> f64 {
    match matching(snapshot, name, labels).last() {
        Some(DebugValue::Gauge(value)) => value.into_inner(),
        other => panic!("{name} {labels:?}: {other:?}"),
    }
}

/// The recorded values of histogram `name` whose labels include every pair of `labels`.
pub(crate) fn samples(
    snapshot: &[(metrics_util::CompositeKey, DebugValue)],
    name: &str,
    labels: &[(&str, &str)],
) -> Vec<f64> {
    matching(snapshot, name, labels)
        .flat_map(|value| match value {
            DebugValue::Histogram(values) => {
                values.iter().map(|v| v.into_inner()).collect::<Vec<f64>>()
            }
            other => panic!("{name} is not a histogram: {other:?}"),
        })
        .collect()
}

/// Runs `test` on a runtime of one thread under a recorder of its own (the tests beside it
/// record nothing into it); `test` reads it through the snapshotter it is given, and what it
/// returns is returned.
pub(crate) fn with_own_recorder<F: std::future::Future>(
    test: impl FnOnce(Snapshotter) -> F,
) -> F::Output {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || runtime.block_on(test(snapshotter)))
}

/// What the recorder holds now: each series' key and value.
pub(crate) fn recorded(snapshotter: &Snapshotter) -> Vec<(metrics_util::CompositeKey, DebugValue)> {
    (snapshotter.snapshot().into_vec().into_iter())
        .map(|(key, _, _, value)| (key, value))
        .collect()
}

#[test]
fn retries_breakers_errors_and_degraded_answers_are_counted() {
    with_own_recorder(|snapshotter| async move { counted(&snapshotter).await });
}

/// What the test drives and reads, all on the recorder's thread.
async fn counted(snapshotter: &Snapshotter) {
    // A flaky agent: two failures, then an answer.
    let agent = serve(test_agent(false)).await;
    let flaky = Client::<RemoteError>::jsonrpc(format!("{agent}/"))
        .name("flaky")
        .retry(
            a2a_error::resilience::RetryPolicy::default()
                .base_delay(std::time::Duration::from_millis(5)),
        )
        .build()
        .unwrap();
    let _: Value = flaky
        .send_message(&message("m-1", "flaky:2"))
        .await
        .unwrap();

    // An agent that is down, behind a breaker that trips after 2 failures.
    let down = serve(test_agent(true)).await;
    let registry = BreakerRegistry::new(BreakerConfig::new().consecutive_failures(2));
    let client = Client::<RemoteError>::jsonrpc(format!("{down}/"))
        .name("down")
        .breakers(&registry)
        .retry(
            a2a_error::resilience::RetryPolicy::default()
                .base_delay(std::time::Duration::from_millis(5)),
        )
        .build()
        .unwrap();
    let error = client
        .send_message::<_, Value>(&message("m-2", "hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, a2a_error::client::ClientError::CircuitOpen { .. }),
        "{error:?}"
    );

    // A fallback answered by its second step, and a fan-out missing one agent.
    let answered = Fallback::new("primary", || async { Err::<u8, ()>(()) })
        .or("cache", || async { Ok(1) })
        .run()
        .await
        .unwrap();
    assert!(answered.is_degraded());
    let fan_out = FanOut::new(1)
        .run([
            (
                Arc::<str>::from("flaky"),
                flaky.send_message::<_, Value>(&message("m-3", "hi")),
            ),
            (
                Arc::<str>::from("down"),
                client.send_message::<_, Value>(&message("m-4", "hi")),
            ),
        ])
        .await
        .unwrap();
    assert!(fan_out.is_degraded());

    let snapshot = recorded(snapshotter);
    let s = snapshot.as_slice();
    // Two retries of the flaky agent, both for AGENT_UNAVAILABLE, and 3 attempts for its call.
    assert_eq!(
        counter(
            s,
            "a2a.client.retries",
            &[("agent", "flaky"), ("error.type", "AGENT_UNAVAILABLE")]
        ),
        2
    );
    assert!(samples(s, "a2a.client.attempts", &[("agent", "flaky")]).contains(&3.0));
    // The agents' own server counted the errors it sent.
    assert!(
        counter(
            s,
            "a2a.server.errors",
            &[("rpc.method", "SendMessage"), ("rpc.status_code", "-32053")]
        ) >= 4
    );
    // Every request the agents served, by method and outcome: the flaky agent answered the
    // third attempt of m-1 and failed the first two.
    let answered = samples(
        s,
        "rpc.server.call.duration",
        &[
            ("rpc.method", "SendMessage"),
            ("outcome", "ok"),
            ("rpc.system.name", "jsonrpc"),
        ],
    );
    let failed = samples(
        s,
        "rpc.server.call.duration",
        &[("rpc.method", "SendMessage"), ("outcome", "error")],
    );
    assert!(
        !answered.is_empty() && failed.len() >= 4,
        "{answered:?} {failed:?}"
    );
    assert!(
        answered
            .iter()
            .chain(&failed)
            .all(|d| *d >= 0.0 && *d < 10.0)
    );
    // The breaker: one trip, open now, and the third attempt (and the fan-out's) refused.
    assert_eq!(
        counter(
            s,
            "a2a.breaker.transitions",
            &[("agent", "down"), ("from", "closed"), ("to", "open")]
        ),
        1
    );
    assert_eq!(gauge(s, "a2a.breaker.state", &[("agent", "down")]), 2.0);
    assert_eq!(
        counter(s, "a2a.breaker.rejections", &[("agent", "down")]),
        2
    );
    assert_eq!(
        counter(
            s,
            "a2a.client.errors",
            &[("agent", "down"), ("error.type", "CIRCUIT_OPEN")]
        ),
        2
    );
    // Durations: one per call through each client.
    let durations = samples(
        s,
        "rpc.client.call.duration",
        &[
            ("agent", "flaky"),
            ("outcome", "ok"),
            ("rpc.system.name", "jsonrpc"),
        ],
    );
    assert_eq!(durations.len(), 2);
    assert!(durations.iter().all(|d| *d > 0.0 && *d < 10.0));
    // Degraded answers, by where they came from.
    assert_eq!(counter(s, "a2a.degraded", &[("source", "fallback")]), 1);
    assert_eq!(counter(s, "a2a.degraded", &[("source", "fan_out")]), 1);
    assert_eq!(
        counter(
            s,
            "a2a.fallback.steps",
            &[("step", "primary"), ("outcome", "failed")]
        ),
        1
    );

    // The SDK bridge records its REST routes and its gRPC service in the same histogram, by
    // the A2A method: a GetTask of an unknown task over each, and a route that is no method.
    let store = a2a_error::sdk::MemoryTaskStore::new(1 << 20);
    let handler = a2a_server::DefaultRequestHandler::new(crate::common::Nothing, store);
    let bridge = a2a_error::sdk::Bridge::new(handler);
    let rest = serve(bridge.router()).await;
    let http = reqwest::Client::new();
    for path in ["/tasks/no-such-task", "/no/such/route"] {
        let status = http
            .get(format!("{rest}{path}"))
            .header("A2A-Version", "1.0")
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 404);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let grpc = format!("http://{}", listener.local_addr().unwrap());
    let serving = bridge.clone();
    tokio::spawn(async move {
        serving
            .serve_grpc(listener, a2a_error::sdk::GrpcLimits::default())
            .await
    });
    let client = Client::<RemoteError>::grpc(grpc).build().unwrap();
    let error = client
        .call::<_, Value>("GetTask", &json!({"id": "no-such-task"}))
        .await
        .unwrap_err();
    assert_eq!(error.failure_reason(), "TASK_NOT_FOUND", "{error:?}");
    let snapshot = recorded(snapshotter);
    for system in ["http", "grpc"] {
        let failed = samples(
            &snapshot,
            "rpc.server.call.duration",
            &[
                ("rpc.method", "GetTask"),
                ("outcome", "error"),
                ("rpc.system.name", system),
            ],
        );
        assert_eq!(failed.len(), 1, "one over {system}: {failed:?}");
    }
    let other = samples(
        &snapshot,
        "rpc.server.call.duration",
        &[("rpc.method", "other"), ("outcome", "error")],
    );
    assert!(!other.is_empty());
}

/// An executor that is never reached: the requests above are all for tasks that do not exist.
/// The example servers, from outside: their `GET /metrics` has the server duration of every
/// request under OpenTelemetry's name, by method and by binding.
#[tokio::test(flavor = "multi_thread")]
async fn the_example_servers_expose_rpc_server_call_duration() {
    use crate::common::requests::{get_text, rpc, send};
    let series = |metrics: &str, method: &str, system: &str| {
        metrics.lines().any(|line| {
            line.starts_with("rpc_server_call_duration")
                && line.contains(&format!("rpc_method=\"{method}\""))
                && line.contains(&format!("rpc_system_name=\"{system}\""))
        })
    };
    let (_agent, url) = crate::common::start_example("agent", &[]);
    rpc(&url, send(1, "m-1", "hello")).await;
    let metrics = get_text(&format!("{url}/metrics")).await;
    assert!(series(&metrics, "SendMessage", "jsonrpc"), "{metrics}");
    // A histogram, with the library's buckets: its buckets add up across replicas.
    assert!(
        metrics
            .lines()
            .any(|line| line.starts_with("rpc_server_call_duration_bucket")
                && line.contains("le=\"0.005\"")),
        "{metrics}"
    );
    assert!(!metrics.contains("quantile="), "{metrics}");

    let (_sdk, url, grpc) = crate::common::start_grpc_agent();
    rpc(&url, send(1, "m-1", "hello")).await;
    let rest = reqwest::Client::new()
        .get(format!("{url}/tasks/no-such-task"))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status().as_u16(), 404);
    let client = Client::<RemoteError>::grpc(grpc.as_str()).build().unwrap();
    let _ = client
        .call::<_, Value>("GetTask", &json!({"id": "no-such-task"}))
        .await;
    let metrics = get_text(&format!("{url}/metrics")).await;
    for (method, system) in [
        ("SendMessage", "jsonrpc"),
        ("GetTask", "http"),
        ("GetTask", "grpc"),
    ] {
        assert!(
            series(&metrics, method, system),
            "{method} {system}: {metrics}"
        );
    }
}
