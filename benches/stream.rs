//! A streamed model call against the bytes it reads: a provider on loopback answers one
//! streamed chat completion of 10,000 small events (`data: {"choices":[{"delta":{"content":
//! "tok"}}]}`, then `data: [DONE]`), read
//! - through `HttpDependency::stream` (the layers, the first-event and idle timers, the byte
//!   count, the breaker's report), with `AnyEvent` (every event content, no JSON read) and
//!   with `OpenAiChat` (each event's JSON read for its content);
//! - with reqwest and this crate's SSE parser alone (the baseline: the same bytes, the same
//!   parser, nothing else), and with each event's delta read by serde_json besides (what a
//!   hand-written OpenAI reader does at least: the baseline of `OpenAiChat`),
//!
//! in the same run; then the same four, interleaved round by round (so that the machine's load
//! falls on each alike), and the ratios of their medians printed.

use std::hint::black_box;

use a2a_error::dependency::{AnyEvent, HttpCall, HttpDependency, OpenAiChat};
use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::StreamExt;

#[path = "loopback.rs"]
mod loopback;

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

/// Serves `body` as an event stream at any path, on loopback, from a thread of its own (so
/// that the reader's runtime, one thread, is the reader's alone); its base URL.
fn provider(body: Vec<u8>) -> String {
    let body = bytes::Bytes::from(body);
    loopback::serve(axum::Router::new().fallback(move || {
        let body = body.clone();
        async move { ([("content-type", "text/event-stream")], body) }
    }))
}

fn call() -> HttpCall {
    HttpCall::post("/chat/completions")
        .json(&serde_json::json!({"model": "m", "stream": true}))
        .unwrap()
}

/// What a hand-written OpenAI reader reads of each event.
#[derive(serde::Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    choices: Vec<Choice<'a>>,
}

#[derive(serde::Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
}

#[derive(serde::Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<std::borrow::Cow<'a, str>>,
}

/// The four readers of the same stream.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Reader {
    /// reqwest and the SSE parser alone.
    Parser,
    /// reqwest, the SSE parser and serde_json's delta read.
    ParserAndSerde,
    /// The streamed call, `AnyEvent`.
    Any,
    /// The streamed call, `OpenAiChat`.
    OpenAi,
}

const READERS: [(Reader, &str); 4] = [
    (Reader::Parser, "reqwest and the SSE parser alone"),
    (
        Reader::ParserAndSerde,
        "reqwest, the SSE parser and serde_json's delta read",
    ),
    (Reader::Any, "the streamed call, AnyEvent"),
    (Reader::OpenAi, "the streamed call, OpenAiChat"),
];

struct Readers {
    url: String,
    http: reqwest::Client,
    any: HttpDependency,
    openai: HttpDependency,
}

impl Readers {
    /// Reads the whole stream once with `reader`.
    async fn read(&self, reader: Reader) {
        let events = match reader {
            Reader::Any | Reader::OpenAi => {
                let model = if reader == Reader::Any {
                    &self.any
                } else {
                    &self.openai
                };
                let stream = model.stream(call()).await.unwrap();
                let read = stream.fold(0usize, |n, event| async move {
                    black_box(event.unwrap());
                    n + 1
                });
                let expected = if reader == Reader::Any {
                    EVENTS + 1
                } else {
                    EVENTS
                };
                assert_eq!(read.await, expected);
                return;
            }
            Reader::Parser | Reader::ParserAndSerde => {
                let response = self
                    .http
                    .post(format!("{}/chat/completions", self.url))
                    .header("accept", "text/event-stream")
                    .body("{}")
                    .send()
                    .await
                    .unwrap();
                a2a_error_runtime::peer_input::sse_events(
                    Box::pin(response.bytes_stream()),
                    1 << 20,
                )
            }
        };
        if reader == Reader::Parser {
            let read = events.fold(0usize, |n, event| async move {
                black_box(event.unwrap());
                n + 1
            });
            assert_eq!(read.await, EVENTS + 1);
        } else {
            let read = events.fold(0usize, |n, event| async move {
                let event = event.unwrap();
                let content = serde_json::from_slice::<Chunk<'_>>(&event)
                    .ok()
                    .and_then(|chunk| chunk.choices.into_iter().next()?.delta?.content);
                n + usize::from(black_box(content).is_some_and(|text| !text.is_empty()))
            });
            assert_eq!(read.await, EVENTS);
        }
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let url = provider(body());
    let readers = Readers {
        any: HttpDependency::builder("any", &url)
            .stream_format(AnyEvent)
            .build()
            .unwrap(),
        openai: HttpDependency::model("openai", &url)
            .stream_format(OpenAiChat)
            .build()
            .unwrap(),
        http: reqwest::Client::new(),
        url,
    };
    let mut group = c.benchmark_group("a stream of 10,000 events");
    group.sample_size(50);
    group.measurement_time(std::time::Duration::from_secs(8));
    for (reader, name) in READERS {
        group.bench_function(name, |b| b.iter(|| runtime.block_on(readers.read(reader))));
    }
    group.finish();

    // `ONLY=NAME`: one reader, 30 times, for callgrind (whose counts do not move with load).
    if let Ok(only) = std::env::var("ONLY") {
        let reader = READERS
            .iter()
            .find(|(_, name)| name.contains(&only))
            .unwrap()
            .0;
        for _ in 0..30 {
            runtime.block_on(readers.read(reader));
        }
        return;
    }
    // Interleaved: each round reads once with every reader, in a rotating order.
    const ROUNDS: usize = 200;
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(ROUNDS); READERS.len()];
    for round in 0..ROUNDS {
        for at in 0..READERS.len() {
            let index = (round + at) % READERS.len();
            let started = std::time::Instant::now();
            runtime.block_on(readers.read(READERS[index].0));
            times[index].push(started.elapsed().as_secs_f64() * 1e3);
        }
    }
    let median = |times: &mut Vec<f64>| {
        times.sort_by(f64::total_cmp);
        times[times.len() / 2]
    };
    let medians: Vec<f64> = times.iter_mut().map(median).collect();
    println!("\ninterleaved, {ROUNDS} rounds, medians:");
    for ((_, name), ms) in READERS.iter().zip(&medians) {
        println!("  {name}: {ms:.3} ms");
    }
    println!(
        "  the streamed call, AnyEvent / the parser alone: {:.3}x",
        medians[2] / medians[0]
    );
    println!(
        "  the streamed call, OpenAiChat / the parser and serde_json: {:.3}x",
        medians[3] / medians[1]
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
