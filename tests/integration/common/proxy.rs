//! A load balancer in front of agents that loses the first reply: it forwards the first
//! request to one upstream, lets it finish, and breaks the connection before the reply
//! reaches the client; every later request goes to a second upstream (the same one, for a
//! single agent). Shared by the lost-reply tests of one agent and of two replicas.
// Each test binary compiles this module; only some use it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;

/// A JSON response whose body breaks after `prefix`, as a reset connection does.
pub fn broken_reply(prefix: &'static [u8]) -> Response {
    let parts = futures_util::stream::iter([
        Ok(Bytes::from_static(prefix)),
        Err(std::io::Error::other("connection reset")),
    ]);
    Response::builder()
        .header("content-type", "application/json")
        .body(Body::from_stream(parts))
        .unwrap()
}

/// Serves the balancer; returns its URL and the count of requests it forwarded.
pub async fn lossy_balancer(first: String, rest: String) -> (String, Arc<AtomicU32>) {
    let forwarded = Arc::new(AtomicU32::new(0));
    let count = Arc::clone(&forwarded);
    let http = reqwest::Client::new();
    let router = Router::new().route(
        "/",
        post(move |headers: HeaderMap, body: Bytes| {
            let (http, count) = (http.clone(), Arc::clone(&count));
            let (first, rest) = (first.clone(), rest.clone());
            async move {
                let n = count.fetch_add(1, Ordering::SeqCst);
                let upstream = if n == 0 { first } else { rest };
                let reply = http
                    .post(format!("{upstream}/"))
                    .header("content-type", "application/json")
                    .header("a2a-version", headers["a2a-version"].clone())
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                let status = reply.status().as_u16();
                let bytes = reply.bytes().await.unwrap();
                if n == 0 {
                    return broken_reply(b"{\"jsonrpc\":\"2.0\"");
                }
                (
                    StatusCode::from_u16(status).unwrap(),
                    [("content-type", "application/json")],
                    bytes,
                )
                    .into_response()
            }
        }),
    );
    (super::serve(router).await, forwarded)
}
