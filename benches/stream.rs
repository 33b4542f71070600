//! A streamed model call against the bytes it reads: a provider on loopback answers one
//! streamed chat completion of 10,000 small events (`data: {"choices":[{"delta":{"content":
//! "tok"}}]}`, then `data: [DONE]`), read
//! - through `HttpDependency::stream` (the layers, the first-event and idle timers, the byte
//!   count, the breaker's report), with `AnyEvent` (every event content, no JSON read) and
//!   with `OpenAiChat` (each event's JSON read for its content);
//! - with reqwest and this crate's SSE parser alone (the baseline: the same bytes, the same
//!   parser, nothing else),
//!
//! in the same run.

use std::hint::black_box;

use a2a_error::dependency::{AnyEvent, HttpCall, HttpDependency, OpenAiChat};
use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::StreamExt;

const EVENTS: usize = 10_000;

/// The provider's answer: 10,000 events and the end.
fn body() -> Vec<u8> {
    let mut body = Vec::new();
    for _ in 0..EVENTS {
        body.extend_from_slice(b"data: {\"choices\":[{\"delta\":{\"content\":\"tok\"}}]}\n\n");
    }
    body.extend_from_slice(b"data: [DONE]\n\n");
    body
}

/// Serves `body` as an event stream at any path, on loopback; its base URL.
async fn provider(body: Vec<u8>) -> String {
    let body = bytes::Bytes::from(body);
    let app = axum::Router::new().fallback(move || {
        let body = body.clone();
        async move { ([("content-type", "text/event-stream")], body) }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

fn call() -> HttpCall {
    HttpCall::post("/chat/completions")
        .json(&serde_json::json!({"model": "m", "stream": true}))
        .unwrap()
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let url = runtime.block_on(provider(body()));
    let any = HttpDependency::model("any", &url)
        .stream_format(AnyEvent)
        .build()
        .unwrap();
    let openai = HttpDependency::model("openai", &url)
        .stream_format(OpenAiChat)
        .build()
        .unwrap();
    let http = reqwest::Client::new();
    let mut group = c.benchmark_group("a stream of 10,000 events");
    group.sample_size(20);
    group.bench_function("reqwest and the SSE parser alone", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let response = http
                    .post(format!("{url}/chat/completions"))
                    .header("accept", "text/event-stream")
                    .body("{}")
                    .send()
                    .await
                    .unwrap();
                let events = a2a_error_runtime::peer_input::sse_events(
                    Box::pin(response.bytes_stream()),
                    1 << 20,
                );
                let read = events.fold(0usize, |n, event| async move {
                    black_box(event.unwrap());
                    n + 1
                });
                assert_eq!(read.await, EVENTS + 1);
            })
        })
    });
    for (name, model, expected) in [
        ("the streamed call, AnyEvent", &any, EVENTS + 1),
        ("the streamed call, OpenAiChat", &openai, EVENTS),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                runtime.block_on(async {
                    let stream = model.stream(call()).await.unwrap();
                    let read = stream.fold(0usize, |n, event| async move {
                        black_box(event.unwrap());
                        n + 1
                    });
                    assert_eq!(read.await, expected);
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
