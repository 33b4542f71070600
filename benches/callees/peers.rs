//! Not an example of the library: the peers of `benches/callees/answer.py`, which measures a
//! long streamed answer through `examples/llm_agent` against its floor.
//!
//! - `bench-callee-peers model ADDR TOKENS`: a model provider on loopback whose
//!   `POST /chat/completions` streams TOKENS one-token chunks in OpenAI's format (then the
//!   usage chunk and `[DONE]`), as fast as its reader reads; its first answer has
//!   [`WARM_UP`] tokens, so that a server's first call (its pools, its lazy statics) is
//!   measured apart.
//! - `bench-callee-peers relay ADDR MODEL_URL`: the floor of a streamed answer, a plain relay
//!   written by hand: `POST /` streams `POST {MODEL_URL}/chat/completions` with reqwest, reads
//!   its SSE lines, and writes each token out as an SSE event of its own (`data:` a JSON object
//!   with the text), with no task, no store, no limits and no errors of note.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The tokens of the model's first answer.
const WARM_UP: usize = 100;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::post;
use futures_util::StreamExt;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: bench-callee-peers model ADDR TOKENS | relay ADDR MODEL_URL";
    let (Some(mode), Some(addr), Some(arg)) = (args.first(), args.get(1), args.get(2)) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let router = match mode.as_str() {
        "model" => {
            let tokens: usize = arg.parse().expect("TOKENS is a number");
            Router::new()
                .route("/chat/completions", post(model))
                .with_state((tokens, Arc::new(AtomicBool::new(false))))
        }
        "relay" => Router::new().route("/", post(relay)).with_state(Relay {
            url: format!("{arg}/chat/completions"),
            client: reqwest::Client::new(),
        }),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
    axum::serve(listener, router).await.expect("serve");
}

/// The model's streamed answer: TOKENS chunks made as they are read ([`WARM_UP`] the first
/// time).
async fn model(State((tokens, warm)): State<(usize, Arc<AtomicBool>)>) -> impl IntoResponse {
    let tokens = if warm.swap(true, Ordering::Relaxed) {
        tokens
    } else {
        WARM_UP
    };
    let chunks = futures_util::stream::iter(0..tokens).map(|i| {
        let chunk = format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"w{} \"}}}}]}}\n\n",
            i % 1000
        );
        Ok::<_, Infallible>(Bytes::from(chunk))
    });
    let end = futures_util::stream::iter([Ok(Bytes::from_static(
        b"data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":8000,\"total_tokens\":8007}}\n\ndata: [DONE]\n\n",
    ))]);
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(chunks.chain(end)),
    )
}

#[derive(Clone)]
struct Relay {
    url: String,
    client: reqwest::Client,
}

/// The plain relay: the model's tokens, each written out as an SSE event.
// The request's body is read (and dropped): one left unread makes hyper close the
// connection at the answer's end with bytes unread, which a reader may see as a reset.
async fn relay(State(relay): State<Relay>, _request: Bytes) -> impl IntoResponse {
    let request = serde_json::json!({"model": "primary", "stream": true,
        "messages": [{"role": "user", "content": "relay"}]});
    let reply = relay
        .client
        .post(&relay.url)
        .json(&request)
        .send()
        .await
        .expect("the model answers");
    let mut lines = Vec::new();
    let events = reply.bytes_stream().map(move |chunk| {
        let chunk = chunk.expect("the model's stream");
        let mut out = Vec::new();
        for &byte in chunk.iter() {
            if byte != b'\n' {
                lines.push(byte);
                continue;
            }
            if let Some(data) = lines.strip_prefix(b"data: ")
                && let Ok(chunk) = serde_json::from_slice::<serde_json::Value>(data)
                && let Some(text) = chunk["choices"][0]["delta"]["content"].as_str()
            {
                out.extend_from_slice(b"data: ");
                serde_json::to_writer(&mut out, &serde_json::json!({ "text": text }))
                    .expect("JSON");
                out.extend_from_slice(b"\n\n");
            }
            lines.clear();
        }
        Ok::<_, Infallible>(Bytes::from(out))
    });
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(events),
    )
}
