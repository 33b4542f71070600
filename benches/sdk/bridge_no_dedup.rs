//! Not an example of the library: a baseline of `benches/sdk/compare.sh`. The `sdk_agent`
//! example's bridge without its dedup (every SendMessage runs), served as the example serves
//! it, to show what exactly-once SendMessage costs on the bridge's success path.
//!
//! `cargo run --release --example bench-bridge-no-dedup -- 127.0.0.1:PORT`

#[path = "listen.rs"]
mod listen;

#[path = "../../examples/sdk_agent/app.rs"]
#[allow(dead_code)]
mod app;

use a2a_error::server::{ServeLimits, serve};

#[tokio::main]
async fn main() {
    let listener = listen::listener("127.0.0.1:9407").await;
    let router = app::bridge_without_dedup().router();
    serve(listener, router, ServeLimits::default())
        .await
        .unwrap();
}
