//! `HttpDependency`: a client for a service over HTTP (a model provider, a tool), built like
//! the A2A [`Client`](crate::Client) and with the same defaults and layers.

mod call;
mod error;
mod quota;
mod stream;
mod transport;

use metrics::SharedString;
use reqwest::header::{HeaderMap, HeaderName};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::sync::Arc;
use tower::util::BoxCloneSyncService;
use tracing::Instrument;

pub use call::{HttpCall, HttpReply, MAX_VALUE_BYTES};
pub use error::{EXCERPT_BYTES, HttpError, HttpFailure, InBand, SCANNED_BYTES, StatusFailure};
#[doc(hidden)]
pub use quota::QuotaProbe;
#[cfg(feature = "redis")]
pub use quota::SharedQuota;
use quota::{Admission, Admitted, NO_DEADLINE_WAIT, Pacing};
pub use quota::{CallerBudget, for_caller};
pub use stream::{
    AnthropicMessages, AnyEvent, HttpStream, Interruption, OpenAiChat, Read, StreamEvent,
    StreamFormat, StreamInterrupted,
};
use stream::{StreamService, StreamSettings};
pub(super) use transport::HttpService;
#[cfg(feature = "mcp")]
pub(super) use transport::read_error;

use crate::dependency::failure::Failure;
use crate::http::{BuildError, HttpSettings, parse_url};
use crate::observe::ModelNames;
use crate::resilience::breaker::CircuitBreaker;
use crate::resilience::{
    CalleeSettings, Classify, HedgeConfig, HedgeDelay, OverHttp, Repeatable, StackBuilder,
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
    events: BoxCloneSyncService<HttpCall, HttpStream, HttpError>,
    /// A model's GenAI names (made by [`HttpDependency::model`]): its calls record the GenAI
    /// series, each in a span of its own.
    model: Option<Arc<ModelNames>>,
    name: Arc<str>,
    breaker: Option<CircuitBreaker>,
    /// How calls are admitted: each caller's budget and the stated quota, when either is
    /// kept.
    admission: Option<Arc<Admission>>,
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
        let service = HttpServiceSettings {
            name: name.into(),
            base_url: base_url.into(),
            http: HttpSettings::default(),
            stream: StreamSettings {
                first_event: Some(std::time::Duration::from_secs(10)),
                idle: Some(std::time::Duration::from_secs(30)),
                max_event: 1 << 20,
                format: std::sync::Arc::new(AnyEvent),
            },
            model: None,
            max_reply: 32 << 20,
            headers: HeaderMap::new(),
            deadline_header: None,
            idempotency_header: HeaderName::from_static("idempotency-key"),
            quota: true,
            quota_waits: true,
            expected_output: 256,
            budget: None,
            #[cfg(feature = "redis")]
            shared_quota: None,
        };
        StackBuilder::new(service, false)
    }

    /// A builder for a model provider (an OpenAI- or Anthropic-style API) named `name` at
    /// `base_url`: as [`builder`](Self::builder), but every call may be repeated, as the
    /// providers' official SDKs repeat them (a completion asked for twice costs tokens, not
    /// correctness).
    pub fn model(name: impl Into<Arc<str>>, base_url: impl Into<String>) -> HttpDependencyBuilder {
        let mut builder = HttpDependency::builder(name, base_url)
            .repeatable(true)
            .stream_format(OpenAiChat);
        builder.callee.model = Some(ModelSettings {
            provider: SharedString::const_str("openai"),
            request_model: None,
        });
        builder
    }

    /// The dependency's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The dependency's circuit breaker, when it has one.
    pub fn breaker(&self) -> Option<&CircuitBreaker> {
        self.breaker.as_ref()
    }

    /// Admits `call` (see [`Admission`]): nothing to do when neither a budget nor the
    /// stated quota is kept.
    async fn admit(&self, call: &HttpCall) -> Result<Admitted, HttpError> {
        match &self.admission {
            Some(admission) => {
                admission
                    .admit(call.body_bytes(), crate::inherited::caller())
                    .await
            }
            None => Ok(Admitted::default()),
        }
    }

    /// Sends `call` through the layers, once the service's stated quota has room for it.
    pub async fn send(&self, call: HttpCall) -> Result<HttpReply, HttpError> {
        // Counted against the budget and the stated quota until the reply is read.
        let mut admitted = self.admit(&call).await?;
        let call = call.with_target(self.name.clone());
        let status_of = |result: &Result<HttpReply, HttpError>| match result {
            Ok(reply) => Some(reply.status),
            Err(error) => failed_status(error),
        };
        let with_trace = |call: HttpCall, trace: &_| call.with_trace(trace);
        let sent = super::record::send_http(
            &self.name,
            self.service.clone(),
            call,
            "http",
            with_trace,
            status_of,
        );
        let Some(model) = &self.model else {
            let result = sent.await;
            if admitted.is_charged() {
                admitted.settle(result.as_ref().map(|reply| stream::usage_in(&reply.body)));
            }
            return result;
        };
        let (started, span) = (tokio::time::Instant::now(), model.span());
        let result = sent.instrument(span.clone()).await;
        let (usage, failure) = match &result {
            Ok(reply) => (stream::usage_in(&reply.body), None),
            Err(error) => ((None, None), Some(error.failure_reason())),
        };
        model.ended(&span, started.elapsed(), None, usage, failure);
        admitted.settle(result.as_ref().map(|_| usage));
        result
    }

    /// Sends `call` for a streamed reply (`Accept: text/event-stream`) through the same
    /// layers as [`send`](Self::send), sharing its breaker, bulkhead and retry budget: the
    /// stream is open once its first content event has arrived (see [`StreamFormat`]).
    /// Before that, a failing status, a lost connection, an in-band error, an oversized event
    /// or no content within the first-event timeout fail the attempt, retried as a whole
    /// reply's failures are. After it, the stream is yours: a failure ends it with a
    /// [`StreamInterrupted`] (never retried, counted against the breaker). Bounded by the
    /// idle timeout between events (anything received counts, comment lines too), one
    /// event's size, the whole reply's size, and the call's deadline (the total timeout and
    /// the caller's), which bounds the whole stream; the attempt timeout does not apply.
    /// Dropping the stream closes the connection.
    pub async fn stream(&self, call: HttpCall) -> Result<HttpStream, HttpError> {
        // Counted against the stated quota until the stream is open (its head read); against
        // the caller's budget until it ends, when its usage is known.
        let mut admitted = self.admit(&call).await?;
        let started = tokio::time::Instant::now();
        let call = call.with_target(self.name.clone());
        let status_of = |result: &Result<HttpStream, HttpError>| match result {
            Ok(_) => Some(200),
            Err(error) => failed_status(error),
        };
        let with_trace = |call: HttpCall, trace: &_| call.with_trace(trace);
        let opened = super::record::send_http(
            &self.name,
            self.events.clone(),
            call,
            "http",
            with_trace,
            status_of,
        );
        let Some(model) = &self.model else {
            return match opened.await {
                Ok(opened) => Ok(opened
                    .reporting(self.breaker.clone(), None, started)
                    .charging(admitted.take_charge())),
                Err(error) => {
                    admitted.settle(Err(&error));
                    Err(error)
                }
            };
        };
        let span = model.span();
        match opened.instrument(span.clone()).await {
            Ok(opened) => Ok(opened
                .reporting(self.breaker.clone(), Some((model.clone(), span)), started)
                .charging(admitted.take_charge())),
            Err(error) => {
                let failure = Some(error.failure_reason());
                model.ended(&span, started.elapsed(), None, (None, None), failure);
                admitted.settle(Err(&error));
                Err(error)
            }
        }
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

/// The status of the reply a failed call ended on, if it ended on one (for its span and
/// metrics).
fn failed_status(error: &HttpError) -> Option<u16> {
    match error {
        Failure::Failed(HttpFailure::Status(status)) => Some(status.status),
        _ => None,
    }
}

/// Builds an [`HttpDependency`]. Defaults as the A2A client's: a total timeout of 90 s, an
/// attempt timeout of 30 s, a connect timeout of 10 s, the default retry policy (4 attempts,
/// full-jitter backoff from 250 ms, the service's delays up to 5 minutes, a retry budget), a
/// breaker of its own with the default configuration, the default bulkhead, replies of at
/// most 32 MiB, no redirects followed. The layers' setters are [`StackBuilder`]'s, the same
/// for every kind of callee; this page's are the service's own.
pub type HttpDependencyBuilder = StackBuilder<HttpServiceSettings>;

/// What an [`HttpDependencyBuilder`] adds to the stack: the service's name and base URL, and
/// what its transport sends and reads.
pub struct HttpServiceSettings {
    name: Arc<str>,
    base_url: String,
    http: HttpSettings,
    stream: StreamSettings,
    /// A model's GenAI names (made by [`HttpDependency::model`]).
    model: Option<ModelSettings>,
    max_reply: usize,
    headers: HeaderMap,
    deadline_header: Option<HeaderName>,
    idempotency_header: HeaderName,
    quota: bool,
    quota_waits: bool,
    expected_output: u64,
    budget: Option<CallerBudget>,
    #[cfg(feature = "redis")]
    shared_quota: Option<SharedQuota>,
}

/// What a model's GenAI series are labelled with, besides its name.
struct ModelSettings {
    provider: SharedString,
    request_model: Option<SharedString>,
}

impl std::fmt::Debug for HttpServiceSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServiceSettings")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("max_reply", &self.max_reply)
            .finish_non_exhaustive()
    }
}

impl CalleeSettings for HttpServiceSettings {
    type Error = HttpError;

    /// GET and HEAD calls.
    fn hedge(&self, delay: HedgeDelay) -> HedgeConfig {
        HedgeConfig::new(delay).methods(["GET", "HEAD"])
    }

    fn http(&mut self) -> Option<&mut HttpSettings> {
        Some(&mut self.http)
    }
}

impl OverHttp for HttpServiceSettings {}

/// POST and PATCH calls are repeated after an ambiguous failure only when the service or the
/// call says so (default: no, but yes for [`HttpDependency::model`]).
impl Repeatable for HttpServiceSettings {}

impl HttpDependencyBuilder {
    /// The largest reply read, in bytes (default 32 MiB); a larger one fails as
    /// [`HttpFailure::TooLarge`] and is read no further.
    pub fn max_reply_bytes(mut self, bytes: usize) -> Self {
        self.callee.max_reply = bytes;
        self
    }

    /// The longest wait for a streamed reply's first content event, from the attempt's
    /// request (default 10 s; `None`: only the deadline): past it the attempt fails as
    /// [`Timeout::Attempt`](crate::resilience::Timeout::Attempt) and is retried.
    pub fn first_event_timeout(mut self, limit: impl Into<Option<std::time::Duration>>) -> Self {
        self.callee.stream.first_event = limit.into();
        self
    }

    /// The longest silence in a streamed reply once it is open (default 30 s; `None`: only
    /// the deadline): anything received (an event, a comment line) resets it. Past it the
    /// stream ends with [`Interruption::Idle`].
    pub fn idle_timeout(mut self, limit: impl Into<Option<std::time::Duration>>) -> Self {
        self.callee.stream.idle = limit.into();
        self
    }

    /// The largest event of a streamed reply, in bytes (default 1 MiB): its data and any
    /// unfinished line. The whole stream is bounded by
    /// [`max_reply_bytes`](Self::max_reply_bytes).
    pub fn max_event_bytes(mut self, bytes: usize) -> Self {
        self.callee.stream.max_event = bytes;
        self
    }

    /// The provider a model's GenAI series and spans name as `gen_ai.provider.name` (default
    /// `openai`; OpenTelemetry's names: `anthropic`, `aws.bedrock`, `azure.ai.openai`,
    /// `gcp.gemini`, …). Only for [`HttpDependency::model`]: a configured value, never one
    /// read from a reply.
    pub fn provider(mut self, name: impl Into<String>) -> Self {
        if let Some(model) = &mut self.callee.model {
            model.provider = SharedString::from(name.into());
        }
        self
    }

    /// The model a model's GenAI series and spans name as `gen_ai.request.model` (default:
    /// none, the label left out): the model this dependency asks for. Only for
    /// [`HttpDependency::model`].
    pub fn request_model(mut self, name: impl Into<String>) -> Self {
        if let Some(model) = &mut self.callee.model {
            model.request_model = Some(SharedString::from(name.into()));
        }
        self
    }

    /// How the events of a streamed reply are read (default [`AnyEvent`];
    /// [`OpenAiChat`] for [`HttpDependency::model`]).
    pub fn stream_format(mut self, format: impl StreamFormat) -> Self {
        self.callee.stream.format = std::sync::Arc::new(format);
        self
    }

    /// Headers sent with every call (credentials, an API version).
    pub fn headers(mut self, headers: HeaderMap) -> Self {
        self.callee.headers = headers;
        self
    }

    /// Sends what is left of the call's deadline, in milliseconds, in header `name` (for a
    /// service that reads one, such as another agent's `A2A-Deadline-Ms`). Off by default.
    pub fn deadline_header(mut self, name: HeaderName) -> Self {
        self.callee.deadline_header = Some(name);
        self
    }

    /// The header an idempotency key travels in (default `Idempotency-Key`).
    pub fn idempotency_header(mut self, name: HeaderName) -> Self {
        self.callee.idempotency_header = name;
        self
    }

    /// Whether the service's stated quota paces the calls (default: yes): every reply's
    /// rate-limit headers (OpenAI's `x-ratelimit-*`, Anthropic's `anthropic-ratelimit-*`,
    /// the IETF `RateLimit` field) are kept, and a call they leave no room for is not sent
    /// before the quota resets: it waits for the reset when that comes before the call's
    /// deadline (inherited; else 30 s at most, within the total timeout), and is otherwise
    /// refused unsent
    /// ([`HttpFailure::Paced`], passed on as `RATE_LIMITED` with the time to the reset). A
    /// call's tokens are estimated as its body's bytes / 4 plus its `max_completion_tokens`
    /// or `max_tokens`, else [`expected_output_tokens`](Self::expected_output_tokens).
    pub fn paced_by_quota(mut self, paced: bool) -> Self {
        self.callee.quota = paced;
        self
    }

    /// Whether a call the stated quota has no room for waits for the reset when it comes
    /// within the call's deadline (default: yes), or is refused unsent at once: for a
    /// dependency with a fallback to go to, which a caller would rather have answer now.
    pub fn quota_waits(mut self, waits: bool) -> Self {
        self.callee.quota_waits = waits;
        self
    }

    /// Keeps the service's stated quota in `store`, shared by every replica given the same
    /// (feature `redis`): what one replica learned from a reply, the others see before their
    /// next call (one round trip a call, 50 ms at most; Redis slow or down, a replica goes on
    /// with its own view). The key is the dependency's name, so give a service the same name
    /// on every replica.
    #[cfg(feature = "redis")]
    pub fn shared_quota(mut self, store: SharedQuota) -> Self {
        self.callee.shared_quota = Some(store);
        self
    }

    /// The output tokens a call is estimated to use when its body names no maximum
    /// (default 256): what the stated quota must have room for, besides its input, and what
    /// a caller's budget counts until the reply's usage is known.
    pub fn expected_output_tokens(mut self, tokens: u64) -> Self {
        self.callee.expected_output = tokens;
        self
    }

    /// Counts the service's tokens against each caller's `budget` (see [`CallerBudget`]):
    /// a caller of the request being served that used its budget is refused unsent
    /// ([`HttpFailure::OverBudget`], passed on as `RATE_LIMITED` with the time until its
    /// window frees enough); a call made for no request is not counted. Give the same budget
    /// to several dependencies to count a caller's tokens across them.
    pub fn caller_budget(mut self, budget: CallerBudget) -> Self {
        self.callee.budget = Some(budget);
        self
    }

    /// Builds the client.
    pub fn build(self) -> Result<HttpDependency, BuildError> {
        let url = parse_url(&self.callee.base_url)?;
        self.callee.http.check_tls(&url)?;
        let name = self.callee.name.clone();
        let (stack, breaker, settings) = self.finish(&name);
        let quota = settings.quota.then(|| {
            Arc::new(Pacing::new(
                name.clone(),
                settings.quota_waits,
                stack
                    .total_timeout
                    .map_or(NO_DEADLINE_WAIT, |total| total.min(NO_DEADLINE_WAIT)),
                #[cfg(feature = "redis")]
                settings.shared_quota,
            ))
        });
        let service = HttpService {
            http: settings.http.client()?,
            base: settings.base_url.trim_end_matches('/').into(),
            max_reply: settings.max_reply,
            headers: settings.headers,
            deadline_header: settings.deadline_header,
            idempotency_header: settings.idempotency_header,
            quota: quota.clone(),
        };
        // The same layers, sharing the breaker, the bulkhead and the budget; a stream's
        // attempt is bounded by its first-event and idle timeouts, not the attempt timeout.
        let mut stream_stack = stack.clone();
        stream_stack.attempt_timeout = None;
        let events = StreamService {
            http: service.clone(),
            settings: settings.stream,
        };
        let admission = (quota.is_some() || settings.budget.is_some()).then(|| {
            Arc::new(Admission {
                pacing: quota,
                budget: settings.budget,
                expected_output: settings.expected_output,
                name: name.clone(),
            })
        });
        Ok(HttpDependency {
            model: settings
                .model
                .map(|model| Arc::new(ModelNames::new(&name, model.provider, model.request_model))),
            events: BoxCloneSyncService::new(stream_stack.service(events)),
            service: BoxCloneSyncService::new(stack.service(service)),
            name,
            breaker,
            admission,
        })
    }
}
