//! Not an example of the library: a baseline of `benches/sdk/compare.sh`. The `sdk_agent`
//! example's bridge without its dedup (every SendMessage runs), served as the example serves
//! it, to show what exactly-once SendMessage costs on the bridge's success path.
//!
//! `cargo run --release --example bench-bridge-no-dedup -- 127.0.0.1:PORT`

#[path = "../../examples/sdk_agent/app.rs"]
#[allow(dead_code)]
mod app;

use a2a_error::server::{ServeLimits, serve};

#[tokio::main]
async fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9407".into());
    let listener = tokio::net::TcpListener::bind(&addr).await.unwrap();
    let router = app::bridge_without_dedup().router();
    serve(listener, router, ServeLimits::default())
        .await
        .unwrap();
}
