//! What both HTTP transports share: headers, reqwest errors as `ClientError`, reading replies
//! and SSE events within [`ReplyLimits`].

use std::future::ready;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use tokio::time::Instant;

use super::error::{ClientError, ResponseHead};
use super::flow::{Call, EventStream, RawJson, Reply};
use crate::http::body::{self, BodyError};
use crate::http::sse::{self, SseError};
use crate::resilience::{Timeout, within_time};

pub use crate::wire::headers::{DEADLINE_HEADER, VERSION_HEADER};

/// The version this client speaks.
pub const DEFAULT_VERSION: &str = "1.0";

/// What a client accepts from a peer before it gives up on a reply: everything a hostile or
/// broken agent could use to fill the caller's memory or hold a call forever is bounded here.
///
/// Defaults: replies up to 32 MiB, one SSE event up to 4 MiB, at most 5 minutes of silence
/// between two events of a stream. The call's total deadline (from the retry policy) bounds
/// streams as well.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ReplyLimits {
    max_body_bytes: usize,
    max_event_bytes: usize,
    idle_timeout: Option<Duration>,
}

impl Default for ReplyLimits {
    fn default() -> Self {
        ReplyLimits {
            max_body_bytes: 32 << 20,
            max_event_bytes: 4 << 20,
            idle_timeout: Some(Duration::from_secs(300)),
        }
    }
}

impl ReplyLimits {
    /// The largest reply body read (default 32 MiB); a larger one fails as
    /// [`ClientError::ReplyTooLarge`], refused from `Content-Length` when the peer sends one.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// The largest SSE event (default 4 MiB): the event being read, its data lines and any
    /// unfinished line, so a stream that never ends its event (or its line) fails as
    /// [`ClientError::ReplyTooLarge`] once it has sent that much. Bytes that make no event
    /// (blank lines, comments, `id` fields) are read in linear time, a bounded amount per
    /// poll, and are bounded by the idle timeout and the deadline like any wait.
    pub fn max_event_bytes(mut self, bytes: usize) -> Self {
        self.max_event_bytes = bytes;
        self
    }

    /// The longest wait for the next SSE event (default 5 minutes; `None`: no limit). It
    /// fires as [`Timeout::Idle`].
    pub fn idle_timeout(mut self, limit: impl Into<Option<Duration>>) -> Self {
        self.idle_timeout = limit.into();
        self
    }

    /// The largest reply body read.
    pub(crate) fn body_limit(&self) -> usize {
        self.max_body_bytes
    }

    /// The largest event of a stream read.
    #[cfg(feature = "grpc")]
    pub(crate) fn event_limit(&self) -> usize {
        self.max_event_bytes
    }
}

/// The settings of one HTTP transport, shared by the JSON-RPC and REST bindings: the client,
/// the agent's URL (JSON-RPC endpoint or REST base), the version sent and the reply limits.
#[derive(Clone, Debug)]
pub(crate) struct Http {
    pub(crate) client: reqwest::Client,
    pub(crate) url: reqwest::Url,
    pub(crate) version: HeaderValue,
    pub(crate) limits: ReplyLimits,
}

impl Http {
    pub(crate) fn new(client: reqwest::Client, url: reqwest::Url) -> Self {
        Http {
            client,
            url,
            version: HeaderValue::from_static(DEFAULT_VERSION),
            limits: ReplyLimits::default(),
        }
    }

    /// Adds the headers every A2A request carries.
    pub(crate) fn headers(
        &self,
        request: reqwest::RequestBuilder,
        call: &Call,
    ) -> reqwest::RequestBuilder {
        let accept = if call.is_streaming() {
            "text/event-stream"
        } else {
            "application/json"
        };
        let mut request = request;
        // Most calls have none: no copy then, on every attempt.
        if !call.headers().is_empty() {
            let mut extra = call.headers().clone();
            for owned in [
                CONTENT_TYPE.as_str(),
                ACCEPT.as_str(),
                VERSION_HEADER,
                DEADLINE_HEADER,
            ] {
                extra.remove(owned);
            }
            request = request.headers(extra);
        }
        let mut request = request
            .header(VERSION_HEADER, self.version.clone())
            .header(ACCEPT, accept);
        if let Some(left) = call.time_left() {
            request = request.header(DEADLINE_HEADER, left.as_millis().to_string());
        }
        request
    }

    /// Sends `request`, mapping reqwest's failures to the variant that says what happened.
    pub(crate) async fn send<E>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ClientError<E>> {
        request.send().await.map_err(send_error)
    }
}

fn send_error<E>(error: reqwest::Error) -> ClientError<E> {
    if error.is_builder() {
        ClientError::InvalidCall {
            detail: error.to_string(),
        }
    } else if error.is_connect() {
        if error.is_timeout() {
            ClientError::Timeout(Timeout::Connect)
        } else {
            ClientError::Connect(Box::new(error))
        }
    } else if error.is_timeout() {
        ClientError::Timeout(Timeout::Attempt)
    } else if error.is_redirect() {
        // More redirects than the client allows (a loop): sending again would loop again.
        ClientError::Malformed {
            detail: "too many redirects".into(),
            http: None,
        }
    } else {
        ClientError::Transport(Box::new(error))
    }
}

/// The status and headers of `response`.
pub(crate) fn http_reply(response: &reqwest::Response) -> ResponseHead {
    ResponseHead {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
    }
}

/// The refusal of an event stream that answered a call that is not streaming: its events
/// are not read at all.
pub(crate) fn unasked_stream<E>(http: ResponseHead) -> ClientError<E> {
    unexpected(
        http,
        "an event stream answered a call that is not streaming",
    )
}

/// Whether the reply is an SSE stream.
pub(crate) fn is_event_stream(http: &ResponseHead) -> bool {
    http.headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

/// Reads the whole body, at most `limit` bytes; a connection that breaks while reading is a
/// transport failure.
pub(crate) async fn read_body<E>(
    response: reqwest::Response,
    http: &ResponseHead,
    limit: usize,
) -> Result<Bytes, ClientError<E>> {
    body::read(response, limit)
        .await
        .map_err(|error| match error {
            BodyError::TooLarge { limit } => ClientError::ReplyTooLarge {
                limit,
                http: Some(Box::new(http.clone())),
            },
            other => read_error(other),
        })
}

fn read_error<E>(error: BodyError) -> ClientError<E> {
    match error {
        BodyError::Timeout => ClientError::Timeout(Timeout::Attempt),
        BodyError::Broken(error) => ClientError::Transport(Box::new(error)),
        BodyError::TooLarge { limit } => ClientError::ReplyTooLarge { limit, http: None },
    }
}

/// The SSE events of `response`, each read by `decode`; the stream ends after the first error.
/// The returned reply is ready only once the first event has arrived (or failed), so a retry
/// layer above sees an error before the first event as an ordinary failure.
///
/// Bounded three ways: an event larger than `limits.max_event_bytes` (see
/// [`ReplyLimits::max_event_bytes`]), silence longer than the idle timeout, and the call's
/// `deadline`; the parser yields after a bounded amount of work, so those timers can fire.
pub(crate) async fn event_stream<E, D>(
    response: reqwest::Response,
    limits: ReplyLimits,
    deadline: Option<Instant>,
    decode: D,
) -> Result<Reply<E>, ClientError<E>>
where
    E: Send + 'static,
    D: Fn(sse::StreamEvent) -> Result<RawJson, ClientError<E>> + Send + 'static,
{
    let limit = limits.max_event_bytes;
    let body = Box::pin(response.bytes_stream());
    let events = sse::Events::new(body, limit).map(move |event| match event {
        Ok(event) => decode(event),
        Err(SseError::Transport(error)) => Err(read_error(body::broken(error))),
        Err(SseError::TooLarge) => Err(ClientError::ReplyTooLarge { limit, http: None }),
    });
    first_event(Box::pin(events), limits, deadline).await
}

/// A stream of events as a reply, ready once its first event has arrived (or failed), so a
/// retry layer above sees an error before the first event as an ordinary failure; each wait
/// bounded by the idle timeout and the deadline, and ended after the first error. Every
/// binding's streams end here.
pub(crate) async fn first_event<E, S>(
    events: S,
    limits: ReplyLimits,
    deadline: Option<Instant>,
) -> Result<Reply<E>, ClientError<E>>
where
    E: Send + 'static,
    S: Stream<Item = Result<RawJson, ClientError<E>>> + Send + Unpin + 'static,
{
    let mut events = Box::pin(within_time(
        events,
        limits.idle_timeout,
        deadline,
        ClientError::Timeout,
    ));
    let first = match events.next().await {
        None => return Ok(Reply::Stream(EventStream::new(stream::empty()))),
        Some(Err(error)) => return Err(error),
        Some(Ok(first)) => first,
    };
    Ok(Reply::Stream(EventStream::new(
        stream::once(ready(Ok(first))).chain(events),
    )))
}

/// A reply that is not what the binding promises: a non-2xx one is reported by its status
/// (a proxy's error page), a 2xx one as malformed.
pub(crate) fn unexpected<E>(http: ResponseHead, detail: impl Into<String>) -> ClientError<E> {
    if http.is_success() {
        ClientError::Malformed {
            detail: detail.into(),
            http: Some(Box::new(http)),
        }
    } else {
        ClientError::Status(Box::new(http))
    }
}
