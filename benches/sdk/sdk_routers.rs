//! Not an example of the library: a baseline of `benches/sdk/compare.sh`. The `sdk_agent`
//! example's agent (its executor and task store) served by the official Rust SDK's own
//! routers (`a2a-server-lf`'s `jsonrpc_router` and `rest_router` on `axum::serve`), instead
//! of through a2a-error's bridge.
//!
//! `cargo run --release --example bench-sdk-routers -- 127.0.0.1:PORT`

#[path = "listen.rs"]
mod listen;

#[path = "../../examples/sdk_agent/app.rs"]
#[allow(dead_code)]
mod app;

#[tokio::main]
async fn main() {
    let listener = listen::listener("127.0.0.1:9406").await;
    axum::serve(listener, app::sdk_routers()).await.unwrap();
}
