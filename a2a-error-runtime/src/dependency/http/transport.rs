//! The HTTP service at the bottom of an `HttpDependency`'s stack: one attempt, once.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::SystemTime;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tower::Service;

use super::call::{HttpCall, HttpReply};
use super::error::{EXCERPT_BYTES, HttpError, HttpFailure, StatusFailure};
use crate::dependency::Failure;
use crate::http::body::{self, BodyError};
use crate::resilience::{Request, Timeout};

/// Sends an [`HttpCall`] once to a base URL, reading at most `max_reply` bytes of a reply.
#[derive(Clone, Debug)]
pub(in crate::dependency) struct HttpService {
    pub(in crate::dependency) http: reqwest::Client,
    pub(in crate::dependency) base: Arc<str>,
    pub(in crate::dependency) max_reply: usize,
    pub(in crate::dependency) headers: HeaderMap,
    pub(in crate::dependency) deadline_header: Option<HeaderName>,
    pub(in crate::dependency) idempotency_header: HeaderName,
}

impl Service<HttpCall> for HttpService {
    type Response = HttpReply;
    type Error = HttpError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpReply, HttpError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: HttpCall) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let deadline = call.time_limit().deadline_from(tokio::time::Instant::now());
            let exchange = this.exchange(call);
            match deadline {
                None => exchange.await,
                // A service used without the layers still ends by the call's deadline.
                Some(deadline) => tokio::time::timeout_at(deadline, exchange)
                    .await
                    .unwrap_or(Err(Failure::Timeout(Timeout::Total))),
            }
        })
    }
}

impl HttpService {
    async fn exchange(self, call: HttpCall) -> Result<HttpReply, HttpError> {
        let response = self.open(&call, None).await?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = body::read(response, self.max_reply)
            .await
            .map_err(read_error)?;
        Ok(HttpReply {
            status,
            headers,
            body,
        })
    }

    /// Sends `call` (with `accept`, when given) and reads the reply's head: a 2xx reply's
    /// response, its body unread, or the failure a non-2xx one is (a few bytes of its body
    /// kept for logs).
    pub(in crate::dependency) async fn open(
        &self,
        call: &HttpCall,
        accept: Option<HeaderValue>,
    ) -> Result<reqwest::Response, HttpError> {
        let fixed = call.fixed();
        let url = format!("{}{}", self.base, fixed.path);
        let url = reqwest::Url::parse(&url).map_err(|error| {
            Failure::Failed(HttpFailure::Invalid {
                detail: format!("not a URL: {error}"),
            })
        })?;
        let mut request = self
            .http
            .request(fixed.method.clone(), url)
            .headers(self.headers.clone())
            .headers(fixed.headers.clone());
        if let Some(accept) = accept {
            request = request.header(reqwest::header::ACCEPT, accept);
        }
        if let Some(key) = &fixed.idempotency_key {
            request = request.header(self.idempotency_header.clone(), key.clone());
        }
        if let (Some(name), Some(left)) = (&self.deadline_header, call.time_limit().time_left()) {
            let millis = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
            request = request.header(name.clone(), HeaderValue::from(millis));
        }
        if let Some(body) = &fixed.body {
            request = request.body(body.clone());
        }
        let response = request.send().await.map_err(send_error)?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let excerpt = body::excerpt(response, EXCERPT_BYTES).await;
        Err(Failure::Failed(HttpFailure::Status(StatusFailure::read(
            status,
            &headers,
            &excerpt,
            SystemTime::now(),
        ))))
    }
}

fn send_error(error: reqwest::Error) -> HttpError {
    let detail = error.to_string();
    if error.is_builder() {
        Failure::Failed(HttpFailure::Invalid { detail })
    } else if error.is_connect() {
        if error.is_timeout() {
            Failure::Timeout(Timeout::Connect)
        } else {
            Failure::Failed(HttpFailure::Connect { detail })
        }
    } else if error.is_timeout() {
        Failure::Timeout(Timeout::Attempt)
    } else {
        Failure::Failed(HttpFailure::Transport { detail })
    }
}

pub(in crate::dependency) fn read_error(error: BodyError) -> HttpError {
    match error {
        BodyError::TooLarge { limit } => Failure::Failed(HttpFailure::TooLarge { limit }),
        BodyError::Timeout => Failure::Timeout(Timeout::Attempt),
        BodyError::Broken(error) => Failure::Failed(HttpFailure::Transport {
            detail: error.to_string(),
        }),
    }
}
