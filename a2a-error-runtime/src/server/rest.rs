//! The HTTP+JSON (REST) binding's error responses: the HTTP status from the code table, a
//! `google.rpc.Status` body with ErrorInfo (and RetryInfo), `Retry-After` when a delay is
//! known, content type `application/a2a+json`.
//!
//! Derived errors implement axum's `IntoResponse` with [`error_response`], so REST handlers
//! can return `Result<Json<T>, YourError>`.

use std::any::Any;
use std::future::{Ready, ready};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{HeaderValue, Request, StatusCode, header};
use axum::response::Response;
use futures_util::future::Either;
use tower::{Layer, Service};
use tower_http::catch_panic::CatchPanicLayer;

use crate::code::StatusMapping;
use crate::encode;
use crate::error::A2aError;
use crate::standard::StandardError;

/// The REST error response for `err` (A2A v1.0.1 status mapping).
pub fn error_response<E: A2aError + ?Sized>(err: &E) -> Response {
    error_response_with(err, StatusMapping::V1_0_1)
}

/// The REST error response for `err` under the given status mapping.
pub fn error_response_with<E: A2aError + ?Sized>(err: &E, mapping: StatusMapping) -> Response {
    let status = mapping.http_status(err.code(), err.http_status());
    let mut body = Vec::with_capacity(256);
    encode::write_rest_status(err, status, &mut body);
    let mut response = Response::new(Body::from(body));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(super::A2A_JSON),
    );
    if let Some(delay) = err.retry_hint().delay() {
        // Retry-After takes whole seconds: round up, so the client never comes back early.
        let seconds = delay.as_secs() + u64::from(delay.subsec_nanos() > 0);
        headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// A fallback handler for unknown REST routes: 404 with a METHOD_NOT_FOUND Status body.
pub async fn not_found() -> Response {
    error_response(&StandardError::MethodNotFound)
}

/// A layer that answers a panicking REST handler with a -32603 INTERNAL_ERROR Status body
/// (the panic text goes to `tracing`, never to the client).
pub fn catch_panic() -> CatchPanicLayer<fn(Box<dyn Any + Send + 'static>) -> Response> {
    CatchPanicLayer::custom(panic_response as fn(Box<dyn Any + Send + 'static>) -> Response)
}

fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let text = super::log::panic_text(&*panic);
    tracing::error!("REST handler panicked: {text}");
    error_response(&StandardError::Internal)
}

/// A tower layer for REST routes: a request whose `A2A-Version` header names a version not
/// served gets VERSION_NOT_SUPPORTED (400, Status body). A request without the header is
/// served (it is taken to mean the current version).
#[derive(Clone, Debug)]
pub struct RequireVersion {
    versions: Arc<[String]>,
}

impl RequireVersion {
    /// Serves exactly `versions` (e.g. `["1.0"]`).
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(versions: I) -> Self {
        RequireVersion {
            versions: versions.into_iter().map(Into::into).collect(),
        }
    }
}

impl<S> Layer<S> for RequireVersion {
    type Service = RequireVersionService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequireVersionService {
            inner,
            versions: Arc::clone(&self.versions),
        }
    }
}

/// The service made by [`RequireVersion`].
#[derive(Clone, Debug)]
pub struct RequireVersionService<S> {
    inner: S,
    versions: Arc<[String]>,
}

impl<S, B> Service<Request<B>> for RequireVersionService<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<Response, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let served = match request.headers().get(super::VERSION_HEADER) {
            None => true,
            Some(value) => {
                let asked = value.to_str().unwrap_or("").trim();
                self.versions.iter().any(|v| v == asked)
            }
        };
        if served {
            Either::Right(self.inner.call(request))
        } else {
            tracing::debug!("REST request for an A2A version not served");
            Either::Left(ready(Ok(error_response(
                &StandardError::VersionNotSupported,
            ))))
        }
    }
}
