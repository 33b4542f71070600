//! `serve`: axum's `serve` with the limits a public agent needs. `axum::serve` sets no
//! header-read timeout, no body-read timeout and no connection cap, so slow peers can hold
//! connections and upload buffers for as long as they like (slowloris).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use futures_util::future::Either;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use pin_project_lite::pin_project;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

use super::body::TimedBody;
use super::quota::{Quota, Quotas};
use super::watch::{self, Counted, Progress, Serving};

/// What [`serve`] serves: a [`Router`], with, when one is put [in front of
/// it](crate::server::endpoint::JsonRpc::in_front_of), the JSON-RPC endpoint answering path `/` itself.
///
/// A request to `/` then goes to the endpoint without being routed: the router's matching,
/// its boxed route and the futures around it cost the error path of a JSON-RPC agent about
/// an eighth of its work (measured under callgrind, `benches/README.md`). The endpoint answers
/// every request to `/` as it does from [`into_router`](crate::server::endpoint::JsonRpc::into_router) (any HTTP
/// method; only `POST` with a JSON body reaches a handler); layers added to the router do not
/// see them, so a layer the JSON-RPC requests must pass (authentication, say) belongs on a
/// router that merges [`into_router`](crate::server::endpoint::JsonRpc::into_router) instead.
///
/// Any `Router` is an `App` (`serve(listener, router, limits)`).
pub struct App {
    front: Option<Front>,
    router: Router,
}

/// The endpoint in front: one request's reply, boxed once (as its tower `Service` does).
type Front = Arc<
    dyn Fn(
            hyper::Request<Body>,
        ) -> futures_util::future::BoxFuture<'static, axum::response::Response>
        + Send
        + Sync,
>;

impl App {
    /// `front` answering `/`, and `router` the rest.
    pub(crate) fn new(front: Front, router: Router) -> Self {
        App {
            front: Some(front),
            router,
        }
    }

    /// `other`'s routes added to the router behind the endpoint (axum's `Router::merge`).
    pub fn merge(mut self, other: Router) -> Self {
        self.router = self.router.merge(other);
        self
    }
}

impl From<Router> for App {
    fn from(router: Router) -> Self {
        App {
            front: None,
            router,
        }
    }
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("json_rpc_in_front", &self.front.is_some())
            .finish_non_exhaustive()
    }
}

/// The limits of [`serve`]. Defaults: 10 s to send the request headers, 30 s to send a request
/// body, 1024 connections at once, a quarter of them for one caller once three quarters are
/// taken.
///
/// Memory held by uploads is at most `max_connections ×` the largest body a route accepts
/// (`JsonRpc::max_body_bytes`, axum's `DefaultBodyLimit`); a body that times out is dropped
/// with its buffer. Parsing does not multiply it: the JSON-RPC endpoint keeps a request's
/// params as their JSON text (one copy, so at most twice the body) until the handler's own
/// type reads them, and never reads the params of a method it does not serve; a batch past
/// its size limit is refused before its requests are looked at. What a handler's own params
/// type holds (a `serde_json::Value` field costs up to ~85× its text) is the handler's.
/// Each connection also keeps 4 KiB in which it joins a small reply to send it with one
/// `send` (at most 4 MiB at the default `max_connections`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ServeLimits {
    header_timeout: Duration,
    body_timeout: Duration,
    max_connections: usize,
    /// `None`: a quarter of `max_connections` (the quotas' default).
    max_per_caller: Option<usize>,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_connections: 1024,
            max_per_caller: None,
        }
    }
}

impl ServeLimits {
    /// How long a peer has to send a request's headers (default 10 s); then the connection is
    /// closed. It counts from the accept for a connection's first request (so a connection
    /// that sends nothing is closed after this long too), and on a kept-alive connection from
    /// when the previous reply was last written to; a reply the peer has stopped reading
    /// counts too (a streamed reply does not, until it ends). The connection is closed
    /// between this long and a quarter more after it last did anything.
    pub fn header_timeout(mut self, limit: Duration) -> Self {
        self.header_timeout = limit;
        self
    }

    /// How long a peer has to send a request's whole body, counted from when its headers
    /// arrived (default 30 s); then reading the body fails, which the JSON-RPC endpoint and
    /// [`rest::Json`](super::rest::Json) answer with a 408 error body.
    pub fn body_timeout(mut self, limit: Duration) -> Self {
        self.body_timeout = limit;
        self
    }

    /// How many connections are served at once (default 1024, at least 1). Further peers
    /// wait in the listen backlog until a connection closes.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// How many requests one caller may have served at once (a stream counts until it ends)
    /// once three quarters of `max_connections` are taken (default a quarter of
    /// `max_connections`, at least 1): a sole caller can use three quarters of the
    /// connections, and the last quarter stays for callers under their quota. A caller is
    /// its `Authorization` credential (the scheme in any case, as
    /// [`scope::credential`](super::scope::credential) reads it), or its address when it
    /// sends none. A request past it is refused at once with RATE_LIMITED (HTTP 429,
    /// `Retry-After: 1`) and its connection closed, so that one caller holding streams it
    /// never reads cannot keep the others out.
    pub fn max_per_caller(mut self, requests: usize) -> Self {
        self.max_per_caller = Some(requests.max(1));
        self
    }
}

/// Serves `app` (a [`Router`], or an [`App`]) on `listener` over HTTP/1.1 within `limits`,
/// until the listener fails for good. Each connection runs on its own task.
///
/// ```no_run
/// # use a2a_error_runtime as a2a_error;
/// # async fn run() -> std::io::Result<()> {
/// use a2a_error::server::{JsonRpc, ServeLimits, serve};
///
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// serve(listener, JsonRpc::new().into_router(), ServeLimits::default()).await
/// # }
/// ```
pub async fn serve(
    listener: TcpListener,
    app: impl Into<App>,
    limits: ServeLimits,
) -> io::Result<()> {
    let App { front, router } = app.into();
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let quotas = Quotas::new(limits.max_connections, limits.max_per_caller);
    let mut http = hyper::server::conn::http1::Builder::new();
    // The header timeout is each connection's watch's (see `watch`): hyper's own polls every
    // connection once more after each reply.
    http.header_read_timeout(None);
    loop {
        // Wait for a free slot before accepting: excess peers queue in the kernel.
        let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
            return Ok(());
        };
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) if is_connection_error(&error) => continue,
            Err(error) => {
                // Out of file descriptors and the like: back off, as axum::serve does.
                tracing::error!("accept failed: {error}");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (router, front) = (router.clone(), front.clone());
        let body_timeout = limits.body_timeout;
        let quotas = Arc::clone(&quotas);
        let progress = Arc::new(Progress::default());
        let serving = Arc::clone(&progress);
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            // The head is in: the connection is busy until the reply is written (a stream's,
            // until it ends).
            let serving = serving.begin();
            let quota = quotas.take(quotas.caller(request.headers(), Some(peer.ip())));
            let request = request.map(|body| Body::new(TimedBody::new(body, body_timeout)));
            // The peer's address is known to the request's handling (`peer`), from its making
            // on.
            let reply = super::peer::sync_scope(peer.ip(), || {
                quota.map(|quota| {
                    let reply = match &front {
                        Some(front) if request.uri().path() == "/" => Either::Left(front(request)),
                        // Boxed: inline, the router's future (the request in it) would make
                        // this future, which hyper moves into its slot for every request,
                        // several hundred bytes for the endpoint's requests too.
                        _ => Either::Right(Box::pin(router.clone().oneshot(request))),
                    };
                    (quota, reply)
                })
            });
            super::peer::scope(peer.ip(), async move {
                let Some((quota, reply)) = reply else {
                    return Ok(over_quota());
                };
                let reply = match reply {
                    Either::Left(front) => front.await,
                    Either::Right(routed) => routed.await?,
                };
                // A reply of known size is written at once: its slot is given back now. A
                // stream holds it until it ends or is closed.
                if http_body::Body::size_hint(reply.body()).exact().is_some() {
                    return Ok(reply);
                }
                Ok::<_, std::convert::Infallible>(reply.map(|body| {
                    Body::new(Holding {
                        body,
                        _quota: quota,
                        _serving: serving,
                    })
                }))
            })
        });
        let connection =
            http.serve_connection(TokioIo::new(Counted::new(stream, &progress)), service);
        let served = Arc::clone(&progress);
        let task = tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!("connection ended: {error}");
            }
            served.ended();
            drop(permit);
        });
        watch::watch(&progress, limits.header_timeout, task.abort_handle());
    }
}

/// The reply to a request past its caller's quota: RATE_LIMITED, and the connection closed.
fn over_quota() -> axum::response::Response {
    let mut reply = super::rest::error_response(&super::quota::refusal());
    reply.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    reply
}

pin_project! {
    /// A reply body holding its caller's [`Quota`], and its connection busy, until it ends or
    /// is dropped.
    struct Holding {
        #[pin]
        body: Body,
        _quota: Quota,
        _serving: Serving,
    }
}

impl http_body::Body for Holding {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.project().body.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Whether an accept failed for the peer's sake (it went away): accept the next one at once.
#[doc(hidden)]
pub fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}
