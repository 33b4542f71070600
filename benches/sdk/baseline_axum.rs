//! Not an example of the library: the baseline of `benches/sdk/compare.sh`. A hand-written
//! axum handler that parses the same JSON-RPC request with serde and answers GetTask with the
//! bytes the example agent sends for an unknown task (no error types, no checks beyond
//! serde's, no limits).
//!
//! `cargo run --release -p a2a-error-benches --bin bench-baseline-axum -- 127.0.0.1:PORT`

use axum::Router;
use axum::body::Bytes;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::post;
use serde::Deserialize;
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Request<'a> {
    #[allow(dead_code)]
    jsonrpc: &'a str,
    #[serde(borrow)]
    id: &'a RawValue,
    method: &'a str,
    #[serde(borrow)]
    params: &'a RawValue,
}

#[derive(Deserialize)]
struct GetTask<'a> {
    id: &'a str,
}

async fn rpc(body: Bytes) -> impl IntoResponse {
    let json = [(header::CONTENT_TYPE, "application/json")];
    let Ok(request) = serde_json::from_slice::<Request>(&body) else {
        return (json, br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON payload"}}"#.to_vec());
    };
    let task = match (
        request.method,
        serde_json::from_str::<GetTask>(request.params.get()),
    ) {
        ("GetTask", Ok(params)) => params.id,
        _ => "",
    };
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(request.id.get().as_bytes());
    out.extend_from_slice(br#","error":{"code":-32001,"message":"Task not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"taskId":"#);
    serde_json::to_writer(&mut out, task).expect("a string serializes");
    out.extend_from_slice(b"}}]}}");
    (json, out)
}

#[tokio::main]
async fn main() {
    let listener = listener("127.0.0.1:8090").await;
    axum::serve(listener, Router::new().route("/", post(rpc)))
        .await
        .expect("serve");
}

/// Binds the address of the first argument, else `default`.
async fn listener(default: &str) -> tokio::net::TcpListener {
    let addr = std::env::args().nth(1).unwrap_or_else(|| default.into());
    tokio::net::TcpListener::bind(&addr)
        .await
        .expect("a free port")
}
