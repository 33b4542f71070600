//! What both HTTP transports share: headers, reqwest errors as `ClientError`, reading replies
//! and SSE events.

use std::future::ready;

use bytes::Bytes;
use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::{StreamExt, stream};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use serde_json::Value;

use super::call::{Call, EventStream, Reply};
use super::error::{ClientError, HttpReply, Timeout};

pub use crate::headers::{DEADLINE_HEADER, VERSION_HEADER};

/// The version this client speaks.
pub const DEFAULT_VERSION: &str = "1.0";

/// The settings of one HTTP transport, shared by the JSON-RPC and REST bindings: the client,
/// the agent's URL (JSON-RPC endpoint or REST base) and the version sent.
#[derive(Clone, Debug)]
pub(crate) struct Http {
    pub(crate) client: reqwest::Client,
    pub(crate) url: reqwest::Url,
    pub(crate) version: HeaderValue,
}

impl Http {
    pub(crate) fn new(client: reqwest::Client, url: reqwest::Url) -> Self {
        Http {
            client,
            url,
            version: HeaderValue::from_static(DEFAULT_VERSION),
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
    } else {
        ClientError::Transport(Box::new(error))
    }
}

/// The status and headers of `response`.
pub(crate) fn http_reply(response: &reqwest::Response) -> HttpReply {
    HttpReply {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
    }
}

/// Whether the reply is an SSE stream.
pub(crate) fn is_event_stream(http: &HttpReply) -> bool {
    http.headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

/// Reads the whole body; a connection that breaks while reading is a transport failure.
pub(crate) async fn body<E>(response: reqwest::Response) -> Result<Bytes, ClientError<E>> {
    response.bytes().await.map_err(|error| {
        if error.is_timeout() {
            ClientError::Timeout(Timeout::Attempt)
        } else {
            ClientError::Transport(Box::new(error))
        }
    })
}

/// The SSE events of `response`, each read by `decode`; the stream ends after the first error.
/// The returned reply is ready only once the first event has arrived (or failed), so a retry
/// layer above sees an error before the first event as an ordinary failure.
pub(crate) async fn event_stream<E, D>(
    response: reqwest::Response,
    decode: D,
) -> Result<Reply<E>, ClientError<E>>
where
    E: Send + 'static,
    D: Fn(eventsource_stream::Event) -> Result<Value, ClientError<E>> + Send + 'static,
{
    let events = response
        .bytes_stream()
        .eventsource()
        .map(move |event| event.map_err(stream_error).and_then(&decode));
    let mut events = Box::pin(events);
    let first = match events.next().await {
        None => return Ok(Reply::Stream(EventStream::new(stream::empty()))),
        Some(Err(error)) => return Err(error),
        Some(Ok(first)) => first,
    };
    let rest = stream::once(ready(Ok(first)))
        .chain(events)
        .scan(false, |ended, item| {
            if *ended {
                return ready(None);
            }
            *ended = item.is_err();
            ready(Some(item))
        });
    Ok(Reply::Stream(EventStream::new(rest)))
}

fn stream_error<E>(error: EventStreamError<reqwest::Error>) -> ClientError<E> {
    match error {
        EventStreamError::Transport(error) => ClientError::Transport(Box::new(error)),
        other => ClientError::Malformed {
            detail: other.to_string(),
            http: None,
        },
    }
}

/// A reply that is not what the binding promises: a non-2xx one is reported by its status
/// (a proxy's error page), a 2xx one as malformed.
pub(crate) fn unexpected<E>(http: HttpReply, detail: impl Into<String>) -> ClientError<E> {
    if http.is_success() {
        ClientError::Malformed {
            detail: detail.into(),
            http: Some(Box::new(http)),
        }
    } else {
        ClientError::Status(Box::new(http))
    }
}
