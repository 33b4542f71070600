//! What the loopback test files share.

use axum::Router;

/// Serves `router` on a fresh 127.0.0.1 port; returns `http://127.0.0.1:PORT`.
pub async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}")
}
