//! The HTTP service at the bottom of an `HttpDependency`'s stack: one attempt, once.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::SystemTime;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tower::Service;

use super::call::{HttpCall, HttpReply};
use super::error::{HttpError, HttpFailure, SCANNED_BYTES, StatusFailure};
use super::quota::Pacing;
use crate::dependency::failure::Failure;
use crate::http::body::{self, BodyError};
use crate::resilience::{Request, Timeout, within};

/// Sends an [`HttpCall`] once to a base URL, reading at most `max_reply` bytes of a reply.
#[derive(Clone, Debug)]
pub(in crate::dependency) struct HttpService {
    pub(in crate::dependency) http: reqwest::Client,
    pub(in crate::dependency) base: Arc<str>,
    pub(in crate::dependency) max_reply: usize,
    pub(in crate::dependency) headers: HeaderMap,
    pub(in crate::dependency) deadline_header: Option<HeaderName>,
    pub(in crate::dependency) idempotency_header: HeaderName,
    /// Where the replies' rate-limit headers are kept (an `HttpDependency`'s).
    pub(in crate::dependency) quota: Option<Arc<Pacing>>,
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
        // A service used without the layers still ends by the call's deadline.
        let deadline = call.time_limit().deadline_from(tokio::time::Instant::now());
        Box::pin(within(
            deadline.map(|at| (at, Timeout::Total)),
            this.exchange(call),
        ))
    }
}

impl HttpService {
    async fn exchange(self, call: HttpCall) -> Result<HttpReply, HttpError> {
        let response = self.open(call, None).await?;
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
        call: HttpCall,
        accept: Option<HeaderValue>,
    ) -> Result<reqwest::Response, HttpError> {
        let response = self.open_any(call, accept).await?;
        if response.status().is_success() {
            return Ok(response);
        }
        // Boxed: a future holds the room of every path it may take, and this rare one's
        // (the body's excerpt) would be copied with every attempt's future.
        Err(Box::pin(refused(response)).await)
    }

    /// Sends `call` (with `accept`, when given): the reply's head whatever its status (for a
    /// callee whose non-2xx replies carry its own protocol's errors, MCP's), its stated quota
    /// kept.
    pub(in crate::dependency) async fn open_any(
        &self,
        call: HttpCall,
        accept: Option<HeaderValue>,
    ) -> Result<reqwest::Response, HttpError> {
        // Made before the first await, in a function of its own: nothing of the call is
        // held by the future while the request is out.
        let request = self.request(call, accept)?;
        let response = self.http.execute(request).await.map_err(send_error)?;
        self.observe(&response);
        Ok(response)
    }

    /// Keeps what the reply's head states of the quota, when this service keeps one.
    fn observe(&self, response: &reqwest::Response) {
        if let Some(pacing) = &self.quota {
            pacing.observe(response.headers());
        }
    }

    /// The request `call` is (with `accept`, when given).
    fn request(
        &self,
        call: HttpCall,
        accept: Option<HeaderValue>,
    ) -> Result<reqwest::Request, HttpError> {
        let time_left = call.time_limit().time_left();
        let fixed = call.into_fixed();
        let url = match fixed.url {
            Some(url) => url,
            None => {
                reqwest::Url::parse(&format!("{}{}", self.base, fixed.path)).map_err(|error| {
                    Failure::Failed(HttpFailure::Invalid {
                        detail: format!("not a URL: {error}"),
                    })
                })?
            }
        };
        // The call's headers moved into the request, the dependency's own beside them
        // (a name the call sets is the call's alone), then the rest appended.
        let mut request = reqwest::Request::new(fixed.method, url);
        let headers = request.headers_mut();
        *headers = fixed.headers;
        for name in self.headers.keys() {
            if !headers.contains_key(name) {
                for value in self.headers.get_all(name) {
                    headers.append(name.clone(), value.clone());
                }
            }
        }
        if let Some(accept) = accept {
            headers.append(reqwest::header::ACCEPT, accept);
        }
        if let Some(key) = fixed.idempotency_key {
            headers.append(self.idempotency_header.clone(), key);
        }
        if let (Some(name), Some(left)) = (&self.deadline_header, time_left) {
            let millis = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
            headers.append(name.clone(), HeaderValue::from(millis));
        }
        *request.body_mut() = fixed.body.map(Into::into);
        Ok(request)
    }
}

/// A non-2xx reply as the failure it is, a few bytes of its body kept for logs.
async fn refused(response: reqwest::Response) -> HttpError {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let excerpt = body::excerpt(response, SCANNED_BYTES).await;
    Failure::Failed(HttpFailure::Status(StatusFailure::read(
        status,
        &headers,
        &excerpt,
        SystemTime::now(),
    )))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn service() -> HttpService {
        let mut headers = HeaderMap::new();
        headers.insert("x-team", HeaderValue::from_static("search"));
        headers.append("x-tag", HeaderValue::from_static("one"));
        headers.append("x-tag", HeaderValue::from_static("two"));
        HttpService {
            http: reqwest::Client::new(),
            base: Arc::from("http://127.0.0.1:9/api"),
            max_reply: 1 << 10,
            headers,
            deadline_header: Some(HeaderName::from_static("a2a-deadline-ms")),
            idempotency_header: HeaderName::from_static("idempotency-key"),
            quota: None,
        }
    }

    fn values<'a>(request: &'a reqwest::Request, name: &str) -> Vec<&'a str> {
        let all = request.headers().get_all(name).iter();
        all.map(|value| value.to_str().unwrap()).collect()
    }

    #[test]
    fn a_request_carries_the_calls_headers_over_the_dependencys_own() {
        let mut call = HttpCall::post("/v1/chat?x=1")
            .header(
                HeaderName::from_static("x-tag"),
                HeaderValue::from_static("mine"),
            )
            .idempotency_key(HeaderValue::from_static("key-1"))
            .body(&b"{}"[..]);
        call.set_time_limit(
            call.time_limit()
                .with_budget(std::time::Duration::from_secs(3)),
        );
        let accept = HeaderValue::from_static("text/event-stream");
        let request = service().request(call, Some(accept)).unwrap();
        assert_eq!(request.url().as_str(), "http://127.0.0.1:9/api/v1/chat?x=1");
        assert_eq!(request.method(), reqwest::Method::POST);
        // A name the call sets is the call's alone; the others are the dependency's.
        assert_eq!(values(&request, "x-tag"), ["mine"]);
        assert_eq!(values(&request, "x-team"), ["search"]);
        assert_eq!(values(&request, "accept"), ["text/event-stream"]);
        assert_eq!(values(&request, "idempotency-key"), ["key-1"]);
        let left: u64 = values(&request, "a2a-deadline-ms")[0].parse().unwrap();
        assert!((1..=3000).contains(&left), "{left}");
        let body = request.body().and_then(|body| body.as_bytes());
        assert_eq!(body, Some(&b"{}"[..]));

        // A path that makes no URL is refused as the call's fault, never sent.
        let unbased = HttpService {
            base: Arc::from(""),
            ..service()
        };
        let error = unbased.request(HttpCall::get("not a url"), None);
        assert!(matches!(
            error,
            Err(Failure::Failed(HttpFailure::Invalid { .. }))
        ));
    }

    #[cfg(any(feature = "mcp", feature = "push"))]
    #[test]
    fn a_call_made_with_its_url_goes_there() {
        // A call made with its URL parsed goes there, the base unused; a shared call (as the
        // retry layer keeps one per attempt) is copied, not emptied.
        let url = reqwest::Url::parse("http://10.0.0.1:8080/hook").unwrap();
        let call = HttpCall::to_url(reqwest::Method::POST, url);
        let kept = call.clone();
        let request = service().request(call, None).unwrap();
        assert_eq!(request.url().as_str(), "http://10.0.0.1:8080/hook");
        assert_eq!(values(&request, "x-tag"), ["one", "two"]);
        assert!(request.headers().get("accept").is_none());
        assert_eq!(kept.method(), reqwest::Method::POST);
        let again = service().request(kept, None).unwrap();
        assert_eq!(again.url().as_str(), "http://10.0.0.1:8080/hook");
    }
}
