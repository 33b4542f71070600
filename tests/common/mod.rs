//! What the loopback test files share.

pub mod proxy;
pub mod redis_server;
pub mod requests;

use axum::Router;

/// Serves `router` on a fresh 127.0.0.1 port with `a2a_error::server::serve` and its default
/// limits, as the example agent does; returns `http://127.0.0.1:PORT`.
pub async fn serve(router: Router) -> String {
    serve_with(router, a2a_error::server::ServeLimits::default()).await
}

/// Serves `router` within `limits`; returns `http://127.0.0.1:PORT`.
#[allow(dead_code)]
pub async fn serve_with(router: Router, limits: a2a_error::server::ServeLimits) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { a2a_error::server::serve(listener, router, limits).await });
    format!("http://{addr}")
}

/// The built example `name` (test binaries live in target/<profile>/deps, examples in
/// target/<profile>/examples; `cargo test --workspace` builds them).
#[allow(dead_code)]
pub fn example_exe(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let example = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        example.exists(),
        "{} is missing: run `cargo test --workspace`, which builds the examples",
        example.display()
    );
    example
}
