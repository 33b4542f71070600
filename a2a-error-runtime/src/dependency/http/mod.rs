//! `HttpDependency`: a client for a service over HTTP (a model provider, a tool), built like
//! the A2A [`Client`](crate::Client) and with the same defaults and layers.

mod call;
mod error;
mod transport;

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tower::util::BoxCloneSyncService;

pub use call::{HttpCall, HttpReply, MAX_VALUE_BYTES};
pub use error::{EXCERPT_BYTES, HttpError, HttpFailure, StatusFailure};
use transport::HttpService;

use crate::BuildError;
use crate::dependency::Failure;
use crate::resilience::breaker::{BreakerRegistry, CircuitBreaker};
use crate::resilience::{
    BreakerSource, Bulkhead, HedgeConfig, HedgeDelay, RetryPolicy, RetrySafety, Stack,
};

/// A client of one HTTP service the agent depends on: a model provider, a tool, any JSON API.
///
/// Every call goes through the same layers as a call to an agent (a total timeout, retries
/// with the shared budget and the service's own delays, a breaker, the bulkhead, an attempt
/// timeout), classified as the official OpenAI and Anthropic SDKs classify HTTP: 408, 409,
/// 429, 5xx (529 included) and connection failures are retried, other statuses are not;
/// `Retry-After` (seconds or an HTTP date) and `retry-after-ms` (which wins) are honoured;
/// `x-should-retry: true|false` overrides the status. A reply larger than the reply limit
/// (32 MiB by default, as for A2A replies) fails without being read further. Inside a handler
/// of this crate's server, or an executor the SDK bridge runs, a call inherits what is left of
/// the request's deadline.
///
/// ```no_run
/// # use a2a_error_runtime as a2a_error;
/// # async fn demo() -> Result<(), a2a_error::dependency::HttpError> {
/// use a2a_error::dependency::HttpDependency;
///
/// let model = HttpDependency::model("primary", "http://127.0.0.1:9000/v1").build().unwrap();
/// let body = serde_json::json!({"model": "primary", "messages": []});
/// let reply: serde_json::Value = model.post_json("/chat/completions", &body).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct HttpDependency {
    service: BoxCloneSyncService<HttpCall, HttpReply, HttpError>,
    name: Arc<str>,
    breaker: Option<CircuitBreaker>,
}

impl std::fmt::Debug for HttpDependency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpDependency")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl HttpDependency {
    /// A builder for the service named `name` (in metrics, logs and breaker registries) at
    /// `base_url`; each call's path is appended to it. Its POST and PATCH calls are repeated
    /// after an ambiguous failure (an attempt timeout, a lost connection, a 5xx) only when
    /// they carry an idempotency key or say so ([`HttpCall::repeatable`],
    /// [`HttpDependencyBuilder::repeatable`]).
    pub fn builder(
        name: impl Into<Arc<str>>,
        base_url: impl Into<String>,
    ) -> HttpDependencyBuilder {
        HttpDependencyBuilder {
            name: name.into(),
            base_url: base_url.into(),
            stack: Stack {
                hedge: None,
                ..Stack::default()
            },
            breaker: BreakerSource::Own,
            connect_timeout: Duration::from_secs(10),
            max_reply: 32 << 20,
            http: None,
            headers: HeaderMap::new(),
            deadline_header: None,
            idempotency_header: HeaderName::from_static("idempotency-key"),
            repeatable: false,
        }
    }

    /// A builder for a model provider (an OpenAI- or Anthropic-style API) named `name` at
    /// `base_url`: as [`builder`](Self::builder), but every call may be repeated, as the
    /// providers' official SDKs repeat them (a completion asked for twice costs tokens, not
    /// correctness).
    pub fn model(name: impl Into<Arc<str>>, base_url: impl Into<String>) -> HttpDependencyBuilder {
        HttpDependency::builder(name, base_url).repeatable(true)
    }

    /// The dependency's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The dependency's circuit breaker, when it has one.
    pub fn breaker(&self) -> Option<&CircuitBreaker> {
        self.breaker.as_ref()
    }

    /// Sends `call` through the layers.
    pub async fn send(&self, call: HttpCall) -> Result<HttpReply, HttpError> {
        let call = call.with_target(self.name.clone());
        let status_of = |result: &Result<HttpReply, HttpError>| match result {
            Ok(reply) => Some(reply.status),
            Err(Failure::Failed(HttpFailure::Status(status))) => Some(status.status),
            Err(_) => None,
        };
        let with_trace = |call: HttpCall, trace: &_| call.with_trace(trace);
        crate::dependency::op::send_http(
            &self.name,
            self.service.clone(),
            call,
            with_trace,
            status_of,
        )
        .await
    }

    /// POSTs `body` as JSON to `path` and reads the reply as `T`.
    pub async fn post_json<B, T>(&self, path: &str, body: &B) -> Result<T, HttpError>
    where
        B: Serialize + ?Sized,
        T: DeserializeOwned,
    {
        self.send(HttpCall::post(path).json(body)?).await?.json()
    }

    /// GETs `path` (with its query) and reads the reply as `T`.
    pub async fn get_json<T: DeserializeOwned>(&self, path: &str) -> Result<T, HttpError> {
        self.send(HttpCall::get(path)).await?.json()
    }
}

/// Builds an [`HttpDependency`]. Defaults as the A2A client's: a total timeout of 90 s, an
/// attempt timeout of 30 s, a connect timeout of 10 s, the default retry policy (4 attempts,
/// full-jitter backoff from 250 ms, the service's delays up to 5 minutes, a retry budget), a
/// breaker of its own with the default configuration, the default bulkhead, replies of at
/// most 32 MiB, no redirects followed.
pub struct HttpDependencyBuilder {
    name: Arc<str>,
    base_url: String,
    stack: Stack<HttpError>,
    breaker: BreakerSource,
    connect_timeout: Duration,
    max_reply: usize,
    http: Option<reqwest::Client>,
    headers: HeaderMap,
    deadline_header: Option<HeaderName>,
    idempotency_header: HeaderName,
    repeatable: bool,
}

impl std::fmt::Debug for HttpDependencyBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpDependencyBuilder")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("stack", &self.stack)
            .finish_non_exhaustive()
    }
}

impl HttpDependencyBuilder {
    /// The limit of the whole call, retries and waits included (`None`: no limit).
    pub fn total_timeout(mut self, limit: impl Into<Option<Duration>>) -> Self {
        self.stack.total_timeout = limit.into();
        self
    }

    /// The limit of each attempt (`None`: no limit); it fires as
    /// [`Timeout::Attempt`](crate::call::Timeout::Attempt), which is retried when the call
    /// may be repeated.
    pub fn attempt_timeout(mut self, limit: impl Into<Option<Duration>>) -> Self {
        self.stack.attempt_timeout = limit.into();
        self
    }

    /// The limit for setting up a connection (default 10 s).
    pub fn connect_timeout(mut self, limit: Duration) -> Self {
        self.connect_timeout = limit;
        self
    }

    /// The retry policy ([`RetryPolicy::none`] turns retries off).
    pub fn retry(mut self, policy: RetryPolicy<HttpError>) -> Self {
        self.stack.retry = policy;
        self
    }

    /// Whether calls whose method is not idempotent (POST, PATCH) may be repeated after a
    /// failure that leaves open whether they ran (default: no, but yes for
    /// [`HttpDependency::model`]). A call may say otherwise ([`HttpCall::repeatable`]).
    pub fn repeatable(mut self, repeatable: bool) -> Self {
        self.repeatable = repeatable;
        self
    }

    /// Takes the circuit breaker from `registry`, by the dependency's name.
    pub fn breakers(mut self, registry: &BreakerRegistry) -> Self {
        self.breaker = BreakerSource::Registry(registry.clone());
        self
    }

    /// No circuit breaker.
    pub fn without_breaker(mut self) -> Self {
        self.breaker = BreakerSource::Off;
        self
    }

    /// The bulkhead (default: one of its own, [`Bulkhead::default`]).
    pub fn bulkhead(mut self, bulkhead: Bulkhead) -> Self {
        self.stack.bulkhead = Some(bulkhead);
        self
    }

    /// No bulkhead.
    pub fn without_bulkhead(mut self) -> Self {
        self.stack.bulkhead = None;
        self
    }

    /// Hedges slow GET and HEAD calls after `delay`, the first success winning.
    pub fn hedge(mut self, delay: HedgeDelay) -> Self {
        self.stack.hedge = Some(HedgeConfig::new(delay).methods(["GET", "HEAD"]));
        self
    }

    /// The largest reply read, in bytes (default 32 MiB); a larger one fails as
    /// [`HttpFailure::TooLarge`] and is read no further.
    pub fn max_reply_bytes(mut self, bytes: usize) -> Self {
        self.max_reply = bytes;
        self
    }

    /// Headers sent with every call (credentials, an API version).
    pub fn headers(mut self, headers: HeaderMap) -> Self {
        self.headers = headers;
        self
    }

    /// Sends what is left of the call's deadline, in milliseconds, in header `name` (for a
    /// service that reads one, such as another agent's `A2A-Deadline-Ms`). Off by default.
    pub fn deadline_header(mut self, name: HeaderName) -> Self {
        self.deadline_header = Some(name);
        self
    }

    /// The header an idempotency key travels in (default `Idempotency-Key`).
    pub fn idempotency_header(mut self, name: HeaderName) -> Self {
        self.idempotency_header = name;
        self
    }

    /// Uses `client` (its pool, TLS roots, proxies, redirect policy) instead of building one.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// Builds the client.
    pub fn build(self) -> Result<HttpDependency, BuildError> {
        let url = reqwest::Url::parse(&self.base_url).map_err(|error| BuildError::InvalidUrl {
            url: self.base_url.clone(),
            reason: error.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(BuildError::InvalidUrl {
                url: self.base_url,
                reason: "the scheme must be http or https".into(),
            });
        }
        crate::client::check_tls(&url, &self.base_url, self.http.is_some())?;
        let http = match self.http {
            Some(http) => http,
            None => reqwest::Client::builder()
                .connect_timeout(self.connect_timeout)
                .pool_max_idle_per_host(64)
                .redirect(reqwest::redirect::Policy::none())
                .build()?,
        };
        let breaker = self.breaker.breaker(&self.name);
        let mut stack = self.stack;
        if self.repeatable {
            stack.retry = stack.retry.other_methods(RetrySafety::Safe);
        }
        stack.breaker = breaker.clone();
        let service = HttpService {
            http,
            base: self.base_url.trim_end_matches('/').into(),
            max_reply: self.max_reply,
            headers: self.headers,
            deadline_header: self.deadline_header,
            idempotency_header: self.idempotency_header,
        };
        Ok(HttpDependency {
            service: BoxCloneSyncService::new(stack.service(service)),
            name: self.name,
            breaker,
        })
    }
}
