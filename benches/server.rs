//! Requests/s of the JSON-RPC error path (GetTask for an unknown task) through a2a-error's
//! JSON-RPC endpoint over loopback (typed params, a derived error), against
//! a minimal hand-written axum handler that returns the same bytes. Same client, same
//! runtime, same concurrency.
//!
//! `cargo bench -p a2a-error-benches --bench server`

use std::time::{Duration, Instant};

use axum::Router;
use axum::http::header;
use axum::routing::post;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures_util::StreamExt;

const REQUEST: &str =
    r#"{"jsonrpc":"2.0","id":"b1","method":"GetTask","params":{"id":"no-such-task"}}"#;
const IN_FLIGHT: usize = 8;

/// GetTask's params.
#[derive(serde::Deserialize)]
struct TaskId {
    id: String,
}

/// What GetTask fails with: a task it does not have, named in the error's data.
#[derive(Debug, thiserror::Error, a2a_error::A2aError)]
enum AgentError {
    #[error("task {task_id} not found")]
    #[a2a(code = TASK_NOT_FOUND)]
    TaskNotFound {
        #[a2a(data)]
        task_id: String,
    },
}

/// An agent's JSON-RPC endpoint that has no tasks, as an agent built with a2a-error serves it.
fn ours() -> Router {
    a2a_error::server::JsonRpc::new()
        .method(
            "GetTask",
            |request: TaskId, _: a2a_error::server::RequestContext| async move {
                Err::<serde_json::Value, _>(AgentError::TaskNotFound {
                    task_id: request.id,
                })
            },
        )
        .into_router()
}

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}/")
}

async fn call(client: &reqwest::Client, url: &str) -> bytes::Bytes {
    client
        .post(url)
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(REQUEST)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
}

fn error_path(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::new();
    let (ours, hand_written, expected) = runtime.block_on(async {
        let ours = serve(ours()).await;
        let expected = call(&client, &ours).await;
        let body = expected.clone();
        let hand = Router::new().route(
            "/",
            post(move || {
                let body = body.clone();
                async move { ([(header::CONTENT_TYPE, "application/json")], body) }
            }),
        );
        let hand_written = serve(hand).await;
        assert_eq!(
            call(&client, &hand_written).await,
            expected,
            "same bytes on both"
        );
        (ours, hand_written, expected)
    });
    assert!(std::str::from_utf8(&expected).unwrap().contains("-32001"));

    let mut group = c.benchmark_group("server/unknown_task");
    group.throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(5));
    for (name, url) in [
        ("a2a_error_router", &ours),
        ("hand_written_axum", &hand_written),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|requests| {
                runtime.block_on(async {
                    let start = Instant::now();
                    futures_util::stream::iter(0..requests)
                        .map(|_| call(&client, url))
                        .buffer_unordered(IN_FLIGHT)
                        .for_each(|_| async {})
                        .await;
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1));
    targets = error_path
}
criterion_main!(benches);
