//! The HTTP+JSON (REST) binding's error responses: the HTTP status from the code table, a
//! `google.rpc.Status` body with ErrorInfo (and RetryInfo), `Retry-After` when a delay is
//! known, content type `application/a2a+json`.
//!
//! Derived errors implement axum's `IntoResponse` with [`error_response`], so REST handlers
//! can return `Result<Json<T>, YourError>`.

use std::any::Any;
use std::future::{Ready, ready};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use axum::response::Response;
use futures_util::future::Either;
use tower::{Layer, Service};
use tower_http::catch_panic::CatchPanicLayer;

use super::version::Versions;
use crate::wire::code::StatusMapping;
use crate::wire::error::A2aError;
use crate::wire::standard::StandardError;

use crate::wire::rest::status_response;
pub use crate::wire::rest::{error_response, error_response_with};

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
    error_response(&super::log::caught("REST handler", &*panic))
}

/// A tower layer for REST routes: a request whose `A2A-Version` names a version not served
/// gets VERSION_NOT_SUPPORTED (400, Status body). The rule is the JSON-RPC endpoint's: a
/// request without the header asks for the default version (`1.0` unless set), which is
/// served unless [`versions`](Self::versions) leaves it out.
#[derive(Clone, Debug, Default)]
pub struct RequireVersionLayer {
    versions: Versions,
}

impl RequireVersionLayer {
    /// Serves exactly `versions` (e.g. `["1.0"]`).
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(versions: I) -> Self {
        RequireVersionLayer::default().versions(versions)
    }

    /// The versions served (default `["1.0"]`).
    pub fn versions<I: IntoIterator<Item = S>, S: Into<String>>(mut self, versions: I) -> Self {
        self.versions.set_served(versions);
        self
    }

    /// The version a request without `A2A-Version` asks for (default `1.0`).
    pub fn default_version(mut self, version: &str) -> Self {
        self.versions.set_assumed(version);
        self
    }
}

impl<S> Layer<S> for RequireVersionLayer {
    type Service = RequireVersion<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequireVersion {
            inner,
            versions: self.versions.clone(),
        }
    }
}

/// The service made by [`RequireVersionLayer`].
#[derive(Clone, Debug)]
pub struct RequireVersion<S> {
    inner: S,
    versions: Versions,
}

impl<S, B> Service<Request<B>> for RequireVersion<S>
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
        if self
            .versions
            .serves(&self.versions.asked(request.headers()))
        {
            Either::Right(self.inner.call(request))
        } else {
            tracing::debug!("REST request for an A2A version not served");
            Either::Left(ready(Ok(error_response(
                &StandardError::VersionNotSupported,
            ))))
        }
    }
}

/// Why a REST request was refused before its handler ran, answered as a `google.rpc.Status`
/// body with ErrorInfo: the rejection of [`Json`], and what [`StatusBodiesLayer`] puts in
/// place of a framework's plain-text error.
#[derive(Debug)]
pub struct Rejection {
    status: StatusCode,
    error: RejectionError,
}

#[derive(Debug)]
enum RejectionError {
    Standard(StandardError),
    Params(crate::wire::bad_request::BadRequest),
}

impl Rejection {
    fn new(status: StatusCode, error: StandardError) -> Self {
        Rejection {
            status,
            error: RejectionError::Standard(error),
        }
    }

    /// The rejection a framework's error response with `status` stands for.
    pub fn for_status(status: StatusCode) -> Self {
        let error = match status.as_u16() {
            401 => StandardError::AuthRequired,
            403 => StandardError::InsufficientScope,
            404 | 405 | 501 => StandardError::MethodNotFound,
            408 | 504 => StandardError::DeadlineExceeded,
            413 => StandardError::ContentTooLarge,
            422 => StandardError::InvalidParams,
            429 => StandardError::RateLimited { retry_after: None },
            503 => StandardError::AgentUnavailable { retry_after: None },
            400..=499 => StandardError::InvalidRequest,
            _ => StandardError::Internal,
        };
        Rejection::new(status, error)
    }

    /// The HTTP status sent.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The JSON-RPC code the Status body's ErrorInfo stands for.
    pub fn code(&self) -> i32 {
        match &self.error {
            RejectionError::Standard(error) => error.code(),
            RejectionError::Params(error) => error.code(),
        }
    }
}

impl axum::response::IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let status = self.status.as_u16();
        match &self.error {
            RejectionError::Standard(error) => {
                status_response(error, status, StatusMapping::V1_0_1)
            }
            RejectionError::Params(error) => status_response(error, status, StatusMapping::V1_0_1),
        }
    }
}

/// An A2A-shaped JSON extractor for REST routes: like `axum::Json`, but every way a body can
/// be wrong is a `google.rpc.Status` reply, and none echoes serde's text (which names Rust
/// types):
///
/// - not `application/json` / `application/a2a+json`: 415 INVALID_REQUEST;
/// - not JSON (bad syntax, bad UTF-8, empty, trailing bytes): 400 PARSE_ERROR;
/// - JSON of the wrong shape: 400 INVALID_PARAMS with the field path in a BadRequest detail;
/// - over axum's body limit (`DefaultBodyLimit`): 413 CONTENT_TOO_LARGE;
/// - not received within [`ServeLimits::body_timeout`](crate::server::serve::ServeLimits::body_timeout):
///   408 DEADLINE_EXCEEDED.
///
/// As a response it is `axum::Json`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Json<T>(pub T);

impl<T, S> axum::extract::FromRequest<S> for Json<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Rejection;

    async fn from_request(request: Request<Body>, state: &S) -> Result<Self, Rejection> {
        if !crate::server::headers::is_json(request.headers()) {
            return Err(Rejection::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                StandardError::InvalidRequest,
            ));
        }
        let bytes = match bytes::Bytes::from_request(request, state).await {
            Ok(bytes) => bytes,
            Err(rejection) if super::body::is_body_timeout(&rejection) => {
                return Err(Rejection::new(
                    StatusCode::REQUEST_TIMEOUT,
                    StandardError::DeadlineExceeded,
                ));
            }
            Err(rejection) => return Err(Rejection::for_status(rejection.status())),
        };
        match super::params::from_slice(&bytes) {
            Ok(value) => Ok(Json(value)),
            Err(None) => Err(Rejection::new(
                StatusCode::BAD_REQUEST,
                StandardError::ParseError,
            )),
            Err(Some(invalid)) => Err(Rejection {
                status: StatusCode::BAD_REQUEST,
                error: RejectionError::Params(invalid),
            }),
        }
    }
}

impl<T: serde::Serialize> axum::response::IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

/// A layer that makes every error response of the routes it wraps a `google.rpc.Status` body:
/// an error status (4xx, 5xx) whose body is not JSON (axum's plain-text rejections, the empty
/// 405 of a wrong HTTP method, a proxy-style page from any layer) is answered again by
/// [`Rejection::for_status`], keeping the status and the `Allow` and `Retry-After` headers.
/// JSON error bodies (this crate's own) pass through untouched.
#[derive(Clone, Copy, Debug, Default)]
pub struct StatusBodiesLayer;

impl<S> Layer<S> for StatusBodiesLayer {
    type Service = StatusBodies<S>;

    fn layer(&self, inner: S) -> StatusBodies<S> {
        StatusBodies { inner }
    }
}

/// The service made by [`StatusBodiesLayer`].
#[derive(Clone, Debug)]
pub struct StatusBodies<S> {
    inner: S,
}

impl<S, B> Service<Request<B>> for StatusBodies<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = futures_util::future::MapOk<S::Future, fn(Response) -> Response>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        use futures_util::TryFutureExt;
        self.inner
            .call(request)
            .map_ok(status_body as fn(Response) -> Response)
    }
}

fn status_body(response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error())
        || crate::server::headers::is_json(response.headers())
    {
        return response;
    }
    let mut replaced = axum::response::IntoResponse::into_response(Rejection::for_status(status));
    for name in [header::ALLOW, header::RETRY_AFTER] {
        if let Some(value) = response.headers().get(&name) {
            replaced.headers_mut().insert(name, value.clone());
        }
    }
    replaced
}
